/* harness/base/args.c — flag value parsing (cli_args.h). */
#include "harness/base/args.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* An integer as written: an optional '-' then digits (strtol alone would also take
 * leading blanks and a '+', and so accept ' 1' but not '1 '). */
static bool plain_int(const char *s)
{
    return (s[0] >= '0' && s[0] <= '9') || (s[0] == '-' && s[1] >= '0' && s[1] <= '9');
}

int pb_arg_int(const char *flag, const char *s, int *out, struct pb_err *e)
{
    char *end;
    errno = 0;
    long v = plain_int(s) ? strtol(s, &end, 10) : 0;
    if (!plain_int(s) || end == s || *end)
        return pb_err_set(e, "%s expects an integer (got '%s')", flag, s);
    if (errno || v < INT_MIN || v > INT_MAX)
        return pb_err_set(e, "%s: %s is out of range (an integer between %d and %d)", flag, s,
                          INT_MIN, INT_MAX);
    *out = (int)v;
    return 0;
}

int pb_arg_u64(const char *flag, const char *s, uint64_t *out, struct pb_err *e)
{
    char *end;
    errno = 0;
    if (!plain_int(s) || *s == '-')
        return pb_err_set(e, "%s expects a non-negative integer (got '%s')", flag, s);
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end)
        return pb_err_set(e, "%s expects a non-negative integer (got '%s')", flag, s);
    *out = v;
    return 0;
}

int pb_arg_float(const char *flag, const char *s, float *out, struct pb_err *e)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(fabs(v) <= FLT_MAX))
        return pb_err_set(e, "%s expects a number of magnitude at most %g (got '%s')", flag,
                          (double)FLT_MAX, s);
    *out = (float)v;
    return 0;
}

int pb_arg_bool(const char *flag, const char *s, bool *out, struct pb_err *e)
{
    if (!strcmp(s, "on") || !strcmp(s, "true") || !strcmp(s, "1"))
        *out = true;
    else if (!strcmp(s, "off") || !strcmp(s, "false") || !strcmp(s, "0"))
        *out = false;
    else
        return pb_err_set(e, "%s expects on or off (got '%s')", flag, s);
    return 0;
}

int pb_arg_floats(const char *flag, const char *s, float *out, int n, struct pb_err *e)
{
    const char *p = s;
    for (int i = 0; i < n; i++) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        bool last = i == n - 1;
        if (end == p || (last ? *end != 0 : *end != ','))
            return pb_err_set(e, "%s expects %d comma-separated numbers (got '%s')", flag, n, s);
        if (errno || !(fabs(v) <= FLT_MAX)) {
            pb_err_set(e, "%s: %.*s is out of range: each number's magnitude must be at most %g",
                       flag, (int)(end - p), p, (double)FLT_MAX);
            return PB_ARG_RANGE;
        }
        out[i] = (float)v;
        p = end + 1;
    }
    return 0;
}

int pb_arg_ints(const char *flag, const char *s, int *out, int max, int *n, struct pb_err *e)
{
    const char *p = s;
    *n = 0;
    while (*p) {
        char *end;
        errno = 0;
        long v = plain_int(p) ? strtol(p, &end, 10) : 0;
        if (!plain_int(p) || errno || end == p || (*end && *end != ',') || v < INT_MIN || v > INT_MAX)
            return pb_err_set(e, "%s expects comma-separated integers (got '%s')", flag, s);
        if (*n == max)
            return pb_err_set(e, "%s takes at most %d values", flag, max);
        out[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (*n == 0)
        return pb_err_set(e, "%s expects comma-separated integers (got '%s')", flag, s);
    return 0;
}
