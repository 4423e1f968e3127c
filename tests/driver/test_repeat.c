/* tests/driver/test_repeat.c — --repeat N (semantics §6.4): a run repeated records N runs of equal
 * losses with repeat 0 .. N - 1; a repeat whose losses differ fails; compare resumes by
 * repeat (a larger --repeat adds only the missing ones); report and its views count a
 * seed's repeats once and take throughput and bubble as the median over them, their
 * range the spread (a made-up database with known numbers, checked exactly); sweep files
 * expand repeats; a version 4 database is upgraded to the repeat column. */
#include "tests/support/cli_util.h"

#include <math.h>

#include "plots/report.h"
#include "plots/report_db.h"
#include "harness/driver/sweep.h"
#include "results/results.h"

static char dir[64], out[1 << 16];

/* The tiny run every case trains: mlp on 256 Fashion-MNIST samples, 2 epochs. */
#define TINY "--model mlp --limit-train 256 --limit-val 64 --microbatch-size 32 --epochs 2 " \
             "--quiet"

/* A run --repeat 3 records three runs, repeats 0, 1 and 2, of the same configuration and
 * seed, every epoch's losses and accuracy the same numbers; runs and show print the
 * repeat. */
START_TEST(run_repeat_three)
{
    cli_scratch(dir, sizeof dir, "repeat");
    int rc = cli_run(dir, out, sizeof out, "run " TINY " --repeat 3 --db r.db");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM runs WHERE status = 'done'"),
                     3);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT group_concat(repeat, '') FROM (SELECT "
                                "repeat FROM runs ORDER BY id)"), 12);   /* "012" */
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(DISTINCT config) FROM runs"), 1);
    /* every epoch of repeats 1 and 2 equals repeat 0's, exactly */
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM epochs a JOIN epochs b ON "
                                "b.run_id = 1 AND b.epoch = a.epoch WHERE a.run_id > 1 AND "
                                "a.train_loss = b.train_loss AND a.val_loss = b.val_loss AND "
                                "a.val_acc = b.val_acc"), 4);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM epochs"), 6);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "runs --db r.db"), 0);
    ck_assert_msg(strstr(out, " repeat ") != NULL, "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "runs --db r.db --json"), 0);
    ck_assert_msg(strstr(out, "\"repeat\":\t2") != NULL, "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "show 3 --db r.db"), 0);
    ck_assert_msg(strstr(out, "  repeat              2\n") != NULL, "%s", out);
    cli_cleanup(dir);
}
END_TEST

#define COMPARE "compare --schedules gpipe --optimizers sgdm " TINY " --db c.db --out figs"

/* compare --repeat 1, then --repeat 3: only repeats 1 and 2 run; --repeat 3 again runs
 * nothing. A repeat whose losses differ from the first's (here: repeat 0's training loss
 * changed by hand) fails and says so. */
START_TEST(compare_resume_adds_repeats)
{
    cli_scratch(dir, sizeof dir, "repeat");
    int rc = cli_run(dir, out, sizeof out, COMPARE " --repeat 1");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_int_eq(cli_db_int(dir, "c.db", "SELECT count(*) FROM runs"), 1);
    rc = cli_run(dir, out, sizeof out, COMPARE " --repeat 3");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "compare: 3 runs (1 configuration \u00d7 3 repeats)") &&
                  strstr(out, "compare: 1 of them finished already"), "%s", out);
    ck_assert_msg(strstr(out, "median over its repeats") != NULL, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "c.db", "SELECT count(*) FROM runs"), 3);
    ck_assert_int_eq(cli_db_int(dir, "c.db", "SELECT group_concat(repeat, '') FROM (SELECT "
                                "repeat FROM runs WHERE status = 'done' ORDER BY id)"), 12);
    rc = cli_run(dir, out, sizeof out, COMPARE " --repeat 3");
    ck_assert_msg(rc == 0 && strstr(out, "3 of them finished already"), "exit %d: %s", rc, out);
    ck_assert_int_eq(cli_db_int(dir, "c.db", "SELECT count(*) FROM runs"), 3);
    /* the table has one row for the configuration, not one per repeat */
    const char *speed = strstr(out, "Convergence and speed");
    const char *memory = strstr(out, "Peak memory by kind");
    const char *row = speed ? strstr(speed, "  gpipe     sgdm ") : NULL;
    ck_assert_msg(row && memory && row < memory, "%s", out);
    const char *again = strstr(row + 1, "  gpipe     sgdm ");
    ck_assert_msg(again && again > memory, "one row per configuration: %s", out);
    char path[128];
    snprintf(path, sizeof path, "%s/c.db", dir);
    sqlite3 *h;
    ck_assert(sqlite3_open(path, &h) == SQLITE_OK);
    ck_assert(sqlite3_exec(h, "UPDATE epochs SET train_loss = train_loss * (1 + 1e-15) WHERE "
                           "run_id = 1 AND epoch = 1", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    rc = cli_run(dir, out, sizeof out, COMPARE " --repeat 4");
    ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "repeat 3 is not the same training as repeat 0 (run 1): epoch 2's "
                              "losses or accuracy differ"), "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "c.db", "SELECT count(*) FROM runs WHERE repeat = 3 AND "
                                "status = 'failed'"), 1);
    cli_cleanup(dir);
}
END_TEST

/* The made-up database: per run its schedule, seed, repeat, steady epoch's throughput
 * (the first epoch, the warm-up, runs 500 samples/s) and bubble fraction on every stage;
 * a seed's repeats have the same accuracies. */
struct fx {
    const char *schedule;
    int seed, repeat;
    double thr, bubble, acc[2];
};
static const struct fx fxs[] = {
    {"gpipe", 1, 0, 1000, 0.10, {0.50, 0.60}},
    {"gpipe", 1, 1, 1300, 0.30, {0.50, 0.60}},
    {"gpipe", 1, 2, 1100, 0.20, {0.50, 0.60}},
    {"gpipe", 2, 0, 1200, 0.25, {0.55, 0.64}},
    {"pipedream", 1, 0, 1500, 0.05, {0.59, 0.66}},
    {"pipedream", 1, 1, 1400, 0.05, {0.59, 0.66}},
    {"pipedream", 1, 2, 1700, 0.06, {0.59, 0.66}},
    {"pipeoptim", 1, 0, 800, 0.40, {0.61, 0.65}},
    {"pipeoptim", 1, 1, 1000, 0.50, {0.61, 0.65}},
};
#define NFX (int)(sizeof fxs / sizeof *fxs)

static const char *build_fixture(void)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/fx.db", dir);
    struct pb_results *db;
    struct pb_err e;
    ck_assert_msg(pb_results_open(&db, path, &e) == 0, "%s", e.msg);
    for (int i = 0; i < NFX; i++) {
        const struct fx *f = &fxs[i];
        char json[256];
        snprintf(json, sizeof json, "{\"model\":\"mlp\",\"schedule\":\"%s\",\"seed\":%d,"
                 "\"executor\":\"threads\",\"threads\":0,\"lr\":0.01}", f->schedule, f->seed);
        struct pb_run_info info = {
            .config_json = json, .model = "mlp", .dataset = "fashion-mnist",
            .schedule = f->schedule, .optimizer = "sgdm", .executor = "threads", .stages = 2,
            .microbatch_size = 64, .microbatches = 2, .epochs = 2, .seed = (uint64_t)f->seed,
            .lr = 0.01, .repeat = f->repeat,
        };
        int64_t id = pb_results_run_begin(db, &info, &e);
        ck_assert_msg(id == i + 1, "%s", id < 0 ? e.msg : "unexpected id");
        for (int ep = 0; ep < 2; ep++) {
            double thr = ep ? f->thr : 500;
            struct pb_stage_record st[2] = {{.bubble_frac = f->bubble}, {.bubble_frac = f->bubble}};
            for (int k = 0; k < 2; k++)
                for (int m = 0; m < PB_MEM_NKINDS; m++)
                    st[k].mem_peak[m] = -1;
            struct pb_epoch_record rec = {
                .epoch = ep, .train_loss = 1, .val_loss = 1, .val_acc = f->acc[ep],
                .samples = 10 * (int64_t)thr, .wall_s = 10, .throughput = thr, .lr = 0.01,
                .sim_wall_s = NAN, .sim_throughput = NAN, .nstages = 2, .stages = st,
            };
            ck_assert_msg(pb_results_epoch(db, id, &rec, &e) == 0, "%s", e.msg);
        }
        ck_assert_msg(pb_results_run_end(db, id, PB_RUN_DONE, NULL, &e) == 0, "%s", e.msg);
    }
    pb_results_close(db);
    return path;
}

static char *report(const char *db, enum pb_report_table t, enum pb_report_format f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(o);
    struct pb_report_opts opts = {.table = t, .format = f};
    struct pb_err e;
    ck_assert_msg(pb_report_write(db, &opts, o, &e) == 0, "%s", e.msg);
    fclose(o);
    return buf;
}

/* The body rows of a CSV table (its caption-free text after the header line). */
static const char *body(const char *csv)
{
    const char *nl = strchr(csv, '\n');
    ck_assert_ptr_nonnull(nl);
    return nl + 1;
}

/* gpipe: seed 1's repeats ran 1000, 1300, 1100 samples/s (median 1100, range 1000–1300),
 * seed 2 once at 1200 (its range: its one steady epoch): mean 1150 ± 70.71 over n = 2
 * seeds, not 4 runs. pipedream: 1500, 1400, 1700: median 1500 over 3 repeats, range
 * 1400–1700; pipeoptim: 800, 1000: median 900. Bubble the same way (%). Accuracy: n
 * counts seeds. pipedream leads gpipe by 350 samples/s, past both spreads (half the
 * range, 150), but a cell of one seed is below PB_STATS_MIN_N: none is marked. */
START_TEST(report_median_over_repeats)
{
    cli_scratch(dir, sizeof dir, "repeat");
    const char *db = build_fixture();
    char *t = report(db, PB_REPORT_THROUGHPUT, PB_FORMAT_CSV);
    ck_assert_str_eq(t, "optimizer,model,dataset,D,schedule,mean,std,n,runs,diverged,best,"
                        "shared_timing,spread_min,spread_max,spread_over,repeats,"
                        "warmup_included,metric,unit\n"
                        "sgdm,mlp,fashion-mnist,2,gpipe,1150,70.71067812,2,2,0,0,0,1000,1300,"
                        "epochs/repeats,1,0,throughput,samples/s\n"
                        "sgdm,mlp,fashion-mnist,2,pipedream,1500,,1,1,0,0,0,1400,1700,repeats,3,"
                        "0,throughput,samples/s\n"
                        "sgdm,mlp,fashion-mnist,2,pipeoptim,900,,1,1,0,0,0,800,1000,repeats,2,"
                        "0,throughput,samples/s\n");
    free(t);
    t = report(db, PB_REPORT_THROUGHPUT, PB_FORMAT_MD);
    ck_assert_msg(strstr(t, "| 1500.0 (n = 1; 3 repeats 1400.0\u20131700.0)") &&
                  strstr(t, "1150.0 \u00b1 70.7 (n = 2; epochs/repeats 1000.0\u20131300.0)") &&
                  strstr(t, "900.0 (n = 1; 2 repeats 800.0\u20131000.0)"), "%s", t);
    free(t);
    t = report(db, PB_REPORT_BUBBLE, PB_FORMAT_CSV);
    ck_assert_str_eq(body(t), "sgdm,mlp,fashion-mnist,2,gpipe,22.5,3.535533906,2,2,0,0,0,10,30,"
                              "repeats,1,bubble,%\n"
                              "sgdm,mlp,fashion-mnist,2,pipedream,5,,1,1,0,0,0,5,6,repeats,3,"
                              "bubble,%\n"
                              "sgdm,mlp,fashion-mnist,2,pipeoptim,45,,1,1,0,0,0,40,50,repeats,2,"
                              "bubble,%\n");
    ck_assert_msg(strstr(t, "spread_min,spread_max,spread_over,repeats,metric,unit\n") != NULL,
                  "%s", t);
    free(t);
    t = report(db, PB_REPORT_ACCURACY, PB_FORMAT_CSV);
    ck_assert_str_eq(body(t), "sgdm,mlp,fashion-mnist,2,gpipe,62,2.828427125,2,2,0,0,0,accuracy,"
                              "%\n"
                              "sgdm,mlp,fashion-mnist,2,pipedream,66,,1,1,0,0,0,accuracy,%\n"
                              "sgdm,mlp,fashion-mnist,2,pipeoptim,65,,1,1,0,0,0,accuracy,%\n");
    free(t);
    /* the views: a seed group's first run and size, its median and range */
    struct pb_results *r;
    struct pb_err e;
    ck_assert_msg(pb_report_open(&r, db, &e) == 0, "%s", e.msg);
    sqlite3_stmt *s;
    ck_assert(sqlite3_prepare_v2(pb_results_sqlite(r), "SELECT group_concat(run_id || ':' || "
                                 "seed_run || ':' || repeats, ' ') FROM (SELECT * FROM seed_runs "
                                 "ORDER BY run_id)", -1, &s, NULL) == SQLITE_OK);
    ck_assert(sqlite3_step(s) == SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(s, 0),
                     "1:1:3 2:1:3 3:1:3 4:4:1 5:5:3 6:5:3 7:5:3 8:8:2 9:8:2");
    sqlite3_finalize(s);
    ck_assert(sqlite3_prepare_v2(pb_results_sqlite(r), "SELECT printf('%g %g %g %d %g %g %g', "
                                 "throughput, throughput_lo, throughput_hi, throughput_repeats, "
                                 "100 * bubble_frac, 100 * bubble_lo, 100 * bubble_hi) FROM "
                                 "seed_timing WHERE seed_run = 8", -1, &s, NULL) == SQLITE_OK);
    ck_assert(sqlite3_step(s) == SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(s, 0), "900 800 1000 2 45 40 50");
    sqlite3_finalize(s);
    pb_results_close(r);
    /* the throughput figure counts seeds as the table does: gpipe 1150 ± 70.71, pipedream
     * 1500 and pipeoptim 900 (one seed each: std 0) */
    int rc = cli_run(dir, out, sizeof out, "plot --figure throughput --db fx.db --run 1 "
                     "--out pl");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    char dat[256];
    snprintf(dat, sizeof dat, "%s/pl/throughput.dat", dir);
    FILE *f = fopen(dat, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    fclose(f);
    ck_assert_msg(strstr(out, "\"D=2\" 1150 70.7107 1500 0 900 0\n") != NULL, "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* A sweep file's repeat expands each configuration into its repeats, repeat 0 of every
 * configuration first; two values of repeat are no two configurations; a bad repeat
 * is refused with its line. */
START_TEST(sweep_repeats)
{
    static const char file[] = "[grid]\nschedule = gpipe, pipedream\n[run]\nrepeat = 2\n"
                               "model = mlp\n";
    struct pb_sweep s;
    struct pb_err e;
    ck_assert_msg(pb_sweep_load_mem(&s, "x.ini", file, strlen(file), "/tmp/x.db", 1, &e) == 0,
                  "%s", s.nerrors ? s.errors[0].msg : e.msg);
    ck_assert_int_eq(s.n, 4);
    ck_assert_int_eq(s.nconfigs, 2);
    static const char *const sched[] = {"gpipe", "pipedream", "gpipe", "pipedream"};
    for (int i = 0; i < 4; i++) {
        ck_assert_str_eq(s.items[i].cfg.schedule, sched[i]);
        ck_assert_int_eq(s.items[i].cfg.repeat, i / 2);
        ck_assert_int_eq(s.items[i].cfg.repeats, 2);
    }
    ck_assert_msg(strstr(s.items[3].label, "repeat=1") != NULL, "%s", s.items[3].label);
    pb_sweep_finish(&s);
    static const char two[] = "[grid]\nrepeat = 1, 2\n[run]\nmodel = mlp\n";
    ck_assert_int_eq(pb_sweep_load_mem(&s, "x.ini", two, strlen(two), "/tmp/x.db", 1, &e), -1);
    ck_assert_int_ge(s.nerrors, 1);
    ck_assert_msg(strstr(s.errors[0].msg, "differ only in repeat") != NULL, "%s",
                  s.errors[0].msg);
    pb_sweep_finish(&s);
    static const char bad[] = "[grid]\nschedule = gpipe\n[run]\nrepeat = 0\n";
    ck_assert_int_eq(pb_sweep_load_mem(&s, "x.ini", bad, strlen(bad), "/tmp/x.db", 1, &e), -1);
    ck_assert_int_ge(s.nerrors, 1);
    ck_assert_int_eq(s.errors[0].line, 4);
    ck_assert_msg(strstr(s.errors[0].msg, "--repeat counts trainings") != NULL, "%s",
                  s.errors[0].msg);
    pb_sweep_finish(&s);
}
END_TEST

/* A database of schema version 4 (runs without the repeat column) is upgraded in place
 * by a run; its runs become repeat 0. */
START_TEST(schema_v4_upgrade)
{
    cli_scratch(dir, sizeof dir, "repeat");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run " TINY " --db r.db"), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/r.db", dir);
    sqlite3 *h;
    ck_assert(sqlite3_open(path, &h) == SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert(sqlite3_prepare_v2(h, "SELECT group_concat(name, ', ') FROM pragma_table_info("
                                 "'runs') WHERE name NOT IN ('id', 'repeat', 'bleu_scoring')",
                                 -1, &st, NULL) == SQLITE_OK);
    ck_assert(sqlite3_step(st) == SQLITE_ROW);
    char cols[2048], sql[8192];
    snprintf(cols, sizeof cols, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    /* the table rebuilt with version 4's columns (the last column cannot be dropped:
     * the schema's comment follows it) */
    snprintf(sql, sizeof sql, CLI_DROP_VIEWS "PRAGMA foreign_keys = OFF; CREATE TABLE runs4 (id INTEGER "
             "PRIMARY KEY, %s); INSERT INTO runs4 SELECT id, %s FROM runs; DROP TABLE runs; "
             "ALTER TABLE runs4 RENAME TO runs; ALTER TABLE epochs DROP COLUMN val_bleu; "
             "UPDATE schema_version SET version = 4", cols,
             cols);
    ck_assert_msg(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_close(h);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "runs --db r.db"), 2);
    ck_assert_msg(strstr(out, "schema version 4") && strstr(out, "upgrades it in place"), "%s",
                  out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run " TINY " --db r.db --repeat 2"), 0);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT max(version) FROM schema_version"),
                     PB_RESULTS_SCHEMA_VERSION);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT group_concat(repeat, '') FROM (SELECT "
                                "repeat FROM runs ORDER BY id)"), 1);   /* "001" */
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM runs WHERE status = 'done'"),
                     3);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("repeat");
    TCase *tc = tcase_create("repeat");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, compare_resume_adds_repeats);
    suite_add_tcase(s, tc);
    tc = tcase_create("repeat_fast");
    tcase_set_tags(tc, "fast");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, run_repeat_three);
    tcase_add_test(tc, report_median_over_repeats);
    tcase_add_test(tc, sweep_repeats);
    tcase_add_test(tc, schema_v4_upgrade);
    suite_add_tcase(s, tc);
    return s;
}
