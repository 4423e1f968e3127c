/* harness/base/kernel_fn.h — PB_KERNEL, the storage of a per-element function shared by
 * the CPU backend and a CUDA one (design §2.5): static inline under a C compiler, host
 * and device code under nvcc, so that both run one definition of the math. */
#ifndef PB_KERNEL_FN_H
#define PB_KERNEL_FN_H

#if defined(__CUDACC__)
#define PB_KERNEL static __host__ __device__ __forceinline__
#else
#define PB_KERNEL static inline
#endif

#endif
