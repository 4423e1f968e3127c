/* tests/model/test_layers_parity.c — every layer kind against PyTorch 1.13: forward output,
 * input gradient, parameter gradients and BatchNorm running statistics, from the
 * committed fixture tests/fixtures/layers.safetensors (gen_fixtures.py). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/cpu/cpu_backend.h"
#include "tests/support/layer_cases.h"
#include "tests/support/test_util.h"

/* Tolerances: float32 with a different summation order than PyTorch's. A sum of K
 * products of O(1) numbers carries a rounding error of about sqrt(K)·2^-24 relative
 * to its magnitude; the largest K here (11·11·3 = 363 for conv11, 9·16 = 144 for the
 * 7x1 convolution's weight gradient over N·H·W = 126 terms) stays well under 1e-4. */
#define RTOL 1e-4
#define ATOL 1e-5
/* BatchNorm's backward subtracts two means of N·H·W = 100 terms from dy: relative
 * errors of cancelled terms show up as absolute error near zero. */
#define BN_ATOL 1e-4

static struct pb_safetensors fx;

static void check_case(const char *name)
{
    const struct layer_case *c = layer_case_find(name);
    struct case_run r;
    struct pb_err e;
    pb_load_fixture(&fx, "layers.safetensors");
    case_run_init(&r, c, 1);
    struct pb_stage *s = &r.stage;
    struct pb_backend *be = r.be;
    double atol = strstr(name, "bn") || !strcmp(name, "residual") ? BN_ATOL : ATOL;

    /* parameters p0, p1, ... concatenated are the stage's flat buffer */
    float *w = pb_fixture_params(&fx, name, s->nparams);
    be->ops->upload(be, s->params, w, s->nparams * sizeof(float));
    if (!c->train && s->nbuffers) {
        float *rm = pb_fixture_read(&fx, name, "bn0.running_mean", s->nbuffers / 2);
        float *rv = pb_fixture_read(&fx, name, "bn0.running_var", s->nbuffers / 2);
        be->ops->upload(be, s->buffers, rm, s->nbuffers / 2 * sizeof(float));
        be->ops->upload(be, s->buffers + s->nbuffers / 2, rv, s->nbuffers / 2 * sizeof(float));
        free(rm);
        free(rv);
    }

    size_t nx = pb_shape_count(s->in_shape), ny = pb_shape_count(s->out_shape);
    float *x = pb_fixture_read(&fx, name, "x", nx), *dy = pb_fixture_read(&fx, name, "dy", ny);
    float *y_ref = pb_fixture_read(&fx, name, "y", ny);
    struct pb_stage_act act;
    float *y = case_forward(&r, x, c->train, &act, 0);
    pb_assert_close("y", y, y_ref, ny, RTOL, atol);

    if (c->train) {
        float *dx = case_backward(&r, &act, dy);
        float *dx_ref = pb_fixture_read(&fx, name, "dx", nx);
        pb_assert_close("dx", dx, dx_ref, nx, RTOL, atol);
        float *g = malloc((s->nparams + 1) * sizeof *g);
        be->ops->download(be, g, s->grads, s->nparams * sizeof(float));
        size_t off = 0;
        for (int i = 0; off < s->nparams; i++) {
            char gn[64];
            snprintf(gn, sizeof gn, "%s.g%d", name, i);
            const struct pb_st_tensor *t = pb_st_find(&fx, gn);
            ck_assert_msg(t != NULL, "fixture has no %s", gn);
            float *g_ref = malloc(t->count * sizeof *g_ref);
            ck_assert(pb_st_read_f32(&fx, gn, g_ref, t->count, &e) == 0);
            pb_assert_close(gn, g + off, g_ref, t->count, RTOL, atol);
            off += t->count;
            free(g_ref);
        }
        free(g);
        free(dx);
        free(dx_ref);
    }
    /* running statistics after the forward (train: updated with the unbiased variance;
     * eval: unchanged), BatchNorm layers in block order */
    if (s->nbuffers) {
        float *buf = malloc(s->nbuffers * sizeof *buf);
        be->ops->download(be, buf, s->buffers, s->nbuffers * sizeof(float));
        const struct pb_block *blk = &r.model.blocks[0];
        int k = 0;
        for (int i = 0; i < blk->nnodes; i++) {
            const struct pb_layer *l = &blk->nodes[i];
            if (l->cfg.kind != PB_LAYER_BATCHNORM2D)
                continue;
            size_t ch = (size_t)l->cfg.channels;
            char bn[64];
            snprintf(bn, sizeof bn, "bn%d.running_mean", k);
            float *rm = pb_fixture_read(&fx, name, bn, ch);
            snprintf(bn, sizeof bn, "bn%d.running_var", k++);
            float *rv = pb_fixture_read(&fx, name, bn, ch);
            pb_assert_close("running_mean", buf + l->buffer_off, rm, ch, RTOL, ATOL);
            pb_assert_close("running_var", buf + l->buffer_off + ch, rv, ch, RTOL, ATOL);
            free(rm);
            free(rv);
        }
        free(buf);
    }
    free(x);
    free(dy);
    free(y);
    free(y_ref);
    free(w);
    case_run_finish(&r);
    pb_st_finish(&fx);
}

#define PARITY_TEST(nm)                                                                        \
    START_TEST(test_##nm) { check_case(#nm); }                                                 \
    END_TEST

PARITY_TEST(linear)
PARITY_TEST(conv3x3)
PARITY_TEST(conv1x7)
PARITY_TEST(conv7x1)
PARITY_TEST(conv_s2)
PARITY_TEST(conv11)
PARITY_TEST(bn_train)
PARITY_TEST(bn_eval)
PARITY_TEST(maxpool)
PARITY_TEST(avgpool)
PARITY_TEST(gap)
PARITY_TEST(relu)
PARITY_TEST(residual)
PARITY_TEST(branches)

/* Softmax cross-entropy (mean) with and without label smoothing 0.1. */
static void check_xent(const char *tag, float smoothing)
{
    struct pb_err e;
    pb_load_fixture(&fx, "layers.safetensors");
    const struct pb_st_tensor *lt = pb_st_find(&fx, "xent.labels");
    ck_assert(lt && lt->dtype == PB_ST_I32);
    int n = 6, k = 5;
    float logits[30], dl[30], dl_ref[30], loss_ref;
    int32_t labels[6];
    memcpy(labels, lt->data, sizeof labels);
    ck_assert(pb_st_read_f32(&fx, "xent.logits", logits, 30, &e) == 0);
    char nm[64];
    snprintf(nm, sizeof nm, "xent.%s.loss", tag);
    ck_assert(pb_st_read_f32(&fx, nm, &loss_ref, 1, &e) == 0);
    snprintf(nm, sizeof nm, "xent.%s.dlogits", tag);
    ck_assert(pb_st_read_f32(&fx, nm, dl_ref, 30, &e) == 0);
    struct pb_backend *be = pb_backend_cpu_create(1, &e);
    float *d_logits = pb_backend_alloc(be, sizeof logits, PB_MEM_SCRATCH, &e);
    float *d_dl = pb_backend_alloc(be, sizeof dl, PB_MEM_SCRATCH, &e);
    int32_t *d_labels = pb_backend_alloc(be, sizeof labels, PB_MEM_SCRATCH, &e);
    be->ops->upload(be, d_logits, logits, sizeof logits);
    be->ops->upload(be, d_labels, labels, sizeof labels);
    struct pb_xent_out *d_res = pb_backend_alloc(be, sizeof *d_res, PB_MEM_SCRATCH, &e), res;
    be->ops->softmax_xent(be, d_logits, d_labels, n, k, smoothing, -1, 0, d_res, d_dl);
    be->ops->download(be, dl, d_dl, sizeof dl);
    be->ops->download(be, &res, d_res, sizeof res);
    be->ops->sync(be);
    pb_backend_free(be, d_res);
    float loss = res.loss;
    int correct = res.correct;
    pb_assert_close("loss", &loss, &loss_ref, 1, 1e-6, 1e-7);  /* a 5-term log-sum-exp */
    pb_assert_close("dlogits", dl, dl_ref, 30, 1e-5, 1e-7);
    int expect = 0;
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int j = 1; j < k; j++)
            if (logits[i * k + j] > logits[i * k + best])
                best = j;
        expect += best == labels[i];
    }
    ck_assert_int_eq(correct, expect);
    pb_backend_free(be, d_logits);
    pb_backend_free(be, d_dl);
    pb_backend_free(be, d_labels);
    pb_backend_destroy(be);
    pb_st_finish(&fx);
}

START_TEST(test_xent) { check_xent("ls0", 0.0f); }
END_TEST

START_TEST(test_xent_smoothing) { check_xent("ls1", 0.1f); }
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("layers_parity");
    TCase *tc = tcase_create("pytorch");
    tcase_add_test(tc, test_linear);
    tcase_add_test(tc, test_conv3x3);
    tcase_add_test(tc, test_conv1x7);
    tcase_add_test(tc, test_conv7x1);
    tcase_add_test(tc, test_conv_s2);
    tcase_add_test(tc, test_conv11);
    tcase_add_test(tc, test_bn_train);
    tcase_add_test(tc, test_bn_eval);
    tcase_add_test(tc, test_maxpool);
    tcase_add_test(tc, test_avgpool);
    tcase_add_test(tc, test_gap);
    tcase_add_test(tc, test_relu);
    tcase_add_test(tc, test_residual);
    tcase_add_test(tc, test_branches);
    tcase_add_test(tc, test_xent);
    tcase_add_test(tc, test_xent_smoothing);
    suite_add_tcase(s, tc);
    return s;
}
