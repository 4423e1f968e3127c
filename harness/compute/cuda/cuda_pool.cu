/* harness/compute/cuda/cuda_pool.cu — average pooling's divisors where ceil_mode adds
 * windows that cuDNN cannot size: cuDNN pools the padded copy dividing by kh·kw, and this
 * rescales each output to PyTorch's divisor. Reference: rescale in cpu_pool.c (the same
 * factor, (float)(kh·kw) / (float)(divisor), one multiplication). */
#include "harness/compute/cuda/cuda_dnn_kernels.h"
#include "harness/compute/cuda/cuda_internal.h"

#define THREADS 256

/* PyTorch's divisor along one axis for output o: the window clipped to the padded input
 * [−p, in + p), or to the input [0, in) with exclude_pad. */
__device__ static int divisor(int o, int in, int k, int s, int p, bool exclude)
{
    int start = o * s - p, end = start + k;
    if (exclude)
        return (end < in ? end : in) - (start > 0 ? start : 0);
    return (end < in + p ? end : in + p) - start;
}

struct geometry {
    int kh, kw, sh, sw, ph, pw, h, w, oh, ow;
    bool exclude;
};

/* in, out [planes, oh, ow] */
static __global__ void pool_rescale_kernel(struct geometry g, const float *in, float *out, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int ow = (int)(i % (size_t)g.ow), oh = (int)(i / (size_t)g.ow % (size_t)g.oh);
    int ch = divisor(oh, g.h, g.kh, g.sh, g.ph, g.exclude);
    int cw = divisor(ow, g.w, g.kw, g.sw, g.pw, g.exclude);
    out[i] = in[i] * ((float)(g.kh * g.kw) / (float)(ch * cw));
}

void pb_cuda_pool_rescale(struct pb_backend *be, const struct pb_pool_desc *d, struct pb_shape x,
                          struct pb_shape y, const float *in, float *out)
{
    size_t n = pb_shape_count(y);
    if (n == 0)
        return;
    struct geometry g = {d->kh, d->kw, d->sh, d->sw, d->ph, d->pw, x.h, x.w, y.h, y.w,
                         d->exclude_pad};
    unsigned blocks = (unsigned)((n + THREADS - 1) / THREADS);
    pool_rescale_kernel<<<blocks, THREADS, 0, pb_cuda_of(be)->stream>>>(g, in, out, n);
    PB_CUDA(be, cudaGetLastError());
}
