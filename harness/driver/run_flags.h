/* harness/driver/run_flags.h — the options of `pipebench run`, shared by run, compare and sweep:
 * one table of long options, recorded by name (from a command line or a sweep file),
 * applied over a struct pb_run_cfg with the checks of run, and their --help lines. */
#ifndef PB_RUN_FLAGS_H
#define PB_RUN_FLAGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "harness/driver/run.h"
#include "harness/driver/run_json.h"

/* Room for every run option (indexed by the table's internal ids). */
#define PB_RUN_FLAGS_MAX 64
/* Extra options given to pb_run_flags_parse use ids from here on, at most
 * PB_RUN_FLAGS_MAX_EXTRA of them. */
#define PB_RUN_FLAGS_EXTRA 256
#define PB_RUN_FLAGS_MAX_EXTRA 32

/* The values given, by option; NULL = not given. Switches (--nesterov, --quiet) hold
 * "1". The strings are not copied: they must outlive every use of the flags. */
struct pb_run_flags {
    const char *val[PB_RUN_FLAGS_MAX];
};

/* Whether name (a long option without its dashes, e.g. "lr") is a run option;
 * *switch_ set when it takes no value. */
bool pb_run_flag_known(const char *name, bool *switch_);

/* Records one option by name. For a switch, value is NULL, or on/off (true/false,
 * 1/0): off clears it. A later value replaces an earlier one. Errors: unknown name,
 * missing value, bad on/off. */
int pb_run_flags_set(struct pb_run_flags *f, const char *name, const char *value,
                     struct pb_err *e);
/* The recorded value of option name, NULL when not given (or unknown). */
const char *pb_run_flags_get(const struct pb_run_flags *f, const char *name);

/* Samples per optimizer update where neither --batch nor --microbatch-size is given, in
 * run, sweep and compare alike: every schedule updates once per 64 samples (the schedules
 * that update once per micro-batch run micro-batches of 64, those that sum M take M of
 * 64 / M), so all make the same updates per epoch on the same samples (semantics §1.5). */
#define PB_DEFAULT_BATCH "64"
/* Gives f --batch PB_DEFAULT_BATCH where neither --batch nor --microbatch-size is in it
 * (a configuration read back from a database is not a flag set: runs recorded before
 * this default keep the micro-batch size they recorded). */
void pb_run_flags_default_batch(struct pb_run_flags *f);

/* Applies the recorded flags over c: --optimizer first (its torch defaults), then the
 * others whatever order they came in, and --batch last: it sets the micro-batch size
 * (pb_run_batch_split), which a --microbatch-size given too must equal. Numbers are
 * parsed strictly; the message names the flag. */
int pb_run_flags_apply(const struct pb_run_flags *f, struct pb_run_cfg *c, struct pb_err *e);

/* --batch: the micro-batch size c->batch samples per update take under c's schedule,
 * c->batch / M where it sums M micro-batches per update (c->microbatches, else D), else
 * c->batch. Errors: a batch below 1, an unknown schedule, a batch M does not divide. */
int pb_run_batch_split(const struct pb_run_cfg *c, int *mb, struct pb_err *e);

/* The recorded options as command-line arguments ("--lr", "0.1", "--nesterov", ...; each
 * a malloc()ed string) in out[0 .. cap), but those named in skip (NULL-terminated, names
 * without dashes; NULL: none); returns how many. */
int pb_run_flags_args(const struct pb_run_flags *f, const char *const *skip, char **out,
                      int cap);

/* Every option given in src replaces dst's (a command line over a configuration file). */
void pb_run_flags_overlay(struct pb_run_flags *dst, const struct pb_run_flags *src);

/* Handles an extra option: opt is its id (>= PB_RUN_FLAGS_EXTRA), arg its value or NULL. */
typedef int (*pb_run_flags_extra_fn)(void *ctx, int opt, const char *arg, struct pb_err *e);

/* Parses argv[1 ..] (argv[0] is the command's name) into f with getopt_long: run's
 * options plus `extra` (a {0}-terminated table, NULL for none) whose options go to
 * handle. Returns 0, 1 when --help was given (parsing stops there), or -1 with e: an
 * unknown option, a missing value, an option given twice, a positional argument or the
 * handler's error. */
int pb_run_flags_parse(int argc, char **argv, struct pb_run_flags *f, const struct option *extra,
                       pb_run_flags_extra_fn handle, void *ctx, struct pb_err *e);

/* The option lines of `pipebench run --help`. */
void pb_run_flags_usage(FILE *f);

#endif
