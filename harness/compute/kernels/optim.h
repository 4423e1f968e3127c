/* harness/compute/kernels/optim.h — one element of the optimizer step (semantics §2) in
 * torch 1.13's single-tensor op order (NAdam: torch 2.x's): add(x, alpha) is fmaf(alpha, x,
 * a), addcmul(t1, t2, value) fmaf(value·t1, t2, a), addcdiv(t1, t2, value) a + (value·t1)/t2,
 * lerp(a, x, wt) fmaf(wt, x − a, a) for wt < 0.5, else fmaf(wt − 1, x − a, x). Each function
 * updates the element's weight w and state in place from its gradient g and returns d,
 * the gradient with L2 decay (what d_last keeps); the options are bool arguments, constant
 * in a caller's loop. Scalars: harness/compute/optim_kernels.h's struct pb_optim_coef. */
#ifndef PB_KERNELS_OPTIM_H
#define PB_KERNELS_OPTIM_H

#include "harness/compute/kernels/kernel.h"
#include "harness/compute/optim_kernels.h"

/* SGD (§2.1): d = g + λw (wd); with a buffer (buf, u > 0) b = first ? d : u·b + (1−τ)·d
 * and the step nesterov ? d + u·b : b, else the step d; w ← w − lr·step. */
PB_KERNEL float pb_k_sgd_step(const struct pb_optim_coef *c, bool wd, bool buf, bool first,
                              bool nesterov, float *w, float g, float *b)
{
    float d = wd ? fmaf(c->wd, *w, g) : g;
    float step = d;
    if (buf) {
        float bi = first ? d : fmaf(c->one_minus_damp, d, *b * c->mom);
        *b = bi;
        step = nesterov ? fmaf(c->mom, bi, d) : bi;
    }
    *w = fmaf(c->neg_lr, step, *w);
    return d;
}

/* Adam (§2.2) and AdamW (§2.3): w ← w·(1 − lr·λ) first (adamw); d = g + λw (l2, Adam's
 * decay); m = β1·m + (1−β1)·d, v = β2·v + (1−β2)·d²; w ← w − lr/bc1 · m/(√v/√bc2 + ε). */
PB_KERNEL float pb_k_adam_step(const struct pb_optim_coef *c, bool adamw, bool l2, float *w,
                               float g, float *m, float *v)
{
    float wi = adamw ? *w * c->decay : *w;
    float d = l2 ? fmaf(c->wd, wi, g) : g;
    float mi = fmaf(c->one_minus_beta1, d, *m * c->beta1);
    float vi = fmaf(c->one_minus_beta2 * d, d, *v * c->beta2);
    *m = mi;
    *v = vi;
    float denom = sqrtf(vi) / c->bc2_sqrt + c->eps;
    *w = wi + (c->neg_step_size * mi) / denom;
    return d;
}

/* RMSprop (§2.4): d = g + λw (wd); sq = α·sq + (1−α)·d²; with a buffer (buf, μ > 0)
 * b = μ·b + d/(√sq + ε), w ← w − lr·b; without, w ← w − lr·d/(√sq + ε). */
PB_KERNEL float pb_k_rmsprop_step(const struct pb_optim_coef *c, bool wd, bool buf, float *w,
                                  float g, float *sq, float *b)
{
    float d = wd ? fmaf(c->wd, *w, g) : g;
    float s = fmaf(c->one_minus_alpha * d, d, *sq * c->alpha);
    *sq = s;
    float avg = sqrtf(s) + c->eps;
    if (buf) {
        float bi = *b * c->mom + d / avg;
        *b = bi;
        *w = fmaf(c->neg_lr, bi, *w);
    } else {
        *w = *w + (c->neg_lr * d) / avg;
    }
    return d;
}

/* NAdam (§2.7, torch 2.x with decoupled decay): w ← w·(1 − lr·λ) (decay); m = lerp(m, g,
 * 1−β1); v = β2·v + (1−β2)·g²; den = √(v/bc2) + ε; w ← w + (nadam_g·g)/den, then
 * w ← w + (nadam_m·m)/den. Returns g (no L2 term to keep). */
PB_KERNEL float pb_k_nadam_step(const struct pb_optim_coef *c, bool decay, float *w, float g,
                                float *m, float *v)
{
    float wi = decay ? *w * c->decay : *w;
    float wt = c->one_minus_beta1;
    float mi = wt < 0.5f ? fmaf(wt, g - *m, *m) : fmaf(wt - 1.0f, g - *m, g);
    float vi = fmaf(c->one_minus_beta2 * g, g, *v * c->beta2);
    *m = mi;
    *v = vi;
    float denom = sqrtf(vi / c->bc2) + c->eps;
    wi = wi + (c->nadam_g * g) / denom;
    *w = wi + (c->nadam_m * mi) / denom;
    return g;
}

#endif
