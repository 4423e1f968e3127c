/* harness/model/stage.h — one pipeline stage: a contiguous range of a model's blocks on one
 * backend, with its flat parameter, gradient and buffer memory (design §2.4).
 * A forward keeps what its backward needs in a pb_stage_act (one per micro-batch in
 * flight); the backward reads any weight version the schedule names, accumulates
 * dW into the gradient buffer and releases the activations. Tensors cross stage
 * boundaries in plain layout. */
#ifndef PB_STAGE_H
#define PB_STAGE_H

#include "harness/model/model.h"

struct pb_stage {
    struct pb_backend *be;
    const struct pb_model *model;
    int index, nstages;
    int first, last;              /* blocks [first, last) */
    size_t nparams, nbuffers;
    size_t *param_off, *buffer_off;  /* per block of the stage */
    bool *needs_grad;  /* per node of the stage's blocks: the backward computes the
                          gradient of its output (it or something upstream trains) */
    float *params;    /* the latest weights W [nparams], PB_MEM_PARAMS */
    float *grads;     /* [nparams], PB_MEM_GRADS */
    float *buffers;   /* BN running statistics [nbuffers], PB_MEM_BNSTATS */
    struct pb_xent_out *xent;  /* last stage: where the loss op writes (device) */
    struct pb_shape in_shape, out_shape;
    bool needs_lengths;  /* a layer of it reads the sequences' lengths (a bidirectional
                            LSTM, the attention, the masked mean): its forward takes them */
    int nlabels;         /* last stage: the labels of a micro-batch (batch, or batch·T for
                            a loss per token); 0 elsewhere */
    double *node_s;      /* NULL, or [2 × the stage's nodes] set by the caller: every training
                            forward adds each node's seconds to [2i], every backward to
                            [2i + 1], the backend synced around each node (for profiling:
                            the syncs cost where the backend is asynchronous) */
};

/* What one micro-batch's forward leaves for its backward. */
struct pb_stage_act {
    int64_t mb;
    struct pb_tensor input;      /* the stage input (owned) */
    struct pb_node_act *nodes;   /* every node of the stage's blocks, in order */
    struct pb_tensor *wdy;       /* after the split backward's I: per node, the dY its W
                                    reads (NULL data where W has nothing to do or reads the
                                    node's kept instead); else NULL */
    float *dlogits;              /* last stage: dL/dlogits [batch, classes] */
    float loss;                  /* last stage: mean loss of the micro-batch (per counted
                                    label: per token for a translation model) */
    int correct;                 /* last stage: counted labels the argmax gets right */
    int count;                   /* last stage: labels counted (not ignore_label) */
};

/* Where a forward or backward runs. */
struct pb_step_ctx {
    bool train;
    uint64_t seed;
    int64_t mb;   /* global micro-batch index: keys dropout masks (semantics §1.7) */
    const int32_t *lengths;  /* forward: the micro-batch's sequence lengths [batch] (device;
                                a translation model's source lengths), for the stages with
                                needs_lengths; NULL = every step counts */
    float *attn_out;  /* eval forward: the attention weights [batch, Tq, Tk] of the stage's
                         attention layer (device), for decoding; NULL = not wanted */
};

/* The stage's layout only (offsets, counts, shapes; no memory, be = NULL): what a
 * process needs to know of a stage another process holds. Finish with
 * pb_stage_finish. */
void pb_stage_layout(struct pb_stage *s, const struct pb_model *m, int index, int nstages,
                     int first, int last);
int pb_stage_init(struct pb_stage *s, struct pb_backend *be, const struct pb_model *m, int index,
                  int nstages, int first, int last, struct pb_err *e);
void pb_stage_finish(struct pb_stage *s);

/* PyTorch's default initialisation of the stage's layers from the seed (independent
 * of the partition: a layer's numbers depend on the seed and its uid only). */
int pb_stage_init_params(struct pb_stage *s, uint64_t seed, struct pb_err *e);

/* Forward of one micro-batch with weights w (a flat buffer of nparams floats: W or a
 * copy). input: plain [batch, ...] tensor on this backend, owned by the act from now
 * on. Non-last stages write the output, plain, to *out (allocated, PB_MEM_COMM,
 * owned by the caller); the last stage computes the loss on labels (device [batch])
 * and dL/dlogits (labels [s->nlabels]). With !c->train nothing is kept: act is released before returning. */
int pb_stage_forward(struct pb_stage *s, const struct pb_step_ctx *c, const float *w,
                     struct pb_tensor input, const int32_t *labels, struct pb_stage_act *act,
                     struct pb_tensor *out, struct pb_err *e);

/* Backward with weights w: dy is dL/d(output) (plain, owned by the caller; ignored
 * on the last stage). Non-first stages write dL/d(input), plain, to *dx (allocated,
 * PB_MEM_COMM, owned by the caller). Accumulates into s->grads; releases act. */
int pb_stage_backward(struct pb_stage *s, const struct pb_step_ctx *c, const float *w,
                      struct pb_stage_act *act, const struct pb_tensor *dy, struct pb_tensor *dx,
                      struct pb_err *e);

/* The split backward (semantics §4.10): the input-gradient pass does everything
 * pb_stage_backward does except the weight gradients of the layers with a separate
 * weight pass (layer.h's backward_weights: linear, conv2d, embedding, LSTM, attention),
 * and keeps in act only what those need: their inputs, and dY or, for a layer that
 * keeps its own (the LSTM's gate gradients and sequences, the attention's projection
 * gradients: pb_node_act.kept), that instead; the weight-gradient pass then accumulates
 * their dW into s->grads and releases act. Every other layer (batch norm, ...) does its
 * whole backward, its dW included, in the input pass. I then W gives B's bits: each
 * layer's dW comes from the same kernel and inputs. */
int pb_stage_backward_input(struct pb_stage *s, const struct pb_step_ctx *c, const float *w,
                            struct pb_stage_act *act, const struct pb_tensor *dy,
                            struct pb_tensor *dx, struct pb_err *e);
int pb_stage_backward_weights(struct pb_stage *s, const struct pb_step_ctx *c,
                              struct pb_stage_act *act, struct pb_err *e);

/* Frees what a forward kept (after an error, or for evaluation). */
void pb_stage_act_release(struct pb_stage *s, struct pb_stage_act *act);

/* One checkpoint tensor of a stage: a parameter or a BN running statistic. */
struct pb_stage_tensor {
    const char *name;              /* "<block>.<layer>.<param>" (a top-level block:
                                      "<layer>.<param>"): the key of the PyTorch
                                      definition's state_dict, the same at any partition */
    bool is_buffer;                /* in the stage's buffers, else its params */
    size_t off, count;             /* host-side offset and count in that flat buffer */
    int ndim;                      /* PyTorch's shape (struct pb_param_tensor) */
    int64_t shape[4];
    const struct pb_layer *layer;  /* the layer that holds it */
    const char *legacy_name;       /* NULL, or "<block>.<legacy layer name>.<param>": its
                                      name in older checkpoints, after "stage<k>." */
};

/* Calls fn for each checkpoint tensor of the stage, in model order. */
void pb_stage_tensors(const struct pb_stage *s,
                      void (*fn)(void *ctx, const struct pb_stage_tensor *t), void *ctx);

#endif
