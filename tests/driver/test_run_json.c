/* tests/driver/test_run_json.c — a run's recorded configuration read back (pb_run_cfg_from_json,
 * what `pipebench resume` does): a recorded configuration reads back to the same JSON, a
 * preset that does not resolve reads back as itself, and a tampered one is refused with a
 * message instead of read as something else: counts out of int's range (undefined to
 * convert; found by tests/fuzz/fuzz_run_json), numbers out of float's range, lists of
 * something else than numbers or longer than pipebench records, null and objects, a seed
 * that is no whole number. The seed reads back in both its forms. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/driver/run_flags.h"

START_TEST(test_round_trip)
{
    struct pb_run_cfg c, back;
    pb_run_cfg_defaults(&c);
    c.schedule = "gpipe";
    c.microbatches = 8;
    c.trace_mb_lo = 2;
    c.trace_mb_hi = 5;
    c.optim.lr_steps[0] = 3;
    c.optim.lr_steps[1] = 7;
    c.optim.n_lr_steps = 2;
    c.tf32 = true;
    c.deterministic = true;
    char *json = pb_run_cfg_json(&c);
    ck_assert_msg(strstr(json, "\"tf32\":true") && strstr(json, "\"deterministic\":true"), "%s",
                  json);
    struct pb_run_json *keep;
    struct pb_err e;
    pb_run_cfg_defaults(&back);
    ck_assert_msg(pb_run_cfg_from_json(json, &back, &keep, &e) == 0, "%s", e.msg);
    ck_assert(back.tf32 && back.deterministic);
    char *again = pb_run_cfg_json(&back);
    ck_assert_str_eq(json, again);
    free(again);
    free(json);
    pb_run_json_finish(keep);
}
END_TEST

/* The seed is a JSON integer up to 2^53 (what every JSON reader holds exactly), its digits
 * as they are; above, a decimal string; each reads back to itself, and the string form a
 * configuration recorded before results schema 9 holds reads too. */
START_TEST(test_seed_forms)
{
    static const struct {
        uint64_t seed;
        const char *text;
    } cases[] = {
        {0, "\"seed\":0,"},
        {1000000000000000, "\"seed\":1000000000000000,"},
        {UINT64_C(9007199254740992), "\"seed\":9007199254740992,"},
        {UINT64_C(9007199254740993), "\"seed\":\"9007199254740993\","},
        {UINT64_MAX, "\"seed\":\"18446744073709551615\","},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct pb_run_cfg c, back;
        pb_run_cfg_defaults(&c);
        c.seed = cases[i].seed;
        char *json = pb_run_cfg_json(&c);
        ck_assert_msg(strstr(json, cases[i].text), "no %s in %s", cases[i].text, json);
        struct pb_run_json *keep;
        struct pb_err e;
        pb_run_cfg_defaults(&back);
        ck_assert_msg(pb_run_cfg_from_json(json, &back, &keep, &e) == 0, "%s", e.msg);
        ck_assert(back.seed == cases[i].seed);
        char *again = pb_run_cfg_json(&back);
        ck_assert_str_eq(json, again);
        free(again);
        free(json);
        pb_run_json_finish(keep);
    }
    struct pb_run_cfg c;
    struct pb_run_json *keep;
    struct pb_err e;
    pb_run_cfg_defaults(&c);
    ck_assert_msg(pb_run_cfg_from_json("{\"seed\":\"7\"}", &c, &keep, &e) == 0, "%s", e.msg);
    ck_assert(c.seed == 7);
    pb_run_json_finish(keep);
}
END_TEST

/* NAdam's ψ is recorded for nadam alone (the other optimizers' configurations keep the
 * keys they had) and reads back. */
START_TEST(test_nadam_momentum_decay)
{
    struct pb_run_cfg c, back;
    struct pb_err e;
    pb_run_cfg_defaults(&c);
    char *json = pb_run_cfg_json(&c);
    ck_assert_msg(!strstr(json, "momentum_decay"), "%s", json);
    free(json);
    c.optimizer = "nadam";
    ck_assert_int_eq(pb_optim_cfg_from_name(&c.optim, "nadam", &e), 0);
    c.optim.momentum_decay = 0.01f;
    json = pb_run_cfg_json(&c);
    ck_assert_msg(strstr(json, "\"momentum_decay\":0.01"), "%s", json);
    struct pb_run_json *keep;
    pb_run_cfg_defaults(&back);
    ck_assert_msg(pb_run_cfg_from_json(json, &back, &keep, &e) == 0, "%s", e.msg);
    ck_assert(back.optim.kind == PB_OPT_NADAM && back.optim.momentum_decay == 0.01f);
    free(json);
    pb_run_json_finish(keep);
}
END_TEST

/* PipeMare's rescheduling length is recorded for pipemare alone, as in force (the
 * default 7 when not given), and reads back. */
START_TEST(test_pipemare_reschedule)
{
    struct pb_run_cfg c, back;
    struct pb_err e;
    pb_run_cfg_defaults(&c);
    char *json = pb_run_cfg_json(&c);
    ck_assert_msg(!strstr(json, "lr_reschedule_epochs"), "%s", json);
    free(json);
    c.schedule = "pipemare";
    json = pb_run_cfg_json(&c);
    ck_assert_msg(strstr(json, "\"lr_reschedule_epochs\":7"), "%s", json);
    free(json);
    c.lr_reschedule_epochs = 3;
    json = pb_run_cfg_json(&c);
    struct pb_run_json *keep;
    pb_run_cfg_defaults(&back);
    ck_assert_msg(pb_run_cfg_from_json(json, &back, &keep, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(back.lr_reschedule_epochs, 3);
    ck_assert_str_eq(back.schedule, "pipemare");
    free(json);
    pb_run_json_finish(keep);
}
END_TEST

/* A preset the model does not have reads back as itself (the run's checks refuse it), not
 * as "" and then as the default preset (found by tests/fuzz/fuzz_run_json). */
START_TEST(test_unknown_preset_kept)
{
    struct pb_run_cfg c, back;
    struct pb_run_json *keep, *keep_back;
    struct pb_err e;
    pb_run_cfg_defaults(&c);
    ck_assert_msg(pb_run_cfg_from_json("{\"model\":\"inceptionv3\",\"preset\":\"huge\"}", &c,
                                       &keep, &e) == 0, "%s", e.msg);
    char *json = pb_run_cfg_json(&c);
    ck_assert_msg(strstr(json, "\"preset\":\"huge\""), "%s", json);
    pb_run_cfg_defaults(&back);
    ck_assert_msg(pb_run_cfg_from_json(json, &back, &keep_back, &e) == 0, "%s", e.msg);
    char *again = pb_run_cfg_json(&back);
    ck_assert_str_eq(json, again);
    free(again);
    free(json);
    pb_run_json_finish(keep);
    pb_run_json_finish(keep_back);
}
END_TEST

static void expect_refused(const char *json, const char *fragment)
{
    struct pb_run_cfg c;
    struct pb_run_json *keep;
    struct pb_err e;
    pb_run_cfg_defaults(&c);
    ck_assert_msg(pb_run_cfg_from_json(json, &c, &keep, &e) == -1, "accepted: %s", json);
    ck_assert_msg(strstr(e.msg, fragment), "%s: message lacks '%s': %s", json, fragment, e.msg);
    pb_run_json_finish(keep);
}

START_TEST(test_tampered_refused)
{
    expect_refused("{\"trace_mb_hi\":1e30}", "trace_mb_hi is 1e+30, not a whole number");
    expect_refused("{\"trace_mb_hi\":-1}", "trace_mb_hi is -1");
    expect_refused("{\"trace_mb_lo\":2.5,\"trace_mb_hi\":4}", "trace_mb_lo is 2.5");
    expect_refused("{\"lr_steps\":[1,\"2\"]}", "lr_steps holds something else than numbers");
    expect_refused("{\"lr\":null}", "lr is null or an object");
    expect_refused("{\"model\":{\"name\":\"mlp\"}}", "model is null or an object");
    char big[4096] = "{\"lr_steps\":[1";
    for (int i = 0; i < 300; i++)
        strcat(big, ",1000");
    strcat(big, "]}");
    expect_refused(big, "lr_steps is a list longer than pipebench records");
    expect_refused("[1]", "not a JSON object");
    expect_refused("{\"seed\":1.5}", "seed is not a whole number from 0 to 2^53 (got 1.5)");
    expect_refused("{\"seed\":-1}", "seed is not a whole number from 0 to 2^53");
    expect_refused("{\"seed\":1e300}", "seed is not a whole number from 0 to 2^53");
    expect_refused("{\"seed\":true}", "seed is not a non-negative integer");
    expect_refused("{\"seed\":\"x\"}", "--seed expects a non-negative integer");
    /* numbers a float cannot hold became inf, which the configuration's JSON then
     * recorded as null (found by tests/fuzz/fuzz_run_json's round trip) */
    expect_refused("{\"weight_decay\":1e308}", "--weight-decay expects a number of magnitude");
    expect_refused("{\"beta1\":0.9,\"beta2\":-1e39}", "--betas expects 2 comma-separated");
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("run_json");
    TCase *tc = tcase_create("json");
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_seed_forms);
    tcase_add_test(tc, test_nadam_momentum_decay);
    tcase_add_test(tc, test_pipemare_reschedule);
    tcase_add_test(tc, test_unknown_preset_kept);
    tcase_add_test(tc, test_tampered_refused);
    suite_add_tcase(s, tc);
    return s;
}
