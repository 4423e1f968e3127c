/* harness/compute/cuda/cuda_plan.h — the cuDNN descriptors of a convolution, a pooling and a
 * batch normalisation for one shape, built on the host (no device needed) by the ops of
 * cuda_conv.c, cuda_pool.c and cuda_bn.c and by tests/compute/cuda/test_cuda_plan.c, which checks
 * the output shapes cuDNN computes against pipebench's shape inference for every zoo
 * model. Every tensor is plain NCHW float. */
#ifndef PB_CUDA_PLAN_H
#define PB_CUDA_PLAN_H

#include <cudnn.h>
#include <stdbool.h>

#include "harness/compute/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A convolution (cross-correlation, as PyTorch's) of x [n, cin, h, w] with w [cout, cin,
 * kh, kw] into y [n, cout, oh, ow], bias [1, cout, 1, 1]. */
struct pb_cuda_conv_plan {
    cudnnTensorDescriptor_t x, y, bias;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    struct pb_shape y_cudnn;  /* the output shape cuDNN computes */
};

/* Builds p for d over x whose output the caller holds as y: CUDNN_STATUS_BAD_PARAM, and
 * nothing to destroy, when cuDNN's output shape (p->y_cudnn, also set then) is not y or
 * d does not fit x; another status when cuDNN refuses a descriptor. The convolution's
 * math type is CUDNN_FMA_MATH until the caller sets another. */
cudnnStatus_t pb_cuda_conv_plan(struct pb_cuda_conv_plan *p, const struct pb_conv_desc *d,
                                struct pb_shape x, struct pb_shape y);
void pb_cuda_conv_plan_destroy(struct pb_cuda_conv_plan *p);

/* A pooling of x [n, c, h, w] into y [n, c, oh, ow] with PyTorch's sizes and divisors.
 * cuDNN pads symmetrically and rounds the output size down; where ceil_mode adds windows
 * (PyTorch's size is cuDNN's plus one), x is copied into xp [n, c, h + eh, w + ew] whose
 * extra bottom rows and right columns hold the fill value (−∞ for max pooling, 0 for
 * average) and cuDNN pools xp with the same symmetric padding: its size then is
 * PyTorch's and every window starts where PyTorch's does. Average pooling on xp divides
 * by kh·kw (cuDNN's count including padding), so each output is rescaled by kh·kw over
 * PyTorch's divisor (the window clipped to the padded input, or to the input with
 * exclude_pad): `rescale`. */
struct pb_cuda_pool_plan {
    cudnnPoolingDescriptor_t pool;
    cudnnTensorDescriptor_t x, y;
    bool padded;                   /* pooling runs on xp */
    bool rescale;                  /* average pooling on xp: outputs rescaled */
    struct pb_shape xp_shape;      /* padded: [n, c, h + eh, w + ew] */
    cudnnTensorDescriptor_t xp;    /* padded: xp, dense */
    cudnnTensorDescriptor_t xin;   /* padded: x's dims at xp's strides (x inside xp) */
    struct pb_shape y_cudnn;       /* the output shape cuDNN computes */
};

/* Builds p for d over x whose output the caller holds as y (statuses as
 * pb_cuda_conv_plan's). Max pooling is CUDNN_POOLING_MAX_DETERMINISTIC when
 * deterministic, else CUDNN_POOLING_MAX; NaN propagates. */
cudnnStatus_t pb_cuda_pool_plan(struct pb_cuda_pool_plan *p, const struct pb_pool_desc *d,
                                struct pb_shape x, struct pb_shape y, bool deterministic);
void pb_cuda_pool_plan_destroy(struct pb_cuda_pool_plan *p);

/* Spatial batch normalisation of x [n, c, h, w]: x's descriptor and the [1, c, 1, 1] one
 * cuDNN derives for gamma, beta and the statistics. */
struct pb_cuda_bn_plan {
    cudnnTensorDescriptor_t x, param;
};

cudnnStatus_t pb_cuda_bn_plan(struct pb_cuda_bn_plan *p, struct pb_shape x);
void pb_cuda_bn_plan_destroy(struct pb_cuda_bn_plan *p);

#ifdef __cplusplus
}
#endif

#endif
