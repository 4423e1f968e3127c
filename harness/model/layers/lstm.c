/* harness/model/layers/lstm.c — a one-layer LSTM, unidirectional or bidirectional
 * (torch.nn.LSTM(input, hidden, batch_first = True, bidirectional), zero initial states,
 * the output sequence of h). x [B, T, input, 1], y [B, T, hidden, 1] or, bidirectional,
 * [B, T, 2·hidden, 1] = forward ‖ reverse per step (layer.h's sequence form); parameters
 * named and shaped as PyTorch's: weight_ih_l0 [4H, input], weight_hh_l0 [4H, H],
 * bias_ih_l0 [4H], bias_hh_l0 [4H], then the same with _reverse; gates i, f, g, o; init
 * U(−1/√H, 1/√H) for all of them, as PyTorch, or the layer's init spec (GNMT's
 * init_lstm_: U(−0.1, 0.1) with bias_hh zero).
 * A unidirectional LSTM runs over all T steps (GNMT's later layers, which are not
 * packed). A bidirectional one reads the sequences' lengths (pb_fwd_ctx) as
 * pack_padded_sequence does: the reverse direction starts at each sequence's last real
 * token, and both directions' outputs past the length are 0 (pad_packed_sequence), so
 * padded steps get no gradient either. Its aux holds, in order: the two directions'
 * workspaces, their outputs y_f [B, T, H] and y_r [B, T, H] (the latter in reversed
 * time), and the lengths [B] int32 (T where the forward had none). The reverse input
 * is gathered again in the backward rather than kept. */
#include <string.h>

#include "harness/model/layers/layer_util.h"

static struct pb_lstm_desc lstm_desc(const struct pb_layer *l)
{
    struct pb_shape s = l->in_shape[0];
    return (struct pb_lstm_desc){s.n, s.c, l->cfg.in_features, l->cfg.out_features};
}

static int ndirs(const struct pb_layer *l)
{
    return l->cfg.bidirectional ? 2 : 1;
}

static int lstm_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                      struct pb_shape *out, struct pb_err *e)
{
    char buf[64];
    PB_CHECK(nin == 1);
    if (in[0].w != 1 || in[0].h != l->cfg.in_features)
        return pb_err_set(e, "lstm '%s' expects a sequence [B, T, %d, 1] but gets %s", l->name,
                          l->cfg.in_features, pb_shape_str(in[0], buf, sizeof buf));
    *out = (struct pb_shape){in[0].n, in[0].c, ndirs(l) * l->cfg.out_features, 1};
    return 0;
}

/* Floats of one direction's four tensors. */
static size_t dir_params(const struct pb_layer *l)
{
    size_t g = 4 * (size_t)l->cfg.out_features;
    return g * ((size_t)l->cfg.in_features + (size_t)l->cfg.out_features + 2);
}

static size_t lstm_params(const struct pb_layer *l)
{
    return (size_t)ndirs(l) * dir_params(l);
}

static int lstm_tensors(const struct pb_layer *l, const char **names, size_t *counts)
{
    static const char *const fwd[4] = {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"};
    static const char *const rev[4] = {"weight_ih_l0_reverse", "weight_hh_l0_reverse",
                                       "bias_ih_l0_reverse", "bias_hh_l0_reverse"};
    size_t g = 4 * (size_t)l->cfg.out_features;
    for (int d = 0; d < ndirs(l); d++)
        for (int i = 0; i < 4; i++) {
            names[4 * d + i] = d ? rev[i] : fwd[i];
            counts[4 * d + i] = i == 0 ? g * (size_t)l->cfg.in_features
                                : i == 1 ? g * (size_t)l->cfg.out_features
                                         : g;
        }
    return 4 * ndirs(l);
}

static void lstm_init(const struct pb_layer *l, float *params, float *buffers, uint64_t seed)
{
    (void)buffers;
    const char *names[PB_LAYER_MAX_TENSORS];
    size_t counts[PB_LAYER_MAX_TENSORS], off = 0;
    int n = lstm_tensors(l, names, counts);
    const struct pb_init_spec *spec = &l->cfg.init;
    for (int i = 0; i < n; i++) {
        if (spec->kind == PB_INIT_DEFAULT)
            pb_init_uniform_fan_in(params + off, counts[i], l->cfg.out_features, seed, l->uid, i);
        else if (i % 4 == 3 && spec->zero_bias)  /* bias_hh (GNMT's init_lstm_) */
            memset(params + off, 0, counts[i] * sizeof *params);
        else
            pb_init_fill(spec, params + off, counts[i], 0, seed, l->uid, i);
        off += counts[i];
    }
}

/* The pieces of a bidirectional layer's aux (or of a scratch block laid out alike). */
struct bi_aux {
    void *ws_f, *ws_r;
    float *y_f, *y_r;
    int32_t *len;
};

static size_t bi_seq_bytes(const struct pb_lstm_desc *d)
{
    return (size_t)d->batch * d->steps * (size_t)d->hidden * sizeof(float);
}

static size_t bi_aux_bytes(struct pb_backend *be, const struct pb_lstm_desc *d, bool train)
{
    size_t ws = train ? 2 * be->ops->lstm_workspace(be, d) : 0;
    return ws + 2 * bi_seq_bytes(d) + (size_t)d->batch * sizeof(int32_t);
}

static struct bi_aux bi_split(struct pb_backend *be, const struct pb_lstm_desc *d, void *base,
                              bool train)
{
    size_t ws = train ? be->ops->lstm_workspace(be, d) : 0;
    char *p = base;
    struct bi_aux a;
    a.ws_f = train ? p : NULL;
    a.ws_r = train ? p + ws : NULL;
    a.y_f = (float *)(p + 2 * ws);
    a.y_r = (float *)(p + 2 * ws + bi_seq_bytes(d));
    a.len = (int32_t *)(p + 2 * ws + 2 * bi_seq_bytes(d));
    return a;
}

/* The reverse direction's input: each sequence's real steps in reversed time, then 0. */
static float *gather_reverse(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                             const int32_t *len, struct pb_err *e)
{
    size_t bytes = (size_t)d->batch * d->steps * (size_t)d->input * sizeof(float);
    float *xr = pb_backend_alloc(be, bytes, PB_MEM_SCRATCH, e);
    if (xr)
        be->ops->seq_gather(be, x, d->input, len, d->batch, d->steps, d->input, true, xr,
                            d->input);
    return xr;
}

static int bi_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c, const float *x,
                      const float *params, struct pb_node_act *act, struct pb_err *e)
{
    struct pb_backend *be = c->be;
    struct pb_lstm_desc d = lstm_desc(l);
    int B = d.batch, T = d.steps, H = d.hidden;
    void *base = pb_backend_alloc(be, bi_aux_bytes(be, &d, c->train),
                                  c->train ? PB_MEM_ACTS : PB_MEM_SCRATCH, e);
    if (!base)
        return -1;
    struct bi_aux a = bi_split(be, &d, base, c->train);
    if (c->lengths) {
        be->ops->copy(be, a.len, c->lengths, (size_t)B * sizeof(int32_t));
    } else {
        int32_t *h = be->ops->write_begin(be, a.len, (size_t)B * sizeof(int32_t));
        for (int b = 0; b < B; b++)
            h[b] = T;
        be->ops->write_end(be, a.len, h, (size_t)B * sizeof(int32_t));
    }
    float *xr = gather_reverse(be, &d, x, a.len, e);
    if (!xr) {
        pb_backend_free(be, base);
        return -1;
    }
    be->ops->lstm_fwd(be, &d, x, params, a.y_f, a.ws_f);
    be->ops->lstm_fwd(be, &d, xr, params + dir_params(l), a.y_r, a.ws_r);
    pb_backend_free(be, xr);
    float *y = act->out.data;
    be->ops->seq_gather(be, a.y_f, H, a.len, B, T, H, false, y, 2 * H);
    be->ops->seq_gather(be, a.y_r, H, a.len, B, T, H, true, y + H, 2 * H);
    if (c->train)
        act->aux = base;
    else
        pb_backend_free(be, base);
    return 0;
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
    if (l->cfg.bidirectional) {
        if (bi_forward(l, c, in[0]->data, params, act, e)) {
            pb_backend_free(be, act->out.data);
            act->out.data = NULL;
            return -1;
        }
        return 0;
    }
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

/* Both directions' backward: dy [B, T, 2H] split into each direction's time order,
 * dx = the forward direction's + the reverse one's put back in time order. */
static int bi_backward(const struct pb_layer *l, struct pb_backend *be, const float *x,
                       const struct pb_node_act *act, const float *dy, const float *params,
                       float *grads, float *dx, struct pb_err *e)
{
    struct pb_lstm_desc d = lstm_desc(l);
    int B = d.batch, T = d.steps, H = d.hidden, I = d.input;
    struct bi_aux a = bi_split(be, &d, act->aux, true);
    size_t seq = bi_seq_bytes(&d), xbytes = (size_t)B * T * (size_t)I * sizeof(float);
    float *tmp = pb_backend_alloc(be, 2 * seq + (dx ? xbytes : 0), PB_MEM_SCRATCH, e);
    if (!tmp)
        return -1;
    float *xr = gather_reverse(be, &d, x, a.len, e);
    if (!xr) {
        pb_backend_free(be, tmp);
        return -1;
    }
    float *dy_f = tmp, *dy_r = tmp + seq / sizeof(float), *dx_r = dx ? dy_r + seq / sizeof(float) : NULL;
    be->ops->seq_gather(be, dy, 2 * H, a.len, B, T, H, false, dy_f, H);
    be->ops->seq_gather(be, dy + H, 2 * H, a.len, B, T, H, true, dy_r, H);
    be->ops->lstm_bwd(be, &d, x, params, a.y_f, dy_f, a.ws_f, dx, grads);
    size_t off = dir_params(l);
    be->ops->lstm_bwd(be, &d, xr, params + off, a.y_r, dy_r, a.ws_r, dx_r, grads + off);
    if (dx) {
        be->ops->seq_gather(be, dx_r, I, a.len, B, T, I, true, xr, I);
        be->ops->add(be, dx, xr, dx, (size_t)B * T * (size_t)I);
    }
    pb_backend_free(be, xr);
    pb_backend_free(be, tmp);
    return 0;
}

static int lstm_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                         const struct pb_tensor *const *in, const struct pb_node_act *act,
                         const struct pb_tensor *dy, const float *params, float *grads,
                         struct pb_tensor *const *dx, struct pb_err *e)
{
    float *dxp = dx[0] ? dx[0]->data : NULL;
    if (l->cfg.bidirectional)
        return bi_backward(l, c->be, in[0]->data, act, dy->data, params, grads, dxp, e);
    struct pb_lstm_desc d = lstm_desc(l);
    c->be->ops->lstm_bwd(c->be, &d, in[0]->data, params, act->out.data, dy->data, act->aux, dxp,
                         grads);
    return 0;
}

/* Per direction the gemms (input and recurrent projections, 2·B·T·4H·(I + H)) and about
 * 10 FLOPs per gate element of the pointwise step. */
static double lstm_flops(const struct pb_layer *l)
{
    struct pb_lstm_desc d = lstm_desc(l);
    double steps = (double)d.batch * d.steps, g = 4.0 * d.hidden;
    return ndirs(l) * steps * g * (2.0 * (d.input + d.hidden) + 10.0);
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
