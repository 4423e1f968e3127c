/* tests/model/test_init.c — the initialisations a model's definition may set (layer.h,
 * semantics §1.9): Kaiming normal (fan_out, ReLU gain), normal, truncated normal (as
 * torch.nn.init.trunc_normal_ with absolute bounds, its rejection and inverse-CDF paths),
 * constant, the zero-bias rule and the PyTorch default; each checked for its mean,
 * standard deviation and bounds within statistical limits, and for determinism by seed. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/model/model.h"
#include "tests/support/test_util.h"

/* Limits in standard errors: a correct sampler fails one with probability ~2e-9, and
 * the draws are fixed by the seed, so a pass is reproducible. */
#define NSE 6.0

/* One layer of cfg in a model of one block, finalised for shape `in`; its parameters
 * (and buffers) initialised from seed into fresh arrays. */
struct one_layer {
    struct pb_model m;
    float *params, *buffers;
    size_t np, nb;
};

static void init_one(struct one_layer *o, struct pb_layer_cfg cfg, struct pb_shape in, uint64_t seed)
{
    struct pb_err e;
    pb_model_init(&o->m, "init", in, 0);
    struct pb_block *b = pb_model_block(&o->m, "b");
    int x = -1;
    pb_block_node(&o->m, b, "l", &cfg, 1, &x);
    ck_assert_msg(pb_model_finalize(&o->m, 2, &e) == 0, "%s", e.msg);
    const struct pb_layer *l = &o->m.blocks[0].nodes[0];
    o->np = l->ops->param_count(l);
    o->nb = l->ops->buffer_count(l);
    o->params = calloc(o->np + 1, sizeof *o->params);
    o->buffers = calloc(o->nb + 1, sizeof *o->buffers);
    l->ops->init(l, o->params, o->buffers, seed);
}

static void finish_one(struct one_layer *o)
{
    free(o->params);
    free(o->buffers);
    pb_model_finish(&o->m);
}

struct stats {
    double mean, std, min, max;
};

static struct stats stats_of(const float *v, size_t n)
{
    struct stats s = {0, 0, INFINITY, -INFINITY};
    for (size_t i = 0; i < n; i++) {
        s.mean += v[i];
        s.min = fmin(s.min, v[i]);
        s.max = fmax(s.max, v[i]);
    }
    s.mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        s.std += (v[i] - s.mean) * (v[i] - s.mean);
    s.std = sqrt(s.std / (double)(n - 1));
    return s;
}

/* The sample mean and standard deviation of n draws match a distribution of mean mu and
 * standard deviation sigma: |mean − mu| < NSE·sigma/√n, and |s² − sigma²| < NSE·sigma²·√(2/n)
 * (the normal's variance of s², an upper bound for the lighter-tailed truncated ones). */
static void expect_moments(const char *what, struct stats s, size_t n, double mu, double sigma)
{
    double se_mean = sigma / sqrt((double)n), se_var = sigma * sigma * sqrt(2.0 / (double)n);
    ck_assert_msg(fabs(s.mean - mu) < NSE * se_mean, "%s: mean %.6g, expected %.6g ± %.3g", what,
                  s.mean, mu, NSE * se_mean);
    ck_assert_msg(fabs(s.std * s.std - sigma * sigma) < NSE * se_var,
                  "%s: std %.6g, expected %.6g (variance ± %.3g)", what, s.std, sigma, NSE * se_var);
}

static void expect_all(const float *v, size_t n, float value, const char *what)
{
    pb_assert_all(what, v, n, value);
}

static struct pb_layer_cfg conv_cfg(int cin, int cout, int k, bool bias, struct pb_init_spec init)
{
    return (struct pb_layer_cfg){.kind = PB_LAYER_CONV2D,
                                 .conv = {cin, cout, k, k, 1, 1, k / 2, k / 2, bias},
                                 .init = init};
}

static struct pb_layer_cfg linear_cfg(int in, int out, struct pb_init_spec init)
{
    return (struct pb_layer_cfg){.kind = PB_LAYER_LINEAR, .in_features = in, .out_features = out,
                                 .bias = true, .init = init};
}

/* kaiming_normal_(mode='fan_out', nonlinearity='relu'): N(0, 2 / (cout·kh·kw)); a bias
 * under the zero rule is 0. */
START_TEST(test_kaiming_normal)
{
    struct one_layer o;
    struct pb_init_spec k = {.kind = PB_INIT_KAIMING_NORMAL, .zero_bias = true};
    init_one(&o, conv_cfg(64, 128, 3, true, k), (struct pb_shape){1, 64, 4, 4}, 1);
    size_t nw = 128 * 64 * 9;
    ck_assert_uint_eq(o.np, nw + 128);
    expect_moments("kaiming conv", stats_of(o.params, nw), nw, 0.0, sqrt(2.0 / (128 * 9)));
    expect_all(o.params + nw, 128, 0.0f, "conv bias");
    finish_one(&o);
    /* a linear layer's fan_out is its out_features */
    init_one(&o, linear_cfg(300, 200, k), (struct pb_shape){1, 300, 1, 1}, 1);
    expect_moments("kaiming linear", stats_of(o.params, 60000), 60000, 0.0, sqrt(2.0 / 200));
    finish_one(&o);
}
END_TEST

/* normal_(0, 0.01) and a zero bias: VGG's classifier. */
START_TEST(test_normal)
{
    struct one_layer o;
    struct pb_init_spec n = {.kind = PB_INIT_NORMAL, .std = 0.01f, .zero_bias = true};
    init_one(&o, linear_cfg(512, 100, n), (struct pb_shape){1, 512, 1, 1}, 3);
    expect_moments("normal", stats_of(o.params, 51200), 51200, 0.0, 0.01);
    expect_all(o.params + 51200, 100, 0.0f, "linear bias");
    finish_one(&o);
}
END_TEST

static double phi(double x)
{
    return exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
}

static double cdf(double x)
{
    return 0.5 * erfc(-x / sqrt(2.0));
}

/* The mean and standard deviation of N(0, 1) truncated to [a, b] (the textbook
 * formulas), scaled by std. */
static void trunc_moments(double a, double b, double std, double *mu, double *sigma)
{
    double z = cdf(b) - cdf(a), m = (phi(a) - phi(b)) / z;
    double var = 1.0 + (a * phi(a) - b * phi(b)) / z - m * m;
    *mu = std * m;
    *sigma = std * sqrt(var);
}

/* trunc_normal_(std, a=lo, b=hi) over a 100×1000 linear weight: within the bounds,
 * with the truncated moments. The bias keeps PyTorch's default (Inception-V3's fc). */
static void check_trunc(float std, float lo, float hi, const char *what)
{
    struct one_layer o;
    struct pb_init_spec t = {.kind = PB_INIT_TRUNC_NORMAL, .std = std, .lo = lo, .hi = hi};
    init_one(&o, linear_cfg(1000, 100, t), (struct pb_shape){1, 1000, 1, 1}, 5);
    size_t n = 100000;
    struct stats s = stats_of(o.params, n);
    ck_assert_msg(s.min >= lo && s.max <= hi, "%s: values in [%g, %g], bounds [%g, %g]", what,
                  s.min, s.max, lo, hi);
    double mu, sigma;
    trunc_moments(lo / std, hi / std, std, &mu, &sigma);
    expect_moments(what, s, n, mu, sigma);
    struct stats b = stats_of(o.params + n, 100);
    ck_assert(b.min >= -1.0 / sqrt(1000.0) && b.max <= 1.0 / sqrt(1000.0) && b.max > b.min);
    finish_one(&o);
}

START_TEST(test_trunc_normal)
{
    check_trunc(0.1f, -2.0f, 2.0f, "Inception-V3's std 0.1 in ±2");  /* bounds at 20σ */
    check_trunc(1.0f, -2.0f, 2.0f, "std 1 in ±2");                   /* std 0.880 */
    check_trunc(1.0f, -0.5f, 3.0f, "std 1 in [-0.5, 3]");            /* mean shifted */
    /* P(3 < Z < 3.5) = 0.0011: most values come from the inverse-CDF fallback */
    check_trunc(1.0f, 3.0f, 3.5f, "std 1 in [3, 3.5]");
    check_trunc(0.5f, -2.0f, -1.5f, "std 0.5 in [-2, -1.5]");        /* the lower tail */
}
END_TEST

/* constant_: BatchNorm's γ = value and β = 0; the running statistics start at 0 and 1. */
START_TEST(test_constant_batchnorm)
{
    struct one_layer o;
    struct pb_layer_cfg bn = {.kind = PB_LAYER_BATCHNORM2D, .channels = 16, .eps = 1e-5f,
                              .momentum = 0.1f,
                              .init = {.kind = PB_INIT_CONSTANT, .value = 0.5f, .zero_bias = true}};
    init_one(&o, bn, (struct pb_shape){1, 16, 4, 4}, 1);
    expect_all(o.params, 16, 0.5f, "bn weight");
    expect_all(o.params + 16, 16, 0.0f, "bn bias");
    expect_all(o.buffers, 16, 0.0f, "running mean");
    expect_all(o.buffers + 16, 16, 1.0f, "running var");
    finish_one(&o);
    bn.init = (struct pb_init_spec){.kind = PB_INIT_CONSTANT, .value = 1.0f, .zero_bias = true};
    init_one(&o, bn, (struct pb_shape){1, 16, 4, 4}, 1);
    expect_all(o.params, 16, 1.0f, "bn weight");
    finish_one(&o);
}
END_TEST

/* The default spec is PyTorch's U(±1/√fan_in) for weight and bias alike, unchanged. */
START_TEST(test_default_uniform)
{
    struct one_layer o;
    init_one(&o, conv_cfg(32, 64, 3, true, (struct pb_init_spec){0}), (struct pb_shape){1, 32, 4, 4},
             2);
    size_t nw = 64 * 32 * 9;
    double bound = 1.0 / sqrt(32.0 * 9.0);
    struct stats w = stats_of(o.params, nw), b = stats_of(o.params + nw, 64);
    ck_assert(w.min >= -bound && w.max <= bound && b.min >= -bound && b.max <= bound);
    expect_moments("default", w, nw, 0.0, bound / sqrt(3.0));
    ck_assert(b.max > b.min);
    finish_one(&o);
}
END_TEST

/* The same seed gives the same bits; another seed or another layer (uid) other numbers. */
START_TEST(test_deterministic)
{
    struct pb_init_spec specs[] = {
        {.kind = PB_INIT_KAIMING_NORMAL},
        {.kind = PB_INIT_NORMAL, .std = 0.02f},
        {.kind = PB_INIT_TRUNC_NORMAL, .std = 1.0f, .lo = 2.0f, .hi = 2.5f},
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        struct one_layer a, b, c;
        struct pb_layer_cfg cfg = conv_cfg(8, 16, 3, false, specs[i]);
        struct pb_shape in = {1, 8, 4, 4};
        init_one(&a, cfg, in, 7);
        init_one(&b, cfg, in, 7);
        init_one(&c, cfg, in, 8);
        ck_assert(memcmp(a.params, b.params, a.np * sizeof(float)) == 0);
        ck_assert(memcmp(a.params, c.params, a.np * sizeof(float)) != 0);
        finish_one(&a);
        finish_one(&b);
        finish_one(&c);
    }
}
END_TEST

/* pb_model_set_init reaches every layer of the kind, in every block, and only those. */
START_TEST(test_model_set_init)
{
    struct pb_model m;
    struct pb_err e;
    pb_model_init(&m, "net", (struct pb_shape){1, 3, 8, 8}, 10);
    struct pb_block *b = pb_model_block(&m, "c1");
    pb_block_conv(&m, b, "conv", 3, 8, 3, 3, 1, 1, 1, false);
    pb_block_bn(&m, b, "bn", 8);
    b = pb_model_block(&m, "c2");
    pb_block_conv(&m, b, "conv", 8, 8, 3, 3, 2, 1, 1, false);
    pb_block_relu(&m, b, "relu");
    b = pb_model_block(&m, "fc");
    pb_block_gap(&m, b, "gap");
    pb_block_flatten(&m, b, "flatten");
    pb_block_linear(&m, b, "fc", 8, 10);
    struct pb_init_spec k = {.kind = PB_INIT_KAIMING_NORMAL};
    ck_assert_int_eq(pb_model_set_init(&m, PB_LAYER_CONV2D, k), 2);
    ck_assert_int_eq(pb_model_set_init(&m, PB_LAYER_LINEAR,
                                       (struct pb_init_spec){.kind = PB_INIT_NORMAL, .std = 0.01f}),
                     1);
    ck_assert_int_eq(m.blocks[0].nodes[0].cfg.init.kind, PB_INIT_KAIMING_NORMAL);
    ck_assert_int_eq(m.blocks[1].nodes[0].cfg.init.kind, PB_INIT_KAIMING_NORMAL);
    ck_assert_int_eq(m.blocks[0].nodes[1].cfg.init.kind, PB_INIT_DEFAULT);
    ck_assert_int_eq(m.blocks[2].nodes[2].cfg.init.kind, PB_INIT_NORMAL);
    ck_assert(pb_model_finalize(&m, 2, &e) == 0);
    pb_model_finish(&m);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("init");
    TCase *tc = tcase_create("distributions");
    tcase_add_test(tc, test_kaiming_normal);
    tcase_add_test(tc, test_normal);
    tcase_add_test(tc, test_trunc_normal);
    tcase_add_test(tc, test_constant_batchnorm);
    tcase_add_test(tc, test_default_uniform);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_model_set_init);
    suite_add_tcase(s, tc);
    return s;
}
