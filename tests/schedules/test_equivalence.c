/* tests/schedules/test_equivalence.c — semantics §4.7's second property: PipeOptim with ΔW forced to 0
 * and SpecTrain with s forced to 0 are exactly "1F1B with stale weights" — every F and
 * every B reads the latest W of its stage when it runs, in PipeDream's op order. The
 * programs are rewritten through pb_run_cfg.edit_programs (look-ahead 0: Ŵ = W, which
 * the worker then reads without a copy), and the reference is PipeDream's programs
 * with the stash replaced by the latest weights.
 * The saved weights must be bit-identical and the logged versions equal op by op. */
#include <check.h>
#include <sqlite3.h>
#include <string.h>

#include "tests/support/train_util.h"
#include "tests/support/test_util.h"

/* Every prediction made with look-ahead 0: Ŵ = W. */
static void zero_lookahead(void *ctx, const struct pb_pipe *p, struct pb_program *progs)
{
    (void)ctx;
    for (int k = 0; k < p->stages; k++)
        for (int i = 0; i < progs[k].n; i++)
            if (progs[k].ops[i].wsrc == PB_W_PREDICTED)
                progs[k].ops[i].s = 0;
}

/* 1F1B with stale weights: every F and B reads the latest W. */
static void latest_everywhere(void *ctx, const struct pb_pipe *p, struct pb_program *progs)
{
    (void)ctx;
    for (int k = 0; k < p->stages; k++)
        for (int i = 0; i < progs[k].n; i++)
            if (progs[k].ops[i].kind != PB_OP_U) {
                progs[k].ops[i].wsrc = PB_W_LATEST;
                progs[k].ops[i].s = 0;
            }
}

/* The (version, look-ahead) of every logged op of the database's only run. */
static int *logged_versions(const char *db, int *n)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    ck_assert(sqlite3_prepare_v2(h, "SELECT version, ahead FROM events ORDER BY epoch, device, "
                                    "seq", -1, &st, NULL) == SQLITE_OK);
    int cap = 1024, *v = malloc((size_t)cap * sizeof *v);
    *n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (*n + 2 > cap)
            v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[(*n)++] = sqlite3_column_int(st, 0);
        v[(*n)++] = sqlite3_column_int(st, 1);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

static void run_edited(const char *schedule, const char *variant, const char *optimizer,
                       void (*edit)(void *, const struct pb_pipe *, struct pb_program *),
                       const char *name)
{
    struct pb_run_cfg c;
    struct pb_err e;
    small_cfg(&c);
    c.schedule = schedule;
    c.variant = variant;
    c.optimizer = optimizer;
    ck_assert(pb_optim_cfg_from_name(&c.optim, optimizer, &e) == 0);
    c.stages = 4;
    c.threads = 1;
    c.trace_epochs = "all";
    c.edit_programs = edit;
    char db[64];
    snprintf(db, sizeof db, "%s.db", name);
    c.db = tmp_path(db);
    char save[64];
    snprintf(save, sizeof save, "%s.safetensors", name);
    run_ok(&c, save);
}

static void same_as_stale_1f1b(const char *schedule, const char *variant, const char *optimizer)
{
    run_edited(schedule, variant, optimizer, zero_lookahead, "zero");
    run_edited("pipedream", NULL, optimizer, latest_everywhere, "stale");
    size_t na, nb;
    float *a = load_weights(tmp_path("zero.safetensors"), &na);
    float *b = load_weights(tmp_path("stale.safetensors"), &nb);
    ck_assert_uint_eq(na, nb);
    char what[160];
    snprintf(what, sizeof what, "%s %s %s with s = 0 against 1F1B with stale weights", schedule,
             variant ? variant : "", optimizer);
    pb_assert_same_bits(what, a, b, na);
    int nva, nvb;
    int *va = logged_versions(tmp_path("zero.db"), &nva);
    int *vb = logged_versions(tmp_path("stale.db"), &nvb);
    ck_assert_int_eq(nva, nvb);
    for (int i = 0; i < nva; i += 2)
        ck_assert_msg(va[i] == vb[i] && va[i + 1] == 0 && vb[i + 1] == 0,
                      "%s: op %d read version %d+%d, 1F1B with stale weights %d+%d", schedule,
                      i / 2, va[i], va[i + 1], vb[i], vb[i + 1]);
    free(a);
    free(b);
    free(va);
    free(vb);
}

START_TEST(test_pipeoptim_sgdm) { same_as_stale_1f1b("pipeoptim", NULL, "sgdm"); }
END_TEST
START_TEST(test_pipeoptim_adam) { same_as_stale_1f1b("pipeoptim", NULL, "adam"); }
END_TEST
START_TEST(test_pipeoptim_code) { same_as_stale_1f1b("pipeoptim", "code", "sgdm"); }
END_TEST
START_TEST(test_spectrain) { same_as_stale_1f1b("spectrain", NULL, "sgdm"); }
END_TEST
START_TEST(test_spectrain_code) { same_as_stale_1f1b("spectrain", "code", "sgdm"); }
END_TEST

/* The property has teeth: with the real look-ahead PipeOptim's weights differ. */
START_TEST(test_lookahead_matters)
{
    run_edited("pipeoptim", NULL, "sgdm", NULL, "real");
    run_edited("pipedream", NULL, "sgdm", latest_everywhere, "stale");
    size_t na, nb;
    float *a = load_weights(tmp_path("real.safetensors"), &na);
    float *b = load_weights(tmp_path("stale.safetensors"), &nb);
    ck_assert_uint_eq(na, nb);
    ck_assert_msg(memcmp(a, b, na * sizeof *a) != 0, "predicting changed nothing");
    free(a);
    free(b);
}
END_TEST

/* An edit that breaks the programs is refused with the validator's reason. */
static void drop_last_op(void *ctx, const struct pb_pipe *p, struct pb_program *progs)
{
    (void)ctx;
    progs[p->stages - 1].n--;
}

START_TEST(test_invalid_edit_refused)
{
    struct pb_run_cfg c;
    struct pb_run_summary sum;
    struct pb_err e;
    small_cfg(&c);
    c.db = tmp_path("bad.db");
    c.edit_programs = drop_last_op;
    ck_assert_int_eq(pb_run(&c, &sum, &e), PB_EXIT_USAGE);
    ck_assert_msg(strstr(e.msg, "do not validate") != NULL, "%s", e.msg);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("equivalence");
    TCase *tc = tcase_create("stale_1f1b");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_pipeoptim_sgdm);
    tcase_add_test(tc, test_pipeoptim_adam);
    tcase_add_test(tc, test_pipeoptim_code);
    tcase_add_test(tc, test_spectrain);
    tcase_add_test(tc, test_spectrain_code);
    tcase_add_test(tc, test_lookahead_matters);
    tcase_add_test(tc, test_invalid_edit_refused);
    suite_add_tcase(s, tc);
    return s;
}
