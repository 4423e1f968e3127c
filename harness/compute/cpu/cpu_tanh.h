/* harness/compute/cpu/cpu_tanh.h — a branch-free float tanh that GCC vectorises inside
 * `#pragma omp simd` loops (the attention's score, cpu_attention.c), and pb_cpu_tanh_array
 * (cpu_tanh.c), the same function over an array, which the tests hold against libm's tanhf.
 *
 * tanh |x| = e / (e + 2) with e = expm1(2|x|), the sign copied from x: no cancellation for
 * small |x| (e ≈ 2|x| keeps its relative accuracy), and for |x| ≥ 10 (clamped; tanh is 1
 * in float from 9.02 on) e + 2 rounds to e, so the result is exactly ±1. expm1(y) =
 * 2^k·p + (2^k − 1), k = round(y / ln 2), r = y − k·ln 2 ∈ [−ln2/2, ln2/2] (ln 2 in two
 * parts, Cody–Waite) and p = expm1(r) by its Taylor series to r⁷ (truncation < 0.2 ulp).
 * 2^k is built in the exponent bits, by bit moves only (no float→int conversion), so NaN
 * goes through without undefined behaviour and comes out NaN; ±0 gives ±0, a denormal
 * itself, ±inf ±1. Error against the correctly rounded tanh: at most 3 ulp (measured over
 * every float in (0, 20]: 2.42; glibc's tanhf: 2.19), which tests/test_cpu_tanh.c asserts
 * over a dense sample. The multiply-adds are fmaf where the target has FMA (meson.build's
 * -march=native), a·b + c otherwise (within the same bound); each build is deterministic
 * and a vector lane gives the bits of the scalar code. */
#ifndef PB_CPU_TANH_H
#define PB_CPU_TANH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__FMA__)
#define PB_CPU_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define PB_CPU_FMA(a, b, c) ((a) * (b) + (c))
#endif

static inline uint32_t pb_tanh_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float pb_tanh_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float pb_cpu_tanhf(float x)
{
    /* y = 2|x| clamped to 20 by its bits (inf too; NaN, above inf's bits, kept): an
     * integer select of two values both computed, which GCC if-converts at any vector
     * width, where clamping |x| first lets it sink the doubling into a branch that only
     * mask registers (AVX-512) vectorise */
    float y = 2.0f * fabsf(x);
    int32_t yb = (int32_t)pb_tanh_bits(y);
    y = yb > 0x41a00000 && yb <= 0x7f800000 ? 20.0f : y;  /* 20.0f, inf */
    /* k = round(y / ln 2) in the low mantissa bits of 1.5·2²³ + y/ln2 (0 ≤ k ≤ 29) */
    const float shift = 12582912.0f;
    float t = PB_CPU_FMA(y, 1.44269504088896341f, shift);
    float k = t - shift;
    uint32_t kb = pb_tanh_bits(t) - pb_tanh_bits(shift);
    float s = pb_tanh_float((kb + 127u) << 23);  /* 2^k */
    float r = PB_CPU_FMA(-k, 0.693145751953125f, y);  /* ln 2's high part: k·it is exact */
    r = PB_CPU_FMA(-k, 1.42860682030941723e-6f, r);
    float q = 1.0f / 5040.0f;
    q = PB_CPU_FMA(q, r, 1.0f / 720.0f);
    q = PB_CPU_FMA(q, r, 1.0f / 120.0f);
    q = PB_CPU_FMA(q, r, 1.0f / 24.0f);
    q = PB_CPU_FMA(q, r, 1.0f / 6.0f);
    q = PB_CPU_FMA(q, r, 0.5f);
    float p = PB_CPU_FMA(r * r, q, r);  /* expm1(r) */
    float e = PB_CPU_FMA(s, p, s - 1.0f);  /* expm1(y) */
    return copysignf(e / (e + 2.0f), x);
}

/* y[i] = pb_cpu_tanhf(x[i]) for i < n, vectorised; y may be x. */
void pb_cpu_tanh_array(const float *x, float *y, size_t n);

#endif
