/* plots/report_db.c — the reporting connection (report_db.h): the results database
 * opened existing plus the TEMP views of results/views.sql and their target accuracy,
 * the registry order of schedule columns (schedules/registry.c) and the default run. */
#include "plots/report_db.h"

#include <sqlite3.h>
#include <string.h>

#include "harness/ir/program.h"

#define RANK_VARIANTS 32   /* rank slots per schedule: default, variants, unknown last */

int pb_report_open(struct pb_results **out, const char *path, struct pb_err *e)
{
    if (pb_results_open_existing(out, path, e))
        return -1;
    char *msg = NULL;
    if (sqlite3_exec(pb_results_sqlite(*out), pb_report_views_sql, NULL, NULL, &msg) !=
        SQLITE_OK) {
        pb_err_set(e, "results database %s: creating the reporting views: %s", path,
                   msg ? msg : "unknown error");
        sqlite3_free(msg);
        pb_results_close(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int pb_report_set_target(struct pb_results *db, double target_acc, struct pb_err *e)
{
    sqlite3 *d = pb_results_sqlite(db);
    sqlite3_stmt *s = NULL;
    int ok = sqlite3_exec(d, "DELETE FROM report_target", NULL, NULL, NULL) == SQLITE_OK;
    if (ok && target_acc > 0) {
        ok = sqlite3_prepare_v2(d, "INSERT INTO report_target (target_acc) VALUES (?)", -1, &s,
                                NULL) == SQLITE_OK;
        if (ok) {
            sqlite3_bind_double(s, 1, target_acc);
            ok = sqlite3_step(s) == SQLITE_DONE;
        }
        sqlite3_finalize(s);
    }
    if (!ok)
        return pb_err_set(e, "results database %s: setting the target accuracy: %s",
                          pb_results_path(db), sqlite3_errmsg(d));
    return 0;
}

int pb_report_require_done(struct pb_results *db, struct pb_err *e)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(pb_results_sqlite(db), "SELECT count(*) FROM runs WHERE status = "
                           "'done'", -1, &s, NULL) != SQLITE_OK)
        return pb_err_set(e, "results database %s: counting the runs: %s", pb_results_path(db),
                          sqlite3_errmsg(pb_results_sqlite(db)));
    int n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
    sqlite3_finalize(s);
    if (n == 0)
        return pb_err_set(e, "results database %s holds no finished run (status 'done'); "
                          "record some with `pipebench run --db %s ...` first",
                          pb_results_path(db), pb_results_path(db));
    return 0;
}

/* Position of v in the comma-separated list (1-based), or 0 when absent. */
static int list_index(const char *list, const char *v)
{
    size_t n = strlen(v);
    int i = 1;
    for (const char *p = list; *p; i++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, v, n))
            return i;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

int pb_report_schedule_rank(const char *schedule, const char *variant)
{
    int i = 0;
    for (; pb_schedules[i]; i++)
        if (schedule && !strcmp(pb_schedules[i]->name, schedule))
            break;
    int v = 0;
    if (variant && *variant) {
        v = pb_schedules[i] ? list_index(pb_schedules[i]->variants, variant) : 0;
        if (v == 0 || v >= RANK_VARIANTS)
            v = RANK_VARIANTS - 1;
    }
    return i * RANK_VARIANTS + v;
}

int64_t pb_report_pick_run(struct pb_results *db, int64_t run_id, struct pb_err *e)
{
    const char *path = pb_results_path(db);
    const char *sql = run_id > 0 ? "SELECT id FROM runs WHERE id = ?"
                                 : "SELECT max(id) FROM runs WHERE status = 'done'";
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(pb_results_sqlite(db), sql, -1, &s, NULL) != SQLITE_OK)
        return pb_err_set(e, "results database %s: finding the run: %s", path,
                          sqlite3_errmsg(pb_results_sqlite(db)));
    if (run_id > 0)
        sqlite3_bind_int64(s, 1, run_id);
    int64_t id = -1;
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        id = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (id > 0)
        return id;
    if (run_id > 0)
        return pb_err_set(e, "there is no run %lld in %s; `pipebench runs --db %s` lists the "
                          "runs", (long long)run_id, path, path);
    return pb_err_set(e, "results database %s holds no finished run (status 'done'); record "
                      "one with `pipebench run --db %s ...` or pass --run ID", path, path);
}
