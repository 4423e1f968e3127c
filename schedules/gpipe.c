/* schedules/gpipe.c — GPipe, synchronous fill and drain (semantics §4.6): per
 * mini-batch of M micro-batches F(first … last), B(last … first), then one update
 * (flush); every pass reads the latest weights. A final partial mini-batch
 * (N mod M ≠ 0) is run the same way. */
#include "schedules/common.h"

static int check(const struct pb_pipe *p, struct pb_err *e)
{
    return pb_sched_check_pipe(&pb_schedule_gpipe, p, e);
}

static void emit(const struct pb_pipe *p, int device, struct pb_program *out)
{
    (void)device;
    for (int first = 0; first < p->length; first += p->microbatches) {
        int last = first + p->microbatches - 1;
        if (last > p->length - 1)
            last = p->length - 1;
        for (int j = first; j <= last; j++)
            pb_program_f(out, j, PB_W_LATEST, 0, PB_PREDICT_PAPER);
        for (int j = last; j >= first; j--)
            pb_program_b(out, j, PB_W_LATEST, 0, PB_PREDICT_PAPER);
        pb_program_u(out);
    }
}

const struct pb_schedule pb_schedule_gpipe = {
    .name = "gpipe",
    .summary = "fill and drain per mini-batch of M, then one update (semantics §4.6)",
    .variants = "",
    .uses_microbatches = true,
    .synchronous = true,
    .check = check,
    .emit = emit,
};
