/* harness/compute/cpu/cpu_conv.c — 2-D convolution on oneDNN (design §2.5): primitives
 * choose their formats; activations are reordered only where the caller's layout
 * differs, PyTorch OIHW weights into the primitive's format at every call.
 *
 * Algorithm: Winograd F(4×4, 3×3) (oneDNN's jit_wino_4x3) for the 3×3 stride-1 "same"
 * convolutions whose shapes it runs faster (winograd_fits), direct elsewhere and on CPUs
 * where oneDNN has no Winograd kernel (it has one for AVX-512 machines only). Measured on
 * Zen 4, forward + backward data + backward weights, batch × channels in → out @ side,
 * Winograd's time over direct's at 1 thread (2 threads): 2 × 128 → 128 @ 32 0.44 (0.39),
 * 32 × 64 → 64 @ 8 0.47 (0.58), 2 × 256 → 256 @ 16 0.63 (0.57), 8 × 512 → 512 @ 8 0.54
 * (0.63), 32 × 128 → 128 @ 4 0.58 (0.80), 32 × 24 → 24 @ 7 0.91; but with few tiles of
 * 4 × 4 outputs in the batch or few channels it loses: 2 × 512 → 512 @ 8 1.48 (1.10),
 * 8 × 256 → 256 @ 4 1.45 (1.52), 32 × 256 → 256 @ 2 2.3, 32 × 16 → 16 @ 8 1.19,
 * 32 × 16 → 24 @ 7 1.18, 32 × 16 → 16 @ 32 1.04 (1.09). The choice depends on the shape
 * alone, so a run's bits do not depend on timing. Winograd's results differ from the
 * direct sum in rounding (its transforms add terms of both signs): about 2e-5 absolute on
 * unit-sized data, where the direct sum errs by 2e-6; tests/test_backend_cpu bounds both
 * against a sum in double.
 *
 * Thin outputs: the backward passes of a spatial convolution to 8 channels or fewer, whose
 * output the machine's 16-channel blocks pad to twice its width or more (DenseNet's growth
 * of 8 at the small preset), run on 8-channel blocks (oneDNN's AVX2 kernels): x and dy
 * reordered to nChw8c, dx back. Measured on Zen 4 at batch 32, one thread, backward data +
 * weights with those reorders over the 16-channel kernels' time, standalone: 3×3 32 → 8
 * @ 32 0.57, @ 16 0.61, @ 8 0.75, @ 4 0.65; in densenet121 small's step (its per-layer
 * clocks), the layer's backward from 5.8 to 4.0 ms @ 32, 1.31 to 0.88 @ 16, 0.31 to 0.25
 * @ 8, 0.080 to 0.068 @ 4. The forward stays on 16-channel blocks: on 8 it took 0.8 of
 * their time standalone @ 32 but 1.25–2 times @ 16 and below, and in the step it was
 * slower @ 32 too (4.0 against 3.6 ms). Below 8 input channels oneDNN has no such kernel
 * (only its reference loops, 100 times slower). */
#include <string.h>

#include "harness/compute/cpu/cpu_internal.h"

/* Output size of a convolution along one axis: (in + 2p - k) / s + 1. */
static int conv_out(int in, int k, int s, int p)
{
    return (in + 2 * p - k) / s + 1;
}

/* The shapes of a convolution: x [n, cin, h, w] → y [n, cout, oh, ow]. */
struct conv_shapes {
    struct pb_shape x, y;
    dnnl_memory_desc_t src, wei, bias, dst;  /* format_tag_any */
    dnnl_dims_t strides, pad;
};

static void conv_shapes(const struct pb_conv_desc *d, int n, int h, int w, struct conv_shapes *cs)
{
    PB_CHECK(d->cin > 0 && d->cout > 0 && d->kh > 0 && d->kw > 0 && d->sh > 0 && d->sw > 0);
    cs->x = (struct pb_shape){n, d->cin, h, w};
    cs->y = (struct pb_shape){n, d->cout, conv_out(h, d->kh, d->sh, d->ph),
                              conv_out(w, d->kw, d->sw, d->pw)};
    PB_CHECK(cs->y.h > 0 && cs->y.w > 0);
    cs->src = pb_cpu_md_tag(n, d->cin, h, w, dnnl_format_tag_any);
    cs->wei = pb_cpu_md_tag(d->cout, d->cin, d->kh, d->kw, dnnl_format_tag_any);
    cs->bias = pb_cpu_md_1d(d->cout);
    cs->dst = pb_cpu_md_tag(n, d->cout, cs->y.h, cs->y.w, dnnl_format_tag_any);
    cs->strides[0] = d->sh;
    cs->strides[1] = d->sw;
    cs->pad[0] = d->ph;
    cs->pad[1] = d->pw;
}

/* Winograd's shapes (the header's figures): a 3×3 "same" convolution at stride 1, on 16
 * channels or more in and out and cin·cout ≥ 512, at least 4 × 4 outputs per image and
 * 32 output tiles of 4 × 4 in the batch. */
enum { WINO_MIN_CHANNELS = 16, WINO_MIN_CHANNEL_PRODUCT = 512, WINO_MIN_SIDE = 4,
       WINO_MIN_TILES = 32 };

static bool winograd_fits(const struct pb_conv_desc *d, const struct conv_shapes *cs)
{
    long tiles = (long)cs->y.n * ((cs->y.h + 3) / 4) * ((cs->y.w + 3) / 4);
    return d->kh == 3 && d->kw == 3 && d->sh == 1 && d->sw == 1 && d->ph == 1 && d->pw == 1 &&
           d->cin >= WINO_MIN_CHANNELS && d->cout >= WINO_MIN_CHANNELS &&
           d->cin * d->cout >= WINO_MIN_CHANNEL_PRODUCT && cs->y.h >= WINO_MIN_SIDE &&
           cs->y.w >= WINO_MIN_SIDE && tiles >= WINO_MIN_TILES;
}

/* Thin outputs' shapes (the header's figures): a kernel of 9 taps or more, at most 8
 * channels out and at least 8 in, 4 × 4 outputs per image or more (as measured), on a
 * machine whose layout blocks 16 channels. */
enum { THIN_MAX_COUT = 8, THIN_MIN_CIN = 8, THIN_MIN_KERNEL = 9, THIN_MIN_PIXELS = 16 };

static bool thin_fits(const struct pb_conv_desc *d, const struct conv_shapes *cs)
{
    return pb_cpu_native_layout() == PB_LAYOUT_NCHW16C && d->cout <= THIN_MAX_COUT &&
           d->cin >= THIN_MIN_CIN && d->kh * d->kw >= THIN_MIN_KERNEL &&
           cs->y.h * cs->y.w >= THIN_MIN_PIXELS;
}

/* Whether pd runs one of oneDNN's jit kernels (not its reference loops). */
static bool is_jit(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
           impl && !strncmp(impl, "jit", 3);
}

enum conv_pass { CONV_FWD, CONV_BWD_DATA, CONV_BWD_WEIGHTS };

static dnnl_status_t conv_desc(enum conv_pass pass, dnnl_alg_kind_t alg,
                               const struct pb_conv_desc *d, const struct conv_shapes *cs,
                               dnnl_convolution_desc_t *cd)
{
    const dnnl_memory_desc_t *bias = d->bias ? &cs->bias : NULL;
    switch (pass) {
    case CONV_FWD:
        return dnnl_convolution_forward_desc_init(cd, dnnl_forward_training, alg, &cs->src,
                                                  &cs->wei, bias, &cs->dst, cs->strides, cs->pad,
                                                  cs->pad);
    case CONV_BWD_DATA:
        return dnnl_convolution_backward_data_desc_init(cd, alg, &cs->src, &cs->wei, &cs->dst,
                                                        cs->strides, cs->pad, cs->pad);
    case CONV_BWD_WEIGHTS:
        return dnnl_convolution_backward_weights_desc_init(cd, alg, &cs->src, &cs->wei, bias,
                                                           &cs->dst, cs->strides, cs->pad,
                                                           cs->pad);
    }
    return dnnl_invalid_arguments;
}

/* The direct primitive of a backward pass of a thin convolution on 8-channel blocks, or
 * NULL for a forward, where the shape is not thin or where oneDNN has no jit kernel for it. */
static dnnl_primitive_desc_t thin_pd(struct pb_backend *be, enum conv_pass pass,
                                     const struct pb_conv_desc *d, const struct conv_shapes *cs,
                                     const_dnnl_primitive_desc_t hint)
{
    if (pass == CONV_FWD || !thin_fits(d, cs))
        return NULL;
    struct pb_cpu *cpu = pb_cpu_of(be);
    struct conv_shapes blocked = *cs;
    blocked.src = pb_cpu_md(cs->x, PB_LAYOUT_NCHW8C);
    blocked.dst = pb_cpu_md(cs->y, PB_LAYOUT_NCHW8C);
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd;
    if (conv_desc(pass, dnnl_convolution_direct, d, &blocked, &cd) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &cd, cpu->attr, cpu->eng, hint) != dnnl_success)
        return NULL;
    if (is_jit(pd))
        return pd;
    dnnl_primitive_desc_destroy(pd);
    return NULL;
}

/* The primitive descriptor of one pass: a backward one on 8-channel blocks where the output
 * is thin, Winograd where it fits and oneDNN implements it on this CPU, else direct (whether
 * Winograd in *winograd, unless NULL); hint the forward one of a backward pass. */
static dnnl_primitive_desc_t conv_pd(struct pb_backend *be, enum conv_pass pass,
                                     const struct pb_conv_desc *d, const struct conv_shapes *cs,
                                     const_dnnl_primitive_desc_t hint, bool *winograd)
{
    struct pb_cpu *cpu = pb_cpu_of(be);
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = thin_pd(be, pass, d, cs, hint);
    if (winograd)
        *winograd = false;
    if (pd)
        return pd;
    bool wino = winograd_fits(d, cs) &&
                conv_desc(pass, dnnl_convolution_winograd, d, cs, &cd) == dnnl_success &&
                dnnl_primitive_desc_create(&pd, &cd, cpu->attr, cpu->eng, hint) == dnnl_success;
    if (winograd)
        *winograd = wino;
    if (wino)
        return pd;
    PB_DNNL(conv_desc(pass, dnnl_convolution_direct, d, cs, &cd));
    PB_DNNL(dnnl_primitive_desc_create(&pd, &cd, cpu->attr, cpu->eng, hint));
    return pd;
}

static dnnl_memory_desc_t oihw_md(const struct pb_conv_desc *d)
{
    return pb_cpu_md_tag(d->cout, d->cin, d->kh, d->kw, dnnl_oihw);
}

static struct pb_cpu_key conv_key(enum pb_cpu_op op, const struct pb_conv_desc *d,
                                  struct pb_shape x, enum pb_layout l0, enum pb_layout l1)
{
    return (struct pb_cpu_key){
        .op = op,
        .v = {x.n, x.c, x.h, x.w, d->cout, d->kh, d->kw, d->sh, d->sw, d->ph, d->pw, d->bias,
              (int)l0, (int)l1},
    };
}

/* ---- forward ---- */

struct conv_fwd {
    struct pb_cpu_prim p;
    struct pb_cpu_xfer src, wei, dst;
    enum pb_layout y_layout;
    struct conv_shapes cs;
};

static void drop_fwd(struct pb_backend *be, void *val)
{
    struct conv_fwd *f = val;
    pb_cpu_xfer_destroy(be, &f->src);
    pb_cpu_xfer_destroy(be, &f->wei);
    pb_cpu_xfer_destroy(be, &f->dst);
    pb_cpu_prim_destroy(be, &f->p);
    free(f);
}

/* The layout y takes: the primitive's dst format when it is one of the pb layouts,
 * else plain (the output is then reordered). */
static enum pb_layout dst_layout(const dnnl_memory_desc_t *dmd, struct pb_shape y)
{
    static const enum pb_layout cand[] = {PB_LAYOUT_NCHW8C, PB_LAYOUT_NCHW16C, PB_LAYOUT_PLAIN};
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
        dnnl_memory_desc_t md = pb_cpu_md(y, cand[i]);
        if (dnnl_memory_desc_equal(dmd, &md))
            return cand[i];
    }
    return PB_LAYOUT_PLAIN;
}

static struct conv_fwd *fwd_get(struct pb_backend *be, const struct pb_conv_desc *d,
                                const struct pb_tensor *x)
{
    PB_CHECK(x->shape.c == d->cin);
    struct pb_cpu_key k = conv_key(PB_CPU_OP_CONV_FWD, d, x->shape, x->layout, 0);
    struct conv_fwd *f = pb_cpu_cache_get(be, &k);
    if (f)
        return f;
    f = pb_xcalloc(1, sizeof *f);
    conv_shapes(d, x->shape.n, x->shape.h, x->shape.w, &f->cs);
    pb_cpu_prim_from_pd(be, &f->p, conv_pd(be, CONV_FWD, d, &f->cs, NULL, NULL));
    dnnl_memory_desc_t xmd = pb_cpu_md(x->shape, x->layout), wmd = oihw_md(d);
    pb_cpu_xfer_in_init(be, &f->src, &xmd, pb_cpu_prim_md(&f->p, dnnl_query_src_md, 0));
    pb_cpu_xfer_in_init(be, &f->wei, &wmd, pb_cpu_prim_md(&f->p, dnnl_query_weights_md, 0));
    const dnnl_memory_desc_t *dmd = pb_cpu_prim_md(&f->p, dnnl_query_dst_md, 0);
    f->y_layout = dst_layout(dmd, f->cs.y);
    dnnl_memory_desc_t ymd = pb_cpu_md(f->cs.y, f->y_layout);
    pb_cpu_xfer_out_init(be, &f->dst, dmd, &ymd);
    pb_cpu_cache_put(be, &k, f, drop_fwd);
    return f;
}

enum pb_layout pb_cpu_conv_onednn_layout(struct pb_backend *be, const struct pb_conv_desc *d,
                                         struct pb_shape x)
{
    struct conv_shapes cs;
    conv_shapes(d, x.n, x.h, x.w, &cs);
    dnnl_primitive_desc_t pd = conv_pd(be, CONV_FWD, d, &cs, NULL, NULL);
    enum pb_layout l = dst_layout(dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), cs.y);
    dnnl_primitive_desc_destroy(pd);
    return l;
}

enum pb_cpu_conv_algo pb_cpu_conv_algorithm(struct pb_backend *be, const struct pb_conv_desc *d,
                                            struct pb_shape x)
{
    if (pb_cpu_s2d_plan(be, d, x))
        return PB_CPU_CONV_S2D;
    if (pb_cpu_conv_gemm_plan(be, d, x))
        return PB_CPU_CONV_GEMM;
    struct conv_shapes cs;
    conv_shapes(d, x.n, x.h, x.w, &cs);
    bool wino[3];
    dnnl_primitive_desc_t hint = conv_pd(be, CONV_FWD, d, &cs, NULL, &wino[0]);
    dnnl_primitive_desc_t bd = conv_pd(be, CONV_BWD_DATA, d, &cs, hint, &wino[1]);
    dnnl_primitive_desc_t bw = conv_pd(be, CONV_BWD_WEIGHTS, d, &cs, hint, &wino[2]);
    dnnl_memory_desc_t blocked = pb_cpu_md(cs.x, PB_LAYOUT_NCHW8C);
    bool thin = thin_fits(d, &cs) &&
                dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(bd, dnnl_query_diff_src_md, 0),
                                       &blocked) &&
                dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(bw, dnnl_query_src_md, 0),
                                       &blocked);
    dnnl_primitive_desc_destroy(bw);
    dnnl_primitive_desc_destroy(bd);
    dnnl_primitive_desc_destroy(hint);
    if (thin)
        return PB_CPU_CONV_THIN;
    return wino[0] && wino[1] && wino[2] ? PB_CPU_CONV_WINOGRAD : PB_CPU_CONV_DIRECT;
}

static void onednn_fwd(struct pb_backend *be, const struct pb_conv_desc *d,
                       const struct pb_tensor *x, const float *w, const float *b,
                       struct pb_tensor *y)
{
    struct conv_fwd *f = fwd_get(be, d, x);
    PB_CHECK(pb_shape_eq(y->shape, f->cs.y) && y->layout == f->y_layout);
    struct pb_cpu_arg a[4] = {
        {DNNL_ARG_SRC, pb_cpu_xfer_in(be, &f->src, x->data)},
        {DNNL_ARG_WEIGHTS, pb_cpu_xfer_in(be, &f->wei, w)},
        {DNNL_ARG_DST, pb_cpu_xfer_out_ptr(&f->dst, y->data)},
        {DNNL_ARG_BIAS, b},
    };
    pb_cpu_prim_exec(be, &f->p, d->bias ? 4 : 3, a);
    pb_cpu_xfer_out(be, &f->dst, y->data);
}

/* ---- backward data ---- */

struct conv_bwd_data {
    struct pb_cpu_prim p;
    struct pb_cpu_xfer wei, dy, dx;
    struct conv_shapes cs;
};

static void drop_bwd_data(struct pb_backend *be, void *val)
{
    struct conv_bwd_data *bd = val;
    pb_cpu_xfer_destroy(be, &bd->wei);
    pb_cpu_xfer_destroy(be, &bd->dy);
    pb_cpu_xfer_destroy(be, &bd->dx);
    pb_cpu_prim_destroy(be, &bd->p);
    free(bd);
}

static void onednn_bwd_data(struct pb_backend *be, const struct pb_conv_desc *d,
                            const struct pb_tensor *dy, const float *w, struct pb_tensor *dx)
{
    struct pb_cpu_key k = conv_key(PB_CPU_OP_CONV_BWD_DATA, d, dx->shape, dx->layout, dy->layout);
    struct conv_bwd_data *bd = pb_cpu_cache_get(be, &k);
    if (!bd) {
        bd = pb_xcalloc(1, sizeof *bd);
        conv_shapes(d, dx->shape.n, dx->shape.h, dx->shape.w, &bd->cs);
        struct conv_shapes *cs = &bd->cs;
        dnnl_primitive_desc_t hint = conv_pd(be, CONV_FWD, d, cs, NULL, NULL);
        pb_cpu_prim_from_pd(be, &bd->p, conv_pd(be, CONV_BWD_DATA, d, cs, hint, NULL));
        dnnl_primitive_desc_destroy(hint);
        dnnl_memory_desc_t wmd = oihw_md(d), dymd = pb_cpu_md(cs->y, dy->layout),
                           dxmd = pb_cpu_md(cs->x, dx->layout);
        pb_cpu_xfer_in_init(be, &bd->wei, &wmd, pb_cpu_prim_md(&bd->p, dnnl_query_weights_md, 0));
        pb_cpu_xfer_in_init(be, &bd->dy, &dymd, pb_cpu_prim_md(&bd->p, dnnl_query_diff_dst_md, 0));
        pb_cpu_xfer_out_init(be, &bd->dx, pb_cpu_prim_md(&bd->p, dnnl_query_diff_src_md, 0), &dxmd);
        pb_cpu_cache_put(be, &k, bd, drop_bwd_data);
    }
    PB_CHECK(pb_shape_eq(dy->shape, bd->cs.y));
    struct pb_cpu_arg a[3] = {
        {DNNL_ARG_DIFF_DST, pb_cpu_xfer_in(be, &bd->dy, dy->data)},
        {DNNL_ARG_WEIGHTS, pb_cpu_xfer_in(be, &bd->wei, w)},
        {DNNL_ARG_DIFF_SRC, pb_cpu_xfer_out_ptr(&bd->dx, dx->data)},
    };
    pb_cpu_prim_exec(be, &bd->p, 3, a);
    pb_cpu_xfer_out(be, &bd->dx, dx->data);
}

/* ---- backward weights ---- */

/* dw: the primitive's weight gradient added onto the caller's OIHW dw_acc by one reorder
 * with a sum (also when the formats are equal: a plain add). */
struct conv_bwd_w {
    struct pb_cpu_prim p;
    struct pb_cpu_xfer src, dy, dw;
    float *db;       /* [cout] */
    struct conv_shapes cs;
};

static void drop_bwd_w(struct pb_backend *be, void *val)
{
    struct conv_bwd_w *bw = val;
    pb_cpu_xfer_destroy(be, &bw->src);
    pb_cpu_xfer_destroy(be, &bw->dy);
    pb_cpu_xfer_destroy(be, &bw->dw);
    pb_cpu_scratch_free(be, bw->db);
    pb_cpu_prim_destroy(be, &bw->p);
    free(bw);
}

static struct conv_bwd_w *bwd_w_get(struct pb_backend *be, const struct pb_conv_desc *d,
                                    const struct pb_tensor *x, const struct pb_tensor *dy)
{
    struct pb_cpu_key k = conv_key(PB_CPU_OP_CONV_BWD_WEIGHTS, d, x->shape, x->layout, dy->layout);
    struct conv_bwd_w *bw = pb_cpu_cache_get(be, &k);
    if (bw)
        return bw;
    bw = pb_xcalloc(1, sizeof *bw);
    conv_shapes(d, x->shape.n, x->shape.h, x->shape.w, &bw->cs);
    struct conv_shapes *cs = &bw->cs;
    dnnl_primitive_desc_t hint = conv_pd(be, CONV_FWD, d, cs, NULL, NULL);
    pb_cpu_prim_from_pd(be, &bw->p, conv_pd(be, CONV_BWD_WEIGHTS, d, cs, hint, NULL));
    dnnl_primitive_desc_destroy(hint);
    dnnl_memory_desc_t wmd = oihw_md(d), xmd = pb_cpu_md(cs->x, x->layout),
                       dymd = pb_cpu_md(cs->y, dy->layout);
    pb_cpu_xfer_in_init(be, &bw->src, &xmd, pb_cpu_prim_md(&bw->p, dnnl_query_src_md, 0));
    pb_cpu_xfer_in_init(be, &bw->dy, &dymd, pb_cpu_prim_md(&bw->p, dnnl_query_diff_dst_md, 0));
    pb_cpu_xfer_acc_init(be, &bw->dw, pb_cpu_prim_md(&bw->p, dnnl_query_diff_weights_md, 0), &wmd);
    if (d->bias)
        bw->db = pb_cpu_scratch(be, (size_t)d->cout * sizeof(float));
    pb_cpu_cache_put(be, &k, bw, drop_bwd_w);
    return bw;
}

static void onednn_bwd_weights(struct pb_backend *be, const struct pb_conv_desc *d,
                               const struct pb_tensor *x, const struct pb_tensor *dy,
                               float *dw_acc, float *db_acc)
{
    struct conv_bwd_w *bw = bwd_w_get(be, d, x, dy);
    if (be->failed)
        return;
    PB_CHECK(pb_shape_eq(dy->shape, bw->cs.y));
    struct pb_cpu_arg a[4] = {
        {DNNL_ARG_SRC, pb_cpu_xfer_in(be, &bw->src, x->data)},
        {DNNL_ARG_DIFF_DST, pb_cpu_xfer_in(be, &bw->dy, dy->data)},
        {DNNL_ARG_DIFF_WEIGHTS, pb_cpu_xfer_out_ptr(&bw->dw, NULL)},
        {DNNL_ARG_DIFF_BIAS, bw->db},
    };
    pb_cpu_prim_exec(be, &bw->p, d->bias ? 4 : 3, a);
    pb_cpu_xfer_out(be, &bw->dw, dw_acc);
    if (d->bias)
        for (int i = 0; i < d->cout; i++)
            db_acc[i] += bw->db[i];
}

/* ---- the ops: forward and backward data in space-to-depth form where it is planned,
 * all three passes as matrix products on few output pixels, else on the oneDNN
 * primitives ---- */

enum pb_layout pb_cpu_conv_layout(struct pb_backend *be, const struct pb_conv_desc *d,
                                  const struct pb_tensor *x)
{
    if (!pb_cpu_begin(be))
        return PB_LAYOUT_PLAIN;
    const struct pb_cpu_s2d *s = pb_cpu_s2d_plan(be, d, x->shape);
    if (s)
        return pb_cpu_s2d_layout(s);
    const struct pb_cpu_conv_gemm *g = pb_cpu_conv_gemm_plan(be, d, x->shape);
    return g ? pb_cpu_conv_gemm_layout(g) : fwd_get(be, d, x)->y_layout;
}

/* x [n, cin, h, w] (any layout), w [cout, cin, kh, kw] OIHW, b [cout] or NULL,
 * y [n, cout, oh, ow] in conv_layout's layout */
void pb_cpu_conv_fwd(struct pb_backend *be, const struct pb_conv_desc *d,
                     const struct pb_tensor *x, const float *w, const float *b,
                     struct pb_tensor *y)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CHECK(x->shape.c == d->cin && (!d->bias || b != NULL));
    const struct pb_cpu_s2d *s = pb_cpu_s2d_plan(be, d, x->shape);
    const struct pb_cpu_conv_gemm *g = s ? NULL : pb_cpu_conv_gemm_plan(be, d, x->shape);
    if (s)
        pb_cpu_s2d_fwd(be, s, x, w, b, y);
    else if (g)
        pb_cpu_conv_gemm_fwd(be, g, x, w, b, y);
    else
        onednn_fwd(be, d, x, w, b, y);
}

/* dy [n, cout, oh, ow] (any layout), w [cout, cin, kh, kw] OIHW,
 * dx [n, cin, h, w] (layout set by the caller) = conv^T(dy, w) */
void pb_cpu_conv_bwd_data(struct pb_backend *be, const struct pb_conv_desc *d,
                          const struct pb_tensor *dy, const float *w, struct pb_tensor *dx)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CHECK(dx->shape.c == d->cin);
    const struct pb_cpu_s2d *s = pb_cpu_s2d_plan(be, d, dx->shape);
    const struct pb_cpu_conv_gemm *g = s ? NULL : pb_cpu_conv_gemm_plan(be, d, dx->shape);
    if (s)
        pb_cpu_s2d_bwd_data(be, s, dy, w, dx);
    else if (g)
        pb_cpu_conv_gemm_bwd_data(be, g, dy, w, dx);
    else
        onednn_bwd_data(be, d, dy, w, dx);
}

/* x [n, cin, h, w], dy [n, cout, oh, ow] (any layouts);
 * dw_acc [cout, cin, kh, kw] OIHW += dL/dw, db_acc [cout] += dL/db */
void pb_cpu_conv_bwd_weights(struct pb_backend *be, const struct pb_conv_desc *d,
                             const struct pb_tensor *x, const struct pb_tensor *dy,
                             float *dw_acc, float *db_acc)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CHECK(x->shape.c == d->cin && (!d->bias || db_acc != NULL));
    const struct pb_cpu_conv_gemm *g =
        pb_cpu_s2d_plan(be, d, x->shape) ? NULL : pb_cpu_conv_gemm_plan(be, d, x->shape);
    if (g)
        pb_cpu_conv_gemm_bwd_weights(be, g, x, dy, dw_acc, d->bias ? db_acc : NULL);
    else
        onednn_bwd_weights(be, d, x, dy, dw_acc, db_acc);
}
