/* harness/model/layers/conv2d.c — 2-D convolution (torch.nn.Conv2d, groups = 1).
 * x [N, Cin, H, W], W [Cout, Cin, kh, kw], b [Cout], y [N, Cout, Ho, Wo]; y takes the
 * layout the backend's convolution prefers (blocked on the CPU). */
#include "harness/model/layers/layer_util.h"

static int conv_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                      struct pb_shape *out, struct pb_err *e)
{
    const struct pb_conv_desc *d = &l->cfg.conv;
    char buf[64];
    PB_CHECK(nin == 1);
    if (in[0].c != d->cin)
        return pb_err_set(e, "conv2d '%s' expects %d input channels but gets %s", l->name, d->cin,
                          pb_shape_str(in[0], buf, sizeof buf));
    int ho = pb_pool_out_size(in[0].h, d->kh, d->sh, d->ph, false);
    int wo = pb_pool_out_size(in[0].w, d->kw, d->sw, d->pw, false);
    if (ho < 1 || wo < 1)
        return pb_err_set(e, "conv2d '%s': a %dx%d kernel (padding %d,%d) does not fit the input %s",
                          l->name, d->kh, d->kw, d->ph, d->pw, pb_shape_str(in[0], buf, sizeof buf));
    *out = (struct pb_shape){in[0].n, d->cout, ho, wo};
    return 0;
}

static size_t conv_weight_count(const struct pb_layer *l)
{
    const struct pb_conv_desc *d = &l->cfg.conv;
    return (size_t)d->cout * d->cin * d->kh * d->kw;
}

static size_t conv_params(const struct pb_layer *l)
{
    return conv_weight_count(l) + (l->cfg.conv.bias ? (size_t)l->cfg.conv.cout : 0);
}

static void conv_init(const struct pb_layer *l, float *params, float *buffers, uint64_t seed)
{
    (void)buffers;
    const struct pb_conv_desc *d = &l->cfg.conv;
    size_t nw = conv_weight_count(l);
    pb_init_weight_bias(&l->cfg.init, params, nw, d->bias ? params + nw : NULL, (size_t)d->cout,
                        d->cin * d->kh * d->kw, d->cout * d->kh * d->kw, seed, l->uid);
}

static int conv_tensors(const struct pb_layer *l, struct pb_param_tensor *t)
{
    const struct pb_conv_desc *d = &l->cfg.conv;
    t[0] = (struct pb_param_tensor){"weight", 4, {d->cout, d->cin, d->kh, d->kw}};
    if (!d->bias)
        return 1;
    t[1] = (struct pb_param_tensor){"bias", 1, {d->cout}};
    return 2;
}

static int conv_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                        const struct pb_tensor *const *in, const float *params, float *buffers,
                        struct pb_node_act *act, struct pb_err *e)
{
    (void)buffers;
    struct pb_backend *be = c->be;
    const struct pb_conv_desc *d = &l->cfg.conv;
    enum pb_layout lay = be->ops->conv_layout(be, d, in[0]);
    if (pb_tensor_alloc(be, &act->out, l->out_shape, lay, PB_MEM_ACTS, e))
        return -1;
    be->ops->conv_fwd(be, d, in[0], params, d->bias ? params + conv_weight_count(l) : NULL, &act->out);
    return 0;
}

static int conv_backward_weights(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                                 const struct pb_tensor *const *in, const struct pb_node_act *act,
                                 const struct pb_tensor *dy, float *grads, struct pb_err *e)
{
    (void)act;
    (void)e;
    struct pb_backend *be = c->be;
    const struct pb_conv_desc *d = &l->cfg.conv;
    be->ops->conv_bwd_weights(be, d, in[0], dy, grads, d->bias ? grads + conv_weight_count(l) : NULL);
    return 0;
}

static int conv_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                         const struct pb_tensor *const *in, const struct pb_node_act *act,
                         const struct pb_tensor *dy, const float *params, float *grads,
                         struct pb_tensor *const *dx, struct pb_err *e)
{
    struct pb_backend *be = c->be;
    const struct pb_conv_desc *d = &l->cfg.conv;
    if (!c->input_only)
        conv_backward_weights(l, c, in, act, dy, grads, e);
    if (dx[0])
        be->ops->conv_bwd_data(be, d, dy, params, dx[0]);
    return 0;
}

static double conv_flops(const struct pb_layer *l)
{
    const struct pb_conv_desc *d = &l->cfg.conv;
    return 2.0 * (double)pb_shape_count(l->out_shape) * d->cin * d->kh * d->kw;
}

const struct pb_layer_ops pb_conv2d_ops = {
    .kind = "conv2d",
    .infer = conv_infer,
    .param_count = conv_params,
    .buffer_count = pb_layer_zero_count,
    .init = conv_init,
    .param_tensors = conv_tensors,
    .forward = conv_forward,
    .backward = conv_backward,
    .backward_weights = conv_backward_weights,
    .flops = conv_flops,
};
