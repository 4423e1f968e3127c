/* harness/ir/validate.c — pb_programs_validate (program.h; semantics §4.7,
 * design §5.3, semantics §4.10): every micro-batch's F and B (or I then W) once per
 * stage, FIFO-consistent orders across
 * stages, no deadlock with blocking sends, every weight version read exists. With v
 * chunks per device (semantics §4.12) the per-stage rules read the stage programs
 * (pb_programs_stages) and the deadlock check runs the device programs. */
#include <string.h>

#include "harness/ir/program.h"

/* "F3", "B3", "I3", "W3" or "U"; "F3@1" on a device's local chunk 1 */
static const char *tok(const struct pb_op *op, char buf[24])
{
    if (op->kind == PB_OP_U)
        return "U";
    if (op->chunk)
        snprintf(buf, 24, "%c%d@%d", pb_op_letter(op->kind), (int)op->mb, op->chunk);
    else
        snprintf(buf, 24, "%c%d", pb_op_letter(op->kind), (int)op->mb);
    return buf;
}

/* Positions of one stage's passes per micro-batch: F, the gradient-carrying B or I,
 * and W (each -1 when absent). */
struct passes {
    int *f, *b, *w;
};

/* A B, I or W of op->mb: checks its place against F (and I) and records it. */
static int check_backward(const struct pb_program *prog, int i, struct passes *ps,
                          struct pb_err *e)
{
    const struct pb_op *op = &prog->ops[i];
    int k = prog->device, mb = op->mb;
    char t[24], o[24];
    if (op->kind != PB_OP_B && op->wsrc != PB_W_LATEST)
        return pb_err_set(e, "stage %d op %d (%s): a split backward reads the latest weights "
                             "(weight source %d given)", k, i, tok(op, t), op->wsrc);
    int *pos = op->kind == PB_OP_W ? ps->w : ps->b;
    if (pos[mb] >= 0)
        return pb_err_set(e, "stage %d op %d (%s): micro-batch %d already has %s (op %d); a "
                             "micro-batch has one B, or one I and one W", k, i, tok(op, t), mb,
                          tok(&prog->ops[pos[mb]], o), pos[mb]);
    if (op->kind != PB_OP_W && ps->w[mb] >= 0)
        return pb_err_set(e, "stage %d op %d (%s): W%d (op %d) ran before it; W comes after its "
                             "I", k, i, tok(op, t), mb, ps->w[mb]);
    if (op->kind == PB_OP_W && ps->b[mb] >= 0 && prog->ops[ps->b[mb]].kind == PB_OP_B)
        return pb_err_set(e, "stage %d op %d (%s): micro-batch %d already has B%d (op %d); a "
                             "micro-batch has one B, or one I and one W", k, i, tok(op, t), mb,
                          mb, ps->b[mb]);
    if (op->kind == PB_OP_W && ps->b[mb] < 0)
        return pb_err_set(e, "stage %d op %d (%s): weight gradient before its input gradient "
                             "I%d; W comes after its I", k, i, tok(op, t), mb);
    if (ps->f[mb] < 0 && op->wsrc == PB_W_STASHED)
        return pb_err_set(e, "stage %d op %d (%s): reads the stash of F%d, which has not "
                             "run (backward before its forward)", k, i, tok(op, t), mb);
    if (ps->f[mb] < 0)
        return pb_err_set(e, "stage %d op %d (%s): backward before its forward F%d", k, i,
                          tok(op, t), mb);
    pos[mb] = i;
    return 0;
}

/* Each op well formed; each mb of [0, N) has one F and, later, one B or one I and then
 * one W; every gradient added (B, W) reaches a U. ps receives the op indices. */
static int check_stage(const struct pb_pipe *p, const struct pb_program *prog, struct passes *ps,
                       struct pb_err *e)
{
    int k = prog->device, n = p->length, last_g = -1, open = 0;  /* open: I's without W */
    char t[24];
    for (int j = 0; j < n; j++)
        ps->f[j] = ps->b[j] = ps->w[j] = -1;
    for (int i = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        if (op->kind >= PB_OP_NKINDS)
            return pb_err_set(e, "stage %d op %d: unknown op kind %d", k, i, op->kind);
        if (op->kind == PB_OP_U && open > 0) {
            int j = 0;
            while (ps->b[j] < 0 || prog->ops[ps->b[j]].kind != PB_OP_I || ps->w[j] >= 0)
                j++;
            return pb_err_set(e, "stage %d op %d (U): an update between I%d (op %d) and W%d; a "
                                 "micro-batch's gradient is applied by one update", k, i, j,
                              ps->b[j], j);
        }
        if (op->kind == PB_OP_U)
            continue;
        if (op->mb < 0 || op->mb >= n)
            return pb_err_set(e, "stage %d op %d (%s): micro-batch outside the epoch's 0..%d", k,
                              i, tok(op, t), n - 1);
        if (op->wsrc > PB_W_VERTICAL)
            return pb_err_set(e, "stage %d op %d (%s): unknown weight source %d", k, i,
                              tok(op, t), op->wsrc);
        if (op->kind != PB_OP_F) {
            if (check_backward(prog, i, ps, e))
                return -1;
            open += op->kind == PB_OP_I ? 1 : op->kind == PB_OP_W ? -1 : 0;
            if (pb_op_accumulates(op->kind))
                last_g = i;
            continue;
        }
        if (ps->f[op->mb] >= 0)
            return pb_err_set(e, "stage %d op %d (%s): %s appears twice (also op %d)", k, i,
                              tok(op, t), t, ps->f[op->mb]);
        if (op->wsrc == PB_W_STASHED)
            return pb_err_set(e, "stage %d op %d (%s): a forward cannot read stashed weights", k,
                              i, tok(op, t));
        ps->f[op->mb] = i;
    }
    for (int j = 0; j < n; j++) {
        if (ps->f[j] < 0)
            return pb_err_set(e, "stage %d: micro-batch %d has no forward F%d", k, j, j);
        if (ps->b[j] < 0)
            return pb_err_set(e, "stage %d: micro-batch %d has no backward B%d (F%d is op %d)", k,
                              j, j, j, ps->f[j]);
        if (prog->ops[ps->b[j]].kind == PB_OP_I && ps->w[j] < 0)
            return pb_err_set(e, "stage %d: micro-batch %d has I%d (op %d) but no W%d; its weight "
                                 "gradient is never computed", k, j, j, ps->b[j], j);
    }
    for (int i = last_g + 1; i < prog->n; i++)
        if (prog->ops[i].kind == PB_OP_U)
            return 0;
    if (last_g >= 0)
        return pb_err_set(e, "stage %d op %d (%s): its gradient is never applied (no U after it)",
                          k, last_g, tok(&prog->ops[last_g], t));
    return 0;
}

/* Whether op is one of the channel's: the forwards (kind F) or the ops carrying a
 * gradient (kind B: B and I). */
static bool on_channel(const struct pb_op *op, int kind)
{
    return kind == PB_OP_F ? op->kind == PB_OP_F : pb_op_carries_grad(op->kind);
}

/* Stage k+1 must receive activations in the order stage k sends them, and stage k
 * gradients in the order stage k+1 sends them (FIFO channels). */
static int check_orders(const struct pb_pipe *p, const struct pb_program *pr, int kind,
                        struct pb_err *e)
{
    for (int k = 0; k + 1 < p->stages; k++) {
        int i = 0, j = 0, nth = 0;
        for (;; i++, j++, nth++) {
            while (i < pr[k].n && !on_channel(&pr[k].ops[i], kind))
                i++;
            while (j < pr[k + 1].n && !on_channel(&pr[k + 1].ops[j], kind))
                j++;
            if (i == pr[k].n || j == pr[k + 1].n)
                break;
            if (pr[k].ops[i].mb != pr[k + 1].ops[j].mb) {
                const char *what = kind == PB_OP_F ? "forward" : "backward";
                return pb_err_set(e, "%s order differs between stages %d and %d: %s #%d is %c%d "
                                     "on stage %d (op %d) but %c%d on stage %d (op %d); channels "
                                     "are FIFO", what, k, k + 1, what, nth,
                                  pb_op_letter(pr[k].ops[i].kind), (int)pr[k].ops[i].mb, k, i,
                                  pb_op_letter(pr[k + 1].ops[j].kind), (int)pr[k + 1].ops[j].mb,
                                  k + 1, j);
            }
        }
    }
    return 0;
}

/* A FIFO channel of micro-batch indices; each carries at most N items in an epoch. */
struct chan {
    int *items;
    int head, tail;
};

enum phase { PH_RECV, PH_SEND, PH_WAIT };

/* Runs every device in program order: an F on stage s > 0 (s: the stage of the op's
 * chunk) receives stage s−1's activation, a B or I on stage s < D−1 receives stage s+1's
 * gradient; after the op, F sends on stage s < D−1 and B or I on stage s > 0. A send
 * deposits its item and completes once the channel holds at most `capacity` items
 * (capacity 0 is a rendezvous). fwd[s]: s → s+1, bwd[s]: s+1 → s. */
static int check_deadlock(const struct pb_pipe *p, const struct pb_program *pr, int capacity,
                          struct pb_err *e)
{
    int D = p->stages, np = pb_pipe_devices(p), n = p->length;
    struct chan *fwd = pb_xcalloc((size_t)D, sizeof *fwd);
    struct chan *bwd = pb_xcalloc((size_t)D, sizeof *bwd);
    int *pc = pb_xcalloc((size_t)np, sizeof *pc), *ph = pb_xcalloc((size_t)np, sizeof *ph);
    for (int k = 0; k < D; k++) {
        fwd[k].items = pb_xmalloc((size_t)n * sizeof(int));
        bwd[k].items = pb_xmalloc((size_t)n * sizeof(int));
    }
    for (bool progress = true; progress;) {
        progress = false;
        for (int k = 0; k < np; k++) {
            for (;;) {
                if (pc[k] == pr[k].n)
                    break;
                const struct pb_op *op = &pr[k].ops[pc[k]];
                bool f = op->kind == PB_OP_F, b = pb_op_carries_grad(op->kind);
                int st = pb_pipe_stage_of(p, k, op->chunk);
                struct chan *in = f && st > 0 ? &fwd[st - 1] : b && st + 1 < D ? &bwd[st] : NULL;
                struct chan *out = f && st + 1 < D ? &fwd[st] : b && st > 0 ? &bwd[st - 1] : NULL;
                if (ph[k] == PH_RECV && in) {
                    if (in->head == in->tail)
                        break;
                    PB_CHECK(in->items[in->head] == op->mb);
                    in->head++;
                } else if (ph[k] == PH_SEND && out) {
                    out->items[out->tail++] = op->mb;
                } else if (ph[k] == PH_WAIT && out && out->tail - out->head > capacity) {
                    break;
                }
                if (ph[k] == PH_WAIT) {
                    pc[k]++;
                    ph[k] = PH_RECV;
                } else {
                    ph[k]++;
                }
                progress = true;
            }
        }
    }
    char msg[sizeof e->msg] = "";
    const char *unit = np < D ? "device" : "stage";
    for (int k = 0; k < np; k++) {
        if (pc[k] == pr[k].n)
            continue;
        char t[24];
        size_t len = strlen(msg);
        const struct pb_op *op = &pr[k].ops[pc[k]];
        bool f = op->kind == PB_OP_F;
        int st = pb_pipe_stage_of(p, k, op->chunk);
        if (ph[k] == PH_RECV)
            snprintf(msg + len, sizeof msg - len, "; %s %d at op %d (%s) waits for the %s of "
                     "stage %d", unit, k, pc[k], tok(op, t), f ? "activation" : "gradient",
                     f ? st - 1 : st + 1);
        else
            snprintf(msg + len, sizeof msg - len, "; %s %d at op %d (%s) waits to send its %s "
                     "to stage %d (channel full)", unit, k, pc[k], tok(op, t),
                     f ? "activation" : "gradient", f ? st + 1 : st - 1);
    }
    for (int k = 0; k < D; k++) {
        free(fwd[k].items);
        free(bwd[k].items);
    }
    free(fwd);
    free(bwd);
    free(pc);
    free(ph);
    if (*msg)
        return pb_err_set(e, "deadlock with channel capacity %d%s", capacity, msg);
    return 0;
}

/* Every version read exists when read (enum pb_wsrc; check_stage has already seen
 * every STASHED read come after its F): BUFFERED version v needs u−1 ≤ v ≤ u (two
 * buffers); GROUP needs the mini-batch's first F, itself GROUP with the same s, and
 * must come before the mini-batch's update (the first U after one of its
 * backwards), which frees Ŵ; VERTICAL version v needs v ≤ u (the stage has made it;
 * the version plan keeps it from its last U on). */
static int check_versions(const struct pb_pipe *p, const struct pb_program *prog,
                          const int *fpos, struct pb_err *e)
{
    struct pb_version_plan vp;
    pb_version_plan_init(&vp, p, prog);
    int k = prog->device, M = p->microbatches, u = 0, npend = 0, rc = 0;
    /* per mini-batch: its update has run; the mini-batches with a B since the last U */
    bool *closed = pb_xcalloc((size_t)p->length, sizeof *closed);
    int *pend = pb_xmalloc((size_t)p->length * sizeof *pend);
    char t[24];
    for (int i = 0; i < prog->n && !rc; i++) {
        const struct pb_op *op = &prog->ops[i];
        if (op->kind == PB_OP_U) {
            u++;
            while (npend)
                closed[pend[--npend]] = true;
            continue;
        }
        if ((op->wsrc == PB_W_BUFFERED || op->wsrc == PB_W_GROUP) && M < 1) {
            rc = pb_err_set(e, "stage %d op %d (%s): reads per mini-batch but M = %d", k, i,
                            tok(op, t), M);
            break;
        }
        int g = M >= 1 ? op->mb / M : 0, first = g * M;
        if (op->wsrc == PB_W_VERTICAL) {
            if (vp.ops[i].base > u)
                rc = pb_err_set(e, "stage %d op %d (%s): reads W^(%d), the version stage 0's "
                                   "F%d read, but this stage has made only %d updates", k, i,
                                tok(op, t), vp.ops[i].base, (int)op->mb, u);
        } else if (op->wsrc == PB_W_BUFFERED) {
            int v = g >= 1 ? g - 1 : 0;
            if (v < u - 1 || v > u)
                rc = pb_err_set(e, "stage %d op %d (%s): reads W^(%d) but after %d updates the "
                                   "two buffers hold W^(%d) and W^(%d)", k, i, tok(op, t), v, u,
                                u > 0 ? u - 1 : 0, u);
        } else if (op->wsrc == PB_W_GROUP) {
            const struct pb_op *bell = &prog->ops[fpos[first]];
            if (fpos[first] > i)
                rc = pb_err_set(e, "stage %d op %d (%s): reads the prediction of its mini-batch's "
                                   "first forward F%d, which has not run", k, i, tok(op, t), first);
            else if (bell->wsrc != PB_W_GROUP || bell->s != op->s)
                rc = pb_err_set(e, "stage %d op %d (%s): reads a group prediction with look-ahead "
                                   "%d that its mini-batch's first forward F%d did not make", k,
                                i, tok(op, t), op->s, first);
            else if (closed[g])
                rc = pb_err_set(e, "stage %d op %d (%s): its mini-batch's update already ran, "
                                   "so the group prediction made at F%d is gone", k, i,
                                tok(op, t), first);
        }
        if (pb_op_accumulates(op->kind) && M >= 1 && !closed[g]) {
            bool listed = false;
            for (int q = 0; q < npend; q++)
                listed |= pend[q] == g;
            if (!listed)
                pend[npend++] = g;
        }
    }
    free(closed);
    free(pend);
    pb_version_plan_finish(&vp);
    return rc;
}

/* An op marked as a pair is an F followed by a B on the same device (DualPipeV's
 * OVERLAP_F_B, run in turn). */
static int check_pairs(const struct pb_program *prog, struct pb_err *e)
{
    char t[24];
    for (int i = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        if (op->pair && (op->kind != PB_OP_F || i + 1 == prog->n ||
                         prog->ops[i + 1].kind != PB_OP_B))
            return pb_err_set(e, "device %d op %d (%s): marked as an overlapped pair, which is "
                                 "an F followed by a B", prog->device, i, tok(op, t));
    }
    return 0;
}

int pb_programs_validate(const struct pb_pipe *p, const struct pb_program *programs,
                         int capacity, struct pb_err *e)
{
    if (p->stages < 1 || p->length < 1)
        return pb_err_set(e, "validate: need D >= 1 and N >= 1 (got D = %d, N = %d)", p->stages,
                          p->length);
    if (p->chunks < 0 || p->stages % pb_pipe_chunks(p))
        return pb_err_set(e, "validate: %d chunks per device do not divide D = %d", p->chunks,
                          p->stages);
    if (capacity < 0)
        return pb_err_set(e, "validate: channel capacity must be >= 0 (got %d)", capacity);
    int n = p->length, rc = 0;
    for (int k = 0; k < pb_pipe_devices(p) && !rc; k++)
        if (programs[k].device != k)
            rc = pb_err_set(e, "validate: programs[%d] is for device %d", k, programs[k].device);
        else
            rc = check_pairs(&programs[k], e);
    struct pb_program *st = pb_xcalloc((size_t)p->stages, sizeof *st);
    if (rc || pb_programs_stages(p, programs, st, e)) {
        free(st);
        return -1;
    }
    int *fpos = pb_xmalloc((size_t)n * p->stages * sizeof *fpos);
    int *bpos = pb_xmalloc((size_t)n * 2 * sizeof *bpos);
    for (int k = 0; k < p->stages && !rc; k++) {
        struct passes ps = {fpos + (size_t)k * n, bpos, bpos + n};
        rc = check_stage(p, &st[k], &ps, e);
    }
    if (!rc)
        rc = check_orders(p, st, PB_OP_F, e);
    if (!rc)
        rc = check_orders(p, st, PB_OP_B, e);
    if (!rc)
        rc = check_deadlock(p, programs, capacity, e);
    for (int k = 0; k < p->stages && !rc; k++)
        rc = check_versions(p, &st[k], fpos + (size_t)k * n, e);
    free(fpos);
    free(bpos);
    pb_programs_finish(st, p->stages);
    free(st);
    return rc;
}

int pb_programs_capacity(const struct pb_pipe *p, const struct pb_program *devices,
                         struct pb_err *e)
{
    for (int c = 1; c < p->length; c++)
        if (!check_deadlock(p, devices, c, e))
            return c;
    return check_deadlock(p, devices, p->length > 1 ? p->length : 1, e) ? -1
           : (p->length > 1 ? p->length : 1);
}
