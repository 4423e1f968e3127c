/* tests/exec/test_faults.c — runs that survive faults (issue 11), through the built binary.
 * kill -9 at 20 seeded random points of `pipebench run` and 8 of `pipebench sweep`
 * (spread over setup, training, validation, recording, the resume state and the save):
 * after each, `PRAGMA integrity_check` is ok, the first command that opens the database
 * (`pipebench runs`, a reading one) shows the run failed, never running, and `pipebench
 * resume` finishes it with final weights byte-identical to an uninterrupted run's (the
 * sweep's runs: every epoch's losses and accuracy bit for bit). Signals: the first stops
 * a run after its epoch (the notice printed, exit 130), a second during the next epoch
 * stops it now with that epoch lost; resumed, both end with the uninterrupted weights.
 * kill -9 during figure writes and Tiny-ImageNet cache builds (issue 34): the next plot
 * and the next run of that kind leave no hidden temporary file, and what they find is
 * whole (every figure there, the cache mapped and checked). */
#include <errno.h>
#include <glob.h>
#include <sqlite3.h>
#include <stdint.h>
#include <time.h>

#include "tests/support/cli_util.h"
#include "tests/support/proc_util.h"

static char dir[64], out[1 << 16];

/* A tiny mlp run: 4 epochs of 2560 samples, a resume state after every epoch. */
#define RUN_ARGS                                                                          \
    "run --quiet --stages 2 --limit-train 2560 --limit-val 320 --microbatch-size 32 "     \
    "--epochs 4 --checkpoint-every 1"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* xorshift64*: the trials' kill points, the same on every machine. */
static double uniform(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* The first column of sql's first row on dir/db as text ("" when none). */
static const char *db_text(const char *db, const char *sql)
{
    static char buf[256];
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, db);
    buf[0] = 0;
    sqlite3 *h;
    ck_assert(sqlite3_open(path, &h) == SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(h));
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, sizeof buf, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
    return buf;
}

static void integrity_ok(const char *db)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, db);
    if (access(path, F_OK) == 0)
        ck_assert_str_eq(db_text(db, "PRAGMA integrity_check"), "ok");
}

/* The status `pipebench runs` prints for run id ("" when it lists no such run). */
static const char *listed_status(const char *log, long long id)
{
    static char status[32];
    status[0] = 0;
    for (const char *l = log; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        long long got;
        char st[32];
        if (sscanf(l, "%lld %31s", &got, st) == 2 && got == id) {
            snprintf(status, sizeof status, "%s", st);
            break;
        }
    }
    return status;
}

static bool same_file(const char *a, const char *b)
{
    char pa[256], pb[256];
    snprintf(pa, sizeof pa, "%s/%s", dir, a);
    snprintf(pb, sizeof pb, "%s/%s", dir, b);
    FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
    bool same = fa && fb;
    while (same) {
        int x = fgetc(fa), y = fgetc(fb);
        same = x == y;
        if (x == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* Where a kill landed, from what it left: no row (setup), the epochs recorded, whether
 * the resume state of the last one was written, the end. */
static void describe(const char *db, long long id, char *buf, size_t cap)
{
    if (id == 0) {
        snprintf(buf, cap, "setup (no run row)");
        return;
    }
    char sql[160], state[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM epochs WHERE run_id = %lld", id);
    int epochs = atoi(db_text(db, sql));
    snprintf(state, sizeof state, "%s/%s.run%lld.state", dir, db, id);
    bool has_state = access(state, F_OK) == 0;
    if (epochs == 0)
        snprintf(buf, cap, "epoch 1 (before its record)");
    else if (epochs < 4 && has_state)
        snprintf(buf, cap, "epoch %d (epoch %d recorded, its state written)", epochs + 1, epochs);
    else if (epochs < 4)
        snprintf(buf, cap, "epoch %d recorded, its state not yet written", epochs);
    else if (strcmp(db_text(db, "SELECT status FROM runs ORDER BY id DESC LIMIT 1"), "done"))
        snprintf(buf, cap, "after the last epoch (the save, the end)");
    else
        snprintf(buf, cap, "after the run ended done");
}

START_TEST(kill9_run)
{
    cli_scratch(dir, sizeof dir, "faults");
    ck_assert_msg(cli_run(dir, out, sizeof out, RUN_ARGS " --db ref.db --save ref.safetensors") ==
                  0, "%s", out);
    double t0 = now_s();   /* the span of a second run, its data in the page cache */
    ck_assert_msg(cli_run(dir, out, sizeof out, RUN_ARGS " --db ref.db --save ref2.safetensors") ==
                  0, "%s", out);
    double span = now_s() - t0;
    ck_assert(same_file("ref.safetensors", "ref2.safetensors"));
    uint64_t rng = 20261201;
    long long last = 0;
    int resumed = 0, done_first = 0, before_row = 0;
    for (int t = 0; t < 20; t++) {
        double at = 1.1 * span * uniform(&rng);
        char args[512];
        snprintf(args, sizeof args, RUN_ARGS " --db k.db --save w%d.safetensors", t);
        static struct proc p;
        proc_start(&p, dir, args);
        sleep_s(at);
        proc_signal(&p, SIGKILL);
        int rc = proc_finish(&p);
        ck_assert_msg(rc == 137 || rc == 0, "trial %d: exit %d: %s", t, rc, p.log);
        integrity_ok("k.db");
        /* the first open after the kill, a reading command: the run is failed already */
        int lrc = cli_run(dir, out, sizeof out, "runs --db k.db");
        long long id = lrc == 0 ? atoll(db_text("k.db", "SELECT coalesce(max(id), 0) FROM runs"))
                                : 0;
        if (id == last)
            id = 0;
        char where[128];
        describe("k.db", id, where, sizeof where);
        printf("kill9_run trial %2d: killed at %.3f s of %.3f: %s\n", t, at, span, where);
        if (id == 0) {
            before_row++;
            continue;
        }
        last = id;
        const char *st = listed_status(out, id);
        ck_assert_msg(!strcmp(st, "failed") || !strcmp(st, "done"), "trial %d: run %lld listed "
                      "'%s' right after the kill:\n%s", t, id, st, out);
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT status FROM runs WHERE id = %lld", id);
        ck_assert_str_eq(db_text("k.db", sql), st);
        if (!strcmp(st, "failed")) {
            ck_assert_msg(cli_run(dir, out, sizeof out, "resume %lld --db k.db --quiet", id) == 0,
                          "trial %d: %s", t, out);
            ck_assert_str_eq(db_text("k.db", sql), "done");
            resumed++;
        } else {
            done_first++;
        }
        integrity_ok("k.db");
        snprintf(sql, sizeof sql, "SELECT count(DISTINCT epoch) || '/' || count(*) FROM epochs "
                 "WHERE run_id = %lld", id);
        ck_assert_str_eq(db_text("k.db", sql), "4/4");
        char w[32];
        snprintf(w, sizeof w, "w%d.safetensors", t);
        ck_assert_msg(same_file(w, "ref.safetensors"), "trial %d (%s): the resumed run's weights "
                      "differ from the uninterrupted run's", t, where);
    }
    printf("kill9_run: %d resumed, %d done before the kill, %d killed before the run row\n",
           resumed, done_first, before_row);
    ck_assert_int_eq(cli_db_int(dir, "k.db", "SELECT count(*) FROM runs WHERE status != 'done'"),
                     0);
    ck_assert_msg(resumed >= 10, "only %d of 20 kills landed in a run", resumed);
    /* no half-written state is left behind (resume removes them) */
    char pattern[128];
    snprintf(pattern, sizeof pattern, "%s/.k.db.run*.state.tmp-*", dir);
    glob_t g;
    ck_assert_msg(glob(pattern, 0, NULL, &g) == GLOB_NOMATCH, "left: %s", g.gl_pathv[0]);
    cli_cleanup(dir);
}
END_TEST

/* Two configurations at once, 3 epochs each. */
static const char *const sweep_file =
    "[grid]\n"
    "seed = 1, 2\n"
    "[run]\n"
    "model = mlp\n"
    "stages = 2\n"
    "limit-train = 2560\n"
    "limit-val = 320\n"
    "microbatch-size = 32\n"
    "epochs = 3\n";

/* Epoch rows of a.db's done runs equal, bit for bit, to those of b.db's done run of the
 * same configuration. */
static int identical_epochs(const char *a, const char *b)
{
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM main.runs r1 JOIN main.epochs e1 ON e1.run_id = r1.id "
             "JOIN b.runs r2 ON json_remove(r1.config, '$.threads') = "
             "json_remove(r2.config, '$.threads') "
             "JOIN b.epochs e2 ON e2.run_id = r2.id AND e2.epoch = e1.epoch "
             "WHERE e1.train_loss = e2.train_loss AND e1.val_loss = e2.val_loss "
             "AND e1.val_acc = e2.val_acc AND r1.status = 'done' AND r2.status = 'done'");
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, a);
    sqlite3 *h;
    ck_assert(sqlite3_open(path, &h) == SQLITE_OK);
    char attach[512];
    snprintf(attach, sizeof attach, "ATTACH '%s/%s' AS b", dir, b);
    ck_assert(sqlite3_exec(h, attach, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert(sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK);
    ck_assert(sqlite3_step(st) == SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
}

START_TEST(kill9_sweep)
{
    cli_scratch(dir, sizeof dir, "faults");
    cli_write(dir, "s.ini", sweep_file);
    double t0 = now_s();
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db ref.db --jobs 2") == 0, "%s",
                  out);
    double span = now_s() - t0;
    uint64_t rng = 7;
    int resumed = 0;
    for (int t = 0; t < 8; t++) {
        char db[32];
        snprintf(db, sizeof db, "s%d.db", t);
        double at = 1.1 * span * uniform(&rng);
        char args[128];
        snprintf(args, sizeof args, "sweep s.ini --db %s --jobs 2", db);
        static struct proc p;
        proc_start(&p, dir, args);
        sleep_s(at);
        proc_signal(&p, SIGKILL);   /* the sweep and its runs: one process group */
        int rc = proc_finish(&p);
        ck_assert_msg(rc == 137 || rc == 0, "trial %d: exit %d: %s", t, rc, p.log);
        integrity_ok(db);
        int lrc = cli_run(dir, out, sizeof out, "runs --db %s", db);
        int failed = 0, done = 0;
        for (long long id = 1; lrc == 0 && id <= 2; id++) {
            const char *st = listed_status(out, id);
            ck_assert_msg(!*st || !strcmp(st, "failed") || !strcmp(st, "done"), "trial %d: run "
                          "%lld listed '%s' right after the kill:\n%s", t, id, st, out);
            failed += !strcmp(st, "failed");
            done += !strcmp(st, "done");
            if (!strcmp(st, "failed")) {
                ck_assert_msg(cli_run(dir, out, sizeof out, "resume %lld --db %s --quiet", id,
                                      db) == 0, "trial %d: %s", t, out);
                resumed++;
                lrc = cli_run(dir, out, sizeof out, "runs --db %s", db);
            }
        }
        printf("kill9_sweep trial %d: killed at %.3f s of %.3f: %d runs failed (resumed), %d "
               "done\n", t, at, span, failed, done);
        /* the sweep goes on with what has no run yet */
        ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db %s --jobs 2", db) == 0,
                      "trial %d: %s", t, out);
        integrity_ok(db);
        ck_assert_int_eq(cli_db_int(dir, db, "SELECT count(*) FROM runs"), 2);
        ck_assert_int_eq(identical_epochs(db, "ref.db"), 6);
    }
    printf("kill9_sweep: %d runs resumed\n", resumed);
    ck_assert_msg(resumed >= 3, "only %d runs of 8 kills were resumed", resumed);
    cli_cleanup(dir);
}
END_TEST

/* Signals through the CLI: SIGINT to the process group (a Ctrl-C) once epoch 1 is
 * printed lets the epoch in progress finish (exit 130, the notice, the state of the
 * last epoch recorded: 2, or 1 when the signal beat the boundary); SIGINT twice stops
 * during epoch 2 with only epoch 1 kept. Resumed, each ends with the uninterrupted
 * run's weights. */
START_TEST(signals_stop_at_the_boundary_or_now)
{
    cli_scratch(dir, sizeof dir, "faults");
#define LONG_ARGS "run --stages 2 --limit-train 25600 --limit-val 320 --epochs 3 --db g.db"
    ck_assert_msg(cli_run(dir, out, sizeof out, LONG_ARGS " --quiet --save ref.safetensors") == 0,
                  "%s", out);
    for (int twice = 0; twice <= 1; twice++) {
        char args[256], w[32];
        snprintf(w, sizeof w, "w%d.safetensors", twice);
        snprintf(args, sizeof args, LONG_ARGS " --save %s", w);
        static struct proc p;
        proc_start(&p, dir, args);
        ck_assert_msg(proc_wait_for(&p, "epoch 1:", 1), "%s", p.log);
        proc_signal(&p, SIGINT);
        ck_assert_msg(proc_wait_for(&p, "stopping after the current epoch", 1), "%s", p.log);
        if (twice)
            proc_signal(&p, SIGINT);
        int rc = proc_finish(&p);
        long long id = 2 + twice;
        ck_assert_msg(rc == 130, "exit %d: %s", rc, p.log);
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT status || ' ' || (SELECT count(*) FROM epochs WHERE "
                 "run_id = %lld) FROM runs WHERE id = %lld", id, id);
        const char *got = db_text("g.db", sql);
        if (twice) {
            ck_assert_str_eq(got, "interrupted 1");
            ck_assert_msg(strstr(p.log, "a second signal: stopping now"), "%s", p.log);
        } else {
            ck_assert_msg(!strcmp(got, "interrupted 2") || !strcmp(got, "interrupted 1"), "%s",
                          got);
            snprintf(sql, sizeof sql, "SELECT message FROM runs WHERE id = %lld", id);
            ck_assert_msg(strstr(db_text("g.db", sql), "its resume state is written"), "%s",
                          db_text("g.db", sql));
        }
        ck_assert_msg(cli_run(dir, out, sizeof out, "resume %lld --db g.db --quiet", id) == 0,
                      "%s", out);
        ck_assert_msg(same_file(w, "ref.safetensors"), "%s: the resumed weights differ",
                      twice ? "two signals" : "one signal");
    }
#undef LONG_ARGS
    cli_cleanup(dir);
}
END_TEST

/* The hidden temporaries ".NAME.tmp-PID-N" under folder: 0 when none is left. */
static int temporaries(const char *folder)
{
    char pattern[256];
    snprintf(pattern, sizeof pattern, "%s/%s/.*.tmp-*", dir, folder);
    glob_t g;
    int n = glob(pattern, 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
    if (n)
        printf("left: %s\n", g.gl_pathv[0]);
    globfree(&g);
    return n;
}

#define TINY_RUN "run --quiet --model lenet --dataset tiny-imagenet --data-dir tiny " \
                 "--limit-train 8 --limit-val 4 --microbatch-size 2 --db t.db"

START_TEST(kill9_outputs)
{
    cli_scratch(dir, sizeof dir, "faultsout");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp -r '%s/data/tiny-imagenet-200' '%s/tiny'",
             getenv("PB_FIXTURES"), dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_msg(cli_run(dir, out, sizeof out, "run --quiet --stages 2 --limit-train 256 "
                          "--limit-val 64 --db r.db") == 0, "%s", out);
    double t0 = now_s();
    ck_assert_msg(cli_run(dir, out, sizeof out, "plot --figure all --out figs --db r.db") == 0,
                  "%s", out);
    double plot_span = now_s() - t0;
    snprintf(cmd, sizeof cmd, "rm -f '%s'/tiny/pipebench-*.u8cache", dir);
    t0 = now_s();
    ck_assert_msg(cli_run(dir, out, sizeof out, TINY_RUN) == 0, "%s", out);
    double run_span = now_s() - t0;
    uint64_t rng = 20261206;
    for (int t = 0; t < 8; t++) {
        static struct proc p;
        proc_start(&p, dir, "plot --figure all --out figs --db r.db");
        sleep_s(1.1 * plot_span * uniform(&rng));
        proc_signal(&p, SIGKILL);
        proc_finish(&p);
        ck_assert_int_eq(system(cmd), 0);   /* the cache built anew by the killed run */
        proc_start(&p, dir, TINY_RUN);
        sleep_s(1.1 * run_span * uniform(&rng));
        proc_signal(&p, SIGKILL);
        proc_finish(&p);
        ck_assert_msg(cli_run(dir, out, sizeof out, "plot --figure all --out figs --db r.db") ==
                      0, "trial %d: %s", t, out);
        ck_assert_msg(cli_run(dir, out, sizeof out, TINY_RUN) == 0, "trial %d: %s", t, out);
        ck_assert_msg(temporaries("figs") == 0 && temporaries("tiny") == 0,
                      "trial %d: a temporary file is left", t);
    }
    static const char *const figs[] = {"convergence", "throughput", "memory", "timeline",
                                       "staleness"};
    for (int i = 0; i < 5; i++) {
        char f[160];
        snprintf(f, sizeof f, "%s/figs/%s.png", dir, figs[i]);
        ck_assert_msg(access(f, F_OK) == 0, "%s is missing", f);
    }
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, kill9_run);
    tcase_add_test(tc, kill9_sweep);
    tcase_add_test(tc, signals_stop_at_the_boundary_or_now);
    suite_add_tcase(s, tc);
    TCase *outputs = tcase_create("outputs");
    tcase_set_timeout(outputs, 600);
    tcase_add_test(outputs, kill9_outputs);
    suite_add_tcase(s, outputs);
    return s;
}
