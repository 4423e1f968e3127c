/* schedules/zb_v.c — ZB-V, the V-shape zero-bubble schedule (Qi et al., ICLR 2024,
 * Section 6) as torch's ScheduleZBVZeroBubble fixes it (semantics §4.13, SCHEDULES.md
 * §4): v = 2 chunks per device in V placement (device r holds stages r and 2p−1−r, the
 * loss on device 0), split backward. Per optimizer step of m micro-batches, with
 * n' = max(2p−1, m) and one counter per (chunk, kind), device r runs
 *     (2(p−r) − 1) × F@0,  r × [F@1, F@0],  (p−r) × [F@1, I@1, W@1],
 *     while f1 < f0 or f0 < n': [F@0 if f0 < n'], I@0, W@0, F@1, I@1, W@1,
 *     r × [I@0, I@1],  (p−r) × [I@0, W@0],  the remaining W@1, the remaining W@0,
 * drops every op of a micro-batch ≥ m (torch pads m < 2p−1 that way) and ends with one
 * U (both chunks). Each chunk's W's ascend, so the gradients add up in 1F1B's order. */
#include "schedules/common.h"

/* A step's counters: forwards, input and weight gradients per chunk. */
struct counts {
    int f[2], i[2], w[2];
};

/* Appends kind on chunk c for its counter's next micro-batch, unless it is ≥ n. */
static void op(struct pb_program *out, struct counts *k, int kind, int c, int first, int n)
{
    int *ctr = kind == PB_OP_F ? &k->f[c] : kind == PB_OP_I ? &k->i[c] : &k->w[c];
    if (*ctr < n)
        pb_program_pass(out, kind, first + *ctr, c);
    (*ctr)++;
}

static void emit_step(const struct pb_pipe *p, int r, int first, int n, struct pb_program *out)
{
    int np = pb_pipe_devices(p), pad = 2 * np - 1 > n ? 2 * np - 1 : n;
    struct counts k = {{0, 0}, {0, 0}, {0, 0}};
    for (int q = 0; q < 2 * (np - r) - 1; q++)
        op(out, &k, PB_OP_F, 0, first, n);
    for (int q = 0; q < r; q++) {
        op(out, &k, PB_OP_F, 1, first, n);
        op(out, &k, PB_OP_F, 0, first, n);
    }
    for (int q = 0; q < np - r; q++) {
        op(out, &k, PB_OP_F, 1, first, n);
        op(out, &k, PB_OP_I, 1, first, n);
        op(out, &k, PB_OP_W, 1, first, n);
    }
    while (k.f[1] < k.f[0] || k.f[0] < pad) {
        if (k.f[0] < pad)
            op(out, &k, PB_OP_F, 0, first, n);
        op(out, &k, PB_OP_I, 0, first, n);
        op(out, &k, PB_OP_W, 0, first, n);
        op(out, &k, PB_OP_F, 1, first, n);
        op(out, &k, PB_OP_I, 1, first, n);
        op(out, &k, PB_OP_W, 1, first, n);
    }
    for (int q = 0; q < r; q++) {
        op(out, &k, PB_OP_I, 0, first, n);
        op(out, &k, PB_OP_I, 1, first, n);
    }
    for (int q = 0; q < np - r; q++) {
        op(out, &k, PB_OP_I, 0, first, n);
        op(out, &k, PB_OP_W, 0, first, n);
    }
    while (k.w[1] < k.i[1])
        op(out, &k, PB_OP_W, 1, first, n);
    while (k.w[0] < k.i[0])
        op(out, &k, PB_OP_W, 0, first, n);
    pb_program_u(out);
}

static void emit(const struct pb_pipe *p, int device, struct pb_program *out)
{
    pb_sched_emit_steps(p, device, out, emit_step);
}

static int check(const struct pb_pipe *p, struct pb_err *e)
{
    return pb_sched_check_pipe(&pb_schedule_zb_v, p, e);
}

const struct pb_schedule pb_schedule_zb_v = {
    .name = "zb-v",
    .summary = "zero bubble V: split backward on 2 chunks per device in V placement, flush "
               "per step of M (torch's ZBVZeroBubble; semantics §4.13)",
    .variants = "",
    .uses_microbatches = true,
    .synchronous = true,
    .chunked = true,
    .chunks = 2,
    .placement = PB_PLACE_V,
    .check = check,
    .emit = emit,
};
