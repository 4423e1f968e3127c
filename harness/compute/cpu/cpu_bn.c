/* harness/compute/cpu/cpu_bn.c — batch normalisation per channel on oneDNN (scale and shift):
 * training saves the batch mean and biased variance in aux ([2, C] floats, this
 * backend's format) and updates the running statistics as PyTorch, inference reads
 * the running ones, the backward accumulates dgamma and dbeta; y and dx keep x's
 * layout. */
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

static void drop_prim(struct pb_backend *be, void *val)
{
    pb_cpu_prim_destroy(be, val);
    free(val);
}

static void fwd_desc(const struct pb_tensor *x, float eps, bool train,
                     dnnl_batch_normalization_desc_t *bd)
{
    dnnl_memory_desc_t md = pb_cpu_md(x->shape, x->layout);
    unsigned flags = dnnl_use_scale | dnnl_use_shift;
    if (!train)
        flags |= dnnl_use_global_stats;
    PB_DNNL(dnnl_batch_normalization_forward_desc_init(
        bd, train ? dnnl_forward_training : dnnl_forward_inference, &md, eps, flags));
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
    struct pb_cpu_prim *p = pb_cpu_cache_get(be, &k);
    if (!p) {
        p = pb_xcalloc(1, sizeof *p);
        dnnl_batch_normalization_desc_t bd;
        fwd_desc(x, eps, train, &bd);
        pb_cpu_prim_create(be, p, &bd, NULL);
        pb_cpu_cache_put(be, &k, p, drop_prim);
    }
    struct pb_cpu_arg a[6] = {
        {DNNL_ARG_SRC, x->data},   {DNNL_ARG_DST, y->data},   {DNNL_ARG_SCALE, gamma},
        {DNNL_ARG_SHIFT, beta},    {DNNL_ARG_MEAN, mean},     {DNNL_ARG_VARIANCE, var},
    };
    pb_cpu_prim_exec(be, p, 6, a);
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
    struct pb_cpu_xfer dy;  /* dy's layout → x's */
    float *dgamma, *dbeta;  /* [c] this call's gradients */
    float *shift;           /* [c] zeros: oneDNN 2.6 wants a shift argument it never reads */
};

static void drop_bwd(struct pb_backend *be, void *val)
{
    struct bn_bwd *b = val;
    pb_cpu_xfer_destroy(be, &b->dy);
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
        dnnl_memory_desc_t md = pb_cpu_md(x->shape, x->layout),
                           dymd = pb_cpu_md(dy->shape, dy->layout);
        PB_DNNL(dnnl_batch_normalization_backward_desc_init(&bd, dnnl_backward, &md, &md, eps,
                                                            dnnl_use_scale | dnnl_use_shift));
        pb_cpu_prim_create(be, &b->p, &bd, hint);
        dnnl_primitive_desc_destroy(hint);
        pb_cpu_xfer_in_init(be, &b->dy, &dymd, &md);
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
        {DNNL_ARG_SRC, x->data},          {DNNL_ARG_DIFF_DST, pb_cpu_xfer_in(be, &b->dy, dy->data)},
        {DNNL_ARG_MEAN, mean},            {DNNL_ARG_VARIANCE, var},
        {DNNL_ARG_SCALE, gamma},          {DNNL_ARG_SHIFT, b->shift},
        {DNNL_ARG_DIFF_SRC, dx->data},    {DNNL_ARG_DIFF_SCALE, b->dgamma},
        {DNNL_ARG_DIFF_SHIFT, b->dbeta},
    };
    pb_cpu_prim_exec(be, &b->p, 9, a);
    for (int i = 0; i < c; i++) {
        dgamma_acc[i] += b->dgamma[i];
        dbeta_acc[i] += b->dbeta[i];
    }
}
