/* harness/compute/cuda/cuda_gemm.c — matrix ops of the CUDA backend on cuBLAS: row-major
 * sgemm through the column-major identity, the bias add as a rank-1 update (bit for bit
 * the CPU's y + b) and the bias gradient as a matrix-vector product with a ones vector.
 * Reference: harness/compute/cpu/cpu_gemm.c (pb_cpu_gemm, pb_cpu_bias_add, pb_cpu_bias_grad). */
#include "harness/compute/cuda/cuda_internal.h"

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major. A row-major matrix with
 * leading dimension ld is its transpose in column-major order, so cuBLAS computes
 * Cᵀ[N,M] = alpha * op(B)ᵀ * op(A)ᵀ + beta * Cᵀ: the operands swapped, each op kept.
 * FP32 accumulation (CUBLAS_COMPUTE_32F) unless the instance allows TF32. */
void pb_cuda_gemm(struct pb_backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                  float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                  float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (!pb_cuda_begin(be))
        return;
    struct pb_cuda *cu = pb_cuda_of(be);
    PB_CUBLAS(be, cublasGemmEx(cu->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                               trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_32F,
                               ldb, a, CUDA_R_32F, lda, &beta, c, CUDA_R_32F, ldc,
                               cu->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT));
}

/* The instance's vector of at least n ones (grown to twice its size or more, filled
 * through a staging buffer); NULL and the instance failed when out of memory. */
static const float *ones(struct pb_backend *be, int n)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    if ((size_t)n <= cu->nones)
        return cu->ones;
    size_t want = (size_t)n > 2 * cu->nones ? (size_t)n : 2 * cu->nones;
    if (want < 1024)
        want = 1024;
    pb_backend_free(be, cu->ones);  /* this stream's later ops come after its readers */
    cu->ones = NULL;
    cu->nones = 0;
    struct pb_err e;
    float *d = pb_backend_alloc(be, want * sizeof(float), PB_MEM_SCRATCH, &e);
    if (!d) {
        pb_backend_fail(be, "%s", e.msg);
        return NULL;
    }
    float *h = pb_cuda_write_begin(be, d, want * sizeof(float));
    for (size_t i = 0; i < want; i++)
        h[i] = 1.0f;
    pb_cuda_write_end(be, d, h, want * sizeof(float));
    cu->ones = d;
    cu->nones = want;
    return be->failed ? NULL : d;
}

/* y[N,C] += b[C] per row. y is the column-major [C,N] matrix, so y += b·1ᵀ (cublasSger
 * with the ones [N]): each element y + 1·b·1 = y + b rounded once, the CPU's bits. */
void pb_cuda_bias_add(struct pb_backend *be, float *y, const float *b, int n, int c)
{
    if (n <= 0 || c <= 0 || !pb_cuda_begin(be))
        return;
    const float *one = ones(be, n);
    if (!one)
        return;
    const float alpha = 1.0f;
    PB_CUBLAS(be, cublasSger(pb_cuda_of(be)->blas, c, n, &alpha, b, 1, one, 1, y, c));
}

/* db_acc[C] += sum over rows of dy[N,C]: dy is the column-major [C,N] matrix, so
 * db_acc = dy·1 + db_acc (cublasSgemv, beta = 1, ones [N]). The sums are in FP32 in
 * cuBLAS's order (the CPU sums in double, row by row): they agree to about N float
 * roundings of the sum of |dy|; with atomics not allowed the order is fixed. */
void pb_cuda_bias_grad(struct pb_backend *be, const float *dy, float *db_acc, int n, int c)
{
    if (n <= 0 || c <= 0 || !pb_cuda_begin(be))
        return;
    const float *one = ones(be, n);
    if (!one)
        return;
    const float alpha = 1.0f, beta = 1.0f;
    PB_CUBLAS(be, cublasSgemv(pb_cuda_of(be)->blas, CUBLAS_OP_N, c, n, &alpha, dy, c, one, 1, &beta,
                              db_acc, 1));
}
