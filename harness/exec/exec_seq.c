/* harness/exec/exec_seq.c — the sequential reference executor (executor.h): one thread
 * runs each device's program in order, moving to the next device when an op waits
 * for an activation or gradient that has not been produced yet. */
#include "harness/exec/executor.h"
#include "harness/exec/msgq.h"

/* Whether op can run now: its activation (F, stage > 0) or gradient (B, not last). */
static bool ready(const struct pb_op *op, int k, int ndev, const struct pb_msgq *fwd,
                  const struct pb_msgq *bwd)
{
    if (op->kind == PB_OP_F && k > 0)
        return fwd[k - 1].count > 0;
    if (pb_op_carries_grad(op->kind) && k < ndev - 1)
        return bwd[k].count > 0;
    return true;
}

int pb_exec_seq(struct pb_worker *workers, int ndev, const struct pb_program *progs,
                struct pb_err *e)
{
    pb_workers_link(workers, ndev);
    /* fwd[k]: stage k → k+1 activations; bwd[k]: stage k+1 → k gradients */
    struct pb_msgq *fwd = pb_xcalloc((size_t)ndev, sizeof *fwd);
    struct pb_msgq *bwd = pb_xcalloc((size_t)ndev, sizeof *bwd);
    int *pc = pb_xcalloc((size_t)ndev, sizeof *pc);
    int rc = 0, left = 0;
    for (int k = 0; k < ndev; k++)
        left += progs[k].n;
    while (left > 0 && !rc) {
        bool progress = false;
        for (int k = 0; k < ndev && !rc; k++) {
            while (pc[k] < progs[k].n && !rc) {
                const struct pb_op *op = &progs[k].ops[pc[k]];
                if (!ready(op, k, ndev, fwd, bwd))
                    break;
                struct pb_msg in = {0}, out = {0};
                if (op->kind == PB_OP_F && k > 0)
                    in = pb_msgq_pop(&fwd[k - 1]);
                else if (pb_op_carries_grad(op->kind) && k < ndev - 1)
                    in = pb_msgq_pop(&bwd[k]);
                rc = pb_worker_exec(&workers[k], op, &in, &out, e);
                pb_msg_free(&in);
                if (!rc && pb_msg_present(&out))
                    pb_msgq_push(op->kind == PB_OP_F ? &fwd[k] : &bwd[k - 1], out);
                if (!rc)
                    rc = pb_worker_should_stop(&workers[k], op, e);
                pc[k]++;
                left--;
                progress = true;
            }
        }
        /* validated programs cannot deadlock (pb_programs_validate) */
        PB_CHECK(progress || rc);
    }
    for (int k = 0; k < ndev; k++) {
        pb_msgq_finish(&fwd[k]);
        pb_msgq_finish(&bwd[k]);
    }
    free(fwd);
    free(bwd);
    free(pc);
    return rc;
}
