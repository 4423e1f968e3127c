/* harness/compute/cuda/cuda_device.h — what the harness asks of the CUDA runtime before it
 * picks a backend: whether a usable GPU is present (tests skip with 77 otherwise). */
#ifndef PB_CUDA_DEVICE_H
#define PB_CUDA_DEVICE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Number of CUDA devices the runtime can use; 0 when there is no GPU or driver. */
int pb_cuda_device_count(void);

#ifdef __cplusplus
}
#endif

#endif
