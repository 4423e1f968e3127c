/* harness/compute/cpu/cpu_lstm.c — the CPU backend's LSTM ops (backend.h's
 * lstm_workspace, lstm_fwd, lstm_bwd and its two passes lstm_bwd_data and
 * lstm_bwd_weights): training in C over single-threaded oneDNN sgemm
 * tiles with the gates vectorised; the inference forward (ws = NULL, initial states on
 * request) is the same kernel, so that evaluation gives training's bits.
 *
 * Why not oneDNN's LSTM primitive (bench/lstm_dnnl.c, which the backend ran before):
 * oneDNN 2.6 runs its reference RNN implementation for forward_training and backward on
 * this CPU, which bench_lstm measures at 1.9–2.4× this file's time in forward and
 * 2.6–3.7× in backward at GNMT's paper width and batch 8 (at batch 64 the primitive's
 * forward is the faster, 0.74–0.78×, its backward the slower), and the primitive needs
 * the weights reordered at every call (PyTorch's layout, ldgoi, is unimplemented for
 * it), which dominates a decoder's one-step call.
 *
 * Shapes (backend.h's struct pb_lstm_desc; B batch, T steps, I input, H hidden, G = 4H):
 *   x [B, T, I], y [B, T, H] batch-first, row r = b·T + t;
 *   weights in PyTorch's layout: W_ih [G, I], W_hh [G, H], b_ih [G], b_hh [G], gates
 *   i, f, g, o;
 *   workspace: the activated gates [B, T, G] (i, f, g, o per row), then the cell states c
 *   [B, T, H].
 * Forward: A = x·W_ihᵀ for every step in one product, then per step t the rows of t gain
 *   h_{t−1}·W_hhᵀ (t > 0, or h0 given) and the gates act: i = σ(a_i + b), f = σ(a_f + b),
 *   g = tanh(a_g + b), o = σ(a_o + b), c_t = f·c_{t−1} + i·g, h_t = o·tanh(c_t), with
 *   b = b_ih + b_hh, c_{−1} = c0 or 0 and σ(v) = ½·tanh(v/2) + ½ (pb_k_sigmoidf,
 *   harness/compute/kernels/tanh.h).
 * Backward, t = T−1 … 0: dh = dy_t + dA_{t+1}·W_hh,
 *   dc = dc_{t+1}·f_{t+1} + dh·o·(1 − tanh²c_t),
 *   dA_t = (dc·g·i(1−i), dc·c_{t−1}·f(1−f), dc·i·(1−g²), dh·tanh c_t·o(1−o)); then
 *   dx = dA·W_ih (that far the input-gradient pass, lstm_bwd_data, which keeps dA
 *   [B, T, G]); the weight pass (lstm_bwd_weights): dW_ih += dAᵀ·x, dW_hh += dAᵀ·h_{t−1}
 *   (all steps at once), and the bias gradient, Σ over rows of dA, added to both b_ih's
 *   and b_hh's. lstm_bwd is the recurrence, dA in scratch, then all three products.
 * The recurrent products at a batch of a few rows (pb_cpu_panels_usable: B ≤ 16 on AVX2
 *   machines, a pipeline's micro-batch) run over W_hh packed once per call into panels
 *   (cpu_panels.c), where a product per step is bound by reading W_hh, which oneDNN's
 *   sgemm would pack again at every step; where a call makes fewer than two such products
 *   (a decoder's one step), packing costs more than it saves and oneDNN runs them.
 * Determinism: every product is cut into tiles fixed by its shape alone, each one
 *   single-threaded sgemm call (oneDNN runs a gemm called inside a parallel region on the
 *   calling thread) or panel kernel, and the pointwise work is per element, so the bits do
 *   not depend on the thread count or the timing. */
#include <string.h>

#include "harness/compute/cpu/cpu_internal.h"
#include "harness/compute/kernels/tanh.h"

/* ---- products in fixed tiles ---- */

/* One row-major product C[m × n] = op(A)·op(B) + beta·C (op: transposed where ta, tb),
 * k the inner size, cut into tiles of tile_m × tile_n. */
struct gemm {
    bool ta, tb;
    int m, n, k;
    const float *a, *b;
    int lda, ldb;
    float beta;
    float *c;
    int ldc;
};

/* Tiles as large as keep the threads busy: oneDNN's sgemm (measured on Zen 3, AVX2, one
 * thread) runs a tile of fewer than 512 rows, or one that takes part of op(B)'s columns
 * where B is not transposed, at half its speed or less (dW and dx of GNMT's 400-row
 * products: 108–118 against 41 ms in tiles of 256 × 256, 41 in one product), so rows are
 * cut only from 1024 on, in 512s, and columns only of a transposed B, in 1024s. */
static int tile_m(int m)
{
    return m < 1024 ? m : 512;
}

static int tile_n(const struct gemm *g)
{
    return g->tb && g->n > 1024 ? 1024 : g->n;
}

static int gemm_ntiles(const struct gemm *g)
{
    if (g->m <= 0 || g->n <= 0)
        return 0;
    int tm = tile_m(g->m), tn = tile_n(g);
    return ((g->m + tm - 1) / tm) * ((g->n + tn - 1) / tn);
}

static void gemm_tile(const struct gemm *g, int idx)
{
    int tm = tile_m(g->m), tn = tile_n(g), cols = (g->n + tn - 1) / tn;
    int i0 = idx / cols * tm, j0 = idx % cols * tn;
    int mm = g->m - i0 < tm ? g->m - i0 : tm, nn = g->n - j0 < tn ? g->n - j0 : tn;
    const float *a = g->ta ? g->a + i0 : g->a + (size_t)i0 * g->lda;
    const float *b = g->tb ? g->b + (size_t)j0 * g->ldb : g->b + j0;
    PB_DNNL(dnnl_sgemm(g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', mm, nn, g->k, 1.0f, a, g->lda, b,
                       g->ldb, g->beta, g->c + (size_t)i0 * g->ldc + j0, g->ldc));
}

/* Inside a parallel region: the tiles shared out among its threads. */
static void gemm_in_team(const struct gemm *g)
{
    int n = gemm_ntiles(g);
#pragma omp for schedule(static)
    for (int i = 0; i < n; i++)
        gemm_tile(g, i);
}

/* Independent products (distinct outputs) as one list of tiles shared out among the
 * threads, so that a product of one tile runs beside the others' tiles. */
static void gemms_run(struct pb_backend *be, const struct gemm *const *g, int n)
{
    int total = 0;
    for (int i = 0; i < n; i++)
        total += gemm_ntiles(g[i]);
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int t = 0; t < total; t++) {
        int i = 0, idx = t;
        while (idx >= gemm_ntiles(g[i]))
            idx -= gemm_ntiles(g[i++]);
        gemm_tile(g[i], idx);
    }
}

/* ---- the pointwise cell, one row's columns [j0, j1) ---- */

enum { CELL_COLS = 256 };

/* Forward: a [G] pre-activations in, activations out; c_prev [H] (zeros at t = 0); c, h [H]. */
static void cell_fwd(float *restrict a, const float *restrict bias, const float *restrict c_prev,
                     float *restrict c, float *restrict h, int H, int j0, int j1)
{
#pragma omp simd
    for (int j = j0; j < j1; j++) {
        float i = pb_k_sigmoidf(a[j] + bias[j]);
        float f = pb_k_sigmoidf(a[H + j] + bias[H + j]);
        float g = pb_k_tanhf(a[2 * H + j] + bias[2 * H + j]);
        float o = pb_k_sigmoidf(a[3 * H + j] + bias[3 * H + j]);
        float cj = f * c_prev[j] + i * g;
        c[j] = cj;
        h[j] = o * pb_k_tanhf(cj);
        a[j] = i;
        a[H + j] = f;
        a[2 * H + j] = g;
        a[3 * H + j] = o;
    }
}

/* Backward: act [G] the step's gates, c and c_prev [H], dy [H], dh_next [H] (dA_{t+1}·W_hh,
 * zeros at t = T − 1), dc [H] carried in (dc_{t+1}·f_{t+1}) and out; da [G]. */
static void cell_bwd(const float *restrict act, const float *restrict c,
                     const float *restrict c_prev, const float *restrict dy,
                     const float *restrict dh_next, float *restrict dc, float *restrict da, int H,
                     int j0, int j1)
{
#pragma omp simd
    for (int j = j0; j < j1; j++) {
        float i = act[j], f = act[H + j], g = act[2 * H + j], o = act[3 * H + j];
        float tc = pb_k_tanhf(c[j]);
        float dh = dy[j] + dh_next[j];
        float dcj = dc[j] + dh * o * (1.0f - tc * tc);
        da[j] = dcj * g * i * (1.0f - i);
        da[H + j] = dcj * c_prev[j] * f * (1.0f - f);
        da[2 * H + j] = dcj * i * (1.0f - g * g);
        da[3 * H + j] = dh * tc * o * (1.0f - o);
        dc[j] = dcj * f;
    }
}

static int cell_chunks(const struct pb_lstm_desc *d)
{
    return d->batch * ((d->hidden + CELL_COLS - 1) / CELL_COLS);
}

/* chunk → row b and columns [j0, j1) */
static int chunk_cols(const struct pb_lstm_desc *d, int chunk, int *j0, int *j1)
{
    int per = (d->hidden + CELL_COLS - 1) / CELL_COLS;
    *j0 = chunk % per * CELL_COLS;
    *j1 = *j0 + CELL_COLS < d->hidden ? *j0 + CELL_COLS : d->hidden;
    return chunk / per;
}

/* The panels of W_hh for a sequence's recurrent products (k × n, nprod of them, each of
 * `batch` rows), in scratch, where packing pays: a few rows (cpu_panels.c) and at least two
 * products to share the packing's cost, which is about one product's; NULL otherwise, or
 * with the backend failed when scratch is short. */
static float *recurrent_panels(struct pb_backend *be, int batch, int nprod, int k, int n)
{
    if (nprod < 2 || !pb_cpu_panels_usable(batch))
        return NULL;
    return pb_cpu_scratch(be, pb_cpu_panels_floats(k, n) * sizeof(float));
}

/* ---- the ops ---- */

static size_t rows(const struct pb_lstm_desc *d)
{
    return (size_t)d->batch * d->steps;
}

size_t pb_cpu_lstm_workspace(struct pb_backend *be, const struct pb_lstm_desc *d)
{
    (void)be;
    return rows(d) * 5 * (size_t)d->hidden * sizeof(float);
}

/* The forward into gates [B, T, G] and cell [B, T, H] (the workspace's layout), from
 * st's h0 and c0 where given. */
static void lstm_forward(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                         const float *w, float *y, float *gates, float *cell,
                         const struct pb_lstm_states *st)
{
    int T = d->steps, H = d->hidden, G = 4 * H;
    struct pb_lstm_weights p = pb_lstm_weights_split(d, w);
    const float *h0 = st ? st->h0 : NULL, *c0 = st ? st->c0 : NULL;
    /* the summed bias [G], then a row of zeros [H] for c_{−1} = 0 */
    float *bias = pb_cpu_scratch(be, (size_t)(G + H) * sizeof(float));
    if (!bias)
        return;
    float *zeros = bias + G;
    for (int j = 0; j < G; j++)
        bias[j] = p.b_ih[j] + p.b_hh[j];
    memset(zeros, 0, (size_t)H * sizeof(float));
    struct gemm in = {false, true, (int)rows(d), G, d->input, x, p.w_ih, d->input, d->input,
                      0.0f, gates, G};
    float *panels = recurrent_panels(be, d->batch, T - 1 + (h0 != NULL), H, G);
    if (be->failed) {
        pb_cpu_scratch_free(be, bias);
        return;
    }
    int nchunks = cell_chunks(d);
#pragma omp parallel num_threads(pb_cpu_of(be)->nthreads)
    {
        gemm_in_team(&in);
        if (panels)  /* op(B) = W_hhᵀ [H × G] */
            pb_cpu_pack_panels_in_team(p.w_hh, H, true, H, G, panels);
        for (int t = 0; t < T; t++) {
            if (t > 0 || h0) {  /* rows b·T + t += h_{t−1}·W_hhᵀ */
                const float *hp = t ? y + (size_t)(t - 1) * H : h0;
                int ldh = t ? T * H : H;
                struct gemm rec = {false, true, d->batch, G, H, hp, p.w_hh, ldh, H,
                                   1.0f, gates + (size_t)t * G, T * G};
                if (panels)
                    pb_cpu_gemm_panels_in_team(d->batch, G, H, hp, ldh, panels, true, rec.c,
                                               rec.ldc);
                else
                    gemm_in_team(&rec);
            }
#pragma omp for schedule(static)
            for (int k = 0; k < nchunks; k++) {
                int j0, j1, b = chunk_cols(d, k, &j0, &j1);
                size_t r = (size_t)b * T + t;
                float *c = cell + r * H;
                const float *cp = t ? c - H : c0 ? c0 + (size_t)b * H : zeros;
                cell_fwd(gates + r * G, bias, cp, c, y + r * H, H, j0, j1);
            }
        }
    }
    if (st && st->h_last)
        for (int b = 0; b < d->batch; b++) {
            size_t r = (size_t)b * T + T - 1;
            memcpy(st->h_last + (size_t)b * H, y + r * H, (size_t)H * sizeof(float));
            memcpy(st->c_last + (size_t)b * H, cell + r * H, (size_t)H * sizeof(float));
        }
    if (panels)
        pb_cpu_scratch_free(be, panels);
    pb_cpu_scratch_free(be, bias);
}

void pb_cpu_lstm_fwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                     const float *w, float *y, void *ws, const struct pb_lstm_states *st)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CHECK(!st || (!st->h0 == !st->c0 && !st->h_last == !st->c_last));
    PB_CHECK(!ws || !st || !st->h0);  /* a training forward starts from zeros */
    /* inference: the same kernel (the same bits as training's y), its gates and cells in
     * scratch */
    float *gates = ws ? ws : pb_cpu_scratch(be, pb_cpu_lstm_workspace(be, d));
    if (!gates)
        return;
    lstm_forward(be, d, x, w, y, gates, gates + rows(d) * 4 * (size_t)d->hidden, st);
    if (!ws)
        pb_cpu_scratch_free(be, gates);
}

size_t pb_cpu_lstm_bwd_keep(struct pb_backend *be, const struct pb_lstm_desc *d)
{
    (void)be;
    return rows(d) * 4 * (size_t)d->hidden * sizeof(float);
}

/* The backward's recurrence from dy back through the steps into da [B, T, G]. */
static void recurrence_bwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *w,
                           const float *dy, const void *ws, float *da)
{
    int B = d->batch, T = d->steps, H = d->hidden, G = 4 * H;
    struct pb_lstm_weights p = pb_lstm_weights_split(d, w);
    const float *act = ws, *cell = act + rows(d) * G;
    /* dh_next and dc [B, H]; zeros [H] */
    float *dh = pb_cpu_scratch(be, (2 * (size_t)B * H + H) * sizeof(float));
    if (!dh)
        return;
    float *dc = dh + (size_t)B * H, *zeros = dc + (size_t)B * H;
    memset(dc, 0, ((size_t)B * H + H) * sizeof(float));
    float *panels = recurrent_panels(be, B, T - 1, G, H);
    if (be->failed) {
        pb_cpu_scratch_free(be, dh);
        return;
    }
    int nchunks = cell_chunks(d);
#pragma omp parallel num_threads(pb_cpu_of(be)->nthreads)
    {
        if (panels)  /* op(B) = W_hh [G × H] */
            pb_cpu_pack_panels_in_team(p.w_hh, H, false, G, H, panels);
        for (int t = T - 1; t >= 0; t--) {
            if (t < T - 1) {  /* dh_next = dA_{t+1}·W_hh */
                struct gemm rec = {false, false, B, H, G, da + (size_t)(t + 1) * G, p.w_hh,
                                   T * G, H, 0.0f, dh, H};
                if (panels)
                    pb_cpu_gemm_panels_in_team(B, H, G, rec.a, rec.lda, panels, false, dh, H);
                else
                    gemm_in_team(&rec);
            }
#pragma omp for schedule(static)
            for (int k = 0; k < nchunks; k++) {
                int j0, j1, b = chunk_cols(d, k, &j0, &j1);
                size_t r = (size_t)b * T + t;
                const float *c = cell + r * H;
                cell_bwd(act + r * G, c, t ? c - H : zeros, dy + r * H,
                         t < T - 1 ? dh + (size_t)b * H : zeros, dc + (size_t)b * H, da + r * G,
                         H, j0, j1);
            }
        }
    }
    if (panels)
        pb_cpu_scratch_free(be, panels);
    pb_cpu_scratch_free(be, dh);
}

/* The backward's products from da [B, T, G]: dx = dA·W_ih (dx not NULL; w read) and the
 * weight gradients (dw_acc not NULL; x and y read): dW_ih += dAᵀ·x, dW_hh += dAᵀ·h_{t−1}
 * (h_{t−1} gathered from y), Σ_rows dA into both biases. The products share one list of
 * tiles, each tile one sgemm call, so a product's bits do not depend on which others run
 * beside it: the fused backward and the two passes give the same. */
static void products_bwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *w,
                         const float *x, const float *y, const float *da, float *dx,
                         float *dw_acc)
{
    int T = d->steps, I = d->input, H = d->hidden, G = 4 * H, R = (int)rows(d);
    const struct gemm *list[3];
    int n = 0;
    struct gemm dxg = {0}, dw_ih = {0}, dw_hh = {0};
    if (dx) {
        struct pb_lstm_weights p = pb_lstm_weights_split(d, w);
        dxg = (struct gemm){false, false, R, I, G, da, p.w_ih, G, I, 0.0f, dx, I};
        list[n++] = &dxg;
    }
    float *hprev = NULL, *dbias = NULL;
    struct pb_lstm_weights gw = {0};
    if (dw_acc) {
        gw = pb_lstm_weights_split(d, dw_acc);
        /* h_{t−1} per row [B, T, H]; the bias gradient [G] */
        hprev = pb_cpu_scratch(be, (rows(d) * H + G) * sizeof(float));
        if (!hprev)
            return;
        dbias = hprev + rows(d) * H;
        memset(dbias, 0, (size_t)G * sizeof(float));
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
        for (int r = 0; r < R; r++) {
            float *hp = hprev + (size_t)r * H;
            if (r % T)
                memcpy(hp, y + (size_t)(r - 1) * H, (size_t)H * sizeof(float));
            else
                memset(hp, 0, (size_t)H * sizeof(float));
        }
        dw_ih = (struct gemm){true, false, G, I, R, da, x, G, I, 1.0f, gw.w_ih, I};
        dw_hh = (struct gemm){true, false, G, H, R, da, hprev, G, H, 1.0f, gw.w_hh, H};
        list[n++] = &dw_ih;
        list[n++] = &dw_hh;
    }
    gemms_run(be, list, n);
    if (!dw_acc)
        return;
    pb_cpu_bias_grad(be, da, dbias, R, G);
    for (int j = 0; j < G; j++) {
        gw.b_ih[j] += dbias[j];
        gw.b_hh[j] += dbias[j];
    }
    pb_cpu_scratch_free(be, hprev);
}

/* The input-gradient pass: the recurrence into dA (keep), then dx = dA·W_ih. */
void pb_cpu_lstm_bwd_data(struct pb_backend *be, const struct pb_lstm_desc *d, const float *w,
                          const float *dy, const void *ws, float *dx, void *keep)
{
    if (!pb_cpu_begin(be))
        return;
    recurrence_bwd(be, d, w, dy, ws, keep);
    if (dx && !be->failed)
        products_bwd(be, d, w, NULL, NULL, keep, dx, NULL);
}

/* The weight pass: the four weight gradients from dA (keep), x and y. */
void pb_cpu_lstm_bwd_weights(struct pb_backend *be, const struct pb_lstm_desc *d,
                             const float *x, const float *y, const void *keep, float *dw_acc)
{
    if (!pb_cpu_begin(be))
        return;
    products_bwd(be, d, NULL, x, y, keep, NULL, dw_acc);
}

/* The fused backward: the recurrence into dA (scratch), then every product in one list. */
void pb_cpu_lstm_bwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                     const float *w, const float *y, const float *dy, const void *ws, float *dx,
                     float *dw_acc)
{
    if (!pb_cpu_begin(be))
        return;
    float *da = pb_cpu_scratch(be, pb_cpu_lstm_bwd_keep(be, d));
    if (!da)
        return;
    recurrence_bwd(be, d, w, dy, ws, da);
    if (!be->failed)
        products_bwd(be, d, w, x, y, da, dx, dw_acc);
    pb_cpu_scratch_free(be, da);
}
