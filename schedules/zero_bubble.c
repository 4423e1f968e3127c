/* schedules/zero_bubble.c — ZB-H1 and ZB-H2, the zero-bubble hand schedules of Qi et
 * al. (ICLR 2024) on a split backward (semantics §4.10, from the authors'
 * get_hand_schedule): per optimizer step of n = M micro-batches, stage k runs
 * w = min((D−1−k)·c, n) warm-up forwards, then for i = 0 … n−1: F(w+i) while any is
 * left, I(i), and W of the oldest micro-batch whose W is pending once i ≥ (D−1)·c − w
 * (W deferred k·c times in the steady state), then the deferred W's and one U.
 * c = 1 is ZB-H1 (1F1B's memory), c = 2 ZB-H2 (twice the warm-up). Every pass reads
 * the latest weights; each W in ascending micro-batch order, so the accumulated
 * gradient is 1F1B's. ZB-H1's variant `quick-start` is the authors' patch of Megatron's
 * 1F1B (branch zb-h1-quick-start): the same bubble, its W's out of micro-batch order. */
#include "schedules/common.h"

/* The ops of device k for one step of micro-batches first … first+n−1. */
static void emit_step(const struct pb_pipe *p, int k, int c, int first, int n,
                      struct pb_program *out)
{
    int w = (p->stages - 1 - k) * c, defer;
    w = w < n ? w : n;
    defer = (p->stages - 1) * c - w;
    int nf = 0, nw = 0;
    while (nf < w)
        pb_program_f(out, first + nf++, PB_W_LATEST, 0, PB_PREDICT_PAPER);
    for (int i = 0; i < n; i++) {
        if (nf < n)
            pb_program_f(out, first + nf++, PB_W_LATEST, 0, PB_PREDICT_PAPER);
        pb_program_i(out, first + i);
        if (i >= defer)
            pb_program_w(out, first + nw++);
    }
    while (nw < n)
        pb_program_w(out, first + nw++);
    pb_program_u(out);
}

/* The quick-start patch, one step on device k: Megatron's 1F1B (w = min(D−1−k, n)
 * warm-up forwards, n − w steady F, backward pairs, w cool-down backwards) where
 * stage 0 never splits; on stage k > 0 steady iteration i runs I and queues its W
 * when i < k or it is the last one, else B; the last steady iteration (if i ≥ k) and
 * cool-down iteration j (if n − w + j ≥ k) then run the oldest queued W; the W's still
 * queued run at the end (WeightGradStore's FIFO put, pop and pop_all). */
static void emit_quick_step(const struct pb_pipe *p, int k, int first, int n,
                            struct pb_program *out)
{
    int w = p->stages - 1 - k < n ? p->stages - 1 - k : n, steady = n - w;
    int queue_head = 0, queue_tail = 0, *queue = pb_xmalloc((size_t)n * sizeof *queue);
    for (int j = 0; j < w; j++)
        pb_program_f(out, first + j, PB_W_LATEST, 0, PB_PREDICT_PAPER);
    for (int i = 0; i < steady; i++) {
        bool last = i == steady - 1;
        pb_program_f(out, first + w + i, PB_W_LATEST, 0, PB_PREDICT_PAPER);
        if (k == 0 || !(i < k || last)) {
            pb_program_b(out, first + i, PB_W_LATEST, 0, PB_PREDICT_PAPER);
            continue;
        }
        pb_program_i(out, first + i);
        queue[queue_tail++] = first + i;
        if (last && i >= k)
            pb_program_w(out, queue[queue_head++]);
    }
    for (int j = 0; j < w; j++) {
        int mb = first + steady + j;
        if (k == 0) {
            pb_program_b(out, mb, PB_W_LATEST, 0, PB_PREDICT_PAPER);
            continue;
        }
        pb_program_i(out, mb);
        queue[queue_tail++] = mb;
        if (steady + j >= k)
            pb_program_w(out, queue[queue_head++]);
    }
    while (queue_head < queue_tail)
        pb_program_w(out, queue[queue_head++]);
    free(queue);
    pb_program_u(out);
}

static void emit(const struct pb_pipe *p, int device, int c, struct pb_program *out)
{
    bool quick = pb_sched_variant_is(p, "quick-start");
    for (int first = 0; first < p->length; first += p->microbatches) {
        int n = p->length - first < p->microbatches ? p->length - first : p->microbatches;
        if (quick)
            emit_quick_step(p, device, first, n, out);
        else
            emit_step(p, device, c, first, n, out);
    }
}

static int check_h1(const struct pb_pipe *p, struct pb_err *e)
{
    return pb_sched_check_pipe(&pb_schedule_zb_h1, p, e);
}

static int check_h2(const struct pb_pipe *p, struct pb_err *e)
{
    return pb_sched_check_pipe(&pb_schedule_zb_h2, p, e);
}

static void emit_h1(const struct pb_pipe *p, int device, struct pb_program *out)
{
    emit(p, device, 1, out);
}

static void emit_h2(const struct pb_pipe *p, int device, struct pb_program *out)
{
    emit(p, device, 2, out);
}

const struct pb_schedule pb_schedule_zb_h1 = {
    .name = "zb-h1",
    .summary = "zero bubble H1: 1F1B with B split into I and W, W deferred (semantics §4.10)",
    .variants = "quick-start",
    .uses_microbatches = true,
    .synchronous = true,
    .check = check_h1,
    .emit = emit_h1,
};

const struct pb_schedule pb_schedule_zb_h2 = {
    .name = "zb-h2",
    .summary = "zero bubble H2: twice ZB-H1's warm-up, no steady bubble (semantics §4.10)",
    .variants = "",
    .uses_microbatches = true,
    .synchronous = true,
    .check = check_h2,
    .emit = emit_h2,
};
