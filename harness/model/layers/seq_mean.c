/* harness/model/layers/seq_mean.c — the mean over time of a sequence, masked by each
 * sequence's length: x [B, T, F, 1] (layer.h's sequence form) → y [B, F] (a tensor
 * [B, F, 1, 1]); y[b] = (1/len_b) Σ_{t < len_b} x[b, t]. The lengths come with the
 * forward (pb_fwd_ctx, from the dataset at the last stage; NULL = all T steps) and are
 * kept in aux [B] int32 for the backward. Plain layout. */
#include "harness/model/layers/layer_util.h"

static int seq_mean_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                          struct pb_shape *out, struct pb_err *e)
{
    char buf[64];
    PB_CHECK(nin == 1);
    if (in[0].w != 1)
        return pb_err_set(e, "seq_mean '%s' expects a sequence [B, T, F, 1] but gets %s", l->name,
                          pb_shape_str(in[0], buf, sizeof buf));
    *out = (struct pb_shape){in[0].n, in[0].h, 1, 1};
    return 0;
}

static int seq_mean_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                            const struct pb_tensor *const *in, const float *params,
                            float *buffers, struct pb_node_act *act, struct pb_err *e)
{
    (void)params;
    (void)buffers;
    struct pb_backend *be = c->be;
    struct pb_shape s = l->in_shape[0];
    if (pb_tensor_alloc(be, &act->out, l->out_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e))
        return -1;
    if (c->lengths && c->train) {
        act->aux = pb_backend_alloc(be, (size_t)s.n * sizeof(int32_t), PB_MEM_ACTS, e);
        if (!act->aux) {
            pb_backend_free(be, act->out.data);
            act->out.data = NULL;
            return -1;
        }
        be->ops->copy(be, act->aux, c->lengths, (size_t)s.n * sizeof(int32_t));
    }
    be->ops->seq_mean_fwd(be, in[0]->data, c->lengths, s.n, s.c, s.h, act->out.data);
    return 0;
}

static int seq_mean_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                             const struct pb_tensor *const *in, const struct pb_node_act *act,
                             const struct pb_tensor *dy, const float *params, float *grads,
                             struct pb_tensor *const *dx, struct pb_err *e)
{
    (void)in;
    (void)params;
    (void)grads;
    (void)e;
    struct pb_shape s = l->in_shape[0];
    if (dx[0])
        c->be->ops->seq_mean_bwd(c->be, dy->data, act->aux, s.n, s.c, s.h, dx[0]->data);
    return 0;
}

static double seq_mean_flops(const struct pb_layer *l)
{
    return (double)pb_shape_count(l->in_shape[0]);
}

const struct pb_layer_ops pb_seq_mean_ops = {
    .kind = "seq_mean",
    .infer = seq_mean_infer,
    .param_count = pb_layer_zero_count,
    .buffer_count = pb_layer_zero_count,
    .init = pb_layer_no_init,
    .param_tensors = pb_layer_no_tensors,
    .forward = seq_mean_forward,
    .backward = seq_mean_backward,
    .flops = seq_mean_flops,
};
