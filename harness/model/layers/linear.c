/* harness/model/layers/linear.c — y = x·Wᵀ + b (torch.nn.Linear).
 * x [N, in] (a tensor [N, in, 1, 1]), W [out, in], b [out], y [N, out]; plain layout.
 * Over a sequence [B, T, in] (a tensor [B, T, in, 1], layer.h) it applies per step, as
 * torch.nn.Linear on the last dimension: the rows are the B·T steps, y [B, T, out]. */
#include "harness/model/layers/layer_util.h"

/* Whether the input is a sequence [B, T, in, 1] rather than a matrix [N, in, 1, 1]. */
static bool linear_over_steps(struct pb_shape in)
{
    return !(in.h == 1 && in.w == 1);
}

/* The rows of the product: N, or B·T over a sequence. */
static int linear_rows(const struct pb_layer *l)
{
    return linear_over_steps(l->in_shape[0]) ? l->in_shape[0].n * l->in_shape[0].c
                                             : l->in_shape[0].n;
}

static int linear_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                        struct pb_shape *out, struct pb_err *e)
{
    char buf[64];
    PB_CHECK(nin == 1);
    if (linear_over_steps(in[0]) && in[0].w == 1 && in[0].h == l->cfg.in_features) {
        *out = (struct pb_shape){in[0].n, in[0].c, l->cfg.out_features, 1};
        return 0;
    }
    if (in[0].h != 1 || in[0].w != 1 || in[0].c != l->cfg.in_features)
        return pb_err_set(e, "linear '%s' expects [N, %d] or [B, T, %d, 1] input but gets %s (add a "
                             "flatten before it or fix in_features)",
                          l->name, l->cfg.in_features, l->cfg.in_features, pb_shape_str(in[0], buf, sizeof buf));
    *out = (struct pb_shape){in[0].n, l->cfg.out_features, 1, 1};
    return 0;
}

static size_t linear_params(const struct pb_layer *l)
{
    return (size_t)l->cfg.out_features * l->cfg.in_features + (l->cfg.bias ? l->cfg.out_features : 0);
}

static void linear_init(const struct pb_layer *l, float *params, float *buffers, uint64_t seed)
{
    (void)buffers;
    size_t nw = (size_t)l->cfg.out_features * l->cfg.in_features;
    pb_init_weight_bias(&l->cfg.init, params, nw, l->cfg.bias ? params + nw : NULL,
                        (size_t)l->cfg.out_features, l->cfg.in_features, l->cfg.out_features, seed,
                        l->uid);
}

static int linear_tensors(const struct pb_layer *l, struct pb_param_tensor *t)
{
    t[0] = (struct pb_param_tensor){"weight", 2, {l->cfg.out_features, l->cfg.in_features}};
    if (!l->cfg.bias)
        return 1;
    t[1] = (struct pb_param_tensor){"bias", 1, {l->cfg.out_features}};
    return 2;
}

static int linear_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                          const struct pb_tensor *const *in, const float *params, float *buffers,
                          struct pb_node_act *act, struct pb_err *e)
{
    (void)buffers;
    struct pb_backend *be = c->be;
    int n = linear_rows(l), fi = l->cfg.in_features, fo = l->cfg.out_features;
    struct pb_tensor tmp;
    const struct pb_tensor *x;
    if (pb_plain_view(be, in[0], &tmp, &x, e))
        return -1;
    if (pb_tensor_alloc(be, &act->out, l->out_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e)) {
        pb_plain_release(be, &tmp);
        return -1;
    }
    be->ops->gemm(be, false, true, n, fo, fi, 1.0f, x->data, fi, params, fi, 0.0f, act->out.data, fo);
    if (l->cfg.bias)
        be->ops->bias_add(be, act->out.data, params + (size_t)fo * fi, n, fo);
    pb_plain_release(be, &tmp);
    return 0;
}

static int linear_backward_weights(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                                   const struct pb_tensor *const *in,
                                   const struct pb_node_act *act, const struct pb_tensor *dy,
                                   float *grads, struct pb_err *e)
{
    (void)act;
    struct pb_backend *be = c->be;
    int n = linear_rows(l), fi = l->cfg.in_features, fo = l->cfg.out_features;
    struct pb_tensor tmp;
    const struct pb_tensor *x;
    if (pb_plain_view(be, in[0], &tmp, &x, e))
        return -1;
    /* dW[out, in] += dyᵀ[out, N] · x[N, in];  db[out] += Σ_rows dy */
    be->ops->gemm(be, true, false, fo, fi, n, 1.0f, dy->data, fo, x->data, fi, 1.0f, grads, fi);
    if (l->cfg.bias)
        be->ops->bias_grad(be, dy->data, grads + (size_t)fo * fi, n, fo);
    pb_plain_release(be, &tmp);
    return 0;
}

static int linear_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                           const struct pb_tensor *const *in, const struct pb_node_act *act,
                           const struct pb_tensor *dy, const float *params, float *grads,
                           struct pb_tensor *const *dx, struct pb_err *e)
{
    struct pb_backend *be = c->be;
    int n = linear_rows(l), fi = l->cfg.in_features, fo = l->cfg.out_features;
    if (!c->input_only && linear_backward_weights(l, c, in, act, dy, grads, e))
        return -1;
    if (!dx[0])
        return 0;
    /* dx[N, in] = dy[N, out] · W[out, in] */
    if (dx[0]->layout == PB_LAYOUT_PLAIN) {
        be->ops->gemm(be, false, false, n, fi, fo, 1.0f, dy->data, fo, params, fi, 0.0f, dx[0]->data, fi);
        return 0;
    }
    struct pb_tensor dplain;
    if (pb_tensor_alloc(be, &dplain, dx[0]->shape, PB_LAYOUT_PLAIN, PB_MEM_SCRATCH, e))
        return -1;
    be->ops->gemm(be, false, false, n, fi, fo, 1.0f, dy->data, fo, params, fi, 0.0f, dplain.data, fi);
    be->ops->reorder(be, &dplain, dx[0]);
    pb_backend_free(be, dplain.data);
    return 0;
}

static double linear_flops(const struct pb_layer *l)
{
    return 2.0 * linear_rows(l) * (double)l->cfg.in_features * l->cfg.out_features;
}

const struct pb_layer_ops pb_linear_ops = {
    .kind = "linear",
    .infer = linear_infer,
    .param_count = linear_params,
    .buffer_count = pb_layer_zero_count,
    .init = linear_init,
    .param_tensors = linear_tensors,
    .forward = linear_forward,
    .backward = linear_backward,
    .backward_weights = linear_backward_weights,
    .flops = linear_flops,
};
