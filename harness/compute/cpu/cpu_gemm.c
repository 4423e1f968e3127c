/* harness/compute/cpu/cpu_gemm.c — matrix ops of the CPU backend: row-major sgemm on oneDNN, and
 * the bias add and bias gradient of fully connected layers in plain C (the gradient sums
 * rows in a fixed order, so its bits never depend on the thread count). */
#include "harness/compute/cpu/cpu_internal.h"

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major */
void pb_cpu_gemm(struct pb_backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                 float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                 float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (!pb_cpu_begin(be))
        return;
    PB_DNNL(dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb,
                       beta, c, ldc));
}

/* y[N,C] += b[C] per row */
void pb_cpu_bias_add(struct pb_backend *be, float *y, const float *b, int n, int c)
{
    if (!pb_cpu_begin(be))
        return;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int r = 0; r < n; r++) {
        float *row = y + (size_t)r * (size_t)c;
        for (int j = 0; j < c; j++)
            row[j] += b[j];
    }
}

#define BIAS_COLS 64

/* db_acc[C] += sum over rows of dy[N,C]: each column summed over rows 0..N-1 in
 * order, in double, by whichever thread owns its block of columns. */
void pb_cpu_bias_grad(struct pb_backend *be, const float *dy, float *db_acc, int n, int c)
{
    if (!pb_cpu_begin(be))
        return;
    int nblocks = (c + BIAS_COLS - 1) / BIAS_COLS;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int blk = 0; blk < nblocks; blk++) {
        int j0 = blk * BIAS_COLS, j1 = j0 + BIAS_COLS < c ? j0 + BIAS_COLS : c;
        double acc[BIAS_COLS] = {0};
        for (int r = 0; r < n; r++) {
            const float *row = dy + (size_t)r * (size_t)c;
            for (int j = j0; j < j1; j++)
                acc[j - j0] += row[j];
        }
        for (int j = j0; j < j1; j++)
            db_acc[j] += (float)acc[j - j0];
    }
}
