/* bench/bench_sim.c — the simulator (design §6.6), two ways:
 * (a) its speed: building the programs and simulating one epoch op by op at large D and
 *     N, in ops simulated per second (the IR bounds a pipe to PB_MAX_PROGRAM_OPS / 3
 *     stage-micro-batches, so D = 1024 runs N = 32,000); and D = 1024, N = 100,000
 *     through pb_simulate_pipe, which simulates N' micro-batches and extrapolates their
 *     verified steady state: wall time of the whole call, ops represented per second;
 * (b) its fidelity: 2-stage runs on this machine's cores (mlp-deep, stages of equal cost,
 *     threads executor), each epoch's measured throughput and bubble against the same
 *     epoch simulated from its own median op costs (what every run records), as ratios.
 *     The margin it shows is what `sim-` tables can be trusted to; with fewer cores than
 *     stages the run's timings are not a pipeline's, and it says so.
 * Prints; asserts nothing. `bench_sim speed` runs (a) alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_db.h"
#include "bench/bench_util.h"
#include "harness/driver/run.h"
#include "harness/sim/sim_periodic.h"
#include "schedules/registry.h"

static void one(const char *schedule, int D, int N, int M)
{
    struct pb_err e;
    const struct pb_schedule *sch = pb_schedule_find(schedule, &e);
    struct pb_pipe p = {.stages = D, .length = N, .microbatches = M, .optimizer = PB_OPT_SGD};
    struct pb_program *progs = pb_xcalloc((size_t)D, sizeof *progs);
    double t0 = bench_now();
    if (!sch || pb_programs_build(sch, &p, progs, &e)) {
        fprintf(stderr, "bench_sim: %s\n", e.msg);
        exit(1);
    }
    double t1 = bench_now();
    struct pb_sim_cost *c = pb_xcalloc((size_t)D, sizeof *c);
    for (int k = 0; k < D; k++)
        c[k] = (struct pb_sim_cost){1e-3, 2e-3, 1e-4, 1e-5, 0, 0};
    struct pb_sim_result r;
    if (pb_simulate(&p, progs, c, D, false, &r, &e)) {
        fprintf(stderr, "bench_sim: %s\n", e.msg);
        exit(1);
    }
    double t2 = bench_now();
    printf("%-14s D = %-5d N = %-7d %10ld ops: programs %6.3f s, simulation %6.3f s = "
           "%5.1f M ops/s (stage 0 bubble %.3f)\n", schedule, D, N, r.ops, t1 - t0, t2 - t1,
           r.ops / (t2 - t1) / 1e6, r.bubble[0]);
    pb_sim_result_finish(&r);
    pb_programs_finish(progs, D);
    free(progs);
    free(c);
}

/* (a), extrapolated: the whole pipe through pb_simulate_pipe, wall time of the call. */
static void whole(const char *schedule, int D, int N, int M)
{
    struct pb_err e;
    const struct pb_schedule *sch = pb_schedule_find(schedule, &e);
    struct pb_pipe p = {.stages = D, .length = N, .microbatches = M, .optimizer = PB_OPT_SGD};
    struct pb_sim_cost *c = pb_xcalloc((size_t)D, sizeof *c);
    for (int k = 0; k < D; k++)
        c[k] = (struct pb_sim_cost){1e-3, 2e-3, 1e-4, 1e-5, 0, 0};
    struct pb_sim_result r;
    double t0 = bench_now();
    clock_t cpu0 = clock();
    if (!sch || pb_simulate_pipe(sch, &p, NULL, c, D, false, &r, &e)) {
        fprintf(stderr, "bench_sim: %s\n", e.msg);
        exit(1);
    }
    double t1 = bench_now(), cpu = (double)(clock() - cpu0) / CLOCKS_PER_SEC;
    if (r.extrapolated)
        printf("%-14s D = %-5d N = %-7d M = %-5d %10ld ops represented, extrapolated from "
               "N' = %d (%ld ops simulated): %6.3f s wall (%5.3f s CPU) = %7.1f M ops/s "
               "represented\n", schedule, D, N, M, r.ops, r.from_length, r.from_ops, t1 - t0,
               cpu, r.ops / (t1 - t0) / 1e6);
    else
        printf("%-14s D = %-5d N = %-7d M = %-5d %10ld ops, not extrapolated (all simulated): "
               "%6.3f s wall = %7.1f M ops/s\n", schedule, D, N, M, r.ops, t1 - t0,
               r.ops / (t1 - t0) / 1e6);
    pb_sim_result_finish(&r);
    free(c);
}

/* (b): one 2-stage run of `schedule`, then per steady epoch measured / simulated. */
static void fidelity(const char *schedule)
{
    char db[] = "/tmp/pb-bench-XXXXXX";
    if (bench_tmp_db(db)) {
        perror("bench_sim: temporary database");
        exit(1);
    }
    struct pb_run_cfg c;
    struct pb_run_summary sum;
    struct pb_err e;
    pb_run_cfg_defaults(&c);
    c.model = "mlp-deep";
    c.schedule = schedule;
    c.executor = "threads";
    c.stages = 2;
    c.threads = 2;
    c.limit_train = 12800;
    c.limit_val = 640;
    c.epochs = 4;
    c.trace_epochs = "none";
    c.quiet = true;
    c.db = db;
    if (pb_run(&c, &sum, &e) != PB_EXIT_OK) {
        fprintf(stderr, "bench_sim: %s\n", e.msg);
        exit(1);
    }
    printf("%-10s 2 stages, threads:", schedule);
    for (int epoch = 1; epoch < c.epochs; epoch++) {
        char sql[512];
        snprintf(sql, sizeof sql, "SELECT throughput / sim_throughput FROM epochs WHERE epoch = "
                 "%d", epoch);
        double thr = bench_query(db, sql);
        snprintf(sql, sizeof sql, "SELECT avg(bubble_frac) - avg(sim_bubble) FROM stage_stats "
                 "WHERE epoch = %d", epoch);
        double bub = bench_query(db, sql);
        printf("  epoch %d: throughput %.3f of simulated, bubble %+.3f", epoch + 1, thr, bub);
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double load[1] = {0};
    getloadavg(load, 1);
    printf("  (load %.1f on %ld cores%s)\n", load[0], cores,
           cores < 2 || load[0] > cores ? ": the stages shared cores with other work, so the "
                                          "measured side is not a quiet pipeline's" : "");
    unlink(db);
}

/* `bench_sim speed` prints (a) alone. */
int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "speed")) {
        printf("fidelity: measured over simulated, per epoch after the first (ideal 1.000 "
               "and +0.000)\n");
        fidelity("gpipe");
        fidelity("pipedream");
        fidelity("pipeoptim");
    }
    printf("speed:\n");
    one("gpipe", 8, 100000, 8);
    one("pipedream", 8, 100000, 1);
    one("gpipe", 1024, 32000, 1024);
    one("pipedream", 1024, 32000, 1);
    one("pipeoptim", 1024, 32000, 1);
    printf("speed, D = 1024 and N = 100,000 through pb_simulate_pipe (cost of the whole call):\n");
    whole("gpipe", 1024, 100000, 4);
    whole("gpipe", 1024, 100000, 32);
    whole("pipedream", 1024, 100000, 1);
    whole("pipeoptim", 1024, 100000, 1);
    whole("pipedream-2bw", 1024, 100000, 1024);
    whole("xpipe", 1024, 100000, 1024);
    whole("spectrain", 1024, 100000, 1);
    return 0;
}
