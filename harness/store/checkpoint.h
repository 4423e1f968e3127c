/* harness/store/checkpoint.h — the weights of all stages as one safetensors file, a PyTorch
 * state_dict: each tensor under its key in the model's PyTorch definition
 * ("features.0.weight", "layer1.0.bn1.running_mean", "enc_layers.0.weight_ih_l0") with its
 * shape, the same at any partition, so `model.load_state_dict(load_file(path))` loads it
 * (strict: BatchNorm's num_batches_tracked, which pipebench does not count, is left out,
 * and PyTorch sets a missing one to 0). */
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
/* Loads every tensor the stages expect from a checkpoint or a PyTorch state_dict of the
 * model (its keys in any order; num_batches_tracked ignored), or from a checkpoint written
 * before the names were PyTorch's ("stage<k>.<block>.<layer>.<param>", the LSTM,
 * embedding and attention weights possibly 1-D). A missing tensor, one of another shape
 * or one the model has not (any stage's, not only these) is an error naming it, and
 * nothing is changed then. */
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

/* The same state as host copies, for a process that holds some stages only as layouts
 * (pb_stage_layout: the writer of an MPI run, which gathers the others' states). */
#define PB_STATE_NSLOTS 6
struct pb_stage_state {
    float *params;                    /* [nparams] */
    float *buffers;                   /* [nbuffers] */
    float *slot[PB_STATE_NSLOTS];     /* [nslot] each; NULL: a slot the optimizer does not keep */
    size_t nslot;                     /* the optimizer's n */
};
/* Allocates h: bit i of `slots` set for each slot i kept. */
void pb_stage_state_alloc(struct pb_stage_state *h, size_t nparams, size_t nbuffers,
                          unsigned slots, size_t nslot);
void pb_stage_state_free(struct pb_stage_state *h);
/* The slots o keeps, bit i for slot i. */
unsigned pb_stage_state_slots(struct pb_optim *o);
/* Allocates h and downloads stage s's weights and o's slots into it (synced). */
void pb_stage_state_download(struct pb_stage *s, struct pb_optim *o, struct pb_stage_state *h);
/* Uploads h into stage s and o (synced). */
void pb_stage_state_upload(struct pb_stage *s, struct pb_optim *o, const struct pb_stage_state *h);
/* pb_checkpoint_save_state of host copies h[k] laid out as lay[k]. */
int pb_checkpoint_save_state_host(const struct pb_stage *lay, const struct pb_stage_state *h,
                                  int nstages, const char *path, const char *metadata_json,
                                  struct pb_err *e);
/* pb_checkpoint_load_state into host copies h[k] (allocated with the slots wanted) laid
 * out as lay[k]; h may be partly written on error. */
int pb_checkpoint_load_state_host(const struct pb_stage *lay, struct pb_stage_state *h,
                                  int nstages, const char *path, char **metadata_json,
                                  struct pb_err *e);

#endif
