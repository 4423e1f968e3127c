/* results/results.c — the SQLite results store (results.h, results/schema.sql).
 * WAL mode and a busy timeout let parallel runs share one file; every epoch is one
 * transaction, rolled back whole on any error. */
#include "results/results.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUSY_TIMEOUT_MS 30000
/* how long a reading open waits to mark crashed runs before it reads on */
#define READER_MARK_TIMEOUT_MS 2000

_Static_assert(PB_MEM_NKINDS == 9, "stage_stats has one mem_ column per enum pb_mem_kind");

struct pb_results {
    sqlite3 *db;
    char *path;
    int busy_ms;    /* how long a locked database is waited for */
    bool told;      /* the wait has been announced */
};

/* SQLite's busy handler: waits in steps of 10 ms up to r->busy_ms, saying once, after a
 * second, that another process holds the lock. */
static int on_busy(void *ctx, int calls)
{
    struct pb_results *r = ctx;
    if (calls * 10 >= r->busy_ms)
        return 0;
    if (calls * 10 >= 1000 && !r->told) {
        fprintf(stderr, "pipebench: the results database %s is locked by another process; "
                        "waiting up to %d s\n", r->path, r->busy_ms / 1000);
        r->told = true;
    }
    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    nanosleep(&ten_ms, NULL);
    return 1;
}

static void set_busy(struct pb_results *r, int ms)
{
    r->busy_ms = ms;
    sqlite3_busy_handler(r->db, on_busy, r);
}

const char *const pb_run_status_names[PB_RUN_NSTATUS] = {
    "running", "done", "failed", "diverged", "interrupted",
};

static int db_fail(struct pb_results *r, const char *what, struct pb_err *e)
{
    int code = sqlite3_errcode(r->db) & 0xff;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
        return pb_err_set(e, "results database %s: %s: another process kept it locked for %d s "
                             "(a long write of a concurrent run?); run again when it is done",
                          r->path, what, r->busy_ms / 1000);
    if (code == SQLITE_READONLY)
        return pb_err_set(e, "results database %s: %s: the file is read-only; reports can read "
                             "it, runs need a writable --db", r->path, what);
    return pb_err_set(e, "results database %s: %s: %s", r->path, what, sqlite3_errmsg(r->db));
}

static int exec(struct pb_results *r, const char *sql, const char *what, struct pb_err *e)
{
    if (sqlite3_exec(r->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(r, what, e);
    return 0;
}

static void rollback(struct pb_results *r)
{
    if (!sqlite3_get_autocommit(r->db))
        sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
}

static void now_iso(char buf[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

static void bind_real(sqlite3_stmt *s, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_double(s, i, v);
}

/* mkdir -p of the folder holding path. */
static int make_parent(const char *path, struct pb_err *e)
{
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return pb_err_set(e, "results database path is too long: %s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        struct stat st;
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            return pb_err_set(e, "cannot create the folder %s for the results database %s: %s; "
                              "pass --db with a writable path", dir, path, strerror(errno));
        if (stat(dir, &st) != 0)
            return pb_err_set(e, "cannot use the folder %s of the results database %s: %s; "
                              "pass --db with a writable path", dir, path, strerror(errno));
        if (!S_ISDIR(st.st_mode))
            return pb_err_set(e, "cannot create the results database %s: %s is not a folder; "
                              "pass --db with a writable path", path, dir);
        *p = saved;
        if (saved == '\0')
            return 0;
    }
}

/* Schema version 2 → 3: the simulated epoch beside the measured one, each stage's median
 * op costs, and the machine a run's timings come from (design §6.6, semantics §6). */
static const char pb_results_migrate_v2_sql[] =
    "ALTER TABLE runs ADD COLUMN cores INTEGER;"
    "ALTER TABLE runs ADD COLUMN threads_per_stage INTEGER;"
    "ALTER TABLE runs ADD COLUMN load_avg REAL;"
    "ALTER TABLE runs ADD COLUMN oversubscribed INTEGER;"
    "ALTER TABLE epochs ADD COLUMN sim_wall_s REAL;"
    "ALTER TABLE epochs ADD COLUMN sim_throughput REAL;"
    "ALTER TABLE stage_stats ADD COLUMN f_s REAL;"
    "ALTER TABLE stage_stats ADD COLUMN b_s REAL;"
    "ALTER TABLE stage_stats ADD COLUMN u_s REAL;"
    "ALTER TABLE stage_stats ADD COLUMN sim_bubble REAL;"
    "UPDATE schema_version SET version = 3;";

/* Schema version 3 → 4: equal footing (samples per update, updates per epoch) and the
 * partition's cut of each run; older runs keep NULL there. */
static const char pb_results_migrate_v3_sql[] =
    "ALTER TABLE runs ADD COLUMN samples_per_update INTEGER;"
    "ALTER TABLE runs ADD COLUMN updates_per_epoch INTEGER;"
    "ALTER TABLE runs ADD COLUMN partition_cut TEXT;"
    "UPDATE schema_version SET version = 4;";

/* Schema version 4 → 5: the repeat index of each run (--repeat N); older runs are the
 * first training of their configuration and seed. */
static const char pb_results_migrate_v4_sql[] =
    "ALTER TABLE runs ADD COLUMN repeat INTEGER NOT NULL DEFAULT 0;"
    "UPDATE schema_version SET version = 5;";

/* Schema version 5 → 6: a translation model's validation BLEU per epoch; older epochs
 * keep NULL there. */
static const char pb_results_migrate_v5_sql[] =
    "ALTER TABLE epochs ADD COLUMN val_bleu REAL;"
    "UPDATE schema_version SET version = 6;";

/* Schema version 6 → 7: how a run's validation BLEU is scored ('detok-raw': detokenised
 * against the raw reference, the MLPerf GNMT reference's way; 'bpe-merged': BPE-merged
 * text of ids on both sides). Older runs keep NULL: their BLEU, if any, was BPE-merged. */
static const char pb_results_migrate_v6_sql[] =
    "ALTER TABLE runs ADD COLUMN bleu_scoring TEXT;"
    "UPDATE runs SET bleu_scoring = 'bpe-merged' WHERE id IN "
    "(SELECT DISTINCT run_id FROM epochs WHERE val_bleu IS NOT NULL);"
    "UPDATE schema_version SET version = 7;";

/* Schema version 7 → 8: events of the split backward's I and W ops (semantics §4.10);
 * SQLite cannot alter a CHECK, so the table is rebuilt with its rows. */
static const char pb_results_migrate_v7_sql[] =
    "CREATE TABLE events_v8 ("
    " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " epoch INTEGER NOT NULL, device INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " kind TEXT NOT NULL CHECK (kind IN ('F', 'B', 'U', 'I', 'W')),"
    " mb INTEGER, version INTEGER, ahead INTEGER, sync_version INTEGER,"
    " start_s REAL, end_s REAL,"
    " PRIMARY KEY (run_id, epoch, device, seq),"
    " FOREIGN KEY (run_id, epoch) REFERENCES epochs(run_id, epoch) ON DELETE CASCADE);"
    "INSERT INTO events_v8 SELECT run_id, epoch, device, seq, kind, mb, version, ahead, "
    "sync_version, start_s, end_s FROM events;"
    "DROP TABLE events;"
    "ALTER TABLE events_v8 RENAME TO events;"
    "UPDATE schema_version SET version = 8;";

/* Schema version 8 → 9: the configuration JSON records the seed as an integer where a
 * double holds it exactly (up to 2^53), no longer as a string, so JSON readers compare
 * and sort it as a number. A run's identity is its configuration's JSON (finished,
 * claimed and resumed runs are found by it), so every recorded configuration is
 * rewritten to the form new runs record: the seed's value replaced in place (json_set
 * keeps the keys' order), a seed above 2^53 left a string as new runs record it too. */
static const char pb_results_migrate_v8_sql[] =
    "UPDATE runs SET config = json_set(config, '$.seed', "
    "CAST(json_extract(config, '$.seed') AS INTEGER)) "
    "WHERE json_valid(config) AND json_type(config, '$.seed') = 'text' "
    "AND json_extract(config, '$.seed') NOT GLOB '*[^0-9]*' "
    "AND length(json_extract(config, '$.seed')) BETWEEN 1 AND 16 "
    "AND CAST(json_extract(config, '$.seed') AS INTEGER) <= 9007199254740992;"
    "UPDATE schema_version SET version = 9;";

/* Schema version 9 → 10: DualPipeV's overlapped pairs in the events (1 on the F, 2 on its
 * B); rows recorded before keep NULL there: whether they were paired was not recorded. */
static const char pb_results_migrate_v9_sql[] =
    "ALTER TABLE events ADD COLUMN pair INTEGER;"
    "UPDATE schema_version SET version = 10;";

/* Applies the schema to an empty file (create), upgrades a version 2 to 9 file it may
 * write, and checks the version. */
static int check_schema(struct pb_results *r, int create, struct pb_err *e)
{
    sqlite3_stmt *s = NULL;
    if (create && sqlite3_exec(r->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    int tables = 0, has_version = 0, version = -1;
    if (sqlite3_prepare_v2(r->db, "SELECT name FROM sqlite_schema WHERE type = 'table'", -1, &s,
                           NULL) != SQLITE_OK)
        goto fail;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        tables++;
        has_version |= !strcmp((const char *)sqlite3_column_text(s, 0), "schema_version");
    }
    sqlite3_finalize(s);
    s = NULL;
    if (rc != SQLITE_DONE)
        goto fail;
    if (!has_version) {
        if (tables > 0 || !create) {
            rollback(r);
            return pb_err_set(e, "%s is %s, not a pipebench results database (it has no "
                              "schema_version table); pass --db with another file", r->path,
                              tables ? "an SQLite database" : "empty");
        }
        if (exec(r, pb_results_schema_sql, "creating the schema", e))
            goto fail_set;
    }
    if (sqlite3_prepare_v2(r->db, "SELECT max(version) FROM schema_version", -1, &s, NULL) !=
            SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW)
        goto fail;
    version = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    s = NULL;
    /* an upgrade changes the tables the reporting views read: they are written anew
     * after it (pb_results_persist_views) */
    if (version >= 2 && version < PB_RESULTS_SCHEMA_VERSION && create &&
        pb_results_drop_views(r, e))
        goto fail_set;
    if (version == 2 && create) {
        if (exec(r, pb_results_migrate_v2_sql, "upgrading the schema from version 2", e))
            goto fail_set;
        version = 3;
    }
    if (version == 3 && create) {
        if (exec(r, pb_results_migrate_v3_sql, "upgrading the schema from version 3", e))
            goto fail_set;
        version = 4;
    }
    if (version == 4 && create) {
        if (exec(r, pb_results_migrate_v4_sql, "upgrading the schema from version 4", e))
            goto fail_set;
        version = 5;
    }
    if (version == 5 && create) {
        if (exec(r, pb_results_migrate_v5_sql, "upgrading the schema from version 5", e))
            goto fail_set;
        version = 6;
    }
    if (version == 6 && create) {
        if (exec(r, pb_results_migrate_v6_sql, "upgrading the schema from version 6", e))
            goto fail_set;
        version = 7;
    }
    if (version == 7 && create) {
        if (exec(r, pb_results_migrate_v7_sql, "upgrading the schema from version 7", e))
            goto fail_set;
        version = 8;
    }
    if (version == 8 && create) {
        if (exec(r, pb_results_migrate_v8_sql, "upgrading the schema from version 8", e))
            goto fail_set;
        version = 9;
    }
    if (version == 9 && create) {
        if (exec(r, pb_results_migrate_v9_sql, "upgrading the schema from version 9", e))
            goto fail_set;
        version = PB_RESULTS_SCHEMA_VERSION;
    }
    if (version != PB_RESULTS_SCHEMA_VERSION) {
        rollback(r);
        if (version >= 2 && version < PB_RESULTS_SCHEMA_VERSION)
            return pb_err_set(e, "results database %s has schema version %d, written by an "
                              "older pipebench; a command that writes to it (run, compare, "
                              "sweep) upgrades it in place to version %d", r->path, version,
                              PB_RESULTS_SCHEMA_VERSION);
        if (version > PB_RESULTS_SCHEMA_VERSION)
            return pb_err_set(e, "results database %s has schema version %d, newer than the "
                              "version %d this pipebench knows; use a newer pipebench or pass "
                              "--db with another file", r->path, version,
                              PB_RESULTS_SCHEMA_VERSION);
        return pb_err_set(e, "results database %s has schema version %d, which this pipebench "
                          "(version %d) cannot read; pass --db with another file", r->path,
                          version, PB_RESULTS_SCHEMA_VERSION);
    }
    if (create && exec(r, "COMMIT", "committing the schema", e))
        goto fail_set;
    return 0;
fail:
    if ((sqlite3_errcode(r->db) & 0xff) == SQLITE_BUSY ||
        (sqlite3_errcode(r->db) & 0xff) == SQLITE_LOCKED)
        pb_err_set(e, "results database %s is locked by another process, which kept it for %d "
                   "s; run again when that process is done (the file itself is fine)", r->path,
                   r->busy_ms / 1000);
    else if ((sqlite3_errcode(r->db) & 0xff) == SQLITE_READONLY)
        pb_err_set(e, "results database %s is read-only: a run needs a writable --db (reports "
                   "and `pipebench runs` can read this one)", r->path);
    else
        pb_err_set(e, "cannot use %s as a results database: %s; pass --db with a pipebench "
                   "results database or a new file", r->path, sqlite3_errmsg(r->db));
fail_set:
    sqlite3_finalize(s);
    rollback(r);
    return -1;
}

/* WAL lets readers and one writer of parallel runs proceed together; it persists in
 * the file. Two processes opening a new database at once can find each other's lock
 * here, where SQLite returns SQLITE_BUSY at once rather than wait (a deadlock it
 * avoids), so this retries for the busy timeout itself. */
static int set_wal(struct pb_results *r, struct pb_err *e)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(r->db, "PRAGMA journal_mode = WAL", -1, &s, NULL);
    for (int waited = 0; rc == SQLITE_OK; waited += 10) {
        rc = sqlite3_step(s);
        if ((rc & 0xff) != SQLITE_BUSY || waited >= BUSY_TIMEOUT_MS)
            break;
        sqlite3_reset(s);
        rc = SQLITE_OK;
        struct timespec ten_ms = {0, 10 * 1000 * 1000};
        nanosleep(&ten_ms, NULL);
    }
    if (rc != SQLITE_ROW) {
        db_fail(r, "setting WAL mode", e);
        sqlite3_finalize(s);
        return -1;
    }
    char mode[32];
    snprintf(mode, sizeof mode, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    if (strcmp(mode, "wal"))
        return pb_err_set(e, "results database %s: cannot use WAL mode (the journal stays "
                          "'%s'); put the database on a local file system", r->path, mode);
    return 0;
}

/* Whether this process could write the database: the file and its folder (WAL
 * creates -wal and -shm files beside it). */
static bool writable(const char *path)
{
    if (access(path, W_OK) != 0)
        return false;
    char *dir = pb_xstrdup(path);
    char *slash = strrchr(dir, '/');
    bool ok = access(slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".", W_OK) == 0;
    free(dir);
    return ok;
}

/* "file:PATH?immutable=1" with %, ? and # escaped. */
static char *immutable_uri(const char *path)
{
    size_t n = strlen(path);
    char *u = pb_xmalloc(3 * n + 32), *p = u;
    p += sprintf(p, "file:");
    for (const char *s = path; *s; s++)
        p += (*s == '%' || *s == '?' || *s == '#') ? sprintf(p, "%%%02X", (unsigned char)*s)
                                                   : sprintf(p, "%c", *s);
    sprintf(p, "?immutable=1");
    return u;
}

int pb_results_check_writable(const char *path, struct pb_err *e)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && !writable(path))
        return pb_err_set(e, "results database %s is read-only: a run needs a writable --db "
                             "(reports and `pipebench runs` can read this one)", path);
    return 0;
}

static int open_db(struct pb_results **out, const char *path, int create, struct pb_err *e)
{
    *out = NULL;
    struct stat st;
    if (create) {
        if (make_parent(path, e))
            return -1;
        if (pb_results_check_writable(path, e))
            return -1;
    } else if (stat(path, &st) != 0) {
        return pb_err_set(e, "no results database at %s (%s); pass --db FILE, or record runs "
                          "there first with `pipebench run`", path, strerror(errno));
    } else if (S_ISREG(st.st_mode) && st.st_size == 0 && writable(path)) {
        create = 1;   /* left empty by a run killed before its schema commit: a new database */
    }
    struct pb_results *r = pb_xcalloc(1, sizeof *r);
    r->path = pb_xstrdup(path);
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    char *uri = NULL;
    if (!create && !writable(path)) {
        /* read-only media or permissions: nobody writes it, so read it as immutable (a
         * WAL database cannot be opened read-only otherwise: its -shm must be writable) */
        uri = immutable_uri(path);
        flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
    }
    int orc = sqlite3_open_v2(uri ? uri : path, &r->db, flags, NULL);
    free(uri);
    if (orc != SQLITE_OK) {
        int err = r->db ? sqlite3_system_errno(r->db) : 0;
        pb_err_set(e, "cannot open the results database %s: %s%s%s; pass --db with a writable "
                   "path", path, r->db ? sqlite3_errmsg(r->db) : "out of memory",
                   err ? ": " : "", err ? strerror(err) : "");
        pb_results_close(r);
        return -1;
    }
    sqlite3_extended_result_codes(r->db, 1);
    set_busy(r, BUSY_TIMEOUT_MS);
    if (exec(r, "PRAGMA foreign_keys = ON", "enabling foreign keys", e))
        goto fail;
    if (check_schema(r, create, e))
        goto fail;
    if (create && set_wal(r, e))
        goto fail;
    if (create && pb_results_persist_views(r, e))
        goto fail;
    /* runs whose process died show as failed from the first open after, a reading one
     * included; a reader that cannot take the write lock reads on (the next open marks
     * them) */
    if (flags & SQLITE_OPEN_READWRITE) {
        struct pb_err ignored;
        if (!create)
            set_busy(r, READER_MARK_TIMEOUT_MS);
        if (pb_results_mark_orphans(r, create ? e : &ignored) < 0 && create)
            goto fail;
        set_busy(r, BUSY_TIMEOUT_MS);
    }
    *out = r;
    return 0;
fail:
    pb_results_close(r);
    return -1;
}

int pb_results_open(struct pb_results **out, const char *path, struct pb_err *e)
{
    return open_db(out, path, 1, e);
}

int pb_results_open_existing(struct pb_results **out, const char *path, struct pb_err *e)
{
    return open_db(out, path, 0, e);
}

void pb_results_close(struct pb_results *r)
{
    if (!r)
        return;
    sqlite3_close_v2(r->db);
    free(r->path);
    free(r);
}

struct sqlite3 *pb_results_sqlite(struct pb_results *r)
{
    return r->db;
}

const char *pb_results_path(const struct pb_results *r)
{
    return r->path;
}

int64_t pb_results_run_begin(struct pb_results *r, const struct pb_run_info *info,
                             struct pb_err *e)
{
    static const char sql[] =
        "INSERT INTO runs (created, status, config, model, dataset, schedule, variant, "
        "optimizer, executor, stages, microbatch_size, microbatches, epochs, seed, lr, "
        "git_revision, cpu_model, library_versions, host, pid, cores, threads_per_stage, "
        "load_avg, oversubscribed, samples_per_update, updates_per_epoch, partition_cut, "
        "repeat, bleu_scoring) VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    char now[32], cpu[256], libs[256], host[256];
    now_iso(now);
    pb_env_cpu_model(cpu, sizeof cpu);
    pb_env_library_versions(info->backend_libraries, libs, sizeof libs);
    pb_env_host(host, sizeof host);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &s, NULL) != SQLITE_OK)
        return db_fail(r, "recording a new run", e);
    int i = 1;
    bind_text(s, i++, now);
    bind_text(s, i++, info->config_json);
    bind_text(s, i++, info->model);
    bind_text(s, i++, info->dataset);
    bind_text(s, i++, info->schedule);
    bind_text(s, i++, info->variant);
    bind_text(s, i++, info->optimizer);
    bind_text(s, i++, info->executor);
    sqlite3_bind_int(s, i++, info->stages);
    sqlite3_bind_int(s, i++, info->microbatch_size);
    sqlite3_bind_int(s, i++, info->microbatches);
    sqlite3_bind_int(s, i++, info->epochs);
    sqlite3_bind_int64(s, i++, (sqlite3_int64)info->seed);
    bind_real(s, i++, info->lr);
    bind_text(s, i++, pb_env_git_revision());
    bind_text(s, i++, cpu);
    bind_text(s, i++, libs);
    bind_text(s, i++, host);
    sqlite3_bind_int64(s, i++, (sqlite3_int64)getpid());
    if (info->cores > 0) {
        sqlite3_bind_int(s, i++, info->cores);
        sqlite3_bind_int(s, i++, info->threads_per_stage);
        bind_real(s, i++, info->load_avg);
        sqlite3_bind_int(s, i++, info->oversubscribed);
    } else {
        i += 4;
    }
    if (info->samples_per_update > 0)
        sqlite3_bind_int(s, i, info->samples_per_update);
    if (info->updates_per_epoch > 0)
        sqlite3_bind_int(s, i + 1, info->updates_per_epoch);
    bind_text(s, i + 2, info->partition_cut);
    sqlite3_bind_int(s, i + 3, info->repeat);
    bind_text(s, i + 4, info->bleu_scoring);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return db_fail(r, "recording a new run", e);
    return (int64_t)sqlite3_last_insert_rowid(r->db);
}

/* Runs a one-row UPDATE of runs: a, b, c fill its first parameters, run_id the last;
 * a missing run is an error. */
static int update_run(struct pb_results *r, int64_t run_id, const char *sql, const char *a,
                      const char *b, const char *c, const char *what, struct pb_err *e)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &s, NULL) != SQLITE_OK)
        return db_fail(r, what, e);
    int n = sqlite3_bind_parameter_count(s);
    const char *v[3] = {a, b, c};
    for (int i = 1; i < n; i++)
        bind_text(s, i, v[i - 1]);
    sqlite3_bind_int64(s, n, run_id);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return db_fail(r, what, e);
    if (sqlite3_changes(r->db) != 1)
        return pb_err_set(e, "results database %s: %s: there is no run %lld", r->path, what,
                          (long long)run_id);
    return 0;
}

int pb_results_run_so_far(struct pb_results *r, int64_t run_id, double *seconds,
                          double *best_acc, struct pb_err *e)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(r->db, "SELECT coalesce(sum(wall_s), 0), coalesce(max(val_acc), 0) "
                           "FROM epochs WHERE run_id = ?", -1, &s, NULL) != SQLITE_OK)
        return db_fail(r, "reading a run's epochs", e);
    sqlite3_bind_int64(s, 1, run_id);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *seconds = sqlite3_column_double(s, 0);
        *best_acc = sqlite3_column_double(s, 1);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 0 : db_fail(r, "reading a run's epochs", e);
}

int pb_results_run_resume(struct pb_results *r, int64_t run_id, int first_epoch,
                          struct pb_err *e)
{
    sqlite3_stmt *s = NULL;
    if (exec(r, "BEGIN IMMEDIATE", "resuming a run", e))
        return -1;
    int rc = -1;
    if (sqlite3_prepare_v2(r->db, "SELECT status FROM runs WHERE id = ?", -1, &s, NULL) !=
        SQLITE_OK) {
        db_fail(r, "resuming a run", e);
        goto out;
    }
    sqlite3_bind_int64(s, 1, run_id);
    if (sqlite3_step(s) != SQLITE_ROW) {
        pb_err_set(e, "there is no run %lld in %s (`pipebench runs` lists them)",
                   (long long)run_id, r->path);
        goto out;
    }
    const char *st = (const char *)sqlite3_column_text(s, 0);
    if (!strcmp(st, "done") || !strcmp(st, "running") || !strcmp(st, "diverged")) {
        pb_err_set(e, "run %lld is %s: only an interrupted or failed run can be resumed%s",
                   (long long)run_id, st, !strcmp(st, "running") ? " (is it still running?)" : "");
        goto out;
    }
    sqlite3_finalize(s);
    s = NULL;
    if (sqlite3_prepare_v2(r->db, "DELETE FROM epochs WHERE run_id = ? AND epoch >= ?", -1, &s,
                           NULL) != SQLITE_OK) {
        db_fail(r, "resuming a run", e);
        goto out;
    }
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int(s, 2, first_epoch);
    if (sqlite3_step(s) != SQLITE_DONE) {
        db_fail(r, "resuming a run", e);
        goto out;
    }
    sqlite3_finalize(s);
    s = NULL;
    if (sqlite3_prepare_v2(r->db, "UPDATE runs SET status = 'running', ended = NULL, message = "
                           "NULL, pid = ? WHERE id = ?", -1, &s, NULL) != SQLITE_OK) {
        db_fail(r, "resuming a run", e);
        goto out;
    }
    sqlite3_bind_int64(s, 1, (sqlite3_int64)getpid());
    sqlite3_bind_int64(s, 2, run_id);
    if (sqlite3_step(s) != SQLITE_DONE) {
        db_fail(r, "resuming a run", e);
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(s);
    if (rc)
        rollback(r);
    else if (exec(r, "COMMIT", "resuming a run", e))
        rc = -1;
    return rc;
}

int pb_results_run_started(struct pb_results *r, int64_t run_id, struct pb_err *e)
{
    char now[32];
    now_iso(now);
    return update_run(r, run_id, "UPDATE runs SET started = ? WHERE id = ?", now, NULL, NULL,
                      "recording the start of training", e);
}

int pb_results_run_end(struct pb_results *r, int64_t run_id, enum pb_run_status status,
                       const char *message, struct pb_err *e)
{
    PB_CHECK(status >= 0 && status < PB_RUN_NSTATUS);
    char now[32];
    now_iso(now);
    return update_run(r, run_id, "UPDATE runs SET status = ?, ended = ?, message = ? WHERE id = ?",
                      pb_run_status_names[status], now, message, "recording the end of a run", e);
}

static int write_stages(struct pb_results *r, int64_t run_id, const struct pb_epoch_record *rec)
{
    static const char stats_sql[] =
        "INSERT INTO stage_stats (run_id, epoch, stage, busy_s, wait_s, comm_s, bubble_frac, "
        "mem_params, mem_grads, mem_optstate, mem_wcopies, mem_acts, mem_comm, mem_scratch, "
        "mem_bnstats, mem_host, versions_kept, f_s, b_s, u_s, sim_bubble) VALUES (?, ?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    static const char stale_sql[] =
        "INSERT INTO staleness (run_id, epoch, stage, f_mean, f_max, b_mean, b_max, "
        "pred_err_mean, pred_err_max, pred_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    sqlite3_stmt *st = NULL, *sl = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(r->db, stats_sql, -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db, stale_sql, -1, &sl, NULL) != SQLITE_OK)
        goto out;
    for (int k = 0; k < rec->nstages; k++) {
        const struct pb_stage_record *g = &rec->stages[k];
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int(st, 2, rec->epoch);
        sqlite3_bind_int(st, 3, k);
        bind_real(st, 4, g->busy_s);
        bind_real(st, 5, g->wait_s);
        bind_real(st, 6, g->comm_s);
        bind_real(st, 7, g->bubble_frac);
        for (int m = 0; m < PB_MEM_NKINDS; m++)
            if (g->mem_peak[m] >= 0)
                sqlite3_bind_int64(st, 8 + m, g->mem_peak[m]);
            else
                sqlite3_bind_null(st, 8 + m);
        if (g->versions_kept >= 0)
            sqlite3_bind_int(st, 8 + PB_MEM_NKINDS, g->versions_kept);
        else
            sqlite3_bind_null(st, 8 + PB_MEM_NKINDS);
        for (int o = 0; o < 3; o++)
            bind_real(st, 9 + PB_MEM_NKINDS + o, g->op_s[o]);
        bind_real(st, 12 + PB_MEM_NKINDS, g->sim_bubble);
        if (sqlite3_step(st) != SQLITE_DONE)
            goto out;
        sqlite3_reset(sl);
        sqlite3_bind_int64(sl, 1, run_id);
        sqlite3_bind_int(sl, 2, rec->epoch);
        sqlite3_bind_int(sl, 3, k);
        bind_real(sl, 4, g->f_mean);
        bind_real(sl, 5, g->f_max);
        bind_real(sl, 6, g->b_mean);
        bind_real(sl, 7, g->b_max);
        bind_real(sl, 8, g->pred_count ? g->pred_err_mean : NAN);
        bind_real(sl, 9, g->pred_count ? g->pred_err_max : NAN);
        sqlite3_bind_int64(sl, 10, g->pred_count);
        if (sqlite3_step(sl) != SQLITE_DONE)
            goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(st);
    sqlite3_finalize(sl);
    return rc;
}

static int write_events(struct pb_results *r, int64_t run_id, const struct pb_epoch_record *rec)
{
    static const char sql[] =
        "INSERT INTO events (run_id, epoch, device, seq, kind, mb, version, ahead, start_s, "
        "end_s, sync_version, pair) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &s, NULL) != SQLITE_OK)
        return -1;
    int rc = 0;
    for (int i = 0; i < rec->nevents && rc == 0; i++) {
        const struct pb_event_record *v = &rec->events[i];
        char kind[2] = {v->kind, '\0'};
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, run_id);
        sqlite3_bind_int(s, 2, rec->epoch);
        sqlite3_bind_int(s, 3, v->device);
        sqlite3_bind_int(s, 4, v->seq);
        sqlite3_bind_text(s, 5, kind, -1, SQLITE_TRANSIENT);
        if (v->mb >= 0)
            sqlite3_bind_int(s, 6, v->mb);
        else
            sqlite3_bind_null(s, 6);
        sqlite3_bind_int(s, 7, v->version);
        sqlite3_bind_int(s, 8, v->ahead);
        bind_real(s, 9, v->start_s);
        bind_real(s, 10, v->end_s);
        sqlite3_bind_int(s, 11, v->sync_version);
        sqlite3_bind_int(s, 12, v->pair);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
    }
    sqlite3_finalize(s);
    return rc;
}

int pb_results_epoch(struct pb_results *r, int64_t run_id, const struct pb_epoch_record *rec,
                     struct pb_err *e)
{
    PB_CHECK(rec->nstages >= 0 && (rec->nstages == 0 || rec->stages));
    PB_CHECK(rec->nevents >= 0 && (rec->nevents == 0 || rec->events));
    static const char sql[] =
        "INSERT INTO epochs (run_id, epoch, train_loss, val_loss, val_acc, samples, wall_s, "
        "throughput, lr, ops, events_kept, sim_wall_s, sim_throughput, val_bleu) VALUES (?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    char what[96];
    snprintf(what, sizeof what, "writing epoch %d of run %lld", rec->epoch + 1, (long long)run_id);
    if (exec(r, "BEGIN IMMEDIATE", what, e))
        return -1;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &s, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int(s, 2, rec->epoch);
    bind_real(s, 3, rec->train_loss);
    bind_real(s, 4, rec->val_loss);
    bind_real(s, 5, rec->val_acc);
    sqlite3_bind_int64(s, 6, rec->samples);
    bind_real(s, 7, rec->wall_s);
    bind_real(s, 8, rec->throughput);
    bind_real(s, 9, rec->lr);
    sqlite3_bind_int64(s, 10, rec->ops);
    sqlite3_bind_int(s, 11, rec->nevents);
    bind_real(s, 12, rec->sim_wall_s);
    bind_real(s, 13, rec->sim_throughput);
    if (rec->has_bleu)
        bind_real(s, 14, rec->val_bleu);
    else
        sqlite3_bind_null(s, 14);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE || write_stages(r, run_id, rec) || write_events(r, run_id, rec))
        goto fail;
    if (sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    return 0;
fail:
    db_fail(r, what, e);
    rollback(r);
    return -1;
}

/* Whether process pid still runs: it exists, is not a zombie (a dead child whose parent,
 * a sweep, has not reaped it yet; kill(pid, 0) succeeds on those), and is not dying: in
 * its exit already (PF_EXITING in /proc/PID/stat's flags) or with a SIGKILL pending. The
 * last two are the rank of a killed MPI job that mpirun leaves behind as it returns: it
 * still runs for a few milliseconds, and the next open must see it gone. */
static bool process_alive(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return false;
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;  /* no /proc: trust kill */
    bool alive = true;
    if (fgets(line, sizeof line, f)) {
        const char *paren = strrchr(line, ')');  /* "pid (comm) state ppid pgrp ... flags" */
        char state = 0;
        unsigned long flags = 0;
        if (paren && sscanf(paren + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) == 2)
            alive = state != 'Z' && state != 'X' && !(flags & 0x4);   /* PF_EXITING */
    }
    fclose(f);
    snprintf(path, sizeof path, "/proc/%lld/status", (long long)pid);
    f = alive ? fopen(path, "r") : NULL;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long mask;
        bool pending = sscanf(line, "SigPnd: %llx", &mask) == 1 ||
                       sscanf(line, "ShdPnd: %llx", &mask) == 1;
        if (pending && (mask & (1ULL << (SIGKILL - 1))))
            alive = false;
    }
    if (f)
        fclose(f);
    return alive;
}

/* The runs still 'running' on this host whose process is gone: ids[i], pids[i]; n. */
static int find_orphans(struct pb_results *r, sqlite3_int64 **ids, sqlite3_int64 **pids,
                        struct pb_err *e)
{
    char host[256];
    pb_env_host(host, sizeof host);
    sqlite3_stmt *q = NULL;
    *ids = *pids = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT id, pid FROM runs WHERE status = 'running' AND "
                           "host = ? AND pid IS NOT NULL", -1, &q, NULL) != SQLITE_OK)
        return db_fail(r, "looking for crashed runs", e);
    bind_text(q, 1, host);
    int n = 0, cap = 0, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        sqlite3_int64 id = sqlite3_column_int64(q, 0), pid = sqlite3_column_int64(q, 1);
        if (pid <= 0 || pid > INT32_MAX || process_alive((pid_t)pid))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            sqlite3_int64 *gi = realloc(*ids, (size_t)cap * sizeof *gi);
            PB_CHECK(gi != NULL);
            *ids = gi;
            sqlite3_int64 *gp = realloc(*pids, (size_t)cap * sizeof *gp);
            PB_CHECK(gp != NULL);
            *pids = gp;
        }
        (*ids)[n] = id;
        (*pids)[n++] = pid;
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        free(*ids);
        free(*pids);
        *ids = *pids = NULL;
        return db_fail(r, "looking for crashed runs", e);
    }
    return n;
}

int pb_results_mark_orphans(struct pb_results *r, struct pb_err *e)
{
    sqlite3_int64 *ids, *pids;
    int n = find_orphans(r, &ids, &pids, e);
    if (n <= 0)
        return n;   /* nothing to mark: no write, no lock */
    char now[32];
    now_iso(now);
    sqlite3_stmt *u = NULL;
    int marked = 0;
    if (exec(r, "BEGIN IMMEDIATE", "marking crashed runs", e)) {
        free(ids);
        free(pids);
        return -1;
    }
    /* the row's status and pid again: a resume may have taken it up meanwhile */
    if (sqlite3_prepare_v2(r->db, "UPDATE runs SET status = 'failed', ended = ?, message = ? "
                           "WHERE id = ? AND pid = ? AND status = 'running'", -1, &u, NULL) !=
        SQLITE_OK)
        goto fail;
    for (int i = 0; i < n; i++) {
        char msg[160];
        snprintf(msg, sizeof msg, "the process (pid %lld) ended without finishing the run "
                 "(crashed or killed)", (long long)pids[i]);
        sqlite3_reset(u);
        bind_text(u, 1, now);
        bind_text(u, 2, msg);
        sqlite3_bind_int64(u, 3, ids[i]);
        sqlite3_bind_int64(u, 4, pids[i]);
        if (sqlite3_step(u) != SQLITE_DONE)
            goto fail;
        marked += sqlite3_changes(r->db);
    }
    sqlite3_finalize(u);
    u = NULL;
    if (sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    free(ids);
    free(pids);
    return marked;
fail:
    db_fail(r, "marking crashed runs", e);
    sqlite3_finalize(u);
    rollback(r);
    free(ids);
    free(pids);
    return -1;
}
