/* harness/model/layers/batchnorm2d.c — batch normalisation over N, H, W (torch.nn.BatchNorm2d).
 * x, y [N, C, H, W] in x's layout; γ, β [C] trained; running mean and variance [C] are
 * buffers, updated by every training forward with momentum m and the unbiased batch
 * variance (semantics §1.10: also under predicted weights; never stashed or predicted).
 * With cfg.relu, y = max(BN(x), 0): torch's BatchNorm2d then ReLU, the two passes fused
 * in the backend (its aux then holds the ReLU's mask too). */
#include "harness/model/layers/layer_util.h"

static int bn_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                    struct pb_shape *out, struct pb_err *e)
{
    char buf[64];
    PB_CHECK(nin == 1);
    if (in[0].c != l->cfg.channels)
        return pb_err_set(e, "batchnorm2d '%s' expects %d channels but gets %s", l->name,
                          l->cfg.channels, pb_shape_str(in[0], buf, sizeof buf));
    if ((long)in[0].n * in[0].h * in[0].w < 2)
        return pb_err_set(e, "batchnorm2d '%s' needs more than one value per channel in training "
                             "(input %s); use a larger micro-batch",
                          l->name, pb_shape_str(in[0], buf, sizeof buf));
    *out = in[0];
    return 0;
}

static size_t bn_params(const struct pb_layer *l)
{
    return 2 * (size_t)l->cfg.channels;
}

/* γ = 1 unless the spec draws it (Kaiming has no fan for a vector, as in torch); β = 0
 * whatever the bias rule, since PyTorch's default is 0 too. */
static void bn_init(const struct pb_layer *l, float *params, float *buffers, uint64_t seed)
{
    int c = l->cfg.channels;
    PB_CHECK(l->cfg.init.kind != PB_INIT_KAIMING_NORMAL);
    for (int i = 0; i < c; i++) {
        params[i] = 1.0f;      /* γ */
        params[c + i] = 0.0f;  /* β */
        buffers[i] = 0.0f;     /* running mean */
        buffers[c + i] = 1.0f; /* running variance */
    }
    if (l->cfg.init.kind != PB_INIT_DEFAULT)
        pb_init_fill(&l->cfg.init, params, (size_t)c, 0, seed, l->uid, 0);
}

static int bn_tensors(const struct pb_layer *l, struct pb_param_tensor *t)
{
    t[0] = (struct pb_param_tensor){"weight", 1, {l->cfg.channels}};
    t[1] = (struct pb_param_tensor){"bias", 1, {l->cfg.channels}};
    return 2;
}

static int bn_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                      const struct pb_tensor *const *in, const float *params, float *buffers,
                      struct pb_node_act *act, struct pb_err *e)
{
    struct pb_backend *be = c->be;
    int ch = l->cfg.channels;
    float *run_mean = buffers, *run_var = buffers + ch;
    if (pb_tensor_alloc(be, &act->out, l->out_shape, in[0]->layout, PB_MEM_ACTS, e))
        return -1;
    if (!c->train) {
        be->ops->bn_fwd_infer(be, in[0], params, params + ch, run_mean, run_var, l->cfg.eps,
                              l->cfg.relu, &act->out);
        return 0;
    }
    act->aux = pb_backend_alloc(be, be->ops->bn_aux_bytes(be, in[0]->shape, l->cfg.relu),
                                PB_MEM_ACTS, e);
    if (!act->aux) {
        pb_backend_free(be, act->out.data);
        act->out.data = NULL;
        return -1;
    }
    be->ops->bn_fwd_train(be, in[0], params, params + ch, run_mean, run_var, l->cfg.momentum,
                          l->cfg.eps, l->cfg.relu, &act->out, act->aux);
    return 0;
}

static int bn_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                       const struct pb_tensor *const *in, const struct pb_node_act *act,
                       const struct pb_tensor *dy, const float *params, float *grads,
                       struct pb_tensor *const *dx, struct pb_err *e)
{
    struct pb_backend *be = c->be;
    PB_CHECK(act->aux != NULL);
    struct pb_tensor scratch = {0};
    struct pb_tensor *d = dx[0];
    if (!d) {
        if (pb_tensor_alloc(be, &scratch, in[0]->shape, in[0]->layout, PB_MEM_SCRATCH, e))
            return -1;
        d = &scratch;
    }
    be->ops->bn_bwd(be, in[0], dy, params, act->aux, l->cfg.eps, l->cfg.relu, d, grads,
                    grads + l->cfg.channels);
    pb_backend_free(be, scratch.data);
    return 0;
}

/* 4 per element, and the ReLU's 1 (pb_layer_out_flops) when fused */
static double bn_flops(const struct pb_layer *l)
{
    return (l->cfg.relu ? 5.0 : 4.0) * (double)pb_shape_count(l->out_shape);
}

const struct pb_layer_ops pb_batchnorm2d_ops = {
    .kind = "batchnorm2d",
    .infer = bn_infer,
    .param_count = bn_params,
    .buffer_count = bn_params,
    .init = bn_init,
    .param_tensors = bn_tensors,
    .forward = bn_forward,
    .backward = bn_backward,
    .flops = bn_flops,
};
