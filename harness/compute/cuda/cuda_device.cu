/* harness/compute/cuda/cuda_device.cu — CUDA device discovery (cuda_device.h). */
#include <cuda_runtime.h>

#include "harness/compute/cuda/cuda_device.h"

extern "C" int pb_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    return n;
}
