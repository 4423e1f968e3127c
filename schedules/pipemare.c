/* schedules/pipemare.c — PipeMare (Yang et al., MLSys 2021; semantics §4.11): PipeDream's
 * asynchronous 1F1B order without weight stashing, F(j) and B(j) each reading the latest
 * weights when they run, and the learning-rate rescheduling of each stage by its delay
 * τ_k = D−1−k (AsyncPP's "PipeMare type LR correction"). The discrepancy correction is
 * not implemented: its formula could not be established (semantics §4.11). */
#include "schedules/common.h"

static int check(const struct pb_pipe *p, struct pb_err *e)
{
    return pb_sched_check_pipe(&pb_schedule_pipemare, p, e);
}

static void fwd(const struct pb_pipe *p, int k, int mb, struct pb_program *out)
{
    (void)p, (void)k;
    pb_program_f(out, mb, PB_W_LATEST, 0, PB_PREDICT_PAPER);
}

static void bwd(const struct pb_pipe *p, int k, int mb, struct pb_program *out)
{
    (void)p, (void)k;
    pb_program_b(out, mb, PB_W_LATEST, 0, PB_PREDICT_PAPER);
    pb_program_u(out);
}

static void emit(const struct pb_pipe *p, int device, struct pb_program *out)
{
    pb_sched_emit_1f1b(p, device, out, fwd, bwd);
}

/* The updates between F(j) and B(j) on stage k in the steady state: its warm-up. */
static int lr_delay(const struct pb_pipe *p, int stage)
{
    return p->stages - 1 - stage;
}

const struct pb_schedule pb_schedule_pipemare = {
    .name = "pipemare",
    .summary = "asynchronous 1F1B without stashing; stage k's rate rescheduled by its delay "
               "D-1-k (semantics §4.11)",
    .variants = "",
    .uses_microbatches = false,
    .check = check,
    .emit = emit,
    .lr_delay = lr_delay,
};
