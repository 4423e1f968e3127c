/* harness/compute/cuda/cuda_status.c — how the CUDA backend's calls fail: a CUDA,
 * cuBLAS or cuDNN status other than success fails the instance (pb_backend_fail) with
 * the call, its place and the library's own message, as a device stream fails; later
 * ops see pb_cuda_begin false and do nothing; pb_cuda_begin also binds the instance's
 * device to the calling thread. Also cuDNN's shared workspace. */
#include "harness/compute/cuda/cuda_internal.h"

#include <stdlib.h>

bool pb_cuda_begin(struct pb_backend *be)
{
    return !be->failed && pb_cuda_bind(be);
}

bool pb_cuda_ok(struct pb_backend *be, cudaError_t st, const char *what, const char *file, int line)
{
    if (st == cudaSuccess)
        return true;
    pb_backend_fail(be, "cuda backend, device %d: %s failed at %s:%d: %s (%s)", be->device, what,
                    file, line, cudaGetErrorString(st), cudaGetErrorName(st));
    return false;
}

bool pb_cublas_ok(struct pb_backend *be, cublasStatus_t st, const char *what, const char *file,
                  int line)
{
    if (st == CUBLAS_STATUS_SUCCESS)
        return true;
    pb_backend_fail(be, "cuda backend, device %d: %s failed at %s:%d: %s (%s)", be->device, what,
                    file, line, cublasGetStatusString(st), cublasGetStatusName(st));
    return false;
}

bool pb_cudnn_ok(struct pb_backend *be, cudnnStatus_t st, const char *what, const char *file,
                 int line)
{
    if (st == CUDNN_STATUS_SUCCESS)
        return true;
    char detail[256] = "";
    cudnnGetLastErrorString(detail, sizeof detail);
    pb_backend_fail(be, "cuda backend, device %d: %s failed at %s:%d: %s%s%s", be->device, what,
                    file, line, cudnnGetErrorString(st), *detail ? ": " : "", detail);
    return false;
}

void *pb_cuda_workspace(struct pb_backend *be, size_t bytes)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    if (bytes == 0)
        return NULL;
    if (bytes <= cu->workspace_bytes)
        return cu->workspace;
    struct pb_err e;
    /* the old workspace may still be read by queued kernels: freed in stream order */
    pb_backend_free(be, cu->workspace);
    cu->workspace = pb_backend_alloc(be, bytes, PB_MEM_SCRATCH, &e);
    cu->workspace_bytes = cu->workspace ? bytes : 0;
    if (!cu->workspace)
        pb_backend_fail(be, "%s", e.msg);
    return cu->workspace;
}
