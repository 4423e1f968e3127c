/* harness/compute/cuda/cuda_attention.c — the CUDA backend's attention ops (backend.h's
 * attn_workspace, attn_fwd, attn_bwd, attn_weights, attn_project_keys, attn_fwd_projected):
 * GNMT's normalised Bahdanau attention as cuBLAS products and the kernels of
 * cuda_attention.cu. Reference: cpu_attention.c, step for step.
 *
 * Shapes (struct pb_attn_desc; B batch, Tq, Tk, Hq query, Hk key, U units):
 *   q (B, Tq, Hq), k (B, Tk, Hk), lengths (B) device, ctx and dctx (B, Tq, Hk);
 *   w: v (U), g (1), bias (U), W_q (U, Hq), W_k (U, Hk) (PyTorch's parameters() order);
 *   workspace: pq (B·Tq, U), pk (B·Tk, U), the weights a (B·Tq, Tk), v̂ (U), each piece
 *   from a 256-byte boundary (v̂ is the forward's own: the backward forms it again from
 *   its w, which a schedule may take from another version than the forward's).
 * Forward: pq = q·W_qᵀ and pk = k·W_kᵀ (one product each), v̂ = g·v/‖v‖, the scores
 *   v̂·tanh((pq + pk) + bias) (a thread per score), their softmax within the length, and
 *   ctx[b] = a[b]·k[b] (a batched product). attn_fwd_projected runs the same calls from pq
 *   on, and attn_project_keys the same product as the forward's, so for one desc their bits
 *   are attn_fwd's (cuBLAS is deterministic for one shape and alignment).
 * Backward: v̂ from w, da[b] = dctx[b]·k[b]ᵀ, dk[b] = a[b]ᵀ·dctx[b] (batched products), the
 *   softmax's backward, then dpq, dpk and the v̂ gradient's parts from tanh formed again (a
 *   thread per output element, its sum in order), the parts' and dpk's column sums
 *   (products with ones), v and g's gradient in double, and the products dW_q += dpqᵀ·q,
 *   dW_k += dpkᵀ·k (beta = 1), dq = dpq·W_q, dk += dpk·W_k. The split backward's data pass
 *   (attn_bwd_data) runs everything but the weight gradients' products and sums, keeping
 *   dpq, dpk and v and g's gradient increments (those read v and g); the weight pass
 *   (attn_bwd_weights) adds the increments, the bias' column sum and dW_q, dW_k; attn_bwd
 *   is the two in turn.
 * Lengths are device memory: a length outside [1, Tk] raises the instance's flag, which
 * the next sync turns into the CPU's failure and message (the kernels clamp it
 * meanwhile, reading nothing out of bounds). Products reduce in
 * cuBLAS's order: within a tolerance of the CPU; the per-element math is its own. */
#include "harness/compute/cuda/cuda_rnn.h"

/* The workspace's pieces. */
struct attn_ws {
    float *pq, *pk, *a, *vh;
};

/* The pieces' offsets in floats; returns the total. */
static size_t ws_layout(const struct pb_attn_desc *d, size_t *pk, size_t *a, size_t *vh)
{
    size_t B = (size_t)d->batch;
    *pk = pb_cuda_rnn_align(B * d->tq * d->units);
    *a = *pk + pb_cuda_rnn_align(B * d->tk * d->units);
    *vh = *a + pb_cuda_rnn_align(B * d->tq * d->tk);
    return *vh + (size_t)d->units;
}

static struct attn_ws ws_split(const struct pb_attn_desc *d, const void *ws)
{
    size_t pk, a, vh;
    ws_layout(d, &pk, &a, &vh);
    float *f = (float *)ws;
    struct attn_ws s = {f, f + pk, f + a, f + vh};
    return s;
}

size_t pb_cuda_attn_workspace(struct pb_backend *be, const struct pb_attn_desc *d)
{
    (void)be;
    size_t pk, a, vh;
    return ws_layout(d, &pk, &a, &vh) * sizeof(float);
}

static struct pb_cuda_attn_dims dims(const struct pb_attn_desc *d, const int32_t *lengths)
{
    struct pb_cuda_attn_dims m = {d->batch, d->tq, d->tk, d->units, lengths};
    return m;
}

/* pk (B·Tk, U) = k (B·Tk, Hk)·W_kᵀ: the forward's product and attn_project_keys'. */
static bool project_keys(struct pb_backend *be, const struct pb_attn_desc *d, const float *k,
                         const struct pb_attn_weights *p, float *pk)
{
    return pb_cuda_rnn_gemm(be, false, true, d->batch * d->tk, d->units, d->key, 1.0f, k, d->key,
                            p->wk, d->key, 0.0f, pk, d->units);
}

/* pq (B·Tq, U) = q (B·Tq, Hq)·W_qᵀ */
static bool project_queries(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                            const struct pb_attn_weights *p, float *pq)
{
    return pb_cuda_rnn_gemm(be, false, true, d->batch * d->tq, d->units, d->query, 1.0f, q,
                            d->query, p->wq, d->query, 0.0f, pq, d->units);
}

/* The forward past the projections: v̂ into vh (U), the weights into a (B·Tq, Tk) and ctx
 * (B, Tq, Hk) = a·k per source. */
static void attend(struct pb_backend *be, const struct pb_attn_desc *d, const float *k,
                   const float *pk, const int32_t *lengths, const struct pb_attn_weights *p,
                   const float *pq, float *vh, float *a, float *ctx)
{
    int Tq = d->tq, Tk = d->tk, Hk = d->key;
    struct pb_cuda_attn_dims m = dims(d, lengths);
    pb_cuda_attn_check_lengths(be, &m);
    if (!be->failed)
        pb_cuda_attn_vhat(be, d->units, p->v, p->g, vh);
    if (!be->failed)
        pb_cuda_attn_score(be, &m, pq, pk, p->bias, vh, a);
    if (!be->failed)
        pb_cuda_attn_softmax(be, &m, a);
    if (!be->failed)  /* ctx[b] (Tq, Hk) = a[b] (Tq, Tk)·k[b] (Tk, Hk) */
        pb_cuda_rnn_gemm_batched(be, false, false, Tq, Hk, Tk, 1.0f, a, Tk, (long long)Tq * Tk, k,
                                 Hk, (long long)Tk * Hk, 0.0f, ctx, Hk, (long long)Tq * Hk,
                                 d->batch);
}

void pb_cuda_attn_fwd(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                      const float *k, const int32_t *lengths, const float *w, float *ctx, void *ws)
{
    if (!pb_cuda_begin(be))
        return;
    struct pb_attn_weights p = pb_attn_weights_split(d, w);
    float *tmp = ws ? NULL : pb_cuda_rnn_scratch(be, pb_cuda_attn_workspace(be, d));
    if (!ws && !tmp)
        return;
    struct attn_ws s = ws_split(d, ws ? ws : tmp);
    if (project_queries(be, d, q, &p, s.pq) && project_keys(be, d, k, &p, s.pk))
        attend(be, d, k, s.pk, lengths, &p, s.pq, s.vh, s.a, ctx);
    if (tmp)
        pb_backend_free(be, tmp);
}

void pb_cuda_attn_project_keys(struct pb_backend *be, const struct pb_attn_desc *d,
                               const float *k, const float *w, float *pk)
{
    if (!pb_cuda_begin(be))
        return;
    struct pb_attn_weights p = pb_attn_weights_split(d, w);
    project_keys(be, d, k, &p, pk);
}

void pb_cuda_attn_fwd_projected(struct pb_backend *be, const struct pb_attn_desc *d,
                                const float *q, const float *k, const float *pk,
                                const int32_t *lengths, const float *w, float *ctx, float *a)
{
    if (!pb_cuda_begin(be))
        return;
    struct pb_attn_weights p = pb_attn_weights_split(d, w);
    size_t nq = (size_t)d->batch * d->tq;
    /* pq (B·Tq, U), vh (U), the weights when a is not wanted (B·Tq, Tk) */
    size_t o_vh = pb_cuda_rnn_align(nq * d->units), o_a = o_vh + pb_cuda_rnn_align(d->units);
    float *pq = pb_cuda_rnn_scratch(be, (o_a + (a ? 0 : nq * d->tk)) * sizeof(float));
    if (!pq)
        return;
    if (project_queries(be, d, q, &p, pq))
        attend(be, d, k, pk, lengths, &p, pq, pq + o_vh, a ? a : pq + o_a, ctx);
    pb_backend_free(be, pq);
}

void pb_cuda_attn_weights(struct pb_backend *be, const struct pb_attn_desc *d, const void *ws,
                          float *a)
{
    if (!pb_cuda_begin(be))
        return;
    struct attn_ws s = ws_split(d, ws);
    PB_CUDA(be, cudaMemcpyAsync(a, s.a, (size_t)d->batch * d->tq * d->tk * sizeof *a,
                                cudaMemcpyDeviceToDevice, pb_cuda_of(be)->stream));
}

/* What the data pass keeps for the weight pass: dpq (B·Tq, U), dpk (B·Tk, U), then the
 * increments of v's gradient (U) and g's (1), each piece aligned. */
struct attn_keep {
    float *dpq, *dpk, *gvg;
};

static size_t keep_layout(const struct pb_attn_desc *d, size_t *dpk, size_t *gvg)
{
    size_t B = (size_t)d->batch;
    *dpk = pb_cuda_rnn_align(B * d->tq * d->units);
    *gvg = *dpk + pb_cuda_rnn_align(B * d->tk * d->units);
    return *gvg + (size_t)d->units + 1;
}

static struct attn_keep keep_split(const struct pb_attn_desc *d, const void *keep)
{
    size_t dpk, gvg;
    keep_layout(d, &dpk, &gvg);
    float *f = (float *)keep;
    struct attn_keep k = {f, f + dpk, f + gvg};
    return k;
}

size_t pb_cuda_attn_bwd_keep(struct pb_backend *be, const struct pb_attn_desc *d)
{
    (void)be;
    size_t dpk, gvg;
    return keep_layout(d, &dpk, &gvg) * sizeof(float);
}

void pb_cuda_attn_bwd_data(struct pb_backend *be, const struct pb_attn_desc *d, const float *k,
                           const int32_t *lengths, const float *w, const void *ws,
                           const float *dctx, float *dq, float *dk, void *keep)
{
    if (!pb_cuda_begin(be))
        return;
    int B = d->batch, Tq = d->tq, Tk = d->tk, U = d->units, Hq = d->query, Hk = d->key;
    int nq = B * Tq, nk = B * Tk;
    struct pb_attn_weights p = pb_attn_weights_split(d, w);
    struct attn_ws s = ws_split(d, ws);
    struct attn_keep kp = keep_split(d, keep);
    struct pb_cuda_attn_dims m = dims(d, lengths);
    /* ds (B·Tq, Tk), gvp (B·Tk, U), dvhat (U), v̂ (U), ones (B·Tk) */
    size_t o_gvp = pb_cuda_rnn_align((size_t)nq * Tk);
    size_t o_dv = o_gvp + pb_cuda_rnn_align((size_t)nk * U);
    size_t o_vh = o_dv + pb_cuda_rnn_align(U);
    size_t o_one = o_vh + pb_cuda_rnn_align(U);
    float *ds = pb_cuda_rnn_scratch(be, (o_one + (size_t)nk) * sizeof(float));
    if (!ds)
        return;
    float *gvp = ds + o_gvp, *dvhat = ds + o_dv, *vh = ds + o_vh, *ones = ds + o_one;
    pb_cuda_attn_check_lengths(be, &m);
    /* v̂ of this pass' w, not the forward's (ws): a schedule may run the backward on other
     * weights than its forward (semantics §1.3), and the CPU forms v̂ from w here too */
    if (!be->failed)
        pb_cuda_attn_vhat(be, U, p.v, p.g, vh);
    long long sq = (long long)Tq * Hk, sk = (long long)Tk * Hk, sa = (long long)Tq * Tk;
    /* da[b] (Tq, Tk) = dctx[b] (Tq, Hk)·k[b]ᵀ; dk[b] (Tk, Hk) = a[b]ᵀ·dctx[b] */
    bool ok = !be->failed &&
              pb_cuda_rnn_gemm_batched(be, false, true, Tq, Tk, Hk, 1.0f, dctx, Hk, sq, k, Hk, sk,
                                       0.0f, ds, Tk, sa, B);
    if (dk)
        ok = ok && pb_cuda_rnn_gemm_batched(be, true, false, Tk, Hk, Tq, 1.0f, s.a, Tk, sa, dctx,
                                            Hk, sq, 0.0f, dk, Hk, sk, B);
    if (ok)
        pb_cuda_attn_softmax_bwd(be, &m, s.a, ds);
    if (!be->failed)
        pb_cuda_attn_dpq(be, &m, s.pq, s.pk, p.bias, vh, ds, kp.dpq);
    if (!be->failed)
        pb_cuda_attn_dpk(be, &m, s.pq, s.pk, p.bias, vh, ds, kp.dpk, gvp);
    if (!be->failed)
        pb_cuda_rnn_ones(be, ones, (size_t)nk);
    ok = !be->failed;
    /* dvhat = Σ_rows gvp; v and g's gradient increments, from zero */
    ok = ok && pb_cuda_rnn_colsum(be, gvp, nk, U, ones, 0.0f, dvhat);
    ok = ok && PB_CUDA(be, cudaMemsetAsync(kp.gvg, 0, ((size_t)U + 1) * sizeof(float),
                                           pb_cuda_of(be)->stream));
    if (ok)
        pb_cuda_attn_vgrad(be, U, p.v, p.g, dvhat, kp.gvg, kp.gvg + U);
    ok = ok && !be->failed;
    /* dq = dpq·W_q; dk += dpk·W_k */
    if (dq)
        ok = ok && pb_cuda_rnn_gemm(be, false, false, nq, Hq, U, 1.0f, kp.dpq, U, p.wq, Hq, 0.0f,
                                    dq, Hq);
    if (dk)
        ok = ok && pb_cuda_rnn_gemm(be, false, false, nk, Hk, U, 1.0f, kp.dpk, U, p.wk, Hk, 1.0f,
                                    dk, Hk);
    pb_backend_free(be, ds);
}

void pb_cuda_attn_bwd_weights(struct pb_backend *be, const struct pb_attn_desc *d,
                              const float *q, const float *k, const void *keep, float *dw_acc)
{
    if (!pb_cuda_begin(be))
        return;
    int U = d->units, Hq = d->query, Hk = d->key, nq = d->batch * d->tq, nk = d->batch * d->tk;
    struct attn_keep kp = keep_split(d, keep);
    float *gv = dw_acc, *gb = gv + U + 1, *gwq = gb + U, *gwk = gwq + (size_t)U * Hq;
    float *ones = pb_cuda_rnn_scratch(be, (size_t)nk * sizeof(float));
    if (!ones)
        return;
    pb_cuda_rnn_ones(be, ones, (size_t)nk);
    /* v and g's increments added (v (U) then g (1) in both: the column sum of their one
     * row, gv + inc rounded once, as the fused kernel's +=); bias' += Σ_rows dpk;
     * dW_q (U, Hq) += dpqᵀ·q; dW_k (U, Hk) += dpkᵀ·k */
    bool ok = !be->failed;
    ok = ok && pb_cuda_rnn_colsum(be, kp.gvg, 1, U + 1, ones, 1.0f, gv);
    ok = ok && pb_cuda_rnn_colsum(be, kp.dpk, nk, U, ones, 1.0f, gb);
    ok = ok && pb_cuda_rnn_gemm(be, true, false, U, Hq, nq, 1.0f, kp.dpq, U, q, Hq, 1.0f, gwq, Hq);
    ok = ok && pb_cuda_rnn_gemm(be, true, false, U, Hk, nk, 1.0f, kp.dpk, U, k, Hk, 1.0f, gwk, Hk);
    pb_backend_free(be, ones);
}

/* The fused backward: the two passes with their keep in scratch. */
void pb_cuda_attn_bwd(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                      const float *k, const int32_t *lengths, const float *w, const void *ws,
                      const float *dctx, float *dq, float *dk, float *dw_acc)
{
    if (!pb_cuda_begin(be))
        return;
    float *keep = pb_cuda_rnn_scratch(be, pb_cuda_attn_bwd_keep(be, d));
    if (!keep)
        return;
    pb_cuda_attn_bwd_data(be, d, k, lengths, w, ws, dctx, dq, dk, keep);
    pb_cuda_attn_bwd_weights(be, d, q, k, keep, dw_acc);
    pb_backend_free(be, keep);
}
