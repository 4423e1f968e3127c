/* harness/compute/cuda/cuda_lstm.c — the CUDA backend's LSTM ops (backend.h's
 * lstm_workspace, lstm_fwd, lstm_bwd, lstm_bwd_keep, lstm_bwd_data, lstm_bwd_weights):
 * cuBLAS products and a pointwise cell kernel per step (cuda_lstm.cu). Reference:
 * cpu_lstm.c (pb_cpu_lstm_fwd, pb_cpu_lstm_bwd), whose algorithm this is, product for
 * product and element for element.
 *
 * Design: own kernels, not cuDNN's RNN v8 API (cudnnRNNForward, cudnnRNNBackwardData_v8,
 * cudnnRNNBackwardWeights_v8). The cell kernels run the CPU's gate math on the same shared
 * tanh (harness/compute/kernels/tanh.h), so a step's activations equal the CPU's bit for bit
 * given equal pre-activations, and the weights stay in PyTorch's flat order, where cuDNN
 * packs its own and each call would gather them from, and scatter the gradients back to,
 * that order through cudnnGetRNNWeightParams. cuDNN's persistent and fused kernels may well
 * be faster at large batch; the two were not measured against each other (no GPU where this
 * was written): a measurement on a GPU may reverse the choice.
 *
 * Shapes (B batch, T steps, I input, H hidden, G = 4H; row r = b·T + t):
 *   x (B, T, I), y and dy (B, T, H), dx (B, T, I);
 *   w: W_ih (G, I), W_hh (G, H), b_ih (G), b_hh (G), gates i, f, g, o (PyTorch's order);
 *   workspace: the activated gates (B, T, G), then (from a 256-byte boundary) the cell
 *   states c (B, T, H).
 * Forward: A = x·W_ihᵀ for all steps in one product; per step t the rows of t gain
 *   h_{t−1}·W_hhᵀ (t > 0, or h0 given; a product of B rows with leading dimension T·G) and
 *   the cell kernel acts on them.
 * Backward, t = T−1 … 0: dh_next = dA_{t+1}·W_hh (a product), the cell kernel; then
 *   dx = dA·W_ih (the input-gradient pass, lstm_bwd_data, which keeps dA (B, T, G)); the
 *   weight pass (lstm_bwd_weights): dW_ih += dAᵀ·x, dW_hh += dAᵀ·h_prev (h_prev = y one
 *   step back, zeros at t = 0: one strided copy) with beta = 1, and the bias gradient
 *   Σ_r dA (a product with ones) added to both b_ih's and b_hh's. lstm_bwd runs the two
 *   passes, dA in scratch.
 * Products reduce in cuBLAS's order, not oneDNN's: the results are the CPU's within a
 * tolerance, not in its bits; for one shape they are deterministic (no atomics anywhere). */
#include "harness/compute/cuda/cuda_rnn.h"

static size_t rows(const struct pb_lstm_desc *d)
{
    return (size_t)d->batch * d->steps;
}

/* floats of the gates in the workspace, the cell states following */
static size_t gates_floats(const struct pb_lstm_desc *d)
{
    return pb_cuda_rnn_align(rows(d) * 4 * (size_t)d->hidden);
}

size_t pb_cuda_lstm_workspace(struct pb_backend *be, const struct pb_lstm_desc *d)
{
    (void)be;
    return (gates_floats(d) + rows(d) * (size_t)d->hidden) * sizeof(float);
}

void pb_cuda_lstm_fwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                      const float *w, float *y, void *ws, const struct pb_lstm_states *st)
{
    if (!pb_cuda_begin(be))
        return;
    PB_CHECK(!st || (!st->h0 == !st->c0 && !st->h_last == !st->c_last));
    PB_CHECK(!ws || !st || !st->h0);  /* a training forward starts from zeros */
    int B = d->batch, T = d->steps, I = d->input, H = d->hidden, G = 4 * H, R = (int)rows(d);
    struct pb_lstm_weights p = pb_lstm_weights_split(d, w);
    const float *h0 = st ? st->h0 : NULL;
    /* inference: the same kernels (training's bits), gates and cells in scratch */
    float *tmp = ws ? NULL : pb_cuda_rnn_scratch(be, pb_cuda_lstm_workspace(be, d));
    if (!ws && !tmp)
        return;
    float *gates = ws ? ws : tmp;
    struct pb_cuda_lstm_cell cell = {
        .batch = B, .steps = T, .hidden = H, .gates = gates, .cell = gates + gates_floats(d),
        .y = y, .b_ih = p.b_ih, .b_hh = p.b_hh, .c0 = st ? st->c0 : NULL,
        .h_last = st ? st->h_last : NULL, .c_last = st ? st->c_last : NULL,
    };
    /* gates (R, G) = x (R, I)·W_ihᵀ */
    bool ok = pb_cuda_rnn_gemm(be, false, true, R, G, I, 1.0f, x, I, p.w_ih, I, 0.0f, gates, G);
    for (int t = 0; ok && t < T; t++) {
        if (t > 0 || h0) {  /* rows b·T + t += h_{t−1} (B, H)·W_hhᵀ */
            const float *hp = t ? y + (size_t)(t - 1) * H : h0;
            int ldh = t ? T * H : H;
            ok = pb_cuda_rnn_gemm(be, false, true, B, G, H, 1.0f, hp, ldh, p.w_hh, H, 1.0f,
                                  gates + (size_t)t * G, T * G);
        }
        if (ok)
            pb_cuda_lstm_cell_fwd(be, &cell, t);
        ok = ok && !be->failed;
    }
    if (tmp)
        pb_backend_free(be, tmp);
}

size_t pb_cuda_lstm_bwd_keep(struct pb_backend *be, const struct pb_lstm_desc *d)
{
    (void)be;
    return rows(d) * 4 * (size_t)d->hidden * sizeof(float);
}

/* The input-gradient pass: the recurrence into dA (R, G), kept, then dx = dA·W_ih. */
void pb_cuda_lstm_bwd_data(struct pb_backend *be, const struct pb_lstm_desc *d, const float *w,
                           const float *dy, const void *ws, float *dx, void *keep)
{
    if (!pb_cuda_begin(be))
        return;
    int B = d->batch, T = d->steps, I = d->input, H = d->hidden, G = 4 * H, R = (int)rows(d);
    struct pb_lstm_weights p = pb_lstm_weights_split(d, w);
    const float *act = ws, *cellst = act + gates_floats(d);
    float *da = keep;
    /* dh_next and dc (B, H), each aligned */
    size_t o_dc = pb_cuda_rnn_align((size_t)B * H);
    float *dh = pb_cuda_rnn_scratch(be, (o_dc + (size_t)B * H) * sizeof(float));
    if (!dh)
        return;
    float *dc = dh + o_dc;
    cudaStream_t s = pb_cuda_of(be)->stream;
    struct pb_cuda_lstm_cell_grad cg = {
        .batch = B, .steps = T, .hidden = H, .gates = act, .cell = cellst, .dy = dy,
        .dh_next = dh, .dc = dc, .da = da,
    };
    bool ok = PB_CUDA(be, cudaMemsetAsync(dc, 0, (size_t)B * H * sizeof(float), s));
    for (int t = T - 1; ok && t >= 0; t--) {
        if (t < T - 1)  /* dh_next (B, H) = dA_{t+1} (B, G; rows b·T + t + 1)·W_hh (G, H) */
            ok = pb_cuda_rnn_gemm(be, false, false, B, H, G, 1.0f, da + (size_t)(t + 1) * G, T * G,
                                  p.w_hh, H, 0.0f, dh, H);
        if (ok)
            pb_cuda_lstm_cell_bwd(be, &cg, t);
        ok = ok && !be->failed;
    }
    /* dx (R, I) = dA·W_ih */
    if (dx)
        ok = ok && pb_cuda_rnn_gemm(be, false, false, R, I, G, 1.0f, da, G, p.w_ih, I, 0.0f, dx, I);
    pb_backend_free(be, dh);
}

/* The weight pass: dW_ih += dAᵀ·x, dW_hh += dAᵀ·h_prev, Σ_r dA into both biases'. */
void pb_cuda_lstm_bwd_weights(struct pb_backend *be, const struct pb_lstm_desc *d,
                              const float *x, const float *y, const void *keep, float *dw_acc)
{
    if (!pb_cuda_begin(be))
        return;
    int B = d->batch, T = d->steps, I = d->input, H = d->hidden, G = 4 * H, R = (int)rows(d);
    struct pb_lstm_weights gw = pb_lstm_weights_split(d, dw_acc);
    const float *da = keep;
    /* h_prev (R, H); ones (R), aligned */
    size_t o_one = pb_cuda_rnn_align(rows(d) * H);
    float *hprev = pb_cuda_rnn_scratch(be, (o_one + rows(d)) * sizeof(float));
    if (!hprev)
        return;
    float *ones = hprev + o_one;
    cudaStream_t s = pb_cuda_of(be)->stream;
    /* h_prev: row b·T + t is y's row b·T + t − 1 for t > 0 (a sequence's first T − 1 rows
     * one row down), zeros at t = 0 */
    size_t hrow = (size_t)H * sizeof(float);
    bool ok = PB_CUDA(be, cudaMemset2DAsync(hprev, T * hrow, 0, hrow, B, s));
    if (T > 1)
        ok = ok && PB_CUDA(be, cudaMemcpy2DAsync(hprev + H, T * hrow, y, T * hrow, (T - 1) * hrow,
                                                  B, cudaMemcpyDeviceToDevice, s));
    /* dW_ih (G, I) += dAᵀ·x; dW_hh (G, H) += dAᵀ·h_prev */
    ok = ok && pb_cuda_rnn_gemm(be, true, false, G, I, R, 1.0f, da, G, x, I, 1.0f, gw.w_ih, I);
    ok = ok && pb_cuda_rnn_gemm(be, true, false, G, H, R, 1.0f, da, G, hprev, H, 1.0f, gw.w_hh, H);
    /* the bias gradient Σ_r dA, into both biases' */
    if (ok)
        pb_cuda_rnn_ones(be, ones, rows(d));
    ok = ok && !be->failed;
    ok = ok && pb_cuda_rnn_colsum(be, da, R, G, ones, 1.0f, gw.b_ih);
    ok = ok && pb_cuda_rnn_colsum(be, da, R, G, ones, 1.0f, gw.b_hh);
    pb_backend_free(be, hprev);
}

/* The fused backward: the two passes with dA in scratch. */
void pb_cuda_lstm_bwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                      const float *w, const float *y, const float *dy, const void *ws, float *dx,
                      float *dw_acc)
{
    if (!pb_cuda_begin(be))
        return;
    float *keep = pb_cuda_rnn_scratch(be, pb_cuda_lstm_bwd_keep(be, d));
    if (!keep)
        return;
    pb_cuda_lstm_bwd_data(be, d, w, dy, ws, dx, keep);
    pb_cuda_lstm_bwd_weights(be, d, x, y, keep, dw_acc);
    pb_backend_free(be, keep);
}
