/* harness/compute/cpu/cpu_pool.c — 2-D max and average pooling on oneDNN with PyTorch's output
 * sizes (ceil_mode becomes extra right padding) and divisors (windows that ceil_mode lets
 * overhang the padded input are rescaled: oneDNN divides by kh·kw). y keeps x's layout.
 * The primitives always run on a blocked layout, x's own or, for a plain x, the one this
 * machine's convolutions write (nChw16c with AVX-512, else nChw8c), x and y reordered
 * to and from it: oneDNN pools plain tensors with another implementation whose averages
 * round otherwise, and a stage boundary hands a stage plain tensors where the unsplit
 * model pools blocked ones, so without this the bits would depend on the partition. */
#include <stdint.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "harness/compute/cpu/cpu_internal.h"

/* PyTorch's pooling output size along one axis. */
static int pool_out(int in, int k, int s, int p, bool ceil_mode)
{
    int span = in + 2 * p - k;
    PB_CHECK(span >= 0 && s > 0);
    int out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + p)
        out--;
    return out;
}

/* The right padding that makes oneDNN's size (in + p + pr - k) / s + 1 equal out. */
static int pool_pad_r(int in, int out, int k, int s, int p)
{
    int pr = (out - 1) * s + k - in - p;
    return pr > 0 ? pr : 0;
}

/* The window size PyTorch divides by, clipped to the padded input, along one axis. */
static int clipped(int o, int in, int k, int s, int p)
{
    int start = o * s - p, end = start + k;
    return (end < in + p ? end : in + p) - start;
}

static bool needs_rescale(const struct pb_pool_desc *d, struct pb_shape x, struct pb_shape y)
{
    return d->kind == PB_POOL_AVG && !d->exclude_pad &&
           (clipped(y.h - 1, x.h, d->kh, d->sh, d->ph) < d->kh ||
            clipped(y.w - 1, x.w, d->kw, d->sw, d->pw) < d->kw);
}

/* t [n, c, oh, ow] *= kh·kw / clipped window, where the window is clipped (in place;
 * only the last rows and columns can be). */
static void rescale(struct pb_backend *be, const struct pb_pool_desc *d, struct pb_shape x,
                    const struct pb_tensor *t, float *out)
{
    struct pb_shape y = t->shape;
    int nc = y.n * y.c;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int i = 0; i < nc; i++) {
        int n = i / y.c, c = i % y.c;
        for (int oh = 0; oh < y.h; oh++) {
            int ch = clipped(oh, x.h, d->kh, d->sh, d->ph);
            for (int ow = 0; ow < y.w; ow++) {
                int cw = clipped(ow, x.w, d->kw, d->sw, d->pw);
                if (ch == d->kh && cw == d->kw)
                    continue;
                size_t off = pb_cpu_offset(y, t->layout, n, c, oh, ow);
                out[off] = t->data[off] * ((float)(d->kh * d->kw) / (float)(ch * cw));
            }
        }
    }
}

/* The layout the primitives run on, given the caller's. */
static enum pb_layout run_layout(enum pb_layout given)
{
    return given != PB_LAYOUT_PLAIN ? given : pb_cpu_native_layout();
}

static dnnl_alg_kind_t pool_alg(const struct pb_pool_desc *d)
{
    if (d->kind == PB_POOL_MAX)
        return dnnl_pooling_max;
    return d->exclude_pad ? dnnl_pooling_avg_exclude_padding : dnnl_pooling_avg_include_padding;
}

/* The forward descriptor of pooling x [n, c, h, w] → y (layouts as given). */
static void fwd_desc(const struct pb_pool_desc *d, struct pb_shape x, enum pb_layout xl,
                     struct pb_shape y, enum pb_layout yl, bool train, dnnl_pooling_desc_t *pd)
{
    PB_CHECK(y.n == x.n && y.c == x.c);
    PB_CHECK(y.h == pool_out(x.h, d->kh, d->sh, d->ph, d->ceil_mode));
    PB_CHECK(y.w == pool_out(x.w, d->kw, d->sw, d->pw, d->ceil_mode));
    dnnl_memory_desc_t src = pb_cpu_md(x, xl), dst = pb_cpu_md(y, yl);
    dnnl_dims_t strides = {d->sh, d->sw}, kernel = {d->kh, d->kw}, pl = {d->ph, d->pw};
    dnnl_dims_t pr = {pool_pad_r(x.h, y.h, d->kh, d->sh, d->ph),
                      pool_pad_r(x.w, y.w, d->kw, d->sw, d->pw)};
    dnnl_prop_kind_t prop = train ? dnnl_forward_training : dnnl_forward_inference;
    PB_DNNL(dnnl_pooling_forward_desc_init(pd, prop, pool_alg(d), &src, &dst, strides, kernel, pl,
                                           pr));
}

static struct pb_cpu_key pool_key(enum pb_cpu_op op, const struct pb_pool_desc *d,
                                  struct pb_shape x, enum pb_layout xl, struct pb_shape y,
                                  enum pb_layout yl, bool train)
{
    return (struct pb_cpu_key){
        .op = op,
        .v = {x.n, x.c, x.h, x.w, y.h, y.w, (int)xl, (int)yl, (int)d->kind, d->kh, d->kw, d->sh,
              d->sw, d->ph, d->pw, d->ceil_mode, d->exclude_pad, train},
    };
}

struct pool_fwd {
    struct pb_cpu_prim p;
    struct pb_cpu_xfer x, y;  /* the caller's layouts ↔ run */
    enum pb_layout run;
    bool train, rescale;
};

static void drop_fwd(struct pb_backend *be, void *val)
{
    struct pool_fwd *f = val;
    pb_cpu_xfer_destroy(be, &f->x);
    pb_cpu_xfer_destroy(be, &f->y);
    pb_cpu_prim_destroy(be, &f->p);
    free(f);
}

/* Training (max pooling with a workspace) or inference forward of x → y. */
static struct pool_fwd *fwd_get(struct pb_backend *be, const struct pb_pool_desc *d,
                                const struct pb_tensor *x, const struct pb_tensor *y, bool train)
{
    struct pb_cpu_key k = pool_key(PB_CPU_OP_POOL_FWD, d, x->shape, x->layout, y->shape,
                                   y->layout, train);
    struct pool_fwd *f = pb_cpu_cache_get(be, &k);
    if (f)
        return f;
    f = pb_xcalloc(1, sizeof *f);
    f->run = run_layout(x->layout);
    dnnl_pooling_desc_t pd;
    fwd_desc(d, x->shape, f->run, y->shape, f->run, train, &pd);
    pb_cpu_prim_create(be, &f->p, &pd, NULL);
    dnnl_memory_desc_t xu = pb_cpu_md(x->shape, x->layout), xr = pb_cpu_md(x->shape, f->run);
    dnnl_memory_desc_t yu = pb_cpu_md(y->shape, y->layout), yr = pb_cpu_md(y->shape, f->run);
    pb_cpu_xfer_in_init(be, &f->x, &xu, &xr);
    pb_cpu_xfer_out_init(be, &f->y, &yr, &yu);
    f->train = train;
    f->rescale = needs_rescale(d, x->shape, y->shape);
    pb_cpu_cache_put(be, &k, f, drop_fwd);
    return f;
}

size_t pb_cpu_pool_workspace(struct pb_backend *be, const struct pb_pool_desc *d,
                             const struct pb_tensor *x, const struct pb_tensor *y)
{
    if (d->kind != PB_POOL_MAX)
        return 0;
    if (!pb_cpu_begin(be))
        return 0;
    struct pool_fwd *f = fwd_get(be, d, x, y, true);
    return dnnl_memory_desc_get_size(pb_cpu_prim_md(&f->p, dnnl_query_workspace_md, 0));
}

/* x [n, c, h, w] → y [n, c, oh, ow] (x's layout); workspace: pool_workspace bytes for a
 * training max pooling, NULL for inference */
void pb_cpu_pool_fwd(struct pb_backend *be, const struct pb_pool_desc *d,
                     const struct pb_tensor *x, struct pb_tensor *y, void *workspace)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CHECK(y->layout == x->layout);
    bool train = d->kind == PB_POOL_MAX && workspace != NULL;
    struct pool_fwd *f = fwd_get(be, d, x, y, train);
    if (be->failed)
        return;
    struct pb_tensor yr = {pb_cpu_xfer_out_ptr(&f->y, y->data), y->shape, f->run};
    struct pb_cpu_arg a[3] = {{DNNL_ARG_SRC, pb_cpu_xfer_in(be, &f->x, x->data)},
                              {DNNL_ARG_DST, yr.data},
                              {DNNL_ARG_WORKSPACE, workspace}};
    pb_cpu_prim_exec(be, &f->p, train ? 3 : 2, a);
    if (f->rescale)
        rescale(be, d, x->shape, &yr, yr.data);
    pb_cpu_xfer_out(be, &f->y, y->data);
}

struct pool_bwd {
    struct pb_cpu_prim p;
    struct pb_cpu_xfer dy, dx;  /* dy's layout → run, run → dx's layout */
    enum pb_layout run;
    float *scaled;          /* dy rescaled (average pooling with overhanging windows) */
    bool rescale;
    int scatter_ur;         /* max pooling: > 0 when scatter() replaces the primitive */
    bool ws_s32;            /* the workspace holds s32 window indices (else u8) */
};

/* One block of blk channels at one window position i (w the argmax per lane, g the
 * gradient, q the dx elements of the position). window_put, for windows that tile:
 * q[k] = 0 + g[k] where w[k] = i, else 0, and 0 on lanes past the channels. With AVX-512
 * a full block of 16 is one masked vector move with the same values; GCC compiles the
 * loop to scalar code, in which vgg16 small spent 9% of a training run's CPU samples
 * (perf, one thread, on an AVX-512 Zen 4). window_add, for overlapping windows with
 * AVX-512 and a full block of 16: q[k] += g[k] where w[k] = i, else q[k] unchanged, one
 * masked vector add per position instead of a scalar add per lane (the same terms in the
 * same order: the same bits), 10-12% faster on 64×32×32 at batches 32 and 64. */
#if defined(__AVX512F__)
static inline __mmask16 argmax_is(const uint8_t *w, int i)
{
    __m512i lanes = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)w));
    return _mm512_cmpeq_epi32_mask(lanes, _mm512_set1_epi32(i));
}
#endif

static inline void window_put(float *q, const float *g, const uint8_t *w, int i, int lanes,
                              int blk)
{
#if defined(__AVX512F__)
    if (lanes == 16 && blk == 16) {
        __m512 v = _mm512_add_ps(_mm512_setzero_ps(), _mm512_loadu_ps(g));
        _mm512_storeu_ps(q, _mm512_maskz_mov_ps(argmax_is(w, i), v));
        return;
    }
#endif
    for (int k = 0; k < blk; k++)
        q[k] = k < lanes && w[k] == i ? 0.0f + g[k] : 0.0f;
}

/* All kk positions of one window inside the plane (tab: position → offset from its
 * corner), one block: base[tab[w[k]] + k] += g[k] for the lanes k < lanes. */
static inline void window_add(float *base, const int *tab, int kk, const float *g,
                              const uint8_t *w, int lanes, int blk)
{
#if defined(__AVX512F__)
    if (lanes == 16 && blk == 16) {
        __m512 gv = _mm512_loadu_ps(g);
        for (int i = 0; i < kk; i++) {
            float *q = base + tab[i];
            __m512 v = _mm512_loadu_ps(q);
            _mm512_storeu_ps(q, _mm512_mask_add_ps(v, argmax_is(w, i), v, gv));
        }
        return;
    }
#endif
    (void)kk, (void)blk;
    for (int k = 0; k < lanes; k++)
        base[tab[w[k]] + k] += g[k];
}

/* Max pooling's backward from the workspace, which holds for every y element the index
 * kh·KW + kw of its argmax inside the (padded) window: dx = 0, then dx[argmax] += dy.
 * The sums (overlapping windows) are taken in the order of the oneDNN kernel it
 * replaces, so the bits stay those of the primitive: output rows ascending, each row in
 * chunks of ur columns ascending, a chunk's columns descending (the jit kernel's loop
 * over kw outside its ur columns; ur = 1 gives plain ascending order). Windows that
 * tile the input (k = s, no padding) each own their dx elements, which are then written
 * once: dx = 0 + dy at the argmax (as oneDNN's 0 + dy), else 0. One (n, channel block)
 * plane per task: independent of the thread count.
 * g [n, c, oh, ow], ws, dx [n, c, h, w], all in dx's layout. */
static void scatter_plane(const struct pb_pool_desc *d, const struct pool_bwd *b, int lanes,
                          const float *g, const uint8_t *w8, const int32_t *w32, float *o,
                          struct pb_shape xs, struct pb_shape ys, int blk)
{
    size_t rowf = (size_t)xs.w * (size_t)blk;
    int ur = b->scatter_ur, kk = d->kh * d->kw;
    int tab[256];  /* window index → offset in the plane from the window's corner */
    bool tiled = !b->ws_s32 && d->kh == d->sh && d->kw == d->sw && d->ph == 0 && d->pw == 0;
    if (!b->ws_s32)
        for (int i = 0; i < kk; i++)
            tab[i] = (int)((size_t)(i / d->kw) * rowf) + i % d->kw * blk;
    if (tiled) {
        int ch = ys.h * d->sh < xs.h ? ys.h * d->sh : xs.h;  /* rows the windows cover */
        int cw = ys.w * d->sw < xs.w ? ys.w * d->sw : xs.w;
        for (int ih = ch; ih < xs.h; ih++)
            memset(o + ih * rowf, 0, rowf * sizeof *o);
        for (int ih = 0; ih < ch; ih++)
            memset(o + ih * rowf + (size_t)cw * blk, 0, (size_t)(xs.w - cw) * blk * sizeof *o);
        for (int oh = 0; oh < ys.h; oh++)
            for (int ow = 0; ow < ys.w; ow++) {
                size_t at = ((size_t)oh * ys.w + ow) * blk;
                float *base = o + (size_t)oh * d->sh * rowf + (size_t)ow * d->sw * blk;
                bool inside = (oh + 1) * d->sh <= xs.h && (ow + 1) * d->sw <= xs.w;
                for (int i = 0; i < kk; i++) {
                    if (!inside && (oh * d->sh + i / d->kw >= xs.h ||
                                    ow * d->sw + i % d->kw >= xs.w))
                        continue;
                    window_put(base + tab[i], g + at, w8 + at, i, lanes, blk);
                }
            }
        return;
    }
    /* dx rows are zeroed just before the first window reaching them, so that the rows a
     * window row adds into are still in L1 (a whole plane, 64 KiB at 32×32×16, is not) */
    int zeroed = 0;
    for (int oh = 0; oh < ys.h; oh++) {
        int ih0 = oh * d->sh - d->ph;
        bool rows_in = ih0 >= 0 && ih0 + d->kh <= xs.h;
        int reach = ih0 + d->kh < xs.h ? ih0 + d->kh : xs.h;
        if (reach > zeroed) {
            memset(o + (size_t)zeroed * rowf, 0, (size_t)(reach - zeroed) * rowf * sizeof *o);
            zeroed = reach;
        }
        for (int c0 = 0; c0 < ys.w; c0 += ur) {
            int c1 = c0 + ur < ys.w ? c0 + ur : ys.w;
            for (int ow = c1 - 1; ow >= c0; ow--) {
                int iw0 = ow * d->sw - d->pw;
                size_t at = ((size_t)oh * ys.w + ow) * blk;
                if (rows_in && iw0 >= 0 && iw0 + d->kw <= xs.w && !b->ws_s32) {
                    float *base = o + (size_t)ih0 * rowf + (size_t)iw0 * blk;
                    window_add(base, tab, kk, g + at, w8 + at, lanes, blk);
                    continue;
                }
                for (int k = 0; k < lanes; k++) {
                    int idx = b->ws_s32 ? w32[at + k] : w8[at + k];
                    int ih = ih0 + idx / d->kw, iw = iw0 + idx % d->kw;
                    if (ih >= 0 && ih < xs.h && iw >= 0 && iw < xs.w)
                        o[(size_t)ih * rowf + (size_t)iw * blk + k] += g[at + k];
                }
            }
        }
    }
    memset(o + (size_t)zeroed * rowf, 0, (size_t)(xs.h - zeroed) * rowf * sizeof *o);
}

static void scatter(struct pb_backend *be, const struct pb_pool_desc *d, const struct pool_bwd *b,
                    const float *g, const void *ws, struct pb_tensor *dx, struct pb_shape ys)
{
    struct pb_shape xs = dx->shape;
    int blk = pb_layout_block(dx->layout), nb = (xs.c + blk - 1) / blk;
    size_t xplane = (size_t)xs.h * (size_t)xs.w * (size_t)blk;
    size_t yplane = (size_t)ys.h * (size_t)ys.w * (size_t)blk;
    int planes = xs.n * nb;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int pl = 0; pl < planes; pl++) {
        int left = xs.c - pl % nb * blk;
        size_t off = (size_t)pl * yplane;
        scatter_plane(d, b, left < blk ? left : blk, g + off, (const uint8_t *)ws + off,
                      (const int32_t *)ws + off, dx->data + (size_t)pl * xplane, xs, ys, blk);
    }
}

/* The column chunk of the oneDNN max pooling backward b->p runs (see scatter), or 0
 * when scatter does not reproduce it (another implementation, another workspace). */
static int scatter_chunk(const struct pool_bwd *b, const dnnl_memory_desc_t *ws_md,
                         struct pb_shape ys, enum pb_layout l, bool *s32)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(b->p.pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
        !impl)
        return 0;
    dnnl_memory_desc_t want = pb_cpu_md(ys, l);
    want.data_type = ws_md->data_type;
    *s32 = ws_md->data_type == dnnl_s32;
    if ((ws_md->data_type != dnnl_u8 && !*s32) || !dnnl_memory_desc_equal(ws_md, &want))
        return 0;
    if (!strncmp(impl, "jit:", 4))
        return strstr(impl, "avx512") ? 6 : 3;  /* its ur for a max backward */
    return !strncmp(impl, "simple_nchw", 11) ? 1 : 0;
}

static void drop_bwd(struct pb_backend *be, void *val)
{
    struct pool_bwd *b = val;
    pb_cpu_xfer_destroy(be, &b->dy);
    pb_cpu_xfer_destroy(be, &b->dx);
    pb_cpu_scratch_free(be, b->scaled);
    pb_cpu_prim_destroy(be, &b->p);
    free(b);
}

/* x [n, c, h, w], y [n, c, oh, ow] of the forward (oneDNN reads neither: the workspace
 * carries the argmax), dy [n, c, oh, ow], workspace from the training forward (max
 * pooling), dx [n, c, h, w] (x's layout) */
void pb_cpu_pool_bwd(struct pb_backend *be, const struct pb_pool_desc *d,
                     const struct pb_tensor *x, const struct pb_tensor *y,
                     const struct pb_tensor *dy, const void *workspace, struct pb_tensor *dx)
{
    PB_CHECK(pb_shape_eq(x->shape, dx->shape) && pb_shape_eq(y->shape, dy->shape));
    if (!pb_cpu_begin(be))
        return;
    PB_CHECK(d->kind != PB_POOL_MAX || workspace != NULL);
    struct pb_cpu_key k = pool_key(PB_CPU_OP_POOL_BWD, d, dx->shape, dx->layout, dy->shape,
                                   dy->layout, true);
    struct pool_bwd *b = pb_cpu_cache_get(be, &k);
    if (!b) {
        b = pb_xcalloc(1, sizeof *b);
        b->run = run_layout(dx->layout);
        dnnl_pooling_desc_t fd, bd;
        fwd_desc(d, dx->shape, b->run, dy->shape, b->run, true, &fd);
        dnnl_primitive_desc_t hint;
        PB_DNNL(dnnl_primitive_desc_create(&hint, &fd, pb_cpu_of(be)->attr, pb_cpu_of(be)->eng,
                                           NULL));
        dnnl_memory_desc_t dsrc = pb_cpu_md(dx->shape, b->run),
                           ddst = pb_cpu_md(dy->shape, b->run),
                           dyu = pb_cpu_md(dy->shape, dy->layout),
                           dxu = pb_cpu_md(dx->shape, dx->layout);
        dnnl_dims_t strides = {d->sh, d->sw}, kernel = {d->kh, d->kw}, pl = {d->ph, d->pw};
        dnnl_dims_t pr = {pool_pad_r(dx->shape.h, dy->shape.h, d->kh, d->sh, d->ph),
                          pool_pad_r(dx->shape.w, dy->shape.w, d->kw, d->sw, d->pw)};
        PB_DNNL(dnnl_pooling_backward_desc_init(&bd, pool_alg(d), &dsrc, &ddst, strides, kernel,
                                                pl, pr));
        pb_cpu_prim_create(be, &b->p, &bd, hint);
        dnnl_primitive_desc_destroy(hint);
        pb_cpu_xfer_in_init(be, &b->dy, &dyu, &ddst);
        pb_cpu_xfer_out_init(be, &b->dx, &dsrc, &dxu);
        b->rescale = needs_rescale(d, dx->shape, dy->shape);
        if (d->kind == PB_POOL_MAX)
            b->scatter_ur = scatter_chunk(b, pb_cpu_prim_md(&b->p, dnnl_query_workspace_md, 0),
                                          dy->shape, b->run, &b->ws_s32);
        if (b->rescale)
            b->scaled = pb_cpu_scratch(be, pb_layout_count(dy->shape, b->run) * sizeof(float));
        pb_cpu_cache_put(be, &k, b, drop_bwd);
    }
    if (be->failed)
        return;
    const void *g = pb_cpu_xfer_in(be, &b->dy, dy->data);
    struct pb_tensor dxr = {pb_cpu_xfer_out_ptr(&b->dx, dx->data), dx->shape, b->run};
    if (b->scatter_ur > 0) {
        scatter(be, d, b, g, workspace, &dxr, dy->shape);
        pb_cpu_xfer_out(be, &b->dx, dx->data);
        return;
    }
    if (b->rescale) {
        size_t n = pb_layout_count(dy->shape, b->run);
        memcpy(b->scaled, g, n * sizeof(float));
        struct pb_tensor t = {(float *)g, dy->shape, b->run};
        rescale(be, d, dx->shape, &t, b->scaled);
        g = b->scaled;
    }
    struct pb_cpu_arg a[3] = {
        {DNNL_ARG_DIFF_DST, g}, {DNNL_ARG_DIFF_SRC, dxr.data}, {DNNL_ARG_WORKSPACE, workspace}};
    pb_cpu_prim_exec(be, &b->p, d->kind == PB_POOL_MAX ? 3 : 2, a);
    pb_cpu_xfer_out(be, &b->dx, dx->data);
}
