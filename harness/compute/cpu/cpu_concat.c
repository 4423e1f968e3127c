/* harness/compute/cpu/cpu_concat.c — channel concatenation (Inception, GoogLeNet, DenseNet) and
 * its backward, the split, in any layouts and channel counts: oneDNN's concat primitive,
 * and reorders of channel windows (sub-memory views) of dout into the slices; where
 * every tensor is plain, one copy per image and part; where every tensor shares one
 * blocked layout (nChw8c, nChw16c) but a part's channels do not
 * fill whole blocks (DenseNet's growth of 8, GoogLeNet's branches), a copy of channel
 * runs of this file's own, so the result stays blocked: otherwise it would be plain,
 * and every consumer would reorder it back or run oneDNN's plain-layout batch norm
 * (ncsp, not vectorised over channels). */
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

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

/* ---- one blocked layout, channels at any offset ---- */

/* Whether the tensors all have the blocked layout l. */
static bool all_blocked(enum pb_layout l, int k, const struct pb_tensor *const *ts)
{
    if (pb_layout_block(l) == 1)
        return false;
    for (int i = 0; i < k; i++)
        if (ts[i]->layout != l)
            return false;
    return true;
}

/* Whether every part fills whole blocks (oneDNN's primitives then view them in place). */
static bool blocks_filled(int blk, int k, const struct pb_tensor *const *ts)
{
    for (int i = 0; i < k; i++)
        if (ts[i]->shape.c % blk)
            return false;
    return true;
}

/* dst[x·blk + l] = src[x·blk + l] for x < hw, l < run (< blk): a run of lanes of every
 * pixel of a block plane; with AVX-512 and blocks of 16 one masked move a pixel. */
static void copy_lanes(float *restrict dst, const float *restrict src, size_t hw, int blk,
                       int run)
{
#if defined(__AVX512F__)
    if (blk == 16) {
        __mmask16 m = (__mmask16)((1u << run) - 1);
        for (size_t x = 0; x < hw; x++)
            _mm512_mask_storeu_ps(dst + x * 16, m, _mm512_maskz_loadu_ps(m, src + x * 16));
        return;
    }
#endif
    for (size_t x = 0; x < hw; x++)
        for (int l = 0; l < run; l++)
            dst[x * blk + l] = src[x * blk + l];
}

/* Channel block ib of a part of ci channels at channel offset c0 of the whole (shape
 * ws), layout block blk, image n: its valid lanes l < min(blk, ci − ib·blk) are the
 * whole's channels c0 + ib·blk + l, in one or two of the whole's blocks; each block a
 * plane [h·w, blk]. to_whole: part → whole (concat), else whole → part (split). */
static void copy_block(float *whole, float *part, struct pb_shape ws, int ci, int c0, int ib,
                       int n, int blk, bool to_whole)
{
    size_t hw = (size_t)ws.h * ws.w, plane = hw * (size_t)blk;
    int wcb = (ws.c + blk - 1) / blk, pcb = (ci + blk - 1) / blk;
    int lanes = ci - ib * blk < blk ? ci - ib * blk : blk;
    float *p = part + ((size_t)n * pcb + ib) * plane;
    int first = c0 + ib * blk;  /* the whole's channel of lane 0 */
    for (int l0 = 0; l0 < lanes;) {
        int oc = first + l0, ob = oc / blk, ol = oc % blk;
        int run = blk - ol < lanes - l0 ? blk - ol : lanes - l0;  /* lanes in block ob */
        float *w = whole + ((size_t)n * wcb + ob) * plane + ol, *q = p + l0;
        if (run == blk)  /* whole blocks on both sides: one plane, contiguous */
            memcpy(to_whole ? w : q, to_whole ? q : w, plane * sizeof(float));
        else if (to_whole)
            copy_lanes(w, q, hw, blk, run);
        else
            copy_lanes(q, w, hw, blk, run);
        l0 += run;
    }
}

/* Lanes c % blk … blk − 1 of the last block of a tensor of shape s, image n: zero, as
 * the blocked layouts keep their padding. */
static void zero_padding(float *t, struct pb_shape s, int blk, int n)
{
    int from = s.c % blk, cb = (s.c + blk - 1) / blk;
    if (!from)
        return;
    size_t hw = (size_t)s.h * s.w;
    float *b = t + ((size_t)n * cb + cb - 1) * hw * (size_t)blk;
    for (size_t x = 0; x < hw; x++)
        memset(b + x * blk + from, 0, (size_t)(blk - from) * sizeof(float));
}

/* The parts' blocks copied into (to_whole) or out of the whole, in parallel over the
 * items (image, part, part block): two items may share a block of the whole, never a
 * lane. Then the padding lanes of what was written are zeroed. */
static void copy_parts(struct pb_backend *be, struct pb_tensor *whole, int k,
                       struct pb_tensor *const *parts, bool to_whole)
{
    int blk = pb_layout_block(whole->layout), nb = 0;
    int *start = pb_xmalloc((size_t)(k + 1) * sizeof *start);  /* part i's first item */
    for (int i = 0; i < k; i++) {
        start[i] = nb;
        nb += (parts[i]->shape.c + blk - 1) / blk;
    }
    start[k] = nb;
    int items = whole->shape.n * nb;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int it = 0; it < items; it++) {
        int n = it / nb, b = it % nb, i = 0, c0 = 0;
        while (b >= start[i + 1])
            c0 += parts[i++]->shape.c;
        copy_block(whole->data, parts[i]->data, whole->shape, parts[i]->shape.c, c0,
                   b - start[i], n, blk, to_whole);
    }
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int n = 0; n < whole->shape.n; n++) {
        if (to_whole)
            zero_padding(whole->data, whole->shape, blk, n);
        else
            for (int i = 0; i < k; i++)
                zero_padding(parts[i]->data, parts[i]->shape, blk, n);
    }
    free(start);
}

/* All plain: part i of image n is one run of c_i·h·w floats at channel c0 of the
 * whole's image n (oneDNN's concat copies rows of h·w floats, slow when they are short:
 * GNMT's [B·T, H] sequences with h = w = 1). to_whole: part → whole, else whole → part. */
static void copy_plain(struct pb_backend *be, struct pb_tensor *whole, int k,
                       struct pb_tensor *const *parts, bool to_whole)
{
    struct pb_shape ws = whole->shape;
    size_t hw = (size_t)ws.h * ws.w;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int n = 0; n < ws.n; n++) {
        size_t c0 = 0;
        for (int i = 0; i < k; i++) {
            size_t run = (size_t)parts[i]->shape.c * hw;
            float *w = whole->data + ((size_t)n * ws.c + c0) * hw, *p = parts[i]->data + n * run;
            memcpy(to_whole ? w : p, to_whole ? p : w, run * sizeof(float));
            c0 += (size_t)parts[i]->shape.c;
        }
    }
}

static bool all_plain(enum pb_layout l, int k, const struct pb_tensor *const *ts)
{
    if (l != PB_LAYOUT_PLAIN)
        return false;
    for (int i = 0; i < k; i++)
        if (ts[i]->layout != PB_LAYOUT_PLAIN)
            return false;
    return true;
}

/* The inputs' layout when they all share one blocked layout (at any channel counts:
 * copy_parts places them), else plain. */
enum pb_layout pb_cpu_concat_layout(struct pb_backend *be, int k,
                                    const struct pb_tensor *const *ins)
{
    (void)be;
    enum pb_layout lay = ins[0]->layout;
    return all_blocked(lay, k, ins) ? lay : PB_LAYOUT_PLAIN;
}

/* ins[i] [n, c_i, h, w] (any layouts) → out [n, sum c_i, h, w] (layout set) */
void pb_cpu_concat(struct pb_backend *be, int k, const struct pb_tensor *const *ins,
                   struct pb_tensor *out)
{
    if (!pb_cpu_begin(be))
        return;
    check_parts(out->shape, k, ins);
    if (all_plain(out->layout, k, ins)) {
        copy_plain(be, out, k, (struct pb_tensor *const *)ins, true);
        return;
    }
    if (all_blocked(out->layout, k, ins) && !blocks_filled(pb_layout_block(out->layout), k, ins)) {
        copy_parts(be, out, k, (struct pb_tensor *const *)ins, true);
        return;
    }
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
    const struct pb_tensor *const *cparts = (const struct pb_tensor *const *)douts;
    check_parts(dout->shape, k, cparts);
    if (all_plain(dout->layout, k, cparts)) {
        copy_plain(be, (struct pb_tensor *)dout, k, douts, false);
        return;
    }
    if (all_blocked(dout->layout, k, cparts) &&
        !blocks_filled(pb_layout_block(dout->layout), k, cparts)) {
        copy_parts(be, (struct pb_tensor *)dout, k, douts, false);
        return;
    }
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
