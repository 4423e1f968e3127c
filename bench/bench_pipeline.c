/* bench/bench_pipeline.c — what the concurrent executors buy, from one run each:
 * mlp-deep (stages of equal cost) at D = 2 on Fashion-MNIST, one core per stage.
 * (a) throughput of the threads and mpi executors as a ratio to the sequential one
 *     (ideal 2.0: both stages busy all the time);
 * (b) measured throughput as a ratio to the ideal b / max_k(stage k's busy time per
 *     micro-batch), the stage times taken from the same run's per-op measurements;
 * and how much slower the ops themselves ran with both stages at once than alone
 * (the seq run's ideal over this run's: (a) ≈ 2 · (b) / that slowdown).
 * The mpi rows need the pipebench binary: argv[1] or $PB_PIPEBENCH. Prints; asserts
 * nothing. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/err.h"
#include "harness/driver/run.h"
#include "bench/bench_db.h"

#define TRAIN 20000
#define EPOCHS 2

/* Throughput (view epoch_progress) and ideal throughput (its samples over the busiest
 * stage's busy time, view stage_epoch_time) of the newest run's last epoch. */
static void measured(const char *db, double *thr, double *ideal)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT throughput FROM epoch_progress WHERE run_id = (SELECT "
                              "max(id) FROM runs) AND epoch = %d", EPOCHS - 1);
    *thr = bench_query(db, sql);
    snprintf(sql, sizeof sql, "SELECT p.samples / max(s.busy_s) FROM stage_epoch_time s JOIN "
                              "epoch_progress p USING (run_id, epoch) WHERE run_id = (SELECT "
                              "max(id) FROM runs) AND epoch = %d", EPOCHS - 1);
    *ideal = bench_query(db, sql);
}

static int run_local(const char *db, const char *schedule, const char *executor)
{
    struct pb_run_cfg c;
    struct pb_err e;
    struct pb_run_summary sum;
    pb_run_cfg_defaults(&c);
    c.model = "mlp-deep";
    c.schedule = schedule;
    c.executor = executor;
    c.stages = 2;
    c.threads = 2;
    c.limit_train = TRAIN;
    c.limit_val = 1000;
    c.epochs = EPOCHS;
    c.quiet = true;
    c.db = db;
    if (pb_run(&c, &sum, &e) != PB_EXIT_OK) {
        fprintf(stderr, "bench: %s\n", e.msg);
        return -1;
    }
    return 0;
}

static int run_mpi(const char *bin, const char *db, const char *schedule)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "mpirun --oversubscribe %s -np 2 %s run --executor mpi --model mlp-deep --schedule %s "
             "--stages 2 --threads 2 --limit-train %d --limit-val 1000 --epochs %d --quiet --db %s",
             geteuid() == 0 ? "--allow-run-as-root" : "", bin, schedule, TRAIN, EPOCHS, db);
    return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *bin = argc > 1 ? argv[1] : getenv("PB_PIPEBENCH");
    char db[] = "/tmp/pb-bench-XXXXXX";
    if (bench_tmp_db(db))
        return 1;
    const char *schedules[] = {"pipedream", "pipeoptim", "gpipe"};
    printf("pipeline executors: mlp-deep, D = 2, one core per stage, %d Fashion-MNIST samples, "
           "micro-batches of 64, epoch %d of %d\n", TRAIN, EPOCHS, EPOCHS);
    printf("%-10s %-8s %12s %12s %14s %14s %14s\n", "schedule", "executor", "samples/s", "ideal/s",
           "vs seq (2.0)", "vs ideal (1.0)", "op slowdown");
    for (int s = 0; s < 3; s++) {
        double seq_thr = 0, seq_ideal = 0;
        const char *executors[] = {"seq", "threads", "mpi"};
        for (int x = 0; x < 3; x++) {
            int rc = x < 2 ? run_local(db, schedules[s], executors[x])
                           : bin ? run_mpi(bin, db, schedules[s]) : -1;
            if (rc) {
                printf("%-10s %-8s %12s\n", schedules[s], executors[x],
                       bin || x < 2 ? "failed" : "(no binary)");
                continue;
            }
            double thr, ideal;
            measured(db, &thr, &ideal);
            if (x == 0) {
                seq_thr = thr;
                seq_ideal = ideal;
            }
            printf("%-10s %-8s %12.1f %12.1f %14.2f %14.2f %14.2f\n", schedules[s], executors[x], thr,
                   ideal, thr / seq_thr, thr / ideal, seq_ideal / ideal);
        }
    }
    unlink(db);
    return 0;
}
