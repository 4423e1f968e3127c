/* tests/compute/test_backend_cpu.c — the oneDNN CPU backend (harness/compute/cpu/) op by op against
 * naive C loops written here (double accumulation), on small random shapes, in the
 * plain and blocked layouts; plus the accumulation (+=) of gradients and
 * determinism (the same call twice, and on a fresh instance, gives identical bits), and
 * the decoder's attention on projected keys against attn_fwd bit for bit. One shape
 * of each convolution path and pooling kind runs in the fast suite, the others in the slow. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/backend.h"
#include "harness/compute/cpu/cpu_internal.h"
#include "harness/base/rng.h"
#include "harness/compute/registry.h"
#include "tests/support/op_refs.h"
#include "tests/support/test_util.h"

/* ---- helpers ---- */

/* The device buffers a test allocated, freed by be_done (tests stay leak-free). */
#define MAX_TRACKED 512
static struct {
    struct pb_backend *be;
    void *p;
} tracked[MAX_TRACKED];
static int ntracked;

static struct pb_backend *be_new(void)
{
    struct pb_err e;
    struct pb_backend_cfg bc = {.device = 0, .threads = 2};
    struct pb_backend *be = pb_backend_create("cpu", &bc, &e);
    ck_assert_msg(be != NULL, "%s", e.msg);
    return be;
}

static void *dev_alloc(struct pb_backend *be, size_t bytes)
{
    struct pb_err e;
    void *p = pb_backend_alloc(be, bytes, PB_MEM_ACTS, &e);
    ck_assert_msg(p != NULL, "%s", e.msg);
    ck_assert(ntracked < MAX_TRACKED);
    tracked[ntracked].be = be;
    tracked[ntracked++].p = p;
    return p;
}

static void dev_free(struct pb_backend *be, void *p)
{
    for (int i = 0; i < ntracked; i++)
        if (tracked[i].p == p) {
            tracked[i] = tracked[--ntracked];
            break;
        }
    pb_backend_free(be, p);
}

/* Frees what the test allocated on be, then be. */
static void be_done(struct pb_backend *be)
{
    for (int i = ntracked - 1; i >= 0; i--)
        if (tracked[i].be == be) {
            pb_backend_free(be, tracked[i].p);
            tracked[i] = tracked[--ntracked];
        }
    pb_backend_destroy(be);
}

/* n uniforms in [lo, hi), a pure function of tag */
static float *host_rand(size_t n, uint64_t tag, float lo, float hi)
{
    float *p = malloc((n + 1) * sizeof *p);
    pb_rng_fill_uniform(pb_rng_key(PB_RNG_DATA, 1234, tag, 0, 0), 0, p, n, lo, hi);
    return p;
}

static float *dev_from(struct pb_backend *be, const float *host, size_t n)
{
    float *d = dev_alloc(be, n * sizeof *d);
    be->ops->upload(be, d, host, n * sizeof *d);
    return d;
}

static float *host_from(struct pb_backend *be, const float *dev, size_t n)
{
    float *h = malloc((n + 1) * sizeof *h);
    be->ops->download(be, h, dev, n * sizeof *h);
    return h;
}

static struct pb_tensor tensor_new(struct pb_backend *be, struct pb_shape s, enum pb_layout l)
{
    struct pb_tensor t = {dev_alloc(be, pb_layout_count(s, l) * sizeof(float)), s, l};
    be->ops->fill(be, t.data, 0.0f, pb_layout_count(s, l));
    return t;
}

/* A tensor of layout l holding plain [n, c, h, w] data (reordered on the device). */
static struct pb_tensor tensor_from(struct pb_backend *be, const float *plain, struct pb_shape s,
                                    enum pb_layout l)
{
    struct pb_tensor p = {dev_from(be, plain, pb_shape_count(s)), s, PB_LAYOUT_PLAIN};
    struct pb_tensor t = tensor_new(be, s, l);
    be->ops->reorder(be, &p, &t);
    dev_free(be, p.data);
    return t;
}

/* The contents of t as plain [n, c, h, w] host data. */
static float *tensor_plain(struct pb_backend *be, const struct pb_tensor *t)
{
    struct pb_tensor p = tensor_new(be, t->shape, PB_LAYOUT_PLAIN);
    be->ops->reorder(be, t, &p);
    float *h = host_from(be, p.data, pb_shape_count(t->shape));
    dev_free(be, p.data);
    return h;
}

/* The padded channels of a blocked tensor (c..⌈c/block⌉·block) are zero. */
static void assert_pad_zero(struct pb_backend *be, const struct pb_tensor *t, const char *what)
{
    struct pb_shape s = t->shape;
    int b = pb_layout_block(t->layout), cb = (s.c + b - 1) / b;
    float *h = host_from(be, t->data, pb_layout_count(s, t->layout));
    for (int n = 0; n < s.n; n++)
        for (int c = s.c; c < cb * b; c++)
            for (int i = 0; i < s.h * s.w; i++) {
                float v = h[((size_t)(n * cb + c / b) * s.h * s.w + i) * b + c % b];
                ck_assert_msg(v == 0.0f, "%s: padded channel %d of n%d: %g", what, c, n, v);
            }
    free(h);
}

static float *to_float(const double *d, size_t n)
{
    float *f = malloc((n + 1) * sizeof *f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)d[i];
    return f;
}

static size_t idx4(struct pb_shape s, int n, int c, int h, int w)
{
    return (((size_t)n * s.c + c) * s.h + h) * s.w + w;
}

/* Bit-exact equality (copies, selections, single roundings done alike), reporting
 * the first differing element. */
static void assert_same(const char *what, const float *a, const float *b, size_t n)
{
    pb_assert_same_bits(what, a, b, n);
}

static const enum pb_layout all_layouts[3] = {PB_LAYOUT_PLAIN, PB_LAYOUT_NCHW8C, PB_LAYOUT_NCHW16C};

/* ---- gemm, bias ---- */

/* C = alpha op(A) op(B) + beta C with K = 29 float products of magnitude <= 1:
 * float32 summation-order error ≲ K·2^-24 ≈ 2e-6 of the sum: rtol 1e-5, atol 1e-5. */
START_TEST(test_gemm)
{
    struct pb_backend *be = be_new();
    bool ta = _i & 1, tb = _i & 2;
    int m = 13, n = 17, k = 29;
    int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
    size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb, nc = (size_t)m * ldc;
    float *a = host_rand(na, 10, -1, 1), *b = host_rand(nb, 11, -1, 1);
    float *c = host_rand(nc, 12, -1, 1);
    float alpha = 0.7f, beta = 0.3f;
    float *want = malloc(nc * sizeof *want);
    memcpy(want, c, nc * sizeof *want);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++)
                s += (double)(ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]) *
                     (tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j]);
            want[(size_t)i * ldc + j] = (float)(alpha * s + beta * (double)c[(size_t)i * ldc + j]);
        }
    float *da = dev_from(be, a, na), *db = dev_from(be, b, nb), *dc = dev_from(be, c, nc);
    be->ops->gemm(be, ta, tb, m, n, k, alpha, da, lda, db, ldb, beta, dc, ldc);
    float *got = host_from(be, dc, nc);
    pb_assert_close("gemm", got, want, nc, 1e-5, 1e-5);
    free(a), free(b), free(c), free(want), free(got);
    be_done(be);
}
END_TEST

/* bias_add is one float add per element (exact); bias_grad sums 37 rows in double
 * and adds once: rtol 1e-6. */
START_TEST(test_bias)
{
    struct pb_backend *be = be_new();
    int n = 37, c = 70;
    float *y = host_rand((size_t)n * c, 20, -1, 1), *b = host_rand(c, 21, -1, 1);
    float *acc = host_rand(c, 22, -1, 1);
    float *dy = dev_from(be, y, (size_t)n * c), *db = dev_from(be, b, c);
    float *dacc = dev_from(be, acc, c);
    be->ops->bias_add(be, dy, db, n, c);
    float *got = host_from(be, dy, (size_t)n * c);
    float *want = malloc((size_t)n * c * sizeof *want);
    for (int r = 0; r < n; r++)
        for (int j = 0; j < c; j++)
            want[(size_t)r * c + j] = y[(size_t)r * c + j] + b[j];
    assert_same("bias_add", got, want, (size_t)n * c);

    be->ops->upload(be, dy, y, (size_t)n * c * sizeof(float));
    be->ops->bias_grad(be, dy, dacc, n, c);
    float *gacc = host_from(be, dacc, c);
    for (int j = 0; j < c; j++) {
        double s = acc[j];
        for (int r = 0; r < n; r++)
            s += y[(size_t)r * c + j];
        want[j] = (float)s;
    }
    pb_assert_close("bias_grad (+=)", gacc, want, c, 1e-6, 1e-6);
    free(y), free(b), free(acc), free(got), free(want), free(gacc);
    be_done(be);
}
END_TEST

/* ---- convolution ---- */

struct conv_case {
    int n, cin, h, w, cout, kh, kw, sh, sw, ph, pw;
    bool bias;
    enum pb_layout xl;
};

static const struct conv_case conv_cases[] = {
    {2, 5, 9, 11, 7, 3, 3, 1, 1, 1, 1, true, PB_LAYOUT_PLAIN},
    {2, 13, 9, 9, 16, 1, 7, 1, 1, 0, 3, true, PB_LAYOUT_NCHW8C},
    {2, 13, 9, 10, 9, 7, 1, 1, 1, 3, 0, false, PB_LAYOUT_NCHW16C},
    {2, 16, 10, 10, 8, 3, 3, 2, 2, 1, 1, true, PB_LAYOUT_NCHW8C},
    {2, 16, 10, 10, 8, 3, 3, 2, 2, 1, 1, true, PB_LAYOUT_PLAIN},
    {1, 3, 23, 23, 8, 11, 11, 4, 4, 2, 2, true, PB_LAYOUT_PLAIN},
    {2, 8, 7, 7, 24, 1, 1, 1, 1, 0, 0, true, PB_LAYOUT_NCHW8C},
    {3, 24, 6, 6, 32, 3, 3, 1, 1, 0, 0, false, PB_LAYOUT_NCHW16C},
    {2, 3, 26, 27, 8, 11, 11, 4, 4, 2, 2, false, PB_LAYOUT_NCHW8C},
    {1, 4, 17, 19, 16, 5, 7, 2, 3, 2, 1, true, PB_LAYOUT_PLAIN},
    /* 3×3 "same" at stride 1 on 32 channels, but 8 output tiles of 4 × 4: direct */
    {2, 32, 8, 8, 32, 3, 3, 1, 1, 1, 1, true, PB_LAYOUT_NCHW16C},
    /* Winograd's shapes (cpu_conv.c's winograd_fits): 3×3 "same" at stride 1, ≥ 16
     * channels, cin·cout ≥ 512, ≥ 32 output tiles of 4 × 4; sides not multiples of 4,
     * channels not of 16 */
    {2, 16, 16, 16, 32, 3, 3, 1, 1, 1, 1, true, PB_LAYOUT_PLAIN},
    {2, 24, 14, 18, 40, 3, 3, 1, 1, 1, 1, false, PB_LAYOUT_NCHW16C},
    {32, 32, 4, 4, 48, 3, 3, 1, 1, 1, 1, false, PB_LAYOUT_NCHW8C},
    /* n·oh·ow ≤ 32 and weights ≥ 32 times the activations: matrix products on the OIHW
     * weights (cpu_conv_gemm.c); padded channels, a stride, a 5×5 kernel, no padding */
    {1, 64, 2, 2, 40, 3, 3, 1, 1, 1, 1, true, PB_LAYOUT_NCHW16C},
    {1, 48, 6, 6, 40, 5, 5, 2, 2, 2, 2, false, PB_LAYOUT_PLAIN},
    {1, 96, 3, 3, 24, 3, 3, 1, 1, 0, 0, true, PB_LAYOUT_PLAIN},
    {2, 64, 2, 2, 64, 3, 3, 1, 1, 1, 1, true, PB_LAYOUT_NCHW8C},
    /* thin outputs (cpu_conv.c's thin_fits): ≥ 9 kernel taps, ≤ 8 channels out, ≥ 8 in,
     * ≥ 4 × 4 outputs per image; the backward passes on 8-channel blocks where the
     * machine's are 16 wide: channels out not a multiple of 8, odd sides, a 5×5 kernel,
     * a stride, 4 × 4 outputs */
    {2, 16, 16, 16, 8, 3, 3, 1, 1, 1, 1, true, PB_LAYOUT_NCHW16C},
    {2, 12, 17, 18, 6, 3, 3, 1, 1, 1, 1, false, PB_LAYOUT_PLAIN},
    {1, 8, 20, 16, 5, 5, 5, 1, 1, 2, 2, true, PB_LAYOUT_NCHW8C},
    {1, 24, 33, 32, 8, 3, 3, 2, 2, 1, 1, false, PB_LAYOUT_NCHW16C},
    {3, 32, 4, 4, 8, 3, 3, 1, 1, 1, 1, true, PB_LAYOUT_NCHW8C},
};

/* The cases above from which on Winograd fits, from which on the products run, and from
 * which on the output is thin. */
enum { FIRST_WINOGRAD_CASE = 11, FIRST_GEMM_CASE = 14, FIRST_THIN_CASE = 18 };

static struct pb_conv_desc conv_desc_of(const struct conv_case *cc)
{
    return (struct pb_conv_desc){cc->cin, cc->cout, cc->kh, cc->kw, cc->sh, cc->sw,
                                 cc->ph, cc->pw, cc->bias};
}

static struct pb_shape conv_yshape(const struct conv_case *cc)
{
    return (struct pb_shape){cc->n, cc->cout, (cc->h + 2 * cc->ph - cc->kh) / cc->sh + 1,
                             (cc->w + 2 * cc->pw - cc->kw) / cc->sw + 1};
}

/* Naive convolution in double (tests/support/op_refs.c): y = conv(x, w) + b; dx = conv^T(dy, w);
 * dw, db the weight and bias gradients. */
static void conv_ref(const struct conv_case *cc, const float *x, const float *w, const float *b,
                     const float *dy, double *y, double *dx, double *dw, double *db)
{
    struct pb_conv_desc d = conv_desc_of(cc);
    pb_ref_conv(&d, (struct pb_shape){cc->n, cc->cin, cc->h, cc->w}, x, w, b, dy, y, dx, dw, db);
}

/* Convolutions of K = cin·kh·kw ≤ 363 (and weight gradients over n·oh·ow ≤ 200)
 * products of magnitude ≤ 1: float32 results carry a summation-order error of
 * ≲ K·2^-24·Σ|terms| ≈ 2e-5 absolute: rtol 1e-4, atol 1e-4. */
#define CONV_RTOL 1e-4
#define CONV_ATOL 1e-4

START_TEST(test_conv)
{
    const struct conv_case *cc = &conv_cases[_i];
    struct pb_backend *be = be_new();
    struct pb_conv_desc d = conv_desc_of(cc);
    struct pb_shape xs = {cc->n, cc->cin, cc->h, cc->w}, ys = conv_yshape(cc);
    size_t nx = pb_shape_count(xs), ny = pb_shape_count(ys);
    size_t nw = (size_t)cc->cout * cc->cin * cc->kh * cc->kw, nb = (size_t)cc->cout;
    float *hx = host_rand(nx, 30, -1, 1), *hw = host_rand(nw, 31, -1, 1);
    float *hb = host_rand(nb, 32, -1, 1), *hdy = host_rand(ny, 33, -1, 1);
    float *hdw0 = host_rand(nw, 34, -1, 1), *hdb0 = host_rand(nb, 35, -1, 1);
    double *ry = malloc(ny * sizeof *ry), *rdx = malloc(nx * sizeof *rdx);
    double *rdw = malloc(nw * sizeof *rdw), *rdb = malloc(nb * sizeof *rdb);
    conv_ref(cc, hx, hw, hb, hdy, ry, rdx, rdw, rdb);

    /* Winograd where the shape fits and oneDNN has it for this CPU (AVX-512), else direct;
     * thin outputs on 8-channel blocks where the machine's (AVX-512) are 16 wide */
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    bool avx512 = (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
    enum pb_cpu_conv_algo algo = pb_cpu_conv_algorithm(be, &d, xs);
    if (_i >= FIRST_THIN_CASE)
        ck_assert_msg(algo == (avx512 ? PB_CPU_CONV_THIN : PB_CPU_CONV_DIRECT),
                      "case %d: algorithm %d", _i, (int)algo);
    else if (_i >= FIRST_GEMM_CASE)
        ck_assert_msg(algo == PB_CPU_CONV_GEMM, "case %d: algorithm %d", _i, (int)algo);
    else if (_i >= FIRST_WINOGRAD_CASE)
        ck_assert_msg(algo == (avx512 ? PB_CPU_CONV_WINOGRAD : PB_CPU_CONV_DIRECT),
                      "case %d: algorithm %d", _i, (int)algo);
    else
        ck_assert_msg(algo != PB_CPU_CONV_WINOGRAD, "case %d: Winograd where it does not fit", _i);

    struct pb_tensor x = tensor_from(be, hx, xs, cc->xl);
    enum pb_layout yl = be->ops->conv_layout(be, &d, &x);
    ck_assert(yl == PB_LAYOUT_PLAIN || yl == PB_LAYOUT_NCHW8C || yl == PB_LAYOUT_NCHW16C);
    struct pb_tensor y = tensor_new(be, ys, yl);
    float *w = dev_from(be, hw, nw), *b = dev_from(be, hb, nb);
    be->ops->conv_fwd(be, &d, &x, w, cc->bias ? b : NULL, &y);
    float *got = tensor_plain(be, &y), *want = to_float(ry, ny);
    pb_assert_close("conv fwd", got, want, ny, CONV_RTOL, CONV_ATOL);
    assert_pad_zero(be, &y, "conv fwd y");
    free(got), free(want);

    struct pb_tensor dy = tensor_from(be, hdy, ys, yl), dx = tensor_new(be, xs, cc->xl);
    be->ops->conv_bwd_data(be, &d, &dy, w, &dx);
    got = tensor_plain(be, &dx);
    want = to_float(rdx, nx);
    pb_assert_close("conv bwd data", got, want, nx, CONV_RTOL, CONV_ATOL);
    be->ops->fill(be, dx.data, 5.0f, pb_layout_count(xs, cc->xl));
    be->ops->conv_bwd_data(be, &d, &dy, w, &dx);
    assert_pad_zero(be, &dx, "conv bwd data dx");
    free(got), free(want);

    /* twice onto random starting values: dw_acc = dw0 + 2 dw, db_acc = db0 + 2 db */
    float *dw = dev_from(be, hdw0, nw), *db = dev_from(be, hdb0, nb);
    for (int rep = 0; rep < 2; rep++)
        be->ops->conv_bwd_weights(be, &d, &x, &dy, dw, cc->bias ? db : NULL);
    for (size_t i = 0; i < nw; i++)
        rdw[i] = hdw0[i] + 2 * rdw[i];
    for (size_t i = 0; i < nb; i++)
        rdb[i] = cc->bias ? hdb0[i] + 2 * rdb[i] : hdb0[i];
    got = host_from(be, dw, nw);
    want = to_float(rdw, nw);
    pb_assert_close("conv bwd weights (+=)", got, want, nw, CONV_RTOL, CONV_ATOL);
    free(got), free(want);
    got = host_from(be, db, nb);
    want = to_float(rdb, nb);
    pb_assert_close("conv bwd bias (+=)", got, want, nb, CONV_RTOL, CONV_ATOL);
    free(got), free(want);

    free(hx), free(hw), free(hb), free(hdy), free(hdw0), free(hdb0);
    free(ry), free(rdx), free(rdw), free(rdb);
    be_done(be);
}
END_TEST

/* dx in a layout other than x's, dy in another than y's: reorders on the way. */
START_TEST(test_conv_mixed_layouts)
{
    const struct conv_case *cc = &conv_cases[1];
    struct pb_backend *be = be_new();
    struct pb_conv_desc d = conv_desc_of(cc);
    struct pb_shape xs = {cc->n, cc->cin, cc->h, cc->w}, ys = conv_yshape(cc);
    size_t nx = pb_shape_count(xs), ny = pb_shape_count(ys);
    size_t nw = (size_t)cc->cout * cc->cin * cc->kh * cc->kw;
    float *hx = host_rand(nx, 40, -1, 1), *hw = host_rand(nw, 41, -1, 1);
    float *hb = host_rand(cc->cout, 42, -1, 1);
    float *hdy = host_rand(ny, 43, -1, 1);
    double *ry = malloc(ny * sizeof *ry), *rdx = malloc(nx * sizeof *rdx);
    double *rdw = malloc(nw * sizeof *rdw), *rdb = malloc(cc->cout * sizeof *rdb);
    conv_ref(cc, hx, hw, hb, hdy, ry, rdx, rdw, rdb);
    float *w = dev_from(be, hw, nw);
    for (int l = 0; l < 3; l++) {
        struct pb_tensor dy = tensor_from(be, hdy, ys, all_layouts[l]);
        struct pb_tensor dx = tensor_new(be, xs, all_layouts[(l + 1) % 3]);
        be->ops->conv_bwd_data(be, &d, &dy, w, &dx);
        float *got = tensor_plain(be, &dx), *want = to_float(rdx, nx);
        pb_assert_close("conv bwd data, mixed layouts", got, want, nx, CONV_RTOL, CONV_ATOL);
        free(got), free(want);
        dev_free(be, dy.data);
        dev_free(be, dx.data);
    }
    free(hx), free(hw), free(hb), free(hdy), free(ry), free(rdx), free(rdw), free(rdb);
    be_done(be);
}
END_TEST

/* ---- pooling ---- */

struct pool_case {
    struct pb_shape x;
    struct pb_pool_desc d;
    enum pb_layout l;
};

static const struct pool_case pool_cases[] = {
    {{2, 13, 10, 11}, {PB_POOL_MAX, 3, 3, 2, 2, 1, 1, true, false}, PB_LAYOUT_NCHW8C},
    {{2, 5, 7, 7}, {PB_POOL_MAX, 2, 2, 2, 2, 0, 0, true, false}, PB_LAYOUT_PLAIN},
    {{1, 3, 5, 5}, {PB_POOL_MAX, 2, 2, 2, 2, 1, 1, true, false}, PB_LAYOUT_PLAIN},
    {{2, 6, 9, 9}, {PB_POOL_MAX, 3, 3, 2, 2, 0, 0, false, false}, PB_LAYOUT_NCHW16C},
    {{2, 13, 6, 6}, {PB_POOL_AVG, 3, 3, 2, 2, 1, 1, true, false}, PB_LAYOUT_NCHW8C},
    {{2, 13, 6, 7}, {PB_POOL_AVG, 3, 3, 2, 2, 1, 1, true, true}, PB_LAYOUT_PLAIN},
    {{2, 5, 8, 8}, {PB_POOL_AVG, 3, 3, 2, 2, 1, 1, false, false}, PB_LAYOUT_NCHW16C},
    {{2, 5, 8, 8}, {PB_POOL_AVG, 3, 3, 2, 2, 1, 1, false, true}, PB_LAYOUT_NCHW8C},
    {{1, 4, 5, 5}, {PB_POOL_AVG, 2, 2, 2, 2, 1, 1, true, false}, PB_LAYOUT_PLAIN},
    /* max backward from the workspace: tiling windows (lenet's pool, a partial last
     * window, a partial channel block) and overlapping ones wider than oneDNN's chunk */
    {{3, 20, 28, 28}, {PB_POOL_MAX, 2, 2, 2, 2, 0, 0, false, false}, PB_LAYOUT_NCHW16C},
    {{2, 5, 7, 9}, {PB_POOL_MAX, 2, 2, 2, 2, 0, 0, true, false}, PB_LAYOUT_NCHW8C},
    {{2, 21, 32, 32}, {PB_POOL_MAX, 3, 3, 2, 2, 1, 1, false, false}, PB_LAYOUT_NCHW16C},
    {{2, 1, 17, 31}, {PB_POOL_MAX, 3, 3, 2, 2, 1, 1, false, false}, PB_LAYOUT_PLAIN},
    /* full blocks of 16 (the vector adds) and a last input row no window reaches */
    {{2, 32, 10, 10}, {PB_POOL_MAX, 3, 3, 2, 2, 0, 0, false, false}, PB_LAYOUT_NCHW16C},
};

/* The cases above from which on pooling averages, and from which on the max backward
 * reads the workspace. */
enum { FIRST_AVG_POOL_CASE = 4, FIRST_WORKSPACE_POOL_CASE = 9 };

/* PyTorch's max_pool2d / avg_pool2d and their backwards, in double (tests/support/op_refs.c). */
static void pool_ref(const struct pool_case *pc, struct pb_shape ys, const float *x,
                     const float *dy, double *y, double *dx)
{
    pb_ref_pool(&pc->d, pc->x, ys, x, dy, y, dx);
}

/* Max pooling selects (exact forward); backwards sum at most 4 overlapping window
 * contributions, averages sum ≤ 9 terms then divide: float32 rounding ≲ 1e-6
 * relative: rtol 1e-5, atol 1e-6. */
START_TEST(test_pool)
{
    const struct pool_case *pc = &pool_cases[_i];
    const struct pb_pool_desc *d = &pc->d;
    struct pb_backend *be = be_new();
    struct pb_shape xs = pc->x;
    struct pb_shape ys = pb_ref_pool_shape(d, xs);
    size_t nx = pb_shape_count(xs), ny = pb_shape_count(ys);
    float *hx = host_rand(nx, 50, -1, 1), *hdy = host_rand(ny, 51, -1, 1);
    double *ry = malloc(ny * sizeof *ry), *rdx = malloc(nx * sizeof *rdx);
    pool_ref(pc, ys, hx, hdy, ry, rdx);

    struct pb_tensor x = tensor_from(be, hx, xs, pc->l), y = tensor_new(be, ys, pc->l);
    size_t wsb = be->ops->pool_workspace(be, d, &x, &y);
    ck_assert(d->kind == PB_POOL_MAX ? wsb > 0 : wsb == 0);
    void *ws = wsb ? dev_alloc(be, wsb) : NULL;
    be->ops->pool_fwd(be, d, &x, &y, ws);
    float *got = tensor_plain(be, &y), *want = to_float(ry, ny);
    pb_assert_close("pool fwd", got, want, ny, 1e-5, 1e-6);
    free(got);

    struct pb_tensor yi = tensor_new(be, ys, pc->l);
    be->ops->pool_fwd(be, d, &x, &yi, NULL);
    got = tensor_plain(be, &yi);
    pb_assert_close("pool fwd (inference)", got, want, ny, 1e-5, 1e-6);
    free(got), free(want);

    struct pb_tensor dy = tensor_from(be, hdy, ys, pc->l), dx = tensor_new(be, xs, pc->l);
    be->ops->fill(be, dx.data, NAN, pb_layout_count(xs, pc->l));  /* every element written */
    be->ops->pool_bwd(be, d, &x, &y, &dy, ws, &dx);
    got = tensor_plain(be, &dx);
    want = to_float(rdx, nx);
    pb_assert_close("pool bwd", got, want, nx, 1e-5, 1e-6);
    free(got), free(want);
    free(hx), free(hdy), free(ry), free(rdx);
    be_done(be);
}
END_TEST

/* ---- batch normalisation ---- */

/* Means and variances over M = n·h·w = 120 elements, rsqrt and the backward's two
 * reductions: float32 rounding ≲ 1e-5 relative: rtol 1e-4, atol 1e-5. */
#define BN_RTOL 1e-4
#define BN_ATOL 1e-5

START_TEST(test_bn)
{
    enum pb_layout l = all_layouts[_i];
    struct pb_backend *be = be_new();
    struct pb_shape s = {4, 13, 5, 6};
    int c = s.c;
    size_t nx = pb_shape_count(s), m = nx / c;
    float eps = 1e-5f;
    float *hx = host_rand(nx, 60, -2, 3), *hdy = host_rand(nx, 61, -1, 1);
    float *hg = host_rand(c, 62, 0.5f, 1.5f), *hb = host_rand(c, 63, -1, 1);
    float *hdg0 = host_rand(c, 64, -1, 1), *hdb0 = host_rand(c, 65, -1, 1);
    double *mean = calloc(c, sizeof *mean), *var = calloc(c, sizeof *var);
    double *ry = malloc(nx * sizeof *ry), *rdx = malloc(nx * sizeof *rdx);
    double *rdg = calloc(c, sizeof *rdg), *rdb = calloc(c, sizeof *rdb);
    for (int ch = 0; ch < c; ch++) {
        for (int n = 0; n < s.n; n++)
            for (int i = 0; i < s.h * s.w; i++)
                mean[ch] += hx[idx4(s, n, ch, 0, 0) + i];
        mean[ch] /= m;
        for (int n = 0; n < s.n; n++)
            for (int i = 0; i < s.h * s.w; i++) {
                double t = hx[idx4(s, n, ch, 0, 0) + i] - mean[ch];
                var[ch] += t * t;
            }
        var[ch] /= m;
        double rs = 1.0 / sqrt(var[ch] + eps);
        for (int n = 0; n < s.n; n++)
            for (int i = 0; i < s.h * s.w; i++) {
                size_t k = idx4(s, n, ch, 0, 0) + i;
                double xh = (hx[k] - mean[ch]) * rs;
                ry[k] = hg[ch] * xh + hb[ch];
                rdb[ch] += hdy[k];
                rdg[ch] += hdy[k] * xh;
            }
        for (int n = 0; n < s.n; n++)
            for (int i = 0; i < s.h * s.w; i++) {
                size_t k = idx4(s, n, ch, 0, 0) + i;
                double xh = (hx[k] - mean[ch]) * rs;
                rdx[k] = hg[ch] * rs * (hdy[k] - rdb[ch] / m - xh * rdg[ch] / m);
            }
    }
    struct pb_tensor x = tensor_from(be, hx, s, l), y = tensor_new(be, s, l);
    float *g = dev_from(be, hg, c), *b = dev_from(be, hb, c);
    /* the CPU backend's aux starts with [2, c]: the batch mean and the biased variance */
    ck_assert_uint_ge(be->ops->bn_aux_bytes(be, s, false), 2 * c * sizeof(float));
    float *aux0 = calloc(2 * c, sizeof *aux0);
    float *aux = dev_from(be, aux0, 2 * c);
    free(aux0);
    float *rm0 = malloc(c * sizeof *rm0), *rv0 = malloc(c * sizeof *rv0);
    for (int ch = 0; ch < c; ch++)
        rm0[ch] = 0.05f * ch, rv0[ch] = 1.0f + 0.1f * ch;
    float *drm = dev_from(be, rm0, c), *drv = dev_from(be, rv0, c);
    const float mom = 0.1f;
    be->ops->bn_fwd_train(be, &x, g, b, drm, drv, mom, eps, false, &y, aux);
    float *got = tensor_plain(be, &y), *want = to_float(ry, nx);
    pb_assert_close("bn fwd train", got, want, nx, BN_RTOL, BN_ATOL);
    free(got), free(want);
    got = host_from(be, aux, c), want = to_float(mean, c);
    pb_assert_close("bn batch mean", got, want, c, BN_RTOL, BN_ATOL);
    free(got), free(want);
    got = host_from(be, aux + c, c), want = to_float(var, c);
    pb_assert_close("bn batch variance (biased)", got, want, c, BN_RTOL, BN_ATOL);
    free(got), free(want);
    /* running statistics as torch.nn.BatchNorm2d: (1 − m)·run + m·batch, the variance
     * unbiased by m/(m − 1) over the m = n·h·w values of a channel */
    double cnt = (double)s.n * s.h * s.w;
    float *wrm = malloc(c * sizeof *wrm), *wrv = malloc(c * sizeof *wrv);
    for (int ch = 0; ch < c; ch++) {
        wrm[ch] = (float)((1 - mom) * rm0[ch] + mom * mean[ch]);
        wrv[ch] = (float)((1 - mom) * rv0[ch] + mom * var[ch] * cnt / (cnt - 1));
    }
    got = host_from(be, drm, c);
    pb_assert_close("bn running mean", got, wrm, c, BN_RTOL, BN_ATOL);
    free(got);
    got = host_from(be, drv, c);
    pb_assert_close("bn running variance", got, wrv, c, BN_RTOL, BN_ATOL);
    free(got), free(wrm), free(wrv), free(rm0), free(rv0);

    /* inference with given statistics: mean 0.1·ch, var 0.5 + 0.2·ch */
    float *imean = malloc(c * sizeof *imean), *ivar = malloc(c * sizeof *ivar);
    for (int ch = 0; ch < c; ch++)
        imean[ch] = 0.1f * ch, ivar[ch] = 0.5f + 0.2f * ch;
    float *dim = dev_from(be, imean, c), *div = dev_from(be, ivar, c);
    be->ops->bn_fwd_infer(be, &x, g, b, dim, div, eps, false, &y);
    want = malloc(nx * sizeof *want);
    for (size_t k = 0; k < nx; k++) {
        int ch = (int)(k / (s.h * s.w) % c);
        want[k] = (float)(hg[ch] * (hx[k] - imean[ch]) / sqrt((double)ivar[ch] + eps) + hb[ch]);
    }
    got = tensor_plain(be, &y);
    pb_assert_close("bn fwd inference", got, want, nx, BN_RTOL, BN_ATOL);
    free(got), free(want);

    struct pb_tensor dy = tensor_from(be, hdy, s, l), dx = tensor_new(be, s, l);
    float *dg = dev_from(be, hdg0, c), *db = dev_from(be, hdb0, c);
    be->ops->bn_bwd(be, &x, &dy, g, aux, eps, false, &dx, dg, db);
    got = tensor_plain(be, &dx), want = to_float(rdx, nx);
    pb_assert_close("bn bwd dx", got, want, nx, BN_RTOL, BN_ATOL);
    free(got), free(want);
    for (int ch = 0; ch < c; ch++)
        rdg[ch] += hdg0[ch], rdb[ch] += hdb0[ch];
    got = host_from(be, dg, c), want = to_float(rdg, c);
    pb_assert_close("bn dgamma (+=)", got, want, c, BN_RTOL, BN_ATOL);
    free(got), free(want);
    got = host_from(be, db, c), want = to_float(rdb, c);
    pb_assert_close("bn dbeta (+=)", got, want, c, BN_RTOL, BN_ATOL);
    free(got), free(want);
    free(hx), free(hdy), free(hg), free(hb), free(hdg0), free(hdb0), free(imean), free(ivar);
    free(mean), free(var), free(ry), free(rdx), free(rdg), free(rdb);
    be_done(be);
}
END_TEST

/* BN with the ReLU fused (relu = true) against BN then ReLU by the backend's own ops: the
 * training forward is max(y, 0) of the plain BN's y, the inference forward too, and the
 * backward the plain BN's backward of dy·(y > 0), dγ and dβ included (+=); all three
 * layouts, and a shape whose mask does not fill whole bytes per channel block. */
START_TEST(test_bn_relu)
{
    enum pb_layout l = all_layouts[_i % 3];
    struct pb_backend *be = be_new();
    static const struct pb_shape shapes[3] = {{4, 13, 5, 6}, {3, 21, 3, 5}, {2, 2, 2, 2}};
    struct pb_shape s = shapes[_i / 3];
    int c = s.c;
    size_t nx = pb_shape_count(s);
    float eps = 1e-5f, mom = 0.1f;
    float *hx = host_rand(nx, 160, -2, 3), *hdy = host_rand(nx, 161, -1, 1);
    float *hg = host_rand(c, 162, 0.5f, 1.5f), *hb = host_rand(c, 163, -1, 1);
    float *hz = calloc(nx, sizeof *hz);
    struct pb_tensor x = tensor_from(be, hx, s, l), y = tensor_new(be, s, l), yr = tensor_new(be, s, l);
    float *g = dev_from(be, hg, c), *b = dev_from(be, hb, c);
    float *rm = dev_from(be, hz, c), *rv = dev_from(be, hz, c);
    float *rm2 = dev_from(be, hz, c), *rv2 = dev_from(be, hz, c);
    void *aux = dev_alloc(be, be->ops->bn_aux_bytes(be, s, false));
    void *auxr = dev_alloc(be, be->ops->bn_aux_bytes(be, s, true));
    ck_assert_uint_gt(be->ops->bn_aux_bytes(be, s, true), be->ops->bn_aux_bytes(be, s, false));
    be->ops->bn_fwd_train(be, &x, g, b, rm, rv, mom, eps, false, &y, aux);
    be->ops->bn_fwd_train(be, &x, g, b, rm2, rv2, mom, eps, true, &yr, auxr);
    float *py = tensor_plain(be, &y), *pyr = tensor_plain(be, &yr);
    float *want = malloc(nx * sizeof *want), *mdy = malloc(nx * sizeof *mdy);
    for (size_t k = 0; k < nx; k++) {
        want[k] = py[k] > 0.0f ? py[k] : 0.0f;
        mdy[k] = py[k] > 0.0f ? hdy[k] : 0.0f;
    }
    pb_assert_close("bn+relu fwd train", pyr, want, nx, 1e-6, 1e-6);
    float *got = host_from(be, rm2, c), *ref = host_from(be, rm, c);
    ck_assert_msg(memcmp(got, ref, (size_t)c * sizeof *got) == 0, "bn+relu running mean");
    free(got), free(ref);
    free(pyr);

    be->ops->bn_fwd_infer(be, &x, g, b, rm, rv, eps, false, &y);
    be->ops->bn_fwd_infer(be, &x, g, b, rm, rv, eps, true, &yr);
    float *pi = tensor_plain(be, &y), *pir = tensor_plain(be, &yr);
    for (size_t k = 0; k < nx; k++)
        pi[k] = pi[k] > 0.0f ? pi[k] : 0.0f;
    pb_assert_close("bn+relu fwd inference", pir, pi, nx, 1e-6, 1e-6);
    free(pi), free(pir);

    struct pb_tensor dy = tensor_from(be, hdy, s, l), mdyt = tensor_from(be, mdy, s, l);
    struct pb_tensor dx = tensor_new(be, s, l), dxr = tensor_new(be, s, l);
    float *dg = dev_from(be, hz, c), *db = dev_from(be, hz, c);
    float *dgr = dev_from(be, hz, c), *dbr = dev_from(be, hz, c);
    be->ops->bn_bwd(be, &x, &mdyt, g, aux, eps, false, &dx, dg, db);
    be->ops->bn_bwd(be, &x, &dy, g, auxr, eps, true, &dxr, dgr, dbr);
    float *pdx = tensor_plain(be, &dx), *pdxr = tensor_plain(be, &dxr);
    pb_assert_close("bn+relu bwd dx", pdxr, pdx, nx, 1e-5, 1e-6);
    free(pdx), free(pdxr);
    float *a1 = host_from(be, dg, c), *a2 = host_from(be, dgr, c);
    pb_assert_close("bn+relu dgamma", a2, a1, c, 1e-5, 1e-6);
    free(a1), free(a2);
    a1 = host_from(be, db, c), a2 = host_from(be, dbr, c);
    pb_assert_close("bn+relu dbeta", a2, a1, c, 1e-5, 1e-6);
    free(a1), free(a2);
    free(py), free(want), free(mdy), free(hx), free(hdy), free(hg), free(hb), free(hz);
    be_done(be);
}
END_TEST

/* ---- concat, split, reorder (copies: exact) ---- */

START_TEST(test_concat_split)
{
    struct pb_backend *be = be_new();
    static const int cs[3] = {8, 5, 16};
    enum pb_layout out_l = all_layouts[_i];
    struct pb_shape os = {2, 29, 3, 4};
    float *h[3];
    struct pb_tensor ins[3], outs[3];
    const struct pb_tensor *inp[3];
    struct pb_tensor *outp[3];
    for (int i = 0; i < 3; i++) {
        struct pb_shape s = {os.n, cs[i], os.h, os.w};
        h[i] = host_rand(pb_shape_count(s), 70 + i, -1, 1);
        ins[i] = tensor_from(be, h[i], s, all_layouts[(i + _i) % 3]);
        outs[i] = tensor_new(be, s, all_layouts[(i + _i + 1) % 3]);
        inp[i] = &ins[i];
        outp[i] = &outs[i];
    }
    struct pb_tensor out = tensor_new(be, os, out_l);
    be->ops->concat(be, 3, inp, &out);
    float *got = tensor_plain(be, &out);
    float *want = malloc(pb_shape_count(os) * sizeof *want);
    for (int n = 0; n < os.n; n++)
        for (int i = 0, c0 = 0; i < 3; c0 += cs[i], i++)
            memcpy(want + idx4(os, n, c0, 0, 0), h[i] + (size_t)n * cs[i] * os.h * os.w,
                   (size_t)cs[i] * os.h * os.w * sizeof *want);
    assert_same("concat", got, want, pb_shape_count(os));
    free(got), free(want);

    be->ops->split(be, &out, 3, outp);
    for (int i = 0; i < 3; i++) {
        got = tensor_plain(be, &outs[i]);
        assert_same("split", got, h[i], pb_shape_count(outs[i].shape));
        free(got), free(h[i]);
    }
    be_done(be);
}
END_TEST

/* Every tensor in one layout, parts that do not fill whole blocks (DenseNet's,
 * GoogLeNet's channel counts): concat_layout keeps the layout, the copies are exact, and
 * the padding lanes of what concat and split write come out zero even over garbage.
 * _i: plain, nChw8c, nChw16c. */
START_TEST(test_concat_split_blocked)
{
    struct pb_backend *be = be_new();
    enum { K = 4 };
    static const int cs[K] = {8, 5, 16, 27};
    enum pb_layout l = all_layouts[_i];
    struct pb_shape os = {3, 56, 3, 5};
    float *h[K];
    struct pb_tensor ins[K], outs[K];
    const struct pb_tensor *inp[K];
    struct pb_tensor *outp[K];
    for (int i = 0; i < K; i++) {
        struct pb_shape s = {os.n, cs[i], os.h, os.w};
        h[i] = host_rand(pb_shape_count(s), 90 + i, -1, 1);
        ins[i] = tensor_from(be, h[i], s, l);
        outs[i] = tensor_new(be, s, l);
        be->ops->fill(be, outs[i].data, NAN, pb_layout_count(s, l));
        inp[i] = &ins[i];
        outp[i] = &outs[i];
    }
    ck_assert_int_eq(be->ops->concat_layout(be, K, inp), l);
    struct pb_tensor out = tensor_new(be, os, l);
    be->ops->fill(be, out.data, NAN, pb_layout_count(os, l));
    be->ops->concat(be, K, inp, &out);
    float *got = tensor_plain(be, &out);
    for (int n = 0; n < os.n; n++)
        for (int i = 0, c0 = 0; i < K; c0 += cs[i], i++) {
            size_t plane = (size_t)cs[i] * os.h * os.w;
            assert_same("concat (blocked)", got + idx4(os, n, c0, 0, 0), h[i] + n * plane, plane);
        }
    free(got);
    /* the layout's padding: channels c … round_up(c, block) of every pixel */
    const struct pb_tensor *written[K + 1] = {&out, &outs[0], &outs[1], &outs[2], &outs[3]};
    be->ops->split(be, &out, K, outp);
    for (int t = 0; t < K + 1; t++) {
        struct pb_shape s = written[t]->shape;
        int blk = pb_layout_block(l), cb = (s.c + blk - 1) / blk;
        size_t n = pb_layout_count(s, l), hw = (size_t)s.h * s.w;
        float *raw = host_from(be, written[t]->data, n);
        for (size_t k = 0; k < n; k++) {
            int ch = (int)(k / (hw * blk) % cb) * blk + (int)(k % blk);
            if (ch >= s.c)
                ck_assert_msg(raw[k] == 0.0f, "padding lane %d of tensor %d is %g", ch, t,
                              (double)raw[k]);
        }
        free(raw);
    }
    for (int i = 0; i < K; i++) {
        got = tensor_plain(be, &outs[i]);
        assert_same("split (blocked)", got, h[i], pb_shape_count(outs[i].shape));
        free(got), free(h[i]);
    }
    be_done(be);
}
END_TEST

/* More inputs than a primitive-cache key holds (the uncached path). */
START_TEST(test_concat_many)
{
    struct pb_backend *be = be_new();
    enum { K = 40 };
    struct pb_shape os = {2, 0, 3, 2};
    float *h[K];
    struct pb_tensor ins[K], outs[K];
    const struct pb_tensor *inp[K];
    struct pb_tensor *outp[K];
    for (int i = 0; i < K; i++) {
        struct pb_shape s = {os.n, 1 + i % 3, os.h, os.w};
        os.c += s.c;
        h[i] = host_rand(pb_shape_count(s), 200 + i, -1, 1);
        ins[i] = tensor_from(be, h[i], s, all_layouts[i % 2]);
        outs[i] = tensor_new(be, s, all_layouts[(i + 1) % 3]);
        inp[i] = &ins[i];
        outp[i] = &outs[i];
    }
    struct pb_tensor out = tensor_new(be, os, PB_LAYOUT_NCHW8C);
    for (int rep = 0; rep < 2; rep++) {
        be->ops->concat(be, K, inp, &out);
        be->ops->split(be, &out, K, outp);
    }
    float *got = tensor_plain(be, &out);
    for (int i = 0, c0 = 0; i < K; c0 += ins[i].shape.c, i++) {
        size_t plane = (size_t)ins[i].shape.c * os.h * os.w;
        for (int n = 0; n < os.n; n++)
            assert_same("concat (many)", got + idx4(os, n, c0, 0, 0), h[i] + n * plane, plane);
        float *part = tensor_plain(be, &outs[i]);
        assert_same("split (many)", part, h[i], pb_shape_count(outs[i].shape));
        free(part), free(h[i]);
    }
    free(got);
    be_done(be);
}
END_TEST

START_TEST(test_reorder)
{
    struct pb_backend *be = be_new();
    struct pb_shape s = {3, 13, 4, 5};
    size_t n = pb_shape_count(s);
    float *hx = host_rand(n, 80, -1, 1);
    struct pb_tensor p = tensor_from(be, hx, s, PB_LAYOUT_PLAIN);
    struct pb_tensor b8 = tensor_new(be, s, PB_LAYOUT_NCHW8C);
    struct pb_tensor b16 = tensor_new(be, s, PB_LAYOUT_NCHW16C);
    be->ops->fill(be, b8.data, 7.0f, pb_layout_count(s, PB_LAYOUT_NCHW8C));
    be->ops->reorder(be, &p, &b8);
    be->ops->reorder(be, &b8, &b16);
    struct pb_tensor back = tensor_new(be, s, PB_LAYOUT_PLAIN);
    be->ops->reorder(be, &b16, &back);
    float *got = host_from(be, back.data, n);
    assert_same("reorder round trip", got, hx, n);
    free(got);
    /* nChw8c of 13 channels: element (n, c, h, w) at ((n·2 + c/8)·h·w + ...)·8 + c%8,
     * channels 13..15 zero */
    float *h8 = host_from(be, b8.data, pb_layout_count(s, PB_LAYOUT_NCHW8C));
    for (int in = 0; in < s.n; in++)
        for (int c = 0; c < 16; c++)
            for (int i = 0; i < s.h * s.w; i++) {
                float v = h8[((size_t)(in * 2 + c / 8) * s.h * s.w + i) * 8 + c % 8];
                float w = c < s.c ? hx[idx4(s, in, c, 0, 0) + i] : 0.0f;
                ck_assert_msg(v == w, "nChw8c element n%d c%d i%d: %g, expected %g", in, c, i, v,
                              w);
            }
    free(h8), free(hx);
    be_done(be);
}
END_TEST

/* ---- elementwise (exact: one rounding each, the same expression as here) ---- */

START_TEST(test_eltwise)
{
    struct pb_backend *be = be_new();
    size_t n = 40000;  /* several parallel chunks */
    float *a = host_rand(n, 90, -1, 1), *b = host_rand(n, 91, -1, 1);
    float *want = malloc(n * sizeof *want);
    float *da = dev_from(be, a, n), *db = dev_from(be, b, n), *dy = dev_from(be, b, n);

    be->ops->relu_fwd(be, da, dy, n);
    float *got = host_from(be, dy, n);
    for (size_t i = 0; i < n; i++)
        want[i] = a[i] > 0 ? a[i] : 0.0f;
    assert_same("relu fwd", got, want, n);
    free(got);

    float *dx = dev_from(be, a, n);
    be->ops->relu_bwd(be, da, db, dx, n);
    got = host_from(be, dx, n);
    for (size_t i = 0; i < n; i++)
        want[i] = a[i] > 0 ? b[i] : 0.0f;
    assert_same("relu bwd", got, want, n);
    free(got);

    be->ops->add(be, da, db, dy, n);
    got = host_from(be, dy, n);
    for (size_t i = 0; i < n; i++)
        want[i] = a[i] + b[i];
    assert_same("add", got, want, n);
    free(got);

    be->ops->add_relu(be, da, db, dy, n);
    got = host_from(be, dy, n);
    for (size_t i = 0; i < n; i++)
        want[i] = a[i] + b[i] > 0 ? a[i] + b[i] : 0.0f;
    assert_same("add_relu", got, want, n);
    free(got);

    be->ops->upload(be, dy, b, n * sizeof(float));
    be->ops->axpby(be, 0.75f, da, -1.5f, dy, n);
    got = host_from(be, dy, n);
    for (size_t i = 0; i < n; i++)
        want[i] = 0.75f * a[i] + -1.5f * b[i];
    pb_assert_close("axpby", got, want, n, 1e-6, 1e-7);
    free(got);

    be->ops->fill(be, dy, 2.5f, n);
    got = host_from(be, dy, n);
    pb_assert_all("filled", got, n, 2.5f);
    free(got), free(a), free(b), free(want);
    be_done(be);
}
END_TEST

START_TEST(test_dropout)
{
    struct pb_backend *be = be_new();
    size_t n = 40000, off = 1000;
    float p = 0.3f;
    struct pb_rng_key key = pb_rng_key(PB_RNG_DROPOUT, 42, 1, 2, 3);
    float *hx = host_rand(n + off, 100, -1, 1);
    float *x = dev_from(be, hx, n + off), *y = dev_from(be, hx, n + off), *y2 = dev_from(be, hx, n);

    be->ops->dropout(be, x, y, n + off, p, key, 0);
    float *got = host_from(be, y, n + off);
    size_t kept = 0;
    for (size_t i = 0; i < n + off; i++) {
        bool keep = pb_rng_uniform4(key, i) >= p;
        kept += keep;
        ck_assert_msg(got[i] == (keep ? hx[i] * (1.0f / (1.0f - p)) : 0.0f),
                      "dropout element %zu: %g (input %g, keep %d)", i, got[i], hx[i], keep);
    }
    /* the kept fraction of 41000 Bernoulli(0.7) draws is within 5 sigma of 0.7 */
    double frac = (double)kept / (n + off);
    ck_assert_msg(fabs(frac - 0.7) < 5 * sqrt(0.21 / (n + off)), "kept fraction %g", frac);

    /* the mask of element i depends on first + i only */
    be->ops->dropout(be, x + off, y2, n, p, key, off);
    float *got2 = host_from(be, y2, n);
    ck_assert(memcmp(got2, got + off, n * sizeof(float)) == 0);
    free(got2);

    /* determinism: the same call gives the same bits */
    be->ops->dropout(be, x, y, n + off, p, key, 0);
    got2 = host_from(be, y, n + off);
    ck_assert(memcmp(got2, got, (n + off) * sizeof(float)) == 0);
    free(got2);

    /* p = 0: identity */
    be->ops->dropout(be, x, y, n + off, 0.0f, key, 0);
    got2 = host_from(be, y, n + off);
    ck_assert(memcmp(got2, hx, (n + off) * sizeof(float)) == 0);
    free(got2), free(got), free(hx);
    be_done(be);
}
END_TEST

/* ---- softmax cross-entropy ---- */

/* Loss and gradient computed in double in both: rtol 1e-6 (float32 outputs). */
START_TEST(test_softmax_xent)
{
    struct pb_backend *be = be_new();
    float eps_ls = _i ? 0.1f : 0.0f;
    int n = 7, c = 11;
    float *z = host_rand((size_t)n * c, 110, -4, 4);
    int32_t labels[7] = {2, 4, 0, 10, 5, 7, 3};
    /* ties: row 0 max at 2 and 5 (label 2: correct), row 1 max at 3 and 4 (label 4: wrong) */
    z[0 * c + 2] = z[0 * c + 5] = 9.0f;
    z[1 * c + 3] = z[1 * c + 4] = 9.0f;
    int want_correct = 1;
    double loss = 0;
    float *want = malloc((size_t)n * c * sizeof *want);
    for (int r = 2; r < n; r++) {
        int am = 0;
        for (int j = 1; j < c; j++)
            if (z[r * c + j] > z[r * c + am])
                am = j;
        want_correct += am == labels[r];
    }
    for (int r = 0; r < n; r++) {
        double m = -INFINITY, s = 0;
        for (int j = 0; j < c; j++)
            m = fmax(m, z[r * c + j]);
        for (int j = 0; j < c; j++)
            s += exp(z[r * c + j] - m);
        double lse = m + log(s);
        for (int j = 0; j < c; j++) {
            double t = eps_ls / c + (j == labels[r] ? 1.0 - eps_ls : 0.0);
            loss += t * (lse - z[r * c + j]);
            want[r * c + j] = (float)((exp(z[r * c + j] - lse) - t) / n);
        }
    }
    loss /= n;
    int32_t *dl = (int32_t *)dev_from(be, (const float *)labels, n);
    float *dz = dev_from(be, z, (size_t)n * c), *dd = dev_from(be, z, (size_t)n * c);
    struct pb_err e;
    struct pb_xent_out *dres = pb_backend_alloc(be, sizeof *dres, PB_MEM_SCRATCH, &e), res;
    ck_assert_msg(dres != NULL, "%s", e.msg);
    be->ops->softmax_xent(be, dz, dl, n, c, eps_ls, -1, 0, dres, dd);
    be->ops->download(be, &res, dres, sizeof res);
    be->ops->sync(be);
    float wl = (float)loss;
    pb_assert_close("xent loss", &res.loss, &wl, 1, 1e-6, 0);
    ck_assert_int_eq(res.correct, want_correct);
    float *got = host_from(be, dd, (size_t)n * c);
    pb_assert_close("xent dlogits", got, want, (size_t)n * c, 1e-6, 1e-8);
    res.correct = -1;
    be->ops->softmax_xent(be, dz, dl, n, c, eps_ls, -1, 0, dres, NULL);
    be->ops->download(be, &res, dres, sizeof res);
    be->ops->sync(be);
    pb_assert_close("xent loss (no dlogits)", &res.loss, &wl, 1, 1e-6, 0);
    ck_assert_int_eq(res.correct, want_correct);
    pb_backend_free(be, dres);
    free(got), free(want), free(z);
    be_done(be);
}
END_TEST

/* A label outside [0, C) fails the instance with the row and the label (the process
 * goes on: the run reports it), where a check inside the op's OpenMP loop aborted. */
START_TEST(test_softmax_xent_bad_label)
{
    struct pb_backend *be = be_new();
    int n = 3, c = 4;
    float *z = host_rand((size_t)n * c, 111, -1, 1);
    int32_t labels[3] = {1, 4, 0};
    int32_t *dl = (int32_t *)dev_from(be, (const float *)labels, n);
    float *dz = dev_from(be, z, (size_t)n * c);
    struct pb_err e;
    struct pb_xent_out *dres = pb_backend_alloc(be, sizeof *dres, PB_MEM_SCRATCH, &e);
    ck_assert_msg(dres != NULL, "%s", e.msg);
    be->ops->softmax_xent(be, dz, dl, n, c, 0.0f, -1, 0, dres, NULL);
    be->ops->sync(be);
    ck_assert(be->failed);
    ck_assert_msg(strstr(be->error.msg, "row 1 has label 4"), "%s", be->error.msg);
    pb_backend_free(be, dres);
    free(z);
    be_done(be);
}
END_TEST

/* ---- determinism ---- */

/* The 3×3 convolutions det_run runs: direct, Winograd where the CPU has it, products, a
 * thin output. */
static const int det_cases[] = {7, 13, 17, FIRST_THIN_CASE};

/* Runs conv fwd, bwd data, bwd weights (conv_cases[ci], a 3×3 one) and bn fwd/bwd on be;
 * returns the outputs concatenated (plain). */
static float *det_run(struct pb_backend *be, int ci, size_t *count)
{
    const struct conv_case *cc = &conv_cases[ci];
    struct pb_conv_desc d = conv_desc_of(cc);
    d.bias = false;
    struct pb_shape xs = {cc->n, cc->cin, cc->h, cc->w}, ys = conv_yshape(cc);
    size_t nx = pb_shape_count(xs), ny = pb_shape_count(ys), nw = (size_t)cc->cout * cc->cin * 9;
    float *hx = host_rand(nx, 120, -1, 1), *hw = host_rand(nw, 121, -1, 1);
    float *hdy = host_rand(ny, 122, -1, 1);
    float *hz = calloc(nw, sizeof *hz);
    struct pb_tensor x = tensor_from(be, hx, xs, cc->xl);
    struct pb_tensor y = tensor_new(be, ys, be->ops->conv_layout(be, &d, &x));
    float *w = dev_from(be, hw, nw), *dw = dev_from(be, hz, nw);
    be->ops->conv_fwd(be, &d, &x, w, NULL, &y);
    struct pb_tensor dy = tensor_from(be, hdy, ys, y.layout), dx = tensor_new(be, xs, x.layout);
    be->ops->conv_bwd_data(be, &d, &dy, w, &dx);
    be->ops->conv_bwd_weights(be, &d, &x, &dy, dw, NULL);
    float *g = dev_from(be, hz, ys.c), *bb = dev_from(be, hz, ys.c), *m = dev_from(be, hz, ys.c);
    float *v = dev_from(be, hz, ys.c), *dg = dev_from(be, hz, ys.c), *db = dev_from(be, hz, ys.c);
    float *aux = dev_from(be, hz, 2 * (size_t)ys.c);
    be->ops->fill(be, g, 1.0f, ys.c);
    struct pb_tensor by = tensor_new(be, ys, y.layout), bdx = tensor_new(be, ys, y.layout);
    be->ops->bn_fwd_train(be, &y, g, bb, m, v, 0.1f, 1e-5f, false, &by, aux);
    be->ops->bn_bwd(be, &y, &dy, g, aux, 1e-5f, false, &bdx, dg, db);
    float *parts[5] = {tensor_plain(be, &y), tensor_plain(be, &dx), host_from(be, dw, nw),
                       tensor_plain(be, &by), tensor_plain(be, &bdx)};
    size_t sizes[5] = {ny, nx, nw, ny, ny};
    *count = ny * 3 + nx + nw;
    float *all = malloc(*count * sizeof *all), *p = all;
    for (int i = 0; i < 5; i++) {
        memcpy(p, parts[i], sizes[i] * sizeof *p);
        p += sizes[i];
        free(parts[i]);
    }
    free(hx), free(hw), free(hdy), free(hz);
    return all;
}

/* ---- attention on keys projected once (a decoder's) ---- */

static const struct pb_attn_desc attn_cases[] = {
    {3, 1, 5, 4, 6, 7},     /* one query a row, as a decoder's step */
    {3, 4, 5, 4, 6, 37},    /* several, units past a multiple of the score's lanes */
    {2, 1, 9, 16, 24, 48},
};

/* attn_project_keys then attn_fwd_projected give attn_fwd's ctx and weights (attn_weights)
 * on the same desc, q, k, lengths and weights in equal bits — the same GEMMs and score
 * loop — with the weights wanted and not (ctx alike); lengths below tk and NULL. */
START_TEST(test_attn_projected)
{
    const struct pb_attn_desc *d = &attn_cases[_i];
    struct pb_backend *be = be_new();
    int B = d->batch, U = d->units;
    size_t nq = (size_t)B * d->tq * d->query, nk = (size_t)B * d->tk * d->key;
    size_t nctx = (size_t)B * d->tq * d->key, na = (size_t)B * d->tq * d->tk;
    size_t nw = (size_t)U * (2 + d->query + d->key) + 1;
    float *hq = host_rand(nq, 71, -1, 1), *hk = host_rand(nk, 72, -1, 1);
    float *hw = host_rand(nw, 73, -1, 1);
    float *q = dev_from(be, hq, nq), *k = dev_from(be, hk, nk), *w = dev_from(be, hw, nw);
    int32_t hlen[3] = {d->tk, 2, d->tk - 1};
    int32_t *len = dev_alloc(be, sizeof hlen);
    be->ops->upload(be, len, hlen, sizeof hlen);
    float *ctx = dev_alloc(be, nctx * sizeof(float)), *ctx2 = dev_alloc(be, nctx * sizeof(float));
    float *a = dev_alloc(be, na * sizeof(float)), *a2 = dev_alloc(be, na * sizeof(float));
    float *pk = dev_alloc(be, (size_t)B * d->tk * U * sizeof(float));
    void *ws = dev_alloc(be, be->ops->attn_workspace(be, d));
    be->ops->attn_project_keys(be, d, k, w, pk);
    for (int masked = 0; masked < 2; masked++) {
        const int32_t *l = masked ? len : NULL;
        be->ops->attn_fwd(be, d, q, k, l, w, ctx, ws);
        be->ops->attn_weights(be, d, ws, a);
        be->ops->attn_fwd_projected(be, d, q, k, pk, l, w, ctx2, a2);
        float *c1 = host_from(be, ctx, nctx), *c2 = host_from(be, ctx2, nctx);
        float *a1h = host_from(be, a, na), *a2h = host_from(be, a2, na);
        assert_same("attn_fwd_projected ctx", c2, c1, nctx);
        assert_same("attn_fwd_projected weights", a2h, a1h, na);
        be->ops->fill(be, ctx2, 0.0f, nctx);
        be->ops->attn_fwd_projected(be, d, q, k, pk, l, w, ctx2, NULL);
        free(c2);
        c2 = host_from(be, ctx2, nctx);
        assert_same("attn_fwd_projected ctx, no weights", c2, c1, nctx);
        for (int b = 0; masked && b < B; b++)
            for (int i = 0; i < d->tq; i++)
                for (int j = hlen[b]; j < d->tk; j++)
                    ck_assert(a2h[((size_t)b * d->tq + i) * d->tk + j] == 0.0f);
        free(c1), free(c2), free(a1h), free(a2h);
    }
    ck_assert_msg(!be->failed, "%s", be->error.msg);
    free(hq), free(hk), free(hw);
    be_done(be);
}
END_TEST

START_TEST(test_determinism)
{
    int ci = det_cases[_i];
    struct pb_backend *be = be_new();
    size_t n1, n2, n3;
    float *a = det_run(be, ci, &n1), *b = det_run(be, ci, &n2);
    ck_assert(n1 == n2 && memcmp(a, b, n1 * sizeof *a) == 0);
    struct pb_backend *be2 = be_new();
    float *c = det_run(be2, ci, &n3);
    ck_assert_msg(memcmp(a, c, n1 * sizeof *a) == 0, "a fresh instance gives other bits");
    free(a), free(b), free(c);
    be_done(be);
    be_done(be2);
}
END_TEST

START_TEST(test_memory)
{
    struct pb_backend *be = be_new();
    struct pb_err e;
    float *p = pb_backend_alloc(be, 1000, PB_MEM_PARAMS, &e);
    ck_assert(p != NULL && ((uintptr_t)p & 63) == 0);
    ck_assert(be->mem_cur[PB_MEM_PARAMS] == 1000);
    float src[250], dst[250];
    for (int i = 0; i < 250; i++)
        src[i] = (float)i;
    be->ops->upload(be, p, src, sizeof src);
    float *q = pb_backend_alloc(be, 1000, PB_MEM_GRADS, &e);
    be->ops->copy(be, q, p, sizeof src);
    be->ops->download(be, dst, q, sizeof dst);
    ck_assert(memcmp(src, dst, sizeof src) == 0);
    be->ops->sync(be);
    pb_backend_free(be, p);
    pb_backend_free(be, q);
    ck_assert(be->mem_cur[PB_MEM_PARAMS] == 0 && be->mem_peak[PB_MEM_PARAMS] == 1000);
    pb_backend_destroy(be);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("backend_cpu");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_memory);
    tcase_add_loop_test(tc, test_gemm, 0, 4);
    tcase_add_test(tc, test_bias);
    /* one convolution case of each path here, the others in the slow suite */
    tcase_add_loop_test(tc, test_conv, 0, 1);
    tcase_add_loop_test(tc, test_conv, FIRST_WINOGRAD_CASE, FIRST_WINOGRAD_CASE + 1);
    tcase_add_loop_test(tc, test_conv, FIRST_GEMM_CASE, FIRST_GEMM_CASE + 1);
    tcase_add_loop_test(tc, test_conv, FIRST_THIN_CASE, FIRST_THIN_CASE + 1);
    tcase_add_test(tc, test_conv_mixed_layouts);
    tcase_add_loop_test(tc, test_pool, 0, 1);
    tcase_add_loop_test(tc, test_pool, FIRST_AVG_POOL_CASE, FIRST_AVG_POOL_CASE + 1);
    tcase_add_loop_test(tc, test_pool, FIRST_WORKSPACE_POOL_CASE, FIRST_WORKSPACE_POOL_CASE + 1);
    tcase_add_loop_test(tc, test_bn, 0, 3);
    tcase_add_loop_test(tc, test_bn_relu, 0, 9);
    tcase_add_loop_test(tc, test_concat_split, 0, 3);
    tcase_add_test(tc, test_concat_many);
    tcase_add_loop_test(tc, test_concat_split_blocked, 0, 3);
    tcase_add_test(tc, test_reorder);
    tcase_add_test(tc, test_eltwise);
    tcase_add_test(tc, test_dropout);
    tcase_add_loop_test(tc, test_softmax_xent, 0, 2);
    tcase_add_test(tc, test_softmax_xent_bad_label);
    tcase_add_loop_test(tc, test_attn_projected, 0,
                        (int)(sizeof attn_cases / sizeof attn_cases[0]));
    tcase_add_loop_test(tc, test_determinism, 0, (int)(sizeof det_cases / sizeof det_cases[0]));
    tcase_set_tags(tc, "fast");
    suite_add_tcase(s, tc);
    TCase *more = tcase_create("more_shapes");
    tcase_set_timeout(more, 300);
    tcase_add_loop_test(more, test_conv, 1, FIRST_WINOGRAD_CASE);
    tcase_add_loop_test(more, test_conv, FIRST_WINOGRAD_CASE + 1, FIRST_GEMM_CASE);
    tcase_add_loop_test(more, test_conv, FIRST_GEMM_CASE + 1, FIRST_THIN_CASE);
    tcase_add_loop_test(more, test_conv, FIRST_THIN_CASE + 1,
                        (int)(sizeof conv_cases / sizeof conv_cases[0]));
    tcase_add_loop_test(more, test_pool, 1, FIRST_AVG_POOL_CASE);
    tcase_add_loop_test(more, test_pool, FIRST_AVG_POOL_CASE + 1, FIRST_WORKSPACE_POOL_CASE);
    tcase_add_loop_test(more, test_pool, FIRST_WORKSPACE_POOL_CASE + 1,
                        (int)(sizeof pool_cases / sizeof pool_cases[0]));
    suite_add_tcase(s, more);
    return s;
}
