/* harness/compute/cpu/cpu_attention.c — GNMT's normalised Bahdanau attention on the CPU
 * (struct pb_attn_desc, backend.h): the projections and the context are sgemms, the
 * additive score Σ_n v̂_n tanh(pq + pk + bias) vectorised over n (kernels/tanh.h's tanh in
 * ATTN_LANES lanes of partial sums, added in a fixed tree). The forward keeps pq [B·Tq, U],
 * pk [B·Tk, U] and the weights a [B·Tq, Tk] in its workspace; the backward forms tanh
 * again (once per (query, key, unit), as the forward) instead of keeping the
 * [B, Tq, Tk, U] tensor PyTorch keeps, in one pass per (source, block of queries) that
 * gives the query, key and v̂ gradients together. The backward is two passes (backend.h's
 * attn_bwd_data and attn_bwd_weights; attn_bwd runs both): the data pass keeps dpq, dpk
 * and v and g's gradient increments for the weight pass. A decoder projects its keys once
 * (attn_project_keys, the forward's own GEMM) and attends with them at every step
 * (attn_fwd_projected: the forward from pq on, the weights written where it asks). Every
 * sum runs in a fixed order with
 * each output owned by one task, and the tasks depend on the shape only, so the bits
 * never depend on the thread count. */
#include <math.h>
#include <string.h>

#include "harness/compute/cpu/cpu_internal.h"
#include "harness/compute/kernels/tanh.h"

/* The score's partial sums: lane l adds the units n ≡ l (mod ATTN_LANES) (a multiple of
 * the widest vector, AVX-512's 16 floats). */
#define ATTN_LANES 16
/* The backward splits each source's queries into blocks so that there are at least
 * ATTN_TASKS (source, block) tasks (a function of the shape only). */
#define ATTN_TASKS 32

/* The workspace's pieces. */
struct attn_ws {
    float *pq, *pk, *a;
};

static struct attn_ws ws_split(const struct pb_attn_desc *d, void *ws)
{
    struct attn_ws s;
    s.pq = ws;
    s.pk = s.pq + (size_t)d->batch * d->tq * d->units;
    s.a = s.pk + (size_t)d->batch * d->tk * d->units;
    return s;
}

size_t pb_cpu_attn_workspace(struct pb_backend *be, const struct pb_attn_desc *d)
{
    (void)be;
    size_t b = (size_t)d->batch;
    return b * ((size_t)d->tq * d->units + (size_t)d->tk * d->units + (size_t)d->tq * d->tk) *
           sizeof(float);
}

/* Checks lengths [batch] (NULL = all tk) against [1, tk]; false (instance failed) if not. */
static bool check_lengths(struct pb_backend *be, const struct pb_attn_desc *d, const int32_t *len)
{
    for (int b = 0; len && b < d->batch; b++)
        if (len[b] < 1 || len[b] > d->tk) {
            pb_backend_fail(be, "attention: source %d has length %d, outside [1, %d]", b, len[b],
                            d->tk);
            return false;
        }
    return true;
}

/* v̂ = g · v / ‖v‖ into vh [U]; returns ‖v‖. */
static double normalised_v(const struct pb_attn_desc *d, const struct pb_attn_weights *p, float *vh)
{
    double ss = 0;
    for (int n = 0; n < d->units; n++)
        ss += (double)p->v[n] * p->v[n];
    double norm = sqrt(ss);
    for (int n = 0; n < d->units; n++)
        vh[n] = (float)(p->g[0] * p->v[n] / norm);
    return norm;
}

/* Σ_n vh[n] tanh((pq[n] + pk[n]) + bias[n]) over n < U (each [U]): lane l of ATTN_LANES sums
 * the units n ≡ l in order, then the lanes add in a fixed tree. */
static float attn_score(const float *restrict pq, const float *restrict pk,
                        const float *restrict bias, const float *restrict vh, int U)
{
    float acc[ATTN_LANES] = {0};
    int full = U - U % ATTN_LANES;
    for (int n0 = 0; n0 < full; n0 += ATTN_LANES) {
#pragma omp simd
        for (int l = 0; l < ATTN_LANES; l++) {
            int n = n0 + l;
            acc[l] = PB_K_FMA(vh[n], pb_k_tanhf((pq[n] + pk[n]) + bias[n]), acc[l]);
        }
    }
    for (int n = full; n < U; n++)
        acc[n - full] = PB_K_FMA(vh[n], pb_k_tanhf((pq[n] + pk[n]) + bias[n]), acc[n - full]);
    for (int w = ATTN_LANES / 2; w > 0; w /= 2)
        for (int l = 0; l < w; l++)
            acc[l] += acc[l + w];
    return acc[0];
}

/* pk [B·Tk, U] = k·W_kᵀ, one product [Tk, Hk]·W_kᵀ per source, the sources shared out
 * among the threads: the projection every forward and decoder uses. A source's bits
 * depend on Tk alone, not on how many sources share the batch, so a decoder's keys,
 * gathered as rows are dropped and duplicated, stay those a fresh projection gives
 * (oneDNN's sgemm gives a row bits that vary with the product's row count on AVX2
 * machines). */
static void project_keys(struct pb_backend *be, const struct pb_attn_desc *d, const float *k,
                         const struct pb_attn_weights *p, float *pk)
{
    int B = d->batch, Tk = d->tk, U = d->units, Hk = d->key;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int b = 0; b < B; b++)
        PB_DNNL(dnnl_sgemm('N', 'T', Tk, U, Hk, 1.0f, k + (size_t)b * Tk * Hk, Hk, p->wk, Hk,
                           0.0f, pk + (size_t)b * Tk * U, U));
}

/* The forward past the projections: the scores of pq [B·Tq, U] against pk [B·Tk, U], their
 * softmax over each source's keys into a [B·Tq, Tk], and ctx [B·Tq, Hk] = a·k per source;
 * vh [U] scratch. */
static void attend(struct pb_backend *be, const struct pb_attn_desc *d, const float *k,
                   const float *pk, const int32_t *lengths, const struct pb_attn_weights *p,
                   const float *pq_all, float *vh, float *a_all, float *ctx)
{
    int B = d->batch, Tq = d->tq, Tk = d->tk, U = d->units, Hk = d->key;
    normalised_v(d, p, vh);
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int r = 0; r < B * Tq; r++) {
        int b = r / Tq, len = lengths ? lengths[b] : Tk;
        const float *pq = pq_all + (size_t)r * U;
        float *a = a_all + (size_t)r * Tk;
        float mx = -INFINITY;
        for (int j = 0; j < len; j++) {
            float sc = attn_score(pq, pk + ((size_t)b * Tk + j) * U, p->bias, vh, U);
            a[j] = sc;
            mx = sc > mx ? sc : mx;
        }
        double sum = 0;
        for (int j = 0; j < len; j++)
            sum += exp((double)a[j] - mx);
        for (int j = 0; j < Tk; j++)
            a[j] = j < len ? (float)(exp((double)a[j] - mx) / sum) : 0.0f;
    }
    for (int b = 0; b < B; b++)  /* ctx[b] [Tq, Hk] = a[b] [Tq, Tk] · k[b] [Tk, Hk] */
        pb_cpu_gemm(be, false, false, Tq, Hk, Tk, 1.0f, a_all + (size_t)b * Tq * Tk, Tk,
                    k + (size_t)b * Tk * Hk, Hk, 0.0f, ctx + (size_t)b * Tq * Hk, Hk);
}

void pb_cpu_attn_fwd(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                     const float *k, const int32_t *lengths, const float *w, float *ctx, void *ws)
{
    if (!pb_cpu_begin(be) || !check_lengths(be, d, lengths))
        return;
    int B = d->batch, Tq = d->tq, U = d->units, Hq = d->query;
    struct pb_attn_weights p = pb_attn_weights_split(d, w);
    void *tmp = ws ? NULL : pb_cpu_scratch(be, pb_cpu_attn_workspace(be, d));
    float *vh = pb_cpu_scratch(be, (size_t)U * sizeof(float));
    if ((!ws && !tmp) || !vh) {
        pb_cpu_scratch_free(be, tmp);
        pb_cpu_scratch_free(be, vh);
        return;
    }
    struct attn_ws s = ws_split(d, ws ? ws : tmp);
    pb_cpu_gemm(be, false, true, B * Tq, U, Hq, 1.0f, q, Hq, p.wq, Hq, 0.0f, s.pq, U);
    project_keys(be, d, k, &p, s.pk);
    attend(be, d, k, s.pk, lengths, &p, s.pq, vh, s.a, ctx);
    pb_cpu_scratch_free(be, vh);
    pb_cpu_scratch_free(be, tmp);
}

void pb_cpu_attn_project_keys(struct pb_backend *be, const struct pb_attn_desc *d,
                              const float *k, const float *w, float *pk)
{
    if (!pb_cpu_begin(be))
        return;
    struct pb_attn_weights p = pb_attn_weights_split(d, w);
    project_keys(be, d, k, &p, pk);
}

void pb_cpu_attn_fwd_projected(struct pb_backend *be, const struct pb_attn_desc *d,
                               const float *q, const float *k, const float *pk,
                               const int32_t *lengths, const float *w, float *ctx, float *a)
{
    if (!pb_cpu_begin(be) || !check_lengths(be, d, lengths))
        return;
    int B = d->batch, Tq = d->tq, U = d->units, Hq = d->query;
    size_t nq = (size_t)B * Tq;
    struct pb_attn_weights p = pb_attn_weights_split(d, w);
    /* pq [B·Tq, U], vh [U], the weights when a is not wanted [B·Tq, Tk] */
    float *pq = pb_cpu_scratch(be, (nq * U + U + (a ? 0 : nq * d->tk)) * sizeof(float));
    if (!pq)
        return;
    float *vh = pq + nq * U;
    pb_cpu_gemm(be, false, true, (int)nq, U, Hq, 1.0f, q, Hq, p.wq, Hq, 0.0f, pq, U);
    attend(be, d, k, pk, lengths, &p, pq, vh, a ? a : vh + U, ctx);
    pb_cpu_scratch_free(be, pq);
}

void pb_cpu_attn_weights(struct pb_backend *be, const struct pb_attn_desc *d, const void *ws,
                         float *a)
{
    if (!pb_cpu_begin(be))
        return;
    struct attn_ws s = ws_split(d, (void *)ws);
    memcpy(a, s.a, (size_t)d->batch * d->tq * d->tk * sizeof *a);
}

/* The backward's queries per block: blocks of one source enough for ATTN_TASKS tasks over
 * the batch, as far as Tq allows (the shape decides, never the thread count). */
static int attn_block(const struct pb_attn_desc *d)
{
    int nb = (ATTN_TASKS + d->batch - 1) / d->batch;
    nb = nb < d->tq ? nb : d->tq;
    return (d->tq + nb - 1) / nb;
}

/* One backward task: source b (len keys) and its queries [i0, i1). Turns their rows of ds
 * [B·Tq, Tk] (da on entry) into the score gradients (the softmax's backward) and writes
 * their rows of dpq [B·Tq, U], gk [Tk, U] = Σ_i of the key gradients (0 past len) and
 * gv [U] = Σ_(i,j) ds·tanh, each sum in order of i, then j. */
static void attn_bwd_task(const struct pb_attn_desc *d, const struct attn_ws *s,
                          const float *bias, const float *vh, int b, int len, int i0, int i1,
                          float *ds, float *dpq, float *gk, float *gv)
{
    int Tq = d->tq, Tk = d->tk, U = d->units;
    memset(gk, 0, (size_t)Tk * U * sizeof(float));
    memset(gv, 0, (size_t)U * sizeof(float));
    for (int i = i0; i < i1; i++) {
        size_t r = (size_t)b * Tq + i;
        const float *a = s->a + r * Tk, *pq = s->pq + r * U;
        float *dsr = ds + r * Tk, *gq = dpq + r * U;
        double dot = 0;
        for (int j = 0; j < len; j++)
            dot += (double)a[j] * dsr[j];
        for (int j = 0; j < Tk; j++)  /* the softmax's backward */
            dsr[j] = j < len ? (float)(a[j] * (dsr[j] - dot)) : 0.0f;
        memset(gq, 0, (size_t)U * sizeof(float));
        for (int j = 0; j < len; j++) {
            const float *pk = s->pk + ((size_t)b * Tk + j) * U;
            float dsv = dsr[j], *gkj = gk + (size_t)j * U;
#pragma omp simd
            for (int n = 0; n < U; n++) {
                float t = pb_k_tanhf((pq[n] + pk[n]) + bias[n]);
                float g = dsv * vh[n] * PB_K_FMA(-t, t, 1.0f);
                gq[n] += g;
                gkj[n] += g;
                gv[n] = PB_K_FMA(dsv, t, gv[n]);
            }
        }
    }
}

/* What the data pass keeps for the weight pass: dpq [B·Tq, U], dpk [B·Tk, U], then the
 * increments of v's gradient [U] and g's [1]. */
struct attn_keep {
    float *dpq, *dpk, *gv, *gg;
};

static struct attn_keep keep_split(const struct pb_attn_desc *d, const void *keep)
{
    struct attn_keep s;
    s.dpq = (float *)keep;
    s.dpk = s.dpq + (size_t)d->batch * d->tq * d->units;
    s.gv = s.dpk + (size_t)d->batch * d->tk * d->units;
    s.gg = s.gv + d->units;
    return s;
}

size_t pb_cpu_attn_bwd_keep(struct pb_backend *be, const struct pb_attn_desc *d)
{
    (void)be;
    size_t b = (size_t)d->batch;
    return (b * ((size_t)d->tq + d->tk) * d->units + d->units + 1) * sizeof(float);
}

void pb_cpu_attn_bwd_data(struct pb_backend *be, const struct pb_attn_desc *d, const float *k,
                          const int32_t *lengths, const float *w, const void *ws,
                          const float *dctx, float *dq, float *dk, void *keep)
{
    if (!pb_cpu_begin(be) || !check_lengths(be, d, lengths))
        return;
    int B = d->batch, Tq = d->tq, Tk = d->tk, U = d->units, Hq = d->query, Hk = d->key;
    size_t nq = (size_t)B * Tq, nk = (size_t)B * Tk;
    int bs = attn_block(d), nb = (Tq + bs - 1) / bs, ntask = B * nb;
    struct pb_attn_weights p = pb_attn_weights_split(d, w);
    struct attn_ws s = ws_split(d, (void *)ws);
    struct attn_keep kp = keep_split(d, keep);
    float *dpq = kp.dpq, *dpk = kp.dpk;
    /* ds [B·Tq, Tk] (score gradients), the key gradients of query blocks 1..
     * [nb − 1, B·Tk, U] (block 0's go to dpk), gv per task [ntask, U], vh and dvhat [U],
     * the key gradient when dk is not wanted [B·Tk, Hk] */
    size_t floats = nq * Tk + nk * U * (size_t)(nb - 1) + (size_t)ntask * U + 2 * (size_t)U +
                    (dk ? 0 : nk * Hk);
    float *ds = pb_cpu_scratch(be, floats * sizeof(float));
    if (!ds)
        return;
    float *parts = ds + nq * Tk;
    float *gvs = parts + nk * U * (size_t)(nb - 1), *vh = gvs + (size_t)ntask * U;
    float *dvhat = vh + U, *dkk = dk ? dk : dvhat + U;
    double norm = normalised_v(d, &p, vh);
    for (int b = 0; b < B; b++) {
        const float *ab = s.a + (size_t)b * Tq * Tk, *kb = k + (size_t)b * Tk * Hk;
        const float *db = dctx + (size_t)b * Tq * Hk;
        /* da [Tq, Tk] = dctx[b] · k[b]ᵀ; dk[b] [Tk, Hk] = a[b]ᵀ · dctx[b] */
        pb_cpu_gemm(be, false, true, Tq, Tk, Hk, 1.0f, db, Hk, kb, Hk, 0.0f,
                    ds + (size_t)b * Tq * Tk, Tk);
        pb_cpu_gemm(be, true, false, Tk, Hk, Tq, 1.0f, ab, Tk, db, Hk, 0.0f,
                    dkk + (size_t)b * Tk * Hk, Hk);
    }
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(dynamic, 1)
    for (int t = 0; t < ntask; t++) {
        int b = t / nb, blk = t % nb, i0 = blk * bs, i1 = i0 + bs < Tq ? i0 + bs : Tq;
        float *gk = (blk ? parts + nk * U * (size_t)(blk - 1) : dpk) + (size_t)b * Tk * U;
        attn_bwd_task(d, &s, p.bias, vh, b, lengths ? lengths[b] : Tk, i0, i1, ds, dpq, gk,
                      gvs + (size_t)t * U);
    }
    /* dpk = block 0's + block 1's + … in that order, per element */
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (size_t r = 0; r < (nb > 1 ? nk : 0); r++)
        for (int blk = 1; blk < nb; blk++) {
            const float *src = parts + nk * U * (size_t)(blk - 1) + r * U;
            float *dst = dpk + r * U;
#pragma omp simd
            for (int n = 0; n < U; n++)
                dst[n] += src[n];
        }
    memset(dvhat, 0, (size_t)U * sizeof(float));
    for (int t = 0; t < ntask; t++) {
        const float *g = gvs + (size_t)t * U;
#pragma omp simd
        for (int n = 0; n < U; n++)
            dvhat[n] += g[n];
    }
    /* v̂ = g·v/‖v‖: dg = u·dv̂, dv = (g/‖v‖)(dv̂ − u (u·dv̂)) with u = v/‖v‖ */
    double udv = 0;
    for (int n = 0; n < U; n++)
        udv += p.v[n] / norm * dvhat[n];
    kp.gg[0] = (float)udv;
    for (int n = 0; n < U; n++)
        kp.gv[n] = (float)(p.g[0] / norm * (dvhat[n] - p.v[n] / norm * udv));
    if (dq)
        pb_cpu_gemm(be, false, false, (int)nq, Hq, U, 1.0f, dpq, U, p.wq, Hq, 0.0f, dq, Hq);
    if (dk)
        pb_cpu_gemm(be, false, false, (int)nk, Hk, U, 1.0f, dpk, U, p.wk, Hk, 1.0f, dk, Hk);
    pb_cpu_scratch_free(be, ds);
}

void pb_cpu_attn_bwd_weights(struct pb_backend *be, const struct pb_attn_desc *d,
                             const float *q, const float *k, const void *keep, float *dw_acc)
{
    if (!pb_cpu_begin(be))
        return;
    int U = d->units, Hq = d->query, Hk = d->key;
    int nq = d->batch * d->tq, nk = d->batch * d->tk;
    struct attn_keep kp = keep_split(d, keep);
    float *gv = dw_acc, *gg = gv + U, *gb = gg + 1, *gwq = gb + U, *gwk = gwq + (size_t)U * Hq;
    pb_cpu_bias_grad(be, kp.dpk, gb, nk, U);
    gg[0] += kp.gg[0];
    for (int n = 0; n < U; n++)
        gv[n] += kp.gv[n];
    pb_cpu_gemm(be, true, false, U, Hq, nq, 1.0f, kp.dpq, U, q, Hq, 1.0f, gwq, Hq);
    pb_cpu_gemm(be, true, false, U, Hk, nk, 1.0f, kp.dpk, U, k, Hk, 1.0f, gwk, Hk);
}

/* The fused backward: the two passes with their keep in scratch. */
void pb_cpu_attn_bwd(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                     const float *k, const int32_t *lengths, const float *w, const void *ws,
                     const float *dctx, float *dq, float *dk, float *dw_acc)
{
    if (!pb_cpu_begin(be))
        return;
    void *keep = pb_cpu_scratch(be, pb_cpu_attn_bwd_keep(be, d));
    if (!keep)
        return;
    pb_cpu_attn_bwd_data(be, d, k, lengths, w, ws, dctx, dq, dk, keep);
    pb_cpu_attn_bwd_weights(be, d, q, k, keep, dw_acc);
    pb_cpu_scratch_free(be, keep);
}
