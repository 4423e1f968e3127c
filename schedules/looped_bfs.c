/* schedules/looped_bfs.c — Looped BFS (breadth-first pipeline, arXiv 2211.05953; torch's
 * ScheduleLoopedBFS; semantics §4.12, SCHEDULES.md §6): v = --chunks model chunks per
 * device in loop placement. Per optimizer step of M micro-batches, device r runs, for
 * each of its chunks in order, F of every micro-batch, then, for its chunks in reverse
 * order, B of every micro-batch in descending order, and one U (every chunk): GPipe's
 * order on every stage, so its weights equal GPipe's bit for bit. Its channels need a
 * capacity above 1 (pb_programs_capacity). */
#include "schedules/common.h"

static int check(const struct pb_pipe *p, struct pb_err *e)
{
    return pb_sched_check_pipe(&pb_schedule_looped_bfs, p, e);
}

static void emit(const struct pb_pipe *p, int device, struct pb_program *out)
{
    (void)device;
    int v = pb_pipe_chunks(p);
    for (int first = 0; first < p->length; first += p->microbatches) {
        int last = first + p->microbatches - 1;
        if (last > p->length - 1)
            last = p->length - 1;
        for (int c = 0; c < v; c++)
            for (int j = first; j <= last; j++)
                pb_program_pass(out, PB_OP_F, j, c);
        for (int c = v - 1; c >= 0; c--)
            for (int j = last; j >= first; j--)
                pb_program_pass(out, PB_OP_B, j, c);
        pb_program_u(out);
    }
}

const struct pb_schedule pb_schedule_looped_bfs = {
    .name = "looped-bfs",
    .summary = "breadth-first: per chunk all forwards, chunks reversed all backwards "
               "descending, flush per step of M (torch; semantics §4.12)",
    .variants = "",
    .uses_microbatches = true,
    .synchronous = true,
    .chunked = true,
    .check = check,
    .emit = emit,
};
