/* harness/compute/cpu/cpu_concat.c — channel concatenation (Inception, GoogLeNet, DenseNet) and
 * its backward, the split, in any layouts and channel counts: oneDNN's concat primitive,
 * and reorders of channel windows (sub-memory views) of dout into the slices. */
#include "harness/compute/cpu/cpu_internal.h"

/* The key of a concat/split of k tensors of n, h, w with channels c[i], layouts l[i]
 * into/from one of layout lo; false when it does not fit in a key. */
static bool cat_key(struct pb_cpu_key *key, enum pb_cpu_op op, struct pb_shape s, enum pb_layout lo,
                    int k, const struct pb_tensor *const *ts)
{
    if (5 + 2 * k > PB_CPU_KEY_INTS)
        return false;
    *key = (struct pb_cpu_key){.op = op, .v = {s.n, s.h, s.w, (int)lo, k}};
    for (int i = 0; i < k; i++) {
        key->v[5 + 2 * i] = ts[i]->shape.c;
        key->v[6 + 2 * i] = (int)ts[i]->layout;
    }
    return true;
}

static void check_parts(struct pb_shape whole, int k, const struct pb_tensor *const *ts)
{
    int c = 0;
    PB_CHECK(k > 0);
    for (int i = 0; i < k; i++) {
        struct pb_shape s = ts[i]->shape;
        PB_CHECK(s.n == whole.n && s.h == whole.h && s.w == whole.w && s.c > 0);
        c += s.c;
    }
    PB_CHECK(c == whole.c);
}

static void drop_prim(struct pb_backend *be, void *val)
{
    pb_cpu_prim_destroy(be, val);
    free(val);
}

static struct pb_cpu_prim *concat_create(struct pb_backend *be, int k,
                                         const struct pb_tensor *const *ins,
                                         const struct pb_tensor *out)
{
    struct pb_cpu *cpu = pb_cpu_of(be);
    dnnl_memory_desc_t *src = pb_xmalloc((size_t)k * sizeof *src);
    for (int i = 0; i < k; i++)
        src[i] = pb_cpu_md(ins[i]->shape, ins[i]->layout);
    dnnl_memory_desc_t dst = pb_cpu_md(out->shape, out->layout);
    dnnl_primitive_desc_t pd;
    PB_DNNL(dnnl_concat_primitive_desc_create(&pd, &dst, k, 1, src, cpu->attr, cpu->eng));
    free(src);
    struct pb_cpu_prim *p = pb_xcalloc(1, sizeof *p);
    pb_cpu_prim_from_pd(be, p, pd);
    return p;
}

/* Blocked output when every input shares one blocked layout on block boundaries. */
enum pb_layout pb_cpu_concat_layout(struct pb_backend *be, int k,
                                    const struct pb_tensor *const *ins)
{
    (void)be;
    enum pb_layout lay = ins[0]->layout;
    int blk = pb_layout_block(lay);
    for (int i = 0; i < k; i++)
        if (ins[i]->layout != lay || ins[i]->shape.c % blk)
            return PB_LAYOUT_PLAIN;
    return lay;
}

/* ins[i] [n, c_i, h, w] (any layouts) → out [n, sum c_i, h, w] (layout set) */
void pb_cpu_concat(struct pb_backend *be, int k, const struct pb_tensor *const *ins,
                   struct pb_tensor *out)
{
    if (!pb_cpu_begin(be))
        return;
    check_parts(out->shape, k, ins);
    struct pb_cpu_key key;
    bool cached = cat_key(&key, PB_CPU_OP_CONCAT, out->shape, out->layout, k, ins);
    struct pb_cpu_prim *p = cached ? pb_cpu_cache_get(be, &key) : NULL;
    if (!p) {
        p = concat_create(be, k, ins, out);
        if (cached)
            pb_cpu_cache_put(be, &key, p, drop_prim);
    }
    struct pb_cpu_arg *a = pb_xmalloc((size_t)(k + 1) * sizeof *a);
    for (int i = 0; i < k; i++)
        a[i] = (struct pb_cpu_arg){DNNL_ARG_MULTIPLE_SRC + i, ins[i]->data};
    a[k] = (struct pb_cpu_arg){DNNL_ARG_DST, out->data};
    pb_cpu_prim_exec(be, p, k + 1, a);
    free(a);
    if (!cached)
        drop_prim(be, p);
}

struct split {
    int k;
    struct pb_cpu_xfer whole;   /* dout → the layout the windows are taken from */
    struct pb_cpu_prim *parts;  /* [k] reorders window i → douts[i] */
};

static void drop_split(struct pb_backend *be, void *val)
{
    struct split *s = val;
    for (int i = 0; i < s->k; i++)
        pb_cpu_prim_destroy(be, &s->parts[i]);
    free(s->parts);
    pb_cpu_xfer_destroy(be, &s->whole);
    free(s);
}

/* A window that does not start on a channel block of dout cannot be viewed in dout's
 * layout: the windows are then taken from a plain copy of dout. */
static struct split *split_create(struct pb_backend *be, const struct pb_tensor *dout, int k,
                                  struct pb_tensor *const *douts)
{
    struct pb_cpu *cpu = pb_cpu_of(be);
    struct split *s = pb_xcalloc(1, sizeof *s);
    int blk = pb_layout_block(dout->layout);
    enum pb_layout wl = dout->layout;
    for (int i = 0, c0 = 0; i < k; c0 += douts[i]->shape.c, i++)
        if (c0 % blk)
            wl = PB_LAYOUT_PLAIN;
    dnnl_memory_desc_t umd = pb_cpu_md(dout->shape, dout->layout), wmd = pb_cpu_md(dout->shape, wl);
    pb_cpu_xfer_in_init(be, &s->whole, &umd, &wmd);
    s->k = k;
    s->parts = pb_xcalloc((size_t)k, sizeof *s->parts);
    struct pb_shape ws = dout->shape;
    for (int i = 0, c0 = 0; i < k; c0 += douts[i]->shape.c, i++) {
        dnnl_dims_t dims = {ws.n, douts[i]->shape.c, ws.h, ws.w}, offs = {0, c0, 0, 0};
        dnnl_memory_desc_t sub, dst = pb_cpu_md(douts[i]->shape, douts[i]->layout);
        PB_DNNL(dnnl_memory_desc_init_submemory(&sub, &wmd, dims, offs));
        dnnl_primitive_desc_t pd;
        PB_DNNL(dnnl_reorder_primitive_desc_create(&pd, &sub, cpu->eng, &dst, cpu->eng, cpu->attr));
        pb_cpu_prim_from_pd(be, &s->parts[i], pd);
    }
    return s;
}

/* dout [n, sum c_i, h, w] (any layout) → douts[i] [n, c_i, h, w] (layouts set) */
void pb_cpu_split(struct pb_backend *be, const struct pb_tensor *dout, int k,
                  struct pb_tensor *const *douts)
{
    if (!pb_cpu_begin(be))
        return;
    check_parts(dout->shape, k, (const struct pb_tensor *const *)douts);
    struct pb_cpu_key key;
    bool cached = cat_key(&key, PB_CPU_OP_SPLIT, dout->shape, dout->layout, k,
                          (const struct pb_tensor *const *)douts);
    struct split *s = cached ? pb_cpu_cache_get(be, &key) : NULL;
    if (!s) {
        s = split_create(be, dout, k, douts);
        if (cached)
            pb_cpu_cache_put(be, &key, s, drop_split);
    }
    const void *whole = pb_cpu_xfer_in(be, &s->whole, dout->data);
    for (int i = 0; i < k; i++) {
        struct pb_cpu_arg a[2] = {{DNNL_ARG_FROM, whole}, {DNNL_ARG_TO, douts[i]->data}};
        pb_cpu_prim_exec(be, &s->parts[i], 2, a);
    }
    if (!cached)
        drop_split(be, s);
}
