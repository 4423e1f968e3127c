/* harness/ir/versions.c — the weight version every op of a program reads, and the one
 * a synchronous run would read (semantics §4 version rules of enum pb_wsrc, §6.1
 * and §6.2), with what the weight store must hold for them: stash slots, the versions
 * vertical sync keeps, XPipe's group predictions, 2BW's older buffer. Derived from the
 * program and the pipe's D and N alone. */
#include "harness/ir/program.h"

#include <string.h>

/* Largest micro-batch index named by the program, -1 if none. */
static int max_mb(const struct pb_program *prog)
{
    int m = -1;
    for (int i = 0; i < prog->n; i++)
        if (prog->ops[i].kind != PB_OP_U && prog->ops[i].mb > m)
            m = prog->ops[i].mb;
    return m;
}

static int update_every(const struct pb_program *prog)
{
    int before_u = 0;
    for (int i = 0; i < prog->n && prog->ops[i].kind != PB_OP_U; i++)
        before_u += pb_op_accumulates(prog->ops[i].kind);
    return before_u > 0 ? before_u : 1;
}

/* The version stage 0's F(mb) reads in the 1F1B order with one U per B (semantics §4.1):
 * its w_0 = min(D−1, N) warm-up forwards read W^(0), then F(w_0 + i) follows i updates. */
static int vertical_version(const struct pb_pipe *p, int mb)
{
    int w0 = p->stages - 1 < p->length ? p->stages - 1 : p->length;
    return mb > w0 ? mb - w0 : 0;
}

/* Versions per enum pb_wsrc, u = updates before the op on this stage:
 * LATEST (u, 0); PREDICTED (u, s); STASHED the (base, ahead) of F(mb) on this stage;
 * GROUP (u at F(mb − mb mod M) on this stage, s); BUFFERED (max(0, mb/M − 1), 0);
 * VERTICAL (vertical_version(mb), 0), live when that is u. */
static void op_versions(const struct pb_pipe *p, const struct pb_program *prog, int nmb,
                        struct pb_version_plan *vp)
{
    /* [mb]: op index of F(mb) on this stage and the updates applied before it */
    int *fidx = pb_xmalloc((size_t)(nmb > 0 ? nmb : 1) * sizeof *fidx);
    int *fu = pb_xmalloc((size_t)(nmb > 0 ? nmb : 1) * sizeof *fu);
    for (int j = 0; j < nmb; j++)
        fidx[j] = fu[j] = -1;
    int M = p->microbatches, u = 0;
    for (int i = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        struct pb_op_version *v = &vp->ops[i];
        *v = (struct pb_op_version){-1, 0, -1, false};
        if (op->kind == PB_OP_U) {
            u++;
            v->base = v->sync = u;
            continue;
        }
        v->sync = op->mb / vp->update_every;
        if (op->kind == PB_OP_F && op->mb >= 0 && fidx[op->mb] < 0) {
            fidx[op->mb] = i;
            fu[op->mb] = u;
        }
        int f = -1;
        switch ((enum pb_wsrc)op->wsrc) {
        case PB_W_LATEST:
            v->base = u;
            break;
        case PB_W_PREDICTED:
            v->base = u;
            v->ahead = op->s;
            break;
        case PB_W_STASHED:
            f = op->mb >= 0 ? fidx[op->mb] : -1;
            if (f >= 0 && f < i) {
                v->base = vp->ops[f].base;
                v->ahead = vp->ops[f].ahead;
            }
            break;
        case PB_W_GROUP:
            f = M >= 1 && op->mb >= 0 ? fidx[op->mb - op->mb % M] : -1;
            if (f >= 0) {
                v->base = fu[op->mb - op->mb % M];
                v->ahead = op->s;
            }
            break;
        case PB_W_BUFFERED:
            if (M >= 1 && op->mb >= 0)
                v->base = op->mb / M >= 1 ? op->mb / M - 1 : 0;
            break;
        case PB_W_VERTICAL:
            if (op->mb >= 0) {
                v->base = vertical_version(p, op->mb);
                v->live = v->base == u;
            }
            break;
        }
    }
    free(fidx);
    free(fu);
}

/* Vertical sync: a version an op reads after the U that replaced it is copied at that
 * U, with one reference per backward that reads it then (its forward, earlier, reads
 * the copy too); keep[] of the U counts them. A read of a version the program never
 * replaces is a read of the live weights. */
static void keep_needs(const struct pb_program *prog, struct pb_version_plan *vp)
{
    /* upos[v]: op index of the U that replaces version v (the (v+1)-th U) */
    int *upos = pb_xmalloc((size_t)(prog->n > 0 ? prog->n : 1) * sizeof *upos), nu = 0;
    for (int i = 0; i < prog->n; i++)
        if (prog->ops[i].kind == PB_OP_U)
            upos[nu++] = i;
    for (int i = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        int v = vp->ops[i].base;
        if (op->kind == PB_OP_B && op->wsrc == PB_W_VERTICAL && v >= 0 && !vp->ops[i].live &&
            v < nu && upos[v] < i)
            vp->keep[upos[v]]++;
    }
    free(upos);
}

/* Which forwards stash: those whose B reads STASHED with an update between them (else
 * the B reads the live weights, which are still that version: no copy). And the most
 * distinct stashed or kept versions held at once, a stash released by its backward, a
 * kept version (keep_needs) by the last backward that reads it. */
static void stash_needs(const struct pb_program *prog, int nmb, struct pb_version_plan *vp)
{
    size_t cnt = (size_t)(nmb > 0 ? nmb : 1);
    int *fpos = pb_xmalloc(cnt * sizeof *fpos), *ubefore = pb_xmalloc(cnt * sizeof *ubefore);
    bool *copied = pb_xcalloc(cnt, sizeof *copied);
    for (int j = 0; j < nmb; j++)
        fpos[j] = ubefore[j] = -1;
    for (int i = 0, u = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        if (op->kind == PB_OP_U)
            u++;
        else if (op->kind == PB_OP_F) {
            fpos[op->mb] = i;
            ubefore[op->mb] = u;
        } else if (op->wsrc == PB_W_STASHED && fpos[op->mb] >= 0) {
            copied[op->mb] = u != ubefore[op->mb];
            vp->stash[fpos[op->mb]] = copied[op->mb];
            vp->ops[i].live = !copied[op->mb];
        }
    }
    /* held[v]: references to the copy of version v (versions count updates: at most n) */
    int *held = pb_xcalloc((size_t)prog->n + 1, sizeof *held);
    int distinct = 0;
    for (int i = 0, u = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        int v = vp->ops[i].base;
        if (op->kind == PB_OP_U) {
            if (vp->keep[i] > 0) {
                distinct += held[u] == 0;
                held[u] += vp->keep[i];
            }
            u++;
        } else if (op->kind == PB_OP_F && vp->stash[i] && v >= 0) {
            distinct += held[v]++ == 0;
        } else if (op->kind == PB_OP_B && op->wsrc == PB_W_STASHED && copied[op->mb] && v >= 0 &&
                   held[v] > 0) {
            distinct -= --held[v] == 0;
        } else if (op->kind == PB_OP_B && op->wsrc == PB_W_VERTICAL && !vp->ops[i].live &&
                   v >= 0 && held[v] > 0) {
            distinct -= --held[v] == 0;
        }
        if (distinct > vp->stash_slots)
            vp->stash_slots = distinct;
    }
    free(held);
    free(copied);
    free(fpos);
    free(ubefore);
}

/* XPipe: a mini-batch's prediction is made at its first GROUP forward and dropped at
 * the update that follows its last backward; the most held at once. Look-ahead 0
 * needs none: no update falls in between, so the mini-batch reads W itself. */
static void group_needs(const struct pb_pipe *p, const struct pb_program *prog,
                        struct pb_version_plan *vp)
{
    int M = p->microbatches, held = 0, last_b = -1;
    int nmini = M >= 1 ? max_mb(prog) / M + 1 : 0;
    bool *live = pb_xcalloc((size_t)(nmini > 0 ? nmini : 1), sizeof *live);
    for (int i = 0; i < prog->n && M >= 1; i++) {
        const struct pb_op *op = &prog->ops[i];
        if (op->kind == PB_OP_U) {
            if (last_b >= 0 && live[last_b / M]) {
                live[last_b / M] = false;
                held--;
            }
            continue;
        }
        if (op->kind == PB_OP_B)
            last_b = op->mb;
        if (op->wsrc == PB_W_GROUP && op->s > 0 && !live[op->mb / M]) {
            live[op->mb / M] = true;
            if (++held > vp->group_slots)
                vp->group_slots = held;
        }
    }
    free(live);
}

void pb_version_plan_init(struct pb_version_plan *vp, const struct pb_pipe *p,
                          const struct pb_program *prog)
{
    memset(vp, 0, sizeof *vp);
    int n = prog->n, nmb = max_mb(prog) + 1;
    vp->n = n;
    vp->ops = pb_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *vp->ops);
    vp->stash = pb_xcalloc((size_t)(n > 0 ? n : 1), sizeof *vp->stash);
    vp->keep = pb_xcalloc((size_t)(n > 0 ? n : 1), sizeof *vp->keep);
    vp->update_every = update_every(prog);
    op_versions(p, prog, nmb, vp);
    keep_needs(prog, vp);
    stash_needs(prog, nmb, vp);
    group_needs(p, prog, vp);
    for (int i = 0; i < n; i++)
        vp->buffered |= prog->ops[i].wsrc == PB_W_BUFFERED;
}

enum pb_family pb_schedule_family(const struct pb_schedule *sch)
{
    struct pb_pipe p = {.stages = 4, .length = 8, .microbatches = 4};
    struct pb_program progs[4], st[4];
    pb_pipe_adopt(&p, sch);
    int rc = -1;
    for (int k = 0; rc && k < PB_OPT_NKINDS; k++) {
        p.optimizer = (enum pb_optim_kind)k;
        rc = pb_programs_build(sch, &p, progs, NULL);
    }
    if (rc)
        return PB_FAMILY_UNKNOWN;
    rc = pb_programs_stages(&p, progs, st, NULL);
    pb_programs_finish(progs, pb_pipe_devices(&p));
    if (rc)
        return PB_FAMILY_UNKNOWN;
    bool sync = true;
    for (int d = 0; d < p.stages; d++) {  /* each stage's program (with chunks, per chunk) */
        struct pb_version_plan vp;
        pb_version_plan_init(&vp, &p, &st[d]);
        for (int i = 0; i < vp.n; i++)
            sync &= st[d].ops[i].kind == PB_OP_U ||
                    vp.ops[i].base + vp.ops[i].ahead == vp.ops[i].sync;
        pb_version_plan_finish(&vp);
    }
    pb_programs_finish(st, p.stages);
    return sync ? PB_FAMILY_SYNC : PB_FAMILY_ASYNC;
}

void pb_version_plan_finish(struct pb_version_plan *vp)
{
    free(vp->ops);
    free(vp->stash);
    free(vp->keep);
    memset(vp, 0, sizeof *vp);
}
