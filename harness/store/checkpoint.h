/* harness/store/checkpoint.h — the weights of all stages as one safetensors file, tensor
 * names "stage<k>.<block>.<layer>.<param>" (BatchNorm running statistics included),
 * loadable by PyTorch's safetensors. */
#ifndef PB_CHECKPOINT_H
#define PB_CHECKPOINT_H

#include "harness/model/stage.h"
#include "harness/optim/optim.h"

int pb_checkpoint_save(struct pb_stage *stages, int nstages, const char *path,
                       const char *metadata_json, struct pb_err *e);
/* The same from host copies of each stage's parameters and buffers; `stages` need
 * only their layout (pb_stage_layout). */
int pb_checkpoint_save_host(const struct pb_stage *stages, int nstages, float *const *params,
                            float *const *buffers, const char *path, const char *metadata_json,
                            struct pb_err *e);
/* Loads every tensor the stages expect, by name or, for a checkpoint saved from another
 * partition of the model, by the name without its "stage<k>." prefix; a missing tensor
 * or a shape mismatch is an error naming it (nothing is changed then). */
int pb_checkpoint_load(struct pb_stage *stages, int nstages, const char *path, struct pb_err *e);

/* A run's resumable state (semantics §1.10): the weights and BatchNorm statistics as
 * pb_checkpoint_save, plus each stage's optimizer state, "<param>.optim.<slot>" for the
 * slots it keeps (buf, m, v, sq, d_last, g_last: the parameters' layout), and
 * metadata_json (a flat object of strings; the caller's run identity and position).
 * optims[k] is stage k's optimizer, on the stage's backend. Written atomically. */
int pb_checkpoint_save_state(struct pb_stage *stages, struct pb_optim *const *optims, int nstages,
                             const char *path, const char *metadata_json, struct pb_err *e);
/* Loads it into stages of any partition of the same model and optimizer (each slot the
 * optimizers keep must be there); *metadata_json (malloc'ed, NULL when the file has none)
 * receives the metadata. Nothing is changed on error. */
int pb_checkpoint_load_state(struct pb_stage *stages, struct pb_optim *const *optims,
                             int nstages, const char *path, char **metadata_json,
                             struct pb_err *e);

#endif
