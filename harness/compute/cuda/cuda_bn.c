/* harness/compute/cuda/cuda_bn.c — spatial batch normalisation on cuDNN's legacy API
 * (reference: cpu_bn.c): training normalises with the batch statistics and saves the
 * batch mean and inverse standard deviation in aux ([2, c] floats, this backend's format),
 * updating the running statistics as PyTorch does — cuDNN's exponentialAverageFactor is
 * the momentum (run = (1 − m)·run + m·batch) and its running variance takes the unbiased
 * batch variance, as PyTorch's own cuDNN path relies on (reported, checked by the GPU
 * parity script); inference reads the running statistics; the backward accumulates
 * dgamma and dbeta (alphaParamDiff = betaParamDiff = 1). With relu the ReLU is fused as
 * cuda_bn.cu's kernels: the forward's max(y, 0) leaves a one-bit mask of y > 0 in aux after
 * the statistics, and the backward masks dy with it before cuDNN's backward. y and dx keep
 * x's (plain) layout. */
#include "harness/compute/cuda/cuda_dnn_kernels.h"
#include "harness/compute/cuda/cuda_internal.h"
#include "harness/compute/cuda/cuda_plan.h"

static const float one = 1.0f, zero = 0.0f;

/* aux: the statistics [2, c], then from a multiple of 64 bytes the ReLU mask when relu */
static size_t stats_bytes(int channels)
{
    return (2 * (size_t)channels * sizeof(float) + 63) / 64 * 64;
}

static bool plan(struct pb_backend *be, struct pb_shape x, struct pb_cuda_bn_plan *p)
{
    return PB_CUDNN(be, pb_cuda_bn_plan(p, x));
}

size_t pb_cuda_bn_aux_bytes(struct pb_backend *be, struct pb_shape x, bool relu)
{
    (void)be;
    return stats_bytes(x.c) + (relu ? pb_cuda_relu_mask_bytes(pb_shape_count(x)) : 0);
}

/* x [n, c, h, w], gamma, beta [c], run_mean, run_var [c] updated → y [n, c, h, w];
 * aux: the batch mean [c] and inverse standard deviation [c], then the ReLU mask */
void pb_cuda_bn_fwd_train(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                          const float *beta, float *run_mean, float *run_var, float momentum,
                          float eps, bool relu, struct pb_tensor *y, void *aux)
{
    if (!pb_cuda_begin(be))
        return;
    struct pb_cuda_bn_plan p;
    if (!plan(be, x->shape, &p))
        return;
    int c = x->shape.c;
    float *mean = aux, *invstd = mean + c;
    if (PB_CUDNN(be, cudnnBatchNormalizationForwardTraining(
                         pb_cuda_of(be)->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, p.x, x->data,
                         p.x, y->data, p.param, gamma, beta, (double)momentum, run_mean, run_var,
                         (double)eps, mean, invstd)) &&
        relu)
        pb_cuda_bn_relu_fwd(be, y->data, (uint32_t *)((char *)aux + stats_bytes(c)),
                            pb_shape_count(x->shape));
    pb_cuda_bn_plan_destroy(&p);
}

/* x [n, c, h, w], gamma, beta, run_mean, run_var [c] → y [n, c, h, w] */
void pb_cuda_bn_fwd_infer(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                          const float *beta, const float *run_mean, const float *run_var, float eps,
                          bool relu, struct pb_tensor *y)
{
    if (!pb_cuda_begin(be))
        return;
    struct pb_cuda_bn_plan p;
    if (!plan(be, x->shape, &p))
        return;
    if (PB_CUDNN(be, cudnnBatchNormalizationForwardInference(
                         pb_cuda_of(be)->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, p.x, x->data,
                         p.x, y->data, p.param, gamma, beta, run_mean, run_var, (double)eps)) &&
        relu)
        pb_cuda_bn_relu_fwd(be, y->data, NULL, pb_shape_count(x->shape));
    pb_cuda_bn_plan_destroy(&p);
}

/* x, dy [n, c, h, w], gamma [c], aux of the training forward → dx [n, c, h, w];
 * dgamma_acc, dbeta_acc [c] += */
void pb_cuda_bn_bwd(struct pb_backend *be, const struct pb_tensor *x, const struct pb_tensor *dy,
                    const float *gamma, const void *aux, float eps, bool relu, struct pb_tensor *dx,
                    float *dgamma_acc, float *dbeta_acc)
{
    if (!pb_cuda_begin(be))
        return;
    if (!pb_shape_eq(x->shape, dy->shape) || !pb_shape_eq(x->shape, dx->shape)) {
        pb_backend_fail(be, "cuda backend: bn_bwd: x, dy and dx must have one shape");
        return;
    }
    int c = x->shape.c;
    size_t n = pb_shape_count(x->shape);
    const float *mean = aux, *invstd = mean + c, *g = dy->data;
    if (relu) {
        /* the workspace: dy masked [n, c, h, w] */
        float *dym = pb_cuda_workspace(be, n * sizeof(float));
        if (!dym)
            return;
        pb_cuda_bn_relu_bwd(be, (const uint32_t *)((const char *)aux + stats_bytes(c)), dy->data,
                            dym, n);
        g = dym;
    }
    struct pb_cuda_bn_plan p;
    if (!plan(be, x->shape, &p))
        return;
    PB_CUDNN(be, cudnnBatchNormalizationBackward(pb_cuda_of(be)->dnn, CUDNN_BATCHNORM_SPATIAL, &one,
                                                 &zero, &one, &one, p.x, x->data, p.x, g, p.x,
                                                 dx->data, p.param, gamma, dgamma_acc, dbeta_acc,
                                                 (double)eps, mean, invstd));
    pb_cuda_bn_plan_destroy(&p);
}
