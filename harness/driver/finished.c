/* harness/driver/finished.c — the finished runs of configurations (finished.h). */
#include "harness/driver/finished.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schedules/registry.h"

/* A configuration x recorded before --devices, with every stage on device 0 as it ran:
 * "devices" appended last, one 0 per stage, as pb_run_cfg_json writes it. */
#define WITH_DEVICES(x)                                                                  \
    "CASE WHEN json_type(" x ", '$.devices') IS NULL THEN json_insert(" x ", '$.devices', " \
    "substr(replace(hex(zeroblob(json_extract(" x ", '$.stages'))), '00', '0,'), 1, "        \
    "2 * json_extract(" x ", '$.stages') - 1)) ELSE " x " END"

/* A finished run: its configuration without the thread count, then a newline and its
 * repeat index (the key), and its id. */
struct fin {
    char *key;
    int64_t id;
};

static int cmp_fin(const void *a, const void *b)
{
    const struct fin *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* The finished runs sorted by configuration, then id; *n of them. */
static struct fin *finished(sqlite3 *db, int *n, struct pb_err *e)
{
    sqlite3_stmt *q;
    *n = 0;
    if (sqlite3_prepare_v2(db, "SELECT json_remove(" WITH_DEVICES("config") ", '$.threads') || "
                           "char(10) || repeat, id FROM runs WHERE status IN ('done', 'diverged') "
                           "AND config IS NOT NULL", -1, &q, NULL)) {
        pb_err_set(e, "reading the results database: %s", sqlite3_errmsg(db));
        return NULL;
    }
    struct fin *out = pb_xcalloc(1, sizeof *out);
    int cap = 1, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap) {
            cap *= 2;
            struct fin *grown = realloc(out, (size_t)cap * sizeof *grown);
            PB_CHECK(grown != NULL);
            out = grown;
        }
        out[*n].key = pb_xstrdup((const char *)sqlite3_column_text(q, 0));
        out[(*n)++].id = sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        pb_err_set(e, "reading the results database: %s", sqlite3_errmsg(db));
        for (int i = 0; i < *n; i++)
            free(out[i].key);
        free(out);
        return NULL;
    }
    qsort(out, (size_t)*n, sizeof *out, cmp_fin);
    return out;
}

/* The latest finished run of configuration c and its repeat (its JSON without the thread
 * count, normalised by SQLite as the stored ones are, and the repeat index), 0 when
 * none. */
static int lookup_one(sqlite3 *db, sqlite3_stmt *norm, const struct pb_run_cfg *c,
                      const struct fin *fin, int nfin, int64_t *id, struct pb_err *e)
{
    char *json = pb_run_cfg_json(c);
    sqlite3_bind_text(norm, 1, json, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(norm, 2, c->repeat);
    free(json);
    if (sqlite3_step(norm) != SQLITE_ROW) {
        sqlite3_reset(norm);
        return pb_err_set(e, "reading the results database: %s", sqlite3_errmsg(db));
    }
    const char *key = (const char *)sqlite3_column_text(norm, 0);
    *id = 0;
    int lo = 0, hi = nfin;   /* the first entry of a key not below `key` */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (strcmp(fin[mid].key, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < nfin && !strcmp(fin[lo].key, key); lo++)
        *id = fin[lo].id;
    sqlite3_reset(norm);
    return 0;
}

/* lookup_one, and for --batch B of a schedule that updates once per micro-batch (the
 * same training as --microbatch-size B) without a run of it, that of the configuration
 * recorded with --microbatch-size B: the runs recorded before run and sweep took
 * --batch by default (semantics §1.5). */
static int lookup(sqlite3 *db, sqlite3_stmt *norm, const struct pb_run_cfg *c,
                  const struct fin *fin, int nfin, int64_t *id, struct pb_err *e)
{
    if (lookup_one(db, norm, c, fin, nfin, id, e))
        return -1;
    if (*id || c->batch <= 0)
        return 0;
    const struct pb_schedule *sch = pb_schedule_find(c->schedule, NULL);
    if (!sch || sch->uses_microbatches)
        return 0;
    struct pb_run_cfg by_size = *c;
    by_size.microbatch_size = c->batch;
    by_size.batch = 0;
    return lookup_one(db, norm, &by_size, fin, nfin, id, e);
}

int pb_finished_runs(const char *path, const struct pb_batch_item *items, int n, int64_t *run_id,
                     bool create, struct pb_err *e)
{
    memset(run_id, 0, (size_t)n * sizeof *run_id);
    if (!create && access(path, F_OK) != 0)
        return 0;
    struct pb_results *r;
    if ((create ? pb_results_open : pb_results_open_existing)(&r, path, e))
        return -1;
    sqlite3 *db = pb_results_sqlite(r);
    int nfin = 0, rc = -1;
    struct fin *fin = NULL;
    sqlite3_stmt *norm = NULL;
    if ((create && pb_results_mark_orphans(r, e) < 0) || !(fin = finished(db, &nfin, e)))
        goto out;
    if (sqlite3_prepare_v2(db, "SELECT json_remove(?1, '$.threads') || char(10) || ?2", -1,
                           &norm, NULL)) {
        pb_err_set(e, "reading the results database: %s", sqlite3_errmsg(db));
        goto out;
    }
    rc = 0;
    for (int i = 0; i < n && !rc; i++)
        rc = lookup(db, norm, &items[i].cfg, fin, nfin, &run_id[i], e);
out:
    sqlite3_finalize(norm);
    for (int i = 0; fin && i < nfin; i++)
        free(fin[i].key);
    free(fin);
    pb_results_close(r);
    return rc;
}
