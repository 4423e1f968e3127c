/* harness/compute/cuda/cuda_loss.cu — softmax cross-entropy with label smoothing and an
 * ignored label (backend.h softmax_xent): rows counted, one block per row, losses summed.
 * Reference: cpu_loss.c pb_cpu_softmax_xent; row loss and dlogits are kernels/xent.h's. */

/* Tolerance against the CPU: a row's Σ exp(z_j − m) and Σ z_j are summed in double by a
 * fixed tree (the CPU: in order), and CUDA's double exp and log are within 1 ulp (glibc's
 * below 1 ulp), so lse is the CPU's within a few ulp of double (≈ 1e-15·|lse|). Rounded to
 * float, each dlogit is the CPU's or 1 ulp of float apart, up to an absolute 1e-14/M where
 * p_j − t_j cancels; the loss is within a relative 1e-6, up to an absolute 1e-12·(1 +
 * max |z|) where the row losses cancel near 0. The argmax, correct and count are exact, and
 * the same inputs give the same bits on every run (fixed trees, no atomic float sums). */
#include "harness/compute/cuda/cuda_kernels.cuh"
#include "harness/compute/kernels/xent.h"

/* threads per block of the row and sum kernels (a power of two: the trees below) */
#define XENT_BLOCK 256

/* labels [n]: *count = rows whose label is not `ignore`; a label outside [0, c) raises
 * the flag (the CPU checks it before the ignore test, so `ignore` itself is in range) */
static __global__ void xent_count_kernel(const int32_t *labels, int n, int c, int ignore,
                                         int32_t *count, struct pb_cuda_flag_ref flag)
{
    __shared__ int part[XENT_BLOCK];
    int counted = 0;
    for (int r = threadIdx.x; r < n; r += XENT_BLOCK) {
        int y = labels[r];
        if (y < 0 || y >= c)
            pb_cu_raise(flag, PB_CUDA_FLAG_LABEL, c, (unsigned)r, (uint32_t)y);
        counted += y != ignore;
    }
    part[threadIdx.x] = counted;
    __syncthreads();
    for (int s = XENT_BLOCK / 2; s > 0; s /= 2) {
        if ((int)threadIdx.x < s)
            part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *count = part[0];
}

/* whether candidate (v, j) beats (bv, bi) as the first index of the largest non-NaN
 * value; bi < 0: none yet */
static __device__ __forceinline__ bool argmax_beats(float v, int j, float bv, int bi)
{
    return j >= 0 && (bi < 0 || v > bv || (v == bv && j < bi));
}

/* logits, dlogits [n, c], labels [n], row r = blockIdx.x: row_loss[r] and row_correct[r]
 * (0 for an ignored row or a bad label), dlogits[r] = (softmax − target) / D (0 on an
 * ignored row) when dlogits is not NULL, D = grad_rows when > 0, else *count */
static __global__ void xent_row_kernel(const float *logits, const int32_t *labels, int c,
                                       double eps, double off, int ignore, int grad_rows,
                                       const int32_t *count, float *dlogits, double *row_loss, int *row_correct)
{
    __shared__ double s_sum[XENT_BLOCK], s_zsum[XENT_BLOCK];
    __shared__ float s_v[XENT_BLOCK];
    __shared__ int s_i[XENT_BLOCK];
    int r = blockIdx.x, tid = threadIdx.x;
    const float *z = logits + (size_t)r * c;
    float *d = dlogits ? dlogits + (size_t)r * c : NULL;
    int y = labels[r];
    if (y == ignore || y < 0 || y >= c) {
        for (int j = tid; d && j < c; j += XENT_BLOCK)
            d[j] = 0.0f;
        if (tid == 0) {
            row_loss[r] = 0;
            row_correct[r] = 0;
        }
        return;
    }
    /* the argmax as pb_k_xent_argmax's loop finds it: index 0 when z[0] is NaN (nothing
     * compares larger), else the first index of the largest non-NaN value */
    float bv = 0.0f;
    int bi = -1;
    for (int j = tid; j < c; j += XENT_BLOCK)
        if (z[j] == z[j] && argmax_beats(z[j], j, bv, bi)) {
            bv = z[j];
            bi = j;
        }
    s_v[tid] = bv;
    s_i[tid] = bi;
    __syncthreads();
    for (int s = XENT_BLOCK / 2; s > 0; s /= 2) {
        if (tid < s && argmax_beats(s_v[tid + s], s_i[tid + s], s_v[tid], s_i[tid])) {
            s_v[tid] = s_v[tid + s];
            s_i[tid] = s_i[tid + s];
        }
        __syncthreads();
    }
    int am = z[0] != z[0] ? 0 : s_i[0];
    double m = z[am];
    /* Σ exp(z_j − m) and Σ z_j in double, each thread's in order, then a fixed tree */
    double sum = 0, zsum = 0;
    for (int j = tid; j < c; j += XENT_BLOCK) {
        sum += exp((double)z[j] - m);
        zsum += z[j];
    }
    s_sum[tid] = sum;
    s_zsum[tid] = zsum;
    __syncthreads();
    for (int s = XENT_BLOCK / 2; s > 0; s /= 2) {
        if (tid < s) {
            s_sum[tid] += s_sum[tid + s];
            s_zsum[tid] += s_zsum[tid + s];
        }
        __syncthreads();
    }
    double lse = m + log(s_sum[0]);
    if (tid == 0) {
        row_loss[r] = pb_k_xent_row_loss(lse, z[y], s_zsum[0], eps, off);
        row_correct[r] = am == y;
    }
    int div = grad_rows > 0 ? grad_rows : *count;
    for (int j = tid; d && j < c; j += XENT_BLOCK)
        d[j] = pb_k_xent_dlogit(z[j], lse, j == y, eps, off, div);
}

/* row_loss, row_correct [n] → out: the mean loss over *count rows (0 when none) and the
 * count of correct rows; one block, each thread's rows in order, then a fixed tree */
static __global__ void xent_sum_kernel(const double *row_loss, const int *row_correct, int n,
                                       struct pb_xent_out *out)
{
    __shared__ double s_loss[XENT_BLOCK];
    __shared__ int s_ok[XENT_BLOCK];
    int tid = threadIdx.x;
    double total = 0;
    int ok = 0;
    for (int r = tid; r < n; r += XENT_BLOCK) {
        total += row_loss[r];
        ok += row_correct[r];
    }
    s_loss[tid] = total;
    s_ok[tid] = ok;
    __syncthreads();
    for (int s = XENT_BLOCK / 2; s > 0; s /= 2) {
        if (tid < s) {
            s_loss[tid] += s_loss[tid + s];
            s_ok[tid] += s_ok[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        int counted = out->count;
        out->loss = counted ? (float)(s_loss[0] / counted) : 0.0f;
        out->correct = s_ok[0];
    }
}

/* logits [n, c] plain, labels [n] (device); out (device) and dlogits [n, c] as backend.h
 * says; the row values live in the instance's workspace (n doubles, n ints) */
void pb_cuda_softmax_xent(struct pb_backend *be, const float *logits, const int32_t *labels, int n,
                          int c, float eps_ls, int ignore, int grad_rows,
                          struct pb_xent_out *out, float *dlogits)
{
    if (!pb_cuda_begin(be))
        return;
    PB_CHECK(n > 0 && c > 0);
    struct pb_cuda_flag_ref flag;
    if (!pb_cuda_flag_arm(be, &flag))
        return;
    double *row_loss = (double *)pb_cuda_workspace(be, (size_t)n * (sizeof(double) + sizeof(int)));
    if (!row_loss)
        return;
    int *row_correct = (int *)(row_loss + n);
    double eps = eps_ls, off = eps / c;
    cudaStream_t s = pb_cuda_of(be)->stream;
    xent_count_kernel<<<1, XENT_BLOCK, 0, s>>>(labels, n, c, ignore, &out->count, flag);
    if (!PB_CUDA(be, cudaGetLastError()))
        return;
    xent_row_kernel<<<(unsigned)n, XENT_BLOCK, 0, s>>>(logits, labels, c, eps, off, ignore,
                                                       grad_rows, &out->count, dlogits,
                                                       row_loss, row_correct);
    if (!PB_CUDA(be, cudaGetLastError()))
        return;
    xent_sum_kernel<<<1, XENT_BLOCK, 0, s>>>(row_loss, row_correct, n, out);
    PB_CUDA(be, cudaGetLastError());
}
