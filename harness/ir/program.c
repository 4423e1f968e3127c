/* harness/ir/program.c — the op IR (program.h, DESIGN principles 1 and 2): building
 * per-device programs from a schedule, the weight version each op reads (SPEC §4,
 * the version rules of enum pb_wsrc) and the text form of SPEC §4. */
#include "harness/ir/program.h"

#include <string.h>

void pb_program_init(struct pb_program *p, int device)
{
    p->device = device;
    p->ops = NULL;
    p->n = 0;
    p->cap = 0;
}

void pb_program_finish(struct pb_program *p)
{
    free(p->ops);
    pb_program_init(p, p->device);
}

void pb_program_push(struct pb_program *p, struct pb_op op)
{
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        struct pb_op *ops = realloc(p->ops, (size_t)cap * sizeof *ops);
        PB_CHECK(ops != NULL);
        p->ops = ops;
        p->cap = cap;
    }
    p->ops[p->n++] = op;
}

static void push_pass(struct pb_program *p, enum pb_op_kind kind, int mb, enum pb_wsrc w, int s,
                      enum pb_predict_variant form)
{
    PB_CHECK(mb >= 0 && s >= 0 && s <= INT16_MAX);
    pb_program_push(p, (struct pb_op){.kind = (uint8_t)kind, .wsrc = (uint8_t)w,
                                      .pform = (uint8_t)form, .s = (int16_t)s, .chunk = 0,
                                      .mb = mb});
}

void pb_program_f(struct pb_program *p, int mb, enum pb_wsrc w, int s, enum pb_predict_variant form)
{
    push_pass(p, PB_OP_F, mb, w, s, form);
}

void pb_program_b(struct pb_program *p, int mb, enum pb_wsrc w, int s, enum pb_predict_variant form)
{
    push_pass(p, PB_OP_B, mb, w, s, form);
}

void pb_program_u(struct pb_program *p)
{
    pb_program_push(p, (struct pb_op){.kind = PB_OP_U, .wsrc = PB_W_LATEST, .mb = -1});
}

int pb_programs_build(const struct pb_schedule *sch, const struct pb_pipe *p,
                      struct pb_program *programs, struct pb_err *e)
{
    if (sch->check(p, e))
        return -1;
    for (int d = 0; d < p->stages; d++) {
        pb_program_init(&programs[d], d);
        sch->emit(p, d, &programs[d]);
    }
    return 0;
}

void pb_programs_finish(struct pb_program *programs, int d)
{
    for (int i = 0; i < d; i++)
        pb_program_finish(&programs[i]);
}

/* Largest micro-batch index named by the program, -1 if none. */
static int max_mb(const struct pb_program *prog)
{
    int m = -1;
    for (int i = 0; i < prog->n; i++)
        if (prog->ops[i].kind != PB_OP_U && prog->ops[i].mb > m)
            m = prog->ops[i].mb;
    return m;
}

/* Versions per enum pb_wsrc, u = updates before the op on this stage:
 * LATEST (u, 0); PREDICTED (u, s); STASHED the (base, ahead) of F(mb) on this stage;
 * GROUP (u at F(mb − mb mod M) on this stage, s); BUFFERED (max(0, mb/M − 1), 0).
 * A version the program cannot supply (STASHED or GROUP without the F it needs,
 * BUFFERED or GROUP with M < 1) gets base -1; U gets base -1 and ahead -1. */
void pb_program_versions(const struct pb_pipe *p, const struct pb_program *prog, int *base,
                         int *ahead)
{
    int nmb = max_mb(prog) + 1;
    /* [mb]: op index of F(mb) on this stage and the updates applied before it */
    int *fidx = pb_xmalloc((size_t)(nmb > 0 ? nmb : 1) * sizeof *fidx);
    int *fu = pb_xmalloc((size_t)(nmb > 0 ? nmb : 1) * sizeof *fu);
    for (int j = 0; j < nmb; j++)
        fidx[j] = fu[j] = -1;
    int M = p->microbatches, u = 0;
    for (int i = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        base[i] = -1;
        ahead[i] = op->kind == PB_OP_U ? -1 : 0;
        if (op->kind == PB_OP_U) {
            u++;
            continue;
        }
        if (op->kind == PB_OP_F && op->mb >= 0 && fidx[op->mb] < 0) {
            fidx[op->mb] = i;
            fu[op->mb] = u;
        }
        int f = -1;
        switch ((enum pb_wsrc)op->wsrc) {
        case PB_W_LATEST:
            base[i] = u;
            break;
        case PB_W_PREDICTED:
            base[i] = u;
            ahead[i] = op->s;
            break;
        case PB_W_STASHED:
            f = op->mb >= 0 ? fidx[op->mb] : -1;
            if (f >= 0 && f < i) {
                base[i] = base[f];
                ahead[i] = ahead[f];
            }
            break;
        case PB_W_GROUP:
            f = M >= 1 && op->mb >= 0 ? fidx[op->mb - op->mb % M] : -1;
            if (f >= 0) {
                base[i] = fu[op->mb - op->mb % M];
                ahead[i] = op->s;
            }
            break;
        case PB_W_BUFFERED:
            if (M >= 1 && op->mb >= 0)
                base[i] = op->mb / M >= 1 ? op->mb / M - 1 : 0;
            break;
        }
    }
    free(fidx);
    free(fu);
}

/* "stage K: F0 F1 B0 U ..." (SPEC §4); with versions, F and B carry ":u" or ":u+s"
 * (s > 0), ":?" where the program cannot supply the version. */
void pb_program_print(FILE *f, const struct pb_pipe *p, const struct pb_program *prog,
                      bool versions)
{
    int *base = NULL, *ahead = NULL;
    if (versions) {
        base = pb_xmalloc((size_t)(prog->n ? prog->n : 1) * sizeof *base);
        ahead = pb_xmalloc((size_t)(prog->n ? prog->n : 1) * sizeof *ahead);
        pb_program_versions(p, prog, base, ahead);
    }
    fprintf(f, "stage %d:", prog->device);
    for (int i = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        if (op->kind == PB_OP_U) {
            fputs(" U", f);
            continue;
        }
        fprintf(f, " %c%d", op->kind == PB_OP_F ? 'F' : 'B', (int)op->mb);
        if (!versions)
            continue;
        if (base[i] < 0)
            fputs(":?", f);
        else if (ahead[i] > 0)
            fprintf(f, ":%d+%d", base[i], ahead[i]);
        else
            fprintf(f, ":%d", base[i]);
    }
    fputc('\n', f);
    free(base);
    free(ahead);
}
