/* tests/compute/cuda/test_cuda_probe.c — the CUDA backend's device probe against the real CUDA runtime,
 * on any machine of a CUDA build (never skipped): where there is no sign of a GPU,
 * creating the backend is refused with the cause and `--backend cpu`; where there is one,
 * it is created (a driver too old fails here, loudly), and a device past the last is
 * refused naming the range. The libraries string holds the versions the process loaded:
 * those of the headers it was built against on this install. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn_version.h>
#include <nccl.h>

#include "harness/compute/backend.h"
#include "harness/compute/registry.h"
#include "tests/support/gpu_sign.h"

START_TEST(test_create_or_refuse)
{
    struct pb_err e = {{0}};
    struct pb_backend_cfg c = {.device = 0};
    struct pb_backend *be = pb_backend_create("cuda", &c, &e);
    if (pb_test_gpu_sign()) {
        ck_assert_msg(be != NULL, "a GPU is present but the cuda backend was refused: %s", e.msg);
        ck_assert_str_eq(be->ops->name, "cuda");
        ck_assert(!be->failed);
        pb_backend_destroy(be);
    } else {
        ck_assert_msg(be == NULL, "no GPU here, yet the cuda backend was created");
        ck_assert_msg(strstr(e.msg, "no NVIDIA GPU or driver is usable here (cudaGetDeviceCount") &&
                      strstr(e.msg, "run with --backend cpu"), "%s", e.msg);
    }
}
END_TEST

START_TEST(test_device_range)
{
    struct pb_err e = {{0}};
    struct pb_backend_cfg c = {.device = 4096};
    ck_assert_ptr_null(pb_backend_create("cuda", &c, &e));
    if (pb_test_gpu_sign())
        ck_assert_msg(strstr(e.msg, "--devices: the cuda backend has ") &&
                      strstr(e.msg, "(got 4096)"), "%s", e.msg);
    else
        ck_assert_msg(strstr(e.msg, "no NVIDIA GPU or driver"), "%s", e.msg);
    c.device = -1;
    ck_assert_ptr_null(pb_backend_create("cuda", &c, &e));
    ck_assert_msg(strstr(e.msg, pb_test_gpu_sign() ? "(got -1)" : "--backend cpu"), "%s", e.msg);
}
END_TEST

START_TEST(test_libraries)
{
    char got[256], want[256];
    pb_backend_libraries("cuda", got, sizeof got);
    /* the runtime's version, then the driver's where one is installed */
    char cuda[32];
    snprintf(cuda, sizeof cuda, "CUDA %d.%d", CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
    ck_assert_msg(strncmp(got, cuda, strlen(cuda)) == 0, "'%s' does not start with '%s'", got,
                  cuda);
    ck_assert_msg(strstr(got, " (driver ") != NULL || !pb_test_gpu_sign(), "%s", got);
    snprintf(want, sizeof want, "; cuBLAS %d.%d.%d; cuDNN %d.%d.%d; NCCL %d.%d.%d",
             CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH, CUDNN_MAJOR, CUDNN_MINOR,
             CUDNN_PATCHLEVEL, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
    const char *rest = strchr(got, ';');
    ck_assert_msg(rest && strcmp(rest, want) == 0, "'%s' does not end with '%s'", got, want);
    ck_assert_int_eq(pb_backend_check_name("cuda", NULL), 0);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("cuda_probe");
    TCase *tc = tcase_create("probe");
    tcase_add_test(tc, test_create_or_refuse);
    tcase_add_test(tc, test_device_range);
    tcase_add_test(tc, test_libraries);
    suite_add_tcase(s, tc);
    return s;
}
