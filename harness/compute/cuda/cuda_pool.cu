/* harness/compute/cuda/cuda_pool.cu — average pooling's divisors where ceil_mode adds
 * windows that cuDNN cannot size: cuDNN pools the padded copy dividing by kh·kw, and this
 * rescales each output to PyTorch's divisor (cuda_dnn_kernels.h's pb_cuda_pool_factor, which
 * tests/compute/cuda/test_cuda_plan.c runs on the host). Reference: rescale in cpu_pool.c (the
 * same factor, (float)(kh·kw) / (float)(divisor), one multiplication). */
#include "harness/compute/cuda/cuda_dnn_kernels.h"
#include "harness/compute/cuda/cuda_internal.h"

#define THREADS 256

/* in, out [planes, oh, ow]; d: the pooling of x [.., h, w] */
static __global__ void pool_rescale_kernel(struct pb_pool_desc d, int h, int w, int oh, int ow,
                                           const float *in, float *out, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int col = (int)(i % (size_t)ow), row = (int)(i / (size_t)ow % (size_t)oh);
    out[i] = in[i] * pb_cuda_pool_factor(&d, h, w, row, col);
}

void pb_cuda_pool_rescale(struct pb_backend *be, const struct pb_pool_desc *d, struct pb_shape x,
                          struct pb_shape y, const float *in, float *out)
{
    size_t n = pb_shape_count(y);
    if (n == 0)
        return;
    unsigned blocks = (unsigned)((n + THREADS - 1) / THREADS);
    pool_rescale_kernel<<<blocks, THREADS, 0, pb_cuda_of(be)->stream>>>(*d, x.h, x.w, y.h, y.w,
                                                                        in, out, n);
    PB_CUDA(be, cudaGetLastError());
}
