/* tests/schedules/test_chunks.c — model chunks (semantics §4.12): v chunks per device in loop
 * placement, the device programs of interleaved and looped-bfs at several (D = p·v, M,
 * v) in the F3@1 notation, including M < p, M not a multiple of p and the last group's
 * size; over a grid, each stage's program (pb_programs_stages) at lag 0 with one U per
 * step, validated at the channel capacity pb_programs_capacity finds (looped-bfs needs
 * more than 1) and given to the threads executor (looped BFS at M = 16 needs 8); the
 * simulator's bubble of interleaved; the activations in flight per device against
 * SCHEDULES.md §7; the trained weights of mlp under seq and threads (mpi's:
 * tests/exec/test_executors.c) equal, interleaved's to 1f1b's and looped-bfs's to GPipe's bit
 * for bit (each stage's gradients in the same order) and interleaved's to GPipe's within
 * 1e-5, each epoch's predicted time the simulator's on the epoch's op costs; and bad
 * inputs refused with exit 2. */
#include <check.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/sim/sim.h"
#include "harness/sim/sim_periodic.h"
#include "schedules/registry.h"
#include "tests/support/cli_util.h"
#include "tests/support/test_util.h"
#include "tests/support/train_util.h"

#define MAXS 16

/* Builds and validates the device programs at the capacity they need (returned). */
static int build(const char *name, const char *variant, int S, int v, int N, int M,
                 struct pb_pipe *p, struct pb_program *progs)
{
    struct pb_err e;
    const struct pb_schedule *s = pb_schedule_find(name, &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    *p = (struct pb_pipe){.stages = S, .length = N, .microbatches = M, .optimizer = PB_OPT_SGD,
                          .variant = variant, .chunks = v};
    ck_assert_msg(pb_programs_build(s, p, progs, &e) == 0, "%s: %s", name, e.msg);
    int cap = pb_programs_capacity(p, progs, &e);
    ck_assert_msg(cap >= 1, "%s S=%d v=%d N=%d M=%d: %s", name, S, v, N, M, e.msg);
    ck_assert_msg(pb_programs_validate(p, progs, cap, &e) == 0, "%s S=%d v=%d N=%d M=%d: %s",
                  name, S, v, N, M, e.msg);
    return cap;
}

static const struct {
    const char *name, *variant;
    int S, v, N, M;
    const char *expect;
} goldens[] = {
    /* SCHEDULES.md §2's example: p = 4, m = 8, v = 2, N = 4; rank 0 warms up with 10 */
    {"interleaved", NULL, 8, 2, 8, 8,
     "device 0: F0@0 F1@0 F2@0 F3@0 F0@1 F1@1 F2@1 F3@1 F4@0 F5@0 F6@0 B0@1 F7@0 B1@1 F4@1 "
     "B2@1 F5@1 B3@1 F6@1 B0@0 F7@1 B1@0 B2@0 B3@0 B4@1 B5@1 B6@1 B7@1 B4@0 B5@0 B6@0 B7@0 U\n"
     "device 1: F0@0 F1@0 F2@0 F3@0 F0@1 F1@1 F2@1 F3@1 F4@0 B0@1 F5@0 B1@1 F6@0 B2@1 F7@0 "
     "B3@1 F4@1 B0@0 F5@1 B1@0 F6@1 B2@0 F7@1 B3@0 B4@1 B5@1 B6@1 B7@1 B4@0 B5@0 B6@0 B7@0 U\n"
     "device 2: F0@0 F1@0 F2@0 F3@0 F0@1 F1@1 F2@1 B0@1 F3@1 B1@1 F4@0 B2@1 F5@0 B3@1 F6@0 "
     "B0@0 F7@0 B1@0 F4@1 B2@0 F5@1 B3@0 F6@1 B4@1 F7@1 B5@1 B6@1 B7@1 B4@0 B5@0 B6@0 B7@0 U\n"
     "device 3: F0@0 F1@0 F2@0 F3@0 F0@1 B0@1 F1@1 B1@1 F2@1 B2@1 F3@1 B3@1 F4@0 B0@0 F5@0 "
     "B1@0 F6@0 B2@0 F7@0 B3@0 F4@1 B4@1 F5@1 B5@1 F6@1 B6@1 F7@1 B7@1 B4@0 B5@0 B6@0 B7@0 U\n"},
    /* m = p = 4: no all-forwards special case (torch, current Megatron): rank 3 interleaves */
    {"interleaved", NULL, 8, 2, 4, 4,
     "device 0: F0@0 F1@0 F2@0 F3@0 F0@1 F1@1 F2@1 F3@1 B0@1 B1@1 B2@1 B3@1 B0@0 B1@0 B2@0 "
     "B3@0 U\n"
     "device 1: F0@0 F1@0 F2@0 F3@0 F0@1 F1@1 F2@1 F3@1 B0@1 B1@1 B2@1 B3@1 B0@0 B1@0 B2@0 "
     "B3@0 U\n"
     "device 2: F0@0 F1@0 F2@0 F3@0 F0@1 F1@1 F2@1 B0@1 F3@1 B1@1 B2@1 B3@1 B0@0 B1@0 B2@0 "
     "B3@0 U\n"
     "device 3: F0@0 F1@0 F2@0 F3@0 F0@1 B0@1 F1@1 B1@1 F2@1 B2@1 F3@1 B3@1 B0@0 B1@0 B2@0 "
     "B3@0 U\n"},
    /* m = 3 < p = 4: torch's N = m, one group */
    {"interleaved", NULL, 8, 2, 3, 3,
     "device 0: F0@0 F1@0 F2@0 F0@1 F1@1 F2@1 B0@1 B1@1 B2@1 B0@0 B1@0 B2@0 U\n"
     "device 1: F0@0 F1@0 F2@0 F0@1 F1@1 F2@1 B0@1 B1@1 B2@1 B0@0 B1@0 B2@0 U\n"
     "device 2: F0@0 F1@0 F2@0 F0@1 F1@1 F2@1 B0@1 B1@1 B2@1 B0@0 B1@0 B2@0 U\n"
     "device 3: F0@0 F1@0 F2@0 F0@1 B0@1 F1@1 B1@1 F2@1 B2@1 B0@0 B1@0 B2@0 U\n"},
    /* p = 2, v = 3, m = 6: rounds 3, N = 2 (warm-ups 6 and 4); then the epoch's last
     * step of 3, not a multiple of p (rounds 1, N = 3) */
    {"interleaved", NULL, 6, 3, 9, 6,
     "device 0: F0@0 F1@0 F0@1 F1@1 F0@2 F1@2 F2@0 B0@2 F3@0 B1@2 F2@1 B0@1 F3@1 B1@1 F2@2 "
     "B0@0 F3@2 B1@0 F4@0 B2@2 F5@0 B3@2 F4@1 B2@1 F5@1 B3@1 F4@2 B2@0 F5@2 B3@0 B4@2 B5@2 "
     "B4@1 B5@1 B4@0 B5@0 U F6@0 F7@0 F8@0 F6@1 F7@1 F8@1 F6@2 F7@2 F8@2 B6@2 B7@2 B8@2 B6@1 "
     "B7@1 B8@1 B6@0 B7@0 B8@0 U\n"
     "device 1: F0@0 F1@0 F0@1 F1@1 F0@2 B0@2 F1@2 B1@2 F2@0 B0@1 F3@0 B1@1 F2@1 B0@0 F3@1 "
     "B1@0 F2@2 B2@2 F3@2 B3@2 F4@0 B2@1 F5@0 B3@1 F4@1 B2@0 F5@1 B3@0 F4@2 B4@2 F5@2 B5@2 "
     "B4@1 B5@1 B4@0 B5@0 U F6@0 F7@0 F8@0 F6@1 F7@1 F8@1 F6@2 B6@2 F7@2 B7@2 F8@2 B8@2 B6@1 "
     "B7@1 B8@1 B6@0 B7@0 B8@0 U\n"},
    /* p = 4, m = 10: N = 5 (torch's relaxation; Megatron with N = p refuses) */
    {"interleaved", NULL, 8, 2, 10, 10, NULL},
    /* looped BFS: per chunk every forward, chunks reversed every backward descending */
    {"looped-bfs", NULL, 4, 2, 3, 3,
     "device 0: F0@0 F1@0 F2@0 F0@1 F1@1 F2@1 B2@1 B1@1 B0@1 B2@0 B1@0 B0@0 U\n"
     "device 1: F0@0 F1@0 F2@0 F0@1 F1@1 F2@1 B2@1 B1@1 B0@1 B2@0 B1@0 B0@0 U\n"},
};

static char *text(int i)
{
    struct pb_pipe p;
    struct pb_program progs[MAXS];
    build(goldens[i].name, goldens[i].variant, goldens[i].S, goldens[i].v, goldens[i].N,
          goldens[i].M, &p, progs);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (int k = 0; k < pb_pipe_devices(&p); k++)
        pb_program_print(f, &p, &progs[k], 0);
    fclose(f);
    pb_programs_finish(progs, pb_pipe_devices(&p));
    return buf;
}

START_TEST(golden_programs)
{
    char *got = text(_i);
    if (goldens[_i].expect) {
        ck_assert_msg(!strcmp(got, goldens[_i].expect), "%s S=%d v=%d M=%d:\n%s\nexpected\n%s",
                      goldens[_i].name, goldens[_i].S, goldens[_i].v, goldens[_i].M, got,
                      goldens[_i].expect);
    } else {  /* p = 4, m = 10, N = 5: rank 0's warm-up 2·3 + 5 = 11 forwards */
        ck_assert_msg(!strncmp(got, "device 0: F0@0 F1@0 F2@0 F3@0 F4@0 F0@1 F1@1 F2@1 F3@1 F4@1 "
                                    "F5@0 B0@1 ", 60), "%s", got);
    }
    free(got);
}
END_TEST

/* Over a grid: every stage at lag 0 (its ops read W^(⌊j/M⌋), one U per step), each
 * stage's backwards ascending (interleaved) or descending per step (looped-bfs), the
 * device programs validated at the capacity they need. */
START_TEST(chunk_properties)
{
    const char *names[] = {"interleaved", "looped-bfs"};
    for (int s = 0; s < 2; s++)
        for (int np = 1; np <= 4; np++)
            for (int v = 1; v <= 3; v++)
                for (int M = 1; M <= 9; M++) {
                    int S = np * v, N = 2 * M + (M > 1 ? M / 2 : 0);
                    struct pb_err e;
                    const struct pb_schedule *sch = pb_schedule_find(names[s], &e);
                    struct pb_pipe p = {.stages = S, .length = N, .microbatches = M,
                                        .optimizer = PB_OPT_SGD, .chunks = v};
                    if (sch->check(&p, &e)) {  /* torch's rule: m mod ⌊m/p⌋ ≠ 0 */
                        int rounds = M / np > 1 ? M / np : 1, last = N % M;
                        int lr = last / np > 1 ? last / np : 1;
                        ck_assert_msg(!s && (M % rounds || (last && last % lr)), "%s p=%d v=%d "
                                      "M=%d refused: %s", names[s], np, v, M, e.msg);
                        continue;
                    }
                    struct pb_program progs[MAXS], st[MAXS];
                    build(names[s], NULL, S, v, N, M, &p, progs);
                    ck_assert(pb_programs_stages(&p, progs, st, &e) == 0);
                    for (int k = 0; k < S; k++) {
                        struct pb_version_plan vp;
                        pb_version_plan_init(&vp, &p, &st[k]);
                        int us = 0, prev = -1;
                        for (int i = 0; i < st[k].n; i++) {
                            const struct pb_op *op = &st[k].ops[i];
                            if (op->kind == PB_OP_U) {
                                us++;
                                prev = -1;
                                continue;
                            }
                            ck_assert_msg(vp.ops[i].base == vp.ops[i].sync &&
                                          vp.ops[i].sync == op->mb / M, "%s p=%d v=%d M=%d "
                                          "stage %d op %d: lag", names[s], np, v, M, k, i);
                            if (op->kind == PB_OP_B) {
                                ck_assert(prev < 0 || (s ? op->mb < prev : op->mb > prev));
                                prev = op->mb;
                            }
                        }
                        ck_assert_int_eq(us, (N + M - 1) / M);
                        pb_version_plan_finish(&vp);
                    }
                    pb_programs_finish(st, S);
                    pb_programs_finish(progs, np);
                }
}
END_TEST

/* Looped BFS at p = 2, m = 8, v = 2 deadlocks with channels of capacity 1 (it needs 4,
 * as SCHEDULES.md's section 0.2 found); interleaved runs at 1. */
START_TEST(capacity_found)
{
    struct pb_pipe p;
    struct pb_program progs[MAXS];
    struct pb_err e;
    int cap = build("looped-bfs", NULL, 4, 2, 8, 8, &p, progs);
    ck_assert_int_eq(cap, 4);
    ck_assert(pb_programs_validate(&p, progs, 1, &e) != 0);
    ck_assert_msg(strstr(e.msg, "deadlock with channel capacity 1") != NULL, "%s", e.msg);
    pb_programs_finish(progs, 2);
    ck_assert_int_eq(build("interleaved", NULL, 8, 2, 8, 8, &p, progs), 1);
    pb_programs_finish(progs, 4);
}
END_TEST

/* Activations in flight per device (chunk units), SCHEDULES.md §7 at p = 4, m = 8, v = 2:
 * interleaved 11 9 7 5; looped BFS v·m = 16 on every device. */
START_TEST(acts_in_flight)
{
    struct pb_pipe p;
    struct pb_program progs[MAXS];
    const int expect[4] = {11, 9, 7, 5};
    build("interleaved", NULL, 8, 2, 8, 8, &p, progs);
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(pb_sim_acts_peak(&progs[k]), expect[k]);
    pb_programs_finish(progs, 4);
    build("looped-bfs", NULL, 8, 2, 8, 8, &p, progs);
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(pb_sim_acts_peak(&progs[k]), 16);
    pb_programs_finish(progs, 4);
}
END_TEST

/* The simulator at p = 4, m = 8, v = 2 with chunk costs T_F = T_I = T_W = 1 (B = 2) or
 * T_W = 0.5: every device idles (p−1)(t_F+t_B) = 9 / 7.5 chunk units in an isolated
 * step, and per step in steady state (SCHEDULES.md §7: (p−1)(T_F+T_B)/v in stage time). */
START_TEST(sim_closed_form)
{
    const double tw[2] = {1, 0.5};
    for (int c = 0; c < 2; c++)
        for (int steps = 1; steps <= 3; steps += 2) {
            struct pb_pipe p;
            struct pb_program progs[MAXS];
            struct pb_sim_cost costs[MAXS];
            struct pb_sim_result r;
            struct pb_err e;
            build("interleaved", NULL, 8, 2, 8 * steps, 8, &p, progs);
            for (int k = 0; k < 8; k++)
                costs[k] = (struct pb_sim_cost){1, 1 + tw[c], 0, 0, 1, tw[c]};
            ck_assert_msg(pb_simulate(&p, progs, costs, 1, false, &r, &e) == 0, "%s", e.msg);
            double busy = steps * 2 * 8 * (2 + tw[c]), idle = 3 * (2 + tw[c]);
            for (int k = 0; k < 4; k++) {
                ck_assert_msg(fabs(r.busy_s[k] - busy) < 1e-9, "device %d busy %g", k,
                              r.busy_s[k]);
                /* the first step's fill and the last's drain, and steady steps add the
                 * same idle each */
                ck_assert_msg(fabs(r.makespan_s - busy - steps * idle) < 1e-9, "T_W %g, %d "
                              "steps: device %d idles %g, expected %g per step", tw[c], steps,
                              k, r.makespan_s - r.busy_s[k], idle);
            }
            pb_sim_result_finish(&r);
            pb_programs_finish(progs, 4);
        }
}
END_TEST

/* The last run of db (interleaved, D = 4 stages on 2 devices, N micro-batches, M per step)
 * predicted its first epoch from that epoch's recorded op medians and copy times: its
 * sim_wall_s is the simulator's makespan of the device programs with those costs, bit for
 * bit, and on each device its stages' simulated busy fractions, 1 − sim_bubble, add up to
 * the device's in the simulation. */
static void check_prediction(const char *db, int N, int M)
{
    enum { D = 4 };
    sqlite3 *h;
    sqlite3_stmt *st;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    ck_assert(sqlite3_prepare_v2(h, "SELECT f_s, b_s, u_s, comm_s, sim_bubble FROM stage_stats "
                                    "WHERE run_id = (SELECT max(id) FROM runs) AND epoch = 0 "
                                    "ORDER BY stage", -1, &st, NULL) == SQLITE_OK);
    struct pb_sim_cost costs[D];
    double sim_bubble[D];
    int k = 0;
    for (; sqlite3_step(st) == SQLITE_ROW && k < D; k++) {
        int msgs = (k > 0 ? N : 0) + (k + 1 < D ? N : 0);
        costs[k] = (struct pb_sim_cost){sqlite3_column_double(st, 0), sqlite3_column_double(st, 1),
                                        sqlite3_column_double(st, 2),
                                        sqlite3_column_double(st, 3) / msgs, 0, 0};
        ck_assert_msg(sqlite3_column_type(st, 4) == SQLITE_FLOAT, "stage %d: no sim_bubble", k);
        sim_bubble[k] = sqlite3_column_double(st, 4);
    }
    sqlite3_finalize(st);
    ck_assert_int_eq(k, D);
    ck_assert(sqlite3_prepare_v2(h, "SELECT sim_wall_s FROM epochs WHERE run_id = (SELECT max(id) "
                                    "FROM runs) AND epoch = 0", -1, &st, NULL) == SQLITE_OK);
    ck_assert(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_FLOAT);
    double recorded = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    struct pb_pipe p;
    struct pb_program progs[D];
    int cap = build("interleaved", NULL, D, 2, N, M, &p, progs);
    struct pb_sim_result res;
    struct pb_err e;
    ck_assert_msg(pb_simulate_pipe(pb_schedule_find("interleaved", NULL), &p, progs, costs,
                                   cap > D ? cap : D, false, &res, &e) == 0, "%s", e.msg);
    ck_assert_msg(memcmp(&res.makespan_s, &recorded, sizeof recorded) == 0, "M=%d: recorded "
                  "prediction %.17g s, the simulator's %.17g s", M, recorded, res.makespan_s);
    double device_busy[2] = {0, 0};
    for (int s = 0; s < D; s++)
        device_busy[pb_pipe_device_of(&p, s)] += 1.0 - sim_bubble[s];
    for (int r = 0; r < 2; r++)
        ck_assert_msg(fabs(device_busy[r] - (1.0 - res.bubble[r])) <= 1e-12, "M=%d device %d: "
                      "its stages busy %.17g of the epoch, the simulator's device %.17g", M, r,
                      device_busy[r], 1.0 - res.bubble[r]);
    pb_sim_result_finish(&res);
    pb_programs_finish(progs, 2);
}

/* mlp on D = 4 stages, M micro-batches per step: interleaved and looped-bfs on 2
 * devices of 2 chunks, seq and threads. */
static void trains(int M)
{
    struct pb_run_cfg c;
    small_cfg(&c);
    c.model = "mlp";
    c.stages = 4;
    c.microbatches = M;
    size_t n_ref, n_gp, n;
    c.schedule = "1f1b";
    run_ok(&c, "ref.safetensors");
    float *ref = load_weights(tmp_path("ref.safetensors"), &n_ref);
    c.schedule = "gpipe";
    run_ok(&c, "gpipe.safetensors");
    float *gp = load_weights(tmp_path("gpipe.safetensors"), &n_gp);
    ck_assert_uint_eq(n_ref, n_gp);
    c.chunks = 2;
    const char *execs[] = {"seq", "threads"};
    for (int x = 0; x < 2; x++) {
        c.executor = execs[x];
        c.schedule = "interleaved";
        run_ok(&c, "il.safetensors");
        float *w = load_weights(tmp_path("il.safetensors"), &n);
        ck_assert_uint_eq(n, n_ref);
        char what[96];
        snprintf(what, sizeof what, "interleaved %s M=%d: weights against 1f1b's", execs[x], M);
        pb_assert_same_bits(what, w, ref, n);
        snprintf(what, sizeof what, "interleaved %s M=%d: weights against GPipe's", execs[x], M);
        pb_assert_within(what, w, gp, n, 1e-5f);
        free(w);
        check_prediction(c.db, c.limit_train / c.microbatch_size, M);
        c.schedule = "looped-bfs";
        run_ok(&c, "bfs.safetensors");
        w = load_weights(tmp_path("bfs.safetensors"), &n);
        ck_assert_uint_eq(n, n_gp);
        ck_assert_msg(memcmp(w, gp, n * sizeof *w) == 0, "looped-bfs %s M=%d: weights differ "
                      "from GPipe's", execs[x], M);
        free(w);
    }
    free(ref);
    free(gp);
}

START_TEST(trains_mlp) { trains(4); }
END_TEST

START_TEST(trains_mlp_m3) { trains(3); }
END_TEST

/* Looped BFS at M = 16 on 2 devices of 2 chunks needs channels of 8 messages, more than
 * the threads executor's D = 4: it runs (rather than deadlocks) with the capacity the
 * plan found, and trains GPipe's weights. */
START_TEST(threads_capacity)
{
    struct pb_run_cfg c;
    small_cfg(&c);
    c.model = "mlp";
    c.stages = 4;
    c.microbatches = 16;
    c.limit_train = 512;
    c.epochs = 1;
    size_t n_gp, n;
    c.schedule = "gpipe";
    run_ok(&c, "gpipe16.safetensors");
    float *gp = load_weights(tmp_path("gpipe16.safetensors"), &n_gp);
    c.chunks = 2;
    c.executor = "threads";
    c.schedule = "looped-bfs";
    run_ok(&c, "bfs16.safetensors");
    float *w = load_weights(tmp_path("bfs16.safetensors"), &n);
    ck_assert_uint_eq(n, n_gp);
    ck_assert_msg(memcmp(w, gp, n * sizeof *w) == 0, "looped-bfs M=16 threads: weights "
                  "differ from GPipe's");
    free(w);
    free(gp);
}
END_TEST

/* `program --versions --sync` prints F3@1:0|0 …: lag 0 on every chunk. */
START_TEST(cli_lag_zero)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "chunks");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "program --schedule interleaved --stages 8 "
                             "--chunks 2 --length 12 --microbatches 4 --versions --sync"), 0);
    int toks = 0;
    for (char *save, *t = strtok_r(out, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
        int mb, c, v, s;
        char kind;
        if (sscanf(t, "%c%d@%d:%d|%d", &kind, &mb, &c, &v, &s) != 5)
            continue;
        ck_assert_msg(v == s && v == mb / 4 && c >= 0 && c < 2, "token %s", t);
        toks++;
    }
    ck_assert_int_eq(toks, 4 * 2 * 12 * 2);
    cli_cleanup(dir);
}
END_TEST

START_TEST(bad_inputs)
{
    char dir[64], out[4096];
    cli_scratch(dir, sizeof dir, "chunks");
    static const struct {
        const char *args, *msg;
    } bad[] = {
        {"program --schedule interleaved --stages 4 --chunks 0", "--chunks must be at least 1"},
        {"program --schedule 1f1b --stages 4 --chunks 2", "schedule '1f1b' has no model chunks"},
        {"program --schedule interleaved --stages 5 --chunks 2", "must divide the stages D = 5"},
        {"program --schedule interleaved --stages 8 --chunks 2 --microbatches 9 --length 9",
         "not a multiple of its 2 rounds"},
        {"run --model mlp --schedule interleaved --stages 4 --chunks 0", "--chunks must be at "
         "least 1"},
        {"run --model mlp --dataset synthetic --limit-train 64 --limit-val 16 "
         "--microbatch-size 8 --schedule gpipe --stages 4 --chunks 2 --db x.db",
         "schedule 'gpipe' has no model chunks"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = cli_run(dir, out, sizeof out, "%s", bad[i].args);
        ck_assert_msg(rc == 2 && strstr(out, bad[i].msg), "%s: exit %d, %s", bad[i].args, rc,
                      out);
    }
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("chunks");
    TCase *fast = tcase_create("fast");
    tcase_set_tags(fast, "fast");
    tcase_set_timeout(fast, 300);
    tcase_add_loop_test(fast, golden_programs, 0, (int)(sizeof goldens / sizeof *goldens));
    tcase_add_test(fast, chunk_properties);
    tcase_add_test(fast, capacity_found);
    tcase_add_test(fast, acts_in_flight);
    tcase_add_test(fast, sim_closed_form);
    tcase_add_test(fast, cli_lag_zero);
    tcase_add_test(fast, bad_inputs);
    tcase_add_test(fast, trains_mlp);
    tcase_add_test(fast, threads_capacity);
    suite_add_tcase(s, fast);
    TCase *tc = tcase_create("training");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, trains_mlp_m3);
    suite_add_tcase(s, tc);
    return s;
}
