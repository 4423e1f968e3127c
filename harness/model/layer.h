/* harness/model/layer.h — layers, the nodes of a model's blocks.
 * A layer computes forward (train and eval) and backward (dX, and dW accumulated
 * into the stage's flat gradient buffer), initialises its parameters as PyTorch
 * does, and reports its FLOPs and activation memory. Parameters live at an offset
 * in the stage's flat buffers (design §2.4), so the same layer runs on any
 * weight version: the caller passes the flat buffer of the version to read.
 * Sequences are plain float tensors [B, T, F] held as n = B, c = T, h = F, w = 1
 * (batch-first, row-major, so a per-step linear reads them as [B·T, F]); token ids
 * enter as [B, T, 1, 1] floats. */
#ifndef PB_LAYER_H
#define PB_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/compute/backend.h"

#define PB_LAYER_MAX_INPUTS 8
#define PB_NAME_MAX 48
#define PB_LSTM_MAX_LAYERS 8     /* the layers of one LSTM (torch.nn.LSTM's num_layers) */
/* parameter tensors of one layer: a bidirectional LSTM's four per direction and layer */
#define PB_LAYER_MAX_TENSORS (8 * PB_LSTM_MAX_LAYERS)

/* One parameter tensor of a layer as PyTorch names and shapes it: linear and attention
 * projections [out, in], conv2d [cout, cin, kh, kw], embedding [num, dim], LSTM
 * weight_ih [4H, I] and weight_hh [4H, H], attention's normalize_scalar [] (0-d);
 * biases and the rest [n]. */
struct pb_param_tensor {
    const char *name;   /* within the layer: "weight", "bias_hh_l0", "linear_q.weight" */
    int ndim;           /* 0 to 4 */
    int64_t shape[4];
};

static inline size_t pb_param_tensor_count(const struct pb_param_tensor *t)
{
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= (size_t)t->shape[d];
    return n;
}

enum pb_layer_kind {
    PB_LAYER_LINEAR,
    PB_LAYER_CONV2D,
    PB_LAYER_BATCHNORM2D,
    PB_LAYER_RELU,
    PB_LAYER_MAXPOOL2D,
    PB_LAYER_AVGPOOL2D,
    PB_LAYER_GLOBAL_AVGPOOL,
    PB_LAYER_DROPOUT,
    PB_LAYER_FLATTEN,
    PB_LAYER_ADD,
    PB_LAYER_CONCAT,
    PB_LAYER_EMBEDDING,
    PB_LAYER_LSTM,
    PB_LAYER_SEQ_MEAN,
    PB_LAYER_ATTENTION,
    PB_LAYER_FEATURE_CONCAT,
    PB_LAYER_SLICE,
};

/* How a layer's parameters start (semantics §1.9): PyTorch's layer default, or what a
 * model's definition sets with torch.nn.init. Drawn from the counter-based RNG keyed by
 * (seed, layer uid, tensor), so a layer's numbers do not depend on the partition. */
enum pb_init_kind {
    PB_INIT_DEFAULT,         /* the layer's PyTorch default (zero-initialised spec) */
    PB_INIT_KAIMING_NORMAL,  /* N(0, 2 / fan_out): kaiming_normal_(mode='fan_out',
                                nonlinearity='relu'); fan_out = out × kernel area */
    PB_INIT_NORMAL,          /* N(0, std²): normal_(0, std) */
    PB_INIT_TRUNC_NORMAL,    /* N(0, std²) truncated to [lo, hi] (absolute bounds):
                                trunc_normal_(std=std, a=lo, b=hi) */
    PB_INIT_CONSTANT,        /* every weight = value: constant_(value) */
    PB_INIT_UNIFORM,         /* U(lo, hi): uniform_(lo, hi), of the weight and (unless
                                zero_bias) of the bias too, as GNMT's init_weight loops */
};

struct pb_init_spec {
    enum pb_init_kind kind;  /* of the weight (BatchNorm: γ) */
    float std, lo, hi;       /* normal, truncated normal; uniform (lo, hi) */
    float value;             /* constant */
    bool zero_bias;          /* the bias (BatchNorm: β) is 0; else the layer's default rule.
                                An LSTM's spec sets all four tensors of each direction, and
                                zero_bias zeroes bias_hh only (GNMT's init_lstm_) */
};

/* Hyperparameters; which fields apply depends on the kind. */
struct pb_layer_cfg {
    enum pb_layer_kind kind;
    int in_features, out_features;  /* linear; lstm (input, hidden); embedding (vocabulary,
                                       dimension); attention (query, units) */
    int key_features;               /* attention: the keys' features */
    int padding_idx;                /* embedding: the row that gets no gradient (< 0: none) */
    struct pb_conv_desc conv;       /* conv2d */
    struct pb_pool_desc pool;       /* max/avg pool */
    int channels;                   /* batchnorm2d */
    float eps, momentum;            /* batchnorm2d (PyTorch: 1e-5, 0.1) */
    bool relu;                      /* batchnorm2d, add: a ReLU fused onto its output */
    float p;                        /* dropout probability; lstm: torch.nn.LSTM's dropout, on
                                       each layer's output but the last, in training */
    bool bidirectional;             /* lstm: forward ‖ reverse over each sequence's length */
    int num_layers;                 /* lstm: layers stacked, 1 … PB_LSTM_MAX_LAYERS (0 is
                                       refused: pb_block_lstm sets 1) */
    bool bias;                      /* linear */
    int slice_axis, slice_lo, slice_hi;  /* slice: [lo, hi) of axis 1 (time) or 2 (features) */
    struct pb_init_spec init;       /* linear, conv2d, batchnorm2d, embedding, lstm */
};

/* Where a forward runs: the per-micro-batch facts a layer may need. */
struct pb_fwd_ctx {
    struct pb_backend *be;
    bool train;
    uint64_t seed;  /* dropout key: (seed, global micro-batch, layer uid), semantics §1.7 */
    int stage;
    int64_t mb;
    const int32_t *lengths;  /* sequences' lengths [batch] (device), NULL = all full */
    float *attn_out;  /* eval: where the attention layers write their weights [batch, tq,
                         tk] (device; the last one's stay), NULL = nowhere */
    bool input_only;  /* backward: the split backward's I pass; a layer with
                         backward_weights leaves its dW to that */
    void **kept;      /* input_only: where a layer whose W pass reads what its I pass
                         computed (the LSTM, the attention) puts it (pb_node_act.kept);
                         NULL otherwise */
};

/* What a forward leaves for the backward of one micro-batch. */
struct pb_node_act {
    struct pb_tensor out;
    void *aux;          /* pooling workspace, batch mean/var, ... (device, PB_MEM_ACTS);
                           freed after the layer's B or I pass */
    void *kept;         /* what the layer's I pass kept for its W pass instead of dY (the
                           LSTM's gate gradients and sequences, the attention's projection
                           gradients; device, PB_MEM_ACTS); NULL for a layer whose W reads
                           its inputs and dY (linear, conv2d, embedding) */
};

struct pb_layer;

struct pb_layer_ops {
    const char *kind;
    /* Output shape from input shapes, or an error saying what does not fit. */
    int (*infer)(const struct pb_layer *l, const struct pb_shape *in, int nin,
                 struct pb_shape *out, struct pb_err *e);
    size_t (*param_count)(const struct pb_layer *l);
    size_t (*buffer_count)(const struct pb_layer *l);  /* non-trained state (BN running stats) */
    /* PyTorch's default initialisation into host memory, tensor by tensor */
    void (*init)(const struct pb_layer *l, float *params, float *buffers, uint64_t seed);
    /* The parameter tensors in the order of the flat buffer (at most
     * PB_LAYER_MAX_TENSORS); returns their number. */
    int (*param_tensors)(const struct pb_layer *l, struct pb_param_tensor *t);
    /* Forward: allocates act->out (and act->aux) in PB_MEM_ACTS. params and buffers
     * point at this layer's slice of the flat buffers. */
    int (*forward)(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                   const struct pb_tensor *const *in, const float *params, float *buffers,
                   struct pb_node_act *act, struct pb_err *e);
    /* Backward: dx[i] are allocated by the caller with in[i]'s shape and layout
     * (NULL where no gradient is wanted); dW accumulated into grads. params is the
     * version the schedule names for the backward. */
    int (*backward)(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                    const struct pb_tensor *const *in, const struct pb_node_act *act,
                    const struct pb_tensor *dy, const float *params, float *grads,
                    struct pb_tensor *const *dx, struct pb_err *e);
    /* The weight gradient alone (the split backward's W pass), from the inputs the
     * forward read and dy, or, where the I pass set act->kept (through c->kept), from
     * the inputs and that (dy then has no data): accumulates exactly what backward adds
     * to grads when !c->input_only, with the same kernels. act->aux is freed by then, and
     * act->out unless it is the input of another layer that splits. NULL: the layer has
     * no separate weight pass and does all of its backward in I. */
    int (*backward_weights)(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                            const struct pb_tensor *const *in, const struct pb_node_act *act,
                            const struct pb_tensor *dy, float *grads, struct pb_err *e);
    /* Forward FLOPs for the micro-batch of the inferred shapes. */
    double (*flops)(const struct pb_layer *l);
};

struct pb_layer {
    const struct pb_layer_ops *ops;
    struct pb_layer_cfg cfg;
    char name[PB_NAME_MAX];
    const char *legacy_name;         /* NULL, or the name a checkpoint written before its
                                        names were PyTorch's gave it, as the layer of a
                                        block that was not top-level: its tensors were
                                        "stage<k>.<block>.<legacy_name>.<param>" (a static
                                        string) */
    int uid;                         /* index of the layer in the whole model (a BN with
                                        its ReLU fused counts as two) */
    int nin;
    int in[PB_LAYER_MAX_INPUTS];     /* node indices in the block; -1 = the block's input */
    struct pb_shape in_shape[PB_LAYER_MAX_INPUTS], out_shape;
    size_t param_off, buffer_off;    /* offsets into the stage's flat buffers */
};

const struct pb_layer_ops *pb_layer_ops_for(enum pb_layer_kind k);

/* The backend ops the layer's forward and backward run (for supports_op): writes them
 * to ops[] (room for PB_BOP_NOPS) and returns how many. */
int pb_layer_backend_ops(const struct pb_layer *l, enum pb_backend_op *ops);

/* Bytes a forward keeps for the backward (output + aux), for memory estimates. */
size_t pb_layer_act_bytes(const struct pb_layer *l);

/* PyTorch's default init for a weight of fan_in inputs: U(−1/√fan_in, 1/√fan_in),
 * which is kaiming_uniform_(a = √5) for weights and the bias rule alike. */
void pb_init_uniform_fan_in(float *w, size_t n, int fan_in, uint64_t seed, int uid, int which);

/* A weight of n values (tensor `which` of layer uid) drawn as spec says (not
 * PB_INIT_DEFAULT: the layer's own rule applies then); fan_out is the Kaiming fan. */
void pb_init_fill(const struct pb_init_spec *spec, float *w, size_t n, int fan_out, uint64_t seed,
                  int uid, int which);

#endif
