/* harness/driver/partition_report.h — `pipebench partition`: a model's blocks and the cut
 * of one method into D stages, each with its blocks, parameters, forward FLOPs,
 * activation bytes per micro-batch and measured forward + backward milliseconds, and how
 * well each static cost (FLOPs, FLOPs and bytes moved, parameters) predicts the measured
 * block times (semantics §5.3). */
#ifndef PB_PARTITION_REPORT_H
#define PB_PARTITION_REPORT_H

#include <stdio.h>

#include "harness/driver/run.h"
#include "harness/model/partition.h"

/* What the printout is made of, for tests and the printer. */
struct pb_partition_study {
    struct pb_model model;
    int stages, threads, reps;
    double *ms;                    /* [nblocks] measured forward + backward, median */
    double *f_ms;                  /* [nblocks] the forward alone, median */
    double *i_ms, *w_ms;           /* [nblocks] the split backward's I and W, median (NULL
                                      unless the study was asked for them) */
    enum pb_partition_by by;       /* the cut printed */
    int *bounds;                   /* [stages + 1] its bounds */
    /* per static predictor (flops, cost, params) and time: the correlation of its block
     * costs with the measured ones, the measured slowest stage of its cut (ms), and its
     * largest stage error: |predicted − measured| over the measured slowest stage, its
     * costs scaled to the measured total */
    double corr[PB_PART_TIME + 1], slowest_ms[PB_PART_TIME + 1], stage_err[PB_PART_TIME + 1];
};

/* Builds c's model (c->stages, c->microbatch_size, c->preset, c->dataset's shape),
 * measures its blocks `reps` times each on c->backend with the cores a stage of c gets
 * (with `split`, their split backward's two passes as well), and cuts it by c->partition
 * (NULL: the run's default). */
int pb_partition_study(const struct pb_run_cfg *c, int reps, bool split,
                       struct pb_partition_study *st, struct pb_err *e);
void pb_partition_study_print(const struct pb_partition_study *st, FILE *out);
void pb_partition_study_finish(struct pb_partition_study *st);

#endif
