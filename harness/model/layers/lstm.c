/* harness/model/layers/lstm.c — an LSTM of one or more layers, unidirectional or
 * bidirectional (torch.nn.LSTM(input, hidden, num_layers, batch_first = True, dropout,
 * bidirectional), zero initial states, the output sequence of the last layer's h).
 * x [B, T, input, 1], y [B, T, dirs·hidden, 1] (bidirectional: forward ‖ reverse per step;
 * layer.h's sequence form). Layer k > 0 takes layer k − 1's output [B, T, dirs·H]; in
 * training, dropout p (cfg.p) is applied to every layer's output but the last, as torch's,
 * its mask from the counter-based RNG keyed by (seed, micro-batch, layer uid, k)
 * (semantics §1.7), so the backward redraws it and every executor draws the same.
 * Parameters named and shaped as PyTorch's, layer by layer and direction by direction:
 * weight_ih_l<k> [4H, I_k], weight_hh_l<k> [4H, H], bias_ih_l<k> [4H], bias_hh_l<k> [4H],
 * then the same with _reverse (I_0 = input, I_k = dirs·H); gates i, f, g, o; init
 * U(−1/√H, 1/√H) for all of them, as PyTorch, or the layer's init spec (GNMT's
 * init_lstm_: U(−0.1, 0.1) with bias_hh zero).
 * A unidirectional LSTM runs over all T steps (GNMT's later layers, which are not packed).
 * A bidirectional one reads the sequences' lengths (pb_fwd_ctx) at every layer as
 * pack_padded_sequence does (layers/lstm_one.c): outputs past a length are 0, so padded
 * steps get no gradient. Its aux (the training forward's; the same pieces as scratch in
 * evaluation, without the workspaces) holds, in order: every layer's workspaces, per
 * direction; bidirectional, every layer's y_f [B, T, H] and y_r [B, T, H] (the latter in
 * reversed time); the outputs of layers 0 … L − 2 [B, T, dirs·H] (before the dropout,
 * which the backward redraws); bidirectional, the lengths [B] int32 (T where the forward
 * had none). One layer therefore keeps what the one-layer LSTM always kept.
 * The split backward (semantics §4.10): I runs every layer's data pass (dx and the gate
 * gradients) and keeps for W (pb_node_act.kept), in order: every layer's backend keep
 * (lstm_bwd_keep: the gate gradients dA [B, T, 4H]), per direction; the aux's sequences
 * (bidirectional: y_f and y_r of every layer; the outputs of layers 0 … L − 2; the
 * lengths); unidirectional, the last layer's output [B, T, H]. The workspaces (the gates
 * and cell states) go with the aux; the stage keeps x. W runs every layer's weight pass
 * (dW_ih from the layer's input, dW_hh from its output one step back, the biases from
 * dA), the input of a layer k > 0 redrawn as B redraws it; B's bits.
 * pb_lstm_final_states (layers/lstm.h) gives torch.nn.LSTM's (h_n, c_n) of an eval
 * forward, [L·dirs, B, H]: each layer's input is what the eval forward computes; a
 * unidirectional layer's states come from its own run (after step T − 1), a
 * bidirectional one's from a run of each direction in segments between the distinct
 * lengths, as a packed sequence runs (layers/lstm_one.c), so they are
 * pack_padded_sequence's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/model/layers/layer_util.h"
#include "harness/model/layers/lstm.h"
#include "harness/model/layers/lstm_one.h"
#include "harness/base/rng.h"

static int ndirs(const struct pb_layer *l)
{
    return l->cfg.bidirectional ? 2 : 1;
}

static int nlayers(const struct pb_layer *l)
{
    return l->cfg.num_layers;
}

/* I_k: layer k's input features. */
static int layer_input(const struct pb_layer *l, int k)
{
    return k ? ndirs(l) * l->cfg.out_features : l->cfg.in_features;
}

static struct pb_lstm_desc layer_desc(const struct pb_layer *l, int k)
{
    struct pb_shape s = l->in_shape[0];
    return (struct pb_lstm_desc){s.n, s.c, layer_input(l, k), l->cfg.out_features};
}

/* Where layer k's tensors start in the layer's flat parameters (k = L: their count). */
static size_t layer_param_off(const struct pb_layer *l, int k)
{
    size_t off = 0;
    for (int j = 0; j < k; j++)
        off += (size_t)ndirs(l) * pb_lstm_dir_params(layer_input(l, j), l->cfg.out_features);
    return off;
}

static int lstm_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                      struct pb_shape *out, struct pb_err *e)
{
    char buf[64];
    PB_CHECK(nin == 1);
    if (l->cfg.num_layers < 1 || l->cfg.num_layers > PB_LSTM_MAX_LAYERS)
        return pb_err_set(e, "lstm '%s': num_layers must be 1 to %d (got %d)", l->name,
                          PB_LSTM_MAX_LAYERS, l->cfg.num_layers);
    if (!(l->cfg.p >= 0.0f && l->cfg.p < 1.0f))
        return pb_err_set(e, "lstm '%s': the dropout between its layers must be in [0, 1) (got "
                             "%g)", l->name, l->cfg.p);
    if (in[0].w != 1 || in[0].h != l->cfg.in_features)
        return pb_err_set(e, "lstm '%s' expects a sequence [B, T, %d, 1] but gets %s", l->name,
                          l->cfg.in_features, pb_shape_str(in[0], buf, sizeof buf));
    *out = (struct pb_shape){in[0].n, in[0].c, ndirs(l) * l->cfg.out_features, 1};
    return 0;
}

static size_t lstm_params(const struct pb_layer *l)
{
    return layer_param_off(l, nlayers(l));
}

/* PyTorch's names: [layer][direction][tensor]. */
#define LSTM_NAMES(k)                                                                          \
    {{"weight_ih_l" #k, "weight_hh_l" #k, "bias_ih_l" #k, "bias_hh_l" #k},                     \
     {"weight_ih_l" #k "_reverse", "weight_hh_l" #k "_reverse", "bias_ih_l" #k "_reverse",     \
      "bias_hh_l" #k "_reverse"}}
static const char *const lstm_names[PB_LSTM_MAX_LAYERS][2][4] = {
    LSTM_NAMES(0), LSTM_NAMES(1), LSTM_NAMES(2), LSTM_NAMES(3),
    LSTM_NAMES(4), LSTM_NAMES(5), LSTM_NAMES(6), LSTM_NAMES(7),
};

static int lstm_tensors(const struct pb_layer *l, struct pb_param_tensor *t)
{
    PB_CHECK(nlayers(l) >= 1 && nlayers(l) <= PB_LSTM_MAX_LAYERS);
    int64_t g = 4 * (int64_t)l->cfg.out_features;
    int n = 0;
    for (int k = 0; k < nlayers(l); k++)
        for (int d = 0; d < ndirs(l); d++)
            for (int i = 0; i < 4; i++, n++)
                t[n] = (struct pb_param_tensor){
                    lstm_names[k][d][i], i < 2 ? 2 : 1,
                    {g, i == 0 ? layer_input(l, k) : l->cfg.out_features}};
    return n;
}

/* Tensor i (in lstm_tensors' order) is drawn as tensor i of the layer's key, so one
 * layer's numbers are what the one-layer LSTM drew. */
static void lstm_init(const struct pb_layer *l, float *params, float *buffers, uint64_t seed)
{
    (void)buffers;
    struct pb_param_tensor t[PB_LAYER_MAX_TENSORS];
    size_t off = 0;
    int n = lstm_tensors(l, t);
    const struct pb_init_spec *spec = &l->cfg.init;
    for (int i = 0; i < n; i++) {
        size_t count = pb_param_tensor_count(&t[i]);
        if (spec->kind == PB_INIT_DEFAULT)
            pb_init_uniform_fan_in(params + off, count, l->cfg.out_features, seed, l->uid, i);
        else if (i % 4 == 3 && spec->zero_bias)  /* bias_hh (GNMT's init_lstm_) */
            memset(params + off, 0, count * sizeof *params);
        else
            pb_init_fill(spec, params + off, count, 0, seed, l->uid, i);
        off += count;
    }
}

/* The pieces of the aux or of what the split backward keeps (module comment). */
struct stack_aux {
    void *ws[PB_LSTM_MAX_LAYERS][2];
    void *keep[PB_LSTM_MAX_LAYERS][2];
    float *yd[PB_LSTM_MAX_LAYERS][2];
    float *mid[PB_LSTM_MAX_LAYERS];
    int32_t *len;
    char *seq;          /* where yd, mid and len start, the same layout in both */
    size_t seq_bytes;
    float *y_last;      /* kept, unidirectional: the last layer's output */
};

/* Floats of one layer's output [B, T, dirs·H]. */
static size_t out_floats(const struct pb_layer *l)
{
    return pb_shape_count(l->out_shape);
}

/* The sequences yd, mid and len from p + at (p NULL: only measures) into *a; returns
 * where they end. */
static size_t seq_layout(const struct pb_layer *l, char *p, size_t at, struct stack_aux *a)
{
    size_t from = at, seq = out_floats(l) / (size_t)ndirs(l) * sizeof(float);
    for (int k = 0; l->cfg.bidirectional && k < nlayers(l); k++)
        for (int r = 0; r < 2; r++, at += seq)
            a->yd[k][r] = p ? (float *)(p + at) : NULL;
    for (int k = 0; k + 1 < nlayers(l); k++, at += out_floats(l) * sizeof(float))
        a->mid[k] = p ? (float *)(p + at) : NULL;
    if (l->cfg.bidirectional) {
        a->len = p ? (int32_t *)(p + at) : NULL;
        at += (size_t)l->in_shape[0].n * sizeof(int32_t);
    }
    a->seq = p ? p + from : NULL;
    a->seq_bytes = at - from;
    return at;
}

/* Lays the aux out from base (NULL: only measures) into *a; returns its bytes. */
static size_t aux_layout(struct pb_backend *be, const struct pb_layer *l, bool train, void *base,
                         struct stack_aux *a)
{
    char *p = base;
    size_t at = 0;
    memset(a, 0, sizeof *a);
    for (int k = 0; train && k < nlayers(l); k++) {
        struct pb_lstm_desc d = layer_desc(l, k);
        size_t ws = be->ops->lstm_workspace(be, &d);
        for (int r = 0; r < ndirs(l); r++, at += ws)
            a->ws[k][r] = p ? p + at : NULL;
    }
    return seq_layout(l, p, at, a);
}

/* Lays out what the split backward's I keeps for W (module comment) from base (NULL: only
 * measures) into *a; returns its bytes. */
static size_t kept_layout(struct pb_backend *be, const struct pb_layer *l, void *base,
                          struct stack_aux *a)
{
    char *p = base;
    size_t at = 0;
    memset(a, 0, sizeof *a);
    for (int k = 0; k < nlayers(l); k++) {
        struct pb_lstm_desc d = layer_desc(l, k);
        size_t keep = be->ops->lstm_bwd_keep(be, &d);
        for (int r = 0; r < ndirs(l); r++, at += keep)
            a->keep[k][r] = p ? p + at : NULL;
    }
    at = seq_layout(l, p, at, a);
    if (!l->cfg.bidirectional) {
        a->y_last = p ? (float *)(p + at) : NULL;
        at += out_floats(l) * sizeof(float);
    }
    return at;
}

static struct pb_lstm_one one_of(const struct pb_layer *l, const struct stack_aux *a, int k)
{
    struct pb_lstm_one o = {.d = layer_desc(l, k), .bi = l->cfg.bidirectional, .len = a->len};
    for (int r = 0; r < 2; r++) {
        o.ws[r] = a->ws[k][r];
        o.yd[r] = a->yd[k][r];
        o.keep[r] = a->keep[k][r];
    }
    return o;
}

/* The dropout on layer k's output (k < L − 1) applies in training when p > 0. */
static bool drops(const struct pb_layer *l, bool train)
{
    return train && l->cfg.p > 0.0f && nlayers(l) > 1;
}

static struct pb_rng_key drop_key(const struct pb_layer *l, const struct pb_fwd_ctx *c, int k)
{
    return pb_rng_key(PB_RNG_DROPOUT, c->seed, (uint64_t)c->mb, (uint64_t)l->uid, (uint64_t)k);
}

/* The lengths into a->len: the context's, else T for every sequence. */
static void put_lengths(struct pb_backend *be, const struct pb_layer *l,
                        const struct pb_fwd_ctx *c, int32_t *len)
{
    int B = l->in_shape[0].n;
    if (c->lengths) {
        be->ops->copy(be, len, c->lengths, (size_t)B * sizeof(int32_t));
        return;
    }
    int32_t *h = be->ops->write_begin(be, len, (size_t)B * sizeof(int32_t));
    for (int b = 0; b < B; b++)
        h[b] = l->in_shape[0].c;
    be->ops->write_end(be, len, h, (size_t)B * sizeof(int32_t));
}

/* The layers in turn, y the last one's output; a is laid out. */
static int stack_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                         const struct stack_aux *a, const float *x, const float *params, float *y,
                         struct pb_err *e)
{
    struct pb_backend *be = c->be;
    size_t n = out_floats(l);
    float *dropped = NULL;  /* the dropped output [B, T, dirs·H], the next layer's input */
    if (drops(l, c->train)) {
        dropped = pb_backend_alloc(be, n * sizeof(float), PB_MEM_SCRATCH, e);
        if (!dropped)
            return -1;
    }
    int rc = 0;
    for (int k = 0; !rc && k < nlayers(l); k++) {
        struct pb_lstm_one o = one_of(l, a, k);
        float *yk = k + 1 < nlayers(l) ? a->mid[k] : y;
        rc = pb_lstm_one_fwd(be, &o, x, params + layer_param_off(l, k), yk, e);
        x = yk;
        if (dropped && k + 1 < nlayers(l)) {
            be->ops->dropout(be, yk, dropped, n, l->cfg.p, drop_key(l, c, k), 0);
            x = dropped;
        }
    }
    pb_backend_free(be, dropped);
    return rc;
}

static int lstm_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                        const struct pb_tensor *const *in, const float *params, float *buffers,
                        struct pb_node_act *act, struct pb_err *e)
{
    (void)buffers;
    struct pb_backend *be = c->be;
    if (pb_tensor_alloc(be, &act->out, l->out_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e))
        return -1;
    struct stack_aux a;
    size_t bytes = aux_layout(be, l, c->train, NULL, &a);
    void *base = bytes ? pb_backend_alloc(be, bytes, c->train ? PB_MEM_ACTS : PB_MEM_SCRATCH, e)
                       : NULL;
    if (bytes && !base) {
        pb_backend_free(be, act->out.data);
        act->out.data = NULL;
        return -1;
    }
    aux_layout(be, l, c->train, base, &a);
    if (a.len)
        put_lengths(be, l, c, a.len);
    if (stack_forward(l, c, &a, in[0]->data, params, act->out.data, e)) {
        pb_backend_free(be, base);
        pb_backend_free(be, act->out.data);
        act->out.data = NULL;
        return -1;
    }
    if (c->train)
        act->aux = base;
    else
        pb_backend_free(be, base);
    return 0;
}

/* What the I pass keeps for W, allocated (PB_MEM_ACTS) and laid out into *kept, the
 * sequences W reads copied from the aux a and the output y; NULL with e set when short. */
static void *keep_for_weights(struct pb_backend *be, const struct pb_layer *l,
                              const struct stack_aux *a, const float *y, struct stack_aux *kept,
                              struct pb_err *e)
{
    void *base = pb_backend_alloc(be, kept_layout(be, l, NULL, kept), PB_MEM_ACTS, e);
    if (!base)
        return NULL;
    kept_layout(be, l, base, kept);
    if (kept->seq_bytes)
        be->ops->copy(be, kept->seq, a->seq, kept->seq_bytes);
    if (kept->y_last)
        be->ops->copy(be, kept->y_last, y, out_floats(l) * sizeof(float));
    return base;
}

/* From the top layer down: layer k's dx is layer k − 1's dy once the dropout's mask is
 * applied to it again; its input is layer k − 1's kept output with the mask redrawn. The
 * split backward's I (c->input_only) runs each layer's data pass and keeps for W
 * (c->kept) the gate gradients and the sequences W reads (module comment). */
static int lstm_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                         const struct pb_tensor *const *in, const struct pb_node_act *act,
                         const struct pb_tensor *dy, const float *params, float *grads,
                         struct pb_tensor *const *dx, struct pb_err *e)
{
    struct pb_backend *be = c->be;
    int L = nlayers(l);
    struct stack_aux a, kept;
    aux_layout(be, l, true, act->aux, &a);
    void *kept_base = NULL;
    if (c->input_only && !(kept_base = keep_for_weights(be, l, &a, act->out.data, &kept, e)))
        return -1;
    size_t n = out_floats(l);
    bool drop = drops(l, true);
    /* two gradients [B, T, dirs·H] in turn, then (B) the redrawn input of a layer k > 0 */
    bool redraw = drop && !c->input_only;
    float *tmp = NULL;
    if (L > 1 &&
        !(tmp = pb_backend_alloc(be, (2 + redraw) * n * sizeof(float), PB_MEM_SCRATCH, e))) {
        pb_backend_free(be, kept_base);
        return -1;
    }
    const float *dyk = dy->data;
    int rc = 0;
    for (int k = L - 1; !rc && k >= 0; k--) {
        float *dxk = k ? tmp + (size_t)(k % 2) * n : dx[0] ? dx[0]->data : NULL;
        struct pb_lstm_one o = one_of(l, &a, k);
        size_t off = layer_param_off(l, k);
        if (c->input_only) {
            o.keep[0] = kept.keep[k][0];
            o.keep[1] = kept.keep[k][1];
            rc = pb_lstm_one_bwd_data(be, &o, params + off, dyk, dxk, e);
        } else {
            const float *xk = k ? a.mid[k - 1] : in[0]->data;
            if (k && drop) {
                be->ops->dropout(be, a.mid[k - 1], tmp + 2 * n, n, l->cfg.p,
                                 drop_key(l, c, k - 1), 0);
                xk = tmp + 2 * n;
            }
            rc = pb_lstm_one_bwd(be, &o, xk, params + off,
                                 k + 1 < L ? a.mid[k] : act->out.data, dyk, dxk, grads + off, e);
        }
        if (k && drop)
            be->ops->dropout(be, dxk, dxk, n, l->cfg.p, drop_key(l, c, k - 1), 0);
        dyk = dxk;
    }
    pb_backend_free(be, tmp);
    if (rc)
        pb_backend_free(be, kept_base);
    else if (c->input_only)
        *c->kept = kept_base;
    return rc;
}

/* The split backward's W: every layer's weight pass from its input (layer k − 1's kept
 * output with the dropout's mask redrawn, as B reads it), its output and what I kept. */
static int lstm_backward_weights(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                                 const struct pb_tensor *const *in,
                                 const struct pb_node_act *act, const struct pb_tensor *dy,
                                 float *grads, struct pb_err *e)
{
    (void)dy;
    struct pb_backend *be = c->be;
    int L = nlayers(l);
    PB_CHECK(act->kept);
    struct stack_aux kept;
    kept_layout(be, l, act->kept, &kept);
    size_t n = out_floats(l);
    bool drop = drops(l, true);
    float *xd = NULL;  /* a layer k > 0's input, the mask redrawn [B, T, dirs·H] */
    if (L > 1 && drop && !(xd = pb_backend_alloc(be, n * sizeof(float), PB_MEM_SCRATCH, e)))
        return -1;
    int rc = 0;
    for (int k = L - 1; !rc && k >= 0; k--) {
        const float *xk = k ? kept.mid[k - 1] : in[0]->data;
        if (k && drop) {
            be->ops->dropout(be, kept.mid[k - 1], xd, n, l->cfg.p, drop_key(l, c, k - 1), 0);
            xk = xd;
        }
        struct pb_lstm_one o = one_of(l, &kept, k);
        size_t off = layer_param_off(l, k);
        rc = pb_lstm_one_bwd_weights(be, &o, xk, k + 1 < L ? kept.mid[k] : kept.y_last,
                                     grads + off, e);
    }
    pb_backend_free(be, xd);
    return rc;
}

/* The lengths in host memory, each checked to be in [1, T] (NULL: T for every
 * sequence); NULL with e set when one is not. */
static int32_t *host_lengths(struct pb_backend *be, const struct pb_layer *l,
                             const int32_t *lengths, struct pb_err *e)
{
    int B = l->in_shape[0].n, T = l->in_shape[0].c;
    int32_t *len = pb_xmalloc((size_t)B * sizeof *len);
    if (lengths) {
        be->ops->download(be, len, lengths, (size_t)B * sizeof *len);
        be->ops->sync(be);
    }
    for (int b = 0; b < B; b++) {
        if (!lengths)
            len[b] = T;
        else if (len[b] < 1 || len[b] > T) {
            pb_err_set(e, "lstm '%s': sequence %d has length %d, outside [1, %d]: give each "
                          "sequence's real steps, at least 1 and at most the input's %d steps",
                       l->name, b, (int)len[b], T, T);
            free(len);
            return NULL;
        }
    }
    return len;
}

/* The layers in turn from x, as stack_forward in evaluation, each layer's states into
 * its rows of h_n and c_n; a is laid out (no workspaces) and y_last is the last layer's
 * output (unidirectional; bidirectional: not computed, NULL). */
static int stack_states(struct pb_backend *be, const struct pb_layer *l, const struct stack_aux *a,
                        const int32_t *len, const float *x, const float *params, float *y_last,
                        float *h_n, float *c_n, struct pb_err *e)
{
    int L = nlayers(l);
    size_t rows = (size_t)ndirs(l) * (size_t)l->in_shape[0].n * (size_t)l->cfg.out_features;
    int rc = 0;
    for (int k = 0; !rc && k < L; k++) {
        struct pb_lstm_one o = one_of(l, a, k);
        const float *w = params + layer_param_off(l, k);
        float *yk = k + 1 < L ? a->mid[k] : y_last, *hk = h_n + k * rows, *ck = c_n + k * rows;
        if (o.bi) {
            rc = pb_lstm_one_states(be, &o, x, w, len, hk, ck, e);
            if (!rc && k + 1 < L)
                rc = pb_lstm_one_fwd(be, &o, x, w, yk, e);
        } else {
            struct pb_lstm_states st = {.h_last = hk, .c_last = ck};
            be->ops->lstm_fwd(be, &o.d, x, w, yk, NULL, &st);
        }
        x = yk;
    }
    return rc;
}

int pb_lstm_final_states(struct pb_backend *be, const struct pb_layer *l, const float *x,
                         const float *params, const int32_t *lengths, float *h_n, float *c_n,
                         struct pb_err *e)
{
    if (l->ops != &pb_lstm_ops)
        return pb_err_set(e, "the final states of layer '%s': it is a %s, not an lstm", l->name,
                          l->ops->kind);
    PB_CHECK(h_n && c_n);
    int32_t *len = host_lengths(be, l, lengths, e);
    if (!len)
        return -1;
    struct stack_aux a;
    size_t last = l->cfg.bidirectional ? 0 : out_floats(l) * sizeof(float);
    size_t bytes = aux_layout(be, l, false, NULL, &a) + last;
    char *base = pb_backend_alloc(be, bytes, PB_MEM_SCRATCH, e);
    int rc = -1;
    if (base) {
        aux_layout(be, l, false, base, &a);
        struct pb_fwd_ctx c = {.be = be, .lengths = lengths};
        if (a.len)
            put_lengths(be, l, &c, a.len);
        float *y_last = last ? (float *)(base + bytes - last) : NULL;
        rc = stack_states(be, l, &a, len, x, params, y_last, h_n, c_n, e);
        if (!rc)
            rc = pb_backend_status(be, e);
    }
    pb_backend_free(be, base);
    free(len);
    return rc;
}

/* Per layer and direction the gemms (input and recurrent projections,
 * 2·B·T·4H·(I_k + H)) and about 10 FLOPs per gate element of the pointwise step; one
 * per element of each dropped output. */
static double lstm_flops(const struct pb_layer *l)
{
    double f = 0;
    for (int k = 0; k < nlayers(l); k++) {
        struct pb_lstm_desc d = layer_desc(l, k);
        double steps = (double)d.batch * d.steps, g = 4.0 * d.hidden;
        f += ndirs(l) * steps * g * (2.0 * (d.input + d.hidden) + 10.0);
    }
    if (drops(l, true))
        f += (double)(nlayers(l) - 1) * (double)out_floats(l);
    return f;
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
    .backward_weights = lstm_backward_weights,
    .flops = lstm_flops,
};
