/* schedules/pipedream_2bw.c — PipeDream-2BW, double-buffered weights (semantics §4.4):
 * 1F1B over micro-batches with no flush; the M micro-batches of mini-batch
 * b = mb / M accumulate into one update and read W^(max(0, b−1)) in both passes.
 * A final partial mini-batch (N mod M ≠ 0) still gets its update at the end. With
 * D = 1 every mini-batch enters after the previous update, so it reads the latest
 * weights (semantics §4.7: D = 1 is plain training). */
#include "schedules/common.h"

static int check(const struct pb_pipe *p, struct pb_err *e)
{
    if (pb_sched_check_pipe(&pb_schedule_pipedream_2bw, p, e))
        return -1;
    if (p->microbatches < p->stages)
        return pb_err_set(e, "pipedream-2bw needs at least as many micro-batches per mini-batch "
                             "as stages (M >= D) to keep two weight buffers; got M = %d, D = %d: "
                             "raise --microbatches to %d or more",
                          p->microbatches, p->stages, p->stages);
    return 0;
}

static void fwd(const struct pb_pipe *p, int k, int mb, struct pb_program *out)
{
    (void)k;
    pb_program_f(out, mb, p->stages > 1 ? PB_W_BUFFERED : PB_W_LATEST, 0, PB_PREDICT_PAPER);
}

static void bwd(const struct pb_pipe *p, int k, int mb, struct pb_program *out)
{
    (void)k;
    pb_program_b(out, mb, p->stages > 1 ? PB_W_BUFFERED : PB_W_LATEST, 0, PB_PREDICT_PAPER);
    if (pb_sched_ends_minibatch(p, mb))
        pb_program_u(out);
}

static void emit(const struct pb_pipe *p, int device, struct pb_program *out)
{
    pb_sched_emit_1f1b(p, device, out, fwd, bwd);
}

const struct pb_schedule pb_schedule_pipedream_2bw = {
    .name = "pipedream-2bw",
    .summary = "1F1B without flush; mini-batch b reads W^(b-1), two buffers (semantics §4.4)",
    .variants = "",
    .uses_microbatches = true,
    .check = check,
    .emit = emit,
};
