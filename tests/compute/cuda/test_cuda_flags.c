/* tests/compute/cuda/test_cuda_flags.c — the protocol by which the CUDA kernels report a bad input
 * (cuda_kernels.cuh pb_cu_raise, read by cuda_flags.c at sync), on the host: raises in any
 * order leave the key of the lowest index (atomicMax of pb_cuda_flag_key, as the device
 * keeps it), and pb_cuda_flag_message turns the flag into the CPU backend's message with
 * the value and position of that element (the CPU's words, the CUDA's adding a token's
 * position). Needs no GPU. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness/compute/cuda/cuda_internal.h"

struct raise {
    unsigned index;
    uint32_t value;
};

/* The flag a launch with seq 1, `code` and `limit` leaves after the raises r [n] in that
 * order, each keeping the larger key as the device's atomicMax does. */
static void raised(int *f, int code, int limit, const struct raise *r, int n)
{
    memset(f, 0, PB_CUDA_FLAG_INTS * sizeof *f);
    uint64_t key = 0;
    for (int i = 0; i < n; i++) {
        uint64_t k = pb_cuda_flag_key(r[i].index, r[i].value);
        key = k > key ? k : key;
    }
    f[0] = 1;
    f[1] = code;
    f[2] = limit;
    memcpy(f + 4, &key, sizeof key);
}

static uint32_t fbits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

START_TEST(test_clear_flag_is_no_error)
{
    int f[PB_CUDA_FLAG_INTS] = {0};
    char msg[256] = "";
    ck_assert(!pb_cuda_flag_message(f, msg, sizeof msg));
}
END_TEST

START_TEST(test_token_lowest_position_reported)
{
    int f[PB_CUDA_FLAG_INTS];
    char msg[256];
    struct raise r[] = {{9, fbits(40000.0f)}, {3, fbits(-1.0f)}, {5, fbits(2.5f)}};
    raised(f, PB_CUDA_FLAG_TOKEN, 1000, r, 3);
    ck_assert(pb_cuda_flag_message(f, msg, sizeof msg));
    ck_assert_msg(strstr(msg, "embedding: token -1 (position 3) is not a whole number in [0, 1000)"),
                  "%s", msg);
    /* the same raises in another order: the same report */
    struct raise r2[] = {{5, fbits(2.5f)}, {9, fbits(40000.0f)}, {3, fbits(-1.0f)}};
    char msg2[256];
    raised(f, PB_CUDA_FLAG_TOKEN, 1000, r2, 3);
    ck_assert(pb_cuda_flag_message(f, msg2, sizeof msg2));
    ck_assert_str_eq(msg, msg2);
    struct raise nan_tok[] = {{0, fbits(NAN)}};
    raised(f, PB_CUDA_FLAG_TOKEN, 7, nan_tok, 1);
    ck_assert(pb_cuda_flag_message(f, msg, sizeof msg));
    ck_assert_msg(strstr(msg, "token nan (position 0)") && strstr(msg, "[0, 7)"), "%s", msg);
}
END_TEST

START_TEST(test_lengths_and_labels)
{
    int f[PB_CUDA_FLAG_INTS];
    char msg[256];
    struct raise len[] = {{6, 12}, {4, (uint32_t)-2}};
    raised(f, PB_CUDA_FLAG_SEQ_MEAN, 10, len, 2);
    ck_assert(pb_cuda_flag_message(f, msg, sizeof msg));
    ck_assert_str_eq(msg, "seq_mean: sequence 4 has length -2, outside [1, 10]");
    raised(f, PB_CUDA_FLAG_SEQ_GATHER, 10, len, 1);
    ck_assert(pb_cuda_flag_message(f, msg, sizeof msg));
    ck_assert_str_eq(msg, "seq_gather: sequence 6 has length 12, outside [1, 10]");
    struct raise lab[] = {{70000, 10}, {65536, (uint32_t)-100}};
    raised(f, PB_CUDA_FLAG_LABEL, 10, lab, 2);
    ck_assert(pb_cuda_flag_message(f, msg, sizeof msg));
    ck_assert_str_eq(msg, "softmax_xent: row 65536 has label -100, outside the 10 classes [0, 10)");
    raised(f, PB_CUDA_FLAG_ATTN_LEN, 10, len, 2);
    ck_assert(pb_cuda_flag_message(f, msg, sizeof msg));
    ck_assert_str_eq(msg, "attention: source 4 has length -2, outside [1, 10]");
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("cuda_flags");
    TCase *tc = tcase_create("flags");
    tcase_add_test(tc, test_clear_flag_is_no_error);
    tcase_add_test(tc, test_token_lowest_position_reported);
    tcase_add_test(tc, test_lengths_and_labels);
    suite_add_tcase(s, tc);
    return s;
}
