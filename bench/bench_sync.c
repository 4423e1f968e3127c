/* bench/bench_sync.c — the synchronous schedules on 4 devices (mlp-deep: 4 stages of
 * equal cost; interleaved, zb-v and dualpipe-v: 8 stages, 2 chunks per device, loop or
 * V placement), one core per device, M = 8 micro-batches of 64 per step:
 * (a) each stage's bubble measured by the threads executor against the simulator's
 *     prediction (harness/sim/sim.h) from isolated op costs: the medians of every F,
 *     B, U, I and W of a sequential run of the same schedule (one op at a time) and
 *     its copy time per message; the ratio is measured / predicted;
 * (b) the activations each stage holds at its peak, in micro-batches: its peak bytes of
 *     activations over those of one micro-batch (a GPipe run with M = 1), beside the
 *     count of micro-batches in flight the programs imply (semantics §4.10's table);
 *     with chunks, per device: each chunk's peak over one micro-batch's of that stage
 *     (a GPipe run with M = 1 on 8 stages), summed, in chunk units, an upper bound of
 *     the device's peak (the chunks' peaks need not coincide).
 * With fewer cores than stages the threads share them and the measured bubbles are
 * those of the shared machine (it prints the cores). Prints; asserts nothing. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_db.h"
#include "harness/driver/run.h"
#include "harness/sim/sim_periodic.h"
#include "results/results.h"
#include "schedules/registry.h"

#define D 4
#define M 8
#define STEPS 6
#define EPOCHS 2

/* Trains the schedule with the executor on `stages` stages of v chunks per device, every
 * op traced; returns the run id or -1. */
static long run(const char *db, const char *schedule, const char *executor, int m, int stages,
                int v)
{
    struct pb_run_cfg c;
    struct pb_err e;
    struct pb_run_summary sum;
    pb_run_cfg_defaults(&c);
    c.model = "mlp-deep";
    c.schedule = schedule;
    c.executor = executor;
    c.stages = stages;
    c.chunks = v;
    c.threads = stages;
    c.microbatches = m;
    c.microbatch_size = 64;
    c.limit_train = 64 * M * STEPS;
    c.limit_val = 64;
    c.epochs = EPOCHS;
    c.trace_epochs = "all";
    c.quiet = true;
    c.db = db;
    if (pb_run(&c, &sum, &e) != PB_EXIT_OK) {
        fprintf(stderr, "bench_sync: %s %s: %s\n", schedule, executor, e.msg);
        return -1;
    }
    return (long)bench_query(db, "SELECT max(id) FROM runs");
}

/* Stage k's column of the last epoch of run id. */
static double stage_stat(const char *db, long id, int k, const char *column)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s FROM stage_stats WHERE run_id = %ld AND epoch = %d "
                              "AND stage = %d", column, id, EPOCHS - 1, k);
    return bench_query(db, sql);
}

/* The simulated epoch of schedule with the costs of run `seq` (S stages, v chunks per
 * device): per-device bubble and activations in flight (micro-batches, or chunk units). */
static int predict(const char *db, long seq, const char *schedule, int S, int v,
                   double *bubble, int *acts)
{
    struct pb_err e;
    struct pb_results *r;
    struct pb_run_costs rc;
    if (pb_results_open_existing(&r, db, &e))
        return -1;
    int rcode = pb_results_run_costs(r, seq, &rc, &e);
    pb_results_close(r);
    if (rcode)
        return -1;
    struct pb_sim_cost costs[2 * D];
    for (int k = 0; k < S; k++) {
        double o[5];
        for (int t = 0; t < 5; t++)
            o[t] = isnan(rc.op_s[5 * k + t]) ? 0 : rc.op_s[5 * k + t];
        costs[k] = (struct pb_sim_cost){o[PB_OP_F], o[PB_OP_B], o[PB_OP_U], rc.recv_s[k],
                                        o[PB_OP_I], o[PB_OP_W]};
    }
    const struct pb_schedule *sch = pb_schedule_find(schedule, &e);
    struct pb_pipe p = {.stages = S, .length = rc.length, .microbatches = M,
                        .optimizer = PB_OPT_SGD, .chunks = v};
    if (sch)
        pb_pipe_adopt(&p, sch);   /* V placement for zb-v and dualpipe-v */
    struct pb_program progs[2 * D];
    struct pb_sim_result res;
    int cap = 0;
    rcode = !sch || pb_programs_build(sch, &p, progs, &e) ||
            (cap = pb_programs_capacity(&p, progs, &e)) < 0 ||
            pb_simulate_pipe(sch, &p, progs, costs, cap > S ? cap : S, false, &res, &e);
    if (!rcode) {
        for (int k = 0; k < D; k++) {
            bubble[k] = res.bubble[k];
            acts[k] = pb_sim_acts_peak(&progs[k]);
        }
        pb_sim_result_finish(&res);
    } else {
        fprintf(stderr, "bench_sync: %s: %s\n", schedule, e.msg);
    }
    if (sch)
        pb_programs_finish(progs, D);
    pb_run_costs_finish(&rc);
    return rcode ? -1 : 0;
}

int main(void)
{
    char db[] = "/tmp/pb-bench-XXXXXX";
    if (bench_tmp_db(db))
        return 1;
    static const struct {
        const char *name;
        int stages, v;
    } schedules[] = {{"gpipe", D, 1}, {"1f1b", D, 1}, {"zb-h1", D, 1}, {"zb-h2", D, 1},
                     {"interleaved", 2 * D, 2}, {"zb-v", 2 * D, 2}, {"dualpipe-v", 2 * D, 2}};
    long one = run(db, "gpipe", "seq", 1, D, 1), one8 = run(db, "gpipe", "seq", 1, 2 * D, 1);
    if (one < 0 || one8 < 0)
        return 1;
    printf("synchronous schedules: mlp-deep, D = %d, M = %d micro-batches of 64 per step, %d "
           "steps an epoch, epoch %d of %d, threads executor, %ld cores here\n", D, M, STEPS,
           EPOCHS, EPOCHS, sysconf(_SC_NPROCESSORS_ONLN));
    printf("bubble: measured (threads) / predicted (simulator, isolated op costs of a seq run); "
           "in flight: peak activation bytes / one micro-batch's, and the programs' count\n");
    printf("%-11s %6s %10s %10s %7s %12s %9s\n", "schedule", "device", "measured",
           "predicted", "ratio", "in flight", "programs");
    for (size_t i = 0; i < sizeof schedules / sizeof *schedules; i++) {
        const char *name = schedules[i].name;
        int S = schedules[i].stages, v = schedules[i].v;
        long seq = run(db, name, "seq", M, S, v), thr = run(db, name, "threads", M, S, v);
        double bubble[2 * D];
        int acts[2 * D];
        if (seq < 0 || thr < 0 || predict(db, seq, name, S, v, bubble, acts))
            return 1;
        /* the stages each device holds: loop or V placement, as the schedule fixes */
        struct pb_pipe placed = {.stages = S, .chunks = v};
        pb_pipe_adopt(&placed, pb_schedule_find(name, NULL));
        for (int k = 0; k < D; k++) {
            /* a device's idle: 1 − Σ its chunks' busy / wall = Σ bubble_frac − (v − 1) */
            double meas = 1 - v, held = 0;
            for (int c = 0; c < v; c++) {
                int stage = pb_pipe_stage_of(&placed, k, c);
                meas += stage_stat(db, thr, stage, "bubble_frac");
                held += stage_stat(db, thr, stage, "mem_acts") /
                        stage_stat(db, v > 1 ? one8 : one, stage, "mem_acts");
            }
            printf("%-11s %6d %9.1f%% %9.1f%% %7.2f %12.2f %9d\n", name, k, 100 * meas,
                   100 * bubble[k], bubble[k] > 0 ? meas / bubble[k] : NAN, held, acts[k]);
        }
    }
    unlink(db);
    return 0;
}
