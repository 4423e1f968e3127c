/* harness/base/err.c — error messages and checked bookkeeping allocations (err.h). */
#include "harness/base/err.h"

#include <stdarg.h>
#include <string.h>

int pb_err_set(struct pb_err *e, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int pb_err_prefix(struct pb_err *e, const char *fmt, ...)
{
    if (e) {
        char old[sizeof e->msg];
        memcpy(old, e->msg, sizeof old);
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < sizeof e->msg)
            snprintf(e->msg + n, sizeof e->msg - (size_t)n, "%s", old);
    }
    return -1;
}

void *pb_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    PB_CHECK(p != NULL);
    return p;
}

void *pb_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    PB_CHECK(p != NULL);
    return p;
}

void *pb_malloc_or_err(size_t n, const char *what, struct pb_err *e)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        pb_err_set(e, "out of host memory: %zu bytes for %s", n, what);
    return p;
}

char *pb_xstrdup(const char *s)
{
    char *p = strdup(s);
    PB_CHECK(p != NULL);
    return p;
}
