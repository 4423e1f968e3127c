/* results/results_costs.c — a recorded run's op costs for the simulator: per stage and op
 * kind, the median duration of the ops its events hold, what its pipe was and whether
 * its stages shared cores when they were measured. */
#include <math.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "results/results.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void copy_text(char *dst, size_t cap, sqlite3_stmt *s, int col)
{
    const unsigned char *t = sqlite3_column_text(s, col);
    snprintf(dst, cap, "%s", t ? (const char *)t : "");
}

static int read_run(sqlite3 *db, int64_t id, struct pb_run_costs *c, struct pb_err *e)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db,
        "SELECT r.schedule, coalesce(r.variant, ''), r.optimizer, r.stages, r.microbatches, "
        "r.microbatch_size, r.executor, (SELECT e.samples FROM epochs e WHERE e.run_id = r.id "
        "ORDER BY e.epoch LIMIT 1), CASE WHEN json_valid(r.config) THEN "
        "json_extract(r.config, '$.chunks') END, coalesce(r.oversubscribed, 0) = 1 OR "
        "coalesce(r.load_avg > r.cores, 0) FROM runs r WHERE r.id = ?", -1, &s, NULL);
    if (rc != SQLITE_OK)
        return pb_err_set(e, "reading run %lld: %s", (long long)id, sqlite3_errmsg(db));
    sqlite3_bind_int64(s, 1, id);
    if (sqlite3_step(s) != SQLITE_ROW) {
        sqlite3_finalize(s);
        return pb_err_set(e, "no run %lld in the database (`pipebench runs` lists them)",
                          (long long)id);
    }
    copy_text(c->schedule, sizeof c->schedule, s, 0);
    copy_text(c->variant, sizeof c->variant, s, 1);
    copy_text(c->optimizer, sizeof c->optimizer, s, 2);
    c->stages = sqlite3_column_int(s, 3);
    c->microbatches = sqlite3_column_int(s, 4);
    c->microbatch_size = sqlite3_column_int(s, 5);
    copy_text(c->executor, sizeof c->executor, s, 6);
    int64_t samples = sqlite3_column_int64(s, 7);
    bool no_epoch = sqlite3_column_type(s, 7) == SQLITE_NULL;
    c->chunks = sqlite3_column_int(s, 8) > 1 ? sqlite3_column_int(s, 8) : 1;
    c->contended = sqlite3_column_int(s, 9) != 0;
    sqlite3_finalize(s);
    if (!strcmp(c->executor, "sim"))
        return pb_err_set(e, "run %lld is itself a simulation; pass a measured run",
                          (long long)id);
    if (no_epoch || c->stages < 1 || c->microbatch_size < 1)
        return pb_err_set(e, "run %lld recorded no epoch; pass a run that trained at least "
                          "one", (long long)id);
    c->length = (int)(samples / c->microbatch_size);
    return 0;
}

int pb_results_run_costs(struct pb_results *r, int64_t id, struct pb_run_costs *c,
                         struct pb_err *e)
{
    memset(c, 0, sizeof *c);
    sqlite3 *db = pb_results_sqlite(r);
    if (read_run(db, id, c, e))
        return -1;
    c->op_s = pb_xcalloc((size_t)c->stages * 5, sizeof *c->op_s);
    c->recv_s = pb_xcalloc((size_t)c->stages, sizeof *c->recv_s);
    c->params_bytes = pb_xcalloc((size_t)c->stages, sizeof *c->params_bytes);
    c->acts_bytes = pb_xcalloc((size_t)c->stages, sizeof *c->acts_bytes);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT end_s - start_s FROM events WHERE run_id = ? AND "
                           "device = ? AND kind = ? ORDER BY 1", -1, &s, NULL) != SQLITE_OK)
        goto fail;
    size_t cap = 1024;
    double *d = pb_xmalloc(cap * sizeof *d);
    for (int k = 0; k < c->stages; k++)
        for (int kind = 0; kind < 5; kind++) {
            sqlite3_reset(s);
            sqlite3_bind_int64(s, 1, id);
            sqlite3_bind_int(s, 2, k);
            sqlite3_bind_text(s, 3, (const char[]){"FBUIW"[kind], 0}, 1, SQLITE_TRANSIENT);
            size_t n = 0;
            while (sqlite3_step(s) == SQLITE_ROW) {
                if (n == cap)
                    d = realloc(d, (cap *= 2) * sizeof *d);
                PB_CHECK(d != NULL);
                d[n++] = sqlite3_column_double(s, 0);
            }
            c->nevents += (long)n;
            qsort(d, n, sizeof *d, cmp_double);
            c->op_s[5 * k + kind] = n ? (n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2])) : NAN;
        }
    free(d);
    sqlite3_finalize(s);
    /* a message's receive: the copy time a stage spent per message it received; the
     * stage's peak parameter and activation bytes */
    if (sqlite3_prepare_v2(db, "SELECT stage, avg(comm_s), max(mem_params), max(mem_acts) "
                           "FROM stage_stats WHERE run_id = ? GROUP BY stage", -1, &s,
                           NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(s, 1, id);
    while (sqlite3_step(s) == SQLITE_ROW) {
        int k = sqlite3_column_int(s, 0);
        int msgs = (k > 0 ? c->length : 0) + (k + 1 < c->stages ? c->length : 0);
        if (k >= 0 && k < c->stages && msgs > 0)
            c->recv_s[k] = sqlite3_column_double(s, 1) / msgs;
        if (k >= 0 && k < c->stages) {
            c->params_bytes[k] = sqlite3_column_int64(s, 2);
            c->acts_bytes[k] = sqlite3_column_int64(s, 3);
        }
    }
    sqlite3_finalize(s);
    return 0;
fail:
    pb_err_set(e, "reading run %lld's events: %s", (long long)id, sqlite3_errmsg(db));
    sqlite3_finalize(s);
    pb_run_costs_finish(c);
    return -1;
}

void pb_run_costs_finish(struct pb_run_costs *c)
{
    free(c->op_s);
    free(c->recv_s);
    free(c->params_bytes);
    free(c->acts_bytes);
    memset(c, 0, sizeof *c);
}
