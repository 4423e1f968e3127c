/* bench/bench_executor.c — the sequential executor's overhead: the wall time of an
 * epoch against the sum of the stages' own op times (forward, backward, update and
 * the weight copies or predictions the schedule asks for), for mlp and lenet at
 * D = 4 on Fashion-MNIST, one run each, from the views epoch_progress and
 * stage_epoch_time. Overhead = 1 − Σ busy / wall: data gathering, stage-boundary copies
 * and scheduling. Prints; asserts nothing. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/err.h"
#include "harness/driver/run.h"
#include "bench/bench_db.h"

int main(void)
{
    char db[] = "/tmp/pb-bench-XXXXXX";
    if (bench_tmp_db(db))
        return 1;
    const char *models[] = {"mlp", "lenet"};
    const char *schedules[] = {"pipedream", "pipeoptim", "gpipe"};
    printf("sequential executor overhead, D = 4, Fashion-MNIST, micro-batches of 64, "
           "second epoch of two\n");
    printf("%-6s %-10s %9s %9s %9s %9s\n", "model", "schedule", "wall s", "busy s", "comm s",
           "overhead");
    for (int m = 0; m < 2; m++)
        for (int s = 0; s < 3; s++) {
            struct pb_run_cfg c;
            struct pb_err e;
            struct pb_run_summary sum;
            pb_run_cfg_defaults(&c);
            c.model = models[m];
            c.schedule = schedules[s];
            c.limit_train = m == 0 ? 30000 : 6000;
            c.limit_val = 1000;
            c.epochs = 2;
            c.quiet = true;
            c.db = db;
            if (pb_run(&c, &sum, &e) != PB_EXIT_OK) {
                fprintf(stderr, "bench: %s\n", e.msg);
                return 1;
            }
            char sql[256];
            snprintf(sql, sizeof sql, "SELECT wall_s FROM epoch_progress WHERE run_id = %lld AND "
                     "epoch = 1", (long long)sum.run_id);
            double wall = bench_query(db, sql);
            snprintf(sql, sizeof sql,
                     "SELECT sum(busy_s) FROM stage_epoch_time WHERE run_id = %lld AND epoch = 1",
                     (long long)sum.run_id);
            double busy = bench_query(db, sql);
            snprintf(sql, sizeof sql,
                     "SELECT sum(comm_s) FROM stage_epoch_time WHERE run_id = %lld AND epoch = 1",
                     (long long)sum.run_id);
            double comm = bench_query(db, sql);
            printf("%-6s %-10s %9.3f %9.3f %9.3f %8.1f%%\n", models[m], schedules[s], wall, busy,
                   comm, 100.0 * (1.0 - busy / wall));
        }
    unlink(db);
    return 0;
}
