/* schedules/one_f_one_b.c — 1F1B with flush (PipeDream-Flush, DAPPLE, Megatron's
 * non-interleaved schedule, torch's Schedule1F1B; semantics §4.9): per optimizer step
 * of M micro-batches, stage k runs w_k = min(D−1−k, M) warm-up forwards, then F(w_k+i),
 * B(i) pairs, then the remaining backwards and one U; every pass reads the latest
 * weights, so nothing is stale. A final partial step (N mod M ≠ 0) runs the same way. */
#include "schedules/common.h"

static int check(const struct pb_pipe *p, struct pb_err *e)
{
    return pb_sched_check_pipe(&pb_schedule_1f1b, p, e);
}

static void emit(const struct pb_pipe *p, int device, struct pb_program *out)
{
    for (int first = 0; first < p->length; first += p->microbatches) {
        int n = p->length - first < p->microbatches ? p->length - first : p->microbatches;
        int w = p->stages - 1 - device < n ? p->stages - 1 - device : n, nf = 0;
        while (nf < w)
            pb_program_f(out, first + nf++, PB_W_LATEST, 0, PB_PREDICT_PAPER);
        for (int nb = 0; nb < n; nb++) {
            if (nf < n)
                pb_program_f(out, first + nf++, PB_W_LATEST, 0, PB_PREDICT_PAPER);
            pb_program_b(out, first + nb, PB_W_LATEST, 0, PB_PREDICT_PAPER);
        }
        pb_program_u(out);
    }
}

const struct pb_schedule pb_schedule_1f1b = {
    .name = "1f1b",
    .summary = "1F1B with flush per step of M (PipeDream-Flush, DAPPLE; semantics §4.9)",
    .variants = "",
    .uses_microbatches = true,
    .synchronous = true,
    .check = check,
    .emit = emit,
};
