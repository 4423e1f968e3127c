/* harness/compute/kernels/predict.h — one element of the weight prediction Ŵ = W − lr·s·ΔW
 * (semantics §3.1): ΔW by each formula of enum pb_dw_kind (§3.2,
 * harness/compute/optim_kernels.h), then ŵ = fmaf(scale, ΔW, w) with scale = −lr·s. */
#ifndef PB_KERNELS_PREDICT_H
#define PB_KERNELS_PREDICT_H

#include "harness/compute/kernels/kernel.h"
#include "harness/compute/optim_kernels.h"

/* PB_DW_LINEAR without y: ΔW = a·x */
PB_KERNEL float pb_k_dw_linear1(float a, float x)
{
    return a * x;
}

/* PB_DW_LINEAR: ΔW = a·x + b·y (two products, one rounded sum: no fused multiply-add) */
PB_KERNEL float pb_k_dw_linear2(float a, float x, float b, float y)
{
    return a * x + b * y;
}

/* PB_DW_ADAM: ΔW = (m / bc1) / (√v / bc2_sqrt + eps) */
PB_KERNEL float pb_k_dw_adam(float m, float v, float bc1, float bc2_sqrt, float eps)
{
    float denom = sqrtf(v) / bc2_sqrt + eps;
    return (m / bc1) / denom;
}

/* PB_DW_RMS: ΔW = x / (√sq + eps) */
PB_KERNEL float pb_k_dw_rms(float x, float sq, float eps)
{
    return x / (sqrtf(sq) + eps);
}

/* ŵ = w + scale·ΔW, rounded once (PB_DW_ZERO: ŵ = w, no call) */
PB_KERNEL float pb_k_predict(float scale, float dw, float w)
{
    return fmaf(scale, dw, w);
}

#endif
