/* plots/trace.h — one epoch of a run's op timeline (the events table) as a Chrome trace
 * (JSON Trace Event Format) that Perfetto and chrome://tracing open: a track per device,
 * a slice per F, B and U, and flow arrows along the pipeline. */
#ifndef PB_TRACE_H
#define PB_TRACE_H

#include <stdint.h>

#include "harness/base/err.h"

struct pb_trace_info {
    int epoch;     /* the epoch written */
    int devices;   /* tracks */
    int slices;    /* "X" events */
    int flows;     /* arrows (each an "s" and an "f" event) */
};

/* Writes run_id's events of epoch (< 0: the last epoch with events) from the database at
 * db_path to out_path (written whole or not at all). Slices are named F<mb>, B<mb> and U
 * with args {mb, version, ahead}, timestamps in microseconds since the epoch began; flows
 * go from F(j) on stage k to F(j) on k+1 and from B(j) on k+1 to B(j) on k. */
int pb_trace_write(const char *db_path, int64_t run_id, int epoch, const char *out_path,
                   struct pb_trace_info *info, struct pb_err *e);

#endif
