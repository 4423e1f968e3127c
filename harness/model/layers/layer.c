/* harness/model/layers/layer.c — the layer registry, PyTorch's default initialisation,
 * and helpers shared by the layer implementations. */
#include <math.h>
#include <stdio.h>

#include "harness/model/layers/layer_util.h"
#include "harness/base/rng.h"

const struct pb_layer_ops *pb_layer_ops_for(enum pb_layer_kind k)
{
    switch (k) {
    case PB_LAYER_LINEAR: return &pb_linear_ops;
    case PB_LAYER_CONV2D: return &pb_conv2d_ops;
    case PB_LAYER_BATCHNORM2D: return &pb_batchnorm2d_ops;
    case PB_LAYER_RELU: return &pb_relu_ops;
    case PB_LAYER_MAXPOOL2D: return &pb_maxpool2d_ops;
    case PB_LAYER_AVGPOOL2D: return &pb_avgpool2d_ops;
    case PB_LAYER_GLOBAL_AVGPOOL: return &pb_global_avgpool_ops;
    case PB_LAYER_DROPOUT: return &pb_dropout_ops;
    case PB_LAYER_FLATTEN: return &pb_flatten_ops;
    case PB_LAYER_ADD: return &pb_add_ops;
    case PB_LAYER_CONCAT: return &pb_concat_ops;
    case PB_LAYER_EMBEDDING: return &pb_embedding_ops;
    case PB_LAYER_LSTM: return &pb_lstm_ops;
    case PB_LAYER_SEQ_MEAN: return &pb_seq_mean_ops;
    case PB_LAYER_ATTENTION: return &pb_attention_ops;
    case PB_LAYER_FEATURE_CONCAT: return &pb_feature_concat_ops;
    case PB_LAYER_SLICE: return &pb_slice_ops;
    }
    PB_CHECK(!"unknown layer kind");
    return NULL;
}

int pb_layer_backend_ops(const struct pb_layer *l, enum pb_backend_op *ops)
{
    int n = 0;
    switch (l->cfg.kind) {
    case PB_LAYER_LINEAR:
        ops[n++] = PB_BOP_GEMM;
        if (l->cfg.bias)
            ops[n++] = PB_BOP_BIAS;
        break;
    case PB_LAYER_CONV2D: ops[n++] = PB_BOP_CONV; break;
    case PB_LAYER_BATCHNORM2D: ops[n++] = PB_BOP_BATCHNORM; break;
    case PB_LAYER_RELU: ops[n++] = PB_BOP_RELU; break;
    case PB_LAYER_MAXPOOL2D: ops[n++] = PB_BOP_POOL_MAX; break;
    case PB_LAYER_AVGPOOL2D:
    case PB_LAYER_GLOBAL_AVGPOOL: ops[n++] = PB_BOP_POOL_AVG; break;
    case PB_LAYER_DROPOUT: ops[n++] = PB_BOP_DROPOUT; break;
    case PB_LAYER_FLATTEN: break;  /* a reorder to plain, which every backend has */
    case PB_LAYER_ADD:
        ops[n++] = PB_BOP_ADD;
        if (l->cfg.relu)
            ops[n++] = PB_BOP_RELU;
        break;
    case PB_LAYER_CONCAT: ops[n++] = PB_BOP_CONCAT; break;
    case PB_LAYER_EMBEDDING: ops[n++] = PB_BOP_EMBEDDING; break;
    case PB_LAYER_LSTM:
        ops[n++] = PB_BOP_GEMM;
        ops[n++] = PB_BOP_LSTM;
        if (l->cfg.bidirectional) {
            ops[n++] = PB_BOP_SEQ_GATHER;
            ops[n++] = PB_BOP_ADD;
        }
        if (l->cfg.num_layers > 1 && l->cfg.p > 0.0f)
            ops[n++] = PB_BOP_DROPOUT;
        break;
    case PB_LAYER_SEQ_MEAN: ops[n++] = PB_BOP_SEQ_MEAN; break;
    case PB_LAYER_ATTENTION: ops[n++] = PB_BOP_GEMM; ops[n++] = PB_BOP_ATTENTION; break;
    case PB_LAYER_FEATURE_CONCAT:
    case PB_LAYER_SLICE: ops[n++] = PB_BOP_CONCAT; break;
    }
    return n;
}

size_t pb_layer_act_bytes(const struct pb_layer *l)
{
    size_t out = pb_shape_count(l->out_shape) * sizeof(float);
    if (l->cfg.kind == PB_LAYER_BATCHNORM2D)  /* the statistics; a fused ReLU's bit mask */
        out += 2 * (size_t)l->cfg.channels * sizeof(float) +
               (l->cfg.relu ? (pb_shape_count(l->out_shape) + 7) / 8 : 0);
    if (l->cfg.kind == PB_LAYER_MAXPOOL2D)
        out += pb_shape_count(l->out_shape) * sizeof(int32_t);
    if (l->cfg.kind == PB_LAYER_LSTM) {
        /* per layer its gates and cell states (the CPU's workspace), y_f and y_r when
           bidirectional; the outputs of all layers but the last; the lengths */
        size_t y = pb_shape_count(l->out_shape) * sizeof(float), nl = (size_t)l->cfg.num_layers;
        out += nl * 5 * y + (nl - 1) * y;
        if (l->cfg.bidirectional)
            out += nl * y + (size_t)l->out_shape.n * sizeof(int32_t);
    }
    if (l->cfg.kind == PB_LAYER_SEQ_MEAN)
        out += (size_t)l->out_shape.n * sizeof(int32_t);
    if (l->cfg.kind == PB_LAYER_ATTENTION) {  /* pq, pk, the weights a and the lengths */
        struct pb_shape q = l->in_shape[0], k = l->in_shape[1];
        size_t b = (size_t)q.n, u = (size_t)l->cfg.out_features;
        out += (b * ((size_t)q.c * u + (size_t)k.c * u + (size_t)q.c * k.c)) * sizeof(float) +
               b * sizeof(int32_t);
    }
    return out;
}

void pb_init_uniform_fan_in(float *w, size_t n, int fan_in, uint64_t seed, int uid, int which)
{
    float bound = fan_in > 0 ? 1.0f / sqrtf((float)fan_in) : 0.0f;
    pb_rng_fill_uniform(pb_rng_key(PB_RNG_INIT, seed, (uint64_t)uid, (uint64_t)which, 0), 0, w, n,
                        -bound, bound);
}

const char *pb_shape_str(struct pb_shape s, char *buf, size_t len)
{
    snprintf(buf, len, "[%d, %d, %d, %d]", s.n, s.c, s.h, s.w);
    return buf;
}

int pb_tensor_clone_as(struct pb_backend *be, const struct pb_tensor *src, enum pb_layout layout,
                       enum pb_mem_kind kind, struct pb_tensor *dst, struct pb_err *e)
{
    if (pb_tensor_alloc(be, dst, src->shape, layout, kind, e))
        return -1;
    if (layout == src->layout)
        be->ops->copy(be, dst->data, src->data, pb_tensor_floats(be, src) * sizeof(float));
    else
        be->ops->reorder(be, src, dst);
    return 0;
}

int pb_plain_view(struct pb_backend *be, const struct pb_tensor *t, struct pb_tensor *tmp,
                  const struct pb_tensor **out, struct pb_err *e)
{
    tmp->data = NULL;
    if (t->layout == PB_LAYOUT_PLAIN) {
        *out = t;
        return 0;
    }
    if (pb_tensor_clone_as(be, t, PB_LAYOUT_PLAIN, PB_MEM_SCRATCH, tmp, e))
        return -1;
    *out = tmp;
    return 0;
}

void pb_plain_release(struct pb_backend *be, struct pb_tensor *tmp)
{
    pb_backend_free(be, tmp->data);
    tmp->data = NULL;
}

int pb_pool_out_size(int n, int k, int s, int p, bool ceil_mode)
{
    int span = n + 2 * p - k;
    if (span < 0)
        return 0;
    int out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= n + p)
        out--;
    return out;
}

size_t pb_layer_zero_count(const struct pb_layer *l)
{
    (void)l;
    return 0;
}

void pb_layer_no_init(const struct pb_layer *l, float *params, float *buffers, uint64_t seed)
{
    (void)l;
    (void)params;
    (void)buffers;
    (void)seed;
}

int pb_layer_no_tensors(const struct pb_layer *l, struct pb_param_tensor *t)
{
    (void)l;
    (void)t;
    return 0;
}

double pb_layer_no_flops(const struct pb_layer *l)
{
    (void)l;
    return 0.0;
}

double pb_layer_out_flops(const struct pb_layer *l)
{
    return (double)pb_shape_count(l->out_shape);
}
