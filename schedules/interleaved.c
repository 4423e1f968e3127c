/* schedules/interleaved.c — interleaved 1F1B (Megatron's virtual pipeline, torch's
 * ScheduleInterleaved1F1B; semantics §4.12, SCHEDULES.md §2): v = --chunks model chunks
 * per device in loop placement (chunk c of device r is stage r + c·p). Per optimizer
 * step of m micro-batches, the (micro-batch, chunk) table lists, per group of N
 * micro-batches [g, g+N), chunk 0's then chunk 1's … (m·v entries); forward k is
 * F(table[k].j) on chunk table[k].c, backward k is B(table[k].j) on chunk
 * v−1−table[k].c. Device r runs W_r = min(m·v, 2(p−1−r) + (v−1)·N) warm-up forwards,
 * then forward k+W_r, backward k pairs, the remaining backwards, and one U (every
 * chunk). N as torch relaxes Megatron's rule: N = m / max(1, ⌊m/p⌋), m a multiple of
 * max(1, ⌊m/p⌋) (m < p gives N = m). */
#include "schedules/common.h"

/* The group size N of a step of m micro-batches on p devices; 0 when the rule refuses m. */
static int group_size(const struct pb_pipe *p, int m)
{
    int np = pb_pipe_devices(p);
    int rounds = m / np > 1 ? m / np : 1;
    return m % rounds == 0 ? m / rounds : 0;
}

/* Why a step of m micro-batches is refused (group_size returned 0). */
static int refuse(const struct pb_pipe *p, int m, const char *which, struct pb_err *e)
{
    int np = pb_pipe_devices(p), rounds = m / np > 1 ? m / np : 1;
    return pb_err_set(e, "interleaved: %s of %d micro-batches is not a multiple of its %d rounds "
                         "(⌊m/p⌋ with p = %d devices, torch's rule); give --microbatches m with "
                         "m mod ⌊m/p⌋ = 0 (e.g. a multiple of %d)", which, m, rounds, np, np);
}

static int check(const struct pb_pipe *p, struct pb_err *e)
{
    if (pb_sched_check_pipe(&pb_schedule_interleaved, p, e))
        return -1;
    if (!group_size(p, p->microbatches))
        return refuse(p, p->microbatches, "a step (--microbatches)", e);
    int last = p->length % p->microbatches;
    if (last && !group_size(p, last))
        return refuse(p, last, "the epoch's last step (N mod M)", e);
    return 0;
}

/* One step of n micro-batches from `first` on device d. */
static void emit_step(const struct pb_pipe *p, int d, int first, int n, struct pb_program *out)
{
    int np = pb_pipe_devices(p), v = pb_pipe_chunks(p), N = group_size(p, n), total = n * v;
    int *tj = pb_xmalloc((size_t)total * sizeof *tj), *tc = pb_xmalloc((size_t)total * sizeof *tc);
    int t = 0;
    for (int g = 0; g < n; g += N) {
        int hi = g + N < n ? g + N : n;
        for (int c = 0; c < v; c++)
            for (int j = g; j < hi; j++, t++) {
                tj[t] = first + j;
                tc[t] = c;
            }
    }
    int w = 2 * (np - 1 - d) + (v - 1) * N;
    w = w < total ? w : total;
    for (int k = 0; k < w; k++)
        pb_program_pass(out, PB_OP_F, tj[k], tc[k]);
    for (int k = 0; k < total; k++) {
        if (k + w < total)
            pb_program_pass(out, PB_OP_F, tj[k + w], tc[k + w]);
        pb_program_pass(out, PB_OP_B, tj[k], v - 1 - tc[k]);
    }
    pb_program_u(out);
    free(tj);
    free(tc);
}

static void emit(const struct pb_pipe *p, int device, struct pb_program *out)
{
    pb_sched_emit_steps(p, device, out, emit_step);
}

const struct pb_schedule pb_schedule_interleaved = {
    .name = "interleaved",
    .summary = "interleaved 1F1B on --chunks v per device, loop placement, flush per step of M "
               "(Megatron, torch; semantics §4.12)",
    .variants = "",
    .uses_microbatches = true,
    .synchronous = true,
    .chunked = true,
    .check = check,
    .emit = emit,
};
