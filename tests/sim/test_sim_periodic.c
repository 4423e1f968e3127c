/* tests/sim/test_sim_periodic.c — large pipes by steady-state extrapolation
 * (harness/sim/sim_periodic.h, design §6.6): for every schedule and variant, several D,
 * M, N and channel capacities and non-uniform stage costs (not powers of two, one stage
 * 10× slower), the extrapolated epoch equals the op-by-op one: makespan, busy and bubble
 * per device within 1e-9, ops and peaks exactly. Events, or a pipe too short to
 * extrapolate, take the op-by-op path; a pipe over the program bound is extrapolated
 * (against 1F1B's closed form), and `pipebench simulate` says so. */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "harness/sim/sim_periodic.h"
#include "schedules/registry.h"
#include "tests/support/cli_util.h"

enum { MAXD = 8 };

static const char *const names[][2] = {
    {"gpipe", NULL}, {"pipedream", NULL}, {"pipedream-2bw", NULL}, {"spectrain", NULL},
    {"spectrain", "code"}, {"xpipe", NULL}, {"xpipe", "note"}, {"pipeoptim", NULL},
    {"pipeoptim", "code"},
};

/* Stage costs of kind `which`: 0 uniform (not powers of two), 1 different per stage,
 * 2 as 1 with stage `slow` 10× slower. */
static void costs_of(int which, int D, int slow, struct pb_sim_cost *c)
{
    for (int k = 0; k < D; k++) {
        c[k] = which == 0 ? (struct pb_sim_cost){0.3, 0.7, 0.1, 0.05, 0, 0}
                          : (struct pb_sim_cost){0.3 + 0.037 * k, 0.61 + 0.11 * (k % 3),
                                                 0.013 * (k + 1), 0.021 * (k % 2), 0, 0};
        if (which == 2 && k == slow) {
            c[k].f *= 10;
            c[k].b *= 10;
        }
    }
}

static void close_to(double got, double want, const char *what, const char *label)
{
    ck_assert_msg(fabs(got - want) <= 1e-9 * fmax(fabs(want), 1e-300) ||
                      (got == 0 && want == 0),
                  "%s: %s extrapolated %.17g, simulated %.17g", label, what, got, want);
}

/* One case: extrapolated (full_ops 0) against op by op (full_ops LLONG_MAX). Returns
 * whether it was extrapolated. */
static bool one(const char *name, const char *variant, int D, int N, int M, int cap,
                const struct pb_sim_cost *c)
{
    struct pb_err e;
    const struct pb_schedule *sch = pb_schedule_find(name, &e);
    ck_assert(sch != NULL);
    struct pb_pipe p = {.stages = D, .length = N, .microbatches = M, .optimizer = PB_OPT_SGD,
                        .variant = variant};
    char label[160];
    snprintf(label, sizeof label, "%s%s%s D %d N %d M %d capacity %d", name,
             variant ? "/" : "", variant ? variant : "", D, N, M, cap);
    struct pb_sim_result x, f;
    ck_assert_msg(!pb_simulate_pipe_above(sch, &p, NULL, c, cap, false, 0, &x, &e), "%s: %s",
                  label, e.msg);
    ck_assert_msg(!pb_simulate_pipe_above(sch, &p, NULL, c, cap, false, LLONG_MAX, &f, &e),
                  "%s: %s", label, e.msg);
    ck_assert_msg(!f.extrapolated, "%s", label);
    close_to(x.makespan_s, f.makespan_s, "makespan", label);
    ck_assert_msg(x.ops == f.ops, "%s: ops %ld, simulated %ld", label, x.ops, f.ops);
    for (int k = 0; k < D; k++) {
        close_to(x.busy_s[k], f.busy_s[k], "busy", label);
        ck_assert_msg(fabs(x.bubble[k] - f.bubble[k]) <= 1e-9, "%s: stage %d bubble %.17g, "
                      "simulated %.17g", label, k, x.bubble[k], f.bubble[k]);
        ck_assert_msg(x.acts_peak[k] == f.acts_peak[k] && x.stash_peak[k] == f.stash_peak[k] &&
                      x.wcopies_peak[k] == f.wcopies_peak[k], "%s: stage %d peaks %d %d %d, "
                      "simulated %d %d %d", label, k, x.acts_peak[k], x.stash_peak[k],
                      x.wcopies_peak[k], f.acts_peak[k], f.stash_peak[k], f.wcopies_peak[k]);
    }
    if (x.extrapolated) {
        int P = sch->uses_microbatches ? M : 1;
        ck_assert_msg(x.from_length < N && (N - x.from_length) % P == 0 && x.period_mbs == P &&
                      x.period_s >= 0, "%s: from %d, period %d", label, x.from_length,
                      x.period_mbs);
    }
    bool extrapolated = x.extrapolated;
    pb_sim_result_finish(&x);
    pb_sim_result_finish(&f);
    return extrapolated;
}

/* Every schedule and variant, D 1 to 8, M from 1 to above D, capacities 1, 2 and D, the
 * three kinds of costs (the slow stage first, in the middle, last); N long enough to
 * extrapolate from, and not a multiple of M. Every case must be extrapolated. */
START_TEST(test_extrapolated_equals_full)
{
    static const int Ds[] = {1, 2, 3, 5, 8};
    int cases = 0;
    for (size_t s = 0; s < sizeof names / sizeof *names; s++)
        for (size_t d = 0; d < sizeof Ds / sizeof *Ds; d++) {
            int D = Ds[d];
            const struct pb_schedule *sch = pb_schedule_find(names[s][0], NULL);
            int Ms[] = {D, 3, D + 4};
            for (int m = 0; m < (sch->uses_microbatches ? 3 : 1); m++) {
                int M = Ms[m];
                if (!strcmp(names[s][0], "pipedream-2bw") && M < D)
                    continue;
                int caps[] = {1, 2, D};
                for (int ci = 0; ci < 3; ci++)
                    for (int which = 0; which < 3; which++) {
                        struct pb_sim_cost c[MAXD];
                        costs_of(which, D, (int)(ci + d) % D, c);
                        int P = sch->uses_microbatches ? M : 1;
                        int N = 12 * (D + 2 * P + 16) + P / 2 + 1;
                        ck_assert_msg(one(names[s][0], names[s][1], D, N, M, caps[ci], c),
                                      "%s D %d M %d capacity %d costs %d: not extrapolated",
                                      names[s][0], D, M, caps[ci], which);
                        cases++;
                    }
            }
        }
    ck_assert_int_gt(cases, 300);
}
END_TEST

/* Events need every op: asked for, the op-by-op path runs even above the threshold (and
 * fills them); so does a pipe too short to extrapolate from. */
START_TEST(test_full_path_when_needed)
{
    struct pb_err e;
    const struct pb_schedule *sch = pb_schedule_find("pipedream", &e);
    struct pb_pipe p = {.stages = 4, .length = 400, .microbatches = 1, .optimizer = PB_OPT_SGD};
    struct pb_sim_cost c[4];
    costs_of(1, 4, 0, c);
    struct pb_sim_result r, x;
    ck_assert(!pb_simulate_pipe_above(sch, &p, NULL, c, 4, true, 0, &r, &e));
    ck_assert(!r.extrapolated && r.events != NULL && r.ops == 3 * 4 * 400);
    ck_assert(r.events[r.ops - 1].device == 3 && r.events[r.ops - 1].kind == 'U');
    ck_assert(!pb_simulate_pipe_above(sch, &p, NULL, c, 4, false, 0, &x, &e));
    ck_assert(x.extrapolated && x.events == NULL);
    pb_sim_result_finish(&r);
    pb_sim_result_finish(&x);
    p.length = 21;  /* D + P + 16: nothing shorter to extrapolate from */
    ck_assert(!pb_simulate_pipe_above(sch, &p, NULL, c, 4, false, 0, &r, &e));
    ck_assert(!r.extrapolated && r.ops == 3 * 4 * 21);
    pb_sim_result_finish(&r);
}
END_TEST

/* Over PB_MAX_PROGRAM_OPS: 64 stages of 600,000 micro-batches, PipeDream with F = 1,
 * B = 2 and free updates and messages, take (N + D − 1)·3 (test_sim's closed form),
 * each device busy 3N; with events asked it is refused, saying what to change. */
START_TEST(test_over_program_bound)
{
    struct pb_err e;
    const struct pb_schedule *sch = pb_schedule_find("pipedream", &e);
    int D = 64, N = 600000;
    struct pb_pipe p = {.stages = D, .length = N, .microbatches = 1, .optimizer = PB_OPT_SGD};
    ck_assert(3LL * D * N > PB_MAX_PROGRAM_OPS);
    struct pb_sim_cost c[64];
    for (int k = 0; k < D; k++)
        c[k] = (struct pb_sim_cost){1, 2, 0, 0, 0, 0};
    struct pb_sim_result r;
    ck_assert_msg(!pb_simulate_pipe(sch, &p, NULL, c, D, false, &r, &e), "%s", e.msg);
    ck_assert(r.extrapolated && r.from_length < 1000);
    ck_assert_double_eq_tol(r.makespan_s, (N + D - 1) * 3.0, 1e-9 * N);
    ck_assert_int_eq(r.ops, 3L * D * N);
    for (int k = 0; k < D; k++)
        ck_assert_double_eq_tol(r.busy_s[k], 3.0 * N, 1e-9 * N);
    pb_sim_result_finish(&r);
    ck_assert_int_eq(pb_simulate_pipe(sch, &p, NULL, c, D, true, &r, &e), -1);
    ck_assert_msg(strstr(e.msg, "--record") && strstr(e.msg, "shorter --length"), "%s", e.msg);
}
END_TEST

/* `pipebench simulate` takes the pipe `program` refuses, and says it extrapolated. */
START_TEST(test_cli_extrapolates)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "simper");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "program --schedule pipedream --stages 64 "
                             "--length 600000"), 2);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule pipedream --stages 64 "
                             "--length 600000 --cost 1,2,0"), 0);
    ck_assert_msg(strstr(out, "makespan 1.80019e+06 s") && strstr(out, "115200000 ops") &&
                  strstr(out, "extrapolated: simulated op by op from N' = ") &&
                  strstr(out, "verified period T = 3 s"), "%.400s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule pipedream --stages 64 "
                             "--length 600000 --cost 1,2,0 --record --db r.db"), 2);
    char db[96];
    snprintf(db, sizeof db, "%s/r.db", dir);
    ck_assert_msg(strstr(out, "--record") && access(db, F_OK) != 0, "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule gpipe --stages 4 "
                             "--length 40 --cost 1,1,0"), 0);
    ck_assert_msg(!strstr(out, "extrapolated"), "%s", out);
    /* the largest micro-batch: samples/s in double, not an int that wraps negative */
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule gpipe --stages 4 "
                             "--length 40 --cost 1,1,0 --microbatch-size 2147483647"), 0);
    ck_assert_msg(strstr(out, "samples/s (b = 2147483647)") && !strstr(out, "= -"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("sim_periodic");
    TCase *tc = tcase_create("sim_periodic");
    tcase_add_test(tc, test_extrapolated_equals_full);
    tcase_add_test(tc, test_full_path_when_needed);
    tcase_add_test(tc, test_over_program_bound);
    tcase_add_test(tc, test_cli_extrapolates);
    suite_add_tcase(s, tc);
    return s;
}
