/* plots/report_db.c — the reporting connection (report_db.h): the results database
 * opened existing plus the TEMP views of results/views.sql and their target accuracy,
 * the registry order of schedule columns (schedules/registry.c) and the default run. */
#include "plots/report_db.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "harness/base/args.h"

#include "harness/ir/program.h"
#include "results/results_sim.h"
#include "schedules/registry.h"

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
    if (pb_results_sim_functions(*out, e)) {
        pb_results_close(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* Checks "KEY=VALUE" and that some run records KEY; *eq is the '=' in it. */
static int where_key(sqlite3 *d, const char *path, const char *kv, const char **eq,
                     struct pb_err *e)
{
    *eq = strchr(kv, '=');
    size_t klen = *eq ? (size_t)(*eq - kv) : 0;
    if (!*eq || klen == 0 || klen > 64 ||
        strspn(kv, "abcdefghijklmnopqrstuvwxyz_0123456789") != klen)
        return pb_err_set(e, "--where wants KEY=VALUE with a configuration key of the runs "
                          "(e.g. --where lr=0.01; `pipebench show RUN` lists them), got '%s'",
                          kv);
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM runs WHERE json_valid(config) AND "
             "json_type(config, '$.%.*s') IS NOT NULL", (int)klen, kv);
    sqlite3_stmt *s = NULL;
    int n = sqlite3_prepare_v2(d, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW
                ? sqlite3_column_int(s, 0) : -1;
    sqlite3_finalize(s);
    if (n <= 0)
        return pb_err_set(e, "--where %s: no run of %s records '%.*s' (`pipebench show RUN` "
                          "lists a run's configuration keys)", kv, path, (int)klen, kv);
    return 0;
}

int pb_report_select(struct pb_results *db, const struct pb_report_select *sel,
                     struct pb_err *e)
{
    if (!sel || (!sel->experiment && sel->nwhere == 0 && !sel->runs))
        return 0;
    sqlite3 *d = pb_results_sqlite(db);
    const char *path = pb_results_path(db);
    /* SELECT id FROM runs WHERE <experiment> AND <each where> AND id IN (<runs>) */
    char sql[4096];
    int len = snprintf(sql, sizeof sql, "INSERT INTO report_selection SELECT id FROM runs "
                       "WHERE json_valid(config)");
    if (sel->experiment)
        len += snprintf(sql + len, sizeof sql - (size_t)len,
                        " AND json_extract(config, '$.experiment') = ?");
    for (int i = 0; i < sel->nwhere; i++) {
        const char *eq;
        if (where_key(d, path, sel->where[i], &eq, e))
            return -1;
        len += snprintf(sql + len, sizeof sql - (size_t)len, " AND CASE json_type(config, "
                        "'$.%.*s') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE "
                        "CAST(json_extract(config, '$.%.*s') AS TEXT) END = ?",
                        (int)(eq - sel->where[i]), sel->where[i], (int)(eq - sel->where[i]),
                        sel->where[i]);
    }
    if (sel->runs) {
        int ids[256], n = 0;
        if (pb_arg_ints("--runs", sel->runs, ids, 256, &n, e))
            return pb_err_set(e, "--runs wants run ids separated by commas (e.g. --runs 3,4,7; "
                              "at most 256), got '%s'", sel->runs);
        len += snprintf(sql + len, sizeof sql - (size_t)len, " AND id IN (");
        for (int i = 0; i < n; i++)
            len += snprintf(sql + len, sizeof sql - (size_t)len, "%s%d", i ? ", " : "", ids[i]);
        len += snprintf(sql + len, sizeof sql - (size_t)len, ")");
    }
    PB_CHECK(len < (int)sizeof sql);
    sqlite3_stmt *s = NULL;
    bool ok = sqlite3_exec(d, "DELETE FROM report_selection; DELETE FROM report_selecting; "
                           "INSERT INTO report_selecting VALUES (1)", NULL, NULL, NULL) ==
                  SQLITE_OK &&
              sqlite3_prepare_v2(d, sql, -1, &s, NULL) == SQLITE_OK;
    int k = 1;
    if (ok && sel->experiment)
        sqlite3_bind_text(s, k++, sel->experiment, -1, SQLITE_STATIC);
    for (int i = 0; ok && i < sel->nwhere; i++)
        sqlite3_bind_text(s, k++, strchr(sel->where[i], '=') + 1, -1, SQLITE_STATIC);
    ok = ok && sqlite3_step(s) == SQLITE_DONE;
    sqlite3_finalize(s);
    if (!ok)
        return pb_err_set(e, "results database %s: selecting the runs: %s", path,
                          sqlite3_errmsg(d));
    if (sqlite3_changes(d) == 0)
        return pb_err_set(e, "no run of %s matches the selection (--experiment, --where, "
                          "--runs); `pipebench runs --db %s` lists them", path, path);
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
