/* tests/exec/test_train.c — training end to end with the sequential executor: the
 * equivalences of semantics §4.7 (D = 1 is plain training for every registered schedule and
 * variant; GPipe is gradient accumulation for every registered model), determinism,
 * checkpoint round trips, and the version each op saw as logged in the results
 * database. Real data: Fashion-MNIST. */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/err.h"
#include "tests/support/schedule_forms.h"
#include "tests/support/test_util.h"
#include "tests/support/train_util.h"
#include "workloads/models/workload.h"

static void assert_same_weights(const char *what, const float *a, const float *b, size_t n)
{
    pb_assert_same_bits(what, a, b, n);
}

/* D = 1: every schedule and variant (M = 1 where it has mini-batches) trains exactly
 * as plain training does, bit for bit, on lenet (BatchNorm and dropout included) —
 * except PipeOptim's `code` variant (semantics §4.7), which predicts one
 * update ahead even here (tests/schedules/test_spec_semantics.c tests it). */
START_TEST(test_one_stage_is_plain_training)
{
    struct pb_run_cfg c;
    small_cfg(&c);
    c.model = "lenet";
    c.stages = 1;
    c.microbatches = 1;
    size_t n_ref, n;
    float *ref = plain_training(&c, 1, &n_ref);
    struct sched_form forms[SCHED_FORMS_MAX];
    int nforms = sched_forms(forms);
    for (int i = 0; i < nforms; i++) {
        if (sched_form_is(&forms[i], "pipeoptim", "code"))
            continue;
        struct pb_run_cfg t = c;
        sched_form_apply(&t, &forms[i]);
        /* a form that refuses c's optimizer is compared with plain training on its own; one
           whose steps need more micro-batches (dualpipe-v: 2p) with accumulating as many,
           each backward after its forward (its gradients ascend) */
        size_t n_own = n_ref;
        float *own = t.microbatches != c.microbatches
                         ? plain_training_1f1b(&t, t.microbatches, &n_own)
                     : strcmp(t.optimizer, c.optimizer) ? plain_training(&t, 1, &n_own)
                                                        : ref;
        run_ok(&t, "d1.safetensors");
        float *w = load_weights(tmp_path("d1.safetensors"), &n);
        ck_assert_uint_eq(n, n_own);
        assert_same_weights(forms[i].label, w, own, n);
        free(w);
        if (own != ref)
            free(own);
    }
    free(ref);
}
END_TEST

/* GPipe over D = 4 stages with M = 4 equals accumulating the mean gradient of 4
 * micro-batches on one stage, bit for bit (same backward order), on every registered
 * model (the zoo's image models in their default preset, on synthetic images; not the
 * sequence models, whose lengths the plain loop of train_util.c does not feed). */
START_TEST(test_gpipe_is_gradient_accumulation)
{
    for (int i = 0; pb_workloads[i]; i++) {
        if (pb_workloads[i]->steps)
            continue;
        struct pb_run_cfg c;
        small_cfg(&c);
        c.model = pb_workloads[i]->name;
        const struct pb_preset *p;
        ck_assert(pb_workload_preset(pb_workloads[i], NULL, &p, NULL) == 0);
        if (p) {  /* a zoo model: its default preset on synthetic data of its input shape */
            struct pb_shape in = pb_preset_sample(p);
            c.dataset = "synthetic";
            c.synthetic = (struct pb_dataset_opts){.c = in.c, .h = in.h, .w = in.w, .nclasses = 10};
            c.limit_train = 128;
            c.epochs = 1;
        }
        c.schedule = "gpipe";
        c.stages = 4;
        c.microbatches = 4;
        c.threads = 4;  /* one thread per stage, as the plain loop uses */
        size_t n_ref, n;
        float *ref = plain_training(&c, 4, &n_ref);
        run_ok(&c, "gpipe.safetensors");
        float *w = load_weights(tmp_path("gpipe.safetensors"), &n);
        ck_assert_uint_eq(n, n_ref);
        assert_same_weights(c.model, w, ref, n);
        free(w);
        free(ref);
    }
}
END_TEST

/* The same seed gives byte-identical checkpoints; another seed does not. */
START_TEST(test_same_seed_same_bits)
{
    struct sched_form forms[SCHED_FORMS_MAX];
    int nforms = sched_forms(forms);
    for (int i = 0; i < nforms; i++) {
        struct pb_run_cfg c;
        small_cfg(&c);
        c.model = "lenet";
        sched_form_apply(&c, &forms[i]);
        c.epochs = 1;
        size_t la, lb, lc;
        run_ok(&c, "a.safetensors");
        run_ok(&c, "b.safetensors");
        c.seed = 2;
        run_ok(&c, "c.safetensors");
        unsigned char *a = read_file(tmp_path("a.safetensors"), &la);
        unsigned char *b = read_file(tmp_path("b.safetensors"), &lb);
        unsigned char *d = read_file(tmp_path("c.safetensors"), &lc);
        ck_assert_msg(la == lb && memcmp(a, b, la) == 0, "%s: two runs differ", forms[i].label);
        ck_assert(la == lc && memcmp(a, d, la) != 0);
        free(a);
        free(b);
        free(d);
    }
}
END_TEST

/* --save then --init with zero learning steps' worth of change: loading a checkpoint
 * and saving it again gives the same bytes; a checkpoint of another partition loads too
 * (tests/model/test_checkpoint.c checks its values), one of another model is refused with a
 * message naming the missing tensor. */
START_TEST(test_checkpoint_round_trip)
{
    struct pb_run_cfg c;
    struct pb_err e;
    struct pb_run_summary sum;
    small_cfg(&c);
    c.model = "lenet";
    c.epochs = 1;
    run_ok(&c, "first.safetensors");
    c.init = tmp_path_kept("first.safetensors");
    c.optim.lr = 1e-30f;  /* updates far below the weights' ulp: W unchanged */
    c.optim.momentum = 0.0f;
    c.limit_train = 32;
    c.microbatch_size = 32;
    c.stages = 1;
    ck_assert_msg(pb_run(&c, &sum, &e) == PB_EXIT_OK, "%s", e.msg);
    c.model = "mlp";
    ck_assert_int_eq(pb_run(&c, &sum, &e), PB_EXIT_USAGE);
    ck_assert_msg(strstr(e.msg, "fc1.weight") && strstr(e.msg, "--init"), "%s", e.msg);
    c.model = "lenet";
    c.stages = 4;
    c.schedule = "gpipe";
    c.microbatches = 4;
    run_ok(&c, "second.safetensors");
    size_t la, lb;
    unsigned char *a = read_file(tmp_path("first.safetensors"), &la);
    unsigned char *b = read_file(tmp_path("second.safetensors"), &lb);
    /* the same tensor bytes; the headers differ (the metadata names each run's schedule
       and the checksum of its data) */
    uint64_t ha = 0, hb = 0;
    for (int i = 7; i >= 0; i--) {
        ha = ha << 8 | a[i];
        hb = hb << 8 | b[i];
    }
    ck_assert_msg(la - ha == lb - hb, "%zu and %zu bytes of tensors", (size_t)(la - ha),
                  (size_t)(lb - hb));
    /* dropout and BatchNorm statistics do change on the one step; compare weights only */
    size_t n1, n2;
    float *w1 = load_weights(tmp_path("first.safetensors"), &n1);
    float *w2 = load_weights(tmp_path("second.safetensors"), &n2);
    ck_assert_uint_eq(n1, n2);
    struct pb_safetensors st;
    ck_assert(pb_st_load(&st, tmp_path("first.safetensors"), &e) == 0);
    size_t off = 0;
    for (int i = 0; i < st.n; i++) {
        if (!strstr(st.t[i].name, "running_"))
            assert_same_weights(st.t[i].name, w2 + off, w1 + off, st.t[i].count);
        off += st.t[i].count;
    }
    pb_st_finish(&st);
    free(w1);
    free(w2);
    free(a);
    free(b);
}
END_TEST

/* Reads one staleness number of the last run for a stage. */
static double staleness_of(const char *db, const char *col, int stage)
{
    sqlite3 *h;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT %s FROM staleness WHERE run_id = (SELECT max(id) FROM runs) AND stage = %d "
             "ORDER BY epoch DESC LIMIT 1", col, stage);
    sqlite3_stmt *st;
    ck_assert(sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK);
    ck_assert(sqlite3_step(st) == SQLITE_ROW);
    double v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* The version each op read, as logged (semantics §4, §6.1): PipeDream's forward on stage k
 * lags the synchronous version by up to D−1−k, its backward by the same (stashing);
 * PipeOptim's predicted forward targets the synchronous version (lag 0 at most
 * stages) while its backward reads the latest; GPipe never lags. */
START_TEST(test_logged_staleness)
{
    struct pb_run_cfg c;
    small_cfg(&c);
    c.epochs = 1;
    c.schedule = "pipedream";
    run_ok(&c, NULL);
    for (int k = 0; k < 4; k++) {
        ck_assert_double_eq(staleness_of(c.db, "f_max", k), 3 - k);
        ck_assert_double_eq(staleness_of(c.db, "b_max", k), 3 - k);
    }
    c.schedule = "pipeoptim";
    run_ok(&c, NULL);
    for (int k = 0; k < 4; k++) {
        ck_assert_double_eq(staleness_of(c.db, "f_max", k), 0);
        ck_assert_double_le(staleness_of(c.db, "b_max", k), 0);
        ck_assert_double_ge(staleness_of(c.db, "pred_count", k), k < 3 ? 1 : 0);
    }
    c.schedule = "gpipe";
    run_ok(&c, NULL);
    for (int k = 0; k < 4; k++)
        ck_assert_double_eq(staleness_of(c.db, "f_max", k), 0);
}
END_TEST

/* Every schedule and variant learns: mlp, 6,000 Fashion-MNIST samples, one epoch,
 * D = 4, SGDM lr 0.01, micro-batches of 64. Measured: pipedream 50.6%, pipeoptim
 * 62.8%, spectrain 71.0% (updates every micro-batch, staleness up to 3 on the first
 * stage, which holds the 784x256 layer); gpipe, pipedream-2bw and xpipe 42.5–42.8%
 * (one update every M = 4 micro-batches); pipemare 65.2%, pipedream --variant vertical
 * 40.0% (a lag of D−1 = 3 updates on every stage where PipeDream's is 3, 2, 1, 0; 53.8%
 * and 64.2% after a second and third epoch). Chance is 10%; the thresholds 40% for the
 * schedules that update every micro-batch and 30% for those with mini-batches of M
 * (uses_microbatches) and for vertical sync leave a margin. */
START_TEST(test_every_schedule_learns)
{
    struct sched_form forms[SCHED_FORMS_MAX];
    int nforms = sched_forms(forms);
    for (int i = 0; i < nforms; i++) {
        struct pb_run_cfg c;
        struct pb_err e;
        struct pb_run_summary sum;
        small_cfg(&c);
        c.limit_train = 6000;
        c.limit_val = 2000;
        c.microbatch_size = 64;
        sched_form_apply(&c, &forms[i]);
        c.epochs = 1;
        c.threads = 0;
        ck_assert_msg(pb_run(&c, &sum, &e) == PB_EXIT_OK, "%s: %s", forms[i].label, e.msg);
        bool vertical = sched_form_is(&forms[i], "pipedream", "vertical");
        double need = forms[i].sch->uses_microbatches || vertical ? 0.30 : 0.40;
        ck_assert_msg(sum.final_acc > need, "%s: validation accuracy %.3f <= %.2f",
                      forms[i].label, sum.final_acc, need);
    }
}
END_TEST

/* --lr-steps are torch's MultiStepLR milestones stepped once per epoch: with 1,2 the
 * rate is lr for the first epoch, lr·γ for the second, lr·γ² from the third on. */
START_TEST(test_lr_steps_flag)
{
    char cmd[1024];
    const char *db = tmp_path("lr.db");
    snprintf(cmd, sizeof cmd, "%s run --quiet --limit-train 320 --limit-val 64 --microbatch-size 32 "
                              "--epochs 3 --lr 0.1 --lr-steps 1,2 --lr-gamma 0.5 --db %s",
             getenv("PB_PIPEBENCH"), db);
    ck_assert_int_eq(system(cmd), 0);
    sqlite3 *h;
    sqlite3_stmt *st;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    ck_assert(sqlite3_prepare_v2(h, "SELECT lr FROM epochs ORDER BY epoch", -1, &st, NULL) == SQLITE_OK);
    const double want[3] = {0.1, 0.05, 0.025};
    for (int i = 0; i < 3; i++) {
        ck_assert(sqlite3_step(st) == SQLITE_ROW);
        ck_assert_double_eq_tol(sqlite3_column_double(st, 0), want[i], 1e-7);  /* float lr */
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("train");
    TCase *fast = tcase_create("seq_fast");
    tcase_set_tags(fast, "fast");
    tcase_set_timeout(fast, 600);
    tcase_add_test(fast, test_checkpoint_round_trip);
    tcase_add_test(fast, test_logged_staleness);
    tcase_add_test(fast, test_lr_steps_flag);
    suite_add_tcase(s, fast);
    TCase *tc = tcase_create("seq");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_one_stage_is_plain_training);
    tcase_add_test(tc, test_gpipe_is_gradient_accumulation);
    tcase_add_test(tc, test_same_seed_same_bits);
    tcase_add_test(tc, test_every_schedule_learns);
    suite_add_tcase(s, tc);
    return s;
}
