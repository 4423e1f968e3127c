/* harness/exec/exec_seq.c — the sequential reference executor (executor.h): one thread
 * runs each device's program in order, moving to the next device when an op waits
 * for an activation or gradient that has not been produced yet. An op on a device's
 * chunk c runs on the worker of its stage (pb_pipe_stage_of), a U on every chunk's. */
#include "harness/exec/executor.h"
#include "harness/exec/msgq.h"

/* Whether an op of stage s can run now: its activation (F, s > 0) or gradient (B or I,
 * not last). */
static bool ready(const struct pb_op *op, int s, int nst, const struct pb_msgq *fwd,
                  const struct pb_msgq *bwd)
{
    if (op->kind == PB_OP_F && s > 0)
        return fwd[s - 1].count > 0;
    if (pb_op_carries_grad(op->kind) && s < nst - 1)
        return bwd[s].count > 0;
    return true;
}

/* Runs the stage program's next op on stage s (the worker's own op, the device op's
 * copy), moving its messages. */
static int run_op(struct pb_worker *workers, int s, int nst, int *spc, struct pb_msgq *fwd,
                  struct pb_msgq *bwd, struct pb_err *e)
{
    struct pb_worker *w = &workers[s];
    const struct pb_op *op = &w->prog->ops[spc[s]++];
    struct pb_msg in = {0}, out = {0};
    if (op->kind == PB_OP_F && s > 0)
        in = pb_msgq_pop(&fwd[s - 1]);
    else if (pb_op_carries_grad(op->kind) && s < nst - 1)
        in = pb_msgq_pop(&bwd[s]);
    int rc = pb_worker_exec(w, op, &in, &out, e);
    pb_msg_free(&in);
    if (!rc && pb_msg_present(&out))
        pb_msgq_push(op->kind == PB_OP_F ? &fwd[s] : &bwd[s - 1], out);
    if (!rc)
        rc = pb_worker_should_stop(w, op, e);
    return rc;
}

int pb_exec_seq(struct pb_worker *workers, int nst, const struct pb_program *progs,
                struct pb_err *e)
{
    pb_workers_link(workers, nst);
    const struct pb_pipe *pipe = &workers[0].pipe;
    int ndev = pb_pipe_devices(pipe), v = pb_pipe_chunks(pipe);
    /* fwd[s]: stage s → s+1 activations; bwd[s]: stage s+1 → s gradients */
    struct pb_msgq *fwd = pb_xcalloc((size_t)nst, sizeof *fwd);
    struct pb_msgq *bwd = pb_xcalloc((size_t)nst, sizeof *bwd);
    int *pc = pb_xcalloc((size_t)ndev, sizeof *pc), *spc = pb_xcalloc((size_t)nst, sizeof *spc);
    int rc = 0, left = 0;
    for (int k = 0; k < ndev; k++)
        left += progs[k].n;
    while (left > 0 && !rc) {
        bool progress = false;
        for (int k = 0; k < ndev && !rc; k++) {
            while (pc[k] < progs[k].n && !rc) {
                const struct pb_op *op = &progs[k].ops[pc[k]];
                int s = pb_pipe_stage_of(pipe, k, op->kind == PB_OP_U ? 0 : op->chunk);
                if (!ready(op, s, nst, fwd, bwd))
                    break;
                for (int c = 0; c < v && !rc; c++)
                    if (op->kind == PB_OP_U || c == op->chunk)
                        rc = run_op(workers, pb_pipe_stage_of(pipe, k, c), nst, spc, fwd, bwd, e);
                pc[k]++;
                left--;
                progress = true;
            }
        }
        /* validated programs cannot deadlock (pb_programs_validate) */
        PB_CHECK(progress || rc);
    }
    for (int k = 0; k < nst; k++) {
        pb_msgq_finish(&fwd[k]);
        pb_msgq_finish(&bwd[k]);
    }
    free(fwd);
    free(bwd);
    free(pc);
    free(spc);
    return rc;
}
