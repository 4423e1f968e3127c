/* bench/bench_sim.c — the simulator's speed (design §6.6): building the programs and
 * simulating one epoch at large D and N, in ops simulated per second. The IR bounds a
 * pipe to PB_MAX_PROGRAM_OPS / 3 stage-micro-batches, so D = 1024 runs N = 32,000. */
#include <stdio.h>

#include "bench/bench_util.h"
#include "harness/exec/sim.h"

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
        c[k] = (struct pb_sim_cost){1e-3, 2e-3, 1e-4, 1e-5};
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

int main(void)
{
    one("gpipe", 8, 100000, 8);
    one("pipedream", 8, 100000, 1);
    one("gpipe", 1024, 32000, 1024);
    one("pipedream", 1024, 32000, 1);
    one("pipeoptim", 1024, 32000, 1);
    return 0;
}
