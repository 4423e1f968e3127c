/* schedules/xpipe.c — XPipe, micro-batch groups with prediction (semantics §4.5): 1F1B
 * over micro-batches, T = M per mini-batch and one update per mini-batch; the
 * first micro-batch's F predicts s = ⌈(D−1−k)/T⌉ ahead and the whole mini-batch
 * reads that Ŵ in both passes. Variant `note`: the mini-batch's Fs read the
 * bellwether's Ŵ with s_F = round((D + T − k/2 − 2)/T), each B predicts afresh with
 * s_B = round((T + ⌊k/2⌋ − 1)/T) (round half to even). ΔW follows the optimizer. */
#include "schedules/common.h"

static int check(const struct pb_pipe *p, struct pb_err *e)
{
    return pb_sched_check_pipe(&pb_schedule_xpipe, p, e);
}

/* round(num/den) with halves to even; num ≥ 0, den > 0 */
static int round_half_even(int num, int den)
{
    int q = num / den, r = num % den;
    if (2 * r > den || (2 * r == den && q % 2 == 1))
        q++;
    return q;
}

static void fwd(const struct pb_pipe *p, int k, int mb, struct pb_program *out)
{
    int D = p->stages, T = p->microbatches;
    int s = pb_sched_variant_is(p, "note") ? round_half_even(2 * (D + T - 2) - k, 2 * T)
                                           : (D - 1 - k + T - 1) / T;
    pb_program_f(out, mb, PB_W_GROUP, s, PB_PREDICT_PAPER);
}

static void bwd(const struct pb_pipe *p, int k, int mb, struct pb_program *out)
{
    int T = p->microbatches;
    if (!pb_sched_variant_is(p, "note")) {
        pb_program_b(out, mb, PB_W_GROUP, (p->stages - 1 - k + T - 1) / T, PB_PREDICT_PAPER);
    } else {
        int s = round_half_even(T + k / 2 - 1, T);
        pb_program_b(out, mb, s > 0 ? PB_W_PREDICTED : PB_W_LATEST, s, PB_PREDICT_PAPER);
    }
    if (pb_sched_ends_minibatch(p, mb))
        pb_program_u(out);
}

static void emit(const struct pb_pipe *p, int device, struct pb_program *out)
{
    pb_sched_emit_1f1b(p, device, out, fwd, bwd);
}

const struct pb_schedule pb_schedule_xpipe = {
    .name = "xpipe",
    .summary = "1F1B in mini-batches of M; the first micro-batch predicts for all (semantics §4.5)",
    .variants = "note",
    .uses_microbatches = true,
    .check = check,
    .emit = emit,
};
