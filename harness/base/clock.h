/* harness/base/clock.h — wall time on the monotonic clock, for timings (never for
 * anything a run's numbers depend on). */
#ifndef PB_BASE_CLOCK_H
#define PB_BASE_CLOCK_H

#include <time.h>

/* Seconds since an arbitrary point, monotonic. */
static inline double pb_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
