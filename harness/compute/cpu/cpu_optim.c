/* harness/compute/cpu/cpu_optim.c — the optimizer step kernel (SPEC §2) of the CPU backend
 * over a stage's flat buffer, in torch 1.13's single-tensor op order, on the instance's
 * threads in chunks (elementwise, so the bits never depend on the thread count). */
#include <math.h>

#include "harness/compute/cpu/cpu_internal.h"

/* The loops below follow torch 1.13's CPU kernels: add(x, alpha) is fmaf(alpha, x, a),
 * addcmul(t1, t2, value) is fmaf(value·t1, t2, a), addcdiv(t1, t2, value) is
 * a + (value·t1)/t2, division by a Python scalar is a true division. Each runs over
 * elements [lo, hi) of the arrays of a ([a->n] each). */

static void step_sgd(const struct pb_optim_step_args *a, size_t lo, size_t hi)
{
    const struct pb_optim_coef *c = &a->c;
    float *w = a->w, *buf = a->buf, *d_last = a->d_last, *g_last = a->g_last;
    const float *g = a->g;
    bool first = a->first, nesterov = a->nesterov;
    for (size_t i = lo; i < hi; i++) {
        float d = c->wd != 0.0f ? fmaf(c->wd, w[i], g[i]) : g[i];
        if (d_last)
            d_last[i] = d;
        if (g_last)
            g_last[i] = g[i];
        float step = d;
        if (buf) {
            float b = first ? d : fmaf(c->one_minus_damp, d, buf[i] * c->mom);
            buf[i] = b;
            step = nesterov ? fmaf(c->mom, b, d) : b;
        }
        w[i] = fmaf(c->neg_lr, step, w[i]);
    }
}

static void step_adam(const struct pb_optim_step_args *a, size_t lo, size_t hi)
{
    const struct pb_optim_coef *c = &a->c;
    bool adamw = a->family == PB_OPTK_ADAMW;
    float l2 = adamw ? 0.0f : c->wd;  /* AdamW: decoupled decay instead of L2 */
    float *w = a->w, *m = a->m, *v = a->v, *d_last = a->d_last, *g_last = a->g_last;
    const float *g = a->g;
    for (size_t i = lo; i < hi; i++) {
        float wi = adamw ? w[i] * c->decay : w[i];
        float d = l2 != 0.0f ? fmaf(l2, wi, g[i]) : g[i];
        if (d_last)
            d_last[i] = d;
        if (g_last)
            g_last[i] = g[i];
        float mi = fmaf(c->one_minus_beta1, d, m[i] * c->beta1);
        float vi = fmaf(c->one_minus_beta2 * d, d, v[i] * c->beta2);
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) / c->bc2_sqrt + c->eps;
        w[i] = wi + (c->neg_step_size * mi) / denom;
    }
}

static void step_rmsprop(const struct pb_optim_step_args *a, size_t lo, size_t hi)
{
    const struct pb_optim_coef *c = &a->c;
    float *w = a->w, *sq = a->sq, *buf = a->buf, *d_last = a->d_last, *g_last = a->g_last;
    const float *g = a->g;
    for (size_t i = lo; i < hi; i++) {
        float d = c->wd != 0.0f ? fmaf(c->wd, w[i], g[i]) : g[i];
        if (d_last)
            d_last[i] = d;
        if (g_last)
            g_last[i] = g[i];
        float s = fmaf(c->one_minus_alpha * d, d, sq[i] * c->alpha);
        sq[i] = s;
        float avg = sqrtf(s) + c->eps;
        if (buf) {
            float b = buf[i] * c->mom + d / avg;
            buf[i] = b;
            w[i] = fmaf(c->neg_lr, b, w[i]);
        } else {
            w[i] = w[i] + (c->neg_lr * d) / avg;
        }
    }
}

void pb_cpu_optim_step(struct pb_backend *be, const struct pb_optim_step_args *a)
{
    void (*step)(const struct pb_optim_step_args *a, size_t lo, size_t hi) = NULL;
    switch (a->family) {
    case PB_OPTK_SGD:
        step = step_sgd;
        break;
    case PB_OPTK_ADAM:
    case PB_OPTK_ADAMW:
        PB_CHECK(a->m && a->v);
        step = step_adam;
        break;
    case PB_OPTK_RMSPROP:
        PB_CHECK(a->sq);
        step = step_rmsprop;
        break;
    }
    PB_CHECK(step != NULL);
    if (!pb_cpu_begin(be))
        return;
    size_t n = a->n, nch = (n + PB_CPU_CHUNK - 1) / PB_CPU_CHUNK;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (size_t ch = 0; ch < nch; ch++) {
        size_t lo = ch * PB_CPU_CHUNK, hi = lo + PB_CPU_CHUNK < n ? lo + PB_CPU_CHUNK : n;
        step(a, lo, hi);
    }
}
