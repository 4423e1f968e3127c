/* harness/compute/cpu/cpu_bn.c — batch normalisation per channel on oneDNN (scale and shift):
 * training saves the batch mean and biased variance in aux ([2, C] floats, this
 * backend's format) and updates the running statistics as PyTorch, inference reads
 * the running ones, the backward accumulates dgamma and dbeta; y and dx keep x's
 * layout. The primitives always run on the machine's blocked layout (pb_cpu_native_layout:
 * nChw16c with AVX-512, else nChw8c; x, dy reordered in, y, dx out when they are in
 * another layout): oneDNN's statistics sum in another order per layout, and
 * a stage receives its input plain where one stage running the whole model would hold
 * it blocked, so that gpipe is gradient accumulation bit for bit (semantics §4.7). */
#include <string.h>

#include "harness/compute/cpu/cpu_internal.h"

static struct pb_cpu_key bn_key(enum pb_cpu_op op, const struct pb_tensor *x, enum pb_layout l1,
                                float eps, bool train)
{
    union {
        float f;
        int i;
    } e = {.f = eps};
    struct pb_shape s = x->shape;
    return (struct pb_cpu_key){.op = op,
                               .v = {s.n, s.c, s.h, s.w, (int)x->layout, (int)l1, e.i, train}};
}

/* the layout the primitives run on, whatever the caller's */
static enum pb_layout bn_layout(void)
{
    return pb_cpu_native_layout();
}

static void fwd_desc(const struct pb_tensor *x, float eps, bool train,
                     dnnl_batch_normalization_desc_t *bd)
{
    dnnl_memory_desc_t md = pb_cpu_md(x->shape, bn_layout());
    unsigned flags = dnnl_use_scale | dnnl_use_shift;
    if (!train)
        flags |= dnnl_use_global_stats;
    PB_DNNL(dnnl_batch_normalization_forward_desc_init(
        bd, train ? dnnl_forward_training : dnnl_forward_inference, &md, eps, flags));
}

struct bn_fwd {
    struct pb_cpu_prim p;
    struct pb_cpu_xfer x, y;  /* x's layout → the run layout, and back for y */
};

static void drop_fwd(struct pb_backend *be, void *val)
{
    struct bn_fwd *f = val;
    pb_cpu_xfer_destroy(be, &f->x);
    pb_cpu_xfer_destroy(be, &f->y);
    pb_cpu_prim_destroy(be, &f->p);
    free(f);
}

/* x [n, c, h, w], gamma/beta [c]; mean/var [c] written (train) or read (inference);
 * y [n, c, h, w] in x's layout */
static void bn_fwd(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                   const float *beta, float *mean, float *var, float eps, bool train,
                   struct pb_tensor *y)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CHECK(pb_shape_eq(x->shape, y->shape) && x->layout == y->layout);
    struct pb_cpu_key k = bn_key(PB_CPU_OP_BN_FWD, x, x->layout, eps, train);
    struct bn_fwd *f = pb_cpu_cache_get(be, &k);
    if (!f) {
        f = pb_xcalloc(1, sizeof *f);
        dnnl_batch_normalization_desc_t bd;
        fwd_desc(x, eps, train, &bd);
        pb_cpu_prim_create(be, &f->p, &bd, NULL);
        dnnl_memory_desc_t user = pb_cpu_md(x->shape, x->layout);
        dnnl_memory_desc_t prim = pb_cpu_md(x->shape, bn_layout());
        pb_cpu_xfer_in_init(be, &f->x, &user, &prim);
        pb_cpu_xfer_out_init(be, &f->y, &prim, &user);
        pb_cpu_cache_put(be, &k, f, drop_fwd);
    }
    if (be->failed)
        return;
    struct pb_cpu_arg a[6] = {
        {DNNL_ARG_SRC, pb_cpu_xfer_in(be, &f->x, x->data)},
        {DNNL_ARG_DST, pb_cpu_xfer_out_ptr(&f->y, y->data)},
        {DNNL_ARG_SCALE, gamma},
        {DNNL_ARG_SHIFT, beta},
        {DNNL_ARG_MEAN, mean},
        {DNNL_ARG_VARIANCE, var},
    };
    pb_cpu_prim_exec(be, &f->p, 6, a);
    pb_cpu_xfer_out(be, &f->y, y->data);
}

size_t pb_cpu_bn_aux_bytes(struct pb_backend *be, int channels)
{
    (void)be;
    return 2 * (size_t)channels * sizeof(float);
}

/* aux [2, c]: the batch mean and biased variance; run_mean, run_var [c] updated with
 * momentum m and the unbiased variance, as torch.nn.BatchNorm2d */
void pb_cpu_bn_fwd_train(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                         const float *beta, float *run_mean, float *run_var, float momentum,
                         float eps, struct pb_tensor *y, void *aux)
{
    int ch = x->shape.c;
    float *stats = aux;
    bn_fwd(be, x, gamma, beta, stats, stats + ch, eps, true, y);
    double count = (double)x->shape.n * x->shape.h * x->shape.w;
    float m = momentum;
    pb_cpu_axpby(be, m, stats, 1.0f - m, run_mean, (size_t)ch);
    pb_cpu_axpby(be, (float)(m * count / (count - 1.0)), stats + ch, 1.0f - m, run_var, (size_t)ch);
}

void pb_cpu_bn_fwd_infer(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                         const float *beta, const float *run_mean, const float *run_var,
                         float eps, struct pb_tensor *y)
{
    /* inference only reads mean and variance (dnnl_use_global_stats) */
    bn_fwd(be, x, gamma, beta, (float *)run_mean, (float *)run_var, eps, false, y);
}

struct bn_bwd {
    struct pb_cpu_prim p;
    struct pb_cpu_xfer x, dy, dx;  /* x's and dy's layouts → the run layout → dx's (x's) */
    float *dgamma, *dbeta;  /* [c] this call's gradients */
    float *shift;           /* [c] zeros: oneDNN 2.6 wants a shift argument it never reads */
};

static void drop_bwd(struct pb_backend *be, void *val)
{
    struct bn_bwd *b = val;
    pb_cpu_xfer_destroy(be, &b->x);
    pb_cpu_xfer_destroy(be, &b->dy);
    pb_cpu_xfer_destroy(be, &b->dx);
    pb_cpu_scratch_free(be, b->dgamma);
    pb_cpu_scratch_free(be, b->dbeta);
    pb_cpu_scratch_free(be, b->shift);
    pb_cpu_prim_destroy(be, &b->p);
    free(b);
}

/* x, dy [n, c, h, w]; gamma [c]; aux [2, c] the forward's batch statistics;
 * dx [n, c, h, w] in x's layout; dgamma_acc, dbeta_acc [c] += */
void pb_cpu_bn_bwd(struct pb_backend *be, const struct pb_tensor *x, const struct pb_tensor *dy,
                   const float *gamma, const void *aux, float eps, struct pb_tensor *dx,
                   float *dgamma_acc, float *dbeta_acc)
{
    const float *mean = aux, *var = mean + x->shape.c;
    if (!pb_cpu_begin(be))
        return;
    PB_CHECK(pb_shape_eq(x->shape, dy->shape) && pb_shape_eq(x->shape, dx->shape));
    PB_CHECK(dx->layout == x->layout);
    struct pb_cpu_key k = bn_key(PB_CPU_OP_BN_BWD, x, dy->layout, eps, true);
    struct bn_bwd *b = pb_cpu_cache_get(be, &k);
    int c = x->shape.c;
    if (!b) {
        b = pb_xcalloc(1, sizeof *b);
        dnnl_batch_normalization_desc_t fd, bd;
        fwd_desc(x, eps, true, &fd);
        dnnl_primitive_desc_t hint;
        PB_DNNL(dnnl_primitive_desc_create(&hint, &fd, pb_cpu_of(be)->attr, pb_cpu_of(be)->eng,
                                           NULL));
        dnnl_memory_desc_t md = pb_cpu_md(x->shape, bn_layout()),
                           xmd = pb_cpu_md(x->shape, x->layout),
                           dymd = pb_cpu_md(dy->shape, dy->layout);
        PB_DNNL(dnnl_batch_normalization_backward_desc_init(&bd, dnnl_backward, &md, &md, eps,
                                                            dnnl_use_scale | dnnl_use_shift));
        pb_cpu_prim_create(be, &b->p, &bd, hint);
        dnnl_primitive_desc_destroy(hint);
        pb_cpu_xfer_in_init(be, &b->x, &xmd, &md);
        pb_cpu_xfer_in_init(be, &b->dy, &dymd, &md);
        pb_cpu_xfer_out_init(be, &b->dx, &md, &xmd);
        b->dgamma = pb_cpu_scratch(be, (size_t)c * sizeof(float));
        b->dbeta = pb_cpu_scratch(be, (size_t)c * sizeof(float));
        b->shift = pb_cpu_scratch(be, (size_t)c * sizeof(float));
        if (b->shift)
            memset(b->shift, 0, (size_t)c * sizeof(float));
        pb_cpu_cache_put(be, &k, b, drop_bwd);
    }
    if (be->failed)
        return;
    struct pb_cpu_arg a[9] = {
        {DNNL_ARG_SRC, pb_cpu_xfer_in(be, &b->x, x->data)},
        {DNNL_ARG_DIFF_DST, pb_cpu_xfer_in(be, &b->dy, dy->data)},
        {DNNL_ARG_MEAN, mean},
        {DNNL_ARG_VARIANCE, var},
        {DNNL_ARG_SCALE, gamma},
        {DNNL_ARG_SHIFT, b->shift},
        {DNNL_ARG_DIFF_SRC, pb_cpu_xfer_out_ptr(&b->dx, dx->data)},
        {DNNL_ARG_DIFF_SCALE, b->dgamma},
        {DNNL_ARG_DIFF_SHIFT, b->dbeta},
    };
    pb_cpu_prim_exec(be, &b->p, 9, a);
    pb_cpu_xfer_out(be, &b->dx, dx->data);
    for (int i = 0; i < c; i++) {
        dgamma_acc[i] += b->dgamma[i];
        dbeta_acc[i] += b->dbeta[i];
    }
}
