/* harness/ir/program.c — the op IR (program.h, design §2.1 and §2.2): building
 * per-device programs from a schedule and the text form of semantics §4 (with the versions
 * of harness/ir/versions.c). */
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

void pb_program_i(struct pb_program *p, int mb)
{
    push_pass(p, PB_OP_I, mb, PB_W_LATEST, 0, PB_PREDICT_PAPER);
}

void pb_program_w(struct pb_program *p, int mb)
{
    push_pass(p, PB_OP_W, mb, PB_W_LATEST, 0, PB_PREDICT_PAPER);
}

void pb_program_eval(struct pb_program *p, int device, int nbatches)
{
    pb_program_init(p, device);
    for (int j = 0; j < nbatches; j++)
        pb_program_f(p, j, PB_W_LATEST, 0, PB_PREDICT_PAPER);
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

void pb_program_print(FILE *f, const struct pb_pipe *p, const struct pb_program *prog,
                      int flags)
{
    bool versions = flags & (PB_PRINT_VERSIONS | PB_PRINT_SYNC);
    struct pb_version_plan vp = {0};
    if (versions)
        pb_version_plan_init(&vp, p, prog);
    fprintf(f, "stage %d:", prog->device);
    for (int i = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        if (op->kind == PB_OP_U) {
            fputs(" U", f);
            continue;
        }
        fprintf(f, " %c%d", pb_op_letter(op->kind), (int)op->mb);
        if (!versions)
            continue;
        const struct pb_op_version *v = &vp.ops[i];
        if (v->base < 0)
            fputs(":?", f);
        else if (v->ahead > 0)
            fprintf(f, ":%d+%d", v->base, v->ahead);
        else
            fprintf(f, ":%d", v->base);
        if (flags & PB_PRINT_SYNC)
            fprintf(f, "|%d", v->sync);
    }
    fputc('\n', f);
    pb_version_plan_finish(&vp);
}
