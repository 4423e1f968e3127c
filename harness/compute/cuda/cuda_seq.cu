/* harness/compute/cuda/cuda_seq.cu — embedding lookup and backward, the mean over time masked
 * by length and its backward, the gather of steps in or against time order. Reference:
 * cpu_seq.c; index math and values are kernels/seq.h's, the CPU's: every result its bits.
 * The embedding backward sums each table element over the tokens in order, as the CPU does
 * (deterministic, no atomics); a bad token or length raises the instance's flag, which
 * pb_cuda_check_flags reports at sync. */
#include "harness/compute/cuda/cuda_kernels.cuh"
#include "harness/compute/kernels/seq.h"

/* embedding backward: columns per block (one per thread) and tokens per shared tile */
#define EMB_COLS 128
#define EMB_TILE 1024

/* tok [n] (floats), table [vocab, dim], y [n, dim]: y[i] = table[tok[i]], one thread per
 * element of y; a bad token raises the flag (from its row's column 0) and its row is not
 * written */
static __global__ void embedding_fwd_kernel(const float *tok, size_t n, const float *table,
                                            int vocab, int dim, float *y,
                                            struct pb_cuda_flag_ref flag)
{
    size_t e = pb_cu_index();
    if (e >= n * (size_t)dim)
        return;
    size_t i = e / (size_t)dim;
    int j = (int)(e - i * (size_t)dim);
    long r = pb_k_token_row(tok[i], vocab);
    if (r < 0) {
        if (j == 0)
            pb_cu_raise(flag, PB_CUDA_FLAG_TOKEN, vocab, (unsigned)i, __float_as_uint(tok[i]));
        return;
    }
    y[e] = table[(size_t)r * (size_t)dim + j];
}

/* tok [n], dy [n, dim], dtable_acc [vocab, dim]: dtable_acc[tok[i]] += dy[i] for tokens
 * not `padding`. Block (x, y) owns columns x·EMB_COLS + threadIdx.x and the table rows
 * r ≡ y (mod gridDim.y); each thread walks all tokens in order (a shared tile at a time)
 * and adds those of its rows: every element's sum in token order, the CPU's. Bad tokens
 * raise the flag (blocks (0, y) only) and are skipped. */
static __global__ void embedding_bwd_kernel(const float *tok, size_t n, const float *dy,
                                            int vocab, int dim, int padding, float *dtable_acc,
                                            struct pb_cuda_flag_ref flag)
{
    __shared__ int rows[EMB_TILE];
    int j = blockIdx.x * EMB_COLS + threadIdx.x;
    int groups = gridDim.y, group = blockIdx.y;
    for (size_t i0 = 0; i0 < n; i0 += EMB_TILE) {
        size_t m = n - i0 < EMB_TILE ? n - i0 : EMB_TILE;
        __syncthreads();  /* the previous tile is read */
        for (size_t k = threadIdx.x; k < m; k += EMB_COLS) {
            long r = pb_k_token_row(tok[i0 + k], vocab);
            if (r < 0 && blockIdx.x == 0)
                pb_cu_raise(flag, PB_CUDA_FLAG_TOKEN, vocab, (unsigned)(i0 + k),
                            __float_as_uint(tok[i0 + k]));
            rows[k] = r < 0 || r == padding || r % groups != group ? -1 : (int)r;
        }
        __syncthreads();
        if (j >= dim)
            continue;
        for (size_t k = 0; k < m; k++) {
            int r = rows[k];
            if (r >= 0)  /* column j of the CPU's row add */
                pb_k_scatter_add_row(dtable_acc + (size_t)r * dim, dy + (i0 + k) * dim, j, j + 1);
        }
    }
}

/* lengths [batch] (NULL: steps each, unchecked as on the CPU): sequence b's length, or −1
 * after raising the flag (code) when it is outside [1, steps] */
static __device__ __forceinline__ int seq_len(const int32_t *lengths, int b, int steps, int code,
                                              struct pb_cuda_flag_ref flag)
{
    int len = pb_k_seq_len(lengths, b, steps);
    if (lengths && (len < 1 || len > steps)) {
        pb_cu_raise(flag, code, steps, (unsigned)b, (uint32_t)len);
        return -1;
    }
    return len;
}

/* x [batch, steps, f], y [batch, f]: y[b, j] = mean over t < len_b of x[b, t, j], summed in
 * order in double; one thread per element of y */
static __global__ void seq_mean_fwd_kernel(const float *x, const int32_t *lengths, int batch,
                                           int steps, int f, float *y,
                                           struct pb_cuda_flag_ref flag)
{
    size_t e = pb_cu_index();
    if (e >= (size_t)batch * f)
        return;
    int b = (int)(e / f), j = (int)(e % f);
    int len = seq_len(lengths, b, steps, PB_CUDA_FLAG_SEQ_MEAN, flag);
    if (len < 0)
        return;
    double s = 0;
    for (int t = 0; t < len; t++)
        s += x[pb_k_seq_row(b, steps, t) * f + j];
    y[e] = pb_k_seq_mean(s, len);
}

/* dy [batch, f], dx [batch, steps, f]: dx[b, t, j] = dy[b, j] / len_b for t < len_b, else
 * 0; one thread per element of dx */
static __global__ void seq_mean_bwd_kernel(const float *dy, const int32_t *lengths, int batch,
                                           int steps, int f, float *dx,
                                           struct pb_cuda_flag_ref flag)
{
    size_t e = pb_cu_index();
    if (e >= (size_t)batch * steps * f)
        return;
    size_t row = e / f;
    int j = (int)(e - row * f), b = (int)(row / steps), t = (int)(row % steps);
    int len = seq_len(lengths, b, steps, PB_CUDA_FLAG_SEQ_MEAN, flag);
    if (len < 0)
        return;
    dx[e] = pb_k_seq_mean_bwd(dy[(size_t)b * f + j], t, len);
}

/* x rows x_stride apart, y rows y_stride apart ([batch, steps] rows each): y[b, t, :f] =
 * x[b, reverse ? len_b − 1 − t : t, :f] for t < len_b, else 0; one thread per element of
 * y's f columns */
static __global__ void seq_gather_kernel(const float *x, int x_stride, const int32_t *lengths,
                                         int batch, int steps, int f, bool reverse, float *y,
                                         int y_stride, struct pb_cuda_flag_ref flag)
{
    size_t e = pb_cu_index();
    if (e >= (size_t)batch * steps * f)
        return;
    size_t row = e / f;
    int j = (int)(e - row * f), b = (int)(row / steps), t = (int)(row % steps);
    int len = seq_len(lengths, b, steps, PB_CUDA_FLAG_SEQ_GATHER, flag);
    if (len < 0)
        return;
    int src_t = t < len ? pb_k_seq_src_step(t, len, reverse) : 0;  /* not read past len */
    const float *src = x + pb_k_seq_row(b, steps, src_t) * (size_t)x_stride;
    y[pb_k_seq_row(b, steps, t) * (size_t)y_stride + j] = pb_k_seq_gather(src, j, t, len);
}

void pb_cuda_embedding_fwd(struct pb_backend *be, const float *tok, size_t n, const float *table,
                           int vocab, int dim, float *y)
{
    struct pb_cuda_flag_ref flag;
    if (!pb_cuda_begin(be) || n == 0 || dim == 0 || !pb_cuda_flag_arm(be, &flag))
        return;
    embedding_fwd_kernel<<<pb_cu_blocks(n * (size_t)dim), PB_CU_BLOCK, 0,
                           pb_cuda_of(be)->stream>>>(tok, n, table, vocab, dim, y, flag);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_embedding_bwd(struct pb_backend *be, const float *tok, size_t n, const float *dy,
                           int vocab, int dim, int padding, float *dtable_acc)
{
    struct pb_cuda_flag_ref flag;
    if (!pb_cuda_begin(be) || n == 0 || dim == 0 || !pb_cuda_flag_arm(be, &flag))
        return;
    PB_CHECK(vocab > 0);
    /* row groups: enough blocks to fill a large GPU (≥ 1024 with the column blocks), no
     * more groups than rows, at most 256 (each block reads every token) */
    unsigned cols = (unsigned)((dim + EMB_COLS - 1) / EMB_COLS);
    unsigned groups = (1024 + cols - 1) / cols;
    groups = groups > 256 ? 256 : groups;
    groups = groups > (unsigned)vocab ? (unsigned)vocab : groups;
    embedding_bwd_kernel<<<dim3(cols, groups), EMB_COLS, 0, pb_cuda_of(be)->stream>>>(
        tok, n, dy, vocab, dim, padding, dtable_acc, flag);
    PB_CUDA(be, cudaGetLastError());
}

/* the flag for a kernel that checks lengths (none to check when NULL: every sequence
 * has all the steps) */
static bool arm_lengths(struct pb_backend *be, const int32_t *lengths,
                        struct pb_cuda_flag_ref *flag)
{
    *flag = (struct pb_cuda_flag_ref){NULL, 0};
    return !lengths || pb_cuda_flag_arm(be, flag);
}

void pb_cuda_seq_mean_fwd(struct pb_backend *be, const float *x, const int32_t *lengths, int batch,
                          int steps, int f, float *y)
{
    struct pb_cuda_flag_ref flag;
    size_t n = (size_t)batch * f;
    if (!pb_cuda_begin(be) || n == 0 || !arm_lengths(be, lengths, &flag))
        return;
    seq_mean_fwd_kernel<<<pb_cu_blocks(n), PB_CU_BLOCK, 0, pb_cuda_of(be)->stream>>>(
        x, lengths, batch, steps, f, y, flag);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_seq_mean_bwd(struct pb_backend *be, const float *dy, const int32_t *lengths,
                          int batch, int steps, int f, float *dx)
{
    struct pb_cuda_flag_ref flag;
    size_t n = (size_t)batch * steps * f;
    if (!pb_cuda_begin(be) || n == 0 || !arm_lengths(be, lengths, &flag))
        return;
    seq_mean_bwd_kernel<<<pb_cu_blocks(n), PB_CU_BLOCK, 0, pb_cuda_of(be)->stream>>>(
        dy, lengths, batch, steps, f, dx, flag);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_seq_gather(struct pb_backend *be, const float *x, int x_stride,
                        const int32_t *lengths, int batch, int steps, int f, bool reverse,
                        float *y, int y_stride)
{
    struct pb_cuda_flag_ref flag;
    size_t n = (size_t)batch * steps * f;
    if (!pb_cuda_begin(be) || n == 0 || !arm_lengths(be, lengths, &flag))
        return;
    seq_gather_kernel<<<pb_cu_blocks(n), PB_CU_BLOCK, 0, pb_cuda_of(be)->stream>>>(
        x, x_stride, lengths, batch, steps, f, reverse, y, y_stride, flag);
    PB_CUDA(be, cudaGetLastError());
}
