/* harness/compute/kernels/bn.h — one element of batch normalisation (semantics §1.8,
 * backend.h's bn_fwd_train, bn_fwd_infer, bn_bwd) with the fused ReLU, in the op order of
 * oneDNN 2.6's kernels on x86 with FMA, which the CPU backend runs (the per-channel sums
 * and statistics are the caller's reductions); x, y, dy, dx one element of [n, c, h, w]. */
#ifndef PB_KERNELS_BN_H
#define PB_KERNELS_BN_H

#include "harness/compute/kernels/kernel.h"

/* per channel: the forward's factor γ / √(var + ε) */
PB_KERNEL float pb_k_bn_scale(float gamma, float var, float eps)
{
    return gamma / sqrtf(var + eps);
}

/* y = (x − mean)·scale + β rounded once; with relu, 0 unless y > 0 (NaN too), and *kept
 * (the mask bit the backward reads) says which */
PB_KERNEL float pb_k_bn_fwd(float x, float mean, float scale, float beta, bool relu, bool *kept)
{
    float y = fmaf(x - mean, scale, beta);
    *kept = !relu || y > 0.0f;
    return *kept ? y : 0.0f;
}

/* per channel: 1 / √(var + ε) */
PB_KERNEL float pb_k_bn_inv_std(float var, float eps)
{
    return 1.0f / sqrtf(var + eps);
}

/* per channel, from the sums dgamma = inv·Σ (x − mean)·dy and dbeta = Σ dy over the
 * channel's count elements: dgamma·inv / count */
PB_KERNEL float pb_k_bn_dgamma_mean(float dgamma, float inv, float count)
{
    return dgamma * inv / count;
}

/* per channel: dbeta / count */
PB_KERNEL float pb_k_bn_dbeta_mean(float dbeta, float count)
{
    return dbeta / count;
}

/* dx = γ·inv·(dy − dbeta/count − (x − mean)·dgamma·inv/count), dy taken as 0 where the
 * forward's ReLU dropped the element (kept false) */
PB_KERNEL float pb_k_bn_bwd(float x, float dy, bool kept, float mean, float inv, float gamma,
                            float dgamma_mean, float dbeta_mean)
{
    float v = (kept ? dy : 0.0f) - dbeta_mean;
    v = v + (mean - x) * dgamma_mean;
    v = v * inv;
    return v * gamma;
}

#endif
