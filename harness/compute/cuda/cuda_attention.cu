/* harness/compute/cuda/cuda_attention.cu — the kernels of GNMT's normalised Bahdanau
 * attention (cuda_attention.c; launch helpers and shapes in cuda_rnn.h): v̂ and its
 * gradient, the additive score, the masked softmax and its backward, and the score's
 * backward into the projections' gradients. Reference: cpu_attention.c (normalised_v,
 * attn_score, attend, attn_bwd_task, pb_cpu_attn_bwd), expression for expression on the
 * shared tanh (the per-element bodies: cuda_rnn_kernels.h), compiled with -fmad=false.
 * Every sum runs in a fixed order that depends on the shape alone (sequential per thread,
 * or a fixed tree over a block or a warp): no atomics. */
#include "harness/compute/cuda/cuda_kernels.cuh"
#include "harness/compute/cuda/cuda_rnn_kernels.h"

enum {
    RED_THREADS = 256,   /* the one block of the v̂ kernels (a power of 2) */
    SCORE_NC = 32,       /* units per chunk the score's tiles stage in shared memory */
    SCORE_TJ = 32,       /* keys per score tile, at most */
    SCORE_TI = 8,        /* queries per score tile, at most */
    ROW_THREADS = 256,   /* softmax: a warp per row, 8 rows a block */
    GRAD_THREADS = 128,  /* the score's backward: a thread per unit */
};

#define FULL_MASK 0xffffffffu

/* The block's sum of x (one per thread of RED_THREADS) in a fixed tree; sm [RED_THREADS]. */
__device__ static double block_sum(double x, double *sm)
{
    int t = threadIdx.x;
    sm[t] = x;
    __syncthreads();
    for (int w = RED_THREADS / 2; w > 0; w /= 2) {
        if (t < w)
            sm[t] += sm[t + w];
        __syncthreads();
    }
    double s = sm[0];
    __syncthreads();
    return s;
}

/* ‖v‖ for v (U), in double. */
__device__ static double v_norm(int U, const float *v, double *sm)
{
    double ss = 0;
    for (int n = threadIdx.x; n < U; n += RED_THREADS)
        ss += (double)v[n] * v[n];
    return sqrt(block_sum(ss, sm));
}

/* vh (U) = g·v/‖v‖; one block. */
__global__ static void attn_vhat_kernel(int U, const float *v, const float *g, float *vh)
{
    __shared__ double sm[RED_THREADS];
    double norm = v_norm(U, v, sm);
    float g0 = g[0];
    for (int n = threadIdx.x; n < U; n += RED_THREADS)
        vh[n] = (float)(g0 * v[n] / norm);
}

/* gv (U) += (g/‖v‖)(dv̂ − u·udv), gg (1) += udv = u·dv̂, u = v/‖v‖; one block. */
__global__ static void attn_vgrad_kernel(int U, const float *v, const float *g,
                                         const float *dvhat, float *gv, float *gg)
{
    __shared__ double sm[RED_THREADS];
    double norm = v_norm(U, v, sm);
    double part = 0;
    for (int n = threadIdx.x; n < U; n += RED_THREADS)
        part += v[n] / norm * dvhat[n];
    double udv = block_sum(part, sm);
    if (threadIdx.x == 0)
        gg[0] += (float)udv;
    float g0 = g[0];
    for (int n = threadIdx.x; n < U; n += RED_THREADS)
        gv[n] += (float)(g0 / norm * (dvhat[n] - v[n] / norm * udv));
}

/* s (B·tq, tk): a tile of blockDim.y queries × blockDim.x keys of source blockIdx.z, a
 * thread per score summing v̂_n·tanh((pq_n + pk_n) + bias_n) over n in order (the same
 * bits whatever the tile's shape); pq (B·tq, U), pk (B·tk, U), bias and vh (U) staged
 * through shared memory SCORE_NC units at a time. */
__global__ static void attn_score_kernel(struct pb_cuda_attn_dims d, const float *pq,
                                         const float *pk, const float *bias, const float *vh,
                                         float *s)
{
    __shared__ float sq[SCORE_TI][SCORE_NC], sk[SCORE_TJ][SCORE_NC + 1];
    __shared__ float sb[SCORE_NC], sv[SCORE_NC];
    int b = blockIdx.z, TJ = blockDim.x, TI = blockDim.y, U = d.units;
    int i0 = blockIdx.y * TI, j0 = blockIdx.x * TJ, len = pb_cu_attn_len(&d, b);
    if (j0 >= len)  /* the whole tile past the length: the block leaves together */
        return;
    int tid = threadIdx.y * TJ + threadIdx.x, nt = TI * TJ;
    const float *pqb = pq + ((size_t)b * d.tq + i0) * U;
    const float *pkb = pk + ((size_t)b * d.tk + j0) * U;
    float acc = 0.0f;
    for (int n0 = 0; n0 < U; n0 += SCORE_NC) {
        int nc = U - n0 < SCORE_NC ? U - n0 : SCORE_NC;
        for (int e = tid; e < TI * SCORE_NC; e += nt) {
            int ii = e / SCORE_NC, nn = e % SCORE_NC;
            sq[ii][nn] = i0 + ii < d.tq && nn < nc ? pqb[(size_t)ii * U + n0 + nn] : 0.0f;
        }
        for (int e = tid; e < TJ * SCORE_NC; e += nt) {
            int jj = e / SCORE_NC, nn = e % SCORE_NC;
            sk[jj][nn] = j0 + jj < len && nn < nc ? pkb[(size_t)jj * U + n0 + nn] : 0.0f;
        }
        for (int e = tid; e < SCORE_NC; e += nt) {
            sb[e] = e < nc ? bias[n0 + e] : 0.0f;
            sv[e] = e < nc ? vh[n0 + e] : 0.0f;
        }
        __syncthreads();
        for (int nn = 0; nn < nc; nn++)
            acc = pb_cu_attn_score_term(acc, sv[nn], sq[threadIdx.y][nn], sk[threadIdx.x][nn],
                                        sb[nn]);
        __syncthreads();
    }
    int i = i0 + threadIdx.y, j = j0 + threadIdx.x;
    if (i < d.tq && j < len)
        s[((size_t)b * d.tq + i) * d.tk + j] = acc;
}

/* The warp's sum of x in a butterfly: every lane ends with the same bits (each step adds
 * the same two values at both lanes of a pair). */
__device__ static double warp_sum(double x)
{
    for (int w = 16; w > 0; w /= 2)
        x += __shfl_xor_sync(FULL_MASK, x, w);
    return x;
}

/* a (B·tq, tk) in place, a warp per row: the scores below the length to their softmax
 * (max, exp and sum in double as attend), 0 past it. */
__global__ static void attn_softmax_kernel(struct pb_cuda_attn_dims d, float *a)
{
    int lane = threadIdx.x % 32;
    long long row = (long long)blockIdx.x * (ROW_THREADS / 32) + threadIdx.x / 32;
    if (row >= (long long)d.batch * d.tq)  /* whole warps */
        return;
    int len = pb_cu_attn_len(&d, (int)(row / d.tq));
    float *ar = a + row * d.tk;
    float mx = -INFINITY;
    for (int j = lane; j < len; j += 32)
        mx = ar[j] > mx ? ar[j] : mx;
    for (int w = 16; w > 0; w /= 2) {
        float o = __shfl_xor_sync(FULL_MASK, mx, w);
        mx = o > mx ? o : mx;
    }
    double sum = 0;
    for (int j = lane; j < len; j += 32)
        sum += exp((double)ar[j] - mx);
    sum = warp_sum(sum);
    for (int j = lane; j < d.tk; j += 32)
        ar[j] = j < len ? (float)(exp((double)ar[j] - mx) / sum) : 0.0f;
}

/* ds (B·tq, tk) in place, a warp per row: da to a·(da − Σ_j a·da), 0 past the length. */
__global__ static void attn_softmax_bwd_kernel(struct pb_cuda_attn_dims d, const float *a,
                                               float *ds)
{
    int lane = threadIdx.x % 32;
    long long row = (long long)blockIdx.x * (ROW_THREADS / 32) + threadIdx.x / 32;
    if (row >= (long long)d.batch * d.tq)
        return;
    int len = pb_cu_attn_len(&d, (int)(row / d.tq));
    const float *ar = a + row * d.tk;
    float *dr = ds + row * d.tk;
    double dot = 0;
    for (int j = lane; j < len; j += 32)
        dot += (double)ar[j] * dr[j];
    dot = warp_sum(dot);
    for (int j = lane; j < d.tk; j += 32)
        dr[j] = j < len ? (float)(ar[j] * (dr[j] - dot)) : 0.0f;
}

/* dpq (B·tq, U): query row blockIdx.x, a thread per unit (pb_cu_attn_dpq_at). */
__global__ static void attn_dpq_kernel(struct pb_cuda_attn_dims d, const float *pq,
                                       const float *pk, const float *bias, const float *vh,
                                       const float *ds, float *dpq)
{
    int n = blockIdx.y * blockDim.x + threadIdx.x;
    if (n < d.units)
        pb_cu_attn_dpq_at(&d, pq, pk, bias, vh, ds, dpq, blockIdx.x, n);
}

/* dpk and gvp (B·tk, U): key row blockIdx.x, a thread per unit (pb_cu_attn_dpk_at). */
__global__ static void attn_dpk_kernel(struct pb_cuda_attn_dims d, const float *pq,
                                       const float *pk, const float *bias, const float *vh,
                                       const float *ds, float *dpk, float *gvp)
{
    int n = blockIdx.y * blockDim.x + threadIdx.x;
    if (n < d.units)
        pb_cu_attn_dpk_at(&d, pq, pk, bias, vh, ds, dpk, gvp, blockIdx.x, n);
}

/* lengths (B): one outside [1, tk] raises the flag (the kernels above clamp it meanwhile);
 * a thread per source */
__global__ static void attn_lengths_kernel(const int32_t *lengths, int batch, int tk,
                                           struct pb_cuda_flag_ref flag)
{
    int b = (int)pb_cu_index();
    if (b < batch && (lengths[b] < 1 || lengths[b] > tk))
        pb_cu_raise(flag, PB_CUDA_FLAG_ATTN_LEN, tk, (unsigned)b, (uint32_t)lengths[b]);
}

/* ---- launch helpers ---- */

void pb_cuda_attn_check_lengths(struct pb_backend *be, const struct pb_cuda_attn_dims *d)
{
    struct pb_cuda_flag_ref flag;
    if (!d->lengths || d->batch <= 0 || !pb_cuda_flag_arm(be, &flag))
        return;
    attn_lengths_kernel<<<pb_cu_blocks((size_t)d->batch), PB_CU_BLOCK, 0,
                          pb_cuda_of(be)->stream>>>(d->lengths, d->batch, d->tk, flag);
    PB_CUDA(be, cudaGetLastError());
}

static unsigned pow2_at_least(int n, unsigned cap)
{
    unsigned p = 1;
    while (p < (unsigned)n && p < cap)
        p *= 2;
    return p;
}

void pb_cuda_attn_vhat(struct pb_backend *be, int units, const float *v, const float *g, float *vh)
{
    attn_vhat_kernel<<<1, RED_THREADS, 0, pb_cuda_of(be)->stream>>>(units, v, g, vh);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_attn_vgrad(struct pb_backend *be, int units, const float *v, const float *g,
                        const float *dvhat, float *gv, float *gg)
{
    attn_vgrad_kernel<<<1, RED_THREADS, 0, pb_cuda_of(be)->stream>>>(units, v, g, dvhat, gv, gg);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_attn_score(struct pb_backend *be, const struct pb_cuda_attn_dims *d,
                        const float *pq, const float *pk, const float *bias, const float *vh,
                        float *s)
{
    if (d->batch <= 0 || d->tq <= 0 || d->tk <= 0)
        return;
    unsigned tj = pow2_at_least(d->tk, SCORE_TJ), ti = pow2_at_least(d->tq, SCORE_TI);
    dim3 block(tj, ti);
    dim3 grid((d->tk + tj - 1) / tj, (d->tq + ti - 1) / ti, d->batch);
    attn_score_kernel<<<grid, block, 0, pb_cuda_of(be)->stream>>>(*d, pq, pk, bias, vh, s);
    PB_CUDA(be, cudaGetLastError());
}

static unsigned row_blocks(const struct pb_cuda_attn_dims *d)
{
    size_t rows = (size_t)d->batch * d->tq, per = ROW_THREADS / 32;
    return (unsigned)((rows + per - 1) / per);
}

void pb_cuda_attn_softmax(struct pb_backend *be, const struct pb_cuda_attn_dims *d, float *a)
{
    if (row_blocks(d) == 0)
        return;
    attn_softmax_kernel<<<row_blocks(d), ROW_THREADS, 0, pb_cuda_of(be)->stream>>>(*d, a);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_attn_softmax_bwd(struct pb_backend *be, const struct pb_cuda_attn_dims *d,
                              const float *a, float *ds)
{
    if (row_blocks(d) == 0)
        return;
    attn_softmax_bwd_kernel<<<row_blocks(d), ROW_THREADS, 0, pb_cuda_of(be)->stream>>>(*d, a, ds);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_attn_dpq(struct pb_backend *be, const struct pb_cuda_attn_dims *d, const float *pq,
                      const float *pk, const float *bias, const float *vh, const float *ds,
                      float *dpq)
{
    size_t rows = (size_t)d->batch * d->tq;
    if (rows == 0 || d->units <= 0)
        return;
    dim3 grid((unsigned)rows, (d->units + GRAD_THREADS - 1) / GRAD_THREADS);
    attn_dpq_kernel<<<grid, GRAD_THREADS, 0, pb_cuda_of(be)->stream>>>(*d, pq, pk, bias, vh, ds,
                                                                        dpq);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_attn_dpk(struct pb_backend *be, const struct pb_cuda_attn_dims *d, const float *pq,
                      const float *pk, const float *bias, const float *vh, const float *ds,
                      float *dpk, float *gvp)
{
    size_t rows = (size_t)d->batch * d->tk;
    if (rows == 0 || d->units <= 0)
        return;
    dim3 grid((unsigned)rows, (d->units + GRAD_THREADS - 1) / GRAD_THREADS);
    attn_dpk_kernel<<<grid, GRAD_THREADS, 0, pb_cuda_of(be)->stream>>>(*d, pq, pk, bias, vh, ds,
                                                                        dpk, gvp);
    PB_CUDA(be, cudaGetLastError());
}
