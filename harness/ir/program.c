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

void pb_program_pass(struct pb_program *p, int kind, int mb, int chunk)
{
    PB_CHECK(kind != PB_OP_U && chunk >= 0 && chunk <= INT16_MAX);
    push_pass(p, (enum pb_op_kind)kind, mb, PB_W_LATEST, 0, PB_PREDICT_PAPER);
    p->ops[p->n - 1].chunk = (int16_t)chunk;
}

void pb_program_pair(struct pb_program *p, int fmb, int fc, int bmb, int bc)
{
    pb_program_pass(p, PB_OP_F, fmb, fc);
    p->ops[p->n - 1].pair = 1;
    pb_program_pass(p, PB_OP_B, bmb, bc);
}

void pb_program_eval(struct pb_program *p, int device, int nbatches, int chunks)
{
    pb_program_init(p, device);
    for (int j = 0; j < nbatches; j++)
        for (int c = 0; c < chunks; c++)
            pb_program_pass(p, PB_OP_F, j, c);
}

void pb_pipe_adopt(struct pb_pipe *p, const struct pb_schedule *sch)
{
    if (sch->chunks && !p->chunks)
        p->chunks = sch->chunks;
    p->placement = sch->placement;
}

int pb_programs_build(const struct pb_schedule *sch, const struct pb_pipe *p,
                      struct pb_program *programs, struct pb_err *e)
{
    int v = pb_pipe_chunks(p);
    if (p->chunks < 0)
        return pb_err_set(e, "--chunks must be >= 1 (got %d)", p->chunks);
    if (v > 1 && !sch->chunked)
        return pb_err_set(e, "schedule '%s' has no model chunks; drop --chunks %d or use a "
                             "schedule with chunks (interleaved)", sch->name, v);
    if (sch->chunks && v != sch->chunks)
        return pb_err_set(e, "schedule '%s' runs exactly %d model chunks per device (V "
                             "placement); give --chunks %d or leave --chunks out (got %d)",
                          sch->name, sch->chunks, sch->chunks, v);
    if (p->placement != sch->placement)
        return pb_err_set(e, "schedule '%s' places its chunks %s, the pipe %s "
                             "(pb_pipe_adopt gives a pipe its schedule's placement)", sch->name,
                          sch->placement == PB_PLACE_V ? "in a V" : "in loops",
                          p->placement == PB_PLACE_V ? "in a V" : "in loops");
    if (sch->chunks && p->stages % v)
        return pb_err_set(e, "%s: --stages %d must be a multiple of %d: the D = %d·p stages "
                             "run %d per device on p devices", sch->name, p->stages, v, v, v);
    if (p->stages % v)
        return pb_err_set(e, "--chunks %d must divide the stages D = %d (D = p·v: p devices "
                             "of v chunks each)", v, p->stages);
    if (sch->check(p, e))
        return -1;
    for (int d = 0; d < pb_pipe_devices(p); d++) {
        pb_program_init(&programs[d], d);
        sch->emit(p, d, &programs[d]);
    }
    return 0;
}

int pb_programs_stages(const struct pb_pipe *p, const struct pb_program *devices,
                       struct pb_program *stages, struct pb_err *e)
{
    int v = pb_pipe_chunks(p), np = pb_pipe_devices(p);
    for (int k = 0; k < p->stages; k++)
        pb_program_init(&stages[k], k);
    for (int d = 0; d < np; d++)
        for (int i = 0; i < devices[d].n; i++) {
            struct pb_op op = devices[d].ops[i];
            if (op.kind != PB_OP_U && (op.chunk < 0 || op.chunk >= v)) {
                pb_programs_finish(stages, p->stages);
                return pb_err_set(e, "device %d op %d (%c%d@%d): model chunk %d; the device "
                                     "holds chunks 0..%d", d, i, pb_op_letter(op.kind),
                                  (int)op.mb, op.chunk, op.chunk, v - 1);
            }
            for (int c = 0; c < v; c++)
                if (op.kind == PB_OP_U || op.chunk == c) {
                    struct pb_op s = op;
                    s.chunk = 0;
                    if (op.kind == PB_OP_B && i > 0 && devices[d].ops[i - 1].pair)
                        s.pair = 2;
                    pb_program_push(&stages[pb_pipe_stage_of(p, d, c)], s);
                }
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
    int nc = pb_pipe_chunks(p);
    /* with chunks, each chunk's ops and version plan as its stage's program */
    struct pb_program *own = pb_xcalloc((size_t)nc, sizeof *own);
    struct pb_version_plan *vp = pb_xcalloc((size_t)nc, sizeof *vp);
    int *at = pb_xcalloc((size_t)nc, sizeof *at);
    for (int i = 0; i < prog->n; i++)
        for (int c = 0; c < nc; c++)
            if (prog->ops[i].kind == PB_OP_U || prog->ops[i].chunk == c)
                pb_program_push(&own[c], prog->ops[i]);
    for (int c = 0; versions && c < nc; c++)
        pb_version_plan_init(&vp[c], p, nc > 1 ? &own[c] : prog);
    fprintf(f, nc > 1 ? "device %d:" : "stage %d:", prog->device);
    for (int i = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        int c = op->kind == PB_OP_U || op->chunk < 0 || op->chunk >= nc ? 0 : op->chunk;
        int si = at[c];
        for (int q = 0; q < nc; q++)
            at[q] += op->kind == PB_OP_U || q == c;
        if (op->kind == PB_OP_U) {
            fputs(" U", f);
            continue;
        }
        bool joined = i > 0 && prog->ops[i - 1].pair;
        fprintf(f, "%c%c%d", joined ? '+' : ' ', pb_op_letter(op->kind), (int)op->mb);
        if (nc > 1)
            fprintf(f, "@%d", op->chunk);
        if (!versions)
            continue;
        const struct pb_op_version *v = &vp[c].ops[nc > 1 ? si : i];
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
    for (int c = 0; c < nc; c++) {
        pb_version_plan_finish(&vp[c]);
        pb_program_finish(&own[c]);
    }
    free(own);
    free(vp);
    free(at);
}
