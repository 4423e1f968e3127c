/* bench/lstm_dnnl.c — bench_lstm's baseline: the one-layer LSTM (torch.nn.LSTM,
 * batch_first; initial and final states on request) on oneDNN's vanilla LSTM primitive,
 * which the CPU backend ran before its own kernel (harness/compute/cpu/cpu_lstm.c
 * says why it was replaced), kept here only to be timed against it. oneDNN's gates
 * i, f, c̃, o are PyTorch's i, f, g, o. x [B, T, I] and y [B, T, H] stay batch-first:
 * oneDNN reads them as tnc [T, B, C] with strides (C, T·C, 1) (format ntc), no copy. The
 * weights stay in PyTorch's [4H, I], [4H, H] (oneDNN's ldgoi [1, 1, 4, H, C]) and each
 * call reorders them into the primitive's format; oneDNN's one bias is b_ih + b_hh. The
 * backward writes the weight gradients into zeroed buffers in the primitive's format and
 * reorders them back with a sum, so dw_acc accumulates; the one bias gradient goes to
 * both b_ih's and b_hh's. The training forward's workspace is oneDNN's. */
#include <string.h>

#include "bench/lstm_dnnl.h"
#include "harness/compute/cpu/cpu_internal.h"

/* A sequence [B, T, C] batch-first as oneDNN's [T, B, C]. */
static dnnl_memory_desc_t seq_md(const struct pb_lstm_desc *d, int c)
{
    dnnl_memory_desc_t md;
    dnnl_dims_t dims = {d->steps, d->batch, c};
    PB_DNNL(dnnl_memory_desc_init_by_tag(&md, 3, dims, dnnl_f32, dnnl_ntc));
    return md;
}

/* A state h or c [1, 1, B, H] (layers, directions, batch, channels). */
static dnnl_memory_desc_t state_md(const struct pb_lstm_desc *d)
{
    dnnl_memory_desc_t md;
    dnnl_dims_t dims = {1, 1, d->batch, d->hidden};
    PB_DNNL(dnnl_memory_desc_init_by_tag(&md, 4, dims, dnnl_f32, dnnl_ldnc));
    return md;
}

/* Weights [1, 1, in, 4, H] (layers, directions, input, gates, outputs) in tag. */
static dnnl_memory_desc_t w_md(const struct pb_lstm_desc *d, int in, dnnl_format_tag_t tag)
{
    dnnl_memory_desc_t md;
    dnnl_dims_t dims = {1, 1, in, 4, d->hidden};
    PB_DNNL(dnnl_memory_desc_init_by_tag(&md, 5, dims, dnnl_f32, tag));
    return md;
}

/* The bias [1, 1, 4, H]. */
static dnnl_memory_desc_t b_md(const struct pb_lstm_desc *d)
{
    dnnl_memory_desc_t md;
    dnnl_dims_t dims = {1, 1, 4, d->hidden};
    PB_DNNL(dnnl_memory_desc_init_by_tag(&md, 4, dims, dnnl_f32, dnnl_ldgo));
    return md;
}

/* A reorder between PyTorch's weight layout and a primitive's, inactive when they
 * are the same; out = true: the primitive's → PyTorch's, adding to the destination. */
struct lstm_reorder {
    bool active;
    struct pb_cpu_prim r;
    size_t bytes;  /* of the primitive-side buffer */
};

static void reorder_init(struct pb_backend *be, struct lstm_reorder *o,
                         const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *prim, bool out)
{
    o->bytes = dnnl_memory_desc_get_size(prim);
    o->active = out || !dnnl_memory_desc_equal(user, prim);
    if (o->active)
        pb_cpu_reorder_create(be, &o->r, out ? prim : user, out ? user : prim, out);
}

static void reorder_run(struct pb_backend *be, const struct lstm_reorder *o, const void *from,
                        void *to)
{
    struct pb_cpu_arg a[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    pb_cpu_prim_exec(be, &o->r, 2, a);
}

static void reorder_destroy(struct pb_backend *be, struct lstm_reorder *o)
{
    if (o->active)
        pb_cpu_prim_destroy(be, &o->r);
}

/* The primitive of a forward (training or inference) with its weight reorders. */
struct lstm_fwd {
    struct pb_cpu_prim p;
    struct lstm_reorder w_ih, w_hh;
};

/* The backward's primitive, its weight reorders in and its gradient reorders out. */
struct lstm_bwd {
    struct pb_cpu_prim p;
    struct lstm_reorder w_ih, w_hh, dw_ih, dw_hh;
};

static void drop_fwd(struct pb_backend *be, void *val)
{
    struct lstm_fwd *f = val;
    reorder_destroy(be, &f->w_ih);
    reorder_destroy(be, &f->w_hh);
    pb_cpu_prim_destroy(be, &f->p);
    free(f);
}

static void drop_bwd(struct pb_backend *be, void *val)
{
    struct lstm_bwd *b = val;
    reorder_destroy(be, &b->w_ih);
    reorder_destroy(be, &b->w_hh);
    reorder_destroy(be, &b->dw_ih);
    reorder_destroy(be, &b->dw_hh);
    pb_cpu_prim_destroy(be, &b->p);
    free(b);
}

/* Which states a forward reads and writes besides zeros: they make other primitives. */
struct lstm_ends {
    bool init, last;
};

static struct lstm_ends lstm_ends(const struct pb_lstm_states *st)
{
    if (!st)
        return (struct lstm_ends){false, false};
    PB_CHECK(!st->h0 == !st->c0 && !st->h_last == !st->c_last);
    return (struct lstm_ends){st->h0 != NULL, st->h_last != NULL};
}

static struct pb_cpu_key lstm_key(enum pb_cpu_op op, const struct pb_lstm_desc *d, bool train,
                                  struct lstm_ends ends)
{
    return (struct pb_cpu_key){
        .op = op, .v = {d->batch, d->steps, d->input, d->hidden, train, ends.init, ends.last}};
}

/* The weights' descriptors of a primitive: layer [I, 4, H] and iter [H, 4, H]. */
static void prim_w_mds(const struct pb_cpu_prim *p, dnnl_query_t q, const dnnl_memory_desc_t **wl,
                       const dnnl_memory_desc_t **wi)
{
    *wl = pb_cpu_prim_md(p, q, 0);
    *wi = pb_cpu_prim_md(p, q, 1);
}

static struct lstm_fwd *fwd_get(struct pb_backend *be, const struct pb_lstm_desc *d, bool train,
                               struct lstm_ends ends)
{
    struct pb_cpu_key k = lstm_key(PB_CPU_OP_LSTM_FWD, d, train, ends);
    struct lstm_fwd *f = pb_cpu_cache_get(be, &k);
    if (f)
        return f;
    f = pb_xcalloc(1, sizeof *f);
    dnnl_memory_desc_t x = seq_md(d, d->input), y = seq_md(d, d->hidden), b = b_md(d);
    dnnl_memory_desc_t wl = w_md(d, d->input, dnnl_format_tag_any);
    dnnl_memory_desc_t wi = w_md(d, d->hidden, dnnl_format_tag_any);
    dnnl_memory_desc_t hc = state_md(d);
    const dnnl_memory_desc_t *init = ends.init ? &hc : NULL, *last = ends.last ? &hc : NULL;
    dnnl_rnn_desc_t rd;
    PB_DNNL(dnnl_lstm_forward_desc_init(&rd, train ? dnnl_forward_training : dnnl_forward_inference,
                                        dnnl_unidirectional_left2right, &x, init, init, &wl, &wi,
                                        &b, &y, last, last, 0));
    pb_cpu_prim_create(be, &f->p, &rd, NULL);
    const dnnl_memory_desc_t *pwl, *pwi;
    prim_w_mds(&f->p, dnnl_query_weights_md, &pwl, &pwi);
    dnnl_memory_desc_t ul = w_md(d, d->input, dnnl_ldgoi), ui = w_md(d, d->hidden, dnnl_ldgoi);
    reorder_init(be, &f->w_ih, &ul, pwl, false);
    reorder_init(be, &f->w_hh, &ui, pwi, false);
    pb_cpu_cache_put(be, &k, f, drop_fwd);
    return f;
}

static struct lstm_bwd *bwd_get(struct pb_backend *be, const struct pb_lstm_desc *d)
{
    struct lstm_ends zero = {false, false};
    struct pb_cpu_key k = lstm_key(PB_CPU_OP_LSTM_BWD, d, true, zero);
    struct lstm_bwd *b = pb_cpu_cache_get(be, &k);
    if (b)
        return b;
    struct lstm_fwd *f = fwd_get(be, d, true, zero);
    b = pb_xcalloc(1, sizeof *b);
    dnnl_memory_desc_t x = seq_md(d, d->input), y = seq_md(d, d->hidden), bias = b_md(d);
    dnnl_memory_desc_t wl = w_md(d, d->input, dnnl_format_tag_any);
    dnnl_memory_desc_t wi = w_md(d, d->hidden, dnnl_format_tag_any);
    dnnl_rnn_desc_t rd;
    PB_DNNL(dnnl_lstm_backward_desc_init(&rd, dnnl_backward, dnnl_unidirectional_left2right, &x,
                                         NULL, NULL, &wl, &wi, &bias, &y, NULL, NULL, &x, NULL,
                                         NULL, &wl, &wi, &bias, &y, NULL, NULL, 0));
    pb_cpu_prim_create(be, &b->p, &rd, f->p.pd);
    const dnnl_memory_desc_t *pwl, *pwi, *dwl, *dwi;
    prim_w_mds(&b->p, dnnl_query_weights_md, &pwl, &pwi);
    prim_w_mds(&b->p, dnnl_query_diff_weights_md, &dwl, &dwi);
    dnnl_memory_desc_t ul = w_md(d, d->input, dnnl_ldgoi), ui = w_md(d, d->hidden, dnnl_ldgoi);
    reorder_init(be, &b->w_ih, &ul, pwl, false);
    reorder_init(be, &b->w_hh, &ui, pwi, false);
    reorder_init(be, &b->dw_ih, &ul, dwl, true);
    reorder_init(be, &b->dw_hh, &ui, dwi, true);
    pb_cpu_cache_put(be, &k, b, drop_bwd);
    return b;
}

size_t bench_lstm_dnnl_workspace(struct pb_backend *be, const struct pb_lstm_desc *d)
{
    pb_cpu_begin(be);  /* the primitive is created with the instance's thread count */
    struct lstm_fwd *f = fwd_get(be, d, true, (struct lstm_ends){false, false});
    return dnnl_memory_desc_get_size(pb_cpu_prim_md(&f->p, dnnl_query_workspace_md, 0));
}

/* bias [4H] = b_ih + b_hh */
static void bias_sum(const struct pb_lstm_desc *d, const struct pb_lstm_weights *p, float *bias)
{
    for (int j = 0; j < 4 * d->hidden; j++)
        bias[j] = p->b_ih[j] + p->b_hh[j];
}

/* Where the primitive reads a weight tensor: user itself or buf after the reorder. */
static const void *weights_in(struct pb_backend *be, const struct lstm_reorder *o,
                              const float *user, void *buf)
{
    if (!o->active)
        return user;
    reorder_run(be, o, user, buf);
    return buf;
}

/* Bytes rounded up to 64, so that the pieces of one scratch block stay aligned. */
static size_t al64(size_t bytes)
{
    return (bytes + 63) & ~(size_t)63;
}

static size_t in_bytes(const struct lstm_reorder *o)
{
    return o->active ? al64(o->bytes) : 0;
}

void bench_lstm_dnnl_fwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                     const float *w, float *y, void *ws, const struct pb_lstm_states *st)
{
    if (!pb_cpu_begin(be))
        return;
    struct lstm_ends ends = lstm_ends(st);
    PB_CHECK(!(ws && ends.init));
    struct lstm_fwd *f = fwd_get(be, d, ws != NULL, ends);
    struct pb_lstm_weights p = pb_lstm_weights_split(d, w);
    size_t bb = al64(4 * (size_t)d->hidden * sizeof(float)), lb = in_bytes(&f->w_ih);
    /* the weights in the primitive's format, then the summed bias [4H] */
    char *buf = pb_cpu_scratch(be, lb + in_bytes(&f->w_hh) + bb);
    if (!buf)
        return;
    float *bias = (float *)(buf + lb + in_bytes(&f->w_hh));
    bias_sum(d, &p, bias);
    struct pb_cpu_arg a[10] = {
        {DNNL_ARG_SRC_LAYER, x},
        {DNNL_ARG_WEIGHTS_LAYER, weights_in(be, &f->w_ih, p.w_ih, buf)},
        {DNNL_ARG_WEIGHTS_ITER, weights_in(be, &f->w_hh, p.w_hh, buf + lb)},
        {DNNL_ARG_BIAS, bias},
        {DNNL_ARG_DST_LAYER, y},
    };
    int n = 5;
    if (ws)
        a[n++] = (struct pb_cpu_arg){DNNL_ARG_WORKSPACE, ws};
    if (ends.init) {
        a[n++] = (struct pb_cpu_arg){DNNL_ARG_SRC_ITER, st->h0};
        a[n++] = (struct pb_cpu_arg){DNNL_ARG_SRC_ITER_C, st->c0};
    }
    if (ends.last) {
        a[n++] = (struct pb_cpu_arg){DNNL_ARG_DST_ITER, st->h_last};
        a[n++] = (struct pb_cpu_arg){DNNL_ARG_DST_ITER_C, st->c_last};
    }
    pb_cpu_prim_exec(be, &f->p, n, a);
    pb_cpu_scratch_free(be, buf);
}

void bench_lstm_dnnl_bwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                     const float *w, const float *y, const float *dy, const void *ws, float *dx,
                     float *dw_acc)
{
    if (!pb_cpu_begin(be))
        return;
    struct lstm_bwd *b = bwd_get(be, d);
    struct pb_lstm_weights p = pb_lstm_weights_split(d, w), g = pb_lstm_weights_split(d, dw_acc);
    size_t G = 4 * (size_t)d->hidden, bb = al64(G * sizeof(float));
    size_t wl = in_bytes(&b->w_ih), wi = in_bytes(&b->w_hh);
    size_t dl = al64(b->dw_ih.bytes), di = al64(b->dw_hh.bytes);
    size_t xb = dx ? 0 : (size_t)d->batch * d->steps * (size_t)d->input * sizeof(float);
    /* weights in, weight gradients out (primitive's formats), bias and its gradient [4H],
     * dx when not wanted */
    char *buf = pb_cpu_scratch(be, wl + wi + dl + di + 2 * bb + xb);
    if (!buf)
        return;
    char *gl = buf + wl + wi, *gi = gl + dl;
    float *bias = (float *)(gi + di), *dbias = (float *)(gi + di + bb);
    memset(gl, 0, dl + di);
    memset(dbias, 0, bb);
    bias_sum(d, &p, bias);
    struct pb_cpu_arg a[11] = {
        {DNNL_ARG_SRC_LAYER, x},
        {DNNL_ARG_WEIGHTS_LAYER, weights_in(be, &b->w_ih, p.w_ih, buf)},
        {DNNL_ARG_WEIGHTS_ITER, weights_in(be, &b->w_hh, p.w_hh, buf + wl)},
        {DNNL_ARG_BIAS, bias},
        {DNNL_ARG_DST_LAYER, y},
        {DNNL_ARG_WORKSPACE, ws},
        {DNNL_ARG_DIFF_DST_LAYER, dy},
        {DNNL_ARG_DIFF_SRC_LAYER, dx ? dx : (void *)(gi + di + 2 * bb)},
        {DNNL_ARG_DIFF_WEIGHTS_LAYER, gl},
        {DNNL_ARG_DIFF_WEIGHTS_ITER, gi},
        {DNNL_ARG_DIFF_BIAS, dbias},
    };
    pb_cpu_prim_exec(be, &b->p, 11, a);
    reorder_run(be, &b->dw_ih, gl, g.w_ih);
    reorder_run(be, &b->dw_hh, gi, g.w_hh);
    for (size_t j = 0; j < G; j++) {
        g.b_ih[j] += dbias[j];
        g.b_hh[j] += dbias[j];
    }
    pb_cpu_scratch_free(be, buf);
}
