/* harness/compute/kernels/tanh.h — tanh of one float, branch-free, which GCC vectorises
 * inside `#pragma omp simd` loops (the LSTM cell, cpu_lstm.c; the attention's score,
 * cpu_attention.c), and the LSTM's sigmoid made of it; one float in, one out.
 *
 * tanh |x| = e / (e + 2) with e = expm1(2|x|), the sign copied from x: no cancellation for
 * small |x| (e ≈ 2|x| keeps its relative accuracy), and for |x| ≥ 10 (clamped; tanh is 1
 * in float from 9.02 on) e + 2 rounds to e, so the result is exactly ±1. expm1(y) =
 * 2^k·p + (2^k − 1), k = round(y / ln 2), r = y − k·ln 2 ∈ [−ln2/2, ln2/2] (ln 2 in two
 * parts, Cody–Waite) and p = expm1(r) by its Taylor series to r⁷ (truncation < 0.2 ulp).
 * 2^k is built in the exponent bits, by bit moves only (no float→int conversion), so NaN
 * goes through without undefined behaviour and comes out NaN; ±0 gives ±0, a denormal
 * itself, ±inf ±1. Error against the correctly rounded tanh: at most 3 ulp (measured over
 * every float in (0, 20]: 2.42; glibc's tanhf: 2.19), which tests/compute/test_cpu_tanh.c asserts
 * over a dense sample. The multiply-adds are PB_K_FMA (kernel.h): fmaf where the target
 * has FMA (meson.build's -march=native) and on a CUDA device, a·b + c otherwise (within
 * the same bound); each build is deterministic and a vector lane gives the bits of the
 * scalar code. */
#ifndef PB_KERNELS_TANH_H
#define PB_KERNELS_TANH_H

#include "harness/compute/kernels/kernel.h"

PB_KERNEL float pb_k_tanhf(float x)
{
    /* y = 2|x| clamped to 20 by its bits (inf too; NaN, above inf's bits, kept): an
     * integer select of two values both computed, which GCC if-converts at any vector
     * width, where clamping |x| first lets it sink the doubling into a branch that only
     * mask registers (AVX-512) vectorise */
    float y = 2.0f * fabsf(x);
    int32_t yb = (int32_t)pb_k_float_bits(y);
    y = yb > 0x41a00000 && yb <= 0x7f800000 ? 20.0f : y;  /* 20.0f, inf */
    /* k = round(y / ln 2) in the low mantissa bits of 1.5·2²³ + y/ln2 (0 ≤ k ≤ 29) */
    const float shift = 12582912.0f;
    float t = PB_K_FMA(y, 1.44269504088896341f, shift);
    float k = t - shift;
    uint32_t kb = pb_k_float_bits(t) - pb_k_float_bits(shift);
    float s = pb_k_bits_float((kb + 127u) << 23);  /* 2^k */
    float r = PB_K_FMA(-k, 0.693145751953125f, y);  /* ln 2's high part: k·it is exact */
    r = PB_K_FMA(-k, 1.42860682030941723e-6f, r);
    float q = 1.0f / 5040.0f;
    q = PB_K_FMA(q, r, 1.0f / 720.0f);
    q = PB_K_FMA(q, r, 1.0f / 120.0f);
    q = PB_K_FMA(q, r, 1.0f / 24.0f);
    q = PB_K_FMA(q, r, 1.0f / 6.0f);
    q = PB_K_FMA(q, r, 0.5f);
    float p = PB_K_FMA(r * r, q, r);  /* expm1(r) */
    float e = PB_K_FMA(s, p, s - 1.0f);  /* expm1(y) */
    return copysignf(e / (e + 2.0f), x);
}

/* σ(v) = ½·tanh(v/2) + ½ */
PB_KERNEL float pb_k_sigmoidf(float v)
{
    return PB_K_FMA(0.5f, pb_k_tanhf(0.5f * v), 0.5f);
}

#endif
