/* harness/model/partition.h — cutting a model's chain of blocks into D pipeline stages
 * (semantics §5.3): a cost per block (forward FLOPs, FLOPs and bytes moved, parameters,
 * or measured forward + backward time), the cut of D contiguous ranges that minimises
 * the slowest stage, hand-set bounds, and the bounds as text ("0,3,5,9": stage k
 * holds blocks [bounds[k], bounds[k+1])). The paper's cuts of the zoo's presets are
 * workloads/'s (pb_partition_paper). */
#ifndef PB_PARTITION_H
#define PB_PARTITION_H

#include "harness/model/model.h"

/* How a run cuts its model. */
enum pb_partition_by {
    PB_PART_FLOPS,    /* balanced forward FLOPs (`balanced` names it too) */
    PB_PART_COST,     /* balanced FLOPs + PB_PARTITION_FLOPS_PER_BYTE × bytes moved */
    PB_PART_PARAMS,   /* balanced parameter counts */
    PB_PART_TIME,     /* balanced measured forward + backward time (pb_partition_profile) */
    PB_PART_PAPER,    /* the preset's 4-stage cut of the paper's code (workloads/) */
    PB_PART_BOUNDS,   /* set by hand */
    PB_PART_NBY
};
/* "flops", "cost", "params", "time", "paper", "bounds" */
extern const char *const pb_partition_by_names[PB_PART_NBY];

/* The partition a run takes when it names none (and the paper cut does not apply):
 * deterministic, so a run's numbers never depend on machine noise. The cost model,
 * because it predicts measured block times better than FLOPs alone (semantics §5.3:
 * as well or better on 5 of 6 models measured, and a cut with a faster slowest stage
 * on vgg16 and resnet101). */
#define PB_PARTITION_DEFAULT PB_PART_COST

/* The cost model's exchange rate: one byte moved costs as much as this many FLOPs (a
 * core's arithmetic rate over the bandwidth it streams activations at). */
#define PB_PARTITION_FLOPS_PER_BYTE 8.0

/* Parses --partition: a method name, or D + 1 block bounds separated by commas (or
 * colons, for sweep files whose [grid] lists are comma-separated), strictly increasing
 * from 0. bounds[stages + 1] receives the bounds of PB_PART_BOUNDS (NULL: only check).
 * The model's block count is checked later (pb_partition_check_bounds). */
int pb_partition_parse(const char *spec, int stages, enum pb_partition_by *by, int *bounds,
                       struct pb_err *e);
/* Hand-set bounds against the model: the last must be its block count. */
int pb_partition_check_bounds(const struct pb_model *m, const int *bounds, int stages,
                              struct pb_err *e);

/* Bytes a block's forward moves for one micro-batch: each layer's inputs and output
 * read or written once, and its parameters read once (the backward moves about twice
 * as much, as it computes about twice the FLOPs). */
double pb_block_bytes_moved(const struct pb_block *b);
/* Each block's cost under a static predictor (flops, cost or params) into cost[nblocks],
 * for micro-batches of `samples` (the model is finalized at m->batch: its FLOPs and the
 * activation bytes it moves scale by samples / m->batch, its parameter bytes do not). */
void pb_partition_costs(const struct pb_model *m, enum pb_partition_by by, int samples,
                        double *cost);

/* Cuts blocks of cost[nblocks] into `stages` contiguous ranges minimising the largest
 * stage's cost, then (among equal largest stages) the sum of squared stage costs, so
 * the other stages are as even as they can be; bounds[0..stages]. Errors when stages
 * < 1 or there are fewer blocks than stages. */
int pb_partition_min_max(const double *cost, int nblocks, int stages, int *bounds,
                         struct pb_err *e);
/* The same over the finalised model's forward FLOPs (--partition flops). */
int pb_partition_balanced(const struct pb_model *m, int stages, int *bounds, struct pb_err *e);

/* Each block's forward + backward milliseconds for one micro-batch of the finalised
 * model, on a fresh instance of backend `backend` on device `device` with `threads` cores
 * (--devices: stage 0's): block i runs as
 * stage i of a pipeline of one block per stage (the first computes no input gradient,
 * the last its loss), block 0 on a generated input and every later block on the output
 * of the one before it (harness/model/profile.c), `reps` timed repetitions after one
 * untimed, the median. ms[nblocks]. */
int pb_partition_profile(const struct pb_model *m, const char *backend, int device, int threads,
                         int reps, double *ms, struct pb_err *e);
/* What pb_partition_profile_ops measures, each [nblocks] milliseconds, NULL: not wanted
 * (ms is required; i_ms and w_ms go together). */
struct pb_block_times {
    double *ms;    /* forward + backward, as pb_partition_profile */
    double *f_ms;  /* the forward alone (the backend synchronised after it), in the same
                      repetitions */
    double *i_ms;  /* the split backward's input-gradient pass and weight-gradient pass */
    double *w_ms;  /* (semantics §4.10), in `reps` more repetitions of forward, I and W
                      after one untimed, the forward not timed */
};
int pb_partition_profile_ops(const struct pb_model *m, const char *backend, int device,
                             int threads, int reps, const struct pb_block_times *out,
                             struct pb_err *e);

/* "0,3,5,9"; free() it. */
char *pb_partition_text(const int *bounds, int stages);

#endif
