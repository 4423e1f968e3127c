/* tests/optim/test_predictors.c — semantics §3, §4.3: the weight predictors Ŵ = W − lr·s·ΔW on
 * the double-precision test vectors of §3.6 and on an independent double implementation of
 * §2/§3 (every form: paper, code, SpecTrain's code forward and backward), through the
 * CPU backend's ops; prediction never changes optimizer state; ΔW = 0 before the first
 * step; which forms are refused. */
#include <stdint.h>
#include <string.h>

#include "harness/compute/backend.h"
#include "harness/compute/cpu/cpu_backend.h"
#include "harness/optim/optim.h"
#include "predictors/predictor.h"
#include "tests/support/test_util.h"

/* semantics §3.6: a float32 implementation agrees with the double vectors to 1e-6 relative. */
#define SPEC_RTOL 1e-6

static void assert_rel(const char *what, double got, double want)
{
    ck_assert_msg(fabs(got - want) <= SPEC_RTOL * fabs(want),
                  "%s: got %.12g, expected %.12g (relative error %.3g > %g)", what, got, want,
                  fabs(got - want) / fabs(want), SPEC_RTOL);
}

/* An optimizer over n floats on the CPU backend, stepped with pb_optim_step and
 * predicted with pb_predict (the backend's optim_step / predict ops). */
struct fx {
    struct pb_backend *be;
    struct pb_optim o;
    float *w, *g, *w_hat, *zero;  /* device, n floats each */
    size_t n;
};

static void fx_init(struct fx *f, const struct pb_optim_cfg *c, size_t n, const float *w0)
{
    struct pb_err e;
    memset(f, 0, sizeof *f);
    f->be = pb_backend_cpu_create(1, &e);
    ck_assert_msg(f->be != NULL, "%s", e.msg);
    f->n = n;
    float **bufs[] = {&f->w, &f->g, &f->w_hat, &f->zero};
    for (int i = 0; i < 4; i++) {
        *bufs[i] = pb_backend_alloc(f->be, n * sizeof(float), PB_MEM_SCRATCH, &e);
        ck_assert_msg(*bufs[i] != NULL, "%s", e.msg);
        f->be->ops->fill(f->be, *bufs[i], 0.0f, n);
    }
    f->be->ops->upload(f->be, f->w, w0, n * sizeof(float));
    struct pb_optim_cfg keep = *c;
    keep.keep_d_last = true;  /* as a run whose schedule predicts: every form's state */
    keep.keep_g_last = true;
    ck_assert_msg(pb_optim_init(&f->o, f->be, &keep, n, &e) == 0, "%s", e.msg);
}

static void fx_finish(struct fx *f)
{
    pb_optim_finish(&f->o, f->be);
    float *bufs[] = {f->w, f->g, f->w_hat, f->zero};
    for (int i = 0; i < 4; i++)
        pb_backend_free(f->be, bufs[i]);
    pb_backend_destroy(f->be);
}

static void fx_step(struct fx *f, const float *g)
{
    f->be->ops->upload(f->be, f->g, g, f->n * sizeof(float));
    pb_optim_step(&f->o, f->be, f->w, f->g);
}

/* out[n] = Ŵ predicted from w (device) with form v and look-ahead s */
static void fx_predict_from(struct fx *f, const float *w, int v, float s, float *out)
{
    pb_predict(f->be, &f->o, (enum pb_predict_variant)v, s, w, f->w_hat);
    f->be->ops->download(f->be, out, f->w_hat, f->n * sizeof(float));
}

static void fx_predict(struct fx *f, int v, float s, float *out)
{
    fx_predict_from(f, f->w, v, s, out);
}

/* ΔW through the prediction from W = 0 with s = 1: Ŵ = −lr·ΔW, rounded once. */
static void fx_delta(struct fx *f, int v, double *dw)
{
    float out[64];
    ck_assert(f->n <= 64);
    fx_predict_from(f, f->zero, v, 1.0f, out);
    for (size_t i = 0; i < f->n; i++)
        dw[i] = -(double)out[i] / (double)f->o.lr;
}

static float fx_w0(struct fx *f)
{
    float w;
    f->be->ops->download(f->be, &w, f->w, sizeof w);
    return w;
}

/* semantics §2 in double, one element: the independent expectation. */
struct dopt {
    enum pb_optim_kind kind;
    double lr, u, tau, wd, b1, b2, eps, alpha;
    bool nesterov;
    long t;
    double w, buf, m, v, sq, d_last, g_last;
};

static void dopt_step(struct dopt *o, double g)
{
    o->t++;
    if (o->kind == PB_OPT_ADAMW)
        o->w *= 1.0 - o->lr * o->wd;
    double d = o->kind == PB_OPT_ADAMW ? g : g + o->wd * o->w;
    o->d_last = d;
    o->g_last = g;
    switch (o->kind) {
    case PB_OPT_SGD: {
        double step = d;
        if (o->u > 0) {
            o->buf = o->t == 1 ? d : o->u * o->buf + (1 - o->tau) * d;
            step = o->nesterov ? d + o->u * o->buf : o->buf;
        }
        o->w -= o->lr * step;
        break;
    }
    case PB_OPT_ADAM:
    case PB_OPT_ADAMW:
        o->m = o->b1 * o->m + (1 - o->b1) * d;
        o->v = o->b2 * o->v + (1 - o->b2) * d * d;
        o->w -= o->lr * (o->m / (1 - pow(o->b1, o->t))) /
                (sqrt(o->v / (1 - pow(o->b2, o->t))) + o->eps);
        break;
    default:
        o->sq = o->alpha * o->sq + (1 - o->alpha) * d * d;
        if (o->u > 0) {
            o->buf = o->u * o->buf + d / (sqrt(o->sq) + o->eps);
            o->w -= o->lr * o->buf;
        } else {
            o->w -= o->lr * d / (sqrt(o->sq) + o->eps);
        }
        break;
    }
}

/* semantics §3.2–§3.4 ΔW in double */
static double dopt_delta(const struct dopt *o, int v)
{
    if (o->t == 0)
        return 0;
    switch (o->kind) {
    case PB_OPT_SGD:
        if (v == PB_PREDICT_MOMENTUM)  /* SpecTrain's code backward; 0 with u = 0 */
            return o->u * o->buf;
        if (o->u == 0)
            return o->d_last;
        if (v == PB_PREDICT_CODE)
            return o->u * o->buf + (1 - o->tau) * o->d_last;
        if (v == PB_PREDICT_SPECTRAIN)  /* d_last with weight 1 whatever τ */
            return o->u * o->buf + o->d_last;
        return o->buf;
    case PB_OPT_ADAM:
    case PB_OPT_ADAMW: {
        double eps = v == PB_PREDICT_CODE ? 1e-8 : o->eps;  /* the code's fixed ε */
        return (o->m / (1 - pow(o->b1, o->t))) / (sqrt(o->v / (1 - pow(o->b2, o->t))) + eps);
    }
    default:
        if (v == PB_PREDICT_CODE)  /* the raw last gradient; the buffer ignored */
            return o->g_last / (sqrt(o->sq) + o->eps);
        return o->u > 0 ? o->buf : o->d_last / (sqrt(o->sq) + o->eps);
    }
}

static struct pb_optim_cfg cfg_of(const struct dopt *d)
{
    struct pb_optim_cfg c;
    struct pb_err e;
    static const char *const names[] = {"sgd", "adam", "adamw", "rmsprop"};
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, names[d->kind], &e), 0);
    c.lr = (float)d->lr;
    c.momentum = (float)d->u;
    c.dampening = (float)d->tau;
    c.nesterov = d->nesterov;
    c.weight_decay = (float)d->wd;
    c.beta1 = (float)d->b1;
    c.beta2 = (float)d->b2;
    c.eps = (float)d->eps;
    c.alpha = (float)d->alpha;
    return c;
}

static const float spec_grads[3] = {0.2f, -0.1f, 0.3f};  /* semantics §3.6, SGDM */

START_TEST(test_spec_sgdm)
{
    struct pb_optim_cfg c;
    struct pb_err e;
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "sgdm", &e), 0);  /* lr 0.01, u 0.9, τ 0 */
    struct fx f;
    float w0 = 1.0f, out;
    fx_init(&f, &c, 1, &w0);
    for (int k = 0; k < 3; k++)
        fx_step(&f, &spec_grads[k]);
    assert_rel("SGDM W3", fx_w0(&f), 0.99348);
    float buf;
    f.be->ops->download(f.be, &buf, f.o.buf, sizeof buf);
    assert_rel("SGDM buf", buf, 0.372);
    static const double paper[4] = {0.98232, 0.98604, 0.98976, 0.99348};
    static const double code[4] = {0.968088, 0.974436, 0.980784, 0.987132};
    char what[64];
    for (int k = 0; k < 4; k++) {
        fx_predict(&f, PB_PREDICT_PAPER, (float)(3 - k), &out);
        snprintf(what, sizeof what, "SGDM paper s=%d", 3 - k);
        assert_rel(what, out, paper[k]);
        fx_predict(&f, PB_PREDICT_CODE, (float)(4 - k), &out);
        snprintf(what, sizeof what, "SGDM code s=%d", 4 - k);
        assert_rel(what, out, code[k]);
    }
    double dw;
    fx_delta(&f, PB_PREDICT_CODE, &dw);
    assert_rel("SGDM code ΔW", dw, 0.6348);
    /* SpecTrain's code forward u·buf + d_last: with τ = 0 the same ΔW */
    fx_delta(&f, PB_PREDICT_SPECTRAIN, &dw);
    assert_rel("SGDM spectrain ΔW", dw, 0.6348);
    /* SpecTrain's code backward: ΔW = u·buf */
    fx_predict(&f, PB_PREDICT_MOMENTUM, 2.0f, &out);
    assert_rel("SGDM momentum s=2", out, 0.99348 - 0.01 * 2 * 0.9 * 0.372);
    fx_finish(&f);
}
END_TEST

START_TEST(test_spec_adam)
{
    struct pb_optim_cfg c;
    struct pb_err e;
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "adam", &e), 0);  /* 1e-3, (0.9, 0.999), 1e-8 */
    struct fx f;
    float w0 = 0.5f, out;
    fx_init(&f, &c, 1, &w0);
    static const float grads[3] = {0.1f, -0.2f, 0.05f};
    for (int k = 0; k < 3; k++)
        fx_step(&f, &grads[k]);
    assert_rel("Adam W3", fx_w0(&f), 0.49950279425660216);
    double dw;
    fx_delta(&f, PB_PREDICT_PAPER, &dw);
    assert_rel("Adam ΔW", dw, -0.1366906527172428);
    static const double pred[4] = {0.4999128662147539, 0.49977617556203663, 0.4996394849093194,
                                   0.49950279425660216};
    char what[64];
    for (int k = 0; k < 4; k++) {
        snprintf(what, sizeof what, "Adam s=%d", 3 - k);
        fx_predict(&f, PB_PREDICT_PAPER, (float)(3 - k), &out);
        assert_rel(what, out, pred[k]);
        fx_predict(&f, PB_PREDICT_CODE, (float)(3 - k), &out);
        assert_rel(what, out, pred[k]);
    }
    fx_finish(&f);

    /* one step from W0 = 0 with g = 0.1 */
    w0 = 0.0f;
    fx_init(&f, &c, 1, &w0);
    float g = 0.1f;
    fx_step(&f, &g);
    assert_rel("Adam one step W1", fx_w0(&f), -0.00099999990000001);
    fx_delta(&f, PB_PREDICT_PAPER, &dw);
    assert_rel("Adam one step ΔW", dw, 0.99999990000001);
    fx_predict(&f, PB_PREDICT_PAPER, 3.0f, &out);
    assert_rel("Adam one step s=3", out, -0.00399999960000004);
    fx_finish(&f);
}
END_TEST

/* Runs d (1 element) in double and in the harness, then compares W and every defined
 * prediction form for s = 0..3 and ΔW. */
static void check_against_double(struct dopt d, const double *grads, int steps)
{
    struct pb_optim_cfg c = cfg_of(&d);
    struct fx f;
    float w0 = (float)d.w, out;
    fx_init(&f, &c, 1, &w0);
    for (int k = 0; k < steps; k++) {
        float g = (float)grads[k];
        fx_step(&f, &g);
        dopt_step(&d, grads[k]);
    }
    char what[96];
    const char *name = pb_optim_kind_name(d.kind);
    snprintf(what, sizeof what, "%s u=%g W%d", name, d.u, steps);
    assert_rel(what, fx_w0(&f), d.w);
    for (int v = 0; v < PB_PREDICT_NFORMS; v++) {
        if (pb_predictor_check(d.kind, &c, (enum pb_predict_variant)v, NULL))
            continue;
        double dw;
        fx_delta(&f, v, &dw);
        snprintf(what, sizeof what, "%s u=%g form %d ΔW", name, d.u, v);
        assert_rel(what, dw, dopt_delta(&d, v));
        for (int s = 0; s <= 3; s++) {
            fx_predict(&f, v, (float)s, &out);
            snprintf(what, sizeof what, "%s u=%g form %d s=%d", name, d.u, v, s);
            assert_rel(what, out, d.w - d.lr * s * dopt_delta(&d, v));
        }
    }
    fx_finish(&f);
}

START_TEST(test_sgd_forms)
{
    static const double g4[4] = {0.2, -0.1, 0.3, 0.05};
    /* plain SGD with weight decay: ΔW = d_last = g + λW (paper and code alike; SpecTrain's
     * code forward d_last, its backward 0) */
    check_against_double((struct dopt){.kind = PB_OPT_SGD, .lr = 0.05, .wd = 0.01, .w = 1.0},
                         g4, 4);
    /* dampening: code ΔW = u·buf + (1−τ)·d_last, SpecTrain's code forward u·buf + d_last */
    check_against_double((struct dopt){.kind = PB_OPT_SGD, .lr = 0.01, .u = 0.9, .tau = 0.5,
                                       .w = 1.0}, g4, 4);
    check_against_double((struct dopt){.kind = PB_OPT_SGD, .lr = 0.01, .u = 0.9, .tau = 0.1,
                                       .wd = 5e-4, .w = 0.3}, g4, 4);
    /* nesterov with weight decay: ΔW is still the buffer */
    check_against_double((struct dopt){.kind = PB_OPT_SGD, .lr = 0.01, .u = 0.9, .nesterov = true,
                                       .wd = 5e-4, .w = -0.7}, g4, 4);
}
END_TEST

/* semantics §3.4, SpecTrain's code variant with plain SGD: the backward's form (MOMENTUM)
 * reads W unchanged, bit for bit, after any number of steps; the forward's
 * (SPECTRAIN) is d_last, the paper's ΔW. */
START_TEST(test_spectrain_plain_sgd)
{
    struct pb_optim_cfg c;
    struct pb_err e;
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "sgd", &e), 0);
    c.weight_decay = 5e-4f;
    float w0[8] = {0.5f, -1.0f, 2.0f, 0.25f, -0.125f, 1.5f, -0.75f, 1.0f}, g[8];
    float w[8], out[8], paper[8];
    struct fx f;
    fx_init(&f, &c, 8, w0);
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 8; i++)
            g[i] = 0.1f * (float)(k + 1) * (float)(i - 4);
        fx_step(&f, g);
        f.be->ops->download(f.be, w, f.w, sizeof w);
        for (int s = 1; s <= 3; s++) {
            fx_predict(&f, PB_PREDICT_MOMENTUM, (float)s, out);
            ck_assert_msg(memcmp(out, w, sizeof w) == 0, "step %d s=%d: Ŵ != W", k + 1, s);
            fx_predict(&f, PB_PREDICT_SPECTRAIN, (float)s, out);
            fx_predict(&f, PB_PREDICT_PAPER, (float)s, paper);
            ck_assert_msg(memcmp(out, paper, sizeof out) == 0,
                          "step %d s=%d: forward ΔW is not d_last", k + 1, s);
        }
    }
    ck_assert_ptr_null(f.o.buf);
    fx_finish(&f);
}
END_TEST

START_TEST(test_rmsprop_forms)
{
    static const double g4[4] = {0.2, -0.1, 0.3, 0.05};
    /* μ = 0: paper ΔW = d_last/(√sq + ε), d_last including the L2 term; code ΔW =
     * g_last/(√sq + ε) with the raw gradient */
    check_against_double((struct dopt){.kind = PB_OPT_RMSPROP, .lr = 0.01, .alpha = 0.99,
                                       .eps = 1e-8, .wd = 0.01, .w = 1.0}, g4, 4);
    /* μ > 0: paper ΔW = buf; code ΔW = g_last/(√sq + ε), the buffer ignored */
    check_against_double((struct dopt){.kind = PB_OPT_RMSPROP, .lr = 0.01, .alpha = 0.9,
                                       .eps = 1e-6, .u = 0.9, .w = 1.0}, g4, 4);
    check_against_double((struct dopt){.kind = PB_OPT_RMSPROP, .lr = 0.01, .alpha = 0.99,
                                       .eps = 1e-8, .u = 0.5, .wd = 0.01, .w = -0.4}, g4, 4);
}
END_TEST

/* AdamW's ΔW is Adam's m̂/(√v̂ + ε): the decoupled decay λW is not in it. */
START_TEST(test_adamw_excludes_decay)
{
    static const double g4[4] = {0.1, -0.2, 0.05, 0.3};
    check_against_double((struct dopt){.kind = PB_OPT_ADAMW, .lr = 0.01, .b1 = 0.9, .b2 = 0.999,
                                       .eps = 1e-8, .wd = 0.5, .w = 0.5}, g4, 4);
    check_against_double((struct dopt){.kind = PB_OPT_ADAM, .lr = 0.01, .b1 = 0.9, .b2 = 0.999,
                                       .eps = 1e-8, .wd = 0.5, .w = 0.5}, g4, 4);
    /* same gradients: AdamW(λ = 0.5) and Adam(λ = 0) keep identical m, v, hence ΔW */
    struct pb_optim_cfg ca, cw;
    struct pb_err e;
    ck_assert_int_eq(pb_optim_cfg_from_name(&ca, "adam", &e), 0);
    ck_assert_int_eq(pb_optim_cfg_from_name(&cw, "adamw", &e), 0);
    cw.weight_decay = 0.5f;
    struct fx fa, fw;
    float w0[8] = {0.5f, -1.0f, 2.0f, 0.25f, -0.125f, 3.0f, 0.0f, 1.5f};
    fx_init(&fa, &ca, 8, w0);
    fx_init(&fw, &cw, 8, w0);
    for (int k = 0; k < 4; k++) {
        float g[8];
        for (int i = 0; i < 8; i++)
            g[i] = (float)g4[k] * (float)(i + 1);
        fx_step(&fa, g);
        fx_step(&fw, g);
    }
    float pa[8], pw[8], wa[8], ww[8];
    fx_predict_from(&fa, fa.zero, PB_PREDICT_PAPER, 2.0f, pa);
    fx_predict_from(&fw, fw.zero, PB_PREDICT_PAPER, 2.0f, pw);
    ck_assert_msg(memcmp(pa, pw, sizeof pa) == 0, "AdamW ΔW differs from Adam's");
    fa.be->ops->download(fa.be, wa, fa.w, sizeof wa);
    fw.be->ops->download(fw.be, ww, fw.w, sizeof ww);
    ck_assert_msg(memcmp(wa, ww, sizeof wa) != 0, "the decay had no effect on W");
    fx_finish(&fa);
    fx_finish(&fw);
}
END_TEST

/* Adam/AdamW's code form hard-codes ε = 1e-8 (semantics §3.3): with the optimizer's ε = 1e-3
 * the step uses 1e-3, the paper ΔW 1e-3 and the code ΔW 1e-8. */
START_TEST(test_adam_code_eps)
{
    static const double g4[4] = {0.1, -0.2, 0.05, 0.3};
    check_against_double((struct dopt){.kind = PB_OPT_ADAM, .lr = 0.001, .b1 = 0.9, .b2 = 0.999,
                                       .eps = 1e-3, .w = 0.5}, g4, 4);
    check_against_double((struct dopt){.kind = PB_OPT_ADAMW, .lr = 0.001, .b1 = 0.9, .b2 = 0.999,
                                       .eps = 1e-3, .wd = 0.01, .w = 0.5}, g4, 4);
    struct pb_optim_cfg c;
    struct pb_err e;
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "adam", &e), 0);
    c.eps = 1e-3f;
    float w0 = 0.5f, g = 0.01f;
    double paper, code;
    struct fx f;
    fx_init(&f, &c, 1, &w0);
    fx_step(&f, &g);
    fx_delta(&f, PB_PREDICT_PAPER, &paper);
    fx_delta(&f, PB_PREDICT_CODE, &code);
    /* m̂ = 0.01, √v̂ = 0.01: paper ΔW = 0.01/0.011, code ΔW = 0.01/(0.01 + 1e-8) */
    assert_rel("Adam ε = 1e-3 paper ΔW", paper, 0.01 / 0.011);
    assert_rel("Adam ε = 1e-3 code ΔW", code, 0.01 / (0.01 + 1e-8));
    fx_finish(&f);
}
END_TEST

/* The configurations of the state tests: every optimizer and state layout. */
static struct pb_optim_cfg state_cfg(int i)
{
    static const char *const names[] = {"sgd", "sgdm", "sgdm", "adam", "adamw", "rmsprop",
                                        "rmsprop"};
    struct pb_optim_cfg c;
    struct pb_err e;
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, names[i], &e), 0);
    c.weight_decay = 0.01f;
    c.dampening = i == 1 ? 0.2f : 0.0f;
    c.nesterov = i == 2;
    if (i == 6)
        c.momentum = 0.9f;
    return c;
}
#define N_STATE_CFGS 7
#define STATE_N 37
#define N_STATE_BUFS 6

static void state_bits(struct fx *f, float *out /* [N_STATE_BUFS * STATE_N] */)
{
    float *state[N_STATE_BUFS] = {f->o.buf, f->o.m, f->o.v, f->o.sq, f->o.d_last, f->o.g_last};
    memset(out, 0, N_STATE_BUFS * STATE_N * sizeof(float));
    for (int s = 0; s < N_STATE_BUFS; s++)
        if (state[s])
            f->be->ops->download(f->be, out + s * STATE_N, state[s], STATE_N * sizeof(float));
}

START_TEST(test_prediction_keeps_state)
{
    struct pb_optim_cfg c = state_cfg(_i);
    float w0[STATE_N], g[STATE_N];
    uint32_t x = 12345u + (uint32_t)_i;
    for (int i = 0; i < STATE_N; i++) {
        x = x * 1664525u + 1013904223u;
        w0[i] = (float)((int)(x >> 8) % 2001 - 1000) / 500.0f;
    }
    struct fx f;
    fx_init(&f, &c, STATE_N, w0);
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < STATE_N; i++) {
            x = x * 1664525u + 1013904223u;
            g[i] = (float)((int)(x >> 8) % 2001 - 1000) / 1000.0f;
        }
        fx_step(&f, g);
    }
    static float before[N_STATE_BUFS * STATE_N], after[N_STATE_BUFS * STATE_N];
    float wb[STATE_N], wa[STATE_N], out[STATE_N];
    state_bits(&f, before);
    f.be->ops->download(f.be, wb, f.w, sizeof wb);
    struct pb_optim copy = f.o;
    for (int v = 0; v < PB_PREDICT_NFORMS; v++) {
        if (pb_predictor_check(c.kind, &c, (enum pb_predict_variant)v, NULL))
            continue;
        for (int s = 0; s <= 4; s++)
            fx_predict(&f, v, (float)s, out);
    }
    state_bits(&f, after);
    f.be->ops->download(f.be, wa, f.w, sizeof wa);
    ck_assert_msg(memcmp(before, after, sizeof before) == 0,
                  "%s: prediction changed the optimizer state", pb_optim_kind_name(c.kind));
    ck_assert_msg(memcmp(wb, wa, sizeof wb) == 0, "prediction changed W");
    ck_assert(copy.t == f.o.t && copy.lr == f.o.lr && copy.buf == f.o.buf &&
              copy.m == f.o.m && copy.v == f.o.v && copy.sq == f.o.sq &&
              copy.d_last == f.o.d_last && copy.g_last == f.o.g_last);
    fx_finish(&f);
}
END_TEST

START_TEST(test_no_step_no_delta)
{
    struct pb_optim_cfg c = state_cfg(_i);
    float w0[STATE_N], out[STATE_N];
    for (int i = 0; i < STATE_N; i++)
        w0[i] = 0.1f * (float)(i - 18);
    struct fx f;
    fx_init(&f, &c, STATE_N, w0);
    for (int v = 0; v < PB_PREDICT_NFORMS; v++) {
        if (pb_predictor_check(c.kind, &c, (enum pb_predict_variant)v, NULL))
            continue;
        fx_predict(&f, v, 3.0f, out);
        ck_assert_msg(memcmp(out, w0, sizeof out) == 0, "%s form %d: Ŵ != W before a step",
                      pb_optim_kind_name(c.kind), v);
    }
    fx_finish(&f);
}
END_TEST

START_TEST(test_predictor_check)
{
    struct pb_optim_cfg c;
    struct pb_err e;
    static const char *const others[] = {"adam", "adamw", "rmsprop"};
    static const enum pb_predict_variant sgd_only[] = {PB_PREDICT_MOMENTUM, PB_PREDICT_SPECTRAIN};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(pb_optim_cfg_from_name(&c, others[i], &e), 0);
        c.momentum = 0.9f;
        ck_assert_int_eq(pb_predictor_check(c.kind, &c, PB_PREDICT_PAPER, &e), 0);
        ck_assert_int_eq(pb_predictor_check(c.kind, &c, PB_PREDICT_CODE, &e), 0);
        for (int k = 0; k < 2; k++) {
            e.msg[0] = '\0';
            ck_assert_int_eq(pb_predictor_check(c.kind, &c, sgd_only[k], &e), -1);
            ck_assert_msg(strstr(e.msg, "needs SGD or SGDM") && strstr(e.msg, others[i]),
                          "message: %s", e.msg);
        }
    }
    /* semantics §3.4: SpecTrain's code variant runs with plain SGD too (backward ΔW = 0) */
    static const char *const sgds[] = {"sgd", "sgdm"};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(pb_optim_cfg_from_name(&c, sgds[i], &e), 0);
        for (int v = 0; v < PB_PREDICT_NFORMS; v++)
            ck_assert_msg(pb_predictor_check(c.kind, &c, (enum pb_predict_variant)v, &e) == 0,
                          "%s form %d: %s", sgds[i], v, e.msg);
    }
    ck_assert_int_eq(pb_predictor_check(c.kind, &c, (enum pb_predict_variant)7, &e), -1);
    ck_assert_msg(strstr(e.msg, "unknown prediction form 7"), "message: %s", e.msg);
    /* NAdam has no ΔW in any form: refused, with the schedules that run it */
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "nadam", &e), 0);
    for (int v = 0; v < PB_PREDICT_NFORMS; v++) {
        e.msg[0] = '\0';
        ck_assert_int_eq(pb_predictor_check(c.kind, &c, (enum pb_predict_variant)v, &e), -1);
        ck_assert_msg(strstr(e.msg, "nadam has no weight prediction") &&
                      strstr(e.msg, "pipedream"), "form %d: %s", v, e.msg);
    }
}
END_TEST

/* Which copies of the last step each form makes the optimizer keep (semantics §3.5). */
START_TEST(test_reads_last)
{
    static const struct {
        const char *name;
        float momentum;
        enum pb_predict_variant form;
        bool d_last, g_last;
    } cases[] = {
        {"sgd", 0.0f, PB_PREDICT_PAPER, true, false},
        {"sgd", 0.0f, PB_PREDICT_CODE, true, false},
        {"sgd", 0.0f, PB_PREDICT_SPECTRAIN, true, false},
        {"sgd", 0.0f, PB_PREDICT_MOMENTUM, false, false},
        {"sgdm", 0.9f, PB_PREDICT_PAPER, false, false},
        {"sgdm", 0.9f, PB_PREDICT_CODE, true, false},
        {"sgdm", 0.9f, PB_PREDICT_SPECTRAIN, true, false},
        {"sgdm", 0.9f, PB_PREDICT_MOMENTUM, false, false},
        {"adam", 0.0f, PB_PREDICT_PAPER, false, false},
        {"adamw", 0.0f, PB_PREDICT_CODE, false, false},
        {"rmsprop", 0.0f, PB_PREDICT_PAPER, true, false},
        {"rmsprop", 0.0f, PB_PREDICT_CODE, false, true},
        {"rmsprop", 0.9f, PB_PREDICT_PAPER, false, false},
        {"rmsprop", 0.9f, PB_PREDICT_CODE, false, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct pb_optim_cfg c;
        struct pb_err e;
        ck_assert_int_eq(pb_optim_cfg_from_name(&c, cases[i].name, &e), 0);
        c.momentum = cases[i].momentum;
        ck_assert_msg(pb_predictor_reads_d_last(&c, cases[i].form) == cases[i].d_last &&
                          pb_predictor_reads_g_last(&c, cases[i].form) == cases[i].g_last,
                      "%s u=%g form %d", cases[i].name, (double)c.momentum, (int)cases[i].form);
    }
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("predictors");
    TCase *tc = tcase_create("predictors");
    tcase_add_test(tc, test_spec_sgdm);
    tcase_add_test(tc, test_spec_adam);
    tcase_add_test(tc, test_sgd_forms);
    tcase_add_test(tc, test_spectrain_plain_sgd);
    tcase_add_test(tc, test_rmsprop_forms);
    tcase_add_test(tc, test_adamw_excludes_decay);
    tcase_add_test(tc, test_adam_code_eps);
    tcase_add_loop_test(tc, test_prediction_keeps_state, 0, N_STATE_CFGS);
    tcase_add_loop_test(tc, test_no_step_no_delta, 0, N_STATE_CFGS);
    tcase_add_test(tc, test_predictor_check);
    tcase_add_test(tc, test_reads_last);
    suite_add_tcase(s, tc);
    return s;
}
