/* harness/compute/cuda/cuda_rnn.h — what the LSTM (cuda_lstm.c) and the attention
 * (cuda_attention.c) share: row-major cuBLAS products on the instance's handle, column sums
 * as a product with a ones vector (a fixed order: no atomics), per-call scratch, and the
 * launch helpers of their kernels (cuda_lstm.cu, cuda_attention.cu). Row-major as the CPU
 * backend's sgemm calls (cpu_lstm.c, cpu_attention.c), so that each call reads as its
 * CPU twin. Included from .c files (gcc) and .cu files (nvcc). */
#ifndef PB_CUDA_RNN_H
#define PB_CUDA_RNN_H

#include "harness/compute/cuda/cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- host helpers (cuda_rnn.c); each returns false with the instance failed ---- */

/* C[m, n] = alpha·op(A)·op(B) + beta·C, row-major (op(A) [m, k], op(B) [k, n]). */
bool pb_cuda_rnn_gemm(struct pb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                      const float *a, int lda, const float *b, int ldb, float beta, float *c,
                      int ldc);
/* `count` such products, the i-th on a + i·sa, b + i·sb, c + i·sc (floats). */
bool pb_cuda_rnn_gemm_batched(struct pb_backend *be, bool ta, bool tb, int m, int n, int k,
                              float alpha, const float *a, int lda, long long sa, const float *b,
                              int ldb, long long sb, float beta, float *c, int ldc, long long sc,
                              int count);
/* y[cols] = Σ_r x[r, :] + beta·y for x [rows, cols] row-major, ones [rows] all 1: the bias
 * gradients (CPU: pb_cpu_bias_grad). */
bool pb_cuda_rnn_colsum(struct pb_backend *be, const float *x, int rows, int cols,
                        const float *ones, float beta, float *y);
/* bytes of PB_MEM_SCRATCH for this call (free with pb_backend_free at the op's end: the
 * stream orders a later reuse); NULL with the instance failed when out of memory. */
float *pb_cuda_rnn_scratch(struct pb_backend *be, size_t bytes);
/* floats rounded up to 64 (256 bytes): the pieces of a workspace start aligned, so that a
 * product reads and writes them with the alignment cuBLAS chose its kernel for */
size_t pb_cuda_rnn_align(size_t floats);

/* ---- cuda_lstm.cu: the LSTM's pointwise cell, one step (reference: cpu_lstm.c's
 * cell_fwd and cell_bwd, element for element) ---- */

/* The forward cell's operands; B batch, T steps, H hidden, G = 4H, row r = b·T + t. */
struct pb_cuda_lstm_cell {
    int batch, steps, hidden;
    float *gates;               /* (B, T, G): pre-activations in, activations i, f, g, o out */
    float *cell;                /* (B, T, H): c_t */
    float *y;                   /* (B, T, H): h_t */
    const float *b_ih, *b_hh;   /* (G) each */
    const float *c0;            /* (B, H) c_{−1}; NULL: zeros */
    float *h_last, *c_last;     /* (B, H) h and c of step T − 1; NULL: not wanted */
};
void pb_cuda_lstm_cell_fwd(struct pb_backend *be, const struct pb_cuda_lstm_cell *p, int t);

/* The backward cell's operands. */
struct pb_cuda_lstm_cell_grad {
    int batch, steps, hidden;
    const float *gates;         /* (B, T, G) the forward's activations */
    const float *cell;          /* (B, T, H) */
    const float *dy;            /* (B, T, H) */
    const float *dh_next;       /* (B, H) dA_{t+1}·W_hh, read for t < T − 1 */
    float *dc;                  /* (B, H) dc_{t+1}·f_{t+1} in, dc_t·f_t out (zeros at T − 1) */
    float *da;                  /* (B, T, G) the pre-activations' gradient, rows of t written */
};
void pb_cuda_lstm_cell_bwd(struct pb_backend *be, const struct pb_cuda_lstm_cell_grad *p, int t);

/* p[i] = 1 for i < n: the ones vector of pb_cuda_rnn_colsum. */
void pb_cuda_rnn_ones(struct pb_backend *be, float *p, size_t n);

/* ---- cuda_attention.cu: the attention's kernels (reference: cpu_attention.c) ---- */

/* Sizes and lengths; lengths (B) device (NULL: all tk), each clamped to [1, tk] by the
 * kernels, so that a bad one reads nothing out of bounds before the sync reports it
 * (pb_cuda_attn_check_lengths). */
struct pb_cuda_attn_dims {
    int batch, tq, tk, units;
    const int32_t *lengths;
};
/* A length outside [1, tk] raises the instance's flag: the sync after fails the instance
 * with the CPU's message (cpu_attention.c check_lengths); nothing to check without lengths. */
void pb_cuda_attn_check_lengths(struct pb_backend *be, const struct pb_cuda_attn_dims *d);
/* vh (U) = g·v/‖v‖ (‖v‖ in double, as normalised_v) from w's v (U) and g (1). */
void pb_cuda_attn_vhat(struct pb_backend *be, int units, const float *v, const float *g, float *vh);
/* s (B·tq, tk) = v̂·tanh((pq + pk) + bias) for keys below the length (others untouched), pq
 * (B·tq, U), pk (B·tk, U), bias and vh (U); each score a sum over n in order. */
void pb_cuda_attn_score(struct pb_backend *be, const struct pb_cuda_attn_dims *d,
                        const float *pq, const float *pk, const float *bias, const float *vh,
                        float *s);
/* In place over a (B·tq, tk): the scores' softmax over the keys below the length (exp
 * and sum in double as attend), 0 past it. */
void pb_cuda_attn_softmax(struct pb_backend *be, const struct pb_cuda_attn_dims *d, float *a);
/* In place over ds (B·tq, tk): da in, the scores' gradient a·(da − Σ_j a·da) out, 0 past
 * the length; a (B·tq, tk). */
void pb_cuda_attn_softmax_bwd(struct pb_backend *be, const struct pb_cuda_attn_dims *d,
                              const float *a, float *ds);
/* dpq (B·tq, U) = Σ_j ds·v̂·(1 − tanh²) over the keys below the length, j in order. */
void pb_cuda_attn_dpq(struct pb_backend *be, const struct pb_cuda_attn_dims *d, const float *pq,
                      const float *pk, const float *bias, const float *vh, const float *ds,
                      float *dpq);
/* dpk (B·tk, U) = Σ_i ds·v̂·(1 − tanh²) and gvp (B·tk, U) = Σ_i ds·tanh, i in order; 0 at
 * keys past the length. */
void pb_cuda_attn_dpk(struct pb_backend *be, const struct pb_cuda_attn_dims *d, const float *pq,
                      const float *pk, const float *bias, const float *vh, const float *ds,
                      float *dpk, float *gvp);
/* v̂ = g·v/‖v‖'s backward given dvhat (U): dg += u·dv̂, dv += (g/‖v‖)(dv̂ − u(u·dv̂)), u =
 * v/‖v‖ (double, as pb_cpu_attn_bwd); gv (U) and gg (1) accumulated. */
void pb_cuda_attn_vgrad(struct pb_backend *be, int units, const float *v, const float *g,
                        const float *dvhat, float *gv, float *gg);

#ifdef __cplusplus
}
#endif

#endif
