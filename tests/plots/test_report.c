/* tests/plots/test_report.c — the reporting views (results/views.sql) and `pipebench report`
 * (plots/report.c): exact Markdown and CSV tables of a made-up database (two seeds in
 * one cell give mean ± std, a failed run is ignored, diverged runs are counted and not
 * averaged, a cell of fewer than 3 seeds or a lead Welch's t-test does not separate is not
 * marked best, --ci's intervals and level against hand-worked values, configurations that
 * look alike get a row each), run selection, and exit status 2 with a message for an
 * empty database and bad flags. */
#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plots/report.h"
#include "plots/report_db.h"
#include "plots/stats.h"
#include "tests/support/report_fixture.h"
#include "tests/support/test_util.h"

static const char *dir, *db;

static void setup(void)
{
    dir = fx_mkdtemp("report");
    db = fx_build_db(dir);
}

static void teardown(void)
{
    fx_rmdir(dir);
}

/* The table as pb_report_write prints it. */
static char *report(enum pb_report_table t, enum pb_report_format f, double target)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(out);
    struct pb_report_opts o = {.table = t, .format = f, .target = target};
    struct pb_err e;
    ck_assert_msg(pb_report_write(db, &o, out, &e) == 0, "%s", e.msg);
    fclose(out);
    return buf;
}

/* The first column of the first row of sql on a reporting connection, as text. */
static char *query(const char *sql)
{
    static char buf[256];
    struct pb_results *r;
    struct pb_err e;
    ck_assert_msg(pb_report_open(&r, db, &e) == 0, "%s", e.msg);
    sqlite3_stmt *s;
    ck_assert_msg(sqlite3_prepare_v2(pb_results_sqlite(r), sql, -1, &s, NULL) == SQLITE_OK,
                  "%s: %s", sql, sqlite3_errmsg(pb_results_sqlite(r)));
    ck_assert_msg(sqlite3_step(s) == SQLITE_ROW, "%s: no row", sql);
    const unsigned char *t = sqlite3_column_text(s, 0);
    snprintf(buf, sizeof buf, "%s", t ? (const char *)t : "NULL");
    sqlite3_finalize(s);
    pb_results_close(r);
    return buf;
}

START_TEST(views)
{
    /* run 1: accuracies 0.50, 0.60; run 7: 0.65, 0.70 */
    ck_assert_str_eq(query("SELECT printf('%.2f %.2f %d', best_acc, final_acc, epochs_done) "
                           "FROM run_accuracy WHERE run_id = 7"), "0.70 0.70 2");
    ck_assert_str_eq(query("SELECT printf('%.2f', final_acc) FROM run_accuracy "
                           "WHERE run_id = 1"), "0.60");
    /* epochs and seconds to 62%: run 2 (0.55, 0.64) at epoch 2 after 20 s; run 1 never */
    ck_assert_str_eq(query("SELECT group_concat(run_id || ':' || e || ':' || s) FROM (SELECT "
                           "run_id, min(epoch) + 1 AS e, min(elapsed_s) AS s FROM "
                           "epoch_progress WHERE val_acc >= 0.62 GROUP BY run_id "
                           "ORDER BY run_id)"), "2:2:20.0,3:2:20.0,4:2:20.0,5:1:10.0,6:1:10.0,"
                                                "7:1:10.0");
    /* run 2's epochs ran 900 and 1100 samples/s: the first is its warm-up */
    ck_assert_str_eq(query("SELECT throughput || ' ' || throughput_epochs || ' ' || "
                           "warmup_included FROM run_throughput WHERE run_id = 2"), "1100.0 1 0");
    /* bubble 0.25 (k + 1) / D over 4 stages: mean 0.15625 */
    ck_assert_str_eq(query("SELECT bubble_frac FROM run_bubble WHERE run_id = 1"), "0.15625");
    /* pipedream, 4 stages: 1 MiB weight copies each; acts peak 1 MiB (epoch 1) */
    ck_assert_str_eq(query("SELECT wcopies_sum || ' ' || wcopies_max || ' ' || acts_sum || ' ' "
                           "|| total_sum || ' ' || total_max FROM run_memory WHERE run_id = 3"),
                     "4194304 1048576 4194304 27262976 6815744");
    ck_assert_str_eq(query("SELECT f_mean || ' ' || f_max || ' ' || coalesce(pred_err_mean, "
                           "'none') FROM run_staleness WHERE run_id = 3"), "1.5 3.0 none");
    ck_assert_str_eq(query("SELECT printf('%g %g %d', pred_err_mean, pred_err_max, pred_count) "
                           "FROM run_staleness WHERE run_id = 4"), "0.001 0.002 60");
    ck_assert_str_eq(query("SELECT column_label || '|' || coalesce(variant, 'NULL') FROM "
                           "run_config WHERE run_id = 2"), "gpipe|NULL");
    ck_assert_str_eq(query("SELECT column_label FROM run_summary WHERE run_id = 4"),
                     "pipeoptim (code)");
}
END_TEST

/* The first column of the first row of sql on a plain sqlite3 connection to the file
 * (no reporting views of its own), as text; "" for no row, "error: ..." on an error. */
static char *plain_query(const char *sql)
{
    static char buf[4096];
    sqlite3 *h;
    sqlite3_stmt *s;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    buf[0] = 0;
    if (sqlite3_prepare_v2(h, sql, -1, &s, NULL) != SQLITE_OK)
        snprintf(buf, sizeof buf, "error: %s", sqlite3_errmsg(h));
    else if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
        snprintf(buf, sizeof buf, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(h);
    return buf;
}

/* The database itself holds the reporting views: a user's sqlite3 or pandas reads the
 * numbers the reports read, for every run; another build's views are replaced on the
 * next open by a writer. */
START_TEST(persistent_views)
{
    char every[FX_NRUNS][512], plain[FX_NRUNS][256];
    for (int id = 1; id <= FX_NRUNS; id++) {
        snprintf(every[id - 1], sizeof every[id - 1],
                 "SELECT printf('%%.4f:%%.4f:%%.5f', coalesce(best_acc, -1), coalesce(throughput, "
                 "-1), coalesce(bubble_frac, -1)) || ':' || coalesce(total_sum, -1) || ':' || "
                 "coalesce(f_mean, -1) || ':' || coalesce(config_id, '-') FROM run_summary "
                 "WHERE run_id = %d", id);
        snprintf(plain[id - 1], sizeof plain[id - 1], "%s", plain_query(every[id - 1]));
        ck_assert_msg(strncmp(plain[id - 1], "error", 5), "%s", plain[id - 1]);
        ck_assert_str_eq(plain[id - 1], query(every[id - 1]));
    }
    ck_assert_str_eq(plain_query("SELECT count(*) FROM sqlite_master WHERE type = 'view' AND "
                                 "name IN ('run_summary', 'run_throughput', 'run_memory', "
                                 "'run_staleness', 'run_accuracy', 'run_target')"), "6");
    ck_assert_str_eq(plain_query("SELECT count(*) FROM run_config"), plain_query(
                     "SELECT count(*) FROM runs WHERE executor IS NOT 'sim'"));
    /* views another build wrote (here: a wrong run_accuracy) are rewritten */
    sqlite3 *h;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    ck_assert(sqlite3_exec(h, "DROP VIEW run_summary; DROP VIEW run_accuracy; CREATE VIEW "
                              "run_accuracy AS SELECT 1 AS run_id; PRAGMA user_version = 7",
                              NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    struct pb_results *r;
    struct pb_err e;
    ck_assert_msg(pb_results_open(&r, db, &e) == 0, "%s", e.msg);
    pb_results_close(r);
    for (int id = 1; id <= FX_NRUNS; id++)
        ck_assert_str_eq(plain_query(every[id - 1]), plain[id - 1]);
}
END_TEST

static const char accuracy_md[] =
    "Maximum validation accuracy (%) per schedule: mean \u00b1 std over the finished seeds of "
    "a cell (n: its seeds, the repeats of one counted once; diverged ones are counted, not "
    "averaged), \u2013 where none; the best of each row marked where it and the runner-up "
    "each average at least 3 seeds and Welch's t-test separates them at the 5% level.\n"
    "\n"
    "| optimizer | model | dataset       | D | gpipe                | pipedream     | "
    "pipeoptim     | pipeoptim (code) |\n"
    "|:--------- |:----- |:------------- |:- | --------------------:| -------------:| "
    "-------------:| ----------------:|\n"
    "| adam      | mlp   | fashion-mnist | 2 |        70.00 (n = 1) |             \u2013 | "
    "70.00 (n = 1) |                \u2013 |\n"
    "| sgdm      | mlp   | fashion-mnist | 4 | 62.00 \u00b1 2.83 (n = 2) | 66.00 (n = 1) | "
    "            \u2013 |    65.00 (n = 1) |\n";

START_TEST(accuracy_md_exact)
{
    char *t = report(PB_REPORT_ACCURACY, PB_FORMAT_MD, 0);
    ck_assert_str_eq(t, accuracy_md);
    free(t);
    char out[4096];
    char args[600];
    snprintf(args, sizeof args, "report --db '%s' --table accuracy", db);
    ck_assert_int_eq(fx_cli(NULL, args, out, sizeof out, NULL, 0), 0);
    ck_assert_str_eq(out, accuracy_md);
}
END_TEST

START_TEST(accuracy_csv_exact)
{
    char *t = report(PB_REPORT_ACCURACY, PB_FORMAT_CSV, 0);
    ck_assert_str_eq(t, "optimizer,model,dataset,D,schedule,mean,std,n,runs,diverged,best,"
                        "shared_timing,metric,unit\n"
                        "adam,mlp,fashion-mnist,2,gpipe,70,,1,1,0,0,0,accuracy,%\n"
                        "adam,mlp,fashion-mnist,2,pipeoptim,70,,1,1,0,0,0,accuracy,%\n"
                        "sgdm,mlp,fashion-mnist,4,gpipe,62,2.828427125,2,2,0,0,0,accuracy,%\n"
                        "sgdm,mlp,fashion-mnist,4,pipedream,66,,1,1,0,0,0,accuracy,%\n"
                        "sgdm,mlp,fashion-mnist,4,pipeoptim (code),65,,1,1,0,0,0,accuracy,%\n");
    free(t);
}
END_TEST

/* Target 62%: gpipe reaches it in one of its two runs (epoch 2, 20 s), pipedream and
 * pipeoptim (code) at epoch 2; on the adam row both at epoch 1 (10 s). */
START_TEST(accuracy_target)
{
    char *t = report(PB_REPORT_ACCURACY, PB_FORMAT_CSV, 0.62);
    ck_assert_str_eq(t, "optimizer,model,dataset,D,schedule,mean,std,n,runs,diverged,best,"
                        "shared_timing,epochs_to_target,seconds_to_target,reached,metric,unit\n"
                        "adam,mlp,fashion-mnist,2,gpipe,70,,1,1,0,0,0,1,10.0,1,accuracy,%\n"
                        "adam,mlp,fashion-mnist,2,pipeoptim,70,,1,1,0,0,0,1,10.0,1,accuracy,%\n"
                        "sgdm,mlp,fashion-mnist,4,gpipe,62,2.828427125,2,2,0,0,0,2,20.0,1,accuracy,"
                        "%\n"
                        "sgdm,mlp,fashion-mnist,4,pipedream,66,,1,1,0,0,0,2,20.0,1,accuracy,%\n"
                        "sgdm,mlp,fashion-mnist,4,pipeoptim (code),65,,1,1,0,0,0,2,20.0,1,accuracy,"
                        "%\n");
    free(t);
    t = report(PB_REPORT_ACCURACY, PB_FORMAT_MD, 0.99);
    ck_assert_msg(strstr(t, "| 66.00 (n = 1; not reached) |") != NULL, "%s", t);
    ck_assert_msg(strstr(t, "to reach 99%") != NULL, "%s", t);
    free(t);
}
END_TEST

START_TEST(throughput_csv_exact)
{
    char *t = report(PB_REPORT_THROUGHPUT, PB_FORMAT_CSV, 0);
    ck_assert_str_eq(t, "optimizer,model,dataset,D,schedule,mean,std,n,runs,diverged,best,"
                        "shared_timing,spread_min,spread_max,spread_over,repeats,"
                        "warmup_included,metric,unit\n"
                        "adam,mlp,fashion-mnist,2,gpipe,800,,1,1,0,0,1,800,800,epochs,1,0,"
                        "throughput,samples/s\n"
                        "adam,mlp,fashion-mnist,2,pipeoptim,900,,1,1,0,0,1,900,900,epochs,1,0,"
                        "throughput,samples/s\n"
                        "sgdm,mlp,fashion-mnist,4,gpipe,1150,70.71067812,2,2,0,0,1,1100,1200,"
                        "epochs,1,0,throughput,samples/s\n"
                        "sgdm,mlp,fashion-mnist,4,pipedream,1500,,1,1,0,0,1,1500,1500,epochs,1,"
                        "0,throughput,samples/s\n"
                        "sgdm,mlp,fashion-mnist,4,pipeoptim (code),1300,,1,1,0,0,1,1300,1300,"
                        "epochs,1,0,throughput,samples/s\n");
    free(t);
    /* the wide form marks them */
    t = report(PB_REPORT_THROUGHPUT, PB_FORMAT_MD, 0);
    ck_assert_msg(strstr(t, "1150.0 \u00b1 70.7 \u2020 (n = 2; epochs 1100.0\u20131200.0)") != NULL, "%s", t);
    ck_assert_msg(strstr(t, "**") == NULL, "no best among shared timings: %s", t);
    free(t);
}
END_TEST

START_TEST(memory_csv_exact)
{
    char *t = report(PB_REPORT_MEMORY, PB_FORMAT_CSV, 0);
    ck_assert_str_eq(t, "optimizer,model,dataset,D,schedule,params,grads,optstate,wcopies,acts,"
                        "comm,scratch,bnstats,host,total,max stage\n"
                        "adam,mlp,fashion-mnist,2,gpipe,2.00,2.00,4.00,0.00,2.00,0.50,0.50,"
                        "0.00,0.00,11.00,5.50\n"
                        "adam,mlp,fashion-mnist,2,pipeoptim,2.00,2.00,4.00,0.00,2.00,0.50,0.50,"
                        "0.00,0.00,11.00,5.50\n"
                        "sgdm,mlp,fashion-mnist,4,gpipe,4.00,4.00,8.00,0.00,4.00,1.00,1.00,"
                        "0.00,0.00,22.00,5.50\n"
                        "sgdm,mlp,fashion-mnist,4,pipedream,4.00,4.00,8.00,4.00,4.00,1.00,1.00,"
                        "0.00,0.00,26.00,6.50\n"
                        "sgdm,mlp,fashion-mnist,4,pipeoptim (code),4.00,4.00,8.00,0.00,4.00,"
                        "1.00,1.00,0.00,0.00,22.00,5.50\n");
    free(t);
}
END_TEST

START_TEST(staleness_md_csv_exact)
{
    char *t = report(PB_REPORT_STALENESS, PB_FORMAT_CSV, 0);
    ck_assert_str_eq(t, "optimizer,model,dataset,D,schedule,F lag,F max,B lag,B max,pred err,"
                        "pred err max\n"
                        "adam,mlp,fashion-mnist,2,gpipe,0.00,0,0.00,0,\u2013,\u2013\n"
                        "adam,mlp,fashion-mnist,2,pipeoptim,0.00,0,0.00,0,1.00e-03,2.00e-03\n"
                        "sgdm,mlp,fashion-mnist,4,gpipe,0.00,0,0.00,0,\u2013,\u2013\n"
                        "sgdm,mlp,fashion-mnist,4,pipedream,1.50,3,1.50,3,\u2013,\u2013\n"
                        "sgdm,mlp,fashion-mnist,4,pipeoptim (code),0.00,0,0.00,0,1.00e-03,"
                        "2.00e-03\n");
    free(t);
    t = report(PB_REPORT_STALENESS, PB_FORMAT_MD, 0);
    ck_assert_msg(strstr(t, "| sgdm      | mlp   | fashion-mnist | 4 | pipedream        |  "
                            "1.50 |     3 |  1.50 |     3 |        \u2013 |            \u2013 "
                            "|\n") != NULL, "%s", t);
    free(t);
}
END_TEST

/* A diverged run is counted in its cell, never averaged; a cell of diverged runs only
 * says so. */
START_TEST(diverged_counted)
{
    sqlite3 *h;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    static const char *const sql[] = {
        "INSERT INTO runs (created, status, model, dataset, schedule, optimizer, stages, "
        "executor) VALUES ('2025-01-01T00:00:00Z', 'diverged', 'mlp', 'fashion-mnist', 'gpipe', "
        "'sgdm', 4, 'seq')",
        "INSERT INTO epochs (run_id, epoch, val_acc, samples, wall_s) VALUES "
        "(last_insert_rowid(), 0, 0.10, 100, 10)",
        "INSERT INTO runs (created, status, model, dataset, schedule, optimizer, stages, "
        "executor) VALUES ('2025-01-01T00:00:00Z', 'diverged', 'mlp', 'fashion-mnist', "
        "'pipedream', 'adam', 2, 'seq')",
    };
    for (size_t i = 0; i < sizeof sql / sizeof *sql; i++)
        ck_assert_msg(sqlite3_exec(h, sql[i], NULL, NULL, NULL) == SQLITE_OK, "%s", sql[i]);
    sqlite3_close(h);
    char *t = report(PB_REPORT_ACCURACY, PB_FORMAT_MD, 0);
    ck_assert_msg(strstr(t, "62.00 \u00b1 2.83 (n = 3, 1 diverged)") != NULL, "%s", t);
    ck_assert_msg(strstr(t, "diverged (n = 1, 1 diverged)") != NULL, "%s", t);
    free(t);
    t = report(PB_REPORT_ACCURACY, PB_FORMAT_CSV, 0);
    ck_assert_msg(strstr(t, "sgdm,mlp,fashion-mnist,4,gpipe,62,2.828427125,2,3,1,0,0,accuracy,%\n") != NULL,
                  "%s", t);
    ck_assert_msg(strstr(t, "adam,mlp,fashion-mnist,2,pipedream,,,0,1,1,0,0,accuracy,%\n") != NULL, "%s", t);
    free(t);
}
END_TEST

/* A translation model's runs whose BLEU was scored two ways (the reference's detokenised
 * way, or BPE-merged ids) never share a cell: the scoring is part of the configuration's
 * identity, and each gets a row labelled with it. */
START_TEST(bleu_scoring_apart)
{
    sqlite3 *h;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    static const char *const scoring[] = {"detok-raw", "bpe-merged", "detok-raw"};
    static const double bleu[] = {20.0, 24.0, 22.0};
    for (int i = 0; i < 3; i++) {
        char sql[1024];
        snprintf(sql, sizeof sql, "INSERT INTO runs (created, status, config, model, dataset, "
                 "schedule, optimizer, stages, executor, bleu_scoring) VALUES "
                 "('2025-01-01T00:00:00Z', 'done', '{\"model\":\"gnmt8\",\"seed\":%d}', "
                 "'gnmt8', 'wmt16-de-en', 'gpipe', 'adam', 4, 'seq', '%s'); INSERT INTO epochs "
                 "(run_id, epoch, val_acc, val_bleu, samples, wall_s) VALUES "
                 "(last_insert_rowid(), 0, 0.1, %g, 100, 10)", i + 1, scoring[i], bleu[i]);
        ck_assert_msg(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sql);
    }
    sqlite3_close(h);
    char *t = report(PB_REPORT_ACCURACY, PB_FORMAT_MD, 0);
    ck_assert_msg(strstr(t, "bleu_scoring=detok-raw") && strstr(t, "bleu_scoring=bpe-merged"),
                  "%s", t);
    ck_assert_msg(strstr(t, "21.00 \u00b1 1.41 (n = 2)") && strstr(t, "24.00 (n = 1)"), "%s", t);
    free(t);
    t = report(PB_REPORT_ACCURACY, PB_FORMAT_CSV, 0);
    ck_assert_msg(strstr(t, ",24,,1,1,0,0,0,bleu,BLEU\n") && strstr(t, ",accuracy,%\n"), "%s", t);
    free(t);
}
END_TEST

static void expect_usage(const char *args, const char *msg);

/* Runs that look alike but differ in a setting get a row each, labelled with it; the
 * selection options pick runs by experiment, configuration key and id. */
START_TEST(identity_and_selection)
{
    sqlite3 *h;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    static const char *const cfg[] = {
        "{\"model\":\"mlp\",\"schedule\":\"gpipe\",\"lr\":0.1,\"epochs\":2,\"seed\":1,"
        "\"executor\":\"seq\",\"experiment\":\"e1\"}",
        "{\"model\":\"mlp\",\"schedule\":\"gpipe\",\"lr\":0.1,\"epochs\":2,\"seed\":2,"
        "\"executor\":\"threads\",\"experiment\":\"e1\"}",
        "{\"model\":\"mlp\",\"schedule\":\"pipedream\",\"lr\":0.01,\"epochs\":2,\"seed\":1,"
        "\"executor\":\"seq\",\"experiment\":\"e2\"}",
    };
    static const double acc[] = {0.30, 0.40, 0.80};
    for (int i = 0; i < 3; i++) {
        char sql[1024];
        snprintf(sql, sizeof sql, "INSERT INTO runs (created, status, config, model, dataset, "
                 "schedule, optimizer, stages, executor) VALUES ('2025-01-01T00:00:00Z', 'done', "
                 "'%s', 'mlp', 'cifar10', '%s', 'sgdm', 2, 'seq'); INSERT INTO epochs (run_id, "
                 "epoch, val_acc, samples, wall_s) VALUES (last_insert_rowid(), 0, %g, 100, 10)",
                 cfg[i], i < 2 ? "gpipe" : "pipedream", acc[i]);
        ck_assert_msg(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sql);
    }
    sqlite3_close(h);
    char *t = report(PB_REPORT_ACCURACY, PB_FORMAT_MD, 0);
    /* the two seeds of lr 0.1 (timed differently) share a cell; lr 0.01 has its own row */
    ck_assert_msg(strstr(t, "| setting ") != NULL, "%s", t);
    ck_assert_msg(strstr(t, "| lr=0.1  |") && strstr(t, "| lr=0.01 |"), "%s", t);
    ck_assert_msg(strstr(t, "35.00 \u00b1 7.07 (n = 2)") != NULL, "%s", t);
    free(t);
    char out[8192], err[4096], args[700];
    snprintf(args, sizeof args, "report --db '%s' --table accuracy --format csv --where lr=0.01",
             db);
    ck_assert_int_eq(fx_cli(NULL, args, out, sizeof out, err, sizeof err), 0);
    ck_assert_str_eq(out, "optimizer,model,dataset,D,schedule,mean,std,n,runs,diverged,best,"
                          "shared_timing,metric,unit\nsgdm,mlp,cifar10,2,pipedream,80,,1,1,0,0,0,"
                          "accuracy,%\n");
    snprintf(args, sizeof args, "report --db '%s' --table accuracy --format csv --experiment e1 "
             "--runs 1,8", db);
    ck_assert_int_eq(fx_cli(NULL, args, out, sizeof out, err, sizeof err), 0);
    ck_assert_msg(strstr(out, "sgdm,mlp,fashion-mnist,4,gpipe,") == NULL, "%s", out);
    ck_assert_msg(strstr(out, "sgdm,mlp,cifar10,2,gpipe,30,,1,1,") != NULL, "%s", out);
    /* runs lists the same selection, as JSON on request, with seed and experiment */
    snprintf(args, sizeof args, "runs --db '%s' --json --experiment e1", db);
    ck_assert_int_eq(fx_cli(NULL, args, out, sizeof out, err, sizeof err), 0);
    cJSON *arr = cJSON_Parse(out);
    ck_assert_msg(cJSON_IsArray(arr) && cJSON_GetArraySize(arr) == 2, "%s", out);
    cJSON *first = cJSON_GetArrayItem(arr, 0);
    ck_assert_str_eq(cJSON_GetObjectItem(first, "experiment")->valuestring, "e1");
    ck_assert_double_eq(cJSON_GetObjectItem(first, "seed")->valuedouble, 1);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(first, "best_acc")->valuedouble, 0.30, 1e-12);
    cJSON_Delete(arr);
    snprintf(args, sizeof args, "runs --db '%s' --where lr=0.01", db);
    ck_assert_int_eq(fx_cli(NULL, args, out, sizeof out, err, sizeof err), 0);
    ck_assert_msg(strstr(out, "pipedream") && !strstr(out, "gpipe"), "%s", out);
    snprintf(args, sizeof args, "report --db '%s' --table accuracy --where colour=red", db);
    expect_usage(args, "no run of");
    snprintf(args, sizeof args, "report --db '%s' --table accuracy --where lr", db);
    expect_usage(args, "KEY=VALUE");
    snprintf(args, sizeof args, "report --db '%s' --table accuracy --where lr=0.5", db);
    expect_usage(args, "matches the selection");
    snprintf(args, sizeof args, "report --db '%s' --table accuracy --runs 1,x", db);
    expect_usage(args, "--runs wants run ids");
}
END_TEST

START_TEST(latex_marks_best)
{
    char *t = report(PB_REPORT_ACCURACY, PB_FORMAT_LATEX, 0);
    ck_assert_msg(strstr(t, "sgdm & mlp & fashion-mnist & 4 & 62.00 $\\pm$ 2.83$^{\\mathrm{b}}$ & "
                            "66.00$^{\\mathrm{a}}$ & -- & 65.00$^{\\mathrm{a}}$ "
                            "\\\\\n") != NULL, "%s", t);
    ck_assert_msg(strstr(t, "$^{\\mathrm{a}}$\\,n = 1.\\quad\n$^{\\mathrm{b}}$\\,n = 2.\\par}\n")
                  != NULL, "%s", t);
    ck_assert_msg(strstr(t, "\\begin{tabular}{llllrrrr}\n\\toprule\n") != NULL, "%s", t);
    ck_assert_msg(strstr(t, "accuracy (\\%)") != NULL, "%s", t);
    free(t);
}
END_TEST

/* Student's t in closed form for 2 and 4 degrees of freedom: the 0.975 quantile for 2,
 * (2p − 1) / √(2p(1 − p)); the two-sided p-value of t for 4, 2(1 − F(t)) with F(t) = 1/2 +
 * (3/8)·x·(1 − x²/12·4/4), x = t / √(1 + t²/4) (so x² = t² / (1 + t²/4)). */
static double t2_quantile(double p)
{
    return (2 * p - 1) / sqrt(2 * p * (1 - p));
}

static double t4_two_sided(double t)
{
    double x = t / sqrt(1 + t * t / 4);
    return 2 * (0.5 - 0.375 * x * (1 - x * x / 12));
}

START_TEST(stats_hand_worked)
{
    /* n = 3 and 3, sd 1 and 1: Welch's df = 4, t = gap / √(2/3) */
    ck_assert_double_eq_tol(pb_stats_welch_p(72, 1, 3, 70, 1, 3), t4_two_sided(2 / sqrt(2.0 / 3)),
                            1e-9);
    ck_assert_double_eq_tol(pb_stats_welch_p(61, 1, 3, 71, 1, 3),
                            t4_two_sided(10 / sqrt(2.0 / 3)), 1e-9);
    ck_assert_double_eq_tol(pb_stats_ci_half(1, 3, 0.95), t2_quantile(0.975) / sqrt(3), 1e-9);
    ck_assert_double_eq_tol(pb_stats_ci_half(2, 3, 0.90), 2 * t2_quantile(0.95) / sqrt(3), 1e-9);
    ck_assert(isnan(pb_stats_ci_half(1, 1, 0.95)) && isnan(pb_stats_welch_p(1, 1, 1, 2, 1, 3)));
    ck_assert(pb_stats_welch_p(5, 0, 3, 5, 0, 4) == 1 && pb_stats_welch_p(5, 0, 3, 6, 0, 3) == 0);
}
END_TEST

/* Three seeds a cell (accuracies in %), one epoch each; config: the runs' configuration
 * JSON (NULL: none). */
static void add_seeds_cfg(const char *optimizer, const char *schedule, int stages,
                          const double *acc, const char *config)
{
    struct pb_results *r;
    struct pb_err e;
    ck_assert_msg(pb_results_open(&r, db, &e) == 0, "%s", e.msg);
    for (int s = 0; s < 3; s++) {
        struct pb_run_info info = {
            .model = "mlp", .dataset = "fashion-mnist", .schedule = schedule,
            .optimizer = optimizer, .executor = "seq", .stages = stages,
            .microbatch_size = 64, .microbatches = stages, .epochs = 1,
            .seed = (uint64_t)s + 1, .lr = 0.01, .config_json = config,
        };
        int64_t id = pb_results_run_begin(r, &info, &e);
        ck_assert_msg(id > 0, "%s", e.msg);
        struct pb_stage_record st[4] = {{0}};
        struct pb_epoch_record rec = {.epoch = 0, .val_acc = acc[s] / 100, .samples = 1000,
                                      .wall_s = 10, .throughput = 100, .lr = 0.01,
                                      .nstages = stages, .stages = st};
        ck_assert_msg(pb_results_epoch(r, id, &rec, &e) == 0, "%s", e.msg);
        ck_assert_msg(pb_results_run_end(r, id, PB_RUN_DONE, NULL, &e) == 0, "%s", e.msg);
    }
    pb_results_close(r);
}

static void add_seeds(const char *optimizer, const char *schedule, int stages, const double *acc)
{
    add_seeds_cfg(optimizer, schedule, stages, acc, NULL);
}

/* AdamW with a weight decay of 0 is Adam: its row says so; with a decay it is AdamW. */
START_TEST(adamw_without_decay_flagged)
{
    add_seeds_cfg("adamw", "gpipe", 4, (const double[]){70, 71, 72},
                  "{\"optimizer\":\"adamw\",\"weight_decay\":0}");
    add_seeds_cfg("adamw", "gpipe", 2, (const double[]){70, 71, 72},
                  "{\"optimizer\":\"adamw\",\"weight_decay\":0.01}");
    char *t = report(PB_REPORT_ACCURACY, PB_FORMAT_CSV, 0);
    ck_assert_msg(strstr(t, "\nadamw (decay 0: Adam),mlp,fashion-mnist,4,gpipe,71,"), "%s", t);
    ck_assert_msg(strstr(t, "\nadamw,mlp,fashion-mnist,2,gpipe,71,"), "%s", t);
    free(t);
}
END_TEST

/* Two rows of three seeds a cell: rmsprop at D = 4, gpipe 70, 71, 72 against pipedream 60,
 * 61, 62 (Welch p = 0.00025: gpipe marked); rmsprop at D = 2, gpipe 71, 72, 73 against
 * pipedream 69, 70, 71 (p = 0.0705: a lead of twice the std, marked by the old spread rule,
 * not at the 5% level; marked at --ci 90's 10%). --ci 95 shows 71.00 ± 2.48, the half-width
 * t(0.975, 2)·1/√3 = 2.4841, and csv its bounds. */
START_TEST(best_needs_welch)
{
    add_seeds("rmsprop", "gpipe", 4, (const double[]){70, 71, 72});
    add_seeds("rmsprop", "pipedream", 4, (const double[]){60, 61, 62});
    add_seeds("rmsprop", "gpipe", 2, (const double[]){71, 72, 73});
    add_seeds("rmsprop", "pipedream", 2, (const double[]){69, 70, 71});
    char *t = report(PB_REPORT_ACCURACY, PB_FORMAT_MD, 0);
    ck_assert_msg(strstr(t, "| 4 | **71.00 \u00b1 1.00** (n = 3) | 61.00 \u00b1 1.00 (n = 3) |"),
                  "%s", t);
    ck_assert_msg(strstr(t, "| 2 |     72.00 \u00b1 1.00 (n = 3) | 70.00 \u00b1 1.00 (n = 3) |"),
                  "%s", t);
    free(t);
    t = report(PB_REPORT_ACCURACY, PB_FORMAT_LATEX, 0);
    ck_assert_msg(strstr(t, "& 4 & \\textbf{71.00 $\\pm$ 1.00}"), "%s", t);
    ck_assert_msg(strstr(t, "& 2 & 72.00 $\\pm$ 1.00"), "%s", t);
    free(t);
    struct pb_report_opts o = {.table = PB_REPORT_ACCURACY, .format = PB_FORMAT_MD, .ci = 0.90};
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    struct pb_err e;
    ck_assert_msg(pb_report_write(db, &o, out, &e) == 0, "%s", e.msg);
    fclose(out);
    /* t(0.95, 2)·1/√3 = 1.6859 */
    ck_assert_msg(strstr(buf, "| 2 | **72.00 \u00b1 1.69** (n = 3) |") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "90% confidence interval") && strstr(buf, "at the 10% level"),
                  "%s", buf);
    free(buf);
    o.ci = 0.95;
    o.format = PB_FORMAT_CSV;
    buf = NULL;
    out = open_memstream(&buf, &len);
    ck_assert_msg(pb_report_write(db, &o, out, &e) == 0, "%s", e.msg);
    fclose(out);
    ck_assert_msg(strstr(buf, "best,shared_timing,ci_low,ci_high,metric,unit\n") != NULL, "%s",
                  buf);
    ck_assert_msg(strstr(buf, "rmsprop,mlp,fashion-mnist,4,gpipe,71,1,3,3,0,1,0,68.51586"),
                  "%s", buf);
    ck_assert_msg(strstr(buf, "rmsprop,mlp,fashion-mnist,2,gpipe,72,1,3,3,0,0,0,69.51586"),
                  "%s", buf);
    free(buf);
}
END_TEST

/* The load average the runs began under: a timing table's caption gives its range, and
 * `show` gives a run's with its cores and whether its timings shared them. */
START_TEST(load_average_shown)
{
    sqlite3 *h;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    ck_assert(sqlite3_exec(h, "UPDATE runs SET load_avg = 0.5 + (id % 3) * 0.75, cores = 2, "
                              "threads_per_stage = 1", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    char *t = report(PB_REPORT_THROUGHPUT, PB_FORMAT_MD, 0);
    ck_assert_msg(strstr(t, "Load average (1 min) when the runs began: 0.50\u20132.00."), "%s", t);
    free(t);
    t = report(PB_REPORT_BUBBLE, PB_FORMAT_MD, 0);
    ck_assert_msg(strstr(t, "Load average (1 min) when the runs began: 0.50\u20132.00."), "%s", t);
    free(t);
    char out[8192], args[600];
    snprintf(args, sizeof args, "show 2 --db '%s'", db);
    ck_assert_int_eq(fx_cli(NULL, args, out, sizeof out, NULL, 0), 0);
    ck_assert_msg(strstr(out, "load average (1 min, at start)  2.00") &&
                  strstr(out, "timings on shared cores         yes: the seq executor"), "%s",
                  out);
}
END_TEST

/* The failed run (90%, 9000 samples/s) appears in no table. */
START_TEST(failed_run_ignored)
{
    for (int tb = 0; tb < PB_REPORT_NTABLES; tb++)
        for (int f = 0; f < PB_FORMAT_N; f++) {
            char *t = report((enum pb_report_table)tb, (enum pb_report_format)f, 0);
            ck_assert_msg(!strstr(t, "90.00") && !strstr(t, "9000"), "%s", t);
            ck_assert_msg(!strstr(t, "sgdm,mlp,fashion-mnist,4,pipeoptim,") &&
                          !strstr(t, "| 4 | pipeoptim        |"), "%s", t);
            free(t);
        }
}
END_TEST

static void expect_usage(const char *args, const char *msg)
{
    char out[4096], err[4096];
    ck_assert_int_eq(fx_cli(NULL, args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, msg) != NULL, "%s: stderr \"%s\" lacks \"%s\"", args, err, msg);
    ck_assert_str_eq(out, "");
}

START_TEST(bad_input)
{
    char args[700];
    const char *empty = fx_build_empty_db(dir);
    snprintf(args, sizeof args, "report --db '%s' --table accuracy", empty);
    expect_usage(args, "holds no finished run");
    snprintf(args, sizeof args, "report --db '%s' --table nope", db);
    expect_usage(args, "unknown table 'nope'; valid: accuracy throughput bubble sim-throughput "
                 "sim-bubble memory staleness");
    snprintf(args, sizeof args, "report --db '%s' --table memory --format html", db);
    expect_usage(args, "unknown format 'html'; valid: md csv latex");
    snprintf(args, sizeof args, "report --db '%s'", db);
    expect_usage(args, "needs --table");
    snprintf(args, sizeof args, "report --db '%s' --table memory --target 0.5", db);
    expect_usage(args, "--target applies to --table accuracy only");
    snprintf(args, sizeof args, "report --db '%s' --table accuracy --target 0", db);
    expect_usage(args, "a fraction in (0, 1]");
    snprintf(args, sizeof args, "report --db '%s' --table accuracy --target abc", db);
    expect_usage(args, "--target expects a number");
    snprintf(args, sizeof args, "report --db '%s/missing.db' --table accuracy", dir);
    expect_usage(args, "no results database");
    expect_usage("report --table accuracy --bogus", "unexpected argument '--bogus'");
    struct pb_report_opts o = {.table = PB_REPORT_ACCURACY, .format = PB_FORMAT_MD};
    struct pb_err e;
    ck_assert_int_eq(pb_report_write(empty, &o, stdout, &e), -1);
    ck_assert_msg(strstr(e.msg, "pipebench run --db") != NULL, "%s", e.msg);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("report");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, views);
    tcase_add_test(tc, persistent_views);
    tcase_add_test(tc, accuracy_md_exact);
    tcase_add_test(tc, accuracy_csv_exact);
    tcase_add_test(tc, diverged_counted);
    tcase_add_test(tc, identity_and_selection);
    tcase_add_test(tc, bleu_scoring_apart);
    tcase_add_test(tc, accuracy_target);
    tcase_add_test(tc, throughput_csv_exact);
    tcase_add_test(tc, memory_csv_exact);
    tcase_add_test(tc, staleness_md_csv_exact);
    tcase_add_test(tc, latex_marks_best);
    tcase_add_test(tc, stats_hand_worked);
    tcase_add_test(tc, best_needs_welch);
    tcase_add_test(tc, adamw_without_decay_flagged);
    tcase_add_test(tc, load_average_shown);
    tcase_add_test(tc, failed_run_ignored);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return s;
}
