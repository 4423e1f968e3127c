/* harness/model/layers/dropout.c — inverted dropout (torch.nn.Dropout): y = x·mask/(1 − p)
 * in training, y = x in evaluation. The mask comes from the counter-based RNG keyed
 * by (seed, micro-batch, layer) (semantics §1.7), so the backward redraws it instead of
 * storing it and every executor draws the same. The layer is the model-wide layer
 * index, which fixes its stage; leaving the stage number out of the key keeps the
 * masks the same under every partition, so runs with different D stay comparable
 * (and GPipe equals gradient accumulation with dropout too). Plain layout. */
#include "harness/model/layers/layer_util.h"
#include "harness/base/rng.h"

static int dropout_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                         struct pb_shape *out, struct pb_err *e)
{
    PB_CHECK(nin == 1);
    if (!(l->cfg.p >= 0.0f && l->cfg.p < 1.0f))
        return pb_err_set(e, "dropout '%s': p must be in [0, 1) (got %g)", l->name, l->cfg.p);
    *out = in[0];
    return 0;
}

static struct pb_rng_key dropout_key(const struct pb_layer *l, const struct pb_fwd_ctx *c)
{
    return pb_rng_key(PB_RNG_DROPOUT, c->seed, (uint64_t)c->mb, (uint64_t)l->uid, 0);
}

static int dropout_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                           const struct pb_tensor *const *in, const float *params, float *buffers,
                           struct pb_node_act *act, struct pb_err *e)
{
    (void)params;
    (void)buffers;
    struct pb_backend *be = c->be;
    struct pb_tensor tmp;
    const struct pb_tensor *x;
    if (pb_plain_view(be, in[0], &tmp, &x, e))
        return -1;
    int rc = pb_tensor_alloc(be, &act->out, l->out_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e);
    if (!rc) {
        size_t n = pb_shape_count(l->out_shape);
        if (c->train)
            be->ops->dropout(be, x->data, act->out.data, n, l->cfg.p, dropout_key(l, c), 0);
        else
            be->ops->copy(be, act->out.data, x->data, n * sizeof(float));
    }
    pb_plain_release(be, &tmp);
    return rc;
}

static int dropout_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                            const struct pb_tensor *const *in, const struct pb_node_act *act,
                            const struct pb_tensor *dy, const float *params, float *grads,
                            struct pb_tensor *const *dx, struct pb_err *e)
{
    (void)in;
    (void)act;
    (void)params;
    (void)grads;
    struct pb_backend *be = c->be;
    if (!dx[0])
        return 0;
    size_t n = pb_shape_count(l->out_shape);
    struct pb_tensor plain = *dx[0];
    if (dx[0]->layout != PB_LAYOUT_PLAIN &&
        pb_tensor_alloc(be, &plain, dx[0]->shape, PB_LAYOUT_PLAIN, PB_MEM_SCRATCH, e))
        return -1;
    be->ops->dropout(be, dy->data, plain.data, n, l->cfg.p, dropout_key(l, c), 0);
    if (dx[0]->layout != PB_LAYOUT_PLAIN) {
        be->ops->reorder(be, &plain, dx[0]);
        pb_backend_free(be, plain.data);
    }
    return 0;
}

const struct pb_layer_ops pb_dropout_ops = {
    .kind = "dropout",
    .infer = dropout_infer,
    .param_count = pb_layer_zero_count,
    .buffer_count = pb_layer_zero_count,
    .init = pb_layer_no_init,
    .param_tensors = pb_layer_no_tensors,
    .forward = dropout_forward,
    .backward = dropout_backward,
    .flops = pb_layer_out_flops,
};
