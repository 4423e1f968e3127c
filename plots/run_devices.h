/* plots/run_devices.h — where a recorded run's stages ran: the device and local chunk of
 * each stage, from its configuration (schedule, stages, chunks) through the IR's own
 * mapping (pb_pipe_adopt, then pb_pipe_stage_of), so the trace and the timeline can draw a
 * row per device where the run held v > 1 model chunks per device (semantics §4.12,
 * §4.13). The events table names stages in its device column; this says which device. */
#ifndef PB_RUN_DEVICES_H
#define PB_RUN_DEVICES_H

#include <stdint.h>

#include "harness/base/err.h"
#include "results/results.h"

struct pb_run_devices {
    int stages;    /* D: the stages the map covers */
    int devices;   /* p = D / v: the rows to draw */
    int chunks;    /* v: 1 when each stage is its own device (rows stay stages) */
    int *device;   /* [stages]: the device stage k ran on */
    int *chunk;    /* [stages]: its local chunk on that device */
};

/* Fills m for run `run` whose events name stages 0 … stages_seen − 1. A run recorded with
 * one stage per device, or whose configuration does not name a schedule this pipebench
 * knows or a D covering the events, maps each stage to a device of its own (v = 1). */
int pb_run_devices_read(struct pb_results *db, int64_t run, int stages_seen,
                        struct pb_run_devices *m, struct pb_err *e);
void pb_run_devices_finish(struct pb_run_devices *m);

/* "stages 0, 3" for device d (the stages it held, ascending) into buf. */
void pb_run_devices_stages(const struct pb_run_devices *m, int d, char *buf, size_t cap);

#endif
