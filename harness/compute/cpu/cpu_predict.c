/* harness/compute/cpu/cpu_predict.c — the weight prediction kernel Ŵ = W − lr·s·ΔW
 * (semantics §3.1) of the CPU backend: ΔW by the formula the predictors described, each
 * element by harness/compute/kernels/predict.h, one vectorised loop per formula, on the
 * instance's threads in chunks (elementwise, so the bits never depend on the thread
 * count). */
#include <string.h>

#include "harness/compute/cpu/cpu_internal.h"
#include "harness/compute/kernels/predict.h"

/* w_hat[i] = fmaf(scale, ΔW_i, w[i]) for i in [lo, hi) with ΔW of formula kind (not
 * ZERO; has_y: LINEAR's y is there) from the arrays of a (every one [a->n]); inplace:
 * w_hat = w, read through w_hat (w_in unused), else w = w_in, which w_hat does not
 * overlap. Called with constant kind, has_y and inplace, so that each gets a loop of its
 * own, without tests and vectorised. */
static inline void predict_loop(const struct pb_predict_args *a, size_t lo, size_t hi,
                                float *restrict w_hat, const float *restrict w_in,
                                const float *restrict x, const float *restrict y,
                                const float *restrict m, const float *restrict v,
                                const float *restrict sq, enum pb_dw_kind kind, bool has_y,
                                bool inplace)
{
    const struct pb_dw_desc *d = &a->dw;
    float ca = d->a, cb = d->b, bc1 = d->bc1, bc2_sqrt = d->bc2_sqrt, eps = d->eps;
    float scale = a->scale;
    for (size_t i = lo; i < hi; i++) {
        float dw;
        if (kind == PB_DW_LINEAR)
            dw = has_y ? pb_k_dw_linear2(ca, x[i], cb, y[i]) : pb_k_dw_linear1(ca, x[i]);
        else if (kind == PB_DW_ADAM)
            dw = pb_k_dw_adam(m[i], v[i], bc1, bc2_sqrt, eps);
        else
            dw = pb_k_dw_rms(x[i], sq[i], eps);
        w_hat[i] = pb_k_predict(scale, dw, inplace ? w_hat[i] : w_in[i]);
    }
}

static void predict_range(const struct pb_predict_args *a, size_t lo, size_t hi)
{
    bool has_y = a->dw.y != NULL, inplace = a->w_hat == a->w;
#define PB_PREDICT(kind_, has_y_, inplace_)                                            \
    predict_loop(a, lo, hi, a->w_hat, a->w, a->dw.x, a->dw.y, a->dw.m, a->dw.v,        \
                 a->dw.sq, kind_, has_y_, inplace_)
    switch (a->dw.kind) {
    case PB_DW_LINEAR:
        if (has_y && inplace)
            PB_PREDICT(PB_DW_LINEAR, true, true);
        else if (has_y)
            PB_PREDICT(PB_DW_LINEAR, true, false);
        else if (inplace)
            PB_PREDICT(PB_DW_LINEAR, false, true);
        else
            PB_PREDICT(PB_DW_LINEAR, false, false);
        break;
    case PB_DW_ADAM:
        if (inplace)
            PB_PREDICT(PB_DW_ADAM, false, true);
        else
            PB_PREDICT(PB_DW_ADAM, false, false);
        break;
    case PB_DW_RMS:
        if (inplace)
            PB_PREDICT(PB_DW_RMS, false, true);
        else
            PB_PREDICT(PB_DW_RMS, false, false);
        break;
    case PB_DW_ZERO:
        if (!inplace)
            memmove(a->w_hat + lo, a->w + lo, (hi - lo) * sizeof *a->w);
        break;
    }
#undef PB_PREDICT
}

void pb_cpu_predict(struct pb_backend *be, const struct pb_predict_args *a)
{
    pb_predict_args_check(a);
    if (!pb_cpu_begin(be))
        return;
    PB_CPU_CHUNKED(be, a->n, lo, hi, predict_range(a, lo, hi));
}
