/* tests/results/test_results.c — the SQLite results store (results/results.c): schema creation,
 * a run's round trip read back with sqlite3 directly, clean errors for unwritable
 * paths and foreign files, whole-epoch rollback, and refusal of a future schema. */
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pb_config.h"
#include "results/results.h"
#include "tests/support/test_util.h"

static char tmpdir[64], dbpath[256];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pb_test_results_XXXXXX");
    ck_assert(mkdtemp(tmpdir) != NULL);
    snprintf(dbpath, sizeof dbpath, "%s/sub/dir/runs.db", tmpdir);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert(system(cmd) == 0);
}

static void assert_msg_has(const struct pb_err *e, const char *part)
{
    ck_assert_msg(strstr(e->msg, part) != NULL, "message \"%s\" lacks \"%s\"", e->msg, part);
}

static struct pb_results *open_ok(void)
{
    struct pb_results *db;
    struct pb_err e;
    ck_assert_msg(pb_results_open(&db, dbpath, &e) == 0, "%s", e.msg);
    return db;
}

/* A direct sqlite3 connection, independent of the store. */
static sqlite3 *raw(void)
{
    sqlite3 *d;
    ck_assert(sqlite3_open_v2(dbpath, &d, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    return d;
}

/* The first column of the first row of sql as text ("NULL" for NULL). */
static char *query(sqlite3 *d, const char *sql)
{
    static char buf[1024];
    sqlite3_stmt *s;
    ck_assert_msg(sqlite3_prepare_v2(d, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(d));
    ck_assert_msg(sqlite3_step(s) == SQLITE_ROW, "%s: no row", sql);
    const unsigned char *t = sqlite3_column_text(s, 0);
    snprintf(buf, sizeof buf, "%s", t ? (const char *)t : "NULL");
    sqlite3_finalize(s);
    return buf;
}

START_TEST(open_creates_schema)
{
    struct pb_results *db = open_ok();
    pb_results_close(db);
    db = open_ok();   /* reopening an existing database */
    pb_results_close(db);
    struct pb_err e;
    ck_assert_msg(pb_results_open_existing(&db, dbpath, &e) == 0, "%s", e.msg);
    pb_results_close(db);
    sqlite3 *d = raw();
    ck_assert_str_eq(query(d, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name "
                              "IN ('schema_version', 'runs', 'epochs', 'stage_stats', "
                              "'staleness', 'events')"), "6");
    ck_assert_int_eq(atoi(query(d, "SELECT version FROM schema_version")),
                     PB_RESULTS_SCHEMA_VERSION);
    ck_assert_str_eq(query(d, "SELECT count(*) FROM schema_version"), "1");
    ck_assert_str_eq(query(d, "PRAGMA journal_mode"), "wal");
    sqlite3_close(d);
}
END_TEST

/* Makes d look written by a build before the persistent views: no view, user_version 0. */
static void drop_views(sqlite3 *d)
{
    for (;;) {
        char *name = pb_xstrdup(query(d, "SELECT coalesce((SELECT name FROM sqlite_schema "
                                         "WHERE type = 'view' LIMIT 1), '')"));
        if (!*name) {
            free(name);
            break;
        }
        char sql[256];
        snprintf(sql, sizeof sql, "DROP VIEW \"%s\"", name);
        free(name);
        ck_assert(sqlite3_exec(d, sql, NULL, NULL, NULL) == SQLITE_OK);
    }
    ck_assert(sqlite3_exec(d, "PRAGMA user_version = 0", NULL, NULL, NULL) == SQLITE_OK);
}

/* A version 5 file (epochs without val_bleu) is upgraded in place when opened for
 * writing: the column is added, NULL for the epochs already there. */
START_TEST(schema_v5_upgrade)
{
    pb_results_close(open_ok());
    sqlite3 *d = raw();
    drop_views(d);
    ck_assert(sqlite3_exec(d, "ALTER TABLE epochs DROP COLUMN val_bleu; ALTER TABLE runs DROP "
                              "COLUMN bleu_scoring; UPDATE schema_version SET version = 5",
                           NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(d);
    pb_results_close(open_ok());
    d = raw();
    ck_assert_int_eq(atoi(query(d, "SELECT version FROM schema_version")),
                     PB_RESULTS_SCHEMA_VERSION);
    ck_assert_str_eq(query(d, "SELECT count(*) FROM pragma_table_info('epochs') WHERE name = "
                              "'val_bleu'"), "1");
    /* the reporting views are written after the upgrade */
    ck_assert_str_eq(query(d, "SELECT count(*) FROM sqlite_schema WHERE type = 'view' AND "
                              "name = 'run_summary'"), "1");
    sqlite3_close(d);
}
END_TEST

/* A version 6 file (runs without bleu_scoring) is upgraded in place: a run with a
 * validation BLEU was scored BPE-merged then, one without keeps NULL. */
START_TEST(schema_v6_upgrade)
{
    pb_results_close(open_ok());
    sqlite3 *d = raw();
    drop_views(d);
    ck_assert(sqlite3_exec(d, "ALTER TABLE runs DROP COLUMN bleu_scoring; "
                              "INSERT INTO runs (id, created, status) VALUES (1, 'x', 'done'), "
                              "(2, 'x', 'done'); "
                              "INSERT INTO epochs (run_id, epoch, val_bleu) VALUES (1, 0, 1.5), "
                              "(2, 0, NULL); UPDATE schema_version SET version = 6",
                           NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(d);
    pb_results_close(open_ok());
    d = raw();
    ck_assert_int_eq(atoi(query(d, "SELECT version FROM schema_version")),
                     PB_RESULTS_SCHEMA_VERSION);
    ck_assert_str_eq(query(d, "SELECT bleu_scoring FROM runs WHERE id = 1"), "bpe-merged");
    ck_assert_str_eq(query(d, "SELECT bleu_scoring FROM runs WHERE id = 2"), "NULL");
    sqlite3_close(d);
}
END_TEST

/* A version 7 file (events of kinds F, B, U only) is upgraded in place: the events
 * table takes I and W (the split backward) and keeps its rows. */
START_TEST(schema_v7_upgrade)
{
    pb_results_close(open_ok());
    sqlite3 *d = raw();
    ck_assert(sqlite3_exec(d, "DROP TABLE events; CREATE TABLE events (run_id INTEGER NOT NULL "
                              "REFERENCES runs(id) ON DELETE CASCADE, epoch INTEGER NOT NULL, "
                              "device INTEGER NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL "
                              "CHECK (kind IN ('F', 'B', 'U')), mb INTEGER, version INTEGER, "
                              "ahead INTEGER, sync_version INTEGER, start_s REAL, end_s REAL, "
                              "PRIMARY KEY (run_id, epoch, device, seq), FOREIGN KEY (run_id, "
                              "epoch) REFERENCES epochs(run_id, epoch) ON DELETE CASCADE); "
                              "INSERT INTO runs (id, created, status) VALUES (1, 'x', 'done'); "
                              "INSERT INTO epochs (run_id, epoch) VALUES (1, 0); "
                              "INSERT INTO events VALUES (1, 0, 0, 0, 'F', 0, 0, 0, 0, 0.5, 1.5); "
                              "UPDATE schema_version SET version = 7",
                           NULL, NULL, NULL) == SQLITE_OK);
    ck_assert(sqlite3_exec(d, "INSERT INTO events VALUES (1, 0, 0, 1, 'I', 0, 0, 0, 0, 1, 2)",
                           NULL, NULL, NULL) != SQLITE_OK);
    sqlite3_close(d);
    pb_results_close(open_ok());
    d = raw();
    ck_assert_int_eq(atoi(query(d, "SELECT version FROM schema_version")),
                     PB_RESULTS_SCHEMA_VERSION);
    ck_assert_str_eq(query(d, "SELECT kind || end_s FROM events WHERE seq = 0"), "F1.5");
    ck_assert(sqlite3_exec(d, "INSERT INTO events VALUES (1, 0, 0, 1, 'I', 0, 0, 0, 0, 1, 2, 0); "
                              "INSERT INTO events VALUES (1, 0, 0, 2, 'W', 0, 0, 0, 0, 2, 3, 0)",
                           NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(d);
}
END_TEST

/* A version 8 file (the configuration's seed a JSON string) is upgraded in place: each
 * seed a double holds exactly becomes an integer where it stood, the other keys and
 * their order untouched; a seed above 2^53 stays a string, as new runs record it. */
START_TEST(schema_v8_upgrade)
{
    pb_results_close(open_ok());
    sqlite3 *d = raw();
    drop_views(d);
    ck_assert(sqlite3_exec(d, "INSERT INTO runs (id, created, status, config) VALUES "
                              "(1, 'x', 'done', '{\"model\":\"mlp\",\"seed\":\"7\","
                              "\"lr\":0.01}'), "
                              "(2, 'x', 'done', '{\"seed\":\"9007199254740992\"}'), "
                              "(3, 'x', 'done', '{\"seed\":\"18446744073709551615\"}'), "
                              "(4, 'x', 'done', '{\"model\":\"mlp\"}'), "
                              "(5, 'x', 'done', NULL); "
                              "ALTER TABLE events DROP COLUMN pair; "
                              "UPDATE schema_version SET version = 8",
                           NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(d);
    pb_results_close(open_ok());
    d = raw();
    ck_assert_int_eq(atoi(query(d, "SELECT version FROM schema_version")),
                     PB_RESULTS_SCHEMA_VERSION);
    ck_assert_str_eq(query(d, "SELECT config FROM runs WHERE id = 1"),
                     "{\"model\":\"mlp\",\"seed\":7,\"lr\":0.01}");
    ck_assert_str_eq(query(d, "SELECT config FROM runs WHERE id = 2"),
                     "{\"seed\":9007199254740992}");
    ck_assert_str_eq(query(d, "SELECT config FROM runs WHERE id = 3"),
                     "{\"seed\":\"18446744073709551615\"}");
    ck_assert_str_eq(query(d, "SELECT config FROM runs WHERE id = 4"), "{\"model\":\"mlp\"}");
    ck_assert_str_eq(query(d, "SELECT config FROM runs WHERE id = 5"), "NULL");
    sqlite3_close(d);
}
END_TEST

START_TEST(schema_is_embedded)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/results/schema.sql", PB_SOURCE_ROOT);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    ck_assert_str_eq(pb_results_schema_sql, text);
}
END_TEST

static const struct pb_run_info info = {
    .config_json = "{\"schedule\": \"pipeoptim\", \"stages\": 4, \"shuffle\": true}",
    .model = "mlp",
    .dataset = "fashion-mnist",
    .schedule = "pipeoptim",
    .variant = "paper",
    .optimizer = "sgdm",
    .backend_libraries = "oneDNN 2.6.3",
    .executor = "threads",
    .stages = 4,
    .microbatch_size = 32,
    .microbatches = 8,
    .epochs = 10,
    .seed = 0xFFFFFFFFFFFFFFF0ull,
    .lr = 0.01,
};

static struct pb_stage_record stage(int k)
{
    struct pb_stage_record s = {
        .busy_s = 1.5 + k, .wait_s = 0.25, .comm_s = 0.125, .bubble_frac = 0.1 * k,
        .versions_kept = 4 - k,
        .f_mean = 3 - k, .f_max = 3 - k, .b_mean = 0, .b_max = 0,
        .pred_err_mean = 0.01, .pred_err_max = 0.02, .pred_count = k == 3 ? 0 : 100,
    };
    for (int m = 0; m < PB_MEM_NKINDS; m++)
        s.mem_peak[m] = ((int64_t)1 << 33) + 1000 * k + m;
    return s;
}

static const struct pb_event_record events[] = {
    {0, 0, 'F', 0, 0, 3, 0.0, 0.5, 0, 0},
    {0, 1, 'B', 0, 0, 0, 0.5, 1.0, 0, 0},
    {0, 2, 'U', -1, 1, 0, 1.0, 1.25, 1, 0},
};

static struct pb_epoch_record epoch_rec(int epoch, const struct pb_stage_record *st)
{
    struct pb_epoch_record r = {
        .epoch = epoch, .train_loss = 0.5 / (epoch + 1), .val_loss = NAN, .val_acc = 0.8125,
        .samples = 60000, .wall_s = 12.5, .throughput = 4800, .lr = 0.01,
        .nstages = 4, .stages = st, .nevents = 3, .events = events,
    };
    return r;
}

START_TEST(round_trip)
{
    struct pb_results *db = open_ok();
    struct pb_err e;
    int64_t id = pb_results_run_begin(db, &info, &e);
    ck_assert_msg(id > 0, "%s", e.msg);
    ck_assert_msg(pb_results_run_started(db, id, &e) == 0, "%s", e.msg);
    struct pb_stage_record st[4] = {stage(0), stage(1), stage(2), stage(3)};
    for (int ep = 0; ep < 2; ep++) {
        struct pb_epoch_record rec = epoch_rec(ep, st);
        ck_assert_msg(pb_results_epoch(db, id, &rec, &e) == 0, "%s", e.msg);
    }
    ck_assert_msg(pb_results_run_end(db, id, PB_RUN_DIVERGED, "loss became NaN at epoch 2", &e)
                      == 0, "%s", e.msg);
    int64_t id2 = pb_results_run_begin(db, &(struct pb_run_info){0}, &e);
    ck_assert_int_eq(id2, id + 1);
    pb_results_close(db);

    sqlite3 *d = raw();
    ck_assert_str_eq(query(d, "SELECT status || '|' || message || '|' || model || '|' || "
                              "dataset || '|' || schedule || '|' || variant || '|' || "
                              "optimizer || '|' || executor || '|' || stages || '|' || "
                              "microbatch_size || '|' || microbatches || '|' || epochs || "
                              "'|' || lr FROM runs WHERE id = 1"),
                     "diverged|loss became NaN at epoch 2|mlp|fashion-mnist|pipeoptim|paper|"
                     "sgdm|threads|4|32|8|10|0.01");
    ck_assert_str_eq(query(d, "SELECT json_extract(config, '$.stages') FROM runs"), "4");
    ck_assert_str_eq(query(d, "SELECT seed FROM runs WHERE id = 1"), "-16");   /* 2^64 - 16 */
    ck_assert_str_eq(query(d, "SELECT created IS NOT NULL AND started IS NOT NULL AND ended "
                              "LIKE '____-__-__T__:__:__Z' FROM runs WHERE id = 1"), "1");
    ck_assert_str_eq(query(d, "SELECT git_revision <> '' AND cpu_model <> '' AND "
                              "library_versions LIKE 'oneDNN %SQLite%zlib%cJSON%' AND pid > 0 "
                              "FROM runs WHERE id = 1"), "1");
    ck_assert_str_eq(query(d, "SELECT status || '|' || coalesce(model, 'NULL') FROM runs "
                              "WHERE id = 2"), "running|NULL");
    ck_assert_str_eq(query(d, "SELECT group_concat(epoch || ':' || train_loss || ':' || "
                              "coalesce(val_loss, 'NULL') || ':' || val_acc || ':' || samples "
                              "|| ':' || wall_s || ':' || throughput || ':' || lr, ' ') "
                              "FROM epochs WHERE run_id = 1"),
                     "0:0.5:NULL:0.8125:60000:12.5:4800.0:0.01 "
                     "1:0.25:NULL:0.8125:60000:12.5:4800.0:0.01");
    ck_assert_str_eq(query(d, "SELECT count(*) FROM stage_stats WHERE run_id = 1"), "8");
    ck_assert_str_eq(query(d, "SELECT busy_s || ' ' || wait_s || ' ' || comm_s || ' ' || "
                              "bubble_frac || ' ' || mem_params || ' ' || mem_scratch || ' ' || "
                              "versions_kept FROM stage_stats WHERE epoch = 1 AND stage = 2"),
                     "3.5 0.25 0.125 0.2 8589936592 8589936598 2");
    ck_assert_str_eq(query(d, "SELECT mem_grads + mem_optstate + mem_wcopies + mem_acts + "
                              "mem_comm - 5 * 8589934592 FROM stage_stats WHERE epoch = 0 AND "
                              "stage = 0"), "15");
    ck_assert_str_eq(query(d, "SELECT f_mean || ' ' || b_max || ' ' || pred_err_mean || ' ' || "
                              "pred_count FROM staleness WHERE epoch = 0 AND stage = 1"),
                     "2.0 0.0 0.01 100");
    ck_assert_str_eq(query(d, "SELECT coalesce(pred_err_max, 'NULL') || ' ' || pred_count "
                              "FROM staleness WHERE epoch = 1 AND stage = 3"), "NULL 0");
    ck_assert_str_eq(query(d, "SELECT group_concat(kind || coalesce(mb, '-') || 'v' || version "
                              "|| 's' || ahead || '@' || start_s, ' ') FROM events WHERE "
                              "epoch = 1"), "F0v0s3@0.0 B0v0s0@0.5 U-v1s0@1.0");
    sqlite3_close(d);
}
END_TEST

START_TEST(unwritable_paths)
{
    struct pb_results *db = NULL;
    struct pb_err e;
    ck_assert_int_eq(pb_results_open(&db, "/proc/pb_nonexistent/x/y.db", &e), -1);
    ck_assert(db == NULL);
    assert_msg_has(&e, "/proc/pb_nonexistent");
    assert_msg_has(&e, "--db");
    char file[300], under[400];
    snprintf(file, sizeof file, "%s/plain", tmpdir);
    FILE *f = fopen(file, "w");
    fputs("not a folder\n", f);
    fclose(f);
    snprintf(under, sizeof under, "%s/runs.db", file);
    ck_assert_int_eq(pb_results_open(&db, under, &e), -1);
    assert_msg_has(&e, file);
    assert_msg_has(&e, "is not a folder");
    /* a folder given as the database */
    ck_assert_int_eq(pb_results_open(&db, tmpdir, &e), -1);
    assert_msg_has(&e, tmpdir);
    /* a file that is not a database at all */
    ck_assert_int_eq(pb_results_open(&db, file, &e), -1);
    assert_msg_has(&e, file);
    ck_assert_int_eq(pb_results_open_existing(&db, dbpath, &e), -1);
    assert_msg_has(&e, "no results database at");
    assert_msg_has(&e, dbpath);
}
END_TEST

START_TEST(foreign_and_future_databases)
{
    struct pb_results *db = open_ok();
    pb_results_close(db);
    sqlite3 *d = raw();
    ck_assert(sqlite3_exec(d, "UPDATE schema_version SET version = 99", NULL, NULL, NULL) ==
              SQLITE_OK);
    sqlite3_close(d);
    struct pb_err e;
    ck_assert_int_eq(pb_results_open(&db, dbpath, &e), -1);
    assert_msg_has(&e, "schema version 99");
    assert_msg_has(&e, "newer");
    ck_assert_int_eq(pb_results_open_existing(&db, dbpath, &e), -1);
    assert_msg_has(&e, "schema version 99");

    char other[300];
    snprintf(other, sizeof other, "%s/other.db", tmpdir);
    ck_assert(sqlite3_open(other, &d) == SQLITE_OK);
    ck_assert(sqlite3_exec(d, "CREATE TABLE notes (t TEXT)", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(d);
    ck_assert_int_eq(pb_results_open(&db, other, &e), -1);
    assert_msg_has(&e, "not a pipebench results database");
    ck_assert(sqlite3_open(other, &d) == SQLITE_OK);
    ck_assert_str_eq(query(d, "SELECT count(*) FROM sqlite_schema"), "1");   /* untouched */
    ck_assert_str_eq(query(d, "PRAGMA journal_mode"), "delete");
    sqlite3_close(d);
}
END_TEST

/* A run killed before its schema commit leaves an empty file: the readers (runs, resume)
 * take it as a new database, not as "empty, not a pipebench results database". */
START_TEST(empty_file_is_new)
{
    char empty[300];
    snprintf(empty, sizeof empty, "%s/empty.db", tmpdir);
    FILE *f = fopen(empty, "w");
    ck_assert(f != NULL);
    fclose(f);
    struct pb_results *db;
    struct pb_err e;
    ck_assert_msg(pb_results_open_existing(&db, empty, &e) == 0, "%s", e.msg);
    sqlite3_stmt *s;
    ck_assert(sqlite3_prepare_v2(pb_results_sqlite(db), "SELECT count(*) FROM runs", -1, &s,
                                 NULL) == SQLITE_OK);
    ck_assert(sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) == 0);
    sqlite3_finalize(s);
    pb_results_close(db);
}
END_TEST

/* A database another process keeps locked: the run says so while it waits, on one line,
 * and goes on when the lock is released. */
START_TEST(locked_database_says_so)
{
    const char *bin = getenv("PB_PIPEBENCH");
    ck_assert(bin != NULL);
    pb_results_close(open_ok());
    sqlite3 *d = raw();
    ck_assert(sqlite3_exec(d, "BEGIN EXCLUSIVE", NULL, NULL, NULL) == SQLITE_OK);
    char cmd[1024], out[8192];
    snprintf(cmd, sizeof cmd, "'%s' run --quiet --dataset synthetic --limit-train 64 "
             "--limit-val 64 --microbatch-size 32 --db '%s' 2>&1", bin, dbpath);
    FILE *p = popen(cmd, "r");
    ck_assert(p != NULL);
    sleep(3);
    ck_assert(sqlite3_exec(d, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int st = pclose(p);
    sqlite3_close(d);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d: %s", st, out);
    ck_assert_msg(strstr(out, "is locked by another process; waiting up to"), "%s", out);
}
END_TEST

START_TEST(failed_epoch_rolls_back)
{
    struct pb_results *db = open_ok();
    struct pb_err e;
    int64_t id = pb_results_run_begin(db, &info, &e);
    struct pb_stage_record st[4] = {stage(0), stage(1), stage(2), stage(3)};
    struct pb_epoch_record rec = epoch_rec(0, st);
    ck_assert_msg(pb_results_epoch(db, id, &rec, &e) == 0, "%s", e.msg);
    /* the same epoch again */
    rec.train_loss = 123;
    ck_assert_int_eq(pb_results_epoch(db, id, &rec, &e), -1);
    assert_msg_has(&e, "epoch 1 of run 1");
    assert_msg_has(&e, "UNIQUE");
    /* epoch 1 whose last event repeats a (device, seq): fails after its epoch, stage and
     * staleness rows were inserted */
    struct pb_event_record dup[4];
    memcpy(dup, events, sizeof events);
    dup[3] = events[0];
    rec = epoch_rec(1, st);
    rec.events = dup;
    rec.nevents = 4;
    ck_assert_int_eq(pb_results_epoch(db, id, &rec, &e), -1);
    assert_msg_has(&e, "epoch 2 of run 1");
    /* an epoch for a run that does not exist */
    rec = epoch_rec(0, st);
    ck_assert_int_eq(pb_results_epoch(db, 999, &rec, &e), -1);
    assert_msg_has(&e, "FOREIGN KEY");
    ck_assert_int_eq(pb_results_run_end(db, 999, PB_RUN_DONE, NULL, &e), -1);
    assert_msg_has(&e, "no run 999");
    /* the store still works after the failures */
    rec = epoch_rec(1, st);
    ck_assert_msg(pb_results_epoch(db, id, &rec, &e) == 0, "%s", e.msg);
    pb_results_close(db);

    sqlite3 *d = raw();
    ck_assert_str_eq(query(d, "SELECT group_concat(epoch || ':' || train_loss) FROM epochs"),
                     "0:0.5,1:0.25");
    ck_assert_str_eq(query(d, "SELECT count(*) FROM stage_stats"), "8");
    ck_assert_str_eq(query(d, "SELECT count(*) FROM staleness"), "8");
    ck_assert_str_eq(query(d, "SELECT count(*) FROM events"), "6");
    sqlite3_close(d);
}
END_TEST

START_TEST(crashed_runs_are_marked)
{
    struct pb_results *db = open_ok();
    struct pb_err e;
    int64_t mine = pb_results_run_begin(db, &info, &e);
    int64_t dead = pb_results_run_begin(db, &info, &e);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    ck_assert(waitpid(child, NULL, 0) == child);
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE runs SET pid = %d WHERE id = %lld", (int)child,
             (long long)dead);
    ck_assert(sqlite3_exec(pb_results_sqlite(db), sql, NULL, NULL, NULL) == SQLITE_OK);
    ck_assert_int_eq(pb_results_mark_orphans(db, &e), 1);
    pb_results_close(db);
    sqlite3 *d = raw();
    snprintf(sql, sizeof sql, "SELECT status FROM runs WHERE id = %lld", (long long)mine);
    ck_assert_str_eq(query(d, sql), "running");
    snprintf(sql, sizeof sql, "SELECT status || ': ' || message FROM runs WHERE id = %lld",
             (long long)dead);
    ck_assert_msg(strstr(query(d, sql), "failed: the process") != NULL, "%s", query(d, sql));
    sqlite3_close(d);
}
END_TEST

/* A database nobody may write (read-only media, or another user's) can still be read
 * by `pipebench runs` and report, and a run on it says why it cannot write. Needs
 * another user: as root the test runs the CLI as nobody (root writes anything);
 * otherwise, or where nobody cannot reach the binary (a checkout inside a directory
 * only root may enter, as mktemp -d makes), it skips. */
START_TEST(read_only_database_is_readable)
{
    if (geteuid() != 0 || system("command -v su >/dev/null 2>&1") != 0) {
        printf("skipped: needs root to run the CLI as another user\n");
        return;
    }
    const char *bin = getenv("PB_PIPEBENCH");
    ck_assert(bin != NULL);
    char cmd[1024], dir[300];
    snprintf(cmd, sizeof cmd, "su nobody -s /bin/sh -c \"test -x '%s'\"", bin);
    if (system(cmd) != 0) {
        printf("skipped: user nobody cannot run %s\n", bin);
        return;
    }
    struct pb_results *db = open_ok();
    struct pb_err e;
    ck_assert(pb_results_run_begin(db, &info, &e) > 0);
    pb_results_close(db);
    snprintf(dir, sizeof dir, "%s/sub/dir", tmpdir);
    snprintf(cmd, sizeof cmd, "chmod 755 '%s' '%s/sub' && chmod 555 '%s' && chmod 444 '%s'",
             tmpdir, tmpdir, dir, dbpath);
    ck_assert(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "su nobody -s /bin/sh -c \"'%s' runs --db '%s'\" >/dev/null 2>&1",
             bin, dbpath);
    ck_assert_msg(system(cmd) == 0, "pipebench runs could not read a read-only database");
    snprintf(cmd, sizeof cmd, "su nobody -s /bin/sh -c \"cd /tmp && '%s' run --quiet --db '%s'\" "
             "2>&1 | grep -q 'is read-only: a run needs a writable --db'", bin, dbpath);
    ck_assert_msg(system(cmd) == 0, "a run on a read-only database did not say why");
    /* simulate --record: refused before it simulates, exit 2 (it printed the simulation
       and then failed with exit 1) */
    snprintf(cmd, sizeof cmd, "su nobody -s /bin/sh -c \"cd /tmp && '%s' simulate --schedule "
             "gpipe --stages 2 --cost 1,1,1 --record --db '%s'\" > '%s/sim.out' 2>&1; "
             "test $? -eq 2 && grep -q 'is read-only' '%s/sim.out' && ! grep -q makespan "
             "'%s/sim.out'", bin, dbpath, tmpdir, tmpdir, tmpdir);
    ck_assert_msg(system(cmd) == 0, "simulate --record on a read-only database did not stop first");
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'", tmpdir);
    ck_assert(system(cmd) == 0);
}
END_TEST

/* A run whose process died but is not reaped yet (a zombie, as a sweep's child is
 * until the sweep waits for it) counts as crashed too. */
START_TEST(zombie_runs_are_marked)
{
    struct pb_results *db = open_ok();
    struct pb_err e;
    int64_t dead = pb_results_run_begin(db, &info, &e);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    /* wait until it is a zombie, without reaping it */
    ck_assert(waitid(P_PID, (id_t)child, NULL, WEXITED | WNOWAIT) == 0);
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE runs SET pid = %d WHERE id = %lld", (int)child,
             (long long)dead);
    ck_assert(sqlite3_exec(pb_results_sqlite(db), sql, NULL, NULL, NULL) == SQLITE_OK);
    ck_assert_int_eq(pb_results_mark_orphans(db, &e), 1);
    ck_assert(waitpid(child, NULL, 0) == child);
    pb_results_close(db);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("results");
    TCase *tc = tcase_create("store");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, open_creates_schema);
    tcase_add_test(tc, schema_v5_upgrade);
    tcase_add_test(tc, schema_v6_upgrade);
    tcase_add_test(tc, schema_v7_upgrade);
    tcase_add_test(tc, schema_v8_upgrade);
    tcase_add_test(tc, schema_is_embedded);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, unwritable_paths);
    tcase_add_test(tc, foreign_and_future_databases);
    tcase_add_test(tc, failed_epoch_rolls_back);
    tcase_add_test(tc, empty_file_is_new);
    tcase_add_test(tc, crashed_runs_are_marked);
    tcase_add_test(tc, zombie_runs_are_marked);
    tcase_add_test(tc, read_only_database_is_readable);
    tcase_set_tags(tc, "fast");
    suite_add_tcase(s, tc);
    TCase *locked = tcase_create("locked");   /* waits out SQLite's busy timeout: seconds */
    tcase_add_checked_fixture(locked, setup, teardown);
    tcase_add_test(locked, locked_database_says_so);
    suite_add_tcase(s, locked);
    return s;
}
