/* harness/compute/cuda/cuda_rnn.c — the host helpers cuda_lstm.c and cuda_attention.c share
 * (cuda_rnn.h): row-major products on cuBLAS (the CPU's are row-major sgemm calls,
 * cpu_lstm.c and cpu_attention.c), column sums as a product with a ones vector
 * (pb_cpu_bias_grad's reference sum, in cuBLAS's fixed order), per-call scratch.
 * cuBLAS runs on the instance's handle, which is on its stream with the math mode the
 * instance set (TF32 only with --tf32); its results are deterministic for one shape. */
#include "harness/compute/cuda/cuda_rnn.h"

static cublasOperation_t op(bool t)
{
    return t ? CUBLAS_OP_T : CUBLAS_OP_N;
}

/* Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: the operands swap. */
bool pb_cuda_rnn_gemm(struct pb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                      const float *a, int lda, const float *b, int ldb, float beta, float *c,
                      int ldc)
{
    if (m <= 0 || n <= 0)
        return true;
    return PB_CUBLAS(be, cublasSgemm(pb_cuda_of(be)->blas, op(tb), op(ta), n, m, k, &alpha, b, ldb,
                                     a, lda, &beta, c, ldc));
}

bool pb_cuda_rnn_gemm_batched(struct pb_backend *be, bool ta, bool tb, int m, int n, int k,
                              float alpha, const float *a, int lda, long long sa, const float *b,
                              int ldb, long long sb, float beta, float *c, int ldc, long long sc,
                              int count)
{
    if (m <= 0 || n <= 0 || count <= 0)
        return true;
    return PB_CUBLAS(be, cublasSgemmStridedBatched(pb_cuda_of(be)->blas, op(tb), op(ta), n, m, k,
                                                   &alpha, b, ldb, sb, a, lda, sa, &beta, c, ldc,
                                                   sc, count));
}

/* x row-major [rows, cols] is column-major [cols, rows] with leading dimension cols:
 * y = x_cm·ones. */
bool pb_cuda_rnn_colsum(struct pb_backend *be, const float *x, int rows, int cols,
                        const float *ones, float beta, float *y)
{
    if (cols <= 0)
        return true;
    const float one = 1.0f;
    return PB_CUBLAS(be, cublasSgemv(pb_cuda_of(be)->blas, CUBLAS_OP_N, cols, rows, &one, x, cols,
                                     ones, 1, &beta, y, 1));
}

float *pb_cuda_rnn_scratch(struct pb_backend *be, size_t bytes)
{
    struct pb_err e;
    float *p = pb_backend_alloc(be, bytes ? bytes : sizeof(float), PB_MEM_SCRATCH, &e);
    if (!p)
        pb_backend_fail(be, "%s", e.msg);
    return p;
}

size_t pb_cuda_rnn_align(size_t floats)
{
    return (floats + 63) / 64 * 64;
}
