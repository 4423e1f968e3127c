/* harness/store/checkpoint.h — the weights of all stages as one safetensors file, tensor
 * names "stage<k>.<block>.<layer>.<param>" (BatchNorm running statistics included),
 * loadable by PyTorch's safetensors. */
#ifndef PB_CHECKPOINT_H
#define PB_CHECKPOINT_H

#include "harness/model/stage.h"

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

#endif
