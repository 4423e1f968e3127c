/* tests/compute/cuda/test_cuda_nccl.c — what of the CUDA backend's NCCL transport (cuda_nccl.c) runs
 * without a GPU (shared/CUDA.md §3): the unique id a rank hands to the others, from the real
 * ncclGetUniqueId, and the comm_* entries of the backend's table. Sending and receiving
 * need several GPUs and are not run here (CUDA.md §7). */
#include <check.h>
#include <nccl.h>
#include <string.h>

#include "harness/compute/cuda/cuda_internal.h"

START_TEST(test_unique_id)
{
    unsigned char a[NCCL_UNIQUE_ID_BYTES + 8], b[NCCL_UNIQUE_ID_BYTES + 8], zero[NCCL_UNIQUE_ID_BYTES];
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    memset(zero, 0, sizeof zero);
    struct pb_err e = {0};
    ck_assert_msg(pb_cuda_nccl_unique_id(a, sizeof a, &e) == NCCL_UNIQUE_ID_BYTES, "%s", e.msg);
    ck_assert_msg(pb_cuda_nccl_unique_id(b, sizeof b, &e) == NCCL_UNIQUE_ID_BYTES, "%s", e.msg);
    ck_assert(memcmp(a, zero, NCCL_UNIQUE_ID_BYTES) != 0);
    ck_assert(memcmp(b, zero, NCCL_UNIQUE_ID_BYTES) != 0);
    ck_assert(memcmp(a, b, NCCL_UNIQUE_ID_BYTES) != 0);
    /* nothing written past the id */
    for (size_t i = NCCL_UNIQUE_ID_BYTES; i < sizeof a; i++)
        ck_assert_int_eq(a[i], 0);
}
END_TEST

START_TEST(test_unique_id_small_buffer)
{
    unsigned char buf[NCCL_UNIQUE_ID_BYTES];
    memset(buf, 0x5a, sizeof buf);
    struct pb_err e = {0};
    ck_assert_uint_eq(pb_cuda_nccl_unique_id(buf, NCCL_UNIQUE_ID_BYTES - 1, &e), 0);
    ck_assert_msg(strstr(e.msg, "takes 128 bytes, 127 given"), "%s", e.msg);
    ck_assert_int_eq(buf[0], 0x5a);
}
END_TEST

START_TEST(test_version)
{
    int v = 0;
    ck_assert_int_eq(ncclGetVersion(&v), ncclSuccess);
    ck_assert_int_ge(v, 22800);   /* NCCL 2.28 (CUDA.md §1) */
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("cuda_nccl");
    TCase *tc = tcase_create("nccl");
    tcase_add_test(tc, test_unique_id);
    tcase_add_test(tc, test_unique_id_small_buffer);
    tcase_add_test(tc, test_version);
    suite_add_tcase(s, tc);
    return s;
}
