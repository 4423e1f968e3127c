/* harness/driver/claim.c — configuration claims (claim.h). The lock is taken first and the
 * database read under it, so a configuration another sweep has just finished (its run
 * recorded done before its process, and so its lock, ended) is seen as finished. */
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

/* FNV-1a, 64 bits. */
static uint64_t hash64(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* Whether the database at c->db holds a done or diverged run of c's configuration (a
 * missing database holds none). */
static int finished(const struct pb_run_cfg *c, const char *json, bool *done, struct pb_err *e)
{
    *done = false;
    if (access(c->db, F_OK) != 0)
        return 0;
    struct pb_results *r;
    if (pb_results_open_existing(&r, c->db, e))
        return -1;
    sqlite3 *db = pb_results_sqlite(r);
    sqlite3_stmt *q = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM runs WHERE status IN ('done', 'diverged') "
                           "AND config IS NOT NULL AND json_remove(config, '$.threads') = "
                           "json_remove(?1, '$.threads')", -1, &q, NULL) != SQLITE_OK) {
        rc = pb_err_set(e, "reading the results database %s: %s", c->db, sqlite3_errmsg(db));
    } else {
        sqlite3_bind_text(q, 1, json, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(q) == SQLITE_ROW)
            *done = sqlite3_column_int(q, 0) > 0;
        else
            rc = pb_err_set(e, "reading the results database %s: %s", c->db,
                            sqlite3_errmsg(db));
    }
    sqlite3_finalize(q);
    pb_results_close(r);
    return rc;
}

int pb_claim_take(const struct pb_run_cfg *c, int *fd, struct pb_err *e)
{
    *fd = -1;
    char path[4096];
    if (snprintf(path, sizeof path, "%s.claims", c->db) >= (int)sizeof path)
        return pb_err_set(e, "results database path is too long: %s", c->db);
    struct pb_run_cfg key = *c;
    key.threads = 0;   /* the thread count is no part of a configuration */
    char *json = pb_run_cfg_json(&key);
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
        .l_start = (off_t)(hash64(json) & ((UINT64_C(1) << 62) - 1)),
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
    rc = finished(c, json, &done, e);
    free(json);
    if (rc || done) {
        close(f);
        return rc ? -1 : PB_CLAIM_FINISHED;
    }
    *fd = f;
    return PB_CLAIM_TAKEN;
}
