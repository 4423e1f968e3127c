/* tests/workloads/test_gnmt_step_decoder.c — the O(T) GNMT decoder (workloads/evaluation/decode/
 * gnmt_step_decoder.h) against the O(T²) stage decoder (stage_decoder.h, exact by
 * construction) on gnmt8 and gnmt16 small, for a batch of sentences of different source
 * lengths: every step of a greedy and of a beam-5 search, the two decoders driven in
 * lockstep (so select drops and duplicates rows in both), gives the same log-probabilities
 * within LOGP_TOL and attention weights within ATTN_TOL, and the searches run with each
 * decoder alone give the same tokens, lengths and steps, and scores within SCORE_TOL.
 * The step decoder attends with keys projected once (attn_project_keys at init, gathered
 * by select): after every select its projected keys are, bit for bit, those its current
 * keys project to (so they followed the rows).
 * Fast (tag fast): the models' own initialisation, whose sentences all run to the
 * maximum length, a greedy search past the model's T positions (which only the step
 * decoder can read), and the refusals of a model that is not GNMT-shaped, a stage of some of
 * its blocks and a batch that does not fit. Slow: weights trained for two epochs (a run's
 * --save), where sentences and beams end at different steps, which the test checks. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/backend.h"
#include "harness/compute/cpu/cpu_backend.h"
#include "tests/support/train_util.h"
#include "tests/support/test_util.h"
#include "workloads/evaluation/decode/gnmt_step_decoder.h"
#include "workloads/evaluation/decode/stage_decoder.h"
#include "workloads/models/workload.h"

#define NS 6          /* sentences */
#define K 5           /* the beam */
#define LOGP_TOL 2e-5 /* the two differ only in GEMM shapes */
#define ATTN_TOL 2e-6
#define SCORE_TOL 2e-4

static const char *const models[] = {"gnmt8", "gnmt16"};

struct fixture {
    struct pb_model m;
    struct pb_backend *be;
    struct pb_stage s;
    int T, V;
    int32_t src[NS * 64], len[NS];
};

/* model's small preset finalised for `rows` as one stage with the weights saved at path
 * (NULL: its own initialisation), and the first NS sentences of the stand-in's test split. */
static void setup(struct fixture *f, const char *model, int rows, const char *path)
{
    struct pb_err e;
    const struct pb_workload *w = pb_workload_find(model, &e);
    const struct pb_preset *p;
    ck_assert(w && pb_workload_preset(w, "small", &p, &e) == 0);
    f->T = p->steps;
    f->V = p->classes;
    ck_assert(NS * f->T <= (int)(sizeof f->src / sizeof *f->src));
    struct pb_dataset ds;
    struct pb_dataset_opts opts = {.vocab = p->vocab, .steps = p->steps};
    ck_assert_msg(pb_dataset_synthetic_wmt16(&ds, PB_SPLIT_TEST, NS, 3, &opts, &e) == 0, "%s",
                  e.msg);
    f->be = pb_backend_cpu_create(1, &e);
    ck_assert(f->be);
    if (path) {
        load_saved_gnmt_small(model, f->be, &ds, rows, path, &f->m, &f->s);
    } else {
        ck_assert_msg(w->build(&f->m, p, (struct pb_shape){1, ds.c, 1, 1}, p->classes, &e) == 0,
                      "%s", e.msg);
        ck_assert_msg(pb_model_finalize(&f->m, rows, &e) == 0, "%s", e.msg);
        ck_assert_msg(pb_stage_init(&f->s, f->be, &f->m, 0, 2, 0, f->m.nblocks, &e) == 0, "%s",
                      e.msg);
        ck_assert(pb_stage_init_params(&f->s, 5, &e) == 0);
    }
    float *x = malloc((size_t)NS * 2 * f->T * sizeof *x);
    pb_dataset_gather(&ds, (struct pb_data_key){0}, NULL, 0, NS, x, NULL);
    pb_dataset_gather_lengths(&ds, NULL, 0, NS, f->len);
    for (int i = 0; i < NS * f->T; i++)
        f->src[i] = (int32_t)x[(i / f->T) * 2 * f->T + i % f->T];
    free(x);
    pb_dataset_finish(&ds);
    int distinct = 0;
    for (int i = 0; i < NS; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen |= f->len[j] == f->len[i];
        distinct += !seen;
    }
    ck_assert_msg(distinct >= 3, "the batch has %d source lengths", distinct);
}

static void teardown(struct fixture *f)
{
    pb_stage_finish(&f->s);
    pb_backend_destroy(f->be);
    pb_model_finish(&f->m);
}

/* Both decoders stepped and selected together; the search sees the reference's numbers. */
struct tee {
    struct pb_decoder ref, step;
    const struct pb_gnmt_step_decoder *gd;  /* step's */
    int V, T;
    float *lp, *at;  /* [rows, V], [rows, T] the step decoder's */
    double worst_lp, worst_at;
    int steps, selects;
};

/* The step decoder's projected keys [n, T, U] are those its keys [n, T, H] project to. */
static void check_pk(const struct pb_gnmt_step_decoder *gd)
{
    struct pb_backend *be = gd->s->be;
    struct pb_err e;
    int n = gd->n, T = gd->g.steps, H = gd->g.hidden, U = gd->g.attn_units;
    size_t floats = (size_t)n * T * U;
    struct pb_attn_desc ad = {n, 1, T, H, H, U};
    float *fresh = pb_backend_alloc(be, floats * sizeof(float), PB_MEM_SCRATCH, &e);
    ck_assert_msg(fresh, "%s", e.msg);
    be->ops->attn_project_keys(be, &ad, gd->keys, gd->s->params + gd->g.attn_off, fresh);
    float *want = malloc(floats * sizeof *want), *got = malloc(floats * sizeof *got);
    be->ops->download(be, want, fresh, floats * sizeof(float));
    be->ops->download(be, got, gd->pk, floats * sizeof(float));
    be->ops->sync(be);
    char what[96];
    snprintf(what, sizeof what, "projected keys of %d rows against the keys projected", n);
    pb_assert_same_bits(what, got, want, floats);
    free(want);
    free(got);
    pb_backend_free(be, fresh);
}

static int tee_step(void *ctx, const int32_t *tokens, int n, float *logp, float *attn,
                    struct pb_err *e)
{
    struct tee *t = ctx;
    if (t->ref.step(t->ref.ctx, tokens, n, logp, attn, e) ||
        t->step.step(t->step.ctx, tokens, n, t->lp, t->at, e))
        return -1;
    for (size_t i = 0; i < (size_t)n * t->V; i++) {
        double d = fabs((double)logp[i] - t->lp[i]);
        t->worst_lp = d > t->worst_lp ? d : t->worst_lp;
    }
    for (size_t i = 0; i < (size_t)n * t->T; i++) {
        double d = fabs((double)attn[i] - t->at[i]);
        t->worst_at = d > t->worst_at ? d : t->worst_at;
    }
    t->steps++;
    return 0;
}

static int tee_select(void *ctx, const int32_t *rows, int n, struct pb_err *e)
{
    struct tee *t = ctx;
    if (t->ref.select(t->ref.ctx, rows, n, e) || t->step.select(t->step.ctx, rows, n, e))
        return -1;
    check_pk(t->gd);
    t->selects++;
    return 0;
}

/* A search with beam 0 (greedy) or K on decoder d. */
static void search(const struct fixture *f, const struct pb_decoder *d, int beam,
                   struct pb_decoded *out)
{
    struct pb_err e;
    struct pb_decode_opts o;
    pb_decode_opts_paper(&o);
    o.beam = beam;
    o.max_len = f->T;
    int rc = beam ? pb_decode_beam(d, NS, f->len, &o, out, &e)
                  : pb_decode_greedy(d, NS, f->len, o.max_len, out, &e);
    ck_assert_msg(rc == 0, "%s", e.msg);
}

/* The two decoders' searches with beam (0: greedy) in lockstep, then each alone. */
static void compare(const char *model, int beam, const char *path)
{
    struct fixture f;
    setup(&f, model, NS * (beam ? beam : 1), path);
    struct pb_err e;
    struct pb_stage_decoder sd;
    struct pb_gnmt_step_decoder gd;
    struct tee t = {.gd = &gd, .V = f.V, .T = f.T};
    t.lp = malloc((size_t)f.m.batch * f.V * sizeof *t.lp);
    t.at = malloc((size_t)f.m.batch * f.T * sizeof *t.at);
    ck_assert_msg(pb_stage_decoder_init(&sd, &f.s, f.src, f.len, NS, &t.ref, &e) == 0, "%s",
                  e.msg);
    ck_assert_msg(pb_gnmt_step_decoder_init(&gd, &f.s, f.src, f.len, NS, &t.step, &e) == 0, "%s",
                  e.msg);
    ck_assert_int_eq(t.step.vocab, f.V);
    ck_assert_int_eq(t.step.src_steps, f.T);
    struct pb_decoder d = {.ctx = &t, .vocab = f.V, .src_steps = f.T, .step = tee_step,
                           .select = tee_select};
    struct pb_decoded lock;
    search(&f, &d, beam, &lock);
    pb_stage_decoder_finish(&sd);
    pb_gnmt_step_decoder_finish(&gd);
    printf("%s %s: %d steps, %d selects, log-probabilities within %.3g, attention within "
           "%.3g\n", model, beam ? "beam 5" : "greedy", t.steps, t.selects, t.worst_lp,
           t.worst_at);
    ck_assert_msg(!beam || t.selects > 0, "%s: the beam search never selected", model);
    ck_assert_msg(t.worst_lp <= LOGP_TOL, "%s: log-probabilities differ by %g", model,
                  t.worst_lp);
    ck_assert_msg(t.worst_at <= ATTN_TOL, "%s: attention differs by %g", model, t.worst_at);
    /* each decoder alone */
    struct pb_decoded a, b;
    ck_assert(pb_stage_decoder_init(&sd, &f.s, f.src, f.len, NS, &d, &e) == 0);
    search(&f, &d, beam, &a);
    pb_stage_decoder_finish(&sd);
    ck_assert(pb_gnmt_step_decoder_init(&gd, &f.s, f.src, f.len, NS, &d, &e) == 0);
    search(&f, &d, beam, &b);
    pb_gnmt_step_decoder_finish(&gd);
    int lo = f.T, hi = 0;
    for (int s = 0; s < NS; s++) {
        ck_assert_int_eq(a.len[s], b.len[s]);
        ck_assert_int_eq(a.steps[s], b.steps[s]);
        ck_assert_int_eq(a.len[s], lock.len[s]);
        ck_assert_msg(!memcmp(a.tokens + s * a.max_len, b.tokens + s * b.max_len,
                              (size_t)a.max_len * sizeof *a.tokens), "%s sentence %d: tokens "
                      "differ", model, s);
        ck_assert_msg(fabs(a.score[s] - b.score[s]) <= SCORE_TOL, "%s sentence %d: score %.9g "
                      "vs %.9g", model, s, a.score[s], b.score[s]);
        lo = a.steps[s] < lo ? a.steps[s] : lo;
        hi = a.steps[s] > hi ? a.steps[s] : hi;
    }
    /* trained: rows ended at different steps, some before the last (select dropped rows) */
    printf("%s %s: sentences took %d to %d steps\n", model, beam ? "beam 5" : "greedy", lo, hi);
    ck_assert_msg(!path || (lo < hi && lo < f.T - 1), "%s: every sentence took %d to %d steps",
                  model, lo, hi);
    pb_decoded_finish(&lock);
    pb_decoded_finish(&a);
    pb_decoded_finish(&b);
    free(t.lp);
    free(t.at);
    teardown(&f);
}

START_TEST(greedy_matches)
{
    compare(models[_i], 0, NULL);
}
END_TEST

START_TEST(beam_matches)
{
    compare(models[_i], K, NULL);
}
END_TEST

/* Two epochs of the stand-in (512 pairs, Adam), saved; both searches on its weights (after
 * one, gnmt8's greedy translations all had 3 tokens). */
START_TEST(trained_matches)
{
    struct pb_run_cfg c;
    small_cfg(&c);
    c.model = models[_i];
    c.preset = "small";
    c.dataset = "synthetic";
    c.synthetic = (struct pb_dataset_opts){0};
    c.schedule = "gpipe";
    c.stages = 1;
    c.microbatch_size = 16;
    c.optimizer = "adam";
    struct pb_err e;
    ck_assert(pb_optim_cfg_from_name(&c.optim, "adam", &e) == 0);
    c.optim.lr = 3e-3f;
    c.epochs = 2;
    c.limit_train = 512;
    c.limit_val = 16;
    c.threads = 2;
    char save[64];
    snprintf(save, sizeof save, "%s.safetensors", models[_i]);
    run_ok(&c, save);
    compare(models[_i], 0, c.save);
    compare(models[_i], K, c.save);
}
END_TEST

/* The step decoder reads past the model's T positions (the stage decoder refuses). */
START_TEST(past_t)
{
    struct fixture f;
    setup(&f, "gnmt8", NS, NULL);
    struct pb_err e;
    struct pb_gnmt_step_decoder gd;
    struct pb_decoder d;
    ck_assert(pb_gnmt_step_decoder_init(&gd, &f.s, f.src, f.len, NS, &d, &e) == 0);
    struct pb_decoded out;
    ck_assert_msg(pb_decode_greedy(&d, NS, f.len, 2 * f.T, &out, &e) == 0, "%s", e.msg);
    int most = 0;
    for (int s = 0; s < NS; s++)
        most = out.steps[s] > most ? out.steps[s] : most;
    ck_assert_msg(most > f.T, "at most %d steps", most);
    pb_decoded_finish(&out);
    pb_gnmt_step_decoder_finish(&gd);
    teardown(&f);
}
END_TEST

/* residual-lstm is no translation model; a GNMT stage of some blocks has no decoder. */
START_TEST(not_gnmt)
{
    struct pb_err e;
    const struct pb_workload *w = pb_workload_find("residual-lstm", &e);
    const struct pb_preset *p;
    ck_assert(w && pb_workload_preset(w, "small", &p, &e) == 0);
    struct pb_model m;
    ck_assert_msg(w->build(&m, p, (struct pb_shape){1, p->steps, 1, 1}, p->classes, &e) == 0,
                  "%s", e.msg);
    ck_assert_msg(pb_model_finalize(&m, 2, &e) == 0, "%s", e.msg);
    ck_assert(!pb_gnmt_layout_applies(&m));
    struct pb_backend *be = pb_backend_cpu_create(1, &e);
    struct pb_stage s;
    ck_assert(pb_stage_init(&s, be, &m, 0, 1, 0, m.nblocks, &e) == 0);
    int32_t src[2 * 64] = {0}, len[2] = {1, 1};
    struct pb_gnmt_step_decoder gd;
    struct pb_decoder d;
    ck_assert_int_eq(pb_gnmt_step_decoder_init(&gd, &s, src, len, 2, &d, &e), -1);
    ck_assert_msg(strstr(e.msg, "is not GNMT-shaped") && strstr(e.msg, "residual-lstm"), "%s",
                  e.msg);
    pb_stage_finish(&s);
    pb_model_finish(&m);

    struct fixture f;
    setup(&f, "gnmt8", 2, NULL);
    ck_assert(pb_gnmt_layout_applies(&f.m));
    ck_assert(pb_stage_init(&s, be, &f.m, 0, 2, 0, f.m.nblocks - 1, &e) == 0);
    ck_assert_int_eq(pb_gnmt_step_decoder_init(&gd, &s, f.src, f.len, 2, &d, &e), -1);
    ck_assert_msg(strstr(e.msg, "a stage of every block"), "%s", e.msg);
    pb_stage_finish(&s);
    /* more sentences than rows, a source length past T */
    ck_assert_int_eq(pb_gnmt_step_decoder_init(&gd, &f.s, f.src, f.len, 3, &d, &e), -1);
    ck_assert_msg(strstr(e.msg, "built for 2 rows"), "%s", e.msg);
    int32_t bad[2] = {1, f.T + 1};
    ck_assert_int_eq(pb_gnmt_step_decoder_init(&gd, &f.s, f.src, bad, 2, &d, &e), -1);
    ck_assert_msg(strstr(e.msg, "outside [1, 20]"), "%s", e.msg);
    teardown(&f);
    pb_backend_destroy(be);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("gnmt_step_decoder");
    TCase *t = tcase_create("fast");
    tcase_set_tags(t, "fast");
    tcase_set_timeout(t, 600);
    tcase_add_loop_test(t, greedy_matches, 0, 2);
    tcase_add_loop_test(t, beam_matches, 0, 2);
    tcase_add_test(t, past_t);
    tcase_add_test(t, not_gnmt);
    suite_add_tcase(s, t);
    TCase *tr = tcase_create("trained");
    tcase_set_timeout(tr, 1800);
    tcase_add_loop_test(tr, trained_matches, 0, 2);
    suite_add_tcase(s, tr);
    return s;
}
