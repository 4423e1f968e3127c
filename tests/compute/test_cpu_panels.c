/* tests/compute/test_cpu_panels.c — the CPU backend's product over packed panels
 * (harness/compute/cpu/cpu_panels.c, the recurrent products of cpu_lstm.c at small
 * batches): every element of C is, to the bit, the chain its comment states (fmaf over
 * l = 0 … k − 1 in order from zero, then added to C or stored), for row counts that fill
 * the 8-row kernel, leave a part of it and span two; column counts that fill panels and
 * leave a part; B as given and transposed; strided A and C, whose elements past the
 * product stay untouched; in teams of 1 and 3 threads. That pins the bits to the shape:
 * no row depends on which rows share the call, nor on the thread count. Then the
 * double-precision product as a sanity bound, the panels' zero padding, and which row
 * counts the backend uses panels for. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/cpu/cpu_internal.h"

#define SENTINEL -7.25f

static float value(unsigned seed, size_t i)
{
    unsigned x = seed * 2654435761u + (unsigned)i * 40503u;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return (float)(x % 2001u) / 1000.0f - 1.0f;
}

/* One product C[m × n] (+)= A[m × k]·op(B) in a team of `threads`, and its check. */
static void check_product(int m, int n, int k, bool trans_b, bool beta, int threads)
{
    int lda = k + 3, ldc = n + 5, ldb = (trans_b ? k : n) + 2, brows = trans_b ? n : k;
    float *a = malloc((size_t)m * lda * sizeof *a);
    float *b = malloc((size_t)brows * ldb * sizeof *b);
    float *c = malloc((size_t)m * ldc * sizeof *c), *c0 = malloc((size_t)m * ldc * sizeof *c0);
    float *panels = malloc(pb_cpu_panels_floats(k, n) * sizeof *panels);
    for (size_t i = 0; i < (size_t)m * lda; i++)
        a[i] = value(1, i);
    for (size_t i = 0; i < (size_t)brows * ldb; i++)
        b[i] = value(2, i);
    for (int r = 0; r < m; r++)
        for (int j = 0; j < ldc; j++)
            c0[(size_t)r * ldc + j] = j < n ? value(3, (size_t)r * ldc + j) : SENTINEL;
    memcpy(c, c0, (size_t)m * ldc * sizeof *c);
#pragma omp parallel num_threads(threads)
    {
        pb_cpu_pack_panels_in_team(b, ldb, trans_b, k, n, panels);
        pb_cpu_gemm_panels_in_team(m, n, k, a, lda, panels, beta, c, ldc);
    }
    for (int r = 0; r < m; r++)
        for (int j = 0; j < ldc; j++) {
            float got = c[(size_t)r * ldc + j];
            if (j >= n) {
                ck_assert_msg(got == SENTINEL, "m %d n %d k %d: C[%d][%d] past n written", m, n,
                              k, r, j);
                continue;
            }
            float acc = 0.0f;
            double ref = 0.0, mag = 0.0;
            for (int l = 0; l < k; l++) {
                float bl = trans_b ? b[(size_t)j * ldb + l] : b[(size_t)l * ldb + j];
                acc = fmaf(a[(size_t)r * lda + l], bl, acc);
                ref += (double)a[(size_t)r * lda + l] * bl;
                mag += fabs((double)a[(size_t)r * lda + l] * bl);
            }
            float c_in = c0[(size_t)r * ldc + j];
            float want = beta ? c_in + acc : acc;
            ck_assert_msg(!memcmp(&got, &want, sizeof got),
                          "m %d n %d k %d trans_b %d beta %d threads %d: C[%d][%d] = %a, the "
                          "chain gives %a", m, n, k, trans_b, beta, threads, r, j, got, want);
            double exact = beta ? c_in + ref : ref;
            ck_assert_msg(fabs(got - exact) <= 1e-6 * (mag + fabs(c_in)) + 1e-7,
                          "C[%d][%d] = %g, the double product %g", r, j, got, exact);
        }
    free(a);
    free(b);
    free(c);
    free(c0);
    free(panels);
}

START_TEST(elements_are_their_chains)
{
    static const int ms[] = {1, 3, 7, 8, 9, 16, 21};
    static const int ns[] = {1, 8, 13, 40};
    static const int ks[] = {1, 6, 67};
    for (size_t im = 0; im < sizeof ms / sizeof ms[0]; im++)
        for (size_t in = 0; in < sizeof ns / sizeof ns[0]; in++)
            for (size_t ik = 0; ik < sizeof ks / sizeof ks[0]; ik++)
                for (int t = 0; t < 2; t++)
                    for (int beta = 0; beta < 2; beta++)
                        for (int threads = 1; threads <= 3; threads += 2)
                            check_product(ms[im], ns[in], ks[ik], t, beta, threads);
}
END_TEST

START_TEST(panels_are_padded_with_zeros)
{
    enum { K = 5, N = 11 };  /* two panels, the second with 3 of its 8 columns */
    ck_assert_uint_eq(pb_cpu_panels_floats(K, N), 2 * 8 * K);
    float b[N * K], panels[2 * 8 * K];
    for (int i = 0; i < N * K; i++)
        b[i] = (float)(i + 1);
    memset(panels, 0xff, sizeof panels);
#pragma omp parallel num_threads(2)
    pb_cpu_pack_panels_in_team(b, K, true, K, N, panels);  /* op(B) = Bᵀ, B [N × K] */
    for (int p = 0; p < 2; p++)
        for (int l = 0; l < K; l++)
            for (int j = 0; j < 8; j++) {
                int col = 8 * p + j;
                float want = col < N ? b[col * K + l] : 0.0f;
                ck_assert_msg(panels[(p * K + l) * 8 + j] == want, "panel %d row %d col %d", p,
                              l, j);
            }
}
END_TEST

START_TEST(usable_for_a_few_rows)
{
    ck_assert(!pb_cpu_panels_usable(0));
    ck_assert(!pb_cpu_panels_usable(PB_CPU_PANEL_ROWS_MAX + 1));
#if defined(__AVX2__) && defined(__FMA__)
    ck_assert(pb_cpu_panels_usable(1));
    ck_assert(pb_cpu_panels_usable(PB_CPU_PANEL_ROWS_MAX));
#else
    ck_assert(!pb_cpu_panels_usable(1));
#endif
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("cpu_panels");
    TCase *tc = tcase_create("panels");
    tcase_add_test(tc, elements_are_their_chains);
    tcase_add_test(tc, panels_are_padded_with_zeros);
    tcase_add_test(tc, usable_for_a_few_rows);
    suite_add_tcase(s, tc);
    return s;
}
