/* harness/compute/cuda/cuda_dnn_kernels.h — the launch helpers of the kernels that
 * complete cuDNN's batch normalisation and pooling: the fused ReLU of BN with its mask
 * (cuda_bn.cu) and the divisors of average pooling where ceil_mode adds windows
 * (cuda_pool.cu). Each enqueues on the instance's stream and checks its launch. */
#ifndef PB_CUDA_DNN_KERNELS_H
#define PB_CUDA_DNN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "harness/base/kernel_fn.h"
#include "harness/compute/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of the ReLU mask of n elements: one bit each, in 32-bit words. */
static inline size_t pb_cuda_relu_mask_bytes(size_t n)
{
    return (n + 31) / 32 * sizeof(uint32_t);
}

/* y[n] = max(y, 0) in place, NaN kept (pb_cpu_relu_fwd's formula); mask (NULL: none)
 * [pb_cuda_relu_mask_bytes(n)] gets bit i%32 of word i/32 set where the result is > 0. */
void pb_cuda_bn_relu_fwd(struct pb_backend *be, float *y, uint32_t *mask, size_t n);
/* dym[n] = dy where mask's bit is set, else 0 (pb_cpu_relu_bwd's dy * (y > 0)). */
void pb_cuda_bn_relu_bwd(struct pb_backend *be, const uint32_t *mask, const float *dy, float *dym,
                         size_t n);

/* PyTorch's divisor along one axis for output o of a pooling window k, stride s, padding p
 * over in: the window clipped to the padded input [−p, in + p), or to the input [0, in)
 * with exclude (cpu_pool.c's clipped, and oneDNN's exclude-padding count). */
PB_KERNEL int pb_cuda_pool_divisor(int o, int in, int k, int s, int p, bool exclude)
{
    int start = o * s - p, end = start + k;
    if (exclude)
        return (end < in ? end : in) - (start > 0 ? start : 0);
    return (end < in + p ? end : in + p) - start;
}

/* The factor output (oh, ow) of the average pooling d over x [.., h, w] is rescaled by
 * when cuDNN divided it by kh·kw: kh·kw over PyTorch's divisor, one rounded division. */
PB_KERNEL float pb_cuda_pool_factor(const struct pb_pool_desc *d, int h, int w, int oh, int ow)
{
    int ch = pb_cuda_pool_divisor(oh, h, d->kh, d->sh, d->ph, d->exclude_pad);
    int cw = pb_cuda_pool_divisor(ow, w, d->kw, d->sw, d->pw, d->exclude_pad);
    return (float)(d->kh * d->kw) / (float)(ch * cw);
}

/* out[n, c, oh, ow] = in · (kh·kw / PyTorch's divisor of the window at (oh, ow)) for the
 * average pooling d of x into y (shapes x, y; in and out may be the same): the window
 * clipped to the padded input, or to the input itself with exclude_pad (cpu_pool.c's
 * rescale computes the same factor). */
void pb_cuda_pool_rescale(struct pb_backend *be, const struct pb_pool_desc *d, struct pb_shape x,
                          struct pb_shape y, const float *in, float *out);

#ifdef __cplusplus
}
#endif

#endif
