/* harness/compute/cuda/cuda_rnn_kernels.h — the per-element bodies of the LSTM's and the
 * attention's kernels (cuda_lstm.cu, cuda_attention.cu) as PB_KERNEL functions: device code
 * under nvcc, static inline under gcc, where tests/compute/cuda/test_cuda_rnn_host.c runs them over every
 * index against the CPU backend. References: cpu_lstm.c's cell_fwd and cell_bwd,
 * cpu_attention.c's attn_score and attn_bwd_task, expression for expression on the shared
 * tanh (harness/compute/kernels/tanh.h); under nvcc -fmad=false an a·b + c rounds twice, as
 * gcc's ISO C does, and PB_K_FMA is fmaf on the device. */
#ifndef PB_CUDA_RNN_KERNELS_H
#define PB_CUDA_RNN_KERNELS_H

#include "harness/compute/cuda/cuda_rnn.h"
#include "harness/compute/kernels/tanh.h"

/* Forward cell at step t, element (b, j) of B × H (struct pb_cuda_lstm_cell): gates row
 * b·T + t from pre-activations to activations, its c_t and h_t; h_last and c_last at
 * t = T − 1 where wanted. */
PB_KERNEL void pb_cu_lstm_cell_fwd_at(const struct pb_cuda_lstm_cell *p, int t, int b, int j)
{
    int H = p->hidden, G = 4 * H;
    size_t r = (size_t)b * p->steps + t;
    float *a = p->gates + r * G;
    float cp = t ? p->cell[(r - 1) * H + j] : p->c0 ? p->c0[(size_t)b * H + j] : 0.0f;
    float i = pb_k_sigmoidf(a[j] + (p->b_ih[j] + p->b_hh[j]));
    float f = pb_k_sigmoidf(a[H + j] + (p->b_ih[H + j] + p->b_hh[H + j]));
    float g = pb_k_tanhf(a[2 * H + j] + (p->b_ih[2 * H + j] + p->b_hh[2 * H + j]));
    float o = pb_k_sigmoidf(a[3 * H + j] + (p->b_ih[3 * H + j] + p->b_hh[3 * H + j]));
    float cj = f * cp + i * g;
    float hj = o * pb_k_tanhf(cj);
    p->cell[r * H + j] = cj;
    p->y[r * H + j] = hj;
    a[j] = i;
    a[H + j] = f;
    a[2 * H + j] = g;
    a[3 * H + j] = o;
    if (p->h_last && t == p->steps - 1) {
        p->h_last[(size_t)b * H + j] = hj;
        p->c_last[(size_t)b * H + j] = cj;
    }
}

/* Backward cell at step t, element (b, j) (struct pb_cuda_lstm_cell_grad): the four gates'
 * rows of da, dc carried one step back. */
PB_KERNEL void pb_cu_lstm_cell_bwd_at(const struct pb_cuda_lstm_cell_grad *p, int t, int b, int j)
{
    int H = p->hidden, G = 4 * H;
    size_t r = (size_t)b * p->steps + t;
    const float *act = p->gates + r * G;
    float *da = p->da + r * G;
    float i = act[j], f = act[H + j], g = act[2 * H + j], o = act[3 * H + j];
    float cprev = t ? p->cell[(r - 1) * H + j] : 0.0f;
    float dnext = t < p->steps - 1 ? p->dh_next[(size_t)b * H + j] : 0.0f;
    float tc = pb_k_tanhf(p->cell[r * H + j]);
    float dh = p->dy[r * H + j] + dnext;
    float dcj = p->dc[(size_t)b * H + j] + dh * o * (1.0f - tc * tc);
    da[j] = dcj * g * i * (1.0f - i);
    da[H + j] = dcj * cprev * f * (1.0f - f);
    da[2 * H + j] = dcj * i * (1.0f - g * g);
    da[3 * H + j] = dh * tc * o * (1.0f - o);
    p->dc[(size_t)b * H + j] = dcj * f;
}

/* Source b's keys: its length clamped to [1, tk], tk without lengths. */
PB_KERNEL int pb_cu_attn_len(const struct pb_cuda_attn_dims *d, int b)
{
    if (!d->lengths)
        return d->tk;
    int l = d->lengths[b];
    return l < 1 ? 1 : l > d->tk ? d->tk : l;
}

/* One unit's term of a score: acc + v̂_n·tanh((pq_n + pk_n) + bias_n) (attn_score's). */
PB_KERNEL float pb_cu_attn_score_term(float acc, float vh, float q, float k, float bias)
{
    return PB_K_FMA(vh, pb_k_tanhf((q + k) + bias), acc);
}

/* dpq (B·tq, U) at query row r, unit n: Σ_j ds·v̂_n·(1 − t²), t = tanh((pq + pk_j) + bias),
 * over the keys below the length in order (attn_bwd_task's gq). */
PB_KERNEL void pb_cu_attn_dpq_at(const struct pb_cuda_attn_dims *d, const float *pq,
                                 const float *pk, const float *bias, const float *vh,
                                 const float *ds, float *dpq, size_t r, int n)
{
    int U = d->units, b = (int)(r / d->tq), len = pb_cu_attn_len(d, b);
    float q = pq[r * U + n], bn = bias[n], vn = vh[n];
    const float *dsr = ds + r * d->tk, *pkb = pk + (size_t)b * d->tk * U + n;
    float acc = 0.0f;
    for (int j = 0; j < len; j++) {
        float t = pb_k_tanhf((q + pkb[(size_t)j * U]) + bn);
        float g = dsr[j] * vn * PB_K_FMA(-t, t, 1.0f);
        acc += g;
    }
    dpq[r * U + n] = acc;
}

/* dpk and gvp (B·tk, U) at key row r, unit n: Σ_i ds·v̂_n·(1 − t²) and Σ_i ds·t over the
 * source's queries in order; 0 past the length. */
PB_KERNEL void pb_cu_attn_dpk_at(const struct pb_cuda_attn_dims *d, const float *pq,
                                 const float *pk, const float *bias, const float *vh,
                                 const float *ds, float *dpk, float *gvp, size_t r, int n)
{
    int U = d->units, b = (int)(r / d->tk), j = (int)(r % d->tk), len = pb_cu_attn_len(d, b);
    float acc = 0.0f, gv = 0.0f;
    if (j < len) {
        float k = pk[r * U + n], bn = bias[n], vn = vh[n];
        size_t q0 = (size_t)b * d->tq;
        for (int i = 0; i < d->tq; i++) {
            float dsv = ds[(q0 + i) * d->tk + j];
            float t = pb_k_tanhf((pq[(q0 + i) * U + n] + k) + bn);
            float g = dsv * vn * PB_K_FMA(-t, t, 1.0f);
            acc += g;
            gv = PB_K_FMA(dsv, t, gv);
        }
    }
    dpk[r * U + n] = acc;
    gvp[r * U + n] = gv;
}

#endif
