/* schedules/spectrain.c — SpecTrain v1, 1F1B with momentum prediction in both
 * passes (semantics §4.3): F predicts s_F = ⌊k/2⌋ + D−k−1 ahead, B s_B = ⌊k/2⌋, each
 * from the current W; SGD/SGDM only. Variant `code`: forward ΔW = u·buf + d_last
 * (d_last = g_last + λW, weight 1 whatever τ), backward ΔW = u·buf (0 for plain SGD). */
#include "schedules/common.h"

static int check(const struct pb_pipe *p, struct pb_err *e)
{
    if (pb_sched_check_pipe(&pb_schedule_spectrain, p, e))
        return -1;
    if (p->optimizer != PB_OPT_SGD)
        return pb_err_set(e, "spectrain predicts with the SGD momentum buffer and runs with SGD "
                             "or SGDM only; use --optimizer sgdm (or sgd), or pipeoptim for "
                             "other optimizers");
    return 0;
}

static void pass(struct pb_program *out, enum pb_op_kind kind, int mb, int s,
                 enum pb_predict_variant form)
{
    enum pb_wsrc w = s > 0 ? PB_W_PREDICTED : PB_W_LATEST;
    if (s == 0)
        form = PB_PREDICT_PAPER;
    if (kind == PB_OP_F)
        pb_program_f(out, mb, w, s, form);
    else
        pb_program_b(out, mb, w, s, form);
}

static void fwd(const struct pb_pipe *p, int k, int mb, struct pb_program *out)
{
    bool code = pb_sched_variant_is(p, "code");
    pass(out, PB_OP_F, mb, k / 2 + p->stages - k - 1,
         code ? PB_PREDICT_SPECTRAIN : PB_PREDICT_PAPER);
}

static void bwd(const struct pb_pipe *p, int k, int mb, struct pb_program *out)
{
    bool code = pb_sched_variant_is(p, "code");
    pass(out, PB_OP_B, mb, k / 2, code ? PB_PREDICT_MOMENTUM : PB_PREDICT_PAPER);
    pb_program_u(out);
}

static void emit(const struct pb_pipe *p, int device, struct pb_program *out)
{
    pb_sched_emit_1f1b(p, device, out, fwd, bwd);
}

const struct pb_schedule pb_schedule_spectrain = {
    .name = "spectrain",
    .summary = "1F1B; F and B read momentum-predicted weights, SGD/SGDM only (semantics §4.3)",
    .variants = "code",
    .uses_microbatches = false,
    .check = check,
    .emit = emit,
};
