/* harness/driver/run_epoch.h — one epoch of a run (run_epoch.c): the plan's executor over
 * its programs, validation with the current weights, the validation BLEU, and the
 * epoch's record at the writer. */
#ifndef PB_RUN_EPOCH_H
#define PB_RUN_EPOCH_H

#include "harness/driver/run_bleu.h"
#include "results/results.h"

/* What an epoch works on: the plan, the stages here, the BLEU scorer and, at the
 * writer, the database and the run's row. */
struct pb_run_live {
    struct pb_plan *plan;
    struct pb_local_stages *stages;
    struct pb_run_bleu *bleu;
    struct pb_results *db;        /* the writer's */
    int64_t run_id;
};

/* Trains, validates and records epoch epoch (0-based) in the sample order buffer
 * order[ntrain]; sum gets the epoch's numbers. -1 with e and *diverged on failure. */
int pb_run_epoch(struct pb_run_live *r, int epoch, int32_t *order, struct pb_run_summary *sum,
                 bool *diverged, struct pb_err *e);

#endif
