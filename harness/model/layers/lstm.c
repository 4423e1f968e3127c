/* harness/model/layers/lstm.c — a one-layer unidirectional LSTM (torch.nn.LSTM(input,
 * hidden, batch_first = True), zero initial states, the output sequence of h).
 * x [B, T, input, 1], y [B, T, hidden, 1] (layer.h's sequence form); parameters named
 * and shaped as PyTorch's: weight_ih_l0 [4H, input], weight_hh_l0 [4H, H], bias_ih_l0
 * [4H], bias_hh_l0 [4H], gates i, f, g, o; init U(−1/√H, 1/√H) for all four, as
 * PyTorch. The backend's workspace (gates and cell states) is the act's aux. */
#include "harness/model/layers/layer_util.h"

static struct pb_lstm_desc lstm_desc(const struct pb_layer *l)
{
    struct pb_shape s = l->in_shape[0];
    return (struct pb_lstm_desc){s.n, s.c, l->cfg.in_features, l->cfg.out_features};
}

static int lstm_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                      struct pb_shape *out, struct pb_err *e)
{
    char buf[64];
    PB_CHECK(nin == 1);
    if (in[0].w != 1 || in[0].h != l->cfg.in_features)
        return pb_err_set(e, "lstm '%s' expects a sequence [B, T, %d, 1] but gets %s", l->name,
                          l->cfg.in_features, pb_shape_str(in[0], buf, sizeof buf));
    *out = (struct pb_shape){in[0].n, in[0].c, l->cfg.out_features, 1};
    return 0;
}

static size_t lstm_params(const struct pb_layer *l)
{
    size_t g = 4 * (size_t)l->cfg.out_features;
    return g * ((size_t)l->cfg.in_features + (size_t)l->cfg.out_features + 2);
}

static int lstm_tensors(const struct pb_layer *l, const char **names, size_t *counts)
{
    size_t g = 4 * (size_t)l->cfg.out_features;
    names[0] = "weight_ih_l0";
    counts[0] = g * (size_t)l->cfg.in_features;
    names[1] = "weight_hh_l0";
    counts[1] = g * (size_t)l->cfg.out_features;
    names[2] = "bias_ih_l0";
    counts[2] = g;
    names[3] = "bias_hh_l0";
    counts[3] = g;
    return 4;
}

static void lstm_init(const struct pb_layer *l, float *params, float *buffers, uint64_t seed)
{
    (void)buffers;
    const char *names[4];
    size_t counts[4], off = 0;
    int n = lstm_tensors(l, names, counts);
    for (int i = 0; i < n; i++) {
        pb_init_uniform_fan_in(params + off, counts[i], l->cfg.out_features, seed, l->uid, i);
        off += counts[i];
    }
}

static int lstm_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                        const struct pb_tensor *const *in, const float *params, float *buffers,
                        struct pb_node_act *act, struct pb_err *e)
{
    (void)buffers;
    struct pb_backend *be = c->be;
    struct pb_lstm_desc d = lstm_desc(l);
    if (pb_tensor_alloc(be, &act->out, l->out_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e))
        return -1;
    if (c->train) {
        act->aux = pb_backend_alloc(be, be->ops->lstm_workspace(be, &d), PB_MEM_ACTS, e);
        if (!act->aux) {
            pb_backend_free(be, act->out.data);
            act->out.data = NULL;
            return -1;
        }
    }
    be->ops->lstm_fwd(be, &d, in[0]->data, params, act->out.data, act->aux);
    return 0;
}

static int lstm_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                         const struct pb_tensor *const *in, const struct pb_node_act *act,
                         const struct pb_tensor *dy, const float *params, float *grads,
                         struct pb_tensor *const *dx, struct pb_err *e)
{
    (void)e;
    struct pb_lstm_desc d = lstm_desc(l);
    c->be->ops->lstm_bwd(c->be, &d, in[0]->data, params, act->out.data, dy->data, act->aux,
                         dx[0] ? dx[0]->data : NULL, grads);
    return 0;
}

/* The gemms (input and recurrent projections, 2·B·T·4H·(I + H)) and about 10 FLOPs per
 * gate element of the pointwise step. */
static double lstm_flops(const struct pb_layer *l)
{
    struct pb_lstm_desc d = lstm_desc(l);
    double steps = (double)d.batch * d.steps, g = 4.0 * d.hidden;
    return steps * g * (2.0 * (d.input + d.hidden) + 10.0);
}

const struct pb_layer_ops pb_lstm_ops = {
    .kind = "lstm",
    .infer = lstm_infer,
    .param_count = lstm_params,
    .buffer_count = pb_layer_zero_count,
    .init = lstm_init,
    .param_tensors = lstm_tensors,
    .forward = lstm_forward,
    .backward = lstm_backward,
    .flops = lstm_flops,
};
