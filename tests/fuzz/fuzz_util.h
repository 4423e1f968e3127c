/* tests/fuzz/fuzz_util.h — what the libFuzzer targets share: a scratch folder of the
 * process (made on first use under $TMPDIR, removed at exit) for the loaders that read
 * files, files written into it, an input cut into parts at a separator, and the abort
 * that reports a broken invariant as a finding. */
#ifndef PB_FUZZ_UTIL_H
#define PB_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* The line between the parts of a multi-file input (the seeds hold it; the fuzzer
 * keeps it as a token). */
#define PB_FUZZ_SEP "\n--pb-fuzz-part--\n"

struct pb_fuzz_part {
    const uint8_t *p;
    size_t n;
};

/* The scratch folder (absolute, without a trailing slash). */
const char *pb_fuzz_dir(void);
/* Empties the scratch folder (between inputs). */
void pb_fuzz_reset(void);
/* Writes n bytes to the scratch folder's file rel, making its folders; aborts on a
 * write error (the machine's fault, not a finding). */
void pb_fuzz_write(const char *rel, const void *data, size_t n);
/* Makes the scratch folder's folder rel and its parents. */
void pb_fuzz_mkdir(const char *rel);
/* Cuts data at each PB_FUZZ_SEP into at most max parts (the last one keeps the rest);
 * returns their count (at least 1). */
int pb_fuzz_split(const uint8_t *data, size_t n, struct pb_fuzz_part *parts, int max);

/* A refused input: msg must say why (else a finding); printed when $PB_FUZZ_VERBOSE
 * is set, to see what a seed gets. */
void pb_fuzz_refused(const char *msg);
/* An accepted input: printed when $PB_FUZZ_VERBOSE is set. */
void pb_fuzz_accepted(const char *what);

/* Aborts with the message: what a target calls when the code under test breaks its
 * own contract (libFuzzer saves the input as a crash). */
void pb_fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
#define PB_FUZZ_ASSERT(cond, ...) ((cond) ? (void)0 : pb_fuzz_fail(__VA_ARGS__))

#endif
