/* harness/compute/cpu/cpu_predict.c — the weight prediction kernel Ŵ = W − lr·s·ΔW
 * (SPEC §3) of the CPU backend: ΔW by the formula the predictors described, on the
 * instance's threads in chunks (elementwise, so the bits never depend on the thread count). */
#include <math.h>
#include <string.h>

#include "harness/compute/cpu/cpu_internal.h"

/* w_hat[i] = fmaf(scale, ΔW_i, w[i]) for i in [lo, hi); every array [a->n]. */
static void predict_range(const struct pb_predict_args *a, size_t lo, size_t hi)
{
    const struct pb_dw_desc *d = &a->dw;
    const float *w = a->w, *x = d->x, *y = d->y;
    float *w_hat = a->w_hat, scale = a->scale;
    switch (d->kind) {
    case PB_DW_LINEAR:
        if (y) {
            for (size_t i = lo; i < hi; i++) {
                float dw = d->a * x[i] + d->b * y[i];
                w_hat[i] = fmaf(scale, dw, w[i]);
            }
        } else {
            for (size_t i = lo; i < hi; i++) {
                float dw = d->a * x[i];
                w_hat[i] = fmaf(scale, dw, w[i]);
            }
        }
        break;
    case PB_DW_ADAM:
        for (size_t i = lo; i < hi; i++) {
            float denom = sqrtf(d->v[i]) / d->bc2_sqrt + d->eps;
            float dw = (d->m[i] / d->bc1) / denom;
            w_hat[i] = fmaf(scale, dw, w[i]);
        }
        break;
    case PB_DW_RMS:
        for (size_t i = lo; i < hi; i++) {
            float dw = x[i] / (sqrtf(d->sq[i]) + d->eps);
            w_hat[i] = fmaf(scale, dw, w[i]);
        }
        break;
    case PB_DW_ZERO:
        if (w_hat != w)
            memmove(w_hat + lo, w + lo, (hi - lo) * sizeof *w);
        break;
    }
}

void pb_cpu_predict(struct pb_backend *be, const struct pb_predict_args *a)
{
    const struct pb_dw_desc *d = &a->dw;
    switch (d->kind) {
    case PB_DW_ZERO:
        break;
    case PB_DW_LINEAR:
        PB_CHECK(d->x != NULL);
        break;
    case PB_DW_ADAM:
        PB_CHECK(d->m && d->v);
        break;
    case PB_DW_RMS:
        PB_CHECK(d->x && d->sq);
        break;
    default:
        PB_CHECK(!"unknown ΔW formula");
    }
    if (!pb_cpu_begin(be))
        return;
    size_t n = a->n, nch = (n + PB_CPU_CHUNK - 1) / PB_CPU_CHUNK;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (size_t ch = 0; ch < nch; ch++) {
        size_t lo = ch * PB_CPU_CHUNK, hi = lo + PB_CPU_CHUNK < n ? lo + PB_CPU_CHUNK : n;
        predict_range(a, lo, hi);
    }
}
