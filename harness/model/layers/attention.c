/* harness/model/layers/attention.c — GNMT's normalised Bahdanau attention (the MLPerf
 * reference's BahdanauAttention(query, key, units, normalize = True, batch_first = True),
 * backend.h's struct pb_attn_desc). Two inputs: the decoder's queries in[0] [B, Tq, query,
 * 1] and the encoder's outputs, the keys, in[1] [B, Tk, key, 1] (layer.h's sequence form),
 * masked by the source lengths of the forward's context (NULL = all Tk); output the
 * context [B, Tq, key, 1]. Parameters in PyTorch's parameters() order and names:
 * linear_att [U], normalize_scalar [1], normalize_bias [U], linear_q.weight [U, query],
 * linear_k.weight [U, key]; init as the reference with init_weight 0.1: U(−0.1, 0.1) for
 * linear_att, linear_q and linear_k, normalize_scalar = 1/√U, normalize_bias = 0. The aux
 * is the backend's workspace followed by the lengths [B] int32 (Tk where there were
 * none). The split backward: I writes dq and dk and keeps (pb_node_act.kept) the
 * backend's attn_bwd_keep (the projections' gradients and v and g's increments); the
 * stage keeps q and k; W forms the five weight gradients from those (backend.h). */
#include <math.h>

#include "harness/base/rng.h"
#include "harness/model/layers/layer_util.h"

#define GNMT_INIT_WEIGHT 0.1f

static struct pb_attn_desc attn_desc(const struct pb_layer *l)
{
    struct pb_shape q = l->in_shape[0], k = l->in_shape[1];
    return (struct pb_attn_desc){q.n, q.c, k.c, q.h, k.h, l->cfg.out_features};
}

static int attn_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                      struct pb_shape *out, struct pb_err *e)
{
    char bq[64], bk[64];
    if (nin != 2)
        return pb_err_set(e, "attention '%s' takes two inputs, the queries and the keys (gets %d)",
                          l->name, nin);
    if (in[0].w != 1 || in[0].h != l->cfg.in_features || in[1].w != 1 ||
        in[1].h != l->cfg.key_features || in[1].n != in[0].n)
        return pb_err_set(e,
                          "attention '%s' expects queries [B, Tq, %d, 1] and keys [B, Tk, %d, 1] "
                          "but gets %s and %s",
                          l->name, l->cfg.in_features, l->cfg.key_features,
                          pb_shape_str(in[0], bq, sizeof bq), pb_shape_str(in[1], bk, sizeof bk));
    *out = (struct pb_shape){in[0].n, in[0].c, in[1].h, 1};
    return 0;
}

static int attn_tensors(const struct pb_layer *l, struct pb_param_tensor *t)
{
    int u = l->cfg.out_features;
    t[0] = (struct pb_param_tensor){"linear_att", 1, {u}};
    t[1] = (struct pb_param_tensor){"normalize_scalar", 0, {0}};  /* a 0-d tensor: [] */
    t[2] = (struct pb_param_tensor){"normalize_bias", 1, {u}};
    t[3] = (struct pb_param_tensor){"linear_q.weight", 2, {u, l->cfg.in_features}};
    t[4] = (struct pb_param_tensor){"linear_k.weight", 2, {u, l->cfg.key_features}};
    return 5;
}

static size_t attn_params(const struct pb_layer *l)
{
    size_t u = (size_t)l->cfg.out_features;
    return u * (2 + (size_t)l->cfg.in_features + (size_t)l->cfg.key_features) + 1;
}

static void attn_init(const struct pb_layer *l, float *params, float *buffers, uint64_t seed)
{
    (void)buffers;
    struct pb_param_tensor t[5];
    size_t off = 0;
    int n = attn_tensors(l, t);
    for (int i = 0; i < n; i++) {
        float *w = params + off;
        size_t count = pb_param_tensor_count(&t[i]);
        if (i == 1)
            w[0] = 1.0f / sqrtf((float)l->cfg.out_features);
        else if (i == 2)
            for (size_t j = 0; j < count; j++)
                w[j] = 0.0f;
        else
            pb_rng_fill_uniform(pb_rng_key(PB_RNG_INIT, seed, (uint64_t)l->uid, (uint64_t)i, 0),
                                0, w, count, -GNMT_INIT_WEIGHT, GNMT_INIT_WEIGHT);
        off += count;
    }
}

static int attn_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                        const struct pb_tensor *const *in, const float *params, float *buffers,
                        struct pb_node_act *act, struct pb_err *e)
{
    (void)buffers;
    struct pb_backend *be = c->be;
    struct pb_attn_desc d = attn_desc(l);
    if (pb_tensor_alloc(be, &act->out, l->out_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e))
        return -1;
    if (!c->train && !c->attn_out) {
        be->ops->attn_fwd(be, &d, in[0]->data, in[1]->data, c->lengths, params, act->out.data,
                          NULL);
        return 0;
    }
    if (!c->train) {  /* the weights wanted: a forward that keeps them, then copied out */
        void *ws = pb_backend_alloc(be, be->ops->attn_workspace(be, &d), PB_MEM_SCRATCH, e);
        if (!ws) {
            pb_backend_free(be, act->out.data);
            act->out.data = NULL;
            return -1;
        }
        be->ops->attn_fwd(be, &d, in[0]->data, in[1]->data, c->lengths, params, act->out.data,
                          ws);
        be->ops->attn_weights(be, &d, ws, c->attn_out);
        pb_backend_free(be, ws);
        return 0;
    }
    size_t ws = be->ops->attn_workspace(be, &d), lb = (size_t)d.batch * sizeof(int32_t);
    char *aux = pb_backend_alloc(be, ws + lb, PB_MEM_ACTS, e);
    if (!aux) {
        pb_backend_free(be, act->out.data);
        act->out.data = NULL;
        return -1;
    }
    int32_t *len = (int32_t *)(aux + ws);
    if (c->lengths) {
        be->ops->copy(be, len, c->lengths, lb);
    } else {
        int32_t *h = be->ops->write_begin(be, len, lb);
        for (int b = 0; b < d.batch; b++)
            h[b] = d.tk;
        be->ops->write_end(be, len, h, lb);
    }
    act->aux = aux;
    be->ops->attn_fwd(be, &d, in[0]->data, in[1]->data, len, params, act->out.data, aux);
    return 0;
}

/* B: the fused backward. I (c->input_only): dq, dk and, kept for W (act->kept, PB_MEM_ACTS),
 * what the backend's weight pass reads besides q and k (attn_bwd_keep: the projections'
 * gradients dpq [B·Tq, U], dpk [B·Tk, U] and v and g's gradient increments). */
static int attn_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                         const struct pb_tensor *const *in, const struct pb_node_act *act,
                         const struct pb_tensor *dy, const float *params, float *grads,
                         struct pb_tensor *const *dx, struct pb_err *e)
{
    struct pb_backend *be = c->be;
    struct pb_attn_desc d = attn_desc(l);
    const int32_t *len = (const int32_t *)((const char *)act->aux + be->ops->attn_workspace(be, &d));
    float *dq = dx[0] ? dx[0]->data : NULL, *dk = dx[1] ? dx[1]->data : NULL;
    if (!c->input_only) {
        be->ops->attn_bwd(be, &d, in[0]->data, in[1]->data, len, params, act->aux, dy->data, dq,
                          dk, grads);
        return 0;
    }
    void *keep = pb_backend_alloc(be, be->ops->attn_bwd_keep(be, &d), PB_MEM_ACTS, e);
    if (!keep)
        return -1;
    be->ops->attn_bwd_data(be, &d, in[1]->data, len, params, act->aux, dy->data, dq, dk, keep);
    *c->kept = keep;
    return 0;
}

/* W: the five weight gradients from q, k and what I kept. */
static int attn_backward_weights(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                                 const struct pb_tensor *const *in,
                                 const struct pb_node_act *act, const struct pb_tensor *dy,
                                 float *grads, struct pb_err *e)
{
    (void)dy;
    (void)e;
    struct pb_backend *be = c->be;
    struct pb_attn_desc d = attn_desc(l);
    PB_CHECK(act->kept);
    be->ops->attn_bwd_weights(be, &d, in[0]->data, in[1]->data, act->kept, grads);
    return 0;
}

/* The projections (2·U·(B·Tq·query + B·Tk·key)), the scores (about 4 FLOPs per
 * (query, key, unit): add, add, tanh, multiply-add), the softmax (about 5 per score) and
 * the context (2·B·Tq·Tk·key). */
static double attn_flops(const struct pb_layer *l)
{
    struct pb_attn_desc d = attn_desc(l);
    double b = d.batch, pairs = b * d.tq * d.tk;
    return 2.0 * d.units * (b * d.tq * d.query + b * d.tk * d.key) + pairs * (4.0 * d.units + 5.0) +
           2.0 * pairs * d.key;
}

const struct pb_layer_ops pb_attention_ops = {
    .kind = "attention",
    .infer = attn_infer,
    .param_count = attn_params,
    .buffer_count = pb_layer_zero_count,
    .init = attn_init,
    .param_tensors = attn_tensors,
    .forward = attn_forward,
    .backward = attn_backward,
    .backward_weights = attn_backward_weights,
    .flops = attn_flops,
};
