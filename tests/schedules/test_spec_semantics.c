/* tests/schedules/test_spec_semantics.c — what docs/semantics.md states outright where the sources
 * differ: PipeDream-2BW has no delay at D = 1 (§4.4); PipeOptim's `code` variant
 * predicts one update ahead even at D = 1 while its paper form is plain training there
 * (§4.2, §4.7); the code form's SGD ΔW reads d_last = g_last + λW with W the weights
 * before that step (§3); PipeMare reschedules the rates of the stages whose delay D−1−k is
 * above 1, and of those alone (§4.11). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/backend.h"
#include "harness/compute/cpu/cpu_backend.h"
#include "harness/optim/optim.h"
#include "predictors/predictor.h"
#include "tests/support/cli_util.h"
#include "tests/support/train_util.h"

/* Elements of a and b whose bits differ. */
static size_t bits_differ(const float *a, const float *b, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++)
        d += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return d;
}

/* Runs c and returns its saved weights; *n receives their count. */
static float *run_weights(struct pb_run_cfg *c, size_t *n)
{
    run_ok(c, "run.safetensors");
    return load_weights(tmp_path("run.safetensors"), n);
}

/* lenet (BatchNorm and dropout) on one stage, 2 epochs of 20 micro-batches. */
static void one_stage_cfg(struct pb_run_cfg *c, const char *schedule, const char *variant)
{
    small_cfg(c);
    c->model = "lenet";
    c->stages = 1;
    c->schedule = schedule;
    c->variant = variant;
}

/* §4.4: at D = 1 every micro-batch of mini-batch b reads W^(b), not W^(b−1): 2BW is
 * plain gradient accumulation over M micro-batches, bit for bit (its one-stage program
 * runs F0 B0 F1 B1 ... U, so the plain loop sums the gradients in that order). */
START_TEST(test_2bw_one_stage_is_accumulation)
{
    enum { M = 4 };
    struct pb_run_cfg c;
    one_stage_cfg(&c, "pipedream-2bw", NULL);
    c.microbatches = M;
    size_t n, n_ref, n_one;
    float *w = run_weights(&c, &n);
    float *ref = plain_training_1f1b(&c, M, &n_ref);
    float *one = plain_training_1f1b(&c, 1, &n_one);
    ck_assert_uint_eq(n, n_ref);
    size_t d = bits_differ(w, ref, n);
    ck_assert_msg(d == 0, "2bw D=1 M=%d: %zu of %zu weights differ from plain accumulation over "
                  "%d micro-batches", M, d, n, M);
    /* the comparison sees the accumulation: one update per micro-batch trains otherwise */
    ck_assert_msg(bits_differ(w, one, n) > 0, "accumulating %d micro-batches changed nothing", M);
    free(w);
    free(ref);
    free(one);
}
END_TEST

/* §4.2, §4.7: at D = 1 the paper form (s = D−1−k = 0) is plain training; the code form
 * (s = D−k = 1) predicts one update ahead at every forward, so its weights differ. */
START_TEST(test_pipeoptim_code_one_stage_predicts)
{
    struct pb_run_cfg c;
    one_stage_cfg(&c, "pipeoptim", NULL);
    size_t n_ref, n;
    float *ref = plain_training(&c, 1, &n_ref);
    float *paper = run_weights(&c, &n);
    ck_assert_uint_eq(n, n_ref);
    size_t d = bits_differ(paper, ref, n);
    ck_assert_msg(d == 0, "pipeoptim D=1: %zu of %zu weights differ from plain training", d, n);
    one_stage_cfg(&c, "pipeoptim", "code");
    float *code = run_weights(&c, &n);
    ck_assert_uint_eq(n, n_ref);
    ck_assert_msg(bits_differ(code, ref, n) > 0,
                  "pipeoptim --variant code D=1 trained exactly as plain training: it did not "
                  "predict one update ahead");
    free(ref);
    free(paper);
    free(code);
}
END_TEST

/* Checks every token of `pipebench program --versions` output for one stage: each F
 * reads W^(u) predicted `ahead` updates ahead (":u+ahead", or ":u" for 0), each B
 * reads ":u" unpredicted. Returns the number of F tokens. */
static int check_stage_line(const char *out, int ahead, const char *what)
{
    const char *line = strstr(out, "stage 0:");
    ck_assert_msg(line != NULL, "%s: no 'stage 0:' in: %s", what, out);
    ck_assert_msg(strstr(out, "stage 1:") == NULL, "%s: more than one stage: %s", what, out);
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", line + strlen("stage 0:"));
    int nf = 0;
    for (char *save, *tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
        if (!strcmp(tok, "U"))
            continue;
        char kind;
        int mb, u, s = 0;
        int got = sscanf(tok, "%c%d:%d+%d", &kind, &mb, &u, &s);
        ck_assert_msg(got >= 3 && (kind == 'F' || kind == 'B'), "%s: token '%s'", what, tok);
        if (kind == 'F') {
            nf++;
            ck_assert_msg(s == ahead, "%s: %s reads %d ahead, expected %d", what, tok, s, ahead);
        } else {
            ck_assert_msg(got == 3, "%s: %s is predicted; B reads the current W", what, tok);
        }
    }
    return nf;
}

START_TEST(test_pipeoptim_code_one_stage_program)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "spec");
    int rc = cli_run(dir, out, sizeof out, "program --schedule pipeoptim --variant code "
                     "--stages 1 --length 8 --versions");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_int_eq(check_stage_line(out, 1, "pipeoptim code D=1"), 8);
    rc = cli_run(dir, out, sizeof out,
                 "program --schedule pipeoptim --stages 1 --length 8 --versions");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_int_eq(check_stage_line(out, 0, "pipeoptim D=1"), 8);
    cli_cleanup(dir);
}
END_TEST

/* semantics §3.6: a float32 implementation agrees with a double computation to 1e-6 relative. */
#define SPEC_RTOL 1e-6
#define NW 3

/* SGD in double (semantics §2.1), NW elements: d = g + λW; buf as torch; W ← W − lr·step. */
struct dsgd {
    double lr, u, tau, wd;
    long t;
    double w[NW], buf[NW], d_last[NW], w_before[NW];
};

static void dsgd_step(struct dsgd *o, const float *g)
{
    o->t++;
    for (int i = 0; i < NW; i++) {
        double d = g[i] + o->wd * o->w[i];
        o->w_before[i] = o->w[i];
        o->d_last[i] = d;
        double step = d;
        if (o->u > 0) {
            o->buf[i] = o->t == 1 ? d : o->u * o->buf[i] + (1 - o->tau) * d;
            step = o->buf[i];
        }
        o->w[i] -= o->lr * step;
    }
}

/* The code form's ΔW (semantics §3.3): u·buf + (1−τ)·d; d_last for u = 0. */
static double dsgd_code_delta(const struct dsgd *o, int i, double d)
{
    return o->u > 0 ? o->u * o->buf[i] + (1 - o->tau) * d : d;
}

/* SGD and SGDM (with and without dampening) with weight decay: after three steps the
 * code form predicts Ŵ = W − lr·s·ΔW with d_last = g_3 + λ·W^(2), W^(2) the weights the
 * third step read. d_last taken from the weights after that step (g_3 + λ·W^(3)), or
 * without the decay (g_3), would be off by orders of magnitude more than the tolerance;
 * the test checks that too, so it can tell them apart. */
START_TEST(test_code_delta_reads_weights_before_step)
{
    static const struct { float u, tau; } cases[] = {{0.9f, 0.0f}, {0.9f, 0.25f}, {0.0f, 0.0f}};
    static const float w0[NW] = {1.0f, -0.5f, 2.0f};
    static const float grads[3][NW] = {{0.2f, -0.1f, 0.05f}, {-0.1f, 0.3f, -0.2f},
                                       {0.3f, 0.1f, 0.4f}};
    const float lr = 0.1f, wd = 0.5f;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        struct pb_err e;
        struct pb_optim_cfg c;
        ck_assert_int_eq(pb_optim_cfg_from_name(&c, "sgd", &e), 0);
        c.lr = lr;
        c.momentum = cases[ci].u;
        c.dampening = cases[ci].tau;
        c.weight_decay = wd;
        ck_assert_msg(pb_predictor_check(PB_OPT_SGD, &c, PB_PREDICT_CODE, &e) == 0, "%s", e.msg);
        c.keep_d_last = pb_predictor_reads_d_last(&c, PB_PREDICT_CODE);
        struct pb_backend *be = pb_backend_cpu_create(1, &e);
        ck_assert_msg(be != NULL, "%s", e.msg);
        float *w = pb_backend_alloc(be, sizeof w0, PB_MEM_SCRATCH, &e);
        float *g = pb_backend_alloc(be, sizeof w0, PB_MEM_SCRATCH, &e);
        float *w_hat = pb_backend_alloc(be, sizeof w0, PB_MEM_SCRATCH, &e);
        ck_assert(w && g && w_hat);
        be->ops->upload(be, w, w0, sizeof w0);
        struct pb_optim o;
        ck_assert_msg(pb_optim_init(&o, be, &c, NW, &e) == 0, "%s", e.msg);
        /* the double reference starts from the float inputs, as semantics §3.6's vectors do */
        struct dsgd ref = {.lr = lr, .u = cases[ci].u, .tau = cases[ci].tau, .wd = wd};
        for (int i = 0; i < NW; i++)
            ref.w[i] = w0[i];
        for (int k = 0; k < 3; k++) {
            be->ops->upload(be, g, grads[k], sizeof w0);
            pb_optim_step(&o, be, w, g);
            dsgd_step(&ref, grads[k]);
        }
        for (int s = 1; s <= 2; s++) {
            float got[NW];
            pb_predict(be, &o, PB_PREDICT_CODE, (float)s, w, w_hat);
            be->ops->download(be, got, w_hat, sizeof got);
            be->ops->sync(be);
            for (int i = 0; i < NW; i++) {
                double want = ref.w[i] - ref.lr * s * dsgd_code_delta(&ref, i, ref.d_last[i]);
                double after = ref.w[i] - ref.lr * s *
                               dsgd_code_delta(&ref, i, grads[2][i] + ref.wd * ref.w[i]);
                double nodecay = ref.w[i] - ref.lr * s * dsgd_code_delta(&ref, i, grads[2][i]);
                double tol = SPEC_RTOL * fabs(want);
                ck_assert_msg(fabs(after - want) > 100 * tol && fabs(nodecay - want) > 100 * tol,
                              "case %zu: the alternatives are too close to tell apart", ci);
                ck_assert_msg(fabs(got[i] - want) <= tol,
                              "u=%g tau=%g wd=%g s=%d element %d: code-form prediction %.9g, "
                              "expected %.9g from d_last = g + wd*W before the step (W after "
                              "the step gives %.9g, no decay %.9g)", cases[ci].u, cases[ci].tau,
                              wd, s, i, got[i], want, after, nodecay);
            }
        }
        pb_optim_finish(&o, be);
        pb_backend_free(be, w);
        pb_backend_free(be, g);
        pb_backend_free(be, w_hat);
        pb_backend_destroy(be);
    }
}
END_TEST

/* §4.11: the rescheduling length changes the weights where a stage's delay is above 1
 * (stage 0 at D = 3: τ = 2; cut so that it holds the first linear layer) and nothing
 * where none is (D = 2: τ = 1 and 0). */
START_TEST(test_pipemare_reschedules_by_delay)
{
    for (int D = 2; D <= 3; D++) {
        struct pb_run_cfg c;
        small_cfg(&c);
        c.schedule = "pipemare";
        c.stages = D;
        c.partition = D == 3 ? "0,2,5,8" : "0,2,8";
        size_t n_short, n_long;
        c.lr_reschedule_epochs = 1;
        float *w_short = run_weights(&c, &n_short);
        c.lr_reschedule_epochs = 1000;
        float *w_long = run_weights(&c, &n_long);
        ck_assert_uint_eq(n_short, n_long);
        size_t d = bits_differ(w_short, w_long, n_short);
        if (D == 2)
            ck_assert_msg(d == 0, "D = 2: %zu weights depend on the rescheduling length", d);
        else
            ck_assert_msg(d > 0, "D = 3: the rescheduling length changed nothing");
        free(w_short);
        free(w_long);
    }
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("spec_semantics");
    TCase *tc = tcase_create("spec");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_2bw_one_stage_is_accumulation);
    tcase_add_test(tc, test_pipeoptim_code_one_stage_predicts);
    suite_add_tcase(s, tc);
    tc = tcase_create("spec_fast");
    tcase_set_tags(tc, "fast");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_pipeoptim_code_one_stage_program);
    tcase_add_test(tc, test_code_delta_reads_weights_before_step);
    tcase_add_test(tc, test_pipemare_reschedules_by_delay);
    suite_add_tcase(s, tc);
    return s;
}
