/* tests/driver/test_footing.c — equal footing by default (semantics §1.5): run and sweep take
 * samples per update from --batch, 64 where neither it nor --microbatch-size is given,
 * as compare does; a report row that mixes schedules of different samples per update
 * says so; a run recorded before the default (micro-batches of 64, no batch in its
 * configuration) still reads, as its own configuration. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/driver/run_json.h"
#include "tests/support/cli_util.h"

#define SMALL "--model mlp --dataset synthetic --stages 2 --epochs 1 --limit-train 128 " \
              "--limit-val 64 --db r.db --quiet "

/* The text of the first column of the first row of sql on dir/r.db, "" for none. */
static void db_text(const char *dir, const char *sql, char *buf, size_t cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s/r.db", dir);
    sqlite3 *h;
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK, "%s", sql);
    buf[0] = 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* run without --batch: 64 samples per update, GPipe's two micro-batches of 32; a
 * default that cannot split says it is the default. */
START_TEST(test_run_default_batch)
{
    char dir[64], out[8192];
    cli_scratch(dir, sizeof dir, "footrun");
    ck_assert_msg(cli_run(dir, out, sizeof out, "run " SMALL "--schedule gpipe") == 0, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT samples_per_update FROM runs"), 64);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT microbatch_size FROM runs"), 32);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT json_extract(config, '$.batch') FROM "
                                "runs"), 64);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run " SMALL "--schedule gpipe "
                             "--microbatches 3"), 2);
    ck_assert_msg(strstr(out, "neither --batch nor --microbatch-size is given, so --batch is "
                          "64 (the default)") && strstr(out, "give a multiple of 3"), "%s", out);
    /* --microbatch-size alone keeps its meaning */
    ck_assert_msg(cli_run(dir, out, sizeof out, "run " SMALL "--schedule gpipe "
                          "--microbatch-size 16") == 0, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT samples_per_update FROM runs WHERE id = "
                                "2"), 32);
    cli_cleanup(dir);
}
END_TEST

/* A sweep without --batch gives every schedule 64 samples per update, and its report
 * rows carry no note. */
START_TEST(test_sweep_default_batch)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "footsweep");
    cli_write(dir, "s.ini", "[grid]\nschedule = gpipe, pipedream\n[run]\nmodel = mlp\n"
                            "dataset = synthetic\nstages = 2\nepochs = 1\nlimit-train = 128\n"
                            "limit-val = 64\n");
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db r.db") == 0, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM runs WHERE status = 'done' "
                                "AND samples_per_update = 64"), 2);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT microbatch_size FROM runs WHERE "
                                "schedule = 'gpipe'"), 32);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT microbatch_size FROM runs WHERE "
                                "schedule = 'pipedream'"), 64);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table accuracy"), 0);
    ck_assert_msg(!strstr(out, "samples/update differ") && !strstr(out, "| note"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* Micro-batches of 32 for both: GPipe updates per 64 samples, PipeDream per 32, in one
 * configuration's row: the row says so beside it, in every table of that layout. */
START_TEST(test_mixed_row_note)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "footmix");
    ck_assert_msg(cli_run(dir, out, sizeof out, "run " SMALL "--schedule gpipe "
                          "--microbatch-size 32") == 0, "%s", out);
    ck_assert_msg(cli_run(dir, out, sizeof out, "run " SMALL "--schedule pipedream "
                          "--microbatch-size 32") == 0, "%s", out);
    static const char *const tables[] = {"accuracy", "throughput", "bubble"};
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table %s",
                                 tables[i]), 0);
        const char *row = strstr(out, "| sgdm");
        ck_assert_msg(row && strstr(out, "| note") &&
                      strstr(row, "samples/update differ: gpipe 64, pipedream 32"),
                      "%s: %s", tables[i], out);
    }
    cli_cleanup(dir);
}
END_TEST

/* A run recorded before the default: micro-batches of 64 and no batch in its
 * configuration, as every run without --batch recorded then (the schema is the same).
 * It reads back as it was, reports as its own configuration beside today's default, and
 * a configuration read from the database is not given the default. */
START_TEST(test_old_run_reads)
{
    char dir[64], out[16384], json[8192];
    cli_scratch(dir, sizeof dir, "footold");
    ck_assert_msg(cli_run(dir, out, sizeof out, "run " SMALL "--schedule gpipe "
                          "--microbatch-size 64") == 0, "%s", out);
    db_text(dir, "SELECT config FROM runs WHERE id = 1", json, sizeof json);
    ck_assert_msg(strstr(json, "\"microbatch_size\":64") && !strstr(json, "\"batch\""), "%s",
                  json);
    struct pb_run_cfg c;
    struct pb_run_json *keep = NULL;
    struct pb_err e;
    ck_assert_msg(pb_run_cfg_from_json(json, &c, &keep, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(c.batch, 0);
    ck_assert_int_eq(c.microbatch_size, 64);
    pb_run_json_finish(keep);
    ck_assert_msg(cli_run(dir, out, sizeof out, "run " SMALL "--schedule gpipe") == 0, "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "show 1 --db r.db"), 0);
    ck_assert_msg(strstr(out, "gpipe"), "%s", out);
    /* two configurations: the old one (2 × 64 samples per update) and the default (64) */
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table updates "
                             "--format csv"), 0);
    const char *first = strstr(out, "gpipe");
    ck_assert_msg(first && strstr(first + 1, "gpipe"), "one row for two configurations: %s",
                  out);
    ck_assert_msg(strstr(out, ",128,") && strstr(out, ",64,"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* A sweep over a database of runs recorded before the default: PipeDream's micro-batches
 * of 64 are its batch of 64 (one micro-batch per update), found finished; GPipe's two
 * micro-batches of 64 are not its batch of 64, and it runs. */
START_TEST(test_sweep_finds_old_runs)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "footresume");
    for (int i = 0; i < 2; i++)
        ck_assert_msg(cli_run(dir, out, sizeof out, "run " SMALL "--schedule %s "
                              "--microbatch-size 64", i ? "gpipe" : "pipedream") == 0, "%s", out);
    cli_write(dir, "s.ini", "[grid]\nschedule = gpipe, pipedream\n[run]\nmodel = mlp\n"
                            "dataset = synthetic\nstages = 2\nepochs = 1\nlimit-train = 128\n"
                            "limit-val = 64\n");
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db r.db") == 0, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM runs"), 3);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM runs WHERE schedule = "
                                "'gpipe' AND samples_per_update = 64"), 1);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM runs WHERE schedule = "
                                "'pipedream'"), 1);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("footing");
    TCase *tc = tcase_create("footing");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_run_default_batch);
    tcase_add_test(tc, test_sweep_default_batch);
    tcase_add_test(tc, test_mixed_row_note);
    tcase_add_test(tc, test_old_run_reads);
    tcase_add_test(tc, test_sweep_finds_old_runs);
    suite_add_tcase(s, tc);
    return s;
}
