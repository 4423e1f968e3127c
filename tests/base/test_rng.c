/* tests/base/test_rng.c — the counter-based generator (harness/base/rng.h): Philox4x32-10's
 * known-answer vectors of Random123 (zero counter and key, all ones, the digits of π),
 * the vectorised run pb_rng_uniform_run against pb_rng_uniform element by element (runs
 * of several lengths, from odd counters, across the counter's 2³² carry), the four-word
 * stream pb_rng_uniform4 against pb_rng_words and its run against it likewise, and
 * pb_rng_fill_uniform's range mapping. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness/base/rng.h"

/* counter c0 … c3 and key k0, k1 → the four output words, as Random123's kat_vectors */
static const struct {
    uint32_t c[4], k[2], out[4];
} kat[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

START_TEST(philox_known_answers)
{
    for (size_t t = 0; t < sizeof kat / sizeof kat[0]; t++) {
        /* rng.h's counter: i = (c1, c0), the stream's upper half (c2, c3) */
        struct pb_rng_key key = {{kat[t].k[0], kat[t].k[1]}, {kat[t].c[2], kat[t].c[3]}};
        uint32_t w[4];
        pb_rng_words(key, ((uint64_t)kat[t].c[1] << 32) | kat[t].c[0], w);
        for (int j = 0; j < 4; j++)
            ck_assert_msg(w[j] == kat[t].out[j], "vector %zu word %d: %08x, want %08x", t, j,
                          w[j], kat[t].out[j]);
    }
}
END_TEST

START_TEST(uniform_run_is_elementwise)
{
    struct pb_rng_key key = pb_rng_key(PB_RNG_DROPOUT, 7, 3, 2, 1);
    static const uint64_t firsts[] = {0, 13, (1ull << 32) - 5, 0xfffffffffffffff0ull};
    static const size_t lens[] = {0, 1, 17, 1000};
    float *out = malloc(1001 * sizeof *out);
    for (size_t a = 0; a < sizeof firsts / sizeof firsts[0]; a++)
        for (size_t b = 0; b < sizeof lens / sizeof lens[0]; b++) {
            size_t n = lens[b];
            out[n] = -1.0f;  /* past the run: untouched */
            pb_rng_uniform_run(key, firsts[a], out, n);
            for (size_t j = 0; j < n; j++) {
                float want = pb_rng_uniform(key, firsts[a] + j);
                ck_assert_msg(out[j] == want, "first %llu + %zu: %a, want %a",
                              (unsigned long long)firsts[a], j, out[j], want);
                ck_assert(out[j] >= 0.0f && out[j] < 1.0f);
            }
            ck_assert(out[n] == -1.0f);
        }
    free(out);
}
END_TEST

START_TEST(uniform4_uses_every_word)
{
    struct pb_rng_key key = pb_rng_key(PB_RNG_DROPOUT, 5, 1, 4, 9);
    for (uint64_t c = 0; c < 50; c++) {
        uint32_t w[4];
        pb_rng_words(key, c, w);
        for (unsigned k = 0; k < 4; k++)
            ck_assert(pb_rng_uniform4(key, 4 * c + k) == (float)(w[k] >> 8) / 16777216.0f);
    }
}
END_TEST

START_TEST(uniform4_run_is_elementwise)
{
    struct pb_rng_key key = pb_rng_key(PB_RNG_DROPOUT, 7, 3, 2, 1);
    /* block counter ⌊i/4⌋ across its 2³² carry, unaligned starts, the end of the range */
    static const uint64_t firsts[] = {0, 1, 13, 64, (4ull << 32) - 70, 0xffffffffffffff00ull};
    static const size_t lens[] = {0, 1, 3, 17, 64, 65, 131, 1000};
    float *out = malloc(1001 * sizeof *out);
    for (size_t a = 0; a < sizeof firsts / sizeof firsts[0]; a++)
        for (size_t b = 0; b < sizeof lens / sizeof lens[0]; b++) {
            size_t n = lens[b];
            out[n] = -1.0f;
            pb_rng_uniform4_run(key, firsts[a], out, n);
            for (size_t j = 0; j < n; j++) {
                float want = pb_rng_uniform4(key, firsts[a] + j);
                ck_assert_msg(out[j] == want, "first %llu + %zu: %a, want %a",
                              (unsigned long long)firsts[a], j, out[j], want);
            }
            ck_assert(out[n] == -1.0f);
        }
    free(out);
}
END_TEST

START_TEST(fill_uniform_maps_the_range)
{
    struct pb_rng_key key = pb_rng_key(PB_RNG_INIT, 11, 5, 0, 0);
    enum { N = 333 };
    float out[N];
    pb_rng_fill_uniform(key, 40, out, N, -0.25f, 0.75f);
    for (int j = 0; j < N; j++) {
        float u = pb_rng_uniform(key, 40 + (uint64_t)j);
        ck_assert(out[j] == -0.25f + (0.75f - -0.25f) * u);
        ck_assert(out[j] >= -0.25f && out[j] < 0.75f);
    }
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("rng");
    TCase *tc = tcase_create("rng");
    tcase_add_test(tc, philox_known_answers);
    tcase_add_test(tc, uniform4_uses_every_word);
    tcase_add_test(tc, uniform4_run_is_elementwise);
    tcase_add_test(tc, uniform_run_is_elementwise);
    tcase_add_test(tc, fill_uniform_maps_the_range);
    suite_add_tcase(s, tc);
    return s;
}
