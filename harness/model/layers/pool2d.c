/* harness/model/layers/pool2d.c — max and average pooling (torch.nn.MaxPool2d, AvgPool2d,
 * AdaptiveAvgPool2d(1) as global average pooling). x [N, C, H, W] → y [N, C, Ho, Wo]
 * in x's layout; max pooling keeps its argmax workspace for the backward. */
#include "harness/model/layers/layer_util.h"

/* The window of a layer: global pooling covers the whole input. */
static struct pb_pool_desc pool_desc(const struct pb_layer *l)
{
    if (l->cfg.kind != PB_LAYER_GLOBAL_AVGPOOL)
        return l->cfg.pool;
    struct pb_shape s = l->in_shape[0];
    return (struct pb_pool_desc){.kind = PB_POOL_AVG, .kh = s.h, .kw = s.w, .sh = 1, .sw = 1};
}

static int pool_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                      struct pb_shape *out, struct pb_err *e)
{
    char buf[64];
    PB_CHECK(nin == 1);
    if (l->cfg.kind == PB_LAYER_GLOBAL_AVGPOOL) {
        *out = (struct pb_shape){in[0].n, in[0].c, 1, 1};
        return 0;
    }
    const struct pb_pool_desc *d = &l->cfg.pool;
    if (d->ph * 2 > d->kh || d->pw * 2 > d->kw)
        return pb_err_set(e, "pool '%s': padding must be at most half the kernel (PyTorch's rule)",
                          l->name);
    int ho = pb_pool_out_size(in[0].h, d->kh, d->sh, d->ph, d->ceil_mode);
    int wo = pb_pool_out_size(in[0].w, d->kw, d->sw, d->pw, d->ceil_mode);
    if (ho < 1 || wo < 1)
        return pb_err_set(e, "pool '%s': a %dx%d window does not fit the input %s", l->name, d->kh,
                          d->kw, pb_shape_str(in[0], buf, sizeof buf));
    *out = (struct pb_shape){in[0].n, in[0].c, ho, wo};
    return 0;
}

static int pool_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                        const struct pb_tensor *const *in, const float *params, float *buffers,
                        struct pb_node_act *act, struct pb_err *e)
{
    (void)params;
    (void)buffers;
    struct pb_backend *be = c->be;
    struct pb_pool_desc d = pool_desc(l);
    if (pb_tensor_alloc(be, &act->out, l->out_shape, in[0]->layout, PB_MEM_ACTS, e))
        return -1;
    size_t ws = c->train ? be->ops->pool_workspace(be, &d, in[0], &act->out) : 0;
    if (ws) {
        act->aux = pb_backend_alloc(be, ws, PB_MEM_ACTS, e);
        if (!act->aux) {
            pb_backend_free(be, act->out.data);
            act->out.data = NULL;
            return -1;
        }
    }
    be->ops->pool_fwd(be, &d, in[0], &act->out, act->aux);
    return 0;
}

static int pool_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                         const struct pb_tensor *const *in, const struct pb_node_act *act,
                         const struct pb_tensor *dy, const float *params, float *grads,
                         struct pb_tensor *const *dx, struct pb_err *e)
{
    (void)params;
    (void)grads;
    (void)e;
    struct pb_pool_desc d = pool_desc(l);
    if (dx[0])
        c->be->ops->pool_bwd(c->be, &d, in[0], &act->out, dy, act->aux, dx[0]);
    return 0;
}

static double pool_flops(const struct pb_layer *l)
{
    struct pb_pool_desc d = pool_desc(l);
    return (double)pb_shape_count(l->out_shape) * d.kh * d.kw;
}

#define POOL_OPS(var, kindname)                                                                \
    const struct pb_layer_ops var = {                                                          \
        .kind = kindname,                                                                      \
        .infer = pool_infer,                                                                   \
        .param_count = pb_layer_zero_count,                                                    \
        .buffer_count = pb_layer_zero_count,                                                   \
        .init = pb_layer_no_init,                                                              \
        .param_tensors = pb_layer_no_tensors,                                                  \
        .forward = pool_forward,                                                               \
        .backward = pool_backward,                                                             \
        .flops = pool_flops,                                                                   \
    }

POOL_OPS(pb_maxpool2d_ops, "maxpool2d");
POOL_OPS(pb_avgpool2d_ops, "avgpool2d");
POOL_OPS(pb_global_avgpool_ops, "global_avgpool");
