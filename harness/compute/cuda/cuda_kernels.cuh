/* harness/compute/cuda/cuda_kernels.cuh — what the CUDA backend's .cu files share: the
 * launch geometry of a one-thread-per-element kernel, and raising the instance's error
 * flag from a kernel (read at sync by cuda_flags.c's pb_cuda_check_flags). nvcc only. */
#ifndef PB_CUDA_KERNELS_CUH
#define PB_CUDA_KERNELS_CUH

#include "harness/compute/cuda/cuda_internal.h"

/* threads per block of the elementwise kernels */
#define PB_CU_BLOCK 256

/* blocks of PB_CU_BLOCK threads covering n elements (n > 0; at most 2^31 − 1 blocks) */
static inline unsigned pb_cu_blocks(size_t n)
{
    size_t b = (n + PB_CU_BLOCK - 1) / PB_CU_BLOCK;
    PB_CHECK(b > 0 && b <= 0x7fffffff);
    return (unsigned)b;
}

/* this thread's element in a one-dimensional grid */
static __device__ __forceinline__ size_t pb_cu_index(void)
{
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

/* Raises the flag for element `index` with `value` (32 bits) against `limit`: the first
 * launch to raise it (in stream order: an earlier kernel has finished) claims it with its
 * seq and writes code and limit; every raise of that launch keeps the largest key, the
 * lowest index's (pb_cuda_flag_key), so the report is deterministic. */
static __device__ __forceinline__ void pb_cu_raise(struct pb_cuda_flag_ref ref, int code,
                                                   int limit, unsigned index, uint32_t value)
{
    unsigned old = atomicCAS((unsigned *)ref.flag, 0u, ref.seq);
    if (old == 0) {
        ref.flag[1] = code;
        ref.flag[2] = limit;
    }
    if (old == 0 || old == ref.seq)
        atomicMax((unsigned long long *)(ref.flag + 4), pb_cuda_flag_key(index, value));
}

#endif
