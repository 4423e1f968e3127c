/* harness/base/args.h — strict parsing of flag values: a value that is not a number,
 * or has trailing characters, is an error that names the flag. */
#ifndef PB_CLI_ARGS_H
#define PB_CLI_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "harness/base/err.h"

int pb_arg_int(const char *flag, const char *s, int *out, struct pb_err *e);
int pb_arg_u64(const char *flag, const char *s, uint64_t *out, struct pb_err *e);
/* A number a float holds: finite and at most FLT_MAX in magnitude (a larger one would
 * become inf, which a recorded configuration cannot hold). */
int pb_arg_float(const char *flag, const char *s, float *out, struct pb_err *e);
/* "on"/"off", "true"/"false", "1"/"0" */
int pb_arg_bool(const char *flag, const char *s, bool *out, struct pb_err *e);
/* Comma-separated floats (each as pb_arg_float's): exactly n of them; -1 when s is not
 * that, PB_ARG_RANGE when one is beyond float's range (each with a message). */
#define PB_ARG_RANGE (-2)
int pb_arg_floats(const char *flag, const char *s, float *out, int n, struct pb_err *e);
/* Comma-separated ints: up to max of them; *n receives the count. */
int pb_arg_ints(const char *flag, const char *s, int *out, int max, int *n, struct pb_err *e);

#endif
