/* harness/compute/cuda/cuda_lstm.cu — the LSTM's pointwise cell on the GPU, one step, a
 * thread per (row, hidden unit), and the ones vector of the column sums (cuda_rnn.h).
 * Reference: cpu_lstm.c's cell_fwd and cell_bwd, whose math the per-element bodies
 * (cuda_rnn_kernels.h) are, on the shared tanh and sigmoid; compiled with -fmad=false, so
 * the bits equal the CPU's for equal inputs. */
#include "harness/compute/cuda/cuda_rnn_kernels.h"

enum { CELL_THREADS = 256 };

/* One step t of the forward cell (p: cuda_rnn.h's struct pb_cuda_lstm_cell), a thread per
 * element (b, j) of B × H: gates (B, T, G) row b·T + t from pre-activations to
 * activations, cell and y (B, T, H) at that row. */
__global__ static void lstm_cell_fwd_kernel(struct pb_cuda_lstm_cell p, int t)
{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < (long long)p.batch * p.hidden)
        pb_cu_lstm_cell_fwd_at(&p, t, (int)(idx / p.hidden), (int)(idx % p.hidden));
}

/* One step t of the backward cell (struct pb_cuda_lstm_cell_grad), element (b, j). */
__global__ static void lstm_cell_bwd_kernel(struct pb_cuda_lstm_cell_grad p, int t)
{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < (long long)p.batch * p.hidden)
        pb_cu_lstm_cell_bwd_at(&p, t, (int)(idx / p.hidden), (int)(idx % p.hidden));
}

// p is (n)
__global__ static void rnn_ones_kernel(float *p, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = 1.0f;
}

void pb_cuda_lstm_cell_fwd(struct pb_backend *be, const struct pb_cuda_lstm_cell *p, int t)
{
    size_t n = (size_t)p->batch * p->hidden;
    if (n == 0)
        return;
    unsigned blocks = (unsigned)((n + CELL_THREADS - 1) / CELL_THREADS);
    lstm_cell_fwd_kernel<<<blocks, CELL_THREADS, 0, pb_cuda_of(be)->stream>>>(*p, t);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_lstm_cell_bwd(struct pb_backend *be, const struct pb_cuda_lstm_cell_grad *p, int t)
{
    size_t n = (size_t)p->batch * p->hidden;
    if (n == 0)
        return;
    unsigned blocks = (unsigned)((n + CELL_THREADS - 1) / CELL_THREADS);
    lstm_cell_bwd_kernel<<<blocks, CELL_THREADS, 0, pb_cuda_of(be)->stream>>>(*p, t);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_rnn_ones(struct pb_backend *be, float *p, size_t n)
{
    if (n == 0)
        return;
    unsigned blocks = (unsigned)((n + CELL_THREADS - 1) / CELL_THREADS);
    rnn_ones_kernel<<<blocks, CELL_THREADS, 0, pb_cuda_of(be)->stream>>>(p, n);
    PB_CUDA(be, cudaGetLastError());
}
