/* plots/trace.h — one epoch of a run's op timeline (the events table) as a Chrome trace
 * (JSON Trace Event Format) that Perfetto and chrome://tracing open: a track per device
 * (per stage where each stage is its own device; with v > 1 chunks per device, the
 * device's chunks' ops on its track), a slice per op, and flow arrows along the
 * pipeline. */
#ifndef PB_TRACE_H
#define PB_TRACE_H

#include <stdint.h>

#include "harness/base/err.h"

struct pb_trace_info {
    int epoch;     /* the epoch written */
    int devices;   /* tracks: p devices (D where each stage is its own device) */
    int stages;    /* D */
    int chunks;    /* v: stages per device (1: the tracks are stages) */
    int slices;    /* "X" events */
    int flows;     /* arrows (each an "s" and an "f" event) */
    int pairs;     /* DualPipeV's overlapped pairs: "X" slices of cat "pair" beside the
                      ops' slices */
};

/* Writes run_id's events of epoch (< 0: the last epoch with events) from the database at
 * db_path to out_path (written whole or not at all). Slices are named F<mb>, B<mb>, I<mb>,
 * W<mb> and U, with "@c" (the local chunk, as `pipebench program` prints it) where the run
 * held v > 1 chunks per device, so F3@1; args {mb, stage, chunk (v > 1), version, ahead};
 * timestamps in microseconds since the epoch began. The stage → device map is the
 * recorded configuration's through the IR (plots/run_devices.h). Flows go from F(j) on
 * stage k to F(j) on k+1 and from B(j) (or I(j)) on k+1 to B(j) on k, each end on its
 * stage's device track. DualPipeV's overlapped pairs, run as F then B (the events' pair
 * column): each half's args has "pair" (1 on the F, 2 on the B), and one more slice
 * "F7@0+B3@1" (cat "pair") spans the two on their device's track, so they nest under it. */
int pb_trace_write(const char *db_path, int64_t run_id, int epoch, const char *out_path,
                   struct pb_trace_info *info, struct pb_err *e);

#endif
