/* tests/support/op_refs.c — the naive op references of op_refs.h: plain loops in double from
 * backend.h's and optim_kernels.h's contracts (the references of test_backend_ops and
 * test_backend_cpu); the LSTM's and the attention's gradients by central differences. */
#include "tests/support/op_refs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pb_ref_to_float(float *dst, const double *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)src[i];
}

static size_t idx4(struct pb_shape s, int n, int c, int h, int w)
{
    return (((size_t)n * s.c + c) * s.h + h) * s.w + w;
}

void pb_ref_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, const float *c0, float *y, int ldc)
{
    memcpy(y, c0, (size_t)m * ldc * sizeof *y);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++)
                s += (double)(ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]) *
                     (tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j]);
            y[(size_t)i * ldc + j] = (float)(alpha * s + (double)beta * c0[(size_t)i * ldc + j]);
        }
}

void pb_ref_conv(const struct pb_conv_desc *d, struct pb_shape xs, const float *x, const float *w,
                 const float *b, const float *dy, double *y, double *dx, double *dw, double *db)
{
    struct pb_shape ys = {xs.n, d->cout, (xs.h + 2 * d->ph - d->kh) / d->sh + 1,
                          (xs.w + 2 * d->pw - d->kw) / d->sw + 1};
    struct pb_shape ws = {d->cout, d->cin, d->kh, d->kw};
    memset(dx, 0, pb_shape_count(xs) * sizeof *dx);
    memset(dw, 0, pb_shape_count(ws) * sizeof *dw);
    memset(db, 0, (size_t)d->cout * sizeof *db);
    for (int n = 0; n < ys.n; n++)
        for (int o = 0; o < ys.c; o++)
            for (int oh = 0; oh < ys.h; oh++)
                for (int ow = 0; ow < ys.w; ow++) {
                    size_t yi = idx4(ys, n, o, oh, ow);
                    double g = dy[yi], s = d->bias ? b[o] : 0.0;
                    db[o] += g;
                    for (int c = 0; c < d->cin; c++)
                        for (int i = 0; i < d->kh; i++)
                            for (int j = 0; j < d->kw; j++) {
                                int ih = oh * d->sh - d->ph + i, iw = ow * d->sw - d->pw + j;
                                if (ih < 0 || ih >= xs.h || iw < 0 || iw >= xs.w)
                                    continue;
                                size_t xi = idx4(xs, n, c, ih, iw), wi = idx4(ws, o, c, i, j);
                                s += (double)x[xi] * w[wi];
                                dx[xi] += g * w[wi];
                                dw[wi] += g * x[xi];
                            }
                    y[yi] = s;
                }
}

static int torch_pool_out(int in, int k, int s, int p, bool ceil_mode)
{
    int out = (in + 2 * p - k + (ceil_mode ? s - 1 : 0)) / s + 1;
    if (ceil_mode && (out - 1) * s >= in + p)
        out--;
    return out;
}

struct pb_shape pb_ref_pool_shape(const struct pb_pool_desc *d, struct pb_shape xs)
{
    return (struct pb_shape){xs.n, xs.c, torch_pool_out(xs.h, d->kh, d->sh, d->ph, d->ceil_mode),
                             torch_pool_out(xs.w, d->kw, d->sw, d->pw, d->ceil_mode)};
}

void pb_ref_pool(const struct pb_pool_desc *d, struct pb_shape xs, struct pb_shape ys,
                 const float *x, const float *dy, double *y, double *dx)
{
    memset(dx, 0, pb_shape_count(xs) * sizeof *dx);
    for (int n = 0; n < ys.n; n++)
        for (int c = 0; c < ys.c; c++)
            for (int oh = 0; oh < ys.h; oh++)
                for (int ow = 0; ow < ys.w; ow++) {
                    int hs = oh * d->sh - d->ph, ws = ow * d->sw - d->pw;
                    int he = hs + d->kh < xs.h + d->ph ? hs + d->kh : xs.h + d->ph;
                    int we = ws + d->kw < xs.w + d->pw ? ws + d->kw : xs.w + d->pw;
                    int pool_size = (he - hs) * (we - ws);
                    hs = hs > 0 ? hs : 0, ws = ws > 0 ? ws : 0;
                    he = he < xs.h ? he : xs.h, we = we < xs.w ? we : xs.w;
                    size_t yi = idx4(ys, n, c, oh, ow), am = 0;
                    double acc = d->kind == PB_POOL_MAX ? -INFINITY : 0.0;
                    for (int ih = hs; ih < he; ih++)
                        for (int iw = ws; iw < we; iw++) {
                            size_t xi = idx4(xs, n, c, ih, iw);
                            if (d->kind == PB_POOL_AVG)
                                acc += x[xi];
                            else if (x[xi] > acc)
                                acc = x[xi], am = xi;
                        }
                    if (d->kind == PB_POOL_MAX) {
                        y[yi] = acc;
                        dx[am] += dy[yi];
                        continue;
                    }
                    int div = d->exclude_pad ? (he - hs) * (we - ws) : pool_size;
                    y[yi] = acc / div;
                    for (int ih = hs; ih < he; ih++)
                        for (int iw = ws; iw < we; iw++)
                            dx[idx4(xs, n, c, ih, iw)] += dy[yi] / div;
                }
}

void pb_ref_bn(struct pb_ref_bn *r, float *y, float *dx, float *dgamma, float *dbeta,
               float *y_infer)
{
    struct pb_shape s = r->x;
    size_t hw = (size_t)s.h * s.w;
    double m = (double)s.n * hw;
    for (int ch = 0; ch < s.c; ch++) {
        double mean = 0, var = 0;
        for (int n = 0; n < s.n; n++)
            for (size_t i = 0; i < hw; i++)
                mean += r->xv[idx4(s, n, ch, 0, 0) + i];
        mean /= m;
        for (int n = 0; n < s.n; n++)
            for (size_t i = 0; i < hw; i++) {
                double t = r->xv[idx4(s, n, ch, 0, 0) + i] - mean;
                var += t * t;
            }
        var /= m;
        double rs = 1.0 / sqrt(var + r->eps), g = r->gamma[ch], b = r->beta[ch];
        double irs = 1.0 / sqrt((double)r->inf_var[ch] + r->eps);
        double sdy = 0, sdyx = 0;
        for (int n = 0; n < s.n; n++)
            for (size_t i = 0; i < hw; i++) {
                size_t k = idx4(s, n, ch, 0, 0) + i;
                double xh = (r->xv[k] - mean) * rs, v = g * xh + b;
                double vi = g * (r->xv[k] - r->inf_mean[ch]) * irs + b;
                y[k] = (float)(r->relu && v < 0 ? 0 : v);
                y_infer[k] = (float)(r->relu && vi < 0 ? 0 : vi);
            }
        for (int n = 0; n < s.n; n++)
            for (size_t i = 0; i < hw; i++) {
                size_t k = idx4(s, n, ch, 0, 0) + i;
                const float *my = r->mask_y ? r->mask_y : y;
                double gdy = !r->relu || my[k] > 0 ? r->dy[k] : 0.0;
                sdy += gdy;
                sdyx += gdy * (r->xv[k] - mean) * rs;
            }
        for (int n = 0; n < s.n; n++)
            for (size_t i = 0; i < hw; i++) {
                size_t k = idx4(s, n, ch, 0, 0) + i;
                const float *my = r->mask_y ? r->mask_y : y;
                double gdy = !r->relu || my[k] > 0 ? r->dy[k] : 0.0;
                double xh = (r->xv[k] - mean) * rs;
                dx[k] = (float)(g * rs * (gdy - sdy / m - xh * sdyx / m));
            }
        dgamma[ch] = (float)sdyx;
        dbeta[ch] = (float)sdy;
        double mom = r->momentum;
        r->run_mean[ch] = (float)((1 - mom) * r->run_mean[ch] + mom * mean);
        r->run_var[ch] = (float)((1 - mom) * r->run_var[ch] + mom * var * m / (m - 1));
    }
}

void pb_ref_softmax_xent(const float *z, const int32_t *labels, int n, int c, float eps_ls,
                         int ignore, int grad_rows, float res[3], float *dz)
{
    int counted = 0, correct = 0;
    for (int r = 0; r < n; r++)
        counted += ignore < 0 || labels[r] != ignore;
    int div = grad_rows > 0 ? grad_rows : counted;
    double loss = 0;
    for (int r = 0; r < n; r++) {
        const float *zr = z + (size_t)r * c;
        float *dr = dz + (size_t)r * c;
        if (ignore >= 0 && labels[r] == ignore) {
            memset(dr, 0, (size_t)c * sizeof *dr);
            continue;
        }
        double mx = -INFINITY, s = 0;
        int am = 0;
        for (int j = 0; j < c; j++) {
            if (zr[j] > zr[am])
                am = j;
            mx = fmax(mx, zr[j]);
        }
        correct += am == labels[r];
        for (int j = 0; j < c; j++)
            s += exp(zr[j] - mx);
        double lse = mx + log(s);
        for (int j = 0; j < c; j++) {
            double t = (double)eps_ls / c + (j == labels[r] ? 1.0 - eps_ls : 0.0);
            loss += t * (lse - zr[j]);
            dr[j] = (float)((exp(zr[j] - lse) - t) / div);
        }
    }
    res[0] = counted ? (float)(loss / counted) : 0.0f;
    res[1] = (float)correct;
    res[2] = (float)counted;
}

/* ---- LSTM ---- */

static double sigm(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

/* The forward in double on x [B, T, I] and w (backend.h's flat run): y [B, T, H], the
 * final states; returns Σ dy·y when dy is not NULL. */
static double lstm_fwd_d(const struct pb_lstm_desc *d, const double *x, const double *w,
                         const float *h0, const float *c0, const float *dy, double *y,
                         double *hl, double *cl)
{
    int B = d->batch, T = d->steps, I = d->input, H = d->hidden;
    const double *wih = w, *whh = wih + 4 * (size_t)H * I, *bih = whh + 4 * (size_t)H * H;
    const double *bhh = bih + 4 * H;
    double *h = malloc((size_t)H * sizeof *h), *c = malloc((size_t)H * sizeof *c);
    double *g = malloc(4 * (size_t)H * sizeof *g), *hn = malloc((size_t)H * sizeof *hn);
    double loss = 0;
    for (int b = 0; b < B; b++) {
        for (int j = 0; j < H; j++) {
            h[j] = h0 ? h0[(size_t)b * H + j] : 0.0;
            c[j] = c0 ? c0[(size_t)b * H + j] : 0.0;
        }
        for (int t = 0; t < T; t++) {
            const double *xt = x + ((size_t)b * T + t) * I;
            for (int r = 0; r < 4 * H; r++) {
                double s = bih[r] + bhh[r];
                for (int i = 0; i < I; i++)
                    s += wih[(size_t)r * I + i] * xt[i];
                for (int i = 0; i < H; i++)
                    s += whh[(size_t)r * H + i] * h[i];
                g[r] = s;
            }
            for (int j = 0; j < H; j++) {
                double ig = sigm(g[j]), fg = sigm(g[H + j]), gg = tanh(g[2 * H + j]);
                double og = sigm(g[3 * H + j]);
                c[j] = fg * c[j] + ig * gg;
                hn[j] = og * tanh(c[j]);
            }
            memcpy(h, hn, (size_t)H * sizeof *h);
            size_t yo = ((size_t)b * T + t) * H;
            for (int j = 0; j < H; j++) {
                if (y)
                    y[yo + j] = h[j];
                if (dy)
                    loss += dy[yo + j] * h[j];
            }
        }
        for (int j = 0; j < H && hl; j++)
            hl[(size_t)b * H + j] = h[j], cl[(size_t)b * H + j] = c[j];
    }
    free(h), free(c), free(g), free(hn);
    return loss;
}

static double *widen(const float *v, size_t n)
{
    double *d = malloc((n + 1) * sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = v[i];
    return d;
}

/* Central difference of f at p[i] (f reads p). */
#define PB_REF_STEP 1e-6
#define CENTRAL(p, i, f)                                                               \
    ({                                                                                 \
        double p0_ = (p)[i];                                                           \
        (p)[i] = p0_ + PB_REF_STEP;                                                    \
        double fp_ = (f);                                                              \
        (p)[i] = p0_ - PB_REF_STEP;                                                    \
        double fm_ = (f);                                                              \
        (p)[i] = p0_;                                                                  \
        (fp_ - fm_) / (2 * PB_REF_STEP);                                               \
    })

void pb_ref_lstm(const struct pb_lstm_desc *d, const float *x, const float *w, const float *h0,
                 const float *c0, const float *dy, float *y, float *h_last, float *c_last,
                 float *dx, float *dw)
{
    size_t nx = (size_t)d->batch * d->steps * d->input, ny = (size_t)d->batch * d->steps * d->hidden;
    size_t nw = 4 * (size_t)d->hidden * (d->input + d->hidden + 2), ns = (size_t)d->batch * d->hidden;
    double *xd = widen(x, nx), *wd = widen(w, nw), *yd = malloc(ny * sizeof *yd);
    double *hl = malloc(ns * sizeof *hl), *cl = malloc(ns * sizeof *cl);
    lstm_fwd_d(d, xd, wd, h0, c0, NULL, yd, hl, cl);
    pb_ref_to_float(y, yd, ny);
    if (h_last)
        pb_ref_to_float(h_last, hl, ns), pb_ref_to_float(c_last, cl, ns);
    for (size_t i = 0; dy && dx && i < nx; i++)
        dx[i] = (float)CENTRAL(xd, i, lstm_fwd_d(d, xd, wd, h0, c0, dy, NULL, NULL, NULL));
    for (size_t i = 0; dy && dw && i < nw; i++)
        dw[i] = (float)CENTRAL(wd, i, lstm_fwd_d(d, xd, wd, h0, c0, dy, NULL, NULL, NULL));
    free(xd), free(wd), free(yd), free(hl), free(cl);
}

/* ---- attention ---- */

/* The forward in double: ctx [B, tq, key], a [B, tq, tk], pk [B, tk, U] where not NULL;
 * returns Σ dctx·ctx when dctx is not NULL. */
static double attn_fwd_d(const struct pb_attn_desc *d, const double *q, const double *k,
                         const int32_t *lengths, const double *w, const float *dctx, double *ctx,
                         double *a, double *pk_out)
{
    int B = d->batch, TQ = d->tq, TK = d->tk, Q = d->query, K = d->key, U = d->units;
    const double *v = w, *gs = v + U, *bias = gs + 1, *wq = bias + U, *wk = wq + (size_t)U * Q;
    double nv = 0;
    for (int u = 0; u < U; u++)
        nv += v[u] * v[u];
    nv = sqrt(nv);
    double *vh = malloc((size_t)U * sizeof *vh), *pq = malloc((size_t)U * sizeof *pq);
    double *pk = malloc((size_t)TK * U * sizeof *pk), *s = malloc((size_t)TK * sizeof *s);
    for (int u = 0; u < U; u++)
        vh[u] = gs[0] * v[u] / nv;
    double loss = 0;
    for (int b = 0; b < B; b++) {
        int len = lengths ? lengths[b] : TK;
        for (int j = 0; j < TK; j++)
            for (int u = 0; u < U; u++) {
                double t = 0;
                for (int i = 0; i < K; i++)
                    t += k[((size_t)b * TK + j) * K + i] * wk[(size_t)u * K + i];
                pk[(size_t)j * U + u] = t;
                if (pk_out)
                    pk_out[((size_t)b * TK + j) * U + u] = t;
            }
        for (int i = 0; i < TQ; i++) {
            const double *qi = q + ((size_t)b * TQ + i) * Q;
            for (int u = 0; u < U; u++) {
                double t = 0;
                for (int p = 0; p < Q; p++)
                    t += qi[p] * wq[(size_t)u * Q + p];
                pq[u] = t;
            }
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < len; j++) {
                double t = 0;
                for (int u = 0; u < U; u++)
                    t += vh[u] * tanh(pq[u] + pk[(size_t)j * U + u] + bias[u]);
                s[j] = t;
                mx = fmax(mx, t);
            }
            for (int j = 0; j < len; j++)
                sum += exp(s[j] - mx);
            size_t ro = (size_t)b * TQ + i;
            for (int j = 0; j < TK; j++) {
                double aj = j < len ? exp(s[j] - mx) / sum : 0.0;
                if (a)
                    a[ro * TK + j] = aj;
                s[j] = aj;
            }
            for (int p = 0; p < K; p++) {
                double t = 0;
                for (int j = 0; j < len; j++)
                    t += s[j] * k[((size_t)b * TK + j) * K + p];
                if (ctx)
                    ctx[ro * K + p] = t;
                if (dctx)
                    loss += dctx[ro * K + p] * t;
            }
        }
    }
    free(vh), free(pq), free(pk), free(s);
    return loss;
}

void pb_ref_attn(const struct pb_attn_desc *d, const float *q, const float *k,
                 const int32_t *lengths, const float *w, const float *dctx, float *ctx, float *a,
                 float *pk, float *dq, float *dk, float *dw)
{
    size_t nq = (size_t)d->batch * d->tq * d->query, nk = (size_t)d->batch * d->tk * d->key;
    size_t nctx = (size_t)d->batch * d->tq * d->key, na = (size_t)d->batch * d->tq * d->tk;
    size_t nw = (size_t)d->units * (2 + d->query + d->key) + 1;
    size_t npk = (size_t)d->batch * d->tk * d->units;
    double *qd = widen(q, nq), *kd = widen(k, nk), *wd = widen(w, nw);
    double *cd = malloc(nctx * sizeof *cd), *ad = malloc(na * sizeof *ad);
    double *pd = malloc(npk * sizeof *pd);
    attn_fwd_d(d, qd, kd, lengths, wd, NULL, cd, ad, pd);
    pb_ref_to_float(ctx, cd, nctx);
    pb_ref_to_float(a, ad, na);
    pb_ref_to_float(pk, pd, npk);
    for (size_t i = 0; i < nq; i++)
        dq[i] = (float)CENTRAL(qd, i, attn_fwd_d(d, qd, kd, lengths, wd, dctx, NULL, NULL, NULL));
    for (size_t i = 0; i < nk; i++)
        dk[i] = (float)CENTRAL(kd, i, attn_fwd_d(d, qd, kd, lengths, wd, dctx, NULL, NULL, NULL));
    for (size_t i = 0; i < nw; i++)
        dw[i] = (float)CENTRAL(wd, i, attn_fwd_d(d, qd, kd, lengths, wd, dctx, NULL, NULL, NULL));
    free(qd), free(kd), free(wd), free(cd), free(ad), free(pd);
}

/* ---- optimizer step, prediction ---- */

void pb_ref_optim_step(struct pb_ref_optim *r)
{
    const struct pb_optim_coef *c = &r->c;
    double lr = -(double)c->neg_lr, lam = c->wd, mom = c->mom;
    for (size_t i = 0; i < r->n; i++) {
        double g = r->g[i], w = r->w[i], dd;
        switch (r->family) {
        case PB_OPTK_SGD: {
            dd = g + lam * w;
            double step = dd;
            if (r->buf) {
                double b = r->first ? dd : mom * r->buf[i] + (double)c->one_minus_damp * dd;
                r->buf[i] = (float)b;
                step = r->nesterov ? dd + mom * b : b;
            }
            w -= lr * step;
            break;
        }
        case PB_OPTK_ADAM:
        case PB_OPTK_ADAMW: {
            bool adamw = r->family == PB_OPTK_ADAMW;
            if (adamw)
                w *= c->decay;
            dd = adamw ? g : g + lam * w;
            double m = c->beta1 * (double)r->m[i] + (double)c->one_minus_beta1 * dd;
            double v = c->beta2 * (double)r->v[i] + (double)c->one_minus_beta2 * dd * dd;
            r->m[i] = (float)m, r->v[i] = (float)v;
            w += (double)c->neg_step_size * m / (sqrt(v) / c->bc2_sqrt + c->eps);
            break;
        }
        case PB_OPTK_NADAM: {
            if (lam != 0)
                w *= c->decay;
            dd = g;
            double m = r->m[i] + (double)c->one_minus_beta1 * (g - r->m[i]);
            double v = c->beta2 * (double)r->v[i] + (double)c->one_minus_beta2 * g * g;
            r->m[i] = (float)m, r->v[i] = (float)v;
            double den = sqrt(v / c->bc2) + c->eps;
            w += (double)c->nadam_g * g / den + (double)c->nadam_m * m / den;
            break;
        }
        case PB_OPTK_RMSPROP:
        default: {
            dd = g + lam * w;
            double sq = c->alpha * (double)r->sq[i] + (double)c->one_minus_alpha * dd * dd;
            r->sq[i] = (float)sq;
            double avg = sqrt(sq) + c->eps;
            if (r->buf) {
                double b = mom * r->buf[i] + dd / avg;
                r->buf[i] = (float)b;
                w -= lr * b;
            } else {
                w -= lr * dd / avg;
            }
            break;
        }
        }
        r->w[i] = (float)w;
        if (r->d_last)
            r->d_last[i] = (float)dd;
        if (r->g_last)
            r->g_last[i] = (float)g;
        if (r->zero_grad)
            r->g[i] = 0.0f;
    }
}

void pb_ref_predict(const struct pb_dw_desc *d, float scale, size_t n, const float *w,
                    float *w_hat)
{
    for (size_t i = 0; i < n; i++) {
        double dw = 0;
        switch (d->kind) {
        case PB_DW_ZERO:
            break;
        case PB_DW_LINEAR:
            dw = (double)d->a * d->x[i] + (d->y ? (double)d->b * d->y[i] : 0.0);
            break;
        case PB_DW_ADAM:
            dw = ((double)d->m[i] / d->bc1) / (sqrt((double)d->v[i]) / d->bc2_sqrt + d->eps);
            break;
        case PB_DW_RMS:
            dw = d->x[i] / (sqrt((double)d->sq[i]) + d->eps);
            break;
        }
        w_hat[i] = (float)(w[i] + (double)scale * dw);
    }
}
