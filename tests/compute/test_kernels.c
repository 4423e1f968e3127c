/* tests/compute/test_kernels.c — the per-element functions of harness/compute/kernels/ (and the
 * Philox block of harness/base/philox.h), which a CUDA backend shares with the CPU one,
 * bit for bit against the paths the CPU backend runs: each op of the backend on random
 * inputs with edge values (±0, denormals, ±inf, NaN where the op is defined on them)
 * against a scalar loop of the shared function here; where the CPU keeps a vector path
 * of its own (rng.c's Philox runs, cpu_tanh.c's array, oneDNN's batch norm) against that
 * path. Philox's block against Random123's known answers is test_rng's (pb_rng_words is
 * pb_philox_block). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/rng.h"
#include "harness/compute/backend.h"
#include "harness/compute/cpu/cpu_tanh.h"
#include "harness/compute/kernels/bn.h"
#include "harness/compute/kernels/dropout.h"
#include "harness/compute/kernels/eltwise.h"
#include "harness/compute/kernels/optim.h"
#include "harness/compute/kernels/predict.h"
#include "harness/compute/kernels/seq.h"
#include "harness/compute/kernels/xent.h"
#include "harness/compute/registry.h"
#include "tests/support/test_util.h"

/* elements per op: odd, so that the vector loops have tails */
#define N 4099

static struct pb_backend *cpu_backend(void)
{
    struct pb_err e;
    struct pb_backend_cfg cfg = {.device = 0, .threads = 1};
    struct pb_backend *be = pb_backend_create("cpu", &cfg, &e);
    ck_assert_msg(be != NULL, "%s", e.msg);
    return be;
}

static float *floats(size_t n)
{
    float *p = malloc((n + 1) * sizeof *p);
    ck_assert(p != NULL);
    return p;
}

/* n floats, normal × scale, whose first ones are the edge values (when edges) */
static float *random_floats(uint64_t seed, size_t n, float scale, bool edges)
{
    static const float edge[] = {0.0f, -0.0f, 1e-40f, -1e-40f, INFINITY, -INFINITY, NAN,
                                 1.0f, -1.0f, 3.0e38f, -3.0e38f};
    struct pb_rng_key key = pb_rng_key(PB_RNG_DATA, seed, 11, 0, 0);
    float *p = floats(n);
    for (size_t i = 0; i < n; i++)
        p[i] = pb_rng_normal(key, i) * scale;
    for (size_t i = 0; edges && i < sizeof edge / sizeof *edge && i < n; i++)
        p[i] = edge[i];
    return p;
}

/* positive floats (second moments, square averages) */
static float *random_positive(uint64_t seed, size_t n)
{
    float *p = random_floats(seed, n, 1.0f, false);
    for (size_t i = 0; i < n; i++)
        p[i] = p[i] * p[i] + 1e-12f;
    return p;
}

static float *copy_of(const float *src, size_t n)
{
    float *p = floats(n);
    memcpy(p, src, n * sizeof *p);
    return p;
}

static void assert_same_bits(const float *got, const float *want, size_t n, const char *what)
{
    pb_assert_same_bits(what, got, want, n);
}

/* ---- Philox and dropout ---- */

/* rng.c's vector runs (what dropout draws from) against the shared draw, element by
 * element: aligned and odd starts, across the counter's 2³² carry */
START_TEST(dropout_uniform_is_the_run)
{
    static const uint64_t firsts[] = {0, 7, 64, (4ull << 32) - 13, 0xffffffffffffff00ull};
    float *run = floats(N);
    for (uint64_t s = 0; s < 3; s++)
        for (size_t f = 0; f < sizeof firsts / sizeof *firsts; f++) {
            struct pb_rng_key key = pb_rng_key(PB_RNG_DROPOUT, 100 + s, f, 2, 1);
            pb_rng_uniform4_run(key, firsts[f], run, N);
            for (size_t j = 0; j < N; j++) {
                float u = pb_k_dropout_uniform(key, firsts[f] + j);
                ck_assert_msg(memcmp(&u, &run[j], sizeof u) == 0, "seed %d first %zu elt %zu",
                              (int)s, (size_t)firsts[f], j);
            }
        }
    free(run);
}
END_TEST

START_TEST(dropout_op)
{
    struct pb_backend *be = cpu_backend();
    static const float ps[] = {0.0f, 0.1f, 0.5f, 1.0f};
    float *x = random_floats(1, N, 2.0f, true), *y = floats(N), *want = floats(N);
    struct pb_rng_key key = pb_rng_key(PB_RNG_DROPOUT, 9, 3, 4, 5);
    for (size_t k = 0; k < sizeof ps / sizeof *ps; k++) {
        uint64_t first = 1000 * k + 3;
        be->ops->dropout(be, x, y, N, ps[k], key, first);
        float scale = pb_k_dropout_scale(ps[k]);
        for (size_t i = 0; i < N; i++)
            want[i] = pb_k_dropout(x[i], pb_k_dropout_uniform(key, first + i), ps[k], scale);
        assert_same_bits(y, want, N, "dropout");
    }
    free(x), free(y), free(want);
    pb_backend_destroy(be);
}
END_TEST

/* ---- tanh ---- */

/* cpu_tanh.c's vectorised array against the scalar function over random bit patterns
 * (every exponent, NaNs and infinities among them) and the edge values */
START_TEST(tanh_vector_is_scalar)
{
    enum { M = 1 << 16 };
    static const float edge[] = {0.0f, -0.0f, 1e-45f, -1e-45f, 1.17549435e-38f, 9.0f, -9.0f,
                                 9.02f, 10.0f, -10.0f, 20.0f, 1e30f, INFINITY, -INFINITY, NAN};
    float *x = floats(M), *y = floats(M);
    struct pb_rng_key key = pb_rng_key(PB_RNG_DATA, 5, 6, 7, 8);
    for (size_t i = 0; i < M; i += 4) {
        uint32_t w[4];
        pb_rng_words(key, i / 4, w);
        for (int j = 0; j < 4; j++)
            x[i + j] = pb_k_bits_float(w[j]);
    }
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++)
        x[i] = edge[i];
    for (size_t i = M / 2; i < M / 2 + 4096; i++)  /* dense where the polynomial works */
        x[i] = ((float)i - (float)(M / 2) - 2048.0f) / 128.0f;
    pb_cpu_tanh_array(x, y, M);
    for (size_t i = 0; i < M; i++) {
        float s = pb_k_tanhf(x[i]);
        ck_assert_msg(memcmp(&s, &y[i], sizeof s) == 0, "tanh(%a): vector %a, scalar %a",
                      (double)x[i], (double)y[i], (double)s);
    }
    free(x), free(y);
}
END_TEST

/* ---- elementwise ---- */

START_TEST(eltwise_ops)
{
    struct pb_backend *be = cpu_backend();
    float *a = random_floats(2, N, 1.0f, true), *b = random_floats(3, N, 1.0f, false);
    float *y = floats(N), *want = floats(N);
    be->ops->relu_fwd(be, a, y, N);
    for (size_t i = 0; i < N; i++)
        want[i] = pb_k_relu(a[i]);
    assert_same_bits(y, want, N, "relu_fwd");
    be->ops->relu_bwd(be, a, b, y, N);
    for (size_t i = 0; i < N; i++)
        want[i] = pb_k_relu_bwd(a[i], b[i]);
    assert_same_bits(y, want, N, "relu_bwd");
    be->ops->add(be, a, b, y, N);
    for (size_t i = 0; i < N; i++)
        want[i] = pb_k_add(a[i], b[i]);
    assert_same_bits(y, want, N, "add");
    be->ops->add_relu(be, a, b, y, N);
    for (size_t i = 0; i < N; i++)
        want[i] = pb_k_add_relu(a[i], b[i]);
    assert_same_bits(y, want, N, "add_relu");
    float *y0 = random_floats(4, N, 1.0f, false);
    memcpy(y, y0, N * sizeof *y);
    be->ops->axpby(be, 0.3f, a, 0.7f, y, N);
    for (size_t i = 0; i < N; i++)
        want[i] = pb_k_axpby(0.3f, a[i], 0.7f, y0[i]);
    assert_same_bits(y, want, N, "axpby");
    be->ops->axpby(be, -1.5f, a, 0.0f, y, N);
    for (size_t i = 0; i < N; i++)
        want[i] = pb_k_scale(-1.5f, a[i]);
    assert_same_bits(y, want, N, "axpby, beta 0");
    free(a), free(b), free(y), free(y0), free(want);
    pb_backend_destroy(be);
}
END_TEST

/* ---- optimizer steps and predictions ---- */

static struct pb_optim_coef coef(void)
{
    return (struct pb_optim_coef){
        .neg_lr = -0.01f, .wd = 5e-4f, .mom = 0.9f, .one_minus_damp = 0.9f, .beta1 = 0.9f,
        .beta2 = 0.999f, .one_minus_beta1 = 0.1f, .one_minus_beta2 = 0.001f, .eps = 1e-8f,
        .neg_step_size = -0.0526f, .bc2_sqrt = 0.0447f, .bc1 = 0.19f, .decay = 0.99999f,
        .alpha = 0.99f, .one_minus_alpha = 0.01f, .bc2 = 0.002f, .nadam_g = -0.0531f,
        .nadam_m = -0.0817f};
}

/* One option set of one family: the backend's step against the shared function's loop
 * over copies of the same state. opt bits: 1 weight decay, 2 momentum buffer, 4 nesterov,
 * 8 first step, 16 zero_grad, 32 d_last, 64 g_last, 128 β1 = 0.3 (1 − β1 ≥ 0.5). */
static void check_step(struct pb_backend *be, enum pb_optk_family family, unsigned opt)
{
    struct pb_optim_coef c = coef();
    if (!(opt & 1))
        c.wd = 0.0f;
    if (opt & 128) {
        c.beta1 = 0.3f;
        c.one_minus_beta1 = 0.7f;
    }
    float *w = random_floats(10, N, 1.0f, false), *g = random_floats(11, N, 0.1f, false);
    float *b = random_floats(12, N, 0.1f, false), *m = random_floats(13, N, 0.1f, false);
    float *v = random_positive(14, N);
    float *rw = copy_of(w, N), *rg = copy_of(g, N), *rb = copy_of(b, N), *rm = copy_of(m, N);
    float *rv = copy_of(v, N), *dl = floats(N), *gl = floats(N), *rdl = floats(N), *rgl = floats(N);
    bool buf = opt & 2, first = opt & 8, zero = opt & 16;
    bool adamw = family == PB_OPTK_ADAMW, rms = family == PB_OPTK_RMSPROP;
    bool nadam = family == PB_OPTK_NADAM;
    bool sgd = family == PB_OPTK_SGD, nesterov = sgd && buf && (opt & 4);
    struct pb_optim_step_args a = {
        .family = family, .c = c, .first = first, .nesterov = nesterov, .zero_grad = zero,
        .n = N, .w = w, .g = g, .buf = (sgd || rms) && buf ? b : NULL,
        .m = sgd || rms ? NULL : m, .v = sgd || rms ? NULL : v, .sq = rms ? v : NULL,
        .d_last = opt & 32 ? dl : NULL, .g_last = opt & 64 ? gl : NULL};
    be->ops->optim_step(be, &a);
    for (size_t i = 0; i < N; i++) {
        float d;
        if (sgd)
            d = pb_k_sgd_step(&c, opt & 1, buf, first, nesterov, &rw[i], rg[i], &rb[i]);
        else if (rms)
            d = pb_k_rmsprop_step(&c, opt & 1, buf, &rw[i], rg[i], &rv[i], &rb[i]);
        else if (nadam)
            d = pb_k_nadam_step(&c, opt & 1, &rw[i], rg[i], &rm[i], &rv[i]);
        else
            d = pb_k_adam_step(&c, adamw, !adamw && (opt & 1), &rw[i], rg[i], &rm[i], &rv[i]);
        rdl[i] = d;
        rgl[i] = rg[i];
        if (zero)
            rg[i] = 0.0f;
    }
    assert_same_bits(w, rw, N, "w");
    assert_same_bits(g, rg, N, "g");
    if (a.buf)
        assert_same_bits(b, rb, N, "buf");
    if (a.m)
        assert_same_bits(m, rm, N, "m");
    if (a.v || a.sq)
        assert_same_bits(v, rv, N, "v or sq");
    if (a.d_last)
        assert_same_bits(dl, rdl, N, "d_last");
    if (a.g_last)
        assert_same_bits(gl, rgl, N, "g_last");
    float *all[] = {w, g, b, m, v, rw, rg, rb, rm, rv, dl, gl, rdl, rgl};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        free(all[k]);
}

/* every family and option set (those it reads: SGD all, Adam, AdamW and NAdam no buffer,
 * RMSprop neither nesterov nor a first step of its own), the vectorised loops (zeroing,
 * later steps) and the others; NAdam with β1 above and below 0.5 (lerp's two forms) */
START_TEST(optimizer_steps)
{
    struct pb_backend *be = cpu_backend();
    static const enum pb_optk_family fams[] = {PB_OPTK_SGD, PB_OPTK_ADAM, PB_OPTK_ADAMW,
                                               PB_OPTK_RMSPROP, PB_OPTK_NADAM, PB_OPTK_NADAM};
    for (size_t f = 0; f < sizeof fams / sizeof *fams; f++)
        for (unsigned opt = 0; opt < 128; opt++) {
            bool sgd = fams[f] == PB_OPTK_SGD, rms = fams[f] == PB_OPTK_RMSPROP;
            if ((!sgd && (opt & 12)) || (!sgd && !rms && (opt & 2)) || (sgd && (opt & 6) == 4))
                continue;
            check_step(be, fams[f], opt | (f == 5 ? 128 : 0));
        }
    pb_backend_destroy(be);
}
END_TEST

START_TEST(predictions)
{
    struct pb_backend *be = cpu_backend();
    float *w = random_floats(20, N, 1.0f, false), *x = random_floats(21, N, 0.1f, false);
    float *y = random_floats(22, N, 0.1f, false), *m = random_floats(23, N, 0.1f, false);
    float *v = random_positive(24, N), *out = floats(N), *want = floats(N);
    static const enum pb_dw_kind kinds[] = {PB_DW_LINEAR, PB_DW_LINEAR, PB_DW_ADAM, PB_DW_RMS};
    for (int inplace = 0; inplace < 2; inplace++)
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
            struct pb_dw_desc dw = {.kind = kinds[k], .x = x, .y = k == 0 ? y : NULL,
                                    .a = 0.9f, .b = 0.35f, .m = m, .v = v, .sq = v,
                                    .bc1 = 0.19f, .bc2_sqrt = 0.0447f, .eps = 1e-8f};
            float scale = -0.017f;
            for (size_t i = 0; i < N; i++) {
                float d = kinds[k] == PB_DW_ADAM ? pb_k_dw_adam(m[i], v[i], dw.bc1, dw.bc2_sqrt,
                                                                dw.eps)
                          : kinds[k] == PB_DW_RMS ? pb_k_dw_rms(x[i], v[i], dw.eps)
                          : dw.y                 ? pb_k_dw_linear2(dw.a, x[i], dw.b, y[i])
                                                 : pb_k_dw_linear1(dw.a, x[i]);
                want[i] = pb_k_predict(scale, d, w[i]);
            }
            if (inplace)
                memcpy(out, w, N * sizeof *out);
            struct pb_predict_args a = {.dw = dw, .scale = scale, .n = N,
                                        .w = inplace ? out : w, .w_hat = out};
            be->ops->predict(be, &a);
            assert_same_bits(out, want, N, "predict");
        }
    free(w), free(x), free(y), free(m), free(v), free(out), free(want);
    pb_backend_destroy(be);
}
END_TEST

/* ---- batch norm ---- */

/* oneDNN's batch norm (training and inference forward, backward; with and without the
 * ReLU) against the shared per-element functions given its statistics and sums. oneDNN
 * fuses (x − mean)·scale + β into one FMA on x86 with FMA (the build's -march=native);
 * elsewhere its kernels round twice and the functions are not its bits. */
START_TEST(batch_norm)
{
#if defined(__FMA__)
    struct pb_backend *be = cpu_backend();
    enum { B = 3, C = 21, H = 5, W = 7 };
    size_t n = (size_t)B * C * H * W, hw = (size_t)H * W;
    struct pb_shape s = {.n = B, .c = C, .h = H, .w = W};
    float *x = random_floats(30, n, 2.0f, false), *dy = random_floats(31, n, 1.0f, false);
    float *gamma = random_floats(32, C, 0.5f, false), *beta = random_floats(33, C, 1.0f, false);
    float *rm = random_floats(34, C, 0.1f, false), *rv = random_positive(35, C);
    float *y = floats(n), *dx = floats(n), *want = floats(n), *dg = floats(C), *db = floats(C);
    bool *kept = malloc(n * sizeof *kept);
    for (size_t i = 0; i < n; i++)
        x[i] += (float)(i / hw % C) * 0.25f;  /* a mean of its own per channel */
    float eps = 1e-5f, count = (float)(B * hw);
    for (int relu = 0; relu < 2; relu++) {
        void *aux = aligned_alloc(64, (be->ops->bn_aux_bytes(be, s, relu) + 63) / 64 * 64);
        struct pb_tensor tx = {.data = x, .shape = s, .layout = PB_LAYOUT_PLAIN};
        struct pb_tensor ty = tx, tdy = tx, tdx = tx;
        ty.data = y, tdy.data = dy, tdx.data = dx;
        be->ops->bn_fwd_train(be, &tx, gamma, beta, rm, rv, 0.1f, eps, relu, &ty, aux);
        const float *mean = aux, *var = mean + C;
        for (size_t i = 0; i < n; i++) {
            int c = (int)(i / hw % C);
            want[i] = pb_k_bn_fwd(x[i], mean[c], pb_k_bn_scale(gamma[c], var[c], eps),
                                  beta[c], relu, &kept[i]);
        }
        assert_same_bits(y, want, n, "bn_fwd_train");
        memset(dg, 0, C * sizeof *dg);
        memset(db, 0, C * sizeof *db);
        be->ops->bn_bwd(be, &tx, &tdy, gamma, aux, eps, relu, &tdx, dg, db);
        for (size_t i = 0; i < n; i++) {
            int c = (int)(i / hw % C);
            float inv = pb_k_bn_inv_std(var[c], eps);
            want[i] = pb_k_bn_bwd(x[i], dy[i], kept[i], mean[c], inv, gamma[c],
                                  pb_k_bn_dgamma_mean(dg[c], inv, count),
                                  pb_k_bn_dbeta_mean(db[c], count));
        }
        assert_same_bits(dx, want, n, "bn_bwd");
        be->ops->bn_fwd_infer(be, &tx, gamma, beta, rm, rv, eps, relu, &ty);
        for (size_t i = 0; i < n; i++) {
            int c = (int)(i / hw % C);
            want[i] = pb_k_bn_fwd(x[i], rm[c], pb_k_bn_scale(gamma[c], rv[c], eps), beta[c],
                                  relu, &kept[i]);
        }
        assert_same_bits(y, want, n, "bn_fwd_infer");
        free(aux);
    }
    float *all[] = {x, dy, gamma, beta, rm, rv, y, dx, want, dg, db};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        free(all[k]);
    free(kept);
    pb_backend_destroy(be);
#endif
}
END_TEST

/* ---- softmax cross-entropy ---- */

START_TEST(softmax_xent_rows)
{
    struct pb_backend *be = cpu_backend();
    enum { R = 37, CL = 29 };
    float *z = random_floats(40, R * CL, 3.0f, false), *d = floats(R * CL);
    float *want = floats(R * CL);
    int32_t labels[R];
    for (int r = 0; r < R; r++)
        labels[r] = (r * 7) % CL;
    z[5 * CL + 3] = z[5 * CL + 4] = 50.0f;  /* a tie: the first index wins */
    for (int ignore = -1; ignore <= 0; ignore++) {
        float eps_ls = ignore < 0 ? 0.0f : 0.1f;
        struct pb_xent_out out;
        be->ops->softmax_xent(be, z, labels, R, CL, eps_ls, ignore, 0, &out, d);
        int counted = 0, correct = 0;
        for (int r = 0; r < R; r++)
            counted += labels[r] != ignore;
        double eps = eps_ls, off = eps / CL, total = 0;
        for (int r = 0; r < R; r++) {
            const float *row = z + r * CL;
            if (labels[r] == ignore) {
                for (int j = 0; j < CL; j++)
                    want[r * CL + j] = 0.0f;
                continue;
            }
            int am = pb_k_xent_argmax(row, CL);
            correct += am == labels[r];
            double zsum, lse = pb_k_xent_lse(row, CL, row[am], &zsum);
            total += pb_k_xent_row_loss(lse, row[labels[r]], zsum, eps, off);
            for (int j = 0; j < CL; j++)
                want[r * CL + j] = pb_k_xent_dlogit(row[j], lse, j == labels[r], eps, off,
                                                    counted);
        }
        float loss = (float)(total / counted);
        ck_assert_int_eq(out.count, counted);
        ck_assert_int_eq(out.correct, correct);
        assert_same_bits(&out.loss, &loss, 1, "loss");
        assert_same_bits(d, want, R * CL, "dlogits");
    }
    free(z), free(d), free(want);
    pb_backend_destroy(be);
}
END_TEST

/* ---- sequences ---- */

START_TEST(sequence_ops)
{
    struct pb_backend *be = cpu_backend();
    enum { V = 13, D = 37, T = 6, BS = 4, F = 5 };
    float tok[2 * T] = {0, 3, 12, 3, 5, 0, 7, 7, 1, 12, 2, 3};
    float *table = random_floats(50, V * D, 1.0f, false), *y = floats(2 * T * D);
    float *want = floats(V * D > BS * T * F ? V * D : BS * T * F);
    ck_assert_int_eq(pb_k_token_row(2.5f, V), -1);
    ck_assert_int_eq(pb_k_token_row(13.0f, V), -1);
    ck_assert_int_eq(pb_k_token_row(-1.0f, V), -1);
    ck_assert_int_eq(pb_k_token_row(12.0f, V), 12);
    be->ops->embedding_fwd(be, tok, 2 * T, table, V, D, y);
    for (int i = 0; i < 2 * T; i++)
        pb_k_gather_row(table + pb_k_token_row(tok[i], V) * D, want + i * D, D);
    assert_same_bits(y, want, 2 * T * D, "embedding_fwd");
    float *dy = random_floats(51, 2 * T * D, 1.0f, false), *dt = random_floats(52, V * D, 1.0f,
                                                                               false);
    memcpy(want, dt, V * D * sizeof *want);
    be->ops->embedding_bwd(be, tok, 2 * T, dy, V, D, 3, dt);
    for (int i = 0; i < 2 * T; i++)
        if (pb_k_token_row(tok[i], V) != 3)
            pb_k_scatter_add_row(want + pb_k_token_row(tok[i], V) * D, dy + i * D, 0, D);
    assert_same_bits(dt, want, V * D, "embedding_bwd");

    int32_t lengths[BS] = {6, 1, 4, 3};
    float *x = random_floats(53, BS * T * F, 1.0f, false), *out = floats(BS * T * F);
    be->ops->seq_mean_fwd(be, x, lengths, BS, T, F, out);
    for (int b = 0; b < BS; b++)
        for (int j = 0; j < F; j++) {
            int len = pb_k_seq_len(lengths, b, T);
            double sum = 0;
            for (int t = 0; t < len; t++)
                sum += x[pb_k_seq_row(b, T, t) * F + j];
            want[b * F + j] = pb_k_seq_mean(sum, len);
        }
    assert_same_bits(out, want, BS * F, "seq_mean_fwd");
    be->ops->seq_mean_bwd(be, x, lengths, BS, T, F, out);
    for (int b = 0; b < BS; b++)
        for (int t = 0; t < T; t++)
            for (int j = 0; j < F; j++)
                want[pb_k_seq_row(b, T, t) * F + j] =
                    pb_k_seq_mean_bwd(x[b * F + j], t, pb_k_seq_len(lengths, b, T));
    assert_same_bits(out, want, BS * T * F, "seq_mean_bwd");
    for (int reverse = 0; reverse < 2; reverse++)
        for (int with_lengths = 0; with_lengths < 2; with_lengths++) {
            const int32_t *lens = with_lengths ? lengths : NULL;
            be->ops->seq_gather(be, x, F, lens, BS, T, F, reverse, out, F);
            for (int b = 0; b < BS; b++)
                for (int t = 0; t < T; t++) {
                    int len = pb_k_seq_len(lens, b, T);
                    const float *src =
                        x + pb_k_seq_row(b, T, pb_k_seq_src_step(t, len, reverse)) * F;
                    for (int j = 0; j < F; j++)
                        want[pb_k_seq_row(b, T, t) * F + j] = pb_k_seq_gather(src, j, t, len);
                }
            assert_same_bits(out, want, BS * T * F, "seq_gather");
        }
    free(table), free(y), free(want), free(dy), free(dt), free(x), free(out);
    pb_backend_destroy(be);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("kernels");
    tcase_add_test(tc, dropout_uniform_is_the_run);
    tcase_add_test(tc, dropout_op);
    tcase_add_test(tc, tanh_vector_is_scalar);
    tcase_add_test(tc, eltwise_ops);
    tcase_add_test(tc, optimizer_steps);
    tcase_add_test(tc, predictions);
    tcase_add_test(tc, batch_norm);
    tcase_add_test(tc, softmax_xent_rows);
    tcase_add_test(tc, sequence_ops);
    suite_add_tcase(s, tc);
    return s;
}
