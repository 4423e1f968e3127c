/* harness/driver/local_stages.h — the stages a process holds (all of them, or its device's
 * chunks' under MPI): each stage's backend created on its device (the plan's placement), its
 * stage with initialised weights (or --init's), its worker, and stage 0's loader thread.
 * Also their weights gathered to the writer (--save, the validation BLEU). */
#ifndef PB_LOCAL_STAGES_H
#define PB_LOCAL_STAGES_H

#include "harness/driver/plan.h"
#include "harness/exec/worker.h"
#include "harness/model/stage.h"

struct pb_local_stages {
    struct pb_backend **be;       /* [D], the local ones set (pb_plan_holds) */
    struct pb_stage *stages;      /* [D] */
    struct pb_worker *workers;    /* [D] */
    bool *stage_ready, *worker_ready; /* [D] which to finish */
};

/* Creates the plan's local stages (starting the plan's feed's loader thread with stage
 * 0). A backend that lacks a stage's device is an error that says what to give
 * --devices. Collective with MPI. pb_local_stages_finish ls either way. */
int pb_local_stages_create(struct pb_local_stages *ls, struct pb_plan *p, struct pb_err *e);
/* Stops the plan's loader thread, then frees the workers, stages and backends. */
void pb_local_stages_finish(struct pb_local_stages *ls, struct pb_plan *p);

/* Host copies of every stage's parameters and buffers gathered at the writer (with MPI;
 * a collective): use(ctx, lay, ps, bs, e) gets the layouts lay[k] and ps[k], bs[k] of
 * the D stages there, then they are freed. Every rank returns a failure (-1; e says why
 * at the rank that failed, empty elsewhere). */
typedef int (*pb_weights_fn)(void *ctx, struct pb_stage *lay, float *const *ps, float *const *bs,
                             struct pb_err *e);
int pb_local_stages_weights(struct pb_local_stages *ls, const struct pb_plan *p,
                            pb_weights_fn use, void *ctx, struct pb_err *e);

/* Saves every stage's weights to path (safetensors; gathered to rank 0 with MPI). */
int pb_local_stages_save(struct pb_local_stages *ls, const struct pb_plan *p, const char *path,
                         struct pb_err *e);

#endif
