/* bench/bench_prims.c — a step's GEMM and convolution primitives, run back to back
 * (bench_prims.h). */
#include "bench/bench_prims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "harness/base/rng.h"

enum prim_kind { PRIM_GEMM, PRIM_CONV_FWD, PRIM_CONV_BWD_W, PRIM_CONV_BWD_DATA };

/* One GEMM or convolution primitive call of the step. */
struct bench_prim {
    enum prim_kind kind;
    bool ta, tb;                    /* gemm: c = op(a) op(b) + beta c */
    int m, n, k, lda, ldb, ldc;
    float beta;
    const float *a, *b;
    float *c;
    const struct pb_conv_desc *d;   /* conv: x → y (fwd); x, dy → dw, db; dy, w → dx */
    const float *w, *bias;
    float *dw, *db;
    struct pb_tensor *x, *y;        /* fwd and bwd-weights: x, y/dy; bwd-data: dy, dx */
};

static _Noreturn void die(const struct pb_err *e)
{
    fprintf(stderr, "bench: device memory: %s\n", e->msg);
    exit(2);
}

/* n floats on the device, uniform in [-1, 1) (keyed by tag) or zero. */
static float *dev_buf(struct bench_prims *bp, size_t n, bool random, uint64_t tag)
{
    struct pb_backend *be = bp->be;
    struct pb_err e;
    float *d = pb_backend_alloc(be, n * sizeof *d, PB_MEM_SCRATCH, &e);
    if (!d)
        die(&e);
    float *h = pb_xcalloc(n, sizeof *h);
    if (random)
        pb_rng_fill_uniform(pb_rng_key(PB_RNG_DATA, 7, tag, 0, 0), 0, h, n, -1.0f, 1.0f);
    be->ops->upload(be, d, h, n * sizeof *d);
    be->ops->sync(be);
    free(h);
    bp->mem[bp->nmem++] = d;
    return d;
}

/* A tensor of shape s in layout l, random (through a plain copy) or zero. */
static struct pb_tensor *prim_tensor(struct bench_prims *bp, struct pb_shape s, enum pb_layout l,
                                     bool random)
{
    struct pb_backend *be = bp->be;
    struct pb_err e;
    struct pb_tensor *t = &bp->tensors[bp->ntensors++];
    if (pb_tensor_alloc(be, t, s, l, PB_MEM_SCRATCH, &e))
        die(&e);
    bp->mem[bp->nmem++] = t->data;
    be->ops->fill(be, t->data, 0.0f, be->ops->layout_floats(be, s, l));
    if (random) {
        struct pb_tensor p = {dev_buf(bp, pb_shape_count(s), true, (uint64_t)bp->ntensors), s,
                              PB_LAYOUT_PLAIN};
        if (l == PB_LAYOUT_PLAIN)
            be->ops->copy(be, t->data, p.data, pb_shape_count(s) * sizeof(float));
        else
            be->ops->reorder(be, &p, t);
    }
    return t;
}

static struct bench_prim *add_prim(struct bench_prims *bp, enum prim_kind kind, double flops)
{
    struct bench_prim *p = &bp->prims[bp->nprims++];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    bp->flops += flops;
    return p;
}

static void add_gemm(struct bench_prims *bp, bool ta, bool tb, int m, int n, int k,
                     const float *a, int lda, const float *b, int ldb, float beta, float *out,
                     int ldc)
{
    struct bench_prim *p = add_prim(bp, PRIM_GEMM, 2.0 * m * (double)n * k);
    p->ta = ta, p->tb = tb, p->m = m, p->n = n, p->k = k, p->a = a, p->lda = lda, p->b = b;
    p->ldb = ldb, p->beta = beta, p->c = out, p->ldc = ldc;
}

/* The primitives of a linear layer (linear.c): y = x·Wᵀ, dW += dyᵀ·x, dx = dy·W. */
static void linear_prims(struct bench_prims *bp, const struct pb_layer *l, const float *w,
                         bool want_dx)
{
    int n = l->out_shape.n, fi = l->cfg.in_features, fo = l->cfg.out_features;
    const float *x = prim_tensor(bp, l->in_shape[0], PB_LAYOUT_PLAIN, true)->data;
    float *y = prim_tensor(bp, l->out_shape, PB_LAYOUT_PLAIN, false)->data;
    const float *dy = prim_tensor(bp, l->out_shape, PB_LAYOUT_PLAIN, true)->data;
    float *dw = dev_buf(bp, (size_t)fo * fi, false, 0);
    add_gemm(bp, false, true, n, fo, fi, x, fi, w, fi, 0.0f, y, fo);
    add_gemm(bp, true, false, fo, fi, n, dy, fo, x, fi, 1.0f, dw, fi);
    if (want_dx)
        add_gemm(bp, false, false, n, fi, fo, dy, fo, w, fi, 0.0f,
                 prim_tensor(bp, l->in_shape[0], PB_LAYOUT_PLAIN, false)->data, fi);
}

/* The primitives of a convolution (conv2d.c) whose input and output the forward gave the
 * layouts of x and y. */
static void conv_prims(struct bench_prims *bp, const struct pb_layer *l, const float *w,
                       const struct pb_tensor *x_real, const struct pb_tensor *y_real,
                       bool want_dx)
{
    const struct pb_conv_desc *d = &l->cfg.conv;
    size_t nw = (size_t)d->cout * d->cin * d->kh * d->kw;
    double flops = 2.0 * (double)pb_shape_count(l->out_shape) * d->cin * d->kh * d->kw;
    struct pb_tensor *x = prim_tensor(bp, x_real->shape, x_real->layout, true);
    struct pb_tensor *y = prim_tensor(bp, y_real->shape, y_real->layout, false);
    struct pb_tensor *dy = prim_tensor(bp, y_real->shape, y_real->layout, true);
    struct bench_prim *p = add_prim(bp, PRIM_CONV_FWD, flops);
    p->d = d, p->x = x, p->y = y, p->w = w, p->bias = d->bias ? w + nw : NULL;
    p = add_prim(bp, PRIM_CONV_BWD_W, flops);
    p->d = d, p->x = x, p->y = dy, p->dw = dev_buf(bp, nw, false, 0);
    p->db = d->bias ? dev_buf(bp, (size_t)d->cout, false, 0) : NULL;
    if (want_dx) {
        p = add_prim(bp, PRIM_CONV_BWD_DATA, flops);
        p->d = d, p->x = dy, p->y = prim_tensor(bp, x_real->shape, x_real->layout, false);
        p->w = w;
    }
}

void bench_prims_build(struct bench_prims *bp, const struct pb_stage *s,
                       const struct pb_stage_act *act)
{
    memset(bp, 0, sizeof *bp);
    bp->be = s->be;
    int nodes = 0;
    for (int b = s->first; b < s->last; b++)
        nodes += s->model->blocks[b].nnodes;
    bp->prims = pb_xcalloc((size_t)nodes * 3, sizeof *bp->prims);
    bp->tensors = pb_xcalloc((size_t)nodes * 5, sizeof *bp->tensors);
    bp->mem = pb_xcalloc((size_t)nodes * 12, sizeof *bp->mem);
    int idx = 0;
    for (int b = s->first; b < s->last; b++) {
        const struct pb_block *blk = &s->model->blocks[b];
        int base = idx;
        for (int i = 0; i < blk->nnodes; i++, idx++) {
            const struct pb_layer *l = &blk->nodes[i];
            if (l->cfg.kind != PB_LAYER_LINEAR && l->cfg.kind != PB_LAYER_CONV2D)
                continue;
            const struct pb_tensor *in = l->in[0] >= 0 ? &act->nodes[base + l->in[0]].out
                                         : b == s->first ? &act->input
                                                         : &act->nodes[base - 1].out;
            bool want_dx = !(l->in[0] < 0 && b == s->first && s->index == 0);
            const float *w = s->params + s->param_off[b - s->first] + l->param_off;
            if (l->cfg.kind == PB_LAYER_LINEAR)
                linear_prims(bp, l, w, want_dx);
            else
                conv_prims(bp, l, w, in, &act->nodes[idx].out, want_dx);
        }
    }
}

void bench_prims_run(const struct bench_prims *bp)
{
    struct pb_backend *be = bp->be;
    for (int i = 0; i < bp->nprims; i++) {
        const struct bench_prim *p = &bp->prims[i];
        switch (p->kind) {
        case PRIM_GEMM:
            be->ops->gemm(be, p->ta, p->tb, p->m, p->n, p->k, 1.0f, p->a, p->lda, p->b, p->ldb,
                          p->beta, p->c, p->ldc);
            break;
        case PRIM_CONV_FWD:
            be->ops->conv_fwd(be, p->d, p->x, p->w, p->bias, p->y);
            break;
        case PRIM_CONV_BWD_W:
            be->ops->conv_bwd_weights(be, p->d, p->x, p->y, p->dw, p->db);
            break;
        case PRIM_CONV_BWD_DATA:
            be->ops->conv_bwd_data(be, p->d, p->x, p->w, p->y);
            break;
        }
    }
    be->ops->sync(be);
}

double bench_prims_time(const struct bench_prims *bp, int warmup, int reps)
{
    double t[64];
    for (int i = 0; i < warmup + reps; i++) {
        double t0 = bench_now();
        bench_prims_run(bp);
        if (i >= warmup)
            t[i - warmup] = bench_now() - t0;
    }
    return bench_median(t, reps);
}

void bench_prims_free(struct bench_prims *bp)
{
    for (int i = 0; i < bp->nmem; i++)
        pb_backend_free(bp->be, bp->mem[i]);
    free(bp->prims);
    free(bp->tensors);
    free(bp->mem);
    memset(bp, 0, sizeof *bp);
}
