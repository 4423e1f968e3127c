/* harness/driver/claim.c — configuration claims (claim.h). The lock is taken first and the
 * database read under it, so a configuration another sweep has just finished (its run
 * recorded done before its process, and so its lock, ended) is seen as finished, and
 * one it left interrupted is found with its resume state. */
#include "harness/driver/claim.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "results/results.h"

#define FNV_BASIS 1469598103934665603ULL

/* FNV-1a, 64 bits, of s continuing from h (FNV_BASIS to start). */
static uint64_t hash64(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* The first column of q's first row as an int64 (0 when no row); -1 on error. */
static int64_t first_int(sqlite3_stmt *q, const char *json, int col, int64_t *second)
{
    sqlite3_bind_text(q, 1, json, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(q);
    int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(q, col) : 0;
    if (second)
        *second = rc == SQLITE_ROW ? sqlite3_column_int64(q, col + 1) : 0;
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? v : -1;
}

/* Reads the database at c->db (a missing one holds nothing): whether it holds a done or
 * diverged run of c's configuration and repeat, and else the newest interrupted or
 * failed one whose resume state exists (*resume_run, its recorded *threads). */
static int look_up(const struct pb_run_cfg *c, const char *json, bool *done,
                   int64_t *resume_run, int *threads, struct pb_err *e)
{
    *done = false;
    *resume_run = 0;
    if (access(c->db, F_OK) != 0)
        return 0;
    struct pb_results *r;
    if (pb_results_open_existing(&r, c->db, e))
        return -1;
    sqlite3 *db = pb_results_sqlite(r);
    sqlite3_stmt *fin = NULL, *res = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM runs WHERE status IN ('done', 'diverged') "
                           "AND config IS NOT NULL AND json_remove(config, '$.threads') = "
                           "json_remove(?1, '$.threads') AND repeat = ?3", -1, &fin, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT id, coalesce(json_extract(config, '$.threads'), 0) FROM "
                           "runs WHERE status IN ('interrupted', 'failed') AND config IS NOT "
                           "NULL AND json_remove(config, '$.threads') = json_remove(?1, "
                           "'$.threads') AND id < ?2 AND repeat = ?3 ORDER BY id DESC LIMIT 1", -1, &res,
                           NULL) != SQLITE_OK) {
        rc = pb_err_set(e, "reading the results database %s: %s", c->db, sqlite3_errmsg(db));
        goto out;
    }
    sqlite3_bind_int(fin, 3, c->repeat);
    sqlite3_bind_int(res, 3, c->repeat);
    int64_t n = first_int(fin, json, 0, NULL);
    *done = n > 0;
    for (int64_t below = INT64_MAX; n == 0;) {
        int64_t t = 0;
        sqlite3_reset(res);
        sqlite3_bind_int64(res, 2, below);
        int64_t id = first_int(res, json, 0, &t);
        if (id <= 0) {
            n = id;
            break;
        }
        char state[4096];
        pb_run_state_path(c->db, id, state, sizeof state);
        if (access(state, F_OK) == 0) {
            *resume_run = id;
            *threads = (int)t;
            break;
        }
        below = id;
    }
    if (n < 0)
        rc = pb_err_set(e, "reading the results database %s: %s", c->db, sqlite3_errmsg(db));
out:
    sqlite3_finalize(fin);
    sqlite3_finalize(res);
    pb_results_close(r);
    return rc;
}

int pb_claim_take(const struct pb_run_cfg *c, int *fd, int64_t *resume_run, int *threads,
                  struct pb_err *e)
{
    *fd = -1;
    *resume_run = 0;
    char path[4096];
    if (snprintf(path, sizeof path, "%s.claims", c->db) >= (int)sizeof path)
        return pb_err_set(e, "results database path is too long: %s", c->db);
    struct pb_run_cfg key = *c;
    key.threads = 0;   /* the thread count is no part of a configuration */
    char *json = pb_run_cfg_json(&key);
    /* each repeat its own claim: the byte of the configuration's JSON and repeat index */
    char rep[16];
    snprintf(rep, sizeof rep, "#%d", c->repeat);
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (f < 0) {
        int err = errno;
        free(json);
        return pb_err_set(e, "cannot open the sweep's claim file %s: %s; pass --db with a "
                          "writable folder", path, strerror(err));
    }
    struct flock l = {
        .l_type = F_WRLCK,
        .l_whence = SEEK_SET,
        .l_start = (off_t)(hash64(rep, hash64(json, FNV_BASIS)) & ((UINT64_C(1) << 62) - 1)),
        .l_len = 1,
    };
    int rc;
    while ((rc = fcntl(f, F_OFD_SETLK, &l)) != 0 && errno == EINTR)
        ;
    if (rc != 0) {
        int err = errno;
        close(f);
        free(json);
        if (err == EAGAIN || err == EACCES)
            return PB_CLAIM_BUSY;
        return pb_err_set(e, "cannot lock the sweep's claim file %s: %s", path, strerror(err));
    }
    bool done;
    rc = look_up(c, json, &done, resume_run, threads, e);
    free(json);
    if (rc || done) {
        close(f);
        return rc ? -1 : PB_CLAIM_FINISHED;
    }
    *fd = f;
    return PB_CLAIM_TAKEN;
}

int pb_claim_resumable(const struct pb_run_cfg *c, int64_t *resume_run, struct pb_err *e)
{
    struct pb_run_cfg key = *c;
    key.threads = 0;
    char *json = pb_run_cfg_json(&key);
    bool done;
    int threads = 0;
    int rc = look_up(c, json, &done, resume_run, &threads, e);
    free(json);
    if (!rc && done)
        *resume_run = 0;
    return rc;
}
