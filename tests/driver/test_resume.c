/* tests/driver/test_resume.c — checkpoint and resume (semantics §1.10): for every schedule, a run
 * stopped by SIGINT after its first of three epochs (the signal comes as the epoch is
 * recorded: the run stops at that boundary, exit 130, with its resume state) and
 * continued with `pipebench resume` ends with weights byte-identical to an
 * uninterrupted run's, under the same id, with each epoch recorded once; also under the
 * threads executor with BatchNorm and Adam. A signal writes the state even with
 * --checkpoint-every 0; a run without a state is trained again from its first epoch (from
 * its --init when it had one), to the same weights. Bad resumes (unknown or finished
 * runs, a state that is none) exit 2 and change nothing. A run interrupted under results
 * schema 8 (the seed a string in its configuration) resumes from its state. */
#include <check.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/driver/run.h"
#include "harness/ir/program.h"
#include "schedules/registry.h"
#include "tests/support/cli_util.h"
#include "tests/support/train_util.h"
#include "workloads/datasets/image_cache.h"

/* on_epoch: SIGINT once the first epoch is recorded; the run stops at the boundary. */
static void interrupt_after_first(void *ctx, int epoch, int epochs, double acc)
{
    (void)ctx;
    (void)epochs;
    (void)acc;
    if (epoch == 0)
        signal_the_run(SIGINT);
}

static int db_count(const char *db, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *s;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &s, NULL) == SQLITE_OK, "%s", sql);
    ck_assert(sqlite3_step(s) == SQLITE_ROW);
    int n = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(h);
    return n;
}

static void resume_matches(const char *schedule, const char *model, const char *executor,
                           const char *optimizer)
{
    char dbname[96], straight[96], resumed[96];
    snprintf(dbname, sizeof dbname, "%s-%s.db", schedule, executor);
    snprintf(straight, sizeof straight, "%s-%s-straight.safetensors", schedule, executor);
    snprintf(resumed, sizeof resumed, "%s-%s-resumed.safetensors", schedule, executor);
    struct pb_run_cfg c;
    struct pb_err e;
    small_cfg(&c);
    c.model = model;
    c.dataset = "synthetic";
    c.schedule = schedule;
    c.executor = executor;
    c.stages = 2;
    c.microbatches = 2;
    c.epochs = 3;
    c.limit_train = 256;
    c.limit_val = 64;
    c.optimizer = optimizer;
    ck_assert(pb_optim_cfg_from_name(&c.optim, optimizer, &e) == 0);
    c.db = tmp_path_kept(dbname);
    run_ok(&c, straight);
    /* the same run, interrupted, then resumed from the command line */
    c.save = tmp_path_kept(resumed);
    c.on_epoch = interrupt_after_first;
    struct pb_run_summary sum;
    ck_assert_int_eq(pb_run(&c, &sum, &e), PB_EXIT_INTERRUPTED);
    ck_assert_int_eq(sum.status, PB_RUN_INTERRUPTED);
    ck_assert_msg(strstr(e.msg, "interrupted after epoch 1; its resume state is written"), "%s",
                  e.msg);
    ck_assert_int_eq(db_count(c.db, "SELECT count(*) FROM epochs WHERE run_id = 2"), 1);
    char state[256];
    snprintf(state, sizeof state, "%s.run2.state", c.db);
    ck_assert_msg(access(state, F_OK) == 0, "no %s after the interrupt", state);
    char out[8192];
    ck_assert_int_eq(cli_run(tmp_dir(), out, sizeof out, "resume 2 --db '%s' --quiet", c.db),
                     0);
    ck_assert_int_eq(db_count(c.db, "SELECT count(*) FROM runs"), 2);
    ck_assert_int_eq(db_count(c.db, "SELECT count(*) FROM runs WHERE id = 2 AND status = "
                                    "'done'"), 1);
    ck_assert_int_eq(db_count(c.db, "SELECT count(DISTINCT epoch) || count(*) FROM epochs "
                                    "WHERE run_id = 2"), 33);
    size_t la, lb;
    unsigned char *a = read_file(tmp_path(straight), &la);
    unsigned char *b = read_file(tmp_path(resumed), &lb);
    ck_assert_msg(la == lb && !memcmp(a, b, la), "%s under %s: the resumed run's weights "
                  "differ from the uninterrupted run's", schedule, executor);
    free(a);
    free(b);
    /* nothing left to resume once done */
    ck_assert_int_ne(access(state, F_OK), 0);
    ck_assert_int_eq(cli_run(tmp_dir(), out, sizeof out, "resume 2 --db '%s'", c.db), 2);
    ck_assert_msg(strstr(out, "is done"), "%s", out);
}

START_TEST(test_every_schedule)
{
    resume_matches(pb_schedules[_i]->name, "mlp", "seq", "sgdm");
}
END_TEST

START_TEST(test_threads_batchnorm_adam)
{
    resume_matches("pipeoptim", "lenet", "threads", "adam");
}
END_TEST

/* NAdam's Π_t is not in the state file: a resumed run derives it from the step count */
START_TEST(test_threads_nadam)
{
    resume_matches("pipedream", "mlp", "threads", "nadam");
}
END_TEST

/* --checkpoint-every 0 writes no state at the boundaries, but a signal does; without
 * the state (deleted here, as a kill in the first epoch leaves none) resume trains the
 * run again from its first epoch: the same weights, each epoch recorded once. */
START_TEST(test_signal_state_and_no_state)
{
    struct pb_run_cfg c;
    struct pb_err e;
    small_cfg(&c);
    c.dataset = "synthetic";
    c.limit_train = 128;
    c.limit_val = 64;
    c.epochs = 3;
    c.checkpoint_every = 0;
    c.db = tmp_path_kept("every0.db");
    run_ok(&c, "every0-straight.safetensors");
    c.save = tmp_path_kept("every0-resumed.safetensors");
    c.on_epoch = interrupt_after_first;
    struct pb_run_summary sum;
    ck_assert_int_eq(pb_run(&c, &sum, &e), PB_EXIT_INTERRUPTED);
    char state[256], out[8192];
    snprintf(state, sizeof state, "%s.run2.state", c.db);
    ck_assert_msg(access(state, F_OK) == 0, "a signal wrote no state under --checkpoint-every 0");
    ck_assert_int_eq(unlink(state), 0);
    /* what a process killed while it wrote the state left is removed; a live writer's
     * temporary file is not */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    ck_assert(dead > 0 && waitpid(dead, NULL, 0) == dead);
    char stale[320], live[320];
    snprintf(stale, sizeof stale, "%s/.every0.db.run2.state.tmp-%d-0", tmp_dir(), (int)dead);
    snprintf(live, sizeof live, "%s/.every0.db.run2.state.tmp-%d-0", tmp_dir(), (int)getpid());
    fclose(fopen(stale, "w"));
    fclose(fopen(live, "w"));
    ck_assert_int_eq(cli_run(tmp_dir(), out, sizeof out, "resume 2 --db '%s'", c.db), 0);
    ck_assert_msg(access(stale, F_OK) != 0 && access(live, F_OK) == 0, "stale temporary files");
    unlink(live);
    ck_assert_msg(strstr(out, "has no resume state") && strstr(out, "from its first epoch"), "%s",
                  out);
    ck_assert_int_eq(db_count(c.db, "SELECT count(DISTINCT epoch) || count(*) FROM epochs "
                                    "WHERE run_id = 2"), 33);
    ck_assert_int_eq(db_count(c.db, "SELECT count(*) FROM runs WHERE status = 'done'"), 2);
    size_t la, lb;
    unsigned char *a = read_file(tmp_path("every0-straight.safetensors"), &la);
    unsigned char *b = read_file(c.save, &lb);
    ck_assert_msg(la == lb && !memcmp(a, b, la), "retrained from the start: other weights");
    free(a);
    free(b);
    /* the same from --init: trained again from its first epoch, it starts from it again */
    c.init = tmp_path_kept("every0-straight.safetensors");
    c.on_epoch = NULL;
    run_ok(&c, "init-straight.safetensors");
    c.save = tmp_path_kept("init-resumed.safetensors");
    c.on_epoch = interrupt_after_first;
    ck_assert_int_eq(pb_run(&c, &sum, &e), PB_EXIT_INTERRUPTED);
    snprintf(state, sizeof state, "%s.run4.state", c.db);
    ck_assert_int_eq(unlink(state), 0);
    ck_assert_int_eq(cli_run(tmp_dir(), out, sizeof out, "resume 4 --db '%s' --quiet", c.db), 0);
    a = read_file(tmp_path("init-straight.safetensors"), &la);
    b = read_file(c.save, &lb);
    ck_assert_msg(la == lb && !memcmp(a, b, la), "retrained from its --init: other weights");
    free(a);
    free(b);
}
END_TEST

/* The first column of sql's first row on db as a double. */
static double db_double(const char *db, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *s;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &s, NULL) == SQLITE_OK, "%s", sql);
    ck_assert(sqlite3_step(s) == SQLITE_ROW);
    double v = sqlite3_column_double(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(h);
    return v;
}

/* A resumed run's summary (what run, resume and sweep print) covers the whole run: its
 * time counts the epochs before the interrupt, its best accuracy is over all epochs. */
START_TEST(test_resumed_summary_is_the_whole_run)
{
    struct pb_run_cfg c;
    struct pb_err e;
    small_cfg(&c);
    c.dataset = "synthetic";
    c.limit_train = 512;
    c.limit_val = 32;
    c.epochs = 3;
    c.db = tmp_path_kept("summary.db");
    c.on_epoch = interrupt_after_first;
    struct pb_run_summary sum;
    ck_assert_int_eq(pb_run(&c, &sum, &e), PB_EXIT_INTERRUPTED);
    c.on_epoch = NULL;
    c.resume_run = sum.run_id;
    ck_assert_msg(pb_run(&c, &sum, &e) == PB_EXIT_OK, "%s", e.msg);
    double wall = db_double(c.db, "SELECT sum(wall_s) FROM epochs");
    double first = db_double(c.db, "SELECT wall_s FROM epochs WHERE epoch = 0");
    ck_assert_msg(first > 0 && sum.seconds >= wall, "%.4f s reported, the epochs took %.4f s",
                  sum.seconds, wall);
    ck_assert_double_eq(sum.best_acc, db_double(c.db, "SELECT max(val_acc) FROM epochs"));
}
END_TEST

START_TEST(test_bad_resumes)
{
    struct pb_run_cfg c;
    struct pb_err e;
    small_cfg(&c);
    c.dataset = "synthetic";
    c.limit_train = 128;
    c.limit_val = 64;
    c.epochs = 2;
    c.on_epoch = interrupt_after_first;
    c.db = tmp_path_kept("bad.db");
    struct pb_run_summary sum;
    ck_assert_int_eq(pb_run(&c, &sum, &e), PB_EXIT_INTERRUPTED);
    char out[8192];
    ck_assert_int_eq(cli_run(tmp_dir(), out, sizeof out, "resume 9 --db '%s'", c.db), 2);
    ck_assert_msg(strstr(out, "no run 9"), "%s", out);
    ck_assert_int_eq(cli_run(tmp_dir(), out, sizeof out, "resume x --db '%s'", c.db), 2);
    ck_assert_int_eq(cli_run(tmp_dir(), out, sizeof out, "resume 1 --db '%s/none.db'",
                             tmp_dir()), 2);
    /* a state that is no state is refused, the run left as it was */
    char state[256];
    snprintf(state, sizeof state, "%s.run1.state", c.db);
    FILE *f = fopen(state, "wb");
    ck_assert(f != NULL);
    fputs("not a safetensors file", f);
    fclose(f);
    ck_assert_int_eq(cli_run(tmp_dir(), out, sizeof out, "resume 1 --db '%s'", c.db), 2);
    ck_assert_msg(strstr(out, "run1.state"), "%s", out);
    ck_assert_int_eq(db_count(c.db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"),
                     1);
    ck_assert_int_eq(cli_run(tmp_dir(), out, sizeof out, "run --checkpoint-every -2"), 2);
    ck_assert_msg(strstr(out, "--checkpoint-every"), "%s", out);
}
END_TEST

/* Flips bit 0 of the byte `back` bytes before path's end (in the tensor data). */
static void flip_bit(const char *path, long back)
{
    FILE *f = fopen(path, "r+b");
    ck_assert(f != NULL);
    ck_assert_int_eq(fseek(f, -back, SEEK_END), 0);
    int c = getc(f);
    ck_assert_int_eq(fseek(f, -back, SEEK_END), 0);
    putc(c ^ 1, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* Nothing trusted blindly: a state with one flipped weight bit, and another database's
 * state of the same run id (another configuration), are refused with what to do, the
 * run left interrupted; the state itself then resumes to the end (its configuration
 * hash is the resumed run's). */
START_TEST(test_state_integrity)
{
    struct pb_run_cfg c;
    struct pb_err e;
    struct pb_run_summary sum;
    small_cfg(&c);
    c.dataset = "synthetic";
    c.limit_train = 128;
    c.limit_val = 64;
    c.epochs = 2;
    c.on_epoch = interrupt_after_first;
    c.db = tmp_path_kept("other.db");
    c.optim.lr *= 2;
    ck_assert_int_eq(pb_run(&c, &sum, &e), PB_EXIT_INTERRUPTED);
    small_cfg(&c);
    c.dataset = "synthetic";
    c.limit_train = 128;
    c.limit_val = 64;
    c.epochs = 2;
    c.on_epoch = interrupt_after_first;
    c.db = tmp_path_kept("own.db");
    ck_assert_int_eq(pb_run(&c, &sum, &e), PB_EXIT_INTERRUPTED);
    char state[256], kept[280], other[256], out[8192];
    snprintf(state, sizeof state, "%s.run1.state", c.db);
    snprintf(kept, sizeof kept, "%s.kept", state);
    snprintf(other, sizeof other, "%s.run1.state", tmp_path("other.db"));
    copy_file(state, kept);
    flip_bit(state, 1);
    ck_assert_int_eq(cli_run(tmp_dir(), out, sizeof out, "resume 1 --db '%s'", c.db), 2);
    ck_assert_msg(strstr(out, "is damaged") && strstr(out, "do not match the checksum") &&
                  strstr(out, "delete") && strstr(out, "start over"), "%s", out);
    copy_file(other, state);
    ck_assert_int_eq(cli_run(tmp_dir(), out, sizeof out, "resume 1 --db '%s'", c.db), 2);
    ck_assert_msg(strstr(out, "belongs to another configuration") && strstr(out, "delete"), "%s",
                  out);
    ck_assert_int_eq(db_count(c.db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"),
                     1);
    copy_file(kept, state);
    ck_assert_int_eq(cli_run(tmp_dir(), out, sizeof out, "resume 1 --db '%s' --quiet", c.db), 0);
    ck_assert_int_eq(db_count(c.db, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
}
END_TEST

/* The first column of sql's first row in db as text, into buf. */
static void db_text(const char *db, const char *sql, char *buf, size_t cap)
{
    sqlite3 *h;
    sqlite3_stmt *s;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &s, NULL) == SQLITE_OK, "%s", sql);
    ck_assert(sqlite3_step(s) == SQLITE_ROW);
    snprintf(buf, cap, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(h);
}

/* Replaces the 16 hex digits of the state's "config" hash (metadata, outside the data the
 * checksum covers) with hash. */
static void set_state_hash(const char *path, unsigned long long hash)
{
    size_t n;
    unsigned char *b = read_file(path, &n);
    static const char key[] = "\"config\":\"";
    unsigned char *at = memmem(b, n, key, strlen(key));
    ck_assert_msg(at != NULL, "no config hash in %s", path);
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", hash);
    memcpy(at + strlen(key), hex, 16);
    FILE *f = fopen(path, "wb");
    ck_assert(f != NULL && fwrite(b, 1, n, f) == n && fclose(f) == 0);
    free(b);
}

/* A run interrupted under schema 8 (its configuration's seed a JSON string, and its
 * resume state carrying the hash of that text; made here from a run of today by SQL and
 * by rewriting the hash) resumes to the end: the database is upgraded and the state is
 * taken as the run's own. */
START_TEST(test_state_of_schema_8)
{
    struct pb_run_cfg c;
    struct pb_err e;
    struct pb_run_summary sum;
    small_cfg(&c);
    c.dataset = "synthetic";
    c.limit_train = 128;
    c.limit_val = 64;
    c.epochs = 2;
    c.on_epoch = interrupt_after_first;
    c.db = tmp_path_kept("v8.db");
    ck_assert_int_eq(pb_run(&c, &sum, &e), PB_EXIT_INTERRUPTED);
    char old[8192], state[256], out[8192];
    db_text(c.db, "SELECT json_set(config, '$.seed', CAST(json_extract(config, '$.seed') AS "
                  "TEXT)) FROM runs WHERE id = 1", old, sizeof old);
    ck_assert_msg(strstr(old, "\"seed\":\"1\""), "%s", old);
    snprintf(state, sizeof state, "%s.run1.state", c.db);
    set_state_hash(state, (unsigned long long)pb_fnv1a(PB_FNV_OFFSET, old, strlen(old)));
    ck_assert_int_eq(db_count(c.db, "UPDATE runs SET config = json_set(config, '$.seed', "
                                    "CAST(json_extract(config, '$.seed') AS TEXT)) RETURNING "
                                    "1"), 1);
    sqlite3 *h;   /* version 8's events have no pair column */
    ck_assert(sqlite3_open(c.db, &h) == SQLITE_OK);
    ck_assert_msg(sqlite3_exec(h, "ALTER TABLE events DROP COLUMN pair", NULL, NULL, NULL) ==
                  SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_close(h);
    ck_assert_int_eq(db_count(c.db, "UPDATE schema_version SET version = 8 RETURNING version"),
                     8);
    ck_assert_msg(cli_run(tmp_dir(), out, sizeof out, "resume 1 --db '%s' --quiet", c.db) == 0,
                  "%s", out);
    ck_assert_int_eq(db_count(c.db, "SELECT count(*) FROM runs WHERE status = 'done' AND "
                                    "json_type(config, '$.seed') = 'integer'"), 1);
    ck_assert_int_eq(db_count(c.db, "SELECT count(*) FROM epochs WHERE run_id = 1"), 2);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("resume");
    TCase *tc = tcase_create("resume");
    tcase_set_timeout(tc, 600);
    int n = 0;
    while (pb_schedules[n])
        n++;
    tcase_add_loop_test(tc, test_every_schedule, 0, n);
    tcase_add_test(tc, test_threads_batchnorm_adam);
    tcase_add_test(tc, test_threads_nadam);
    suite_add_tcase(s, tc);
    TCase *fast = tcase_create("resume_fast");
    tcase_set_tags(fast, "fast");
    tcase_set_timeout(fast, 600);
    tcase_add_test(fast, test_signal_state_and_no_state);
    tcase_add_test(fast, test_bad_resumes);
    tcase_add_test(fast, test_resumed_summary_is_the_whole_run);
    tcase_add_test(fast, test_state_integrity);
    tcase_add_test(fast, test_state_of_schema_8);
    suite_add_tcase(s, fast);
    return s;
}
