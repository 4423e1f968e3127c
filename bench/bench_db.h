/* bench/bench_db.h — what the benchmarks share: one number from the metric views
 * (results/views.sql) over the database a benchmark's runs wrote, and a fresh
 * temporary database path. */
#ifndef PB_BENCH_DB_H
#define PB_BENCH_DB_H

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include "plots/report_db.h"

/* The first column of the first row of sql (which may read the views), or −1. */
static inline double bench_query(const char *db, const char *sql)
{
    struct pb_results *r;
    struct pb_err e;
    sqlite3_stmt *st;
    double v = -1;
    if (pb_report_open(&r, db, &e))
        return v;
    if (sqlite3_prepare_v2(pb_results_sqlite(r), sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_double(st, 0);
        sqlite3_finalize(st);
    }
    pb_results_close(r);
    return v;
}

/* Fills path (a "/tmp/pb-bench-XXXXXX" buffer) with a name no file has; 0 or −1. */
static inline int bench_tmp_db(char *path)
{
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    close(fd);
    unlink(path);
    return 0;
}

#endif
