/* bench/bench_db.h — what the benchmarks share: one number from the results database
 * a benchmark's runs wrote, and a fresh temporary database path. */
#ifndef PB_BENCH_DB_H
#define PB_BENCH_DB_H

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

/* The first column of the first row of sql, or −1. */
static inline double bench_query(const char *db, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    double v = -1;
    if (sqlite3_open(db, &h) == SQLITE_OK && sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_double(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
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
