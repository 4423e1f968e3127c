/* schedules/pipeoptim.c — PipeOptim, 1F1B with optimizer-dependent weight
 * prediction (semantics §4.2): F(j) reads Ŵ = W − lr·s·ΔW with s = D−1−k (variant
 * `code`: s = D−k and the code's ΔW form), B(j) the current W. */
#include "schedules/common.h"

static int check(const struct pb_pipe *p, struct pb_err *e)
{
    return pb_sched_check_pipe(&pb_schedule_pipeoptim, p, e);
}

static void fwd(const struct pb_pipe *p, int k, int mb, struct pb_program *out)
{
    bool code = pb_sched_variant_is(p, "code");
    int s = code ? p->stages - k : p->stages - 1 - k;
    if (s > 0)
        pb_program_f(out, mb, PB_W_PREDICTED, s, code ? PB_PREDICT_CODE : PB_PREDICT_PAPER);
    else
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

const struct pb_schedule pb_schedule_pipeoptim = {
    .name = "pipeoptim",
    .summary = "1F1B; F reads weights predicted s = D-1-k updates ahead (semantics §4.2)",
    .variants = "code",
    .uses_microbatches = false,
    .check = check,
    .emit = emit,
};
