/* harness/driver/compare.h — `pipebench compare`: its default workload, and one row per
 * schedule × optimizer from the run_summary view (results/views.sql) with the metrics of
 * semantics §6 (accuracy, time to target, throughput, bubbles, memory, staleness, prediction). */
#ifndef PB_COMPARE_H
#define PB_COMPARE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "harness/compute/backend.h"
#include "harness/driver/run.h"
#include "harness/driver/run_flags.h"

/* The default workload: lenet on Fashion-MNIST, D = 4 (run's default), 4 epochs of
 * the first 6000 training samples, validated on the first 2000 test samples: eleven
 * runs take about three minutes on two cores. */
#define PB_COMPARE_MODEL "lenet"
#define PB_COMPARE_EPOCHS 4
#define PB_COMPARE_LIMIT_TRAIN 6000
#define PB_COMPARE_LIMIT_VAL 2000
#define PB_COMPARE_OPTIMIZERS "sgdm,adam"
/* --batch when neither it nor --microbatch-size is given: PB_DEFAULT_BATCH
 * (harness/driver/run_flags.h), as for run and sweep. */
/* Validation accuracy for "epochs / seconds to target": reached within the default
 * epochs by most schedules, so the columns separate them. */
#define PB_COMPARE_TARGET 0.75
#define PB_COMPARE_OUTDIR "plots/out"

/* The default workload above (and the threads executor) as run's options, each where f
 * gives none: applied over pb_run_cfg_defaults they make compare's configuration, and
 * passed to `pipebench run` (the ranks of an mpi run) they make the same one. */
void pb_compare_flag_defaults(struct pb_run_flags *f);

/* One row of the comparison: a run's columns of the run_summary view (0 where NULL). */
struct pb_compare_row {
    char schedule[64], optimizer[32];
    int64_t run_id;                /* 0: the run never started */
    char status[16];               /* the run's status, or "error" */
    int epochs;                    /* recorded */
    int samples_per_update, updates_per_epoch;   /* 0: not recorded */
    double best_acc, final_acc;    /* maximum and last validation accuracy */
    int epochs_to_target;          /* of the first epoch reaching it, 1-based; 0 = never */
    double seconds_to_target;      /* training seconds up to the end of that epoch */
    double throughput;             /* the median over the steady epochs of their samples/s;
                                    * with repeats, the median of the repeats' values */
    double bubble;                 /* idle / makespan per device over the steady epochs,
                                    * mean; with repeats, the median of the repeats' */
    double mem_mib[PB_MEM_NKINDS]; /* per kind: peak per stage, summed over stages */
    double f_lag, b_lag;           /* mean forward and backward staleness (versions) */
    double pred_err;               /* mean ||Ŵ − W|| / ||W|| over the predictions */
    int64_t pred_count;            /* predictions made (0: pred_err is meaningless) */
    bool shared;                   /* its timings were measured with the stages sharing cores */
    double throughput_lo, throughput_hi;   /* the range throughput is the median of */
};

/* Fills row's measurements for run_id from the database at db_path, with target the
 * validation accuracy (a fraction) of epochs_to_target; row's names are the caller's,
 * and so is its status when run_id is 0. */
int pb_compare_fetch(const char *db_path, int64_t run_id, double target,
                     struct pb_compare_row *row, struct pb_err *e);

/* Prints the two tables: convergence and speed, then peak memory by kind. */
void pb_compare_print(FILE *f, const struct pb_compare_row *rows, int n, double target);

#endif
