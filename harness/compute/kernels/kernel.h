/* harness/compute/kernels/kernel.h — what every per-element kernel header includes: PB_KERNEL
 * (static inline in C, __host__ __device__ __forceinline__ under nvcc), the C math
 * functions, and bit casts between a float and its 32 bits that both compilers accept. */
#ifndef PB_KERNELS_KERNEL_H
#define PB_KERNELS_KERNEL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "harness/base/kernel_fn.h"

/* a·b + c rounded once (fmaf) where the target fuses it in hardware (x86 FMA, a CUDA
 * device), a·b + c otherwise: for the polynomials (tanh.h), where a libm fmaf call in a
 * vector loop would cost more than the accuracy is worth. The intended fused
 * multiply-adds of torch's kernels (optim.h, predict.h) are fmaf everywhere. */
#if defined(__FMA__) || defined(__CUDA_ARCH__)
#define PB_K_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define PB_K_FMA(a, b, c) ((a) * (b) + (c))
#endif

/* The bits of f. */
PB_KERNEL uint32_t pb_k_float_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

/* The float of bits u. */
PB_KERNEL float pb_k_bits_float(uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

#endif
