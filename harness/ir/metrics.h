/* harness/ir/metrics.h — what running the programs measures (semantics §6): one record
 * per stage and epoch, and one per op for timelines. The workers (harness/exec/) and the
 * simulator (harness/sim/) write them, results/ stores them and plots/ reads them back;
 * neither of those two looks below this header. */
#ifndef PB_METRICS_H
#define PB_METRICS_H

#include <stdint.h>

#include "harness/compute/memory.h"

/* One stage's measurements for an epoch. */
struct pb_stage_record {
    double busy_s, wait_s, comm_s, bubble_frac;
    int64_t mem_peak[PB_MEM_NKINDS];   /* peak bytes, by enum pb_mem_kind; < 0: unknown */
    int versions_kept;                 /* < 0: unknown */
    /* staleness: version difference versus the synchronous run, forward and backward */
    double f_mean, f_max, b_mean, b_max;
    /* prediction error ||W_hat - W|| / ||W|| over pred_count predictions (0: none) */
    double pred_err_mean, pred_err_max;
    int64_t pred_count;
    double op_s[5];      /* median seconds of the epoch's F, B, U, I and W ops, by enum
                            pb_op_kind (NaN: none ran) */
    double sim_bubble;   /* the device's bubble in the simulation of the epoch with those
                            costs, one device per stage (design §6.6); NaN: not simulated */
};

/* One op a device ran, for timelines. */
struct pb_event_record {
    int device, seq;    /* seq: the op's position in the device's program */
    char kind;          /* 'F', 'B', 'U', 'I' or 'W' */
    int mb;             /* micro-batch; < 0 for U (stored as NULL) */
    int version;        /* weight version read (F, B, I, W) or produced (U) */
    int ahead;          /* prediction look-ahead s, 0 when none */
    double start_s, end_s;   /* seconds since the epoch began */
    int sync_version;   /* the version a synchronous run reads at this op (U: as version) */
    int pair;           /* DualPipeV's overlapped pair, run as F then B (pb_op.pair): 1 on
                           the F, 2 on its B, 0 otherwise */
};

#endif
