/* harness/compute/cuda/cuda_pool.c — max and average pooling on cuDNN with PyTorch's
 * output sizes and divisors (reference: cpu_pool.c). cuDNN pads symmetrically and rounds
 * sizes down; where ceil_mode adds windows, x is copied into a taller and wider xp whose
 * extra bottom rows and right columns hold −∞ (max) or 0 (average), and average outputs
 * are rescaled to PyTorch's divisors (cuda_plan.h, cuda_pool.cu). The backward recomputes
 * max pooling's argmax from x and y, so the forward leaves no workspace. y keeps x's
 * (plain) layout. */
#include <math.h>

#include "harness/compute/cuda/cuda_dnn_kernels.h"
#include "harness/compute/cuda/cuda_internal.h"
#include "harness/compute/cuda/cuda_plan.h"

static const float one = 1.0f, zero = 0.0f;

/* The plan of d over x into y, or false with the instance failed. */
static bool plan(struct pb_backend *be, const struct pb_pool_desc *d, struct pb_shape x,
                 struct pb_shape y, struct pb_cuda_pool_plan *p)
{
    cudnnStatus_t st = pb_cuda_pool_plan(p, d, x, y, pb_cuda_of(be)->deterministic);
    if (st == CUDNN_STATUS_BAD_PARAM) {
        pb_backend_fail(be,
                        "cuda backend, device %d: pooling %dx%d stride %dx%d pad %dx%d%s of "
                        "%dx%dx%dx%d: cuDNN's output is %dx%dx%dx%d, the caller's %dx%dx%dx%d",
                        be->device, d->kh, d->kw, d->sh, d->sw, d->ph, d->pw,
                        d->ceil_mode ? " ceil_mode" : "", x.n, x.c, x.h, x.w, p->y_cudnn.n,
                        p->y_cudnn.c, p->y_cudnn.h, p->y_cudnn.w, y.n, y.c, y.h, y.w);
        return false;
    }
    return PB_CUDNN(be, st);
}

/* xp [xp_shape] = x at its top left, the fill value elsewhere */
static bool pad_copy(struct pb_backend *be, const struct pb_pool_desc *d,
                     const struct pb_cuda_pool_plan *p, const float *x, float *xp)
{
    cudnnHandle_t dnn = pb_cuda_of(be)->dnn;
    float fill = d->kind == PB_POOL_MAX ? -INFINITY : 0.0f;
    return PB_CUDNN(be, cudnnSetTensor(dnn, p->xp, xp, &fill)) &&
           PB_CUDNN(be, cudnnTransformTensor(dnn, &one, p->x, x, &zero, p->xin, xp));
}

size_t pb_cuda_pool_workspace(struct pb_backend *be, const struct pb_pool_desc *d,
                              const struct pb_tensor *x, const struct pb_tensor *y)
{
    (void)be, (void)d, (void)x, (void)y;
    return 0;
}

/* x [n, c, h, w] → y [n, c, oh, ow]; workspace unused (NULL) */
void pb_cuda_pool_fwd(struct pb_backend *be, const struct pb_pool_desc *d, const struct pb_tensor *x,
                      struct pb_tensor *y, void *workspace)
{
    (void)workspace;
    if (!pb_cuda_begin(be))
        return;
    struct pb_cuda *cu = pb_cuda_of(be);
    struct pb_cuda_pool_plan p;
    if (!plan(be, d, x->shape, y->shape, &p))
        return;
    if (!p.padded) {
        PB_CUDNN(be, cudnnPoolingForward(cu->dnn, p.pool, &one, p.x, x->data, &zero, p.y, y->data));
        pb_cuda_pool_plan_destroy(&p);
        return;
    }
    /* the workspace: xp [xp_shape] */
    float *xp = pb_cuda_workspace(be, pb_shape_count(p.xp_shape) * sizeof(float));
    if (xp && pad_copy(be, d, &p, x->data, xp) &&
        PB_CUDNN(be, cudnnPoolingForward(cu->dnn, p.pool, &one, p.xp, xp, &zero, p.y, y->data)) &&
        p.rescale)
        pb_cuda_pool_rescale(be, d, x->shape, y->shape, y->data, y->data);
    pb_cuda_pool_plan_destroy(&p);
}

/* x [n, c, h, w] and y [n, c, oh, ow] of the forward, dy [n, c, oh, ow] → dx [n, c, h, w];
 * workspace unused */
void pb_cuda_pool_bwd(struct pb_backend *be, const struct pb_pool_desc *d, const struct pb_tensor *x,
                      const struct pb_tensor *y, const struct pb_tensor *dy, const void *workspace,
                      struct pb_tensor *dx)
{
    (void)workspace;
    if (!pb_cuda_begin(be))
        return;
    if (!pb_shape_eq(x->shape, dx->shape) || !pb_shape_eq(y->shape, dy->shape)) {
        pb_backend_fail(be, "cuda backend: pool_bwd: dx must have x's shape and dy y's");
        return;
    }
    struct pb_cuda *cu = pb_cuda_of(be);
    struct pb_cuda_pool_plan p;
    if (!plan(be, d, x->shape, y->shape, &p))
        return;
    if (!p.padded) {
        PB_CUDNN(be, cudnnPoolingBackward(cu->dnn, p.pool, &one, p.y, y->data, p.y, dy->data, p.x,
                                          x->data, &zero, p.x, dx->data));
        pb_cuda_pool_plan_destroy(&p);
        return;
    }
    /* the workspace: xp, dxp [xp_shape], then dy rescaled [n, c, oh, ow] */
    size_t nxp = pb_shape_count(p.xp_shape), ny = pb_shape_count(y->shape);
    float *xp = pb_cuda_workspace(be, (2 * nxp + (p.rescale ? ny : 0)) * sizeof(float));
    if (!xp) {
        pb_cuda_pool_plan_destroy(&p);
        return;
    }
    float *dxp = xp + nxp, *g = dy->data;
    if (p.rescale) {
        g = dxp + nxp;
        pb_cuda_pool_rescale(be, d, x->shape, y->shape, dy->data, g);
    }
    if (pad_copy(be, d, &p, x->data, xp) &&
        PB_CUDNN(be, cudnnPoolingBackward(cu->dnn, p.pool, &one, p.y, y->data, p.y, g, p.xp, xp,
                                          &zero, p.xp, dxp)))
        PB_CUDNN(be, cudnnTransformTensor(cu->dnn, &one, p.xin, dxp, &zero, p.x, dx->data));
    pb_cuda_pool_plan_destroy(&p);
}
