/* harness/driver/plan.h — a run's plan, built once from its configuration before the run
 * row exists: every name resolved to its registry entry (executor, schedule, backend,
 * model and preset), the stages' devices (--devices), the data loaded and its feed, the
 * model built and partitioned, and the schedule's programs built and validated. The
 * epochs, resume, compare and sweep read the plan; after it is built nothing is looked up
 * by name again. Under MPI each rank builds the plan of the stages of its device. */
#ifndef PB_PLAN_H
#define PB_PLAN_H

#include "harness/compute/backend.h"
#include "harness/compute/registry.h"
#include "harness/driver/run.h"
#include "harness/exec/dist.h"
#include "harness/exec/executor.h"
#include "harness/exec/feed.h"
#include "harness/model/model.h"
#include "workloads/models/workload.h"

struct pb_plan {
    const struct pb_run_cfg *cfg;
    /* chosen (pb_plan_choose): the configuration's names as registry entries */
    const struct pb_executor *executor;
    const struct pb_schedule *sch;
    const struct pb_backend_reg *backend;
    const struct pb_workload *workload;
    const struct pb_preset *preset; /* NULL: a model without presets */
    bool paper_cut;               /* the preset's 4-stage cut, else the balanced partition */
    int input_side;               /* the preset's S, 0 = the dataset's native side */
    bool no_flip;                 /* the preset trains without horizontal flip */
    int *devices;                 /* [D] each stage's device (placement.h) */
    int stage_threads;            /* cores each stage's kernels use (design §2.3) */
    int checkpoint_every;         /* epochs between resume states, 0: none */
    bool *trace_epochs;           /* [epochs]: events kept (--trace-epochs) */
    /* built (pb_plan_build) */
    const struct pb_dist *dist;   /* NULL: one process holds every stage */
    int rank;                     /* this process's rank, 0 for one process */
    int *rank_of;                 /* [D] the process holding each stage: under MPI the rank
                                     of its device (pb_pipe_stage_of), else 0 */
    const char *dataset;          /* --dataset, or the preset's (the workload's) own */
    char dataset_label[80];       /* as runs record it: the dataset, or "synthetic:cifar100"
                                     for the synthetic stand-in of a model's dataset */
    struct pb_dataset train, val; /* loaded where a local stage is first or last */
    int ntrain, nval;             /* samples (known on every rank) */
    struct pb_model model;
    int *bounds;                  /* [D + 1] block bounds of the stages */
    struct pb_pipe pipe;
    struct pb_optim_cfg optim;    /* the run's, keeping d_last when the schedule predicts */
    struct pb_program *progs;     /* [p] an epoch's, per device (p = D / v) */
    struct pb_program *stage_progs; /* [D] the same per stage (pb_programs_stages) */
    struct pb_program *eval_progs; /* [p] the validation pass (pb_program_eval) */
    struct pb_program *eval_stage_progs; /* [D] the same per stage */
    int capacity;                 /* channel capacity the programs need (≥ 1) */
    bool progs_ready;
    int updates_per_epoch;        /* stage 0's U ops (every stage makes the same) */
    int samples_per_update;
    struct pb_feed feed;          /* the loader thread starts with stage 0 */
};

/* Whether this process writes the results (rank 0, or the one process). */
static inline bool pb_plan_writer(const struct pb_plan *p)
{
    return !p->dist || p->dist->rank == 0;
}

/* Whether this process holds stage k. */
static inline bool pb_plan_holds(const struct pb_plan *p, int k)
{
    return p->rank_of[k] == p->rank;
}

/* The processes the mpi executor runs c on: one per device, D / v (v: --chunks, or the
 * chunks its schedule fixes); 0 when v does not divide D. */
int pb_plan_ranks(const struct pb_run_cfg *c);

/* Every rank fails when one does (rc != 0 on any). Only rank 0 says why when it failed
 * too (the ranks check the same configuration), else the ranks that failed do. */
int pb_plan_collective(const struct pb_plan *p, int rc, struct pb_err *e);

/* The executor c names, NULL when there is none of that name (before MPI starts: is it
 * one rank per device?). */
const struct pb_executor *pb_plan_executor(const struct pb_run_cfg *c);

/* Checks c (flag ranges, names, the placement) and resolves its names into p, reading
 * no data. -1 with the message pb_run would give. pb_plan_finish p either way. */
int pb_plan_choose(struct pb_plan *p, const struct pb_run_cfg *c, struct pb_err *e);
/* pb_plan_choose, then the data, the model and its partition, the programs of an epoch
 * and the feed: all that can fail before a run row exists. Collective with MPI (dist
 * not NULL): every rank fails together. pb_plan_finish p either way. */
int pb_plan_build(struct pb_plan *p, const struct pb_run_cfg *c, const struct pb_dist *dist,
                  struct pb_err *e);
/* Builds and validates the programs of an epoch of nmb micro-batches into p (chosen). */
int pb_plan_programs(struct pb_plan *p, int nmb, struct pb_err *e);
void pb_plan_finish(struct pb_plan *p);

/* The dataset p loads (--dataset, else the model's) and its load options: the synthetic
 * shape of the configuration, p's input side and flip policy, and `like` the model's
 * (its preset's) image dataset when the synthetic data is asked for without a shape of its own. */
const char *pb_plan_data_opts(const struct pb_plan *p, struct pb_dataset_opts *opts);

/* The model of c, its preset (NULL when it has none) and whether the paper cut applies:
 * an unknown model or preset, or a partition that does not apply, is an error. */
int pb_run_model(const struct pb_run_cfg *c, const struct pb_workload **w,
                 const struct pb_preset **p, bool *paper_cut, struct pb_err *e);
/* c's model, finalised for its micro-batch size on its dataset's sample shape and
 * classes (taken from the dataset's synthetic stand-in: no file is read), for
 * `pipebench partition`; *paper: the preset when the paper cut applies, else NULL.
 * pb_model_finish it. */
int pb_run_model_build(const struct pb_run_cfg *c, struct pb_model *m,
                       const struct pb_preset **paper, struct pb_err *e);
/* The classes of c's data (its dataset's, or its stand-in's: nothing is read), the
 * labels a classifier of it chooses among. */
int pb_run_data_classes(const struct pb_run_cfg *c, int *nclasses, struct pb_err *e);
/* Cores each stage's kernels use: the same under every executor, so kernels split their
 * work the same way and all executors give the same bits (design §2.3). */
int pb_run_stage_threads(const struct pb_run_cfg *c);
/* Repetitions of each block's forward + backward that --partition time takes the
 * median of. */
#define PB_RUN_PROFILE_REPS 5
/* The stages' bounds[D + 1] of c's finalised model m: the paper cut of preset `paper`
 * when not NULL, else c->partition's method or hand-set bounds (the default method when
 * NULL). --partition time measures the blocks only when `measure`, on device `device`
 * (stage 0's; else bounds are left for the caller to fill). */
int pb_run_partition(const struct pb_run_cfg *c, const struct pb_model *m,
                     const struct pb_preset *paper, bool measure, int device, int *bounds,
                     struct pb_err *e);
/* The partition as the run's configuration records it (free() it): its method, the
 * FLOPs one as "balanced" (its name before the other methods), or its bounds "0,3,5,9". */
char *pb_run_partition_name(const struct pb_run_cfg *c, bool paper_cut);
/* --trace-epochs: sel[epochs] set for the epochs whose events are kept; NULL sel only
 * checks the text. */
int pb_run_trace_epochs(const char *spec, int epochs, bool *sel, struct pb_err *e);
/* Micro-batches in an epoch of ntrain samples: floor(ntrain / b), or with --batch B
 * floor(ntrain / B) updates' worth, so every schedule trains on the same samples. */
int pb_run_epoch_length(const struct pb_run_cfg *c, int ntrain);
/* The machine a run's timings come from: cores, threads per stage, load, whether the
 * stages' threads outnumber the cores (results.h). */
void pb_plan_machine(const struct pb_plan *p, struct pb_run_info *info);

#endif
