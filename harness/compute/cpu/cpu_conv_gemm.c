/* harness/compute/cpu/cpu_conv_gemm.c — convolutions bound by their weights (few output
 * pixels in the batch, n·oh·ow ≤ GEMM_MAX_PIXELS, and weights GEMM_MIN_WEIGHT_RATIO times
 * the activations or more: VGG-16's 512-channel layers on CIFAR at a pipeline's batch of
 * 2) as matrix products on the caller's OIHW weights, which they read once.
 *
 * Why: such a convolution is bound by its weights (512 → 512 3×3 is 9.4 MB for 8–32
 * output pixels). oneDNN's kernels want the weights in their blocked formats, so each pass
 * costs a reorder of them besides the kernel's own read (and the weight gradient a
 * reorder that adds onto OIHW): three trips through memory instead of one. Measured on
 * one Zen 4 core (fwd + bwd data + bwd weights): 512 → 512 3×3 on 2×2 at batch 2 in 2.8
 * against 6.5 ms, on 4×4 in 6.5 against 9.5 ms, 256 → 512 on 4×4 in 3.4 against 4.6 ms;
 * at 256 → 256 on 8×8 (128 pixels; weights 9 times the activations) the two are even
 * and oneDNN wins from there on, as on DenseNet-121's last block at batch 2 (4×4, weights
 * 3.5–7 times the activations): a run 4% slower.
 *
 * Shapes: K = cin·kh·kw, P = n·oh·ow (q = (n·oh + oh)·ow + ow);
 *   col [K × P]: col[(c·kh + i)·kw + j][q] = x[n, c, oh·sh − ph + i, ow·sw − pw + j] (0 off
 *   the image); y[o][q] = Σ_k W[o][k]·col[k][q] + b[o];
 *   dcol [K × P] = Wᵀ·dy, dx the sum of dcol's taps over the windows (col2im);
 *   dW [cout × K] += dy·colᵀ, db[o] += Σ_q dy[o][q].
 * x, y, dy, dx are read and written in their own layouts (no reorders); padded channels
 * of a blocked output get zeros.
 * Determinism: the products run in tiles of GEMM_TILE rows, each one single-threaded
 * sgemm call whatever the thread count, and the gathers and sums go in a fixed order,
 * so the bits depend on the shape alone. */
#include <string.h>

#include "harness/compute/cpu/cpu_internal.h"

/* The largest n·oh·ow that runs here, and the least ratio of the weights' floats to the
 * activations' n·oh·ow·(cin + cout) (see the figures above). */
#define GEMM_MAX_PIXELS 32
#define GEMM_MIN_WEIGHT_RATIO 32
/* Rows of a product per sgemm call. */
#define GEMM_TILE 64

struct pb_cpu_conv_gemm {
    bool use;
    struct pb_conv_desc d;
    struct pb_shape x, y;
    enum pb_layout y_layout;
    int K, P;
    float *col, *dcol;  /* [K × P] */
    float *ym;          /* y or dy as a matrix [cout × P] */
};

static void drop_plan(struct pb_backend *be, void *val)
{
    struct pb_cpu_conv_gemm *g = val;
    pb_cpu_scratch_free(be, g->col);
    pb_cpu_scratch_free(be, g->dcol);
    pb_cpu_scratch_free(be, g->ym);
    free(g);
}

static bool plan_init(struct pb_backend *be, struct pb_cpu_conv_gemm *g,
                      const struct pb_conv_desc *d, struct pb_shape x)
{
    int oh = (x.h + 2 * d->ph - d->kh) / d->sh + 1, ow = (x.w + 2 * d->pw - d->kw) / d->sw + 1;
    long pixels = (long)x.n * oh * ow, weights = (long)d->cin * d->cout * d->kh * d->kw;
    if (oh <= 0 || ow <= 0 || pixels > GEMM_MAX_PIXELS ||
        weights < GEMM_MIN_WEIGHT_RATIO * pixels * (d->cin + d->cout))
        return false;
    g->d = *d;
    g->x = x;
    g->y = (struct pb_shape){x.n, d->cout, oh, ow};
    g->y_layout = pb_cpu_conv_onednn_layout(be, d, x);
    g->K = d->cin * d->kh * d->kw;
    g->P = (int)pixels;
    g->col = pb_cpu_scratch(be, (size_t)g->K * g->P * sizeof(float));
    g->dcol = pb_cpu_scratch(be, (size_t)g->K * g->P * sizeof(float));
    g->ym = pb_cpu_scratch(be, (size_t)d->cout * g->P * sizeof(float));
    return true;
}

const struct pb_cpu_conv_gemm *pb_cpu_conv_gemm_plan(struct pb_backend *be,
                                                     const struct pb_conv_desc *d,
                                                     struct pb_shape x)
{
    struct pb_cpu_key k = {.op = PB_CPU_OP_CONV_GEMM,
                           .v = {x.n, x.c, x.h, x.w, d->cout, d->kh, d->kw, d->sh, d->sw, d->ph,
                                 d->pw, d->bias}};
    struct pb_cpu_conv_gemm *g = pb_cpu_cache_get(be, &k);
    if (!g) {
        g = pb_xcalloc(1, sizeof *g);
        g->use = plan_init(be, g, d, x);
        pb_cpu_cache_put(be, &k, g, drop_plan);
    }
    return g->use ? g : NULL;
}

enum pb_layout pb_cpu_conv_gemm_layout(const struct pb_cpu_conv_gemm *g)
{
    return g->y_layout;
}

/* C [m × n] = op(A)·op(B) + beta·C, row-major, in tiles of GEMM_TILE rows of C shared out
 * among the threads (each tile one sgemm call on the calling thread). */
static void gemm_tiles(struct pb_backend *be, bool ta, bool tb, int m, int n, int k,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc)
{
    int ntiles = (m + GEMM_TILE - 1) / GEMM_TILE;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int t = 0; t < ntiles; t++) {
        int i0 = t * GEMM_TILE, rows = m - i0 < GEMM_TILE ? m - i0 : GEMM_TILE;
        const float *at = ta ? a + i0 : a + (size_t)i0 * lda;
        PB_DNNL(dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', rows, n, k, 1.0f, at, lda, b, ldb,
                           beta, c + (size_t)i0 * ldc, ldc));
    }
}

/* x (its layout) → col [K × P] */
static void im2col(struct pb_backend *be, const struct pb_cpu_conv_gemm *g,
                   const struct pb_tensor *x)
{
    const struct pb_conv_desc *d = &g->d;
    size_t wstride = (size_t)pb_layout_block(x->layout);
    int oh = g->y.h, ow = g->y.w;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int k = 0; k < g->K; k++) {
        int c = k / (d->kh * d->kw), i = k / d->kw % d->kh, j = k % d->kw;
        float *row = g->col + (size_t)k * g->P;
        for (int n = 0; n < g->x.n; n++)
            for (int r = 0; r < oh; r++, row += ow) {
                int ih = r * d->sh - d->ph + i;
                if (ih < 0 || ih >= g->x.h) {
                    memset(row, 0, (size_t)ow * sizeof(float));
                    continue;
                }
                const float *src = x->data + pb_cpu_offset(g->x, x->layout, n, c, ih, 0);
                for (int s = 0; s < ow; s++) {
                    int iw = s * d->sw - d->pw + j;
                    row[s] = iw >= 0 && iw < g->x.w ? src[(size_t)iw * wstride] : 0.0f;
                }
            }
    }
}

/* dy (its layout) → ym [cout × P] */
static void gather_dy(struct pb_backend *be, const struct pb_cpu_conv_gemm *g,
                      const struct pb_tensor *dy)
{
    size_t wstride = (size_t)pb_layout_block(dy->layout);
    int oh = g->y.h, ow = g->y.w;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int o = 0; o < g->y.c; o++) {
        float *row = g->ym + (size_t)o * g->P;
        for (int n = 0; n < g->y.n; n++)
            for (int r = 0; r < oh; r++, row += ow) {
                const float *src = dy->data + pb_cpu_offset(g->y, dy->layout, n, o, r, 0);
                for (int s = 0; s < ow; s++)
                    row[s] = src[(size_t)s * wstride];
            }
    }
}

/* x [n, cin, h, w] (any layout), w [cout, K] OIHW, b [cout] or NULL → y in the plan's layout */
void pb_cpu_conv_gemm_fwd(struct pb_backend *be, const struct pb_cpu_conv_gemm *g,
                          const struct pb_tensor *x, const float *w, const float *b,
                          struct pb_tensor *y)
{
    if (be->failed)
        return;
    PB_CHECK(pb_shape_eq(y->shape, g->y) && y->layout == g->y_layout);
    im2col(be, g, x);
    gemm_tiles(be, false, false, g->y.c, g->P, g->K, w, g->K, g->col, g->P, 0.0f, g->ym, g->P);
    size_t wstride = (size_t)pb_layout_block(y->layout);
    int blk = pb_layout_block(y->layout), cpad = (g->y.c + blk - 1) / blk * blk;
    int oh = g->y.h, ow = g->y.w;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int o = 0; o < cpad; o++) {
        const float *row = g->ym + (size_t)(o < g->y.c ? o : 0) * g->P;
        float bias = b && o < g->y.c ? b[o] : 0.0f;
        for (int n = 0; n < g->y.n; n++)
            for (int r = 0; r < oh; r++, row += ow) {
                float *dst = y->data + pb_cpu_offset(g->y, y->layout, n, o, r, 0);
                for (int s = 0; s < ow; s++)
                    dst[(size_t)s * wstride] = o < g->y.c ? row[s] + bias : 0.0f;
            }
    }
}

/* dy [n, cout, oh, ow] (any layout), w OIHW → dx [n, cin, h, w] (layout set by the caller) */
void pb_cpu_conv_gemm_bwd_data(struct pb_backend *be, const struct pb_cpu_conv_gemm *g,
                               const struct pb_tensor *dy, const float *w, struct pb_tensor *dx)
{
    if (be->failed)
        return;
    PB_CHECK(pb_shape_eq(dy->shape, g->y) && pb_shape_eq(dx->shape, g->x));
    gather_dy(be, g, dy);
    gemm_tiles(be, true, false, g->K, g->P, g->y.c, w, g->K, g->ym, g->P, 0.0f, g->dcol, g->P);
    const struct pb_conv_desc *d = &g->d;
    size_t wstride = (size_t)pb_layout_block(dx->layout);
    int blk = pb_layout_block(dx->layout), cpad = (g->x.c + blk - 1) / blk * blk;
    int rows = g->x.n * cpad, oh = g->y.h, ow = g->y.w;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int rc = 0; rc < rows; rc++) {
        int n = rc / cpad, c = rc % cpad;
        for (int ih = 0; ih < g->x.h; ih++) {
            float *dst = dx->data + pb_cpu_offset(g->x, dx->layout, n, c, ih, 0);
            for (int iw = 0; iw < g->x.w; iw++)
                dst[(size_t)iw * wstride] = 0.0f;
        }
        if (c >= g->x.c)
            continue;
        for (int i = 0; i < d->kh; i++)
            for (int j = 0; j < d->kw; j++) {
                const float *row = g->dcol + ((size_t)(c * d->kh + i) * d->kw + j) * g->P +
                                   (size_t)n * oh * ow;
                for (int r = 0; r < oh; r++, row += ow) {
                    int ih = r * d->sh - d->ph + i;
                    if (ih < 0 || ih >= g->x.h)
                        continue;
                    float *dst = dx->data + pb_cpu_offset(g->x, dx->layout, n, c, ih, 0);
                    for (int s = 0; s < ow; s++) {
                        int iw = s * d->sw - d->pw + j;
                        if (iw >= 0 && iw < g->x.w)
                            dst[(size_t)iw * wstride] += row[s];
                    }
                }
            }
    }
}

/* x, dy (any layouts); dw_acc [cout, K] OIHW += dL/dw, db_acc [cout] += dL/db (NULL: none).
 * col is gathered again from x: other micro-batches' forwards may have run since this
 * one's (a pipeline's schedule), and it is small beside the weights. */
void pb_cpu_conv_gemm_bwd_weights(struct pb_backend *be, const struct pb_cpu_conv_gemm *g,
                                  const struct pb_tensor *x, const struct pb_tensor *dy,
                                  float *dw_acc, float *db_acc)
{
    if (be->failed)
        return;
    PB_CHECK(pb_shape_eq(x->shape, g->x) && pb_shape_eq(dy->shape, g->y));
    im2col(be, g, x);
    gather_dy(be, g, dy);
    gemm_tiles(be, false, true, g->y.c, g->K, g->P, g->ym, g->P, g->col, g->P, 1.0f, dw_acc,
               g->K);
    if (db_acc)
        for (int o = 0; o < g->y.c; o++) {
            const float *row = g->ym + (size_t)o * g->P;
            float s = 0.0f;
            for (int q = 0; q < g->P; q++)
                s += row[q];
            db_acc[o] += s;
        }
}
