/* harness/compute/cuda/cuda_bn.cu — the ReLU fused onto cuDNN's batch normalisation
 * (NCHW: cuDNN fuses an activation only in NHWC): the forward's max(y, 0) in place with a
 * one-bit mask of y > 0 for the backward, and the backward's dy masked by it. Reference:
 * pb_cpu_relu_fwd and pb_cpu_relu_bwd (cpu_eltwise.c), bit for bit; cpu_bn.c's fused
 * BN + ReLU. */
#include "harness/compute/cuda/cuda_dnn_kernels.h"
#include "harness/compute/cuda/cuda_internal.h"

#define THREADS 256  /* a multiple of 32: whole warps vote on the mask's words */

/* y [n] in place; mask [(n + 31) / 32] words or NULL */
static __global__ void bn_relu_fwd_kernel(float *y, uint32_t *mask, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    bool pos = false;
    if (i < n) {
        float v = y[i];
        float r = (v > 0.0f || v != v) ? v : 0.0f;
        y[i] = r;
        pos = r > 0.0f;
    }
    if (!mask)
        return;
    /* every lane of the warp votes, those past n with false */
    unsigned bits = __ballot_sync(0xffffffffu, pos);
    if ((threadIdx.x & 31) == 0 && i < n)
        mask[i / 32] = bits;
}

void pb_cuda_bn_relu_fwd(struct pb_backend *be, float *y, uint32_t *mask, size_t n)
{
    if (n == 0)
        return;
    unsigned blocks = (unsigned)((n + THREADS - 1) / THREADS);
    bn_relu_fwd_kernel<<<blocks, THREADS, 0, pb_cuda_of(be)->stream>>>(y, mask, n);
    PB_CUDA(be, cudaGetLastError());
}

/* mask [(n + 31) / 32] words, dy [n] → dym [n] */
static __global__ void bn_relu_bwd_kernel(const uint32_t *mask, const float *dy, float *dym, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dym[i] = (mask[i / 32] >> (i % 32)) & 1u ? dy[i] : 0.0f;
}

void pb_cuda_bn_relu_bwd(struct pb_backend *be, const uint32_t *mask, const float *dy, float *dym,
                         size_t n)
{
    if (n == 0)
        return;
    unsigned blocks = (unsigned)((n + THREADS - 1) / THREADS);
    bn_relu_bwd_kernel<<<blocks, THREADS, 0, pb_cuda_of(be)->stream>>>(mask, dy, dym, n);
    PB_CUDA(be, cudaGetLastError());
}
