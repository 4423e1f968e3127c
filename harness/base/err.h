/* harness/base/err.h — the two levels of error of design §2.7.
 * PB_CHECK: a broken internal invariant aborts with file:line.
 * struct pb_err: what a user or the environment caused; functions fill it and
 * return -1, the CLI prints it and exits with status 2. */
#ifndef PB_ERR_H
#define PB_ERR_H

#include <stdio.h>
#include <stdlib.h>

/* Process exit statuses: success, a run that ended badly (diverged, failed), bad
 * input or environment (the message is printed to stderr), a run or batch stopped by
 * SIGINT, SIGTERM or SIGHUP (128 + SIGINT, as a shell reports a Ctrl-C). */
#define PB_EXIT_OK 0
#define PB_EXIT_RUN 1
#define PB_EXIT_USAGE 2
#define PB_EXIT_INTERRUPTED 130

struct pb_err {
    char msg[1024];
};

/* Sets e->msg (when e is not NULL) and returns -1, so callers can write
 * `return pb_err_set(e, "...")`. */
int pb_err_set(struct pb_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the message already in e with more context ("loading X: " + old). */
int pb_err_prefix(struct pb_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define PB_CHECK(cond)                                                                 \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "pipebench: internal error at %s:%d: %s\n", __FILE__,      \
                    __LINE__, #cond);                                                  \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* malloc/calloc that abort on failure of tiny host allocations (bookkeeping only;
 * tensor memory goes through the backend and reports out-of-memory as pb_err). */
void *pb_xmalloc(size_t n);
void *pb_xcalloc(size_t count, size_t size);
char *pb_xstrdup(const char *s);
/* malloc for data-sized host buffers: NULL and an out-of-memory message naming `what`
 * and the size (the caller says what to reduce) when it fails. */
void *pb_malloc_or_err(size_t n, const char *what, struct pb_err *e);

#endif
