/* tests/support/test_util.h — helpers shared by the Check suites: fixture paths and tensors,
 * float comparison with a stated tolerance, and a CPU backend for tests. */
#ifndef PB_TEST_UTIL_H
#define PB_TEST_UTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/safetensors.h"

/* Path of a committed fixture: $PB_FIXTURES/name (set by tests/meson.build). */
static inline const char *pb_fixture_path(const char *name)
{
    static char buf[4096];
    const char *dir = getenv("PB_FIXTURES");
    snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "tests/fixtures", name);
    return buf;
}

static inline void pb_load_fixture(struct pb_safetensors *st, const char *name)
{
    struct pb_err e;
    if (pb_st_load(st, pb_fixture_path(name), &e))
        ck_abort_msg("fixture %s: %s", name, e.msg);
}

/* The fixture tensor <cs>.<what> of fx, whose count must be n (a malloc'ed copy). */
static inline float *pb_fixture_read(const struct pb_safetensors *fx, const char *cs,
                                     const char *what, size_t n)
{
    char name[256];
    struct pb_err e;
    snprintf(name, sizeof name, "%s.%s", cs, what);
    float *v = malloc((n + 1) * sizeof *v);
    ck_assert_msg(pb_st_read_f32(fx, name, v, n, &e) == 0, "%s", e.msg);
    return v;
}

/* A fixture case's parameters <cs>.p0, <cs>.p1, ... concatenated: n floats in all, as a
 * stage's flat buffer (a malloc'ed copy). */
static inline float *pb_fixture_params(const struct pb_safetensors *fx, const char *cs, size_t n)
{
    struct pb_err e;
    float *w = malloc((n + 1) * sizeof *w);
    size_t off = 0;
    for (int i = 0; off < n; i++) {
        char pn[256];
        snprintf(pn, sizeof pn, "%s.p%d", cs, i);
        const struct pb_st_tensor *t = pb_st_find(fx, pn);
        ck_assert_msg(t != NULL, "fixture has no %s", pn);
        ck_assert_msg(off + t->count <= n, "fixture %s: more parameters than %zu", pn, n);
        ck_assert_msg(pb_st_read_f32(fx, pn, w + off, t->count, &e) == 0, "%s", e.msg);
        off += t->count;
    }
    return w;
}

/* Element loops check without Check's asserts and assert once: every passing ck_assert
 * writes its location to the runner (one system call), which made a loop over a few
 * thousand floats cost seconds of system time. */

/* a and b hold the same bits, element for element; the first difference is reported. */
static inline void pb_assert_same_bits(const char *what, const float *a, const float *b,
                                       size_t n)
{
    size_t i = 0;
    while (i < n && memcmp(&a[i], &b[i], sizeof *a) == 0)
        i++;
    ck_assert_msg(i == n, "%s: element %zu of %zu: got %.9g (%a), expected %.9g (%a)", what, i,
                  n, i < n ? a[i] : 0.0, i < n ? a[i] : 0.0, i < n ? b[i] : 0.0,
                  i < n ? b[i] : 0.0);
}

/* Every element of v equals value; the first that does not is reported. */
static inline void pb_assert_all(const char *what, const float *v, size_t n, float value)
{
    size_t i = 0;
    while (i < n && v[i] == value)
        i++;
    ck_assert_msg(i == n, "%s: element %zu of %zu is %.9g, expected %.9g", what, i, n,
                  i < n ? v[i] : 0.0, (double)value);
}

/* Every element of v is finite; the first that is not is reported. */
static inline void pb_assert_finite(const char *what, const float *v, size_t n)
{
    size_t i = 0;
    while (i < n && isfinite(v[i]))
        i++;
    ck_assert_msg(i == n, "%s: element %zu of %zu is %g", what, i, n, i < n ? v[i] : 0.0);
}

/* |a_i - b_i| <= tol · max(1, |b_i|) for every i; the first that is not is reported. */
static inline void pb_assert_within(const char *what, const float *a, const float *b, size_t n,
                                    float tol)
{
    size_t i = 0;
    while (i < n && fabsf(a[i] - b[i]) <= tol * fmaxf(1.0f, fabsf(b[i])))
        i++;
    ck_assert_msg(i == n, "%s: element %zu of %zu: %.9g, expected %.9g within %g of max(1, |it|)",
                  what, i, n, i < n ? a[i] : 0.0, i < n ? b[i] : 0.0, (double)tol);
}

/* max_i |a_i - b_i| / (atol + rtol |b_i|) <= 1, reporting the worst element. */
static inline void pb_assert_close(const char *what, const float *a, const float *b, size_t n,
                                   double rtol, double atol)
{
    double worst = 0;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs((double)a[i] - (double)b[i]) / (atol + rtol * fabs((double)b[i]));
        if (!(r <= worst)) {
            worst = r;
            wi = i;
        }
    }
    ck_assert_msg(worst <= 1.0, "%s: element %zu: got %.9g, expected %.9g (rtol %g, atol %g)",
                  what, wi, n ? a[wi] : 0.0, n ? b[wi] : 0.0, rtol, atol);
}

#endif
