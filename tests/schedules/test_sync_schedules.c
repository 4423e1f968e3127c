/* tests/schedules/test_sync_schedules.c — the synchronous schedules of semantics §4.9 and §4.10
 * (1f1b, zb-h1, zb-h2) and the split backward: golden programs at several (D, M),
 * including M < D, M not a multiple of D and a last partial step; for every
 * synchronous schedule over a grid, lag 0 (every op reads the version a synchronous run
 * reads), one U per step after the step's last gradient op (the flush) and each stage's
 * weight gradients in ascending micro-batch order; the simulator's closed forms
 * (bubble, isolated and steady, and the activations in flight per stage); I then W
 * giving B's bits for every layer and block case and for the sequence layers (the LSTM
 * and the attention, which split for real: on a stage and alone with lengths, with the
 * bytes they keep between I and W); and the trained weights of D = 4
 * stages equal to one stage accumulating in 1F1B's order, bit for bit, and to GPipe's
 * within a stated tolerance. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/sim/sim.h"
#include "schedules/registry.h"
#include "tests/support/block_cases.h"
#include "tests/support/cli_util.h"
#include "tests/support/layer_cases.h"
#include "tests/support/layer_run.h"
#include "tests/support/train_util.h"
#include "tests/support/test_util.h"
#include "workloads/models/workload.h"

#define MAXD 8

static const char *const sync_names[] = {"1f1b", "zb-h1", "zb-h2"};
#define NSYNC 3

static void build_form(const char *name, const char *variant, int D, int N, int M,
                       struct pb_pipe *p, struct pb_program *progs)
{
    struct pb_err e;
    const struct pb_schedule *s = pb_schedule_find(name, &e);
    ck_assert_msg(s != NULL, "%s", e.msg);
    *p = (struct pb_pipe){.stages = D, .length = N, .microbatches = M, .optimizer = PB_OPT_SGD,
                          .variant = variant};
    ck_assert_msg(pb_programs_build(s, p, progs, &e) == 0, "%s: %s", name, e.msg);
    ck_assert_msg(pb_programs_validate(p, progs, 1, &e) == 0, "%s D=%d N=%d M=%d: %s", name, D,
                  N, M, e.msg);
}

static void build(const char *name, int D, int N, int M, struct pb_pipe *p,
                  struct pb_program *progs)
{
    build_form(name, NULL, D, N, M, p, progs);
}

/* The programs' text, one line per stage (caller frees). */
static char *text(const char *name, const char *variant, int D, int N, int M)
{
    struct pb_pipe p;
    struct pb_program progs[MAXD];
    build_form(name, variant, D, N, M, &p, progs);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (int k = 0; k < D; k++)
        pb_program_print(f, &p, &progs[k], 0);
    fclose(f);
    pb_programs_finish(progs, D);
    return buf;
}

static const struct {
    const char *name, *variant;
    int D, N, M;
    const char *expect;
} goldens[] = {
    /* torch's Schedule1F1B (semantics §4.9): rank 0 F0 F1 F2 F3 B0 F4 B1 …, rank 3 F0 B0 … */
    {"1f1b", NULL, 4, 8, 8,
     "stage 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7 U\n"
     "stage 1: F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7 U\n"
     "stage 2: F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7 U\n"
     "stage 3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 U\n"},
    /* M < D: the warm-up is capped at M (pipebench keeps min(), torch refuses m < p) */
    {"1f1b", NULL, 3, 4, 2,
     "stage 0: F0 F1 B0 B1 U F2 F3 B2 B3 U\n"
     "stage 1: F0 F1 B0 B1 U F2 F3 B2 B3 U\n"
     "stage 2: F0 B0 F1 B1 U F2 B2 F3 B3 U\n"},
    /* M = 6 not a multiple of D = 4, and a last step of 1 */
    {"1f1b", NULL, 4, 7, 6,
     "stage 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 U F6 B6 U\n"
     "stage 1: F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5 U F6 B6 U\n"
     "stage 2: F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5 U F6 B6 U\n"
     "stage 3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 U F6 B6 U\n"},
    /* the authors' hand schedule (semantics §4.10), rank 1: F0 F1 F2 I0 F3 I1 W0 F4 … W7 */
    {"zb-h1", NULL, 4, 8, 8,
     "stage 0: F0 F1 F2 F3 I0 W0 F4 I1 W1 F5 I2 W2 F6 I3 W3 F7 I4 W4 I5 W5 I6 W6 I7 W7 U\n"
     "stage 1: F0 F1 F2 I0 F3 I1 W0 F4 I2 W1 F5 I3 W2 F6 I4 W3 F7 I5 W4 I6 W5 I7 W6 W7 U\n"
     "stage 2: F0 F1 I0 F2 I1 F3 I2 W0 F4 I3 W1 F5 I4 W2 F6 I5 W3 F7 I6 W4 I7 W5 W6 W7 U\n"
     "stage 3: F0 I0 F1 I1 F2 I2 F3 I3 W0 F4 I4 W1 F5 I5 W2 F6 I6 W3 F7 I7 W4 W5 W6 W7 U\n"},
    {"zb-h1", NULL, 2, 3, 3,
     "stage 0: F0 F1 I0 W0 F2 I1 W1 I2 W2 U\n"
     "stage 1: F0 I0 F1 I1 W0 F2 I2 W1 W2 U\n"},
    /* M = 1 < D: each step is one micro-batch through the pipe */
    {"zb-h1", NULL, 3, 2, 1,
     "stage 0: F0 I0 W0 U F1 I1 W1 U\n"
     "stage 1: F0 I0 W0 U F1 I1 W1 U\n"
     "stage 2: F0 I0 W0 U F1 I1 W1 U\n"},
    /* the quick-start patch: stage 0 never splits; stage k splits its first k and last
     * steady iterations and its cool-down, and runs its queued W's oldest first */
    {"zb-h1", "quick-start", 3, 5, 5,
     "stage 0: F0 F1 F2 B0 F3 B1 F4 B2 B3 B4 U\n"
     "stage 1: F0 F1 I0 F2 B1 F3 B2 F4 I3 W0 I4 W3 W4 U\n"
     "stage 2: F0 I0 F1 I1 F2 B2 F3 B3 F4 I4 W0 W1 W4 U\n"},
    /* the same with twice the warm-up, rank 0: F0 … F6 I0 W0 F7 I1 W1 I2 W2 … */
    {"zb-h2", NULL, 4, 8, 8,
     "stage 0: F0 F1 F2 F3 F4 F5 F6 I0 W0 F7 I1 W1 I2 W2 I3 W3 I4 W4 I5 W5 I6 W6 I7 W7 U\n"
     "stage 1: F0 F1 F2 F3 F4 I0 F5 I1 F6 I2 W0 F7 I3 W1 I4 W2 I5 W3 I6 W4 I7 W5 W6 W7 U\n"
     "stage 2: F0 F1 F2 I0 F3 I1 F4 I2 F5 I3 F6 I4 W0 F7 I5 W1 I6 W2 I7 W3 W4 W5 W6 W7 U\n"
     "stage 3: F0 I0 F1 I1 F2 I2 F3 I3 F4 I4 F5 I5 F6 I6 W0 F7 I7 W1 W2 W3 W4 W5 W6 W7 U\n"},
    /* M = 3 < 2(D−1) = 4: the warm-up capped at M, W's deferred until i ≥ 2(D−1) − w */
    {"zb-h2", NULL, 3, 3, 3,
     "stage 0: F0 F1 F2 I0 I1 W0 I2 W1 W2 U\n"
     "stage 1: F0 F1 F2 I0 I1 I2 W0 W1 W2 U\n"
     "stage 2: F0 I0 F1 I1 F2 I2 W0 W1 W2 U\n"},
};

START_TEST(golden_programs)
{
    char *got = text(goldens[_i].name, goldens[_i].variant, goldens[_i].D, goldens[_i].N,
                     goldens[_i].M);
    ck_assert_msg(!strcmp(got, goldens[_i].expect), "%s D=%d N=%d M=%d:\ngot:\n%sexpected:\n%s",
                  goldens[_i].name, goldens[_i].D, goldens[_i].N, goldens[_i].M, got,
                  goldens[_i].expect);
    free(got);
}
END_TEST

/* Every synchronous schedule over a grid of (D, N, M): validates at channel capacity 1;
 * every op reads the version of the synchronous run (lag 0); each device's step b has
 * exactly one U, after its last B or W and before any F of step b+1 (the flush); W's
 * and B's come in ascending micro-batch order (the accumulated gradient is 1F1B's);
 * and the warm-up is semantics §4.9's and §4.10's: min(D−k, M) forwards before the
 * first B (torch's count), min((D−1−k)·c + 1, M) before the first I. */
START_TEST(sync_properties)
{
    static const int Ds[] = {1, 2, 3, 4, 8}, Ns[] = {1, 5, 8, 13, 16}, Ms[] = {1, 2, 3, 4, 8};
    for (int si = 0; si < NSYNC; si++)
        for (int di = 0; di < 5; di++)
            for (int ni = 0; ni < 5; ni++)
                for (int mi = 0; mi < 5; mi++) {
                    int D = Ds[di], N = Ns[ni], M = Ms[mi];
                    struct pb_pipe p;
                    struct pb_program pr[MAXD];
                    build(sync_names[si], D, N, M, &p, pr);
                    int c = !strcmp(sync_names[si], "zb-h2") ? 2 : 1;
                    for (int k = 0; k < D; k++) {
                        struct pb_version_plan vp;
                        pb_version_plan_init(&vp, &p, &pr[k]);
                        int step = 0, last_g = -1, nf = 0, first_back = -1;
                        for (int i = 0; i < pr[k].n; i++) {
                            const struct pb_op *op = &pr[k].ops[i];
                            if (op->kind == PB_OP_U) {
                                ck_assert_int_eq(last_g, (step + 1) * M < N ? (step + 1) * M - 1
                                                                            : N - 1);
                                step++;
                                continue;
                            }
                            ck_assert_msg(op->mb / M == step, "%s D=%d N=%d M=%d stage %d op "
                                          "%d: micro-batch %d in step %d", sync_names[si], D, N,
                                          M, k, i, op->mb, step);
                            ck_assert_msg(vp.ops[i].base == vp.ops[i].sync && vp.ops[i].ahead == 0,
                                          "%s D=%d N=%d M=%d stage %d op %d: reads %d, sync %d",
                                          sync_names[si], D, N, M, k, i, vp.ops[i].base,
                                          vp.ops[i].sync);
                            if (pb_op_accumulates(op->kind)) {
                                ck_assert_int_eq(op->mb, last_g + 1);
                                last_g = op->mb;
                            }
                            if (op->kind == PB_OP_F && step == 0 && first_back < 0)
                                nf++;
                            if (op->kind != PB_OP_F && first_back < 0)
                                first_back = op->kind;
                        }
                        ck_assert_int_eq(step, (N + M - 1) / M);
                        int n0 = N < M ? N : M;
                        int want = first_back == PB_OP_B ? D - k : (D - 1 - k) * c + 1;
                        ck_assert_msg(nf == (want < n0 ? want : n0), "%s D=%d N=%d M=%d stage "
                                      "%d: %d forwards before the first backward", sync_names[si],
                                      D, N, M, k, nf);
                        pb_version_plan_finish(&vp);
                    }
                    pb_programs_finish(pr, D);
                }
}
END_TEST

/* The quick-start patch over the same grid: valid, lag 0, and every gradient of step b
 * before its U (its W's leave micro-batch order, so the sum is 1F1B's within rounding). */
START_TEST(quick_start_properties)
{
    static const int Ds[] = {1, 2, 3, 4, 8}, Ns[] = {1, 5, 8, 13, 16}, Ms[] = {1, 2, 3, 4, 8};
    for (int di = 0; di < 5; di++)
        for (int ni = 0; ni < 5; ni++)
            for (int mi = 0; mi < 5; mi++) {
                int D = Ds[di], N = Ns[ni], M = Ms[mi], step = 0;
                struct pb_pipe p;
                struct pb_program pr[MAXD];
                build_form("zb-h1", "quick-start", D, N, M, &p, pr);
                for (int k = 0; k < D; k++) {
                    struct pb_version_plan vp;
                    pb_version_plan_init(&vp, &p, &pr[k]);
                    step = 0;
                    for (int i = 0; i < pr[k].n; i++) {
                        const struct pb_op *op = &pr[k].ops[i];
                        if (op->kind == PB_OP_U) {
                            step++;
                            continue;
                        }
                        ck_assert_int_eq(op->mb / M, step);
                        ck_assert_int_eq(vp.ops[i].base, vp.ops[i].sync);
                    }
                    ck_assert_int_eq(step, (N + M - 1) / M);
                    pb_version_plan_finish(&vp);
                }
                pb_programs_finish(pr, D);
            }
}
END_TEST

/* `pipebench program --versions --sync` prints ":b|b" at every F, B, I and W. */
START_TEST(cli_lag_zero)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "sync");
    for (int si = 0; si < NSYNC; si++) {
        ck_assert_int_eq(cli_run(dir, out, sizeof out, "program --schedule %s --stages 4 "
                                 "--length 12 --microbatches 4 --versions --sync",
                                 sync_names[si]), 0);
        int toks = 0;
        for (char *save, *t = strtok_r(out, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
            int mb, v, s;
            char kind;
            if (sscanf(t, "%c%d:%d|%d", &kind, &mb, &v, &s) != 4)
                continue;
            ck_assert_msg(v == s && v == mb / 4, "%s: token %s", sync_names[si], t);
            toks++;
        }
        ck_assert_int_eq(toks, 4 * 12 * (strcmp(sync_names[si], "1f1b") ? 3 : 2));
    }
    cli_cleanup(dir);
}
END_TEST

/* A traced zb-h1 run: its events hold I and W, and `pipebench trace` draws a flow for
 * every activation (F) and every gradient (carried by I) between the two stages. */
START_TEST(cli_trace_split)
{
    char dir[64], out[4096];
    cli_scratch(dir, sizeof dir, "sync");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run --quiet --model mlp --dataset synthetic "
                             "--limit-train 64 --limit-val 16 --microbatch-size 8 --epochs 1 "
                             "--stages 2 --schedule zb-h1 --trace-epochs all --db r.db"), 0);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM events WHERE kind = 'I'"),
                     16);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM events WHERE kind = 'W'"),
                     16);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "trace 1 --db r.db --out t.json"), 0);
    ck_assert_msg(strstr(out, "16 flows") != NULL, "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* The idle time per device of k steps of M = 8 at D = 4 (comm free, channels of
 * capacity D as the threads executor's): makespan minus each device's busy time, the
 * same on every device; and the peak activations in flight per device. */
static double idle(const char *name, int D, int M, int steps, struct pb_sim_cost c, int *acts)
{
    struct pb_pipe p;
    struct pb_program pr[MAXD];
    build(name, D, steps * M, M, &p, pr);
    struct pb_sim_cost costs[MAXD];
    for (int k = 0; k < D; k++)
        costs[k] = c;
    struct pb_sim_result r;
    struct pb_err e;
    ck_assert_msg(pb_simulate(&p, pr, costs, D, false, &r, &e) == 0, "%s", e.msg);
    double idle0 = r.makespan_s - r.busy_s[0];
    for (int k = 0; k < D; k++) {
        ck_assert_msg(fabs(r.makespan_s - r.busy_s[k] - idle0) < 1e-9, "%s: device %d idles "
                      "%g, device 0 %g", name, k, r.makespan_s - r.busy_s[k], idle0);
        if (acts)
            acts[k] = r.acts_peak[k];
    }
    pb_sim_result_finish(&r);
    pb_programs_finish(pr, D);
    return idle0;
}

/* semantics §4.10's table at D = 4, M = 8, T_F = T_I = 1, B = I + W, T_W = 1 and 0.5:
 * the idle time of an isolated step and the steady bubble per step (the difference between 3 and
 * 2 steps), against the closed forms 1F1B (p−1)(T_F+T_B), ZB-H1 (p−1)(T_F+T_I−T_W),
 * ZB-H2 steady max(0, (p−1)(T_F+T_I−2T_W)) and isolated max((p−1)T_F, that); and the
 * closed forms at other cost points and D = 2. */
START_TEST(sim_closed_forms)
{
    static const double pts[][3] = {{1, 1, 1}, {1, 1, 0.5}, {1, 1.5, 0.7}, {1, 2, 1},
                                    {1, 0.8, 0.3}, {2, 1, 1}};
    static const int Ds[] = {2, 4};
    for (int di = 0; di < 2; di++)
        for (size_t i = 0; i < sizeof pts / sizeof *pts; i++) {
            int D = Ds[di], M = 8;
            double F = pts[i][0], I = pts[i][1], W = pts[i][2], B = I + W;
            struct pb_sim_cost c = {.f = F, .b = B, .u = 0, .recv = 0, .i = I, .w = W};
            double work = M * (F + B);
            double want[NSYNC] = {(D - 1) * (F + B), (D - 1) * (F + I - W),
                                  fmax(0, (D - 1) * (F + I - 2 * W))};
            for (int s = 0; s < NSYNC; s++) {
                double one = idle(sync_names[s], D, M, 1, c, NULL);
                double two = idle(sync_names[s], D, M, 2, c, NULL) + 2 * work;
                double three = idle(sync_names[s], D, M, 3, c, NULL) + 3 * work;
                double steady = three - two - work;
                double iso = s == 2 ? fmax((D - 1) * F, want[s]) : want[s];
                ck_assert_msg(fabs(steady - want[s]) < 1e-9, "%s D=%d (F, I, W) = (%g, %g, %g): "
                              "steady bubble %g, closed form %g", sync_names[s], D, F, I, W,
                              steady, want[s]);
                ck_assert_msg(fabs(one - iso) < 1e-9, "%s D=%d (F, I, W) = (%g, %g, %g): isolated "
                              "idle %g, closed form %g", sync_names[s], D, F, I, W, one, iso);
            }
        }
    /* the table of semantics §4.10: peak activations in flight per rank at p = 4, m = 8 */
    static const int peaks[NSYNC][4] = {{4, 3, 2, 1}, {4, 4, 4, 4}, {7, 7, 7, 7}};
    struct pb_sim_cost c = {.f = 1, .b = 2, .i = 1, .w = 1};
    for (int s = 0; s < NSYNC; s++) {
        int acts[4];
        idle(sync_names[s], 4, 8, 2, c, acts);
        for (int k = 0; k < 4; k++)
            ck_assert_msg(acts[k] == peaks[s][k], "%s: stage %d holds %d in flight, semantics "
                          "§4.10 says %d", sync_names[s], k, acts[k], peaks[s][k]);
    }
}
END_TEST

/* Runs a backward of the case's stage, fused (split false) or as I then W, from the same
 * forward; returns dx and the gradient buffer (malloc'ed, host). */
static void run_backward(struct case_run *r, const float *x, const float *dy, bool split,
                         float **dx, float **grads)
{
    struct pb_backend *be = r->be;
    struct pb_stage *s = &r->stage;
    struct pb_err e;
    be->ops->fill(be, s->grads, 0.0f, s->nparams);
    struct pb_stage_act act;
    free(case_forward(r, x, true, &act, 3));
    struct pb_tensor tdy, tdx;
    ck_assert(pb_tensor_alloc(be, &tdy, s->out_shape, PB_LAYOUT_PLAIN, PB_MEM_COMM, &e) == 0);
    be->ops->upload(be, tdy.data, dy, pb_shape_count(tdy.shape) * sizeof(float));
    struct pb_step_ctx c = {.train = true, .seed = 7, .mb = act.mb};
    *grads = malloc((s->nparams + 1) * sizeof **grads);
    if (split) {
        ck_assert_msg(pb_stage_backward_input(s, &c, s->params, &act, &tdy, &tdx, &e) == 0, "%s",
                      e.msg);
        /* I leaves a split layer's weight gradient to W: a layer with one must show 0 here */
        be->ops->download(be, *grads, s->grads, s->nparams * sizeof **grads);
        be->ops->sync(be);
        for (int b = s->first; b < s->last; b++)
            for (int i = 0; i < s->model->blocks[b].nnodes; i++) {
                const struct pb_layer *l = &s->model->blocks[b].nodes[i];
                size_t np = l->ops->param_count(l);
                for (size_t q = 0; q < np && l->ops->backward_weights; q++)
                    ck_assert_msg((*grads)[s->param_off[b - s->first] + l->param_off + q] ==
                                  0.0f, "%s: I wrote weight gradient %zu", l->name, q);
            }
        ck_assert_msg(pb_stage_backward_weights(s, &c, &act, &e) == 0, "%s", e.msg);
    } else {
        ck_assert_msg(pb_stage_backward(s, &c, s->params, &act, &tdy, &tdx, &e) == 0, "%s",
                      e.msg);
    }
    pb_backend_free(be, tdy.data);
    size_t n = pb_shape_count(tdx.shape);
    *dx = malloc(n * sizeof **dx);
    be->ops->download(be, *dx, tdx.data, n * sizeof **dx);
    be->ops->download(be, *grads, s->grads, s->nparams * sizeof **grads);
    be->ops->sync(be);
    pb_backend_free(be, tdx.data);
    ck_assert_int_eq(be->mem_cur[PB_MEM_ACTS], 0);
}

/* I then W gives B's dx and weight gradients bit for bit on one case. */
static void split_case(struct case_run *r, const char *name)
{
    struct pb_stage *s = &r->stage;
    size_t nx = pb_shape_count(s->in_shape), ny = pb_shape_count(s->out_shape);
    float *x = calloc(nx + 1, sizeof *x), *dy = calloc(ny + 1, sizeof *dy);
    for (size_t i = 0; i < nx; i++)
        x[i] = (float)sin(0.37 * (double)i + 0.1);
    for (size_t i = 0; i < ny; i++)
        dy[i] = (float)cos(0.23 * (double)i);
    float *dx_b, *g_b, *dx_iw, *g_iw;
    run_backward(r, x, dy, false, &dx_b, &g_b);
    run_backward(r, x, dy, true, &dx_iw, &g_iw);
    ck_assert_msg(memcmp(dx_b, dx_iw, nx * sizeof *x) == 0, "%s: dx of I differs from B's", name);
    char what[160];
    snprintf(what, sizeof what, "%s: weight gradient of I then W against B's", name);
    pb_assert_same_bits(what, g_iw, g_b, s->nparams);
    free(x);
    free(dy);
    free(dx_b);
    free(g_b);
    free(dx_iw);
    free(g_iw);
}

START_TEST(split_layers)
{
    if (!layer_cases[_i].train)
        return;
    struct case_run r;
    case_run_init(&r, &layer_cases[_i], 11);
    split_case(&r, layer_cases[_i].name);
    case_run_finish(&r);
}
END_TEST

START_TEST(split_blocks)
{
    struct case_run r;
    block_run_init(&r, &block_grad_cases[_i], 11);
    split_case(&r, block_grad_cases[_i].name);
    case_run_finish(&r);
}
END_TEST

/* Stage cases of the sequence layers (a stage has one input and no lengths here): the
 * LSTM unidirectional over several layers with the dropout between them, bidirectional
 * over two, and the attention over slices of the input, alone and fed by an LSTM. */
#define LSTM_CFG(in_f, hidden, layers, bi, drop)                                          \
    {.kind = PB_LAYER_LSTM, .in_features = in_f, .out_features = hidden,                      \
     .num_layers = layers, .bidirectional = bi, .p = drop}

static void s_lstm3_dropout(struct pb_model *m, struct pb_block *b)
{
    int x = -1;
    pb_block_node(m, b, "lstm", &(struct pb_layer_cfg)LSTM_CFG(6, 5, 3, false, 0.3f), 1, &x);
}

static void s_bilstm2(struct pb_model *m, struct pb_block *b)
{
    int x = -1;
    pb_block_node(m, b, "bilstm", &(struct pb_layer_cfg)LSTM_CFG(6, 4, 2, true, 0.0f), 1, &x);
}

/* x [B, T, 9]: queries its features [0, 4), keys [4, 9) */
static void s_attention(struct pb_model *m, struct pb_block *b)
{
    int q = pb_block_slice(m, b, "q", -1, 2, 0, 4), k = pb_block_slice(m, b, "k", -1, 2, 4, 9);
    pb_block_attention(m, b, "attn", q, k, 4, 5, 6);
}

/* the queries an LSTM's output, the keys the input's features [4, 9); the output a linear's */
static void s_lstm_attention(struct pb_model *m, struct pb_block *b)
{
    int x = -1;
    int h = pb_block_node(m, b, "lstm", &(struct pb_layer_cfg)LSTM_CFG(9, 4, 2, false, 0.0f),
                          1, &x);
    int k = pb_block_slice(m, b, "k", -1, 2, 4, 9);
    pb_block_attention(m, b, "attn", h, k, 4, 5, 6);
    pb_block_linear(m, b, "fc", 5, 3);
}

static const struct layer_case seq_stage_cases[] = {
    {"lstm3_dropout", {2, 5, 6, 1}, true, s_lstm3_dropout},
    {"bilstm2", {3, 4, 6, 1}, true, s_bilstm2},
    {"attention", {2, 4, 9, 1}, true, s_attention},
    {"lstm_attention", {3, 5, 9, 1}, true, s_lstm_attention},
};

START_TEST(split_seq_stages)
{
    struct case_run r;
    case_run_init(&r, &seq_stage_cases[_i], 11);
    split_case(&r, seq_stage_cases[_i].name);
    case_run_finish(&r);
}
END_TEST

/* The sequence layers alone (tests/support/layer_run.c: the attention's two inputs, the lengths a
 * bidirectional LSTM packs by and the attention masks with): I then W against B, bit for
 * bit, and the bytes held between I and W those semantics §4.10 lists. The batches run
 * the LSTM's recurrent products on packed panels (B ≤ 16) and on oneDNN (B = 20), the
 * attention's backward in one and in several query blocks per source. */
struct seq_layer_case {
    const char *name;
    struct pb_layer_cfg cfg;
    int nin;
    struct pb_shape in[2];
    bool lengths;
};

static const struct seq_layer_case seq_layer_cases[] = {
    {"lstm", LSTM_CFG(5, 4, 1, false, 0.0f), 1, {{3, 6, 5, 1}}, false},
    {"lstm_b20", LSTM_CFG(4, 3, 1, false, 0.0f), 1, {{20, 3, 4, 1}}, false},
    {"lstm3_dropout", LSTM_CFG(5, 4, 3, false, 0.25f), 1, {{2, 5, 5, 1}}, false},
    {"bilstm_packed", LSTM_CFG(5, 4, 1, true, 0.0f), 1, {{3, 6, 5, 1}}, true},
    {"bilstm2_packed_dropout", LSTM_CFG(3, 4, 2, true, 0.2f), 1, {{4, 5, 3, 1}}, true},
    {"attn_masked",
     {.kind = PB_LAYER_ATTENTION, .in_features = 4, .key_features = 6, .out_features = 7},
     2, {{2, 3, 4, 1}, {2, 5, 6, 1}}, true},
    {"attn_wide",
     {.kind = PB_LAYER_ATTENTION, .in_features = 8, .key_features = 6, .out_features = 40},
     2, {{3, 4, 8, 1}, {3, 5, 6, 1}}, true},
    {"attn_batch",
     {.kind = PB_LAYER_ATTENTION, .in_features = 5, .key_features = 4, .out_features = 20},
     2, {{33, 2, 5, 1}, {33, 3, 4, 1}}, false},
};

/* What semantics §4.10 says the layer keeps between I and W on the CPU backend, in bytes:
 * the LSTM's gate gradients [B, T, 4H] per layer and direction, its aux's sequences and,
 * unidirectional, its output; the attention's dpq, dpk and v and g's increments. */
static size_t cpu_kept_bytes(const struct seq_layer_case *c)
{
    size_t B = (size_t)c->in[0].n, T = (size_t)c->in[0].c, H = (size_t)c->cfg.out_features;
    if (c->cfg.kind == PB_LAYER_ATTENTION)
        return ((B * T + B * (size_t)c->in[1].c) * H + H + 1) * sizeof(float);
    size_t L = (size_t)c->cfg.num_layers, dirs = c->cfg.bidirectional ? 2 : 1;
    size_t floats = L * dirs * B * T * 4 * H + (L - 1) * B * T * dirs * H;
    floats += c->cfg.bidirectional ? L * 2 * B * T * H : B * T * H;
    return floats * sizeof(float) + (c->cfg.bidirectional ? B * sizeof(int32_t) : 0);
}

START_TEST(split_seq_layers)
{
    const struct seq_layer_case *c = &seq_layer_cases[_i];
    int B = c->in[0].n, T = c->in[1].c ? c->in[1].c : c->in[0].c;
    int32_t *len = malloc((size_t)B * sizeof *len);
    for (int b = 0; b < B; b++)  /* T, T − 2, … down to 1, wrapping */
        len[b] = T - (2 * b) % T;
    struct lrun r;
    lrun_init(&r, c->cfg, c->nin, c->in, c->lengths ? len : NULL);
    float *x[2] = {NULL, NULL};
    for (int i = 0; i < c->nin; i++) {
        size_t n = pb_shape_count(c->in[i]);
        x[i] = malloc(n * sizeof(float));
        for (size_t j = 0; j < n; j++)
            x[i][j] = (float)sin(0.37 * (double)j + 0.1 + i);
    }
    set_inputs(&r, x);
    size_t ny = pb_shape_count(r.l.out_shape);
    float *dy = malloc(ny * sizeof *dy);
    for (size_t j = 0; j < ny; j++)
        dy[j] = (float)cos(0.23 * (double)j);
    float *g_b = malloc((r.np + 1) * sizeof *g_b), *g_iw = malloc((r.np + 1) * sizeof *g_iw);
    float *dx_b[2] = {NULL, NULL}, *dx_iw[2] = {NULL, NULL};
    struct pb_node_act act;
    free(lforward(&r, true, &act));
    lbackward(&r, &act, dy, dx_b);
    r.be->ops->download(r.be, g_b, r.grads, r.np * sizeof *g_b);
    free(lforward(&r, true, &act));
    size_t kept;
    lbackward_split(&r, &act, dy, dx_iw, &kept);
    r.be->ops->download(r.be, g_iw, r.grads, r.np * sizeof *g_iw);
    r.be->ops->sync(r.be);
    char what[160];
    for (int i = 0; i < c->nin; i++) {
        snprintf(what, sizeof what, "%s: dx%d of I against B's", c->name, i);
        pb_assert_same_bits(what, dx_iw[i], dx_b[i], pb_shape_count(c->in[i]));
        free(dx_b[i]);
        free(dx_iw[i]);
        free(x[i]);
    }
    snprintf(what, sizeof what, "%s: weight gradients of I then W against B's", c->name);
    pb_assert_same_bits(what, g_iw, g_b, r.np);
    ck_assert_msg(kept == cpu_kept_bytes(c), "%s: I kept %zu bytes for W, semantics §4.10 says "
                  "%zu", c->name, kept, cpu_kept_bytes(c));
    free(g_b);
    free(g_iw);
    free(dy);
    free(len);
    lrun_finish(&r);
}
END_TEST

/* D = 4, M = 4: every synchronous schedule trains model's weights exactly as one stage
 * accumulating 4 micro-batches in 1F1B's order (each stage's gradients ascend), and
 * within 1e-5 (relative to max(1, |w|)) of GPipe's, whose backwards descend. */
static void trains_as_accumulation(const char *model)
{
    struct pb_run_cfg c;
    small_cfg(&c);
    c.model = model;
    const struct pb_workload *wl = pb_workload_find(model, NULL);
    const struct pb_preset *p;
    ck_assert(wl && pb_workload_preset(wl, NULL, &p, NULL) == 0);
    if (p) {  /* a zoo model: its default preset on synthetic data of its input shape */
        struct pb_shape in = pb_preset_sample(p);
        c.dataset = "synthetic";
        c.synthetic = (struct pb_dataset_opts){.c = in.c, .h = in.h, .w = in.w, .nclasses = 10};
        c.limit_train = 128;
        c.epochs = 1;
    }
    c.stages = 4;
    c.microbatches = 4;
    c.threads = 4;
    size_t n_ref, n_gp, n;
    float *ref = plain_training_1f1b(&c, 4, &n_ref);
    float *gp = plain_training(&c, 4, &n_gp);
    ck_assert_uint_eq(n_ref, n_gp);
    for (int s = 0; s < NSYNC; s++) {
        c.schedule = sync_names[s];
        run_ok(&c, "sync.safetensors");
        float *w = load_weights(tmp_path("sync.safetensors"), &n);
        ck_assert_uint_eq(n, n_ref);
        char what[160];
        snprintf(what, sizeof what, "%s %s: weights against those accumulated in 1F1B's order",
                 model, sync_names[s]);
        pb_assert_same_bits(what, w, ref, n);
        snprintf(what, sizeof what, "%s %s: weights against GPipe's", model, sync_names[s]);
        pb_assert_within(what, w, gp, n, 1e-5f);
        free(w);
    }
    /* the quick-start patch sums its W's out of order: within the same tolerance */
    c.schedule = "zb-h1";
    c.variant = "quick-start";
    run_ok(&c, "quick.safetensors");
    float *q = load_weights(tmp_path("quick.safetensors"), &n);
    ck_assert_uint_eq(n, n_ref);
    char what[96];
    snprintf(what, sizeof what, "%s zb-h1 quick-start: weights against 1F1B's", model);
    pb_assert_within(what, q, ref, n, 1e-5f);
    free(q);
    free(ref);
    free(gp);
}

START_TEST(trains_mlp) { trains_as_accumulation("mlp"); }
END_TEST

START_TEST(trains_lenet) { trains_as_accumulation("lenet"); }
END_TEST

START_TEST(trains_zoo) { trains_as_accumulation("googlenet"); }
END_TEST

/* The sequence models (embedding, LSTM, attention; the plain loop of train_util.c does
 * not feed lengths): the synchronous schedules, fused B or I then W, save the same bits,
 * their stages' gradients all ascending. */
static void schedules_agree(const char *model)
{
    struct pb_run_cfg c;
    small_cfg(&c);
    c.model = model;
    c.dataset = "synthetic";
    c.synthetic = (struct pb_dataset_opts){0};
    c.limit_train = 128;
    c.limit_val = 64;
    c.microbatch_size = 16;
    c.epochs = 1;
    c.stages = 4;
    c.microbatches = 4;
    size_t n_ref, n;
    c.schedule = sync_names[0];
    run_ok(&c, "ref.safetensors");
    float *ref = load_weights(tmp_path("ref.safetensors"), &n_ref);
    for (int s = 1; s < NSYNC; s++) {
        c.schedule = sync_names[s];
        run_ok(&c, "sync.safetensors");
        float *w = load_weights(tmp_path("sync.safetensors"), &n);
        ck_assert_uint_eq(n, n_ref);
        ck_assert_msg(memcmp(w, ref, n * sizeof *w) == 0, "%s: %s's weights differ from 1f1b's",
                      model, sync_names[s]);
        free(w);
    }
    free(ref);
}

START_TEST(agree_residual_lstm) { schedules_agree("residual-lstm"); }
END_TEST

START_TEST(agree_gnmt8) { schedules_agree("gnmt8"); }
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("sync_schedules");
    TCase *fast = tcase_create("fast");
    tcase_set_tags(fast, "fast");
    tcase_set_timeout(fast, 300);
    tcase_add_loop_test(fast, golden_programs, 0, (int)(sizeof goldens / sizeof *goldens));
    tcase_add_test(fast, sync_properties);
    tcase_add_test(fast, quick_start_properties);
    tcase_add_test(fast, cli_lag_zero);
    tcase_add_test(fast, cli_trace_split);
    tcase_add_test(fast, sim_closed_forms);
    tcase_add_loop_test(fast, split_layers, 0, n_layer_cases);
    tcase_add_loop_test(fast, split_blocks, 0, n_block_grad_cases);
    tcase_add_loop_test(fast, split_seq_stages, 0,
                        (int)(sizeof seq_stage_cases / sizeof *seq_stage_cases));
    tcase_add_loop_test(fast, split_seq_layers, 0,
                        (int)(sizeof seq_layer_cases / sizeof *seq_layer_cases));
    tcase_add_test(fast, trains_mlp);
    suite_add_tcase(s, fast);
    TCase *tc = tcase_create("training");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, trains_lenet);
    tcase_add_test(tc, trains_zoo);
    tcase_add_test(tc, agree_residual_lstm);
    tcase_add_test(tc, agree_gnmt8);
    suite_add_tcase(s, tc);
    return s;
}
