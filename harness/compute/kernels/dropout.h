/* harness/compute/kernels/dropout.h — one element of dropout (semantics §1.7): its uniform
 * u = pb_rng_uniform4(key, first + i) by philox.h's block function, and y = u ≥ p ?
 * x/(1 − p) : 0 as x·scale with scale = 1/(1 − p) (0 when p = 1: every element dropped). */
#ifndef PB_KERNELS_DROPOUT_H
#define PB_KERNELS_DROPOUT_H

#include "harness/base/philox.h"
#include "harness/compute/kernels/kernel.h"

/* the factor kept elements are multiplied by */
PB_KERNEL float pb_k_dropout_scale(float p)
{
    return p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
}

/* element i's uniform in [0, 1) (word i mod 4 of Philox block ⌊i/4⌋ of the key's stream) */
PB_KERNEL float pb_k_dropout_uniform(struct pb_rng_key key, uint64_t i)
{
    return pb_philox_uniform4(key, i);
}

/* y = x·scale where u ≥ p, else 0; both sides computed, so that a loop of it is a vector
 * select */
PB_KERNEL float pb_k_dropout(float x, float u, float p, float scale)
{
    float kept = x * scale;
    return u >= p ? kept : 0.0f;
}

#endif
