/* schedules/dualpipe_v.c — DualPipeV (DeepSeek's DualPipe "cut in half", torch's
 * ScheduleDualPipeV; semantics §4.13, SCHEDULES.md §5): v = 2 chunks per device in V
 * placement, m ≥ 2p micro-batches per optimizer step. Each chunk has a forward and a
 * backward counter (a B or an I takes the next backward); every I queues its W in one
 * FIFO of both chunks, and "W" runs the oldest queued. Device r runs
 *     1. 2(p−r−1) × F@0             2. (r+1) × [F@0, F@1]
 *     3. (p−r−1) × [I@1, W, F@1]
 *     4. (m − 2p + r + 1) × [pair(F@0, B@1), pair(F@1, B@0)], on r = p−1 the first
 *        iteration's first pair unpaired (F@0 then B@1)
 *     5. (p−r−1) × [B@1, pair(F@1, B@0)]
 *     6. (r+1) × [X@1, Y@0]: B until the switch to I at i = ⌊(r+1)/2⌋, before X@1 for
 *        odd r, between X@1 and Y@0 for even r
 *     7. (p−r−1) × [W, I@0]        8. (r+1) × W
 * and one U (both chunks). A pair is torch's OVERLAP_F_B; with no fused kernel it runs
 * as F then B, marked in the program (pb_op.pair). */
#include "schedules/common.h"

/* A step's state: the next micro-batch per (chunk, pass) and the queue of W's. */
struct state {
    struct pb_program *out;
    int first, f[2], b[2];
    int *wq_mb, *wq_c, head, tail;
};

static void fwd(struct state *s, int c)
{
    pb_program_pass(s->out, PB_OP_F, s->first + s->f[c]++, c);
}

/* A backward on chunk c: B (fused, adds into the gradient) or I (its W queued). */
static void bwd(struct state *s, int c, bool split)
{
    int mb = s->first + s->b[c]++;
    pb_program_pass(s->out, split ? PB_OP_I : PB_OP_B, mb, c);
    if (split) {
        s->wq_mb[s->tail] = mb;
        s->wq_c[s->tail++] = c;
    }
}

/* The oldest queued W, if any. */
static void wgrad(struct state *s)
{
    if (s->head < s->tail) {
        pb_program_pass(s->out, PB_OP_W, s->wq_mb[s->head], s->wq_c[s->head]);
        s->head++;
    }
}

static void pair(struct state *s, int fc, int bc)
{
    pb_program_pair(s->out, s->first + s->f[fc]++, fc, s->first + s->b[bc]++, bc);
}

static void emit_step(const struct pb_pipe *p, int r, int first, int n, struct pb_program *out)
{
    int np = pb_pipe_devices(p);
    struct state s = {.out = out, .first = first};
    s.wq_mb = pb_xmalloc((size_t)(2 * n) * sizeof *s.wq_mb);
    s.wq_c = pb_xmalloc((size_t)(2 * n) * sizeof *s.wq_c);
    for (int q = 0; q < 2 * (np - r - 1); q++)
        fwd(&s, 0);
    for (int q = 0; q < r + 1; q++) {
        fwd(&s, 0);
        fwd(&s, 1);
    }
    for (int q = 0; q < np - r - 1; q++) {
        bwd(&s, 1, true);
        wgrad(&s);
        fwd(&s, 1);
    }
    for (int q = 0; q < n - 2 * np + r + 1; q++) {
        if (q == 0 && r == np - 1) {
            fwd(&s, 0);
            bwd(&s, 1, false);
        } else {
            pair(&s, 0, 1);
        }
        pair(&s, 1, 0);
    }
    for (int q = 0; q < np - r - 1; q++) {
        bwd(&s, 1, false);
        pair(&s, 1, 0);
    }
    bool split = false;
    for (int q = 0; q < r + 1; q++) {
        split |= q == (r + 1) / 2 && r % 2 == 1;
        bwd(&s, 1, split);
        split |= q == (r + 1) / 2 && r % 2 == 0;
        bwd(&s, 0, split);
    }
    for (int q = 0; q < np - r - 1; q++) {
        wgrad(&s);
        bwd(&s, 0, split);
    }
    for (int q = 0; q < r + 1; q++)
        wgrad(&s);
    PB_CHECK(s.head == s.tail);
    free(s.wq_mb);
    free(s.wq_c);
    pb_program_u(out);
}

static void emit(const struct pb_pipe *p, int device, struct pb_program *out)
{
    pb_sched_emit_steps(p, device, out, emit_step);
}

/* M ≥ 2p in every step (.step_min; DeepSeek's and torch's rule). */
static int check(const struct pb_pipe *p, struct pb_err *e)
{
    return pb_sched_check_pipe(&pb_schedule_dualpipe_v, p, e);
}

const struct pb_schedule pb_schedule_dualpipe_v = {
    .name = "dualpipe-v",
    .summary = "DualPipeV: 2 chunks per device in V placement, overlapped F/B pairs run F "
               "then B, M >= 2p, flush per step of M (DeepSeek, torch; semantics §4.13)",
    .variants = "",
    .uses_microbatches = true,
    .synchronous = true,
    .chunked = true,
    .chunks = 2,
    .placement = PB_PLACE_V,
    .step_min = 2,
    .check = check,
    .emit = emit,
};
