/* results/results_views.c — the reporting views kept in the database itself
 * (pb_results_persist_views), so a user with sqlite3 or pandas reads the metrics the
 * reports print. They are results/views.sql's, made persistent: each TEMP view becomes a
 * view of the main schema and reads every run (its selection and target tables, which
 * only a reporting connection has, read as empty). A reporting connection's TEMP views
 * shadow them by name. PRAGMA user_version holds a hash of their text: a database whose
 * views another build wrote gets this build's. */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/results.h"

/* The reporting connection's tables and what the persistent views read instead. */
static const struct {
    const char *from, *to;
} replaced[] = {
    {"CREATE TEMP VIEW IF NOT EXISTS ", "CREATE VIEW "},
    {"(SELECT 1 FROM report_selecting)", "(SELECT 1 WHERE 0)"},
    {"(SELECT run_id FROM report_selection)", "(SELECT NULL WHERE 0)"},
    {"JOIN report_target t", "JOIN (SELECT NULL AS target_acc WHERE 0) t"},
};

/* Appends n bytes of s to the growing string *buf (*len, *cap). */
static void append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *buf = realloc(*buf, *cap);
        PB_CHECK(*buf != NULL);
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
}

/* views.sql's views as persistent ones, comments and TEMP tables left out; free() it. */
static char *persistent_sql(void)
{
    char *out = NULL;
    size_t len = 0, cap = 0;
    append(&out, &len, &cap, "", 0);
    bool skip = false;
    for (const char *p = pb_report_views_sql; *p;) {
        size_t n = strcspn(p, "\n");
        const char *line = p;
        p += n + (p[n] == '\n');
        if (!strncmp(line, "--", 2) || n == 0)
            continue;
        if (!strncmp(line, "CREATE TEMP TABLE", 17))
            skip = true;
        if (!skip) {
            for (size_t i = 0; i < n;) {
                size_t k = 0, nr = sizeof replaced / sizeof *replaced;
                while (k < nr && strncmp(line + i, replaced[k].from, strlen(replaced[k].from)))
                    k++;
                if (k < nr && i + strlen(replaced[k].from) <= n) {
                    append(&out, &len, &cap, replaced[k].to, strlen(replaced[k].to));
                    i += strlen(replaced[k].from);
                } else {
                    append(&out, &len, &cap, line + i, 1);
                    i++;
                }
            }
            append(&out, &len, &cap, "\n", 1);
        }
        if (n && line[n - 1] == ';')
            skip = false;
    }
    return out;
}

/* A 31-bit FNV-1a hash of s, never 0 (user_version 0: no views yet). */
static int32_t text_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    h &= 0x7fffffff;
    return h ? (int32_t)h : 1;
}

static int user_version(sqlite3 *db)
{
    sqlite3_stmt *s;
    int v = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return v;
}

int pb_results_drop_views(struct pb_results *r, struct pb_err *e)
{
    sqlite3 *db = pb_results_sqlite(r);
    char *msg = NULL;
    /* one at a time, as long as some are left: a view read by another cannot go first */
    for (;;) {
        sqlite3_stmt *s;
        char drop[256] = "";
        if (sqlite3_prepare_v2(db, "SELECT name FROM main.sqlite_schema WHERE type = 'view' "
                               "LIMIT 1", -1, &s, NULL) != SQLITE_OK)
            break;
        if (sqlite3_step(s) == SQLITE_ROW)
            snprintf(drop, sizeof drop, "DROP VIEW main.\"%s\"",
                     (const char *)sqlite3_column_text(s, 0));
        sqlite3_finalize(s);
        if (!drop[0])
            return sqlite3_exec(db, "PRAGMA user_version = 0", NULL, NULL, &msg) == SQLITE_OK
                       ? 0
                       : pb_err_set(e, "results database %s: %s", pb_results_path(r), msg);
        if (sqlite3_exec(db, drop, NULL, NULL, &msg) != SQLITE_OK)
            break;
    }
    pb_err_set(e, "results database %s: dropping the reporting views: %s", pb_results_path(r),
               msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -1;
}

int pb_results_persist_views(struct pb_results *r, struct pb_err *e)
{
    sqlite3 *db = pb_results_sqlite(r);
    char *sql = persistent_sql();
    int32_t want = text_hash(sql);
    int rc = 0;
    if (user_version(db) == want)
        goto out;
    char *msg = NULL;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    if (user_version(db) == want) {   /* another process wrote them meanwhile */
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        goto out;
    }
    if (pb_results_drop_views(r, e)) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        rc = -1;
        goto out;
    }
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", (int)want);
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(db, pragma, NULL, NULL, &msg) != SQLITE_OK)
        goto rollback;
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) == SQLITE_OK)
        goto out;
rollback:
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
fail:
    rc = pb_err_set(e, "results database %s: writing its reporting views: %s",
                    pb_results_path(r), msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
out:
    free(sql);
    return rc;
}
