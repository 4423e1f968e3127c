/* harness/compute/cpu/cpu_prim.c — oneDNN primitives as the CPU backend uses them: each one
 * owns its scratchpad (user-managed, so concurrent stages never share one) and runs
 * synchronously on the instance's stream. */
#include "harness/compute/cpu/cpu_internal.h"

#define PB_CPU_MAX_ARGS 16

static void prim_finish(struct pb_backend *be, struct pb_cpu_prim *p)
{
    PB_DNNL(dnnl_primitive_create(&p->prim, p->pd));
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(p->pd, dnnl_query_scratchpad_md, 0);
    p->scratchpad = sp ? pb_cpu_scratch(be, dnnl_memory_desc_get_size(sp)) : NULL;
}

void pb_cpu_prim_create(struct pb_backend *be, struct pb_cpu_prim *p, const_dnnl_op_desc_t desc,
                        const_dnnl_primitive_desc_t hint)
{
    PB_DNNL(dnnl_primitive_desc_create(&p->pd, desc, pb_cpu_of(be)->attr, pb_cpu_of(be)->eng,
                                       hint));
    prim_finish(be, p);
}

void pb_cpu_prim_from_pd(struct pb_backend *be, struct pb_cpu_prim *p, dnnl_primitive_desc_t pd)
{
    p->pd = pd;
    prim_finish(be, p);
}

void pb_cpu_prim_destroy(struct pb_backend *be, struct pb_cpu_prim *p)
{
    if (p->prim)
        dnnl_primitive_destroy(p->prim);
    if (p->pd)
        dnnl_primitive_desc_destroy(p->pd);
    pb_cpu_scratch_free(be, p->scratchpad);
    p->prim = NULL;
    p->pd = NULL;
    p->scratchpad = NULL;
}

const dnnl_memory_desc_t *pb_cpu_prim_md(const struct pb_cpu_prim *p, dnnl_query_t what, int index)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(p->pd, what, index);
    PB_CHECK(md != NULL);
    return md;
}

void pb_cpu_prim_exec(struct pb_backend *be, const struct pb_cpu_prim *p, int nargs,
                      const struct pb_cpu_arg *args)
{
    if (be->failed)
        return;  /* its buffers may be missing: the instance failed */
    struct pb_cpu *cpu = pb_cpu_of(be);
    dnnl_exec_arg_t local[PB_CPU_MAX_ARGS + 1];
    dnnl_exec_arg_t *ex = local;
    if (nargs > PB_CPU_MAX_ARGS)
        ex = pb_xmalloc((size_t)(nargs + 1) * sizeof *ex);
    int m = 0;
    for (int i = 0; i < nargs; i++) {
        ex[m].arg = args[i].arg;
        const dnnl_memory_desc_t *md =
            dnnl_primitive_desc_query_md(p->pd, dnnl_query_exec_arg_md, args[i].arg);
        PB_CHECK(md != NULL);
        PB_DNNL(dnnl_memory_create(&ex[m].memory, md, cpu->eng, (void *)args[i].ptr));
        m++;
    }
    if (p->scratchpad) {
        ex[m].arg = DNNL_ARG_SCRATCHPAD;
        PB_DNNL(dnnl_memory_create(&ex[m].memory,
                                   dnnl_primitive_desc_query_md(p->pd, dnnl_query_scratchpad_md, 0),
                                   cpu->eng, p->scratchpad));
        m++;
    }
    PB_DNNL(dnnl_primitive_execute(p->prim, cpu->stream, m, ex));
    PB_DNNL(dnnl_stream_wait(cpu->stream));
    for (int i = 0; i < m; i++)
        dnnl_memory_destroy(ex[i].memory);
    if (ex != local)
        free(ex);
}
