/* tests/support/cli_util.h — helpers of the suites that drive the built `pipebench` binary
 * ($PB_PIPEBENCH) in a scratch folder: run a command and capture its output, write a
 * file, query the results database it wrote. */
#ifndef PB_TEST_CLI_UTIL_H
#define PB_TEST_CLI_UTIL_H

#include <check.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A fresh scratch folder, /tmp/pb-NAME-XXXXXX, in dir. */
static inline void cli_scratch(char *dir, size_t cap, const char *name)
{
    snprintf(dir, cap, "/tmp/pb-%s-XXXXXX", name);
    ck_assert(mkdtemp(dir) != NULL);
}

/* Runs `pipebench ARGS` (printf-style) in folder dir with stdout and stderr together in
 * out; returns the exit status. */
static inline int cli_run(const char *dir, char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int cli_run(const char *dir, char *out, size_t cap, const char *fmt, ...)
{
    const char *bin = getenv("PB_PIPEBENCH");
    ck_assert_msg(bin != NULL, "PB_PIPEBENCH is not set (run through meson test)");
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", dir, bin, args);
    FILE *f = popen(cmd, "r");
    ck_assert(f != NULL);
    size_t n = 0, r;
    while (n < cap - 1 && (r = fread(out + n, 1, cap - 1 - n, f)) > 0)
        n += r;
    out[n] = 0;
    char sink[4096];
    while (fread(sink, 1, sizeof sink, f) > 0)
        ;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* SQL that makes a results database look written by a build before the reporting views
 * were kept in it (results/results_views.c), so a test can rebuild its tables as an
 * older schema's: drops every reporting view, clears their hash. */
#define CLI_DROP_VIEWS                                                                      \
    "DROP VIEW IF EXISTS run_summary; DROP VIEW IF EXISTS run_staleness; "                  \
    "DROP VIEW IF EXISTS stage_staleness; DROP VIEW IF EXISTS run_memory; "                 \
    "DROP VIEW IF EXISTS stage_memory; DROP VIEW IF EXISTS seed_timing; "                   \
    "DROP VIEW IF EXISTS seed_runs; DROP VIEW IF EXISTS run_bubble; "                       \
    "DROP VIEW IF EXISTS stage_bubble; DROP VIEW IF EXISTS stage_epoch_time; "              \
    "DROP VIEW IF EXISTS run_throughput; DROP VIEW IF EXISTS steady_epochs; "               \
    "DROP VIEW IF EXISTS run_target; DROP VIEW IF EXISTS epoch_progress; "                  \
    "DROP VIEW IF EXISTS run_accuracy; DROP VIEW IF EXISTS run_config; "                    \
    "PRAGMA user_version = 0; "

/* Writes text to dir/name. */
static inline void cli_write(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* The first column of the first row of sql on dir/db as an int; 0 when the database
 * does not exist. */
static inline int cli_db_int(const char *dir, const char *db, const char *sql)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, db);
    if (access(path, F_OK))
        return 0;
    sqlite3 *h;
    sqlite3_stmt *st;
    ck_assert(sqlite3_open(path, &h) == SQLITE_OK);
    int n = -1;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
}

/* The same as a double (NaN when the database does not exist or sql gives no row). */
static inline double cli_db_double(const char *dir, const char *db, const char *sql)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, db);
    if (access(path, F_OK))
        return NAN;
    sqlite3 *h;
    sqlite3_stmt *st;
    ck_assert(sqlite3_open(path, &h) == SQLITE_OK);
    double x = NAN;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        x = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return x;
}

/* Removes the scratch folder. */
static inline void cli_cleanup(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

#endif
