/* harness/compute/cuda/cuda_backend.h — the CUDA backend's entry points, which the
 * registry (harness/compute/registry.c) looks up by name in the backend's module
 * (meson.build: pipebench-cuda.so). */
#ifndef PB_CUDA_BACKEND_H
#define PB_CUDA_BACKEND_H

#include <stddef.h>

#include "harness/base/err.h"
#include "harness/compute/backend.h"

/* The CUDA backend on device c->device (built with PB_HAVE_CUDA). */
struct pb_backend *pb_backend_cuda_create(const struct pb_backend_cfg *c, struct pb_err *e);
/* "CUDA 13.0; cuBLAS 13.1.0; cuDNN 9.19.0; NCCL 2.28.9" (runtime versions) */
void pb_backend_cuda_libraries(char *buf, size_t cap);

#endif
