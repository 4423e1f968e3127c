/* harness/compute/cpu/cpu_layout.c — memory layouts on oneDNN: the descriptors of the pb
 * layouts (plain NCHW, nChw8c, nChw16c), the cached reorders between a caller's
 * layout and a primitive's format (one that adds onto its destination, for gradients),
 * and the backend's reorder op. */
#include <string.h>

#include "harness/compute/cpu/cpu_internal.h"

static dnnl_format_tag_t layout_tag(enum pb_layout l)
{
    if (l == PB_LAYOUT_PLAIN)
        return dnnl_nchw;
    if (l == PB_LAYOUT_NCHW8C)
        return dnnl_nChw8c;
    PB_CHECK(l == PB_LAYOUT_NCHW16C);
    return dnnl_nChw16c;
}

dnnl_memory_desc_t pb_cpu_md_tag(int d0, int d1, int d2, int d3, dnnl_format_tag_t tag)
{
    dnnl_memory_desc_t md;
    dnnl_dims_t dims = {d0, d1, d2, d3};
    PB_DNNL(dnnl_memory_desc_init_by_tag(&md, 4, dims, dnnl_f32, tag));
    return md;
}

dnnl_memory_desc_t pb_cpu_md(struct pb_shape s, enum pb_layout l)
{
    return pb_cpu_md_tag(s.n, s.c, s.h, s.w, layout_tag(l));
}

enum pb_layout pb_cpu_native_layout(void)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ? PB_LAYOUT_NCHW16C
                                                                        : PB_LAYOUT_NCHW8C;
}

dnnl_memory_desc_t pb_cpu_md_1d(int n)
{
    dnnl_memory_desc_t md;
    dnnl_dims_t dims = {n};
    PB_DNNL(dnnl_memory_desc_init_by_tag(&md, 1, dims, dnnl_f32, dnnl_x));
    return md;
}

void pb_cpu_reorder_create(struct pb_backend *be, struct pb_cpu_prim *p,
                           const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst, bool sum)
{
    struct pb_cpu *cpu = pb_cpu_of(be);
    dnnl_primitive_attr_t attr = cpu->attr;
    dnnl_post_ops_t po = NULL;
    if (sum) {
        PB_DNNL(dnnl_primitive_attr_clone(&attr, cpu->attr));
        PB_DNNL(dnnl_post_ops_create(&po));
        PB_DNNL(dnnl_post_ops_append_sum(po, 1.0f));
        PB_DNNL(dnnl_primitive_attr_set_post_ops(attr, po));
    }
    dnnl_primitive_desc_t pd;
    PB_DNNL(dnnl_reorder_primitive_desc_create(&pd, src, cpu->eng, dst, cpu->eng, attr));
    pb_cpu_prim_from_pd(be, p, pd);
    if (sum) {
        dnnl_post_ops_destroy(po);
        dnnl_primitive_attr_destroy(attr);
    }
}

static void reorder_create(struct pb_backend *be, struct pb_cpu_prim *p,
                           const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst)
{
    pb_cpu_reorder_create(be, p, src, dst, false);
}

static void reorder_run(struct pb_backend *be, const struct pb_cpu_prim *p, const void *src,
                        void *dst)
{
    struct pb_cpu_arg a[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
    pb_cpu_prim_exec(be, p, 2, a);
}

static void xfer_init(struct pb_backend *be, struct pb_cpu_xfer *x, const dnnl_memory_desc_t *src,
                      const dnnl_memory_desc_t *dst, const dnnl_memory_desc_t *buf_md)
{
    memset(x, 0, sizeof *x);
    x->active = !dnnl_memory_desc_equal(src, dst);
    if (!x->active)
        return;
    reorder_create(be, &x->r, src, dst);
    x->buf = pb_cpu_scratch(be, dnnl_memory_desc_get_size(buf_md));
}

void pb_cpu_xfer_acc_init(struct pb_backend *be, struct pb_cpu_xfer *x,
                          const dnnl_memory_desc_t *prim_md, const dnnl_memory_desc_t *user_md)
{
    memset(x, 0, sizeof *x);
    x->active = true;
    pb_cpu_reorder_create(be, &x->r, prim_md, user_md, true);
    x->buf = pb_cpu_scratch(be, dnnl_memory_desc_get_size(prim_md));
}

void pb_cpu_xfer_in_init(struct pb_backend *be, struct pb_cpu_xfer *x,
                         const dnnl_memory_desc_t *user_md, const dnnl_memory_desc_t *prim_md)
{
    xfer_init(be, x, user_md, prim_md, prim_md);
}

const void *pb_cpu_xfer_in(struct pb_backend *be, const struct pb_cpu_xfer *x, const void *user)
{
    if (!x->active || be->failed)
        return user;
    reorder_run(be, &x->r, user, x->buf);
    return x->buf;
}

void pb_cpu_xfer_out_init(struct pb_backend *be, struct pb_cpu_xfer *x,
                          const dnnl_memory_desc_t *prim_md, const dnnl_memory_desc_t *user_md)
{
    xfer_init(be, x, prim_md, user_md, prim_md);
}

void *pb_cpu_xfer_out_ptr(const struct pb_cpu_xfer *x, void *user)
{
    return x->active ? x->buf : user;
}

void pb_cpu_xfer_out(struct pb_backend *be, const struct pb_cpu_xfer *x, void *user)
{
    if (x->active && !be->failed)
        reorder_run(be, &x->r, x->buf, user);
}

void pb_cpu_xfer_destroy(struct pb_backend *be, struct pb_cpu_xfer *x)
{
    if (!x->active)
        return;
    pb_cpu_prim_destroy(be, &x->r);
    pb_cpu_scratch_free(be, x->buf);
    x->buf = NULL;
    x->active = false;
}

static void drop_reorder(struct pb_backend *be, void *val)
{
    pb_cpu_prim_destroy(be, val);
    free(val);
}

/* src, dst: same shape, layouts as set */
void pb_cpu_reorder(struct pb_backend *be, const struct pb_tensor *src, struct pb_tensor *dst)
{
    PB_CHECK(pb_shape_eq(src->shape, dst->shape));
    if (!pb_cpu_begin(be))
        return;
    struct pb_shape s = src->shape;
    if (src->layout == dst->layout) {
        if (src->data != dst->data)
            memmove(dst->data, src->data, pb_layout_count(s, src->layout) * sizeof(float));
        return;
    }
    struct pb_cpu_key k = {.op = PB_CPU_OP_REORDER,
                           .v = {s.n, s.c, s.h, s.w, (int)src->layout, (int)dst->layout}};
    struct pb_cpu_prim *p = pb_cpu_cache_get(be, &k);
    if (!p) {
        p = pb_xcalloc(1, sizeof *p);
        dnnl_memory_desc_t a = pb_cpu_md(s, src->layout), b = pb_cpu_md(s, dst->layout);
        reorder_create(be, p, &a, &b);
        pb_cpu_cache_put(be, &k, p, drop_reorder);
    }
    reorder_run(be, p, src->data, dst->data);
}
