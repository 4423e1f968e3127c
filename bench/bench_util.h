/* bench/bench_util.h — what the benchmark programs share: a monotonic clock, the
 * median of a few timings, the median and range of per-round ratios, and device buffers
 * of random values or zeros (a failed allocation ends the benchmark with a message). */
#ifndef PB_BENCH_UTIL_H
#define PB_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/base/clock.h"
#include "harness/base/rng.h"
#include "harness/compute/backend.h"

/* Seconds on the monotonic clock. */
static inline double bench_now(void)
{
    return pb_now_s();
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[n] (n <= 64), v left as it is. */
static inline double bench_median(const double *v, int n)
{
    double s[64];
    if (n < 1 || n > 64) {
        fprintf(stderr, "bench: median of %d values (1 to 64)\n", n);
        exit(2);
    }
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, bench_cmp_double);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* Median and range of a[i] / b[i] over n rounds (n <= 64), as "0.62 [0.58-0.66]"; "-" when a
 * b[i] is not positive (a side that was not measured). */
static inline const char *bench_ratio_str(const double *a, const double *b, int n, char *buf,
                                          size_t len)
{
    double r[64];
    for (int i = 0; i < n; i++) {
        if (!(b[i] > 0)) {
            snprintf(buf, len, "%17s", "-");
            return buf;
        }
        r[i] = a[i] / b[i];
    }
    double lo = r[0], hi = r[0];
    for (int i = 1; i < n; i++)
        lo = r[i] < lo ? r[i] : lo, hi = r[i] > hi ? r[i] : hi;
    snprintf(buf, len, "%5.2f [%4.2f-%4.2f]", bench_median(r, n), lo, hi);
    return buf;
}

/* n floats on be, uniform in [-1, 1) from (seed, tag); `who` names the benchmark. */
static inline float *bench_dev_rand(struct pb_backend *be, size_t n, uint64_t seed, uint64_t tag,
                                    const char *who)
{
    struct pb_err e;
    float *h = malloc(n * sizeof *h);
    float *d = pb_backend_alloc(be, n * sizeof *d, PB_MEM_ACTS, &e);
    if (!h || !d) {
        fprintf(stderr, "%s: %s\n", who, d ? "out of host memory" : e.msg);
        exit(2);
    }
    pb_rng_fill_uniform(pb_rng_key(PB_RNG_DATA, seed, tag, 0, 0), 0, h, n, -1.0f, 1.0f);
    be->ops->upload(be, d, h, n * sizeof *d);
    free(h);
    return d;
}

/* A zeroed tensor of shape s in layout l on be. */
static inline struct pb_tensor bench_tensor(struct pb_backend *be, struct pb_shape s,
                                            enum pb_layout l, const char *who)
{
    struct pb_err e;
    struct pb_tensor t;
    if (pb_tensor_alloc(be, &t, s, l, PB_MEM_ACTS, &e)) {
        fprintf(stderr, "%s: %s\n", who, e.msg);
        exit(2);
    }
    be->ops->fill(be, t.data, 0.0f, pb_tensor_floats(be, &t));
    return t;
}

#endif
