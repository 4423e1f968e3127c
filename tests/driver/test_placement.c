/* tests/driver/test_placement.c — --devices (harness/driver/placement.h): k devices for D stages
 * place stage i on LIST[i·k/D]; the configuration records one entry per stage, so two
 * lists that place alike are one configuration and two that do not are two; `pipebench
 * show` prints it; a run recorded before --devices existed reads as every stage on
 * device 0, in show and in the identity sweep and compare find finished runs by. */
#include "tests/support/cli_util.h"

#include "harness/driver/finished.h"
#include "harness/driver/placement.h"

static void expect_placement(const char *list, int stages, const char *want)
{
    int dev[16];
    struct pb_err e;
    ck_assert_msg(pb_placement_parse(list, stages, dev, &e) == 0, "%s: %s", list, e.msg);
    char *got = pb_placement_text(dev, stages);
    ck_assert_msg(!strcmp(got, want), "--devices %s, %d stages: %s, not %s", list, stages, got,
                  want);
    free(got);
}

START_TEST(test_groups)
{
    expect_placement(NULL, 3, "0,0,0");
    expect_placement("2", 4, "2,2,2,2");
    expect_placement("0,1", 4, "0,0,1,1");
    expect_placement("0,1", 3, "0,0,1");
    expect_placement("3,1,2", 3, "3,1,2");
    expect_placement("0:1", 2, "0,1");
    expect_placement("0,1,2", 5, "0,0,1,1,2");
}
END_TEST

static char *json_of(const char *devices, int stages)
{
    struct pb_run_cfg c;
    pb_run_cfg_defaults(&c);
    c.stages = stages;
    c.devices = devices;
    return pb_run_cfg_json(&c);
}

START_TEST(test_identity)
{
    char *a = json_of("0", 2), *b = json_of("0,0", 2), *c = json_of("1,0", 2),
         *d = json_of(NULL, 2);
    ck_assert_msg(strstr(a, "\"devices\":\"0,0\""), "%s", a);
    ck_assert_str_eq(a, b);
    ck_assert_str_eq(a, d);
    ck_assert_str_ne(a, c);
    free(a);
    free(b);
    free(c);
    free(d);
}
END_TEST

START_TEST(test_recorded_shown_and_old_runs)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "placement");
    int rc = cli_run(dir, out, sizeof out, "run --quiet --stages 2 --limit-train 256 "
                                           "--limit-val 64 --db runs.db --devices 0");
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "runs.db", "SELECT json_extract(config, '$.devices') = "
                                                "'0,0' FROM runs WHERE id = 1"), 1);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "show 1 --db runs.db"), 0);
    ck_assert_msg(strstr(out, "devices") && strstr(out, "0,0"), "%s", out);
    /* the same configuration, found finished by the identity of sweep and compare */
    struct pb_batch_item item = {0};
    pb_run_cfg_defaults(&item.cfg);
    item.cfg.stages = 2;
    item.cfg.limit_train = 256;
    item.cfg.limit_val = 64;
    item.cfg.devices = "0,0";
    item.cfg.batch = 64;   /* run's samples per update where neither option is given */
    char db[128];
    snprintf(db, sizeof db, "%s/runs.db", dir);
    int64_t id = 0;
    struct pb_err e;
    ck_assert_msg(pb_finished_runs(db, &item, 1, &id, false, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(id, 1);
    /* recorded before --devices: no key, every stage on device 0 */
    sqlite3 *h;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    ck_assert(sqlite3_exec(h, "UPDATE runs SET config = json_remove(config, '$.devices')", NULL,
                           NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    id = 0;
    ck_assert_msg(pb_finished_runs(db, &item, 1, &id, false, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(id, 1);
    item.cfg.devices = "0,1";
    ck_assert_msg(pb_finished_runs(db, &item, 1, &id, false, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(id, 0);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "show 1 --db runs.db"), 0);
    ck_assert_msg(strstr(out, "devices"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("placement");
    TCase *tc = tcase_create("devices");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_groups);
    tcase_add_test(tc, test_identity);
    tcase_add_test(tc, test_recorded_shown_and_old_runs);
    suite_add_tcase(s, tc);
    return s;
}
