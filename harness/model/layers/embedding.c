/* harness/model/layers/embedding.c — y[b, t] = W[tok[b, t]] (torch.nn.Embedding with
 * padding_idx). Tokens [B, T, 1, 1] as floats, W [vocab, dim], y [B, T, dim, 1]
 * (layer.h's sequence form); plain layout. The backward accumulates into the rows of
 * the tokens seen only, never into the padding row, and gives the tokens no gradient.
 * Init as PyTorch: N(0, 1), the padding row zero; or the layer's init spec over every
 * row (GNMT's uniform_(−0.1, 0.1) after construction overwrites the padding row too). */
#include "harness/model/layers/layer_util.h"
#include "harness/base/rng.h"

static int embedding_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                           struct pb_shape *out, struct pb_err *e)
{
    char buf[64];
    PB_CHECK(nin == 1);
    if (in[0].h != 1 || in[0].w != 1)
        return pb_err_set(e, "embedding '%s' expects token ids [B, T, 1, 1] but gets %s",
                          l->name, pb_shape_str(in[0], buf, sizeof buf));
    *out = (struct pb_shape){in[0].n, in[0].c, l->cfg.out_features, 1};
    return 0;
}

static size_t embedding_params(const struct pb_layer *l)
{
    return (size_t)l->cfg.in_features * (size_t)l->cfg.out_features;
}

static void embedding_init(const struct pb_layer *l, float *params, float *buffers, uint64_t seed)
{
    (void)buffers;
    size_t n = embedding_params(l), dim = (size_t)l->cfg.out_features;
    if (l->cfg.init.kind != PB_INIT_DEFAULT) {  /* every row, the padding one too */
        pb_init_fill(&l->cfg.init, params, n, 0, seed, l->uid, 0);
        return;
    }
    struct pb_rng_key key = pb_rng_key(PB_RNG_INIT, seed, (uint64_t)l->uid, 0, 0);
    for (size_t i = 0; i < n; i++)
        params[i] = pb_rng_normal(key, i);
    if (l->cfg.padding_idx >= 0)
        for (size_t j = 0; j < dim; j++)
            params[(size_t)l->cfg.padding_idx * dim + j] = 0.0f;
}

static int embedding_tensors(const struct pb_layer *l, struct pb_param_tensor *t)
{
    t[0] = (struct pb_param_tensor){"weight", 2, {l->cfg.in_features, l->cfg.out_features}};
    return 1;
}

static int embedding_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                             const struct pb_tensor *const *in, const float *params,
                             float *buffers, struct pb_node_act *act, struct pb_err *e)
{
    (void)buffers;
    struct pb_backend *be = c->be;
    if (pb_tensor_alloc(be, &act->out, l->out_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e))
        return -1;
    be->ops->embedding_fwd(be, in[0]->data, pb_shape_count(in[0]->shape), params,
                           l->cfg.in_features, l->cfg.out_features, act->out.data);
    return 0;
}

static int embedding_backward_weights(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                                      const struct pb_tensor *const *in,
                                      const struct pb_node_act *act, const struct pb_tensor *dy,
                                      float *grads, struct pb_err *e)
{
    (void)act;
    (void)e;
    struct pb_backend *be = c->be;
    be->ops->embedding_bwd(be, in[0]->data, pb_shape_count(in[0]->shape), dy->data,
                           l->cfg.in_features, l->cfg.out_features, l->cfg.padding_idx, grads);
    return 0;
}

static int embedding_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                              const struct pb_tensor *const *in, const struct pb_node_act *act,
                              const struct pb_tensor *dy, const float *params, float *grads,
                              struct pb_tensor *const *dx, struct pb_err *e)
{
    (void)params;
    struct pb_backend *be = c->be;
    if (!c->input_only)
        embedding_backward_weights(l, c, in, act, dy, grads, e);
    if (dx[0])  /* token ids are not differentiable: a zero gradient */
        be->ops->fill(be, dx[0]->data, 0.0f, pb_tensor_floats(be, dx[0]));
    return 0;
}

const struct pb_layer_ops pb_embedding_ops = {
    .kind = "embedding",
    .infer = embedding_infer,
    .param_count = embedding_params,
    .buffer_count = pb_layer_zero_count,
    .init = embedding_init,
    .param_tensors = embedding_tensors,
    .forward = embedding_forward,
    .backward = embedding_backward,
    .backward_weights = embedding_backward_weights,
    .flops = pb_layer_out_flops,
};
