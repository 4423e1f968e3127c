/* tests/support/gpu_sign.h — whether this machine shows a sign of an NVIDIA GPU (shared/CUDA.md
 * §3): /dev/nvidiactl exists or the driver's libcuda.so.1 loads. Without one a CUDA test
 * skips (exit 77) and the cuda backend must refuse to be created; with one it must work. */
#ifndef PB_TESTS_GPU_SIGN_H
#define PB_TESTS_GPU_SIGN_H

#include <dlfcn.h>
#include <stdbool.h>
#include <unistd.h>

static inline bool pb_test_gpu_sign(void)
{
    if (access("/dev/nvidiactl", F_OK) == 0)
        return true;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h)
        dlclose(h);
    return h != NULL;
}

#endif
