/* schedules/pipedream.c — PipeDream, asynchronous 1F1B with weight stashing
 * (semantics §4.1): F(j) reads the latest weights and stashes them, B(j) reads the
 * stash, one update per micro-batch. Variant `vertical` (PipeDream paper §3.3, vertical
 * sync): F(j) and B(j) on every stage read the version stage 0's F(j) read. */
#include "schedules/common.h"

static int check(const struct pb_pipe *p, struct pb_err *e)
{
    return pb_sched_check_pipe(&pb_schedule_pipedream, p, e);
}

static void fwd(const struct pb_pipe *p, int k, int mb, struct pb_program *out)
{
    (void)k;
    pb_program_f(out, mb, pb_sched_variant_is(p, "vertical") ? PB_W_VERTICAL : PB_W_LATEST, 0,
                 PB_PREDICT_PAPER);
}

static void bwd(const struct pb_pipe *p, int k, int mb, struct pb_program *out)
{
    (void)k;
    pb_program_b(out, mb, pb_sched_variant_is(p, "vertical") ? PB_W_VERTICAL : PB_W_STASHED, 0,
                 PB_PREDICT_PAPER);
    pb_program_u(out);
}

static void emit(const struct pb_pipe *p, int device, struct pb_program *out)
{
    pb_sched_emit_1f1b(p, device, out, fwd, bwd);
}

const struct pb_schedule pb_schedule_pipedream = {
    .name = "pipedream",
    .summary = "asynchronous 1F1B; B reads the weights its F stashed (semantics §4.1)",
    .variants = "vertical",
    .uses_microbatches = false,
    .check = check,
    .emit = emit,
};
