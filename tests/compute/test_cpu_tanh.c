/* tests/compute/test_cpu_tanh.c — the CPU backend's vectorised tanh (harness/compute/kernels/tanh.h,
 * what the attention's score runs) against libm: within TANH_ULP ulp of the correctly
 * rounded tanh (libm's double tanh, rounded) over every 61st float from the least
 * denormal to 20 and every float of [2⁻⁸, 2⁻⁶] (where its error peaks), within TANH_LIBM_ULP ulp of
 * tanhf there, odd to the bit; ±0, denormals, ±9, ±20, ±inf and NaN as tanhf gives them;
 * and the vector lanes give the scalar code's bits. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/cpu/cpu_tanh.h"

/* the bound kernels/tanh.h states (measured over every float in (0, 20]: 2.42 ulp, at
 * x = 0x1.fd0794p-8) */
#define TANH_ULP 3.0
/* against glibc 2.36's tanhf, itself up to 2.19 ulp off the correctly rounded tanh
 * (measured over every float in (0, 20]: 4.00 ulp apart, at x = 0x1.63a3d6p-3) */
#define TANH_LIBM_ULP 5.0

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* |got − ref| in units of the float spacing at |ref| rounded to float (the spacing above,
 * so the distance to 1 counts in the ulp just below 1: 2⁻²⁴). */
static double ulps(double got, double ref)
{
    float rf = fabsf((float)ref);
    float below = nextafterf(rf, 0.0f);
    double spacing = rf > 0 ? (double)rf - below : (double)from_bits(1);
    return fabs(got - ref) / spacing;
}

/* The worst errors over the positive floats with bits in [lo, hi] at the given stride;
 * counts in *odd_fails the x whose tanh(−x) is not −tanh(x) to the bit (Check's asserts
 * cost a write each: one at the end). */
static void sweep(uint32_t lo, uint32_t hi, uint32_t stride, double *worst, double *worst_libm,
                  long *odd_fails)
{
    enum { CHUNK = 4096 };
    static float x[CHUNK], y[CHUNK], yn[CHUNK], xn[CHUNK];
    uint64_t u = lo;
    while (u <= hi) {
        int n = 0;
        for (; n < CHUNK && u <= hi; n++, u += stride) {
            x[n] = from_bits((uint32_t)u);
            xn[n] = -x[n];
        }
        pb_cpu_tanh_array(x, y, (size_t)n);
        pb_cpu_tanh_array(xn, yn, (size_t)n);
        for (int i = 0; i < n; i++) {
            double e = ulps(y[i], tanh((double)x[i]));
            double el = ulps(y[i], tanhf(x[i]));
            *worst = e > *worst ? e : *worst;
            *worst_libm = el > *worst_libm ? el : *worst_libm;
            *odd_fails += to_bits(yn[i]) != (to_bits(y[i]) ^ 0x80000000u);
        }
    }
}

START_TEST(tanh_error_bound)
{
    double worst = 0, worst_libm = 0;
    long odd_fails = 0;
    sweep(1u, to_bits(20.0f), 61u, &worst, &worst_libm, &odd_fails);
    sweep(to_bits(0x1p-8f), to_bits(0x1p-6f), 1u, &worst, &worst_libm, &odd_fails);
    ck_assert_msg(odd_fails == 0, "%ld x with tanh(-x) != -tanh(x)", odd_fails);
    ck_assert_msg(worst <= TANH_ULP, "%.3f ulp from tanh, more than %.1f", worst, TANH_ULP);
    ck_assert_msg(worst_libm <= TANH_LIBM_ULP, "%.3f ulp from tanhf, more than %.1f", worst_libm,
                  TANH_LIBM_ULP);
    /* not a loose bound: the sweep reaches the error's known peak region */
    ck_assert_msg(worst > 1.0, "%.3f ulp: the sweep missed every rounded case", worst);
}
END_TEST

START_TEST(tanh_special_values)
{
    const float x[] = {0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 0x1.5p-130f, -0x1.fffffcp-127f,
                       0x1p-126f, 9.0f, -9.0f, 20.0f, -20.0f, INFINITY, -INFINITY, NAN, -NAN};
    enum { N = sizeof x / sizeof x[0] };
    float y[N];
    pb_cpu_tanh_array(x, y, N);
    for (int i = 0; i < N; i++) {
        float ref = tanhf(x[i]);
        if (isnan(x[i])) {
            ck_assert_msg(isnan(y[i]), "tanh(NaN) = %a", (double)y[i]);
        } else if (fabsf(x[i]) < 0x1p-100f || isinf(x[i]) || fabsf(x[i]) == 20.0f) {
            /* ±0 and the denormals come back themselves, as from tanhf; 20 and inf ±1 */
            ck_assert_msg(to_bits(y[i]) == to_bits(ref), "tanh(%a) = %a, tanhf gives %a",
                          (double)x[i], (double)y[i], (double)ref);
        } else {
            ck_assert_msg(ulps(y[i], tanh((double)x[i])) <= TANH_ULP, "tanh(%a) = %a",
                          (double)x[i], (double)y[i]);
        }
    }
    ck_assert(signbit(y[1]) && !signbit(y[0]));
    ck_assert(fabsf(y[7]) == nextafterf(1.0f, 0.0f) || fabsf(y[7]) == 1.0f);
}
END_TEST

/* The array's vector lanes and its tail give what the scalar function gives, to the bit. */
START_TEST(tanh_lanes_match_scalar)
{
    enum { N = 1003 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (int i = 0; i < N; i++)
        x[i] = (float)(i - N / 2) * 0.0271f + (i % 7 ? 0.0f : 1e-6f);
    pb_cpu_tanh_array(x + 1, y + 1, N - 1);  /* off the alignment too */
    for (int i = 1; i < N; i++) {
        volatile float xi = x[i];
        float s = pb_k_tanhf(xi);
        ck_assert_msg(to_bits(s) == to_bits(y[i]), "lane %d: %a, scalar %a", i, (double)y[i],
                      (double)s);
    }
    free(x);
    free(y);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("cpu_tanh");
    TCase *tc = tcase_create("tanh");
    tcase_add_test(tc, tanh_error_bound);
    tcase_add_test(tc, tanh_special_values);
    tcase_add_test(tc, tanh_lanes_match_scalar);
    suite_add_tcase(s, tc);
    return s;
}
