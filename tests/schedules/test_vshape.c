/* tests/schedules/test_vshape.c — V placement, zb-v and dualpipe-v (semantics §4.13): the device
 * programs equal torch 2.15's ScheduleZBVZeroBubble and ScheduleDualPipeV action lists
 * (tests/fixtures/vshape_orders.txt, written by fixtures_vshape.py) at every (p, m) there,
 * pairs included; the stage of each chunk; over a grid, each stage at lag 0 with each
 * chunk's gradient ops ascending, validated at the capacity found (the edge between
 * stages p−1 and p on one device included); the simulator's idle time and activations
 * against SCHEDULES.md §7; `program --versions --sync` at lag 0; `simulate` with chunks
 * (one row per device); refusals with exit 2;
 * and the trained weights of mlp and lenet under seq and threads (mpi's:
 * tests/exec/test_executors.c) equal 1f1b's bit for
 * bit and GPipe's within 1e-5 (GPipe adds the gradients in descending order). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/sim/sim.h"
#include "schedules/registry.h"
#include "tests/support/cli_util.h"
#include "tests/support/test_util.h"
#include "tests/support/train_util.h"

#define MAXP 8

/* Builds and validates zb-v or dualpipe-v on p devices at the capacity it needs
 * (returned). */
static int build(const char *name, int np, int N, int M, struct pb_pipe *p,
                 struct pb_program *progs)
{
    struct pb_err e;
    const struct pb_schedule *s = pb_schedule_find(name, &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    *p = (struct pb_pipe){.stages = 2 * np, .length = N, .microbatches = M,
                          .optimizer = PB_OPT_SGD};
    pb_pipe_adopt(p, s);
    ck_assert_msg(pb_programs_build(s, p, progs, &e) == 0, "%s p=%d: %s", name, np, e.msg);
    int cap = pb_programs_capacity(p, progs, &e);
    ck_assert_msg(cap >= 1, "%s p=%d N=%d M=%d: %s", name, np, N, M, e.msg);
    ck_assert_msg(pb_programs_validate(p, progs, cap, &e) == 0, "%s p=%d N=%d M=%d: %s", name,
                  np, N, M, e.msg);
    return cap;
}

/* V placement: device r holds stages r and 2p−1−r; loop placement r and r + p. */
START_TEST(placement)
{
    for (int np = 1; np <= 5; np++)
        for (int r = 0; r < np; r++) {
            struct pb_pipe v = {.stages = 2 * np, .chunks = 2, .placement = PB_PLACE_V};
            struct pb_pipe l = {.stages = 2 * np, .chunks = 2, .placement = PB_PLACE_LOOP};
            ck_assert_int_eq(pb_pipe_stage_of(&v, r, 0), r);
            ck_assert_int_eq(pb_pipe_stage_of(&v, r, 1), 2 * np - 1 - r);
            ck_assert_int_eq(pb_pipe_stage_of(&l, r, 1), r + np);
        }
    /* v = 4 zigzags as torch's style "v": device 0 of 2 holds stages 0, 3, 4, 7 */
    struct pb_pipe z = {.stages = 8, .chunks = 4, .placement = PB_PLACE_V};
    ck_assert_int_eq(pb_pipe_stage_of(&z, 0, 1), 3);
    ck_assert_int_eq(pb_pipe_stage_of(&z, 0, 2), 4);
    ck_assert_int_eq(pb_pipe_stage_of(&z, 0, 3), 7);
}
END_TEST

/* Every case of the fixture: "case NAME p m" and p lines of device programs. */
START_TEST(torch_orders)
{
    FILE *f = fopen(pb_fixture_path("vshape_orders.txt"), "r");
    ck_assert_msg(f != NULL, "cannot read %s", pb_fixture_path("vshape_orders.txt"));
    char line[8192], name[32];
    int cases = 0, pairs = 0, np, m;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "case %31s %d %d", name, &np, &m) != 3)
            continue;
        struct pb_pipe p;
        struct pb_program progs[MAXP];
        build(name, np, m, m, &p, progs);
        for (int r = 0; r < np; r++) {
            ck_assert(fgets(line, sizeof line, f) != NULL);
            char *got = NULL;
            size_t len = 0;
            FILE *g = open_memstream(&got, &len);
            pb_program_print(g, &p, &progs[r], 0);
            fclose(g);
            ck_assert_msg(!strcmp(got, line), "%s p=%d m=%d device %d:\n%sexpected (torch)\n%s",
                          name, np, m, r, got, line);
            pairs += strchr(got, '+') != NULL;
            free(got);
        }
        pb_programs_finish(progs, np);
        cases++;
    }
    fclose(f);
    ck_assert_int_ge(cases, 17);
    ck_assert_int_gt(pairs, 0);
}
END_TEST

/* Over a grid of p, M and N (several steps, a last partial one): the programs run with
 * channels of capacity 1 (the local edge's included), every stage at lag 0 with one U
 * per step, each chunk's gradient ops (B, W) in ascending micro-batch order,
 * pairs only on dualpipe-v. */
START_TEST(properties)
{
    const char *names[] = {"zb-v", "dualpipe-v"};
    for (int s = 0; s < 2; s++)
        for (int np = 1; np <= 4; np++)
            for (int M = 1; M <= 10; M++)
                for (int N = M; N <= 3 * M + 1; N += M + 1) {
                    struct pb_pipe p;
                    struct pb_err e;
                    struct pb_pipe q = {.stages = 2 * np, .length = N, .microbatches = M,
                                        .optimizer = PB_OPT_SGD};
                    const struct pb_schedule *sch = pb_schedule_find(names[s], &e);
                    pb_pipe_adopt(&q, sch);
                    int last = N % M;
                    if (sch->check(&q, &e)) {
                        ck_assert_msg(s == 1 && (M < 2 * np || (last && last < 2 * np)),
                                      "%s p=%d M=%d N=%d refused: %s", names[s], np, M, N,
                                      e.msg);
                        continue;
                    }
                    struct pb_program progs[MAXP], st[2 * MAXP];
                    ck_assert_msg(build(names[s], np, N, M, &p, progs) == 1, "%s p=%d M=%d "
                                  "N=%d: channels of 1 deadlock", names[s], np, M, N);
                    for (int r = 0; r < np; r++)
                        for (int i = 0; i < progs[r].n; i++)
                            ck_assert(!progs[r].ops[i].pair || s == 1);
                    ck_assert(pb_programs_stages(&p, progs, st, &e) == 0);
                    for (int k = 0; k < p.stages; k++) {
                        struct pb_version_plan vp;
                        pb_version_plan_init(&vp, &p, &st[k]);
                        int us = 0, prev = -1;
                        for (int i = 0; i < st[k].n; i++) {
                            const struct pb_op *op = &st[k].ops[i];
                            if (op->kind == PB_OP_U) {
                                us++;
                                continue;
                            }
                            ck_assert_msg(vp.ops[i].base == vp.ops[i].sync &&
                                          vp.ops[i].sync == op->mb / M, "%s p=%d M=%d stage %d "
                                          "op %d: lag", names[s], np, M, k, i);
                            if (pb_op_accumulates(op->kind)) {
                                ck_assert_msg(op->mb > prev, "%s p=%d M=%d stage %d: gradient "
                                              "of %d after %d", names[s], np, M, k, op->mb, prev);
                                prev = op->mb;
                            }
                        }
                        ck_assert_int_eq(us, (N + M - 1) / M);
                        pb_version_plan_finish(&vp);
                    }
                    pb_programs_finish(st, p.stages);
                    pb_programs_finish(progs, np);
                }
}
END_TEST

/* Device p−1 holds stages p−1 and p: the activation and gradient between them go through
 * a channel the device both fills and drains. Moving device 1's first F@1 (p = 2) ahead
 * of its F@0 leaves it waiting on itself: the validator reports the deadlock. */
START_TEST(local_edge)
{
    struct pb_pipe p;
    struct pb_program progs[MAXP];
    struct pb_err e;
    ck_assert_int_eq(build("zb-v", 2, 4, 4, &p, progs), 1);
    struct pb_program *d1 = &progs[1];
    ck_assert(d1->ops[0].kind == PB_OP_F && d1->ops[0].chunk == 0 && d1->ops[1].chunk == 1);
    struct pb_op t = d1->ops[0];
    d1->ops[0] = d1->ops[1];
    d1->ops[1] = t;
    ck_assert(pb_programs_validate(&p, progs, 4, &e) != 0);
    ck_assert_msg(strstr(e.msg, "device 1 at op 0 (F0@1) waits for the activation of stage 1"),
                  "%s", e.msg);
    pb_programs_finish(progs, 2);
}
END_TEST

/* A pair mark on anything but an F before a B is refused. */
START_TEST(pair_checked)
{
    struct pb_pipe p;
    struct pb_program progs[MAXP];
    struct pb_err e;
    build("dualpipe-v", 2, 4, 4, &p, progs);
    int i = 0;
    while (!progs[0].ops[i].pair)
        i++;
    progs[0].ops[i].pair = 0;
    progs[0].ops[i + 1].pair = 1;
    ck_assert(pb_programs_validate(&p, progs, 4, &e) != 0);
    ck_assert_msg(strstr(e.msg, "marked as an overlapped pair"), "%s", e.msg);
    pb_programs_finish(progs, 2);
}
END_TEST

/* The idle time per device, makespan − busy, of `steps` steps of m = 8 at p = 4 with
 * chunk costs T_F = 1 and (T_I, T_W); the activations in flight per device. */
static double idle(const char *name, int steps, double ti, double tw, double tf, int *acts)
{
    struct pb_pipe p;
    struct pb_program progs[MAXP];
    struct pb_sim_cost costs[2 * MAXP];
    struct pb_sim_result r;
    struct pb_err e;
    build(name, 4, 8 * steps, 8, &p, progs);
    for (int k = 0; k < 8; k++)
        costs[k] = (struct pb_sim_cost){tf, ti + tw, 0, 0, ti, tw};
    ck_assert_msg(pb_simulate(&p, progs, costs, 1, false, &r, &e) == 0, "%s", e.msg);
    double most = 0;
    for (int k = 0; k < 4; k++) {
        most = fmax(most, r.makespan_s - r.busy_s[k]);
        if (acts)
            acts[k] = pb_sim_acts_peak(&progs[k]);
    }
    pb_sim_result_finish(&r);
    pb_programs_finish(progs, 4);
    return most;
}

/* SCHEDULES.md §7 (p = 4, m = 8, chunk units, T_F = T_I = 1): ZB-V idles 3 in an isolated
 * step at T_W = 1 and 0.5, 0 per further step at T_W = 1 and 3 at 0.5, with 8 chunk
 * activations in flight on every device; §4's other points: isolated 4.8 at
 * (T_I, T_W) = (1.5, 0.7), 6 at (2, 1), 4 at (0.8, 0.3), 8 at T_F = 2 (6 per further
 * step). DualPipeV, pairs costed F + B: 3 / 4.5 isolated and per step, 9 in flight. */
START_TEST(sim_bubble)
{
    static const struct {
        const char *name;
        double tf, ti, tw, isolated, steady;
    } pts[] = {
        {"zb-v", 1, 1, 1, 3, 0},       {"zb-v", 1, 1, 0.5, 3, 3},
        {"zb-v", 1, 1.5, 0.7, 4.8, -1}, {"zb-v", 1, 2, 1, 6, -1},
        {"zb-v", 1, 0.8, 0.3, 4, -1},  {"zb-v", 2, 1, 1, 8, 6},
        {"dualpipe-v", 1, 1, 1, 3, 3}, {"dualpipe-v", 1, 1, 0.5, 4.5, 4.5},
        {"dualpipe-v", 1, 1.5, 0.7, 5.9, 5.9}, {"dualpipe-v", 1, 2, 1, 8, 8},
    };
    for (size_t i = 0; i < sizeof pts / sizeof *pts; i++) {
        int acts[4];
        double one = idle(pts[i].name, 1, pts[i].ti, pts[i].tw, pts[i].tf, acts);
        ck_assert_msg(fabs(one - pts[i].isolated) < 1e-9, "%s T_F %g T_I %g T_W %g: isolated "
                      "idle %g, SCHEDULES.md %g", pts[i].name, pts[i].tf, pts[i].ti, pts[i].tw,
                      one, pts[i].isolated);
        for (int k = 0; k < 4; k++)
            ck_assert_int_eq(acts[k], strcmp(pts[i].name, "zb-v") ? 9 : 8);
        if (pts[i].steady < 0)
            continue;
        double three = idle(pts[i].name, 3, pts[i].ti, pts[i].tw, pts[i].tf, NULL);
        ck_assert_msg(fabs((three - one) / 2 - pts[i].steady) < 1e-9, "%s T_F %g T_I %g T_W "
                      "%g: %g per further step, SCHEDULES.md %g", pts[i].name, pts[i].tf,
                      pts[i].ti, pts[i].tw, (three - one) / 2, pts[i].steady);
    }
}
END_TEST

/* `program --versions --sync` with the chunks left out: F3@1:0|0 …, lag 0 everywhere. */
START_TEST(cli_lag_zero)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "vshape");
    const char *names[] = {"zb-v", "dualpipe-v"};
    for (int s = 0; s < 2; s++) {
        ck_assert_int_eq(cli_run(dir, out, sizeof out, "program --schedule %s --stages 8 "
                                 "--length 16 --microbatches 8 --versions --sync", names[s]), 0);
        int toks = 0;
        for (char *save, *t = strtok_r(out, " +\n", &save); t; t = strtok_r(NULL, " +\n", &save)) {
            int mb, c, v, sy;
            char kind;
            if (sscanf(t, "%c%d@%d:%d|%d", &kind, &mb, &c, &v, &sy) != 5)
                continue;
            ck_assert_msg(v == sy && v == mb / 8 && c >= 0 && c < 2, "%s token %s", names[s], t);
            toks++;
        }
        /* F and I, W or B per micro-batch and stage: 2 + (1 or 2) of 16 on 8 stages */
        ck_assert_int_ge(toks, 16 * 8 * 2);
    }
    cli_cleanup(dir);
}
END_TEST

/* `simulate` with chunks: one row per device with its stages (zb-v in a V without
 * --chunks, interleaved in loops with --chunks 2); --record refused. */
START_TEST(cli_simulate)
{
    char dir[64], out[8192];
    cli_scratch(dir, sizeof dir, "vshape");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule zb-v --stages 8 "
                             "--length 8 --microbatches 8 --cost 1,2,0,0,1,1"), 0);
    ck_assert_msg(strstr(out, "makespan 51 s") && strstr(out, "\n0       0,7             48 ") &&
                  strstr(out, "\n3       3,4             48 ") && !strstr(out, "\n4 "), "%s",
                  out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule interleaved --chunks 2 "
                             "--stages 8 --length 8 --microbatches 8 --cost 1,2,0"), 0);
    ck_assert_msg(strstr(out, "\n0       0,4 ") && strstr(out, "\n3       3,7 "), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule dualpipe-v --stages 4 "
                             "--cost 1,2,0 --record --db s.db"), 2);
    ck_assert_msg(strstr(out, "leave --record out"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule zb-v --stages 4 "
                             "--chunks 0 --cost 1,2,0"), 2);
    ck_assert_msg(strstr(out, "--chunks must be at least 1"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

START_TEST(bad_inputs)
{
    char dir[64], out[4096];
    cli_scratch(dir, sizeof dir, "vshape");
    static const struct {
        const char *args, *msg;
    } bad[] = {
        {"program --schedule zb-v --stages 8 --chunks 3", "runs exactly 2 model chunks per "
         "device"},
        {"program --schedule dualpipe-v --stages 4 --chunks 1", "give --chunks 2 or leave "
         "--chunks out"},
        {"program --schedule zb-v --stages 5", "--stages 5 must be a multiple of 2"},
        {"program --schedule dualpipe-v --stages 8 --microbatches 7 --length 14",
         "needs at least 2·p = 8 micro-batches per step on p = 4 devices"},
        {"program --schedule dualpipe-v --stages 4 --microbatches 4 --length 6",
         "last step has N mod M = 2 micro-batches, fewer than 2·p = 4"},
        {"program --schedule dualpipe-v --stages 4 --microbatches 8 --length 3",
         "the epoch's N = 3 micro-batches are fewer than 2·p = 4"},
        {"run --model mlp --dataset synthetic --limit-train 64 --limit-val 16 "
         "--microbatch-size 8 --schedule dualpipe-v --stages 4 --microbatches 3 --db x.db",
         "needs at least 2·p = 4 micro-batches"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = cli_run(dir, out, sizeof out, "%s", bad[i].args);
        ck_assert_msg(rc == 2 && strstr(out, bad[i].msg), "%s: exit %d, %s", bad[i].args, rc,
                      out);
    }
    cli_cleanup(dir);
}
END_TEST

/* model on D = 4 stages (p = 2 devices of 2 chunks in a V), M = 4: zb-v and dualpipe-v
 * under seq and threads against 1f1b (bit for bit: each stage adds its micro-batches'
 * gradients in ascending order, as 1F1B) and GPipe (within 1e-5: it adds them
 * descending). */
static void trains(const char *model)
{
    struct pb_run_cfg c;
    small_cfg(&c);
    c.model = model;
    c.stages = 4;
    c.microbatches = 4;
    c.epochs = 1;
    size_t n_ref, n_gp, n;
    c.schedule = "1f1b";
    run_ok(&c, "ref.safetensors");
    float *ref = load_weights(tmp_path("ref.safetensors"), &n_ref);
    c.schedule = "gpipe";
    run_ok(&c, "gpipe.safetensors");
    float *gp = load_weights(tmp_path("gpipe.safetensors"), &n_gp);
    ck_assert_uint_eq(n_ref, n_gp);
    const char *execs[] = {"seq", "threads"}, *names[] = {"zb-v", "dualpipe-v"};
    for (int x = 0; x < 2; x++)
        for (int s = 0; s < 2; s++) {
            c.executor = execs[x];
            c.schedule = names[s];
            run_ok(&c, "v.safetensors");
            float *w = load_weights(tmp_path("v.safetensors"), &n);
            ck_assert_uint_eq(n, n_ref);
            for (size_t i = 0; i < n; i++) {
                ck_assert_msg(memcmp(&w[i], &ref[i], sizeof *w) == 0, "%s %s %s: weight %zu "
                              "%.9g, 1f1b's %.9g", model, names[s], execs[x], i, w[i], ref[i]);
                ck_assert_msg(fabsf(w[i] - gp[i]) <= 1e-5f * fmaxf(1.0f, fabsf(gp[i])),
                              "%s %s %s: weight %zu %.9g, GPipe's %.9g", model, names[s],
                              execs[x], i, w[i], gp[i]);
            }
            free(w);
        }
    free(ref);
    free(gp);
}

START_TEST(trains_mlp) { trains("mlp"); }
END_TEST

START_TEST(trains_lenet) { trains("lenet"); }
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("vshape");
    TCase *fast = tcase_create("fast");
    tcase_set_tags(fast, "fast");
    tcase_set_timeout(fast, 300);
    tcase_add_test(fast, placement);
    tcase_add_test(fast, torch_orders);
    tcase_add_test(fast, properties);
    tcase_add_test(fast, local_edge);
    tcase_add_test(fast, pair_checked);
    tcase_add_test(fast, sim_bubble);
    tcase_add_test(fast, cli_lag_zero);
    tcase_add_test(fast, cli_simulate);
    tcase_add_test(fast, bad_inputs);
    suite_add_tcase(s, fast);
    TCase *tc = tcase_create("training");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, trains_mlp);
    tcase_add_test(tc, trains_lenet);
    suite_add_tcase(s, tc);
    return s;
}
