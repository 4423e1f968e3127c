/* harness/compute/cpu/cpu_attention.c — GNMT's normalised Bahdanau attention on the CPU
 * (struct pb_attn_desc, backend.h): the projections and the context are sgemms, the
 * additive score Σ_n v̂_n tanh(pq + pk + bias) a loop per (query, key) pair. The forward
 * keeps pq [B·Tq, U], pk [B·Tk, U] and the weights a [B·Tq, Tk] in its workspace; the
 * backward forms tanh again instead of keeping the [B, Tq, Tk, U] tensor PyTorch keeps.
 * Every sum runs in a fixed order with each output owned by one thread (the key
 * gradients in a second pass over keys), so the bits never depend on the thread count. */
#include <math.h>
#include <string.h>

#include "harness/compute/cpu/cpu_internal.h"

/* The weights in the flat run w, PyTorch's parameters() order. */
struct attn_w {
    const float *v, *g, *bias, *wq, *wk;
};

static struct attn_w attn_split(const struct pb_attn_desc *d, const float *w)
{
    struct attn_w s;
    s.v = w;
    s.g = s.v + d->units;
    s.bias = s.g + 1;
    s.wq = s.bias + d->units;
    s.wk = s.wq + (size_t)d->units * d->query;
    return s;
}

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
static double normalised_v(const struct pb_attn_desc *d, const struct attn_w *p, float *vh)
{
    double ss = 0;
    for (int n = 0; n < d->units; n++)
        ss += (double)p->v[n] * p->v[n];
    double norm = sqrt(ss);
    for (int n = 0; n < d->units; n++)
        vh[n] = (float)(p->g[0] * p->v[n] / norm);
    return norm;
}

void pb_cpu_attn_fwd(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                     const float *k, const int32_t *lengths, const float *w, float *ctx, void *ws)
{
    if (!pb_cpu_begin(be) || !check_lengths(be, d, lengths))
        return;
    int B = d->batch, Tq = d->tq, Tk = d->tk, U = d->units, Hq = d->query, Hk = d->key;
    struct attn_w p = attn_split(d, w);
    void *tmp = ws ? NULL : pb_cpu_scratch(be, pb_cpu_attn_workspace(be, d));
    float *vh = pb_cpu_scratch(be, (size_t)U * sizeof(float));
    if ((!ws && !tmp) || !vh) {
        pb_cpu_scratch_free(be, tmp);
        pb_cpu_scratch_free(be, vh);
        return;
    }
    struct attn_ws s = ws_split(d, ws ? ws : tmp);
    pb_cpu_gemm(be, false, true, B * Tq, U, Hq, 1.0f, q, Hq, p.wq, Hq, 0.0f, s.pq, U);
    pb_cpu_gemm(be, false, true, B * Tk, U, Hk, 1.0f, k, Hk, p.wk, Hk, 0.0f, s.pk, U);
    normalised_v(d, &p, vh);
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int r = 0; r < B * Tq; r++) {
        int b = r / Tq, len = lengths ? lengths[b] : Tk;
        const float *pq = s.pq + (size_t)r * U;
        float *a = s.a + (size_t)r * Tk;
        float mx = -INFINITY;
        for (int j = 0; j < len; j++) {
            const float *pk = s.pk + ((size_t)b * Tk + j) * U;
            float sc = 0.0f;
            for (int n = 0; n < U; n++)
                sc += vh[n] * tanhf(pq[n] + pk[n] + p.bias[n]);
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
        pb_cpu_gemm(be, false, false, Tq, Hk, Tk, 1.0f, s.a + (size_t)b * Tq * Tk, Tk,
                    k + (size_t)b * Tk * Hk, Hk, 0.0f, ctx + (size_t)b * Tq * Hk, Hk);
    pb_cpu_scratch_free(be, vh);
    pb_cpu_scratch_free(be, tmp);
}

void pb_cpu_attn_weights(struct pb_backend *be, const struct pb_attn_desc *d, const void *ws,
                         float *a)
{
    if (!pb_cpu_begin(be))
        return;
    struct attn_ws s = ws_split(d, (void *)ws);
    memcpy(a, s.a, (size_t)d->batch * d->tq * d->tk * sizeof *a);
}

void pb_cpu_attn_bwd(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                     const float *k, const int32_t *lengths, const float *w, const void *ws,
                     const float *dctx, float *dq, float *dk, float *dw_acc)
{
    if (!pb_cpu_begin(be) || !check_lengths(be, d, lengths))
        return;
    int B = d->batch, Tq = d->tq, Tk = d->tk, U = d->units, Hq = d->query, Hk = d->key;
    size_t nq = (size_t)B * Tq, nk = (size_t)B * Tk;
    struct attn_w p = attn_split(d, w);
    struct attn_ws s = ws_split(d, (void *)ws);
    /* ds [B·Tq, Tk] (score gradients), dpq and dvh (v̂'s gradient per query) [B·Tq, U],
     * dpk [B·Tk, U], vh and dvhat [U], the key gradient when dk is not wanted [B·Tk, Hk] */
    size_t floats = nq * Tk + 2 * nq * U + nk * U + 2 * (size_t)U + (dk ? 0 : nk * Hk);
    float *ds = pb_cpu_scratch(be, floats * sizeof(float));
    if (!ds)
        return;
    float *dpq = ds + nq * Tk, *dvh = dpq + nq * U, *dpk = dvh + nq * U, *vh = dpk + nk * U;
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
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int r = 0; r < B * Tq; r++) {
        int b = r / Tq, len = lengths ? lengths[b] : Tk;
        const float *a = s.a + (size_t)r * Tk, *pq = s.pq + (size_t)r * U;
        float *dsr = ds + (size_t)r * Tk, *gq = dpq + (size_t)r * U, *gv = dvh + (size_t)r * U;
        double dot = 0;
        for (int j = 0; j < len; j++)
            dot += (double)a[j] * dsr[j];
        for (int j = 0; j < Tk; j++)  /* the softmax's backward */
            dsr[j] = j < len ? (float)(a[j] * (dsr[j] - dot)) : 0.0f;
        memset(gq, 0, (size_t)U * sizeof(float));
        memset(gv, 0, (size_t)U * sizeof(float));
        for (int j = 0; j < len; j++) {
            const float *pk = s.pk + ((size_t)b * Tk + j) * U;
            for (int n = 0; n < U; n++) {
                float t = tanhf(pq[n] + pk[n] + p.bias[n]);
                gq[n] += dsr[j] * vh[n] * (1.0f - t * t);
                gv[n] += dsr[j] * t;
            }
        }
    }
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (size_t r = 0; r < nk; r++) {
        int b = (int)(r / (size_t)Tk), j = (int)(r % (size_t)Tk);
        int len = lengths ? lengths[b] : Tk;
        const float *pk = s.pk + r * U;
        float *gk = dpk + r * U;
        memset(gk, 0, (size_t)U * sizeof(float));
        for (int i = 0; j < len && i < Tq; i++) {
            const float *pq = s.pq + ((size_t)b * Tq + i) * U;
            float dsv = ds[((size_t)b * Tq + i) * Tk + j];
            for (int n = 0; n < U; n++) {
                float t = tanhf(pq[n] + pk[n] + p.bias[n]);
                gk[n] += dsv * vh[n] * (1.0f - t * t);
            }
        }
    }
    float *gv = dw_acc, *gg = gv + U, *gb = gg + 1, *gwq = gb + U, *gwk = gwq + (size_t)U * Hq;
    pb_cpu_bias_grad(be, dpk, gb, (int)nk, U);
    memset(dvhat, 0, (size_t)U * sizeof(float));
    pb_cpu_bias_grad(be, dvh, dvhat, (int)nq, U);
    /* v̂ = g·v/‖v‖: dg = u·dv̂, dv = (g/‖v‖)(dv̂ − u (u·dv̂)) with u = v/‖v‖ */
    double udv = 0;
    for (int n = 0; n < U; n++)
        udv += p.v[n] / norm * dvhat[n];
    gg[0] += (float)udv;
    for (int n = 0; n < U; n++)
        gv[n] += (float)(p.g[0] / norm * (dvhat[n] - p.v[n] / norm * udv));
    pb_cpu_gemm(be, true, false, U, Hq, (int)nq, 1.0f, dpq, U, q, Hq, 1.0f, gwq, Hq);
    pb_cpu_gemm(be, true, false, U, Hk, (int)nk, 1.0f, dpk, U, k, Hk, 1.0f, gwk, Hk);
    if (dq)
        pb_cpu_gemm(be, false, false, (int)nq, Hq, U, 1.0f, dpq, U, p.wq, Hq, 0.0f, dq, Hq);
    if (dk)
        pb_cpu_gemm(be, false, false, (int)nk, Hk, U, 1.0f, dpk, U, p.wk, Hk, 1.0f, dk, Hk);
    pb_cpu_scratch_free(be, ds);
}
