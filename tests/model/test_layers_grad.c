/* tests/model/test_layers_grad.c — finite-difference gradient checks of every layer kind:
 * with L = Σ r ⊙ y for a fixed random r (so dL/dy = r), the backward's dL/dx and
 * dL/dW must match central differences (L(θ + h) − L(θ − h)) / 2h. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "tests/support/layer_cases.h"
#include "harness/base/rng.h"
#include "tests/support/test_util.h"

/* h = 1e-3: the truncation error (h² · L''') is far below the tolerance for smooth
 * layers, and ReLU and max-pooling kinks are rarely within h of a random input.
 * L is summed in double from float32 outputs; each output carries ~6e-8 relative
 * rounding, which divided by 2h gives ~1e-4 absolute noise on O(1) derivatives:
 * the tolerance is atol 5e-3 + rtol 2e-2.
 * The residual block is checked without its ReLUs ("residual_smooth"): with BatchNorm
 * feeding a ReLU, one weight's perturbation moves the batch statistics and so every
 * ReLU input, and with hundreds of them one crosses zero within ±h about every
 * other perturbation — PyTorch's own float32 differences miss 5 of 24 samples there
 * at h = 1e-3. Its ReLU version is checked against PyTorch (test_layers_parity). */
#define FD_H 1e-3
#define FD_RTOL 2e-2
#define FD_ATOL 5e-3
#define FD_SAMPLES 24

static void fill_normal(float *v, size_t n, uint64_t seed, uint64_t which)
{
    struct pb_rng_key k = pb_rng_key(PB_RNG_DATA, seed, which, 0, 0);
    for (size_t i = 0; i < n; i++)
        v[i] = pb_rng_normal(k, i);
}

static double loss_of(struct case_run *r, const float *x, const float *rr, size_t ny)
{
    struct pb_stage_act act;
    float *y = case_forward(r, x, true, &act, 0);
    double l = 0;
    for (size_t i = 0; i < ny; i++)
        l += (double)rr[i] * y[i];
    pb_stage_act_release(&r->stage, &act);
    free(y);
    return l;
}

static void check_fd(const char *what, size_t i, double fd, double an)
{
    ck_assert_msg(fabs(fd - an) <= FD_ATOL + FD_RTOL * fabs(an),
                  "%s[%zu]: finite difference %.6g, backward %.6g", what, i, fd, an);
}

static void grad_case(const char *name)
{
    const struct layer_case *c = layer_case_find(name);
    struct case_run r;
    case_run_init(&r, c, 3);
    struct pb_stage *s = &r.stage;
    struct pb_backend *be = r.be;
    size_t nx = pb_shape_count(s->in_shape), ny = pb_shape_count(s->out_shape), np = s->nparams;
    float *x = malloc(nx * sizeof *x), *rr = malloc(ny * sizeof *rr);
    fill_normal(x, nx, 11, 0);
    fill_normal(rr, ny, 11, 1);

    struct pb_stage_act act;
    float *y = case_forward(&r, x, true, &act, 0);
    float *dx = case_backward(&r, &act, rr);
    float *g = malloc((np + 1) * sizeof *g), *w = malloc((np + 1) * sizeof *w);
    be->ops->download(be, g, s->grads, np * sizeof(float));
    be->ops->download(be, w, s->params, np * sizeof(float));

    size_t step = nx / FD_SAMPLES + 1;
    for (size_t i = 0; i < nx; i += step) {
        float keep = x[i];
        x[i] = keep + (float)FD_H;
        double lp = loss_of(&r, x, rr, ny);
        x[i] = keep - (float)FD_H;
        double lm = loss_of(&r, x, rr, ny);
        x[i] = keep;
        check_fd("dx", i, (lp - lm) / (2 * FD_H), dx[i]);
    }
    step = np / FD_SAMPLES + 1;
    for (size_t i = 0; i < np; i += step) {
        float keep = w[i];
        w[i] = keep + (float)FD_H;
        be->ops->upload(be, s->params, w, np * sizeof(float));
        double lp = loss_of(&r, x, rr, ny);
        w[i] = keep - (float)FD_H;
        be->ops->upload(be, s->params, w, np * sizeof(float));
        double lm = loss_of(&r, x, rr, ny);
        w[i] = keep;
        be->ops->upload(be, s->params, w, np * sizeof(float));
        check_fd("dW", i, (lp - lm) / (2 * FD_H), g[i]);
    }
    free(x);
    free(rr);
    free(y);
    free(dx);
    free(g);
    free(w);
    case_run_finish(&r);
}

#define GRAD_TEST(nm)                                                                          \
    START_TEST(test_##nm) { grad_case(#nm); }                                                  \
    END_TEST

GRAD_TEST(linear)
GRAD_TEST(conv3x3)
GRAD_TEST(conv1x7)
GRAD_TEST(conv7x1)
GRAD_TEST(conv_s2)
GRAD_TEST(conv11)
GRAD_TEST(bn_train)
GRAD_TEST(maxpool)
GRAD_TEST(avgpool)
GRAD_TEST(gap)
GRAD_TEST(relu)
GRAD_TEST(residual_smooth)
GRAD_TEST(branches)
GRAD_TEST(dropout)
GRAD_TEST(flatten_linear)

/* Dropout: the mask is a function of (seed, stage, micro-batch, layer) only, about a
 * fraction p of the elements are zeroed, the rest scaled by 1/(1 − p). */
START_TEST(test_dropout_mask)
{
    const struct layer_case *c = layer_case_find("dropout");
    struct case_run r;
    case_run_init(&r, c, 3);
    size_t n = pb_shape_count(r.stage.in_shape);
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = 1.0f;
    struct pb_stage_act act;
    float *y0 = case_forward(&r, x, true, &act, 5);
    pb_stage_act_release(&r.stage, &act);
    float *y1 = case_forward(&r, x, true, &act, 5);
    pb_stage_act_release(&r.stage, &act);
    float *y2 = case_forward(&r, x, true, &act, 6);
    pb_stage_act_release(&r.stage, &act);
    int zeros = 0, same = 1, differs = 0;
    int scaled = 0;
    for (size_t i = 0; i < n; i++) {
        scaled += y0[i] == 0.0f || fabsf(y0[i] - 1.0f / 0.7f) < 1e-6f;
        zeros += y0[i] == 0.0f;
        same &= y0[i] == y1[i];
        differs |= y0[i] != y2[i];
    }
    ck_assert_msg(scaled == (int)n, "an output neither dropped nor scaled by 1/(1-p)");
    ck_assert(same);
    ck_assert(differs);
    /* 120 draws at p = 0.3: mean 36, standard deviation 5; 4 sigma either side */
    ck_assert_msg(zeros > 16 && zeros < 56, "%d of %zu zeroed", zeros, n);
    float *ye = case_forward(&r, x, false, &act, 5);
    pb_assert_all("inference dropout", ye, n, 1.0f);
    free(x);
    free(y0);
    free(y1);
    free(y2);
    free(ye);
    case_run_finish(&r);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("layers_grad");
    TCase *tc = tcase_create("finite_differences");
    tcase_add_test(tc, test_linear);
    tcase_add_test(tc, test_conv3x3);
    tcase_add_test(tc, test_conv1x7);
    tcase_add_test(tc, test_conv7x1);
    tcase_add_test(tc, test_conv_s2);
    tcase_add_test(tc, test_conv11);
    tcase_add_test(tc, test_bn_train);
    tcase_add_test(tc, test_maxpool);
    tcase_add_test(tc, test_avgpool);
    tcase_add_test(tc, test_gap);
    tcase_add_test(tc, test_relu);
    tcase_add_test(tc, test_residual_smooth);
    tcase_add_test(tc, test_branches);
    tcase_add_test(tc, test_dropout);
    tcase_add_test(tc, test_flatten_linear);
    tcase_add_test(tc, test_dropout_mask);
    suite_add_tcase(s, tc);
    return s;
}
