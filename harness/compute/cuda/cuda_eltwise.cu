/* harness/compute/cuda/cuda_eltwise.cu — fill, ReLU and its backward, add, add_relu, axpby
 * and dropout, one thread per element (per Philox block for dropout). Reference: cpu_eltwise.c;
 * the math is kernels/eltwise.h and dropout.h, which the CPU runs too: the CPU's bits. */
#include "harness/compute/cuda/cuda_kernels.cuh"
#include "harness/compute/kernels/dropout.h"
#include "harness/compute/kernels/eltwise.h"

/* dst [n] = value */
static __global__ void fill_kernel(float *dst, float value, size_t n)
{
    size_t i = pb_cu_index();
    if (i < n)
        dst[i] = value;
}

/* x, y [n]; y = relu(x) */
static __global__ void relu_fwd_kernel(const float *x, float *y, size_t n)
{
    size_t i = pb_cu_index();
    if (i < n)
        y[i] = pb_k_relu(x[i]);
}

/* y, dy, dx [n]; dx = dy where y > 0 */
static __global__ void relu_bwd_kernel(const float *y, const float *dy, float *dx, size_t n)
{
    size_t i = pb_cu_index();
    if (i < n)
        dx[i] = pb_k_relu_bwd(y[i], dy[i]);
}

/* a, b, y [n]; y = a + b */
static __global__ void add_kernel(const float *a, const float *b, float *y, size_t n)
{
    size_t i = pb_cu_index();
    if (i < n)
        y[i] = pb_k_add(a[i], b[i]);
}

/* a, b, y [n]; y = relu(a + b) */
static __global__ void add_relu_kernel(const float *a, const float *b, float *y, size_t n)
{
    size_t i = pb_cu_index();
    if (i < n)
        y[i] = pb_k_add_relu(a[i], b[i]);
}

/* x, y [n]; y = alpha·x + beta·y, y not read when beta = 0 (as BLAS) */
static __global__ void axpby_kernel(float alpha, const float *x, float beta, float *y, size_t n)
{
    size_t i = pb_cu_index();
    if (i >= n)
        return;
    if (beta == 0.0f)
        y[i] = pb_k_scale(alpha, x[i]);
    else
        y[i] = pb_k_axpby(alpha, x[i], beta, y[i]);
}

/* x, y [n]; y[i] = x[i]·scale where uniform4(key, first + i) ≥ p, else 0. Thread t draws
 * Philox block b0 + t (b0 = first / 4) and applies its four words to the elements of the
 * block that fall in [first, first + n): nblocks blocks in all. Word k of block b is element
 * 4b + k's uniform, as philox.h's pb_philox_uniform4 (dropout.h's draw) takes it, once per
 * block instead of once per element. */
static __global__ void dropout_kernel(const float *x, float *y, size_t n, float p, float scale,
                                      struct pb_rng_key key, uint64_t first, size_t nblocks)
{
    size_t t = pb_cu_index();
    if (t >= nblocks)
        return;
    uint64_t blk = (first >> 2) + t;
    uint32_t w[4];
    pb_philox_block(key, blk, w);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        uint64_t e = blk * 4 + (uint64_t)k;  /* the element's counter */
        if (e < first || e - first >= n)
            continue;
        size_t i = (size_t)(e - first);
        y[i] = pb_k_dropout(x[i], pb_philox_unit(w[k]), p, scale);
    }
}

/* ---- the ops: one launch each on the instance's stream, its error checked ---- */

void pb_cuda_fill(struct pb_backend *be, float *dst, float value, size_t n)
{
    if (!pb_cuda_begin(be) || n == 0)
        return;
    fill_kernel<<<pb_cu_blocks(n), PB_CU_BLOCK, 0, pb_cuda_of(be)->stream>>>(dst, value, n);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_relu_fwd(struct pb_backend *be, const float *x, float *y, size_t n)
{
    if (!pb_cuda_begin(be) || n == 0)
        return;
    relu_fwd_kernel<<<pb_cu_blocks(n), PB_CU_BLOCK, 0, pb_cuda_of(be)->stream>>>(x, y, n);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_relu_bwd(struct pb_backend *be, const float *y, const float *dy, float *dx, size_t n)
{
    if (!pb_cuda_begin(be) || n == 0)
        return;
    relu_bwd_kernel<<<pb_cu_blocks(n), PB_CU_BLOCK, 0, pb_cuda_of(be)->stream>>>(y, dy, dx, n);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_add(struct pb_backend *be, const float *a, const float *b, float *y, size_t n)
{
    if (!pb_cuda_begin(be) || n == 0)
        return;
    add_kernel<<<pb_cu_blocks(n), PB_CU_BLOCK, 0, pb_cuda_of(be)->stream>>>(a, b, y, n);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_add_relu(struct pb_backend *be, const float *a, const float *b, float *y, size_t n)
{
    if (!pb_cuda_begin(be) || n == 0)
        return;
    add_relu_kernel<<<pb_cu_blocks(n), PB_CU_BLOCK, 0, pb_cuda_of(be)->stream>>>(a, b, y, n);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_axpby(struct pb_backend *be, float alpha, const float *x, float beta, float *y,
                   size_t n)
{
    if (!pb_cuda_begin(be) || n == 0)
        return;
    axpby_kernel<<<pb_cu_blocks(n), PB_CU_BLOCK, 0, pb_cuda_of(be)->stream>>>(alpha, x, beta, y,
                                                                             n);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_dropout(struct pb_backend *be, const float *x, float *y, size_t n, float p,
                     struct pb_rng_key key, uint64_t first)
{
    if (!pb_cuda_begin(be) || n == 0)
        return;
    /* the Philox blocks first / 4 … (first + n − 1) / 4 */
    size_t nblocks = (size_t)(((first + n - 1) >> 2) - (first >> 2) + 1);
    float scale = pb_k_dropout_scale(p);  /* the host's division: IEEE, as the device's */
    dropout_kernel<<<pb_cu_blocks(nblocks), PB_CU_BLOCK, 0, pb_cuda_of(be)->stream>>>(
        x, y, n, p, scale, key, first, nblocks);
    PB_CUDA(be, cudaGetLastError());
}
