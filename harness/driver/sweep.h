/* harness/driver/sweep.h — a sweep file (INI, parsed by inih): the product of the [grid] lists,
 * with the [run] options fixed, each value and configuration checked before anything
 * runs; and which configurations the results database holds finished (resuming). */
#ifndef PB_SWEEP_H
#define PB_SWEEP_H

#include <stdbool.h>

#include "harness/driver/batch.h"
#include "harness/driver/run_flags.h"
#include "harness/base/strlist.h"

/* Most [grid] keys one sweep may have. */
#define PB_SWEEP_MAX_AXES 32

/* Most configurations one sweep may hold. */
#define PB_SWEEP_MAX_CONFIGS 10000

struct pb_sweep_error {
    int line;          /* 0: not tied to a line */
    char msg[1024];
};

struct pb_sweep_axis {     /* one [grid] key: any option of pipebench run but db and quiet */
    char *key;
    struct pb_strlist values;
    int line;              /* where the key is first set */
};

struct pb_sweep_entry {   /* one [run] option */
    char *name, *value;   /* value NULL: a switch written without a value */
    int line;
};

struct pb_sweep {
    const char *path;
    struct pb_sweep_axis axes[PB_SWEEP_MAX_AXES];   /* [grid], slowest-varying first */
    int naxes;
    struct pb_sweep_entry *run;                /* [run] */
    int nrun;
    struct pb_run_flags flags;                 /* [run] as run flags */
    struct pb_sweep_error *errors;
    int nerrors;
    struct pb_batch_item *items;               /* the runs: each configuration's repeats
                                                * (--repeat), cfg.repeat 0 of all first */
    int n;
    int nconfigs;                              /* the configurations they are of */
    int nunsupported;      /* configurations left out: the schedule refuses the optimizer */
    char unsupported_note[1024];               /* the first one's reason */
};

/* Reads, checks and expands the sweep file at path. db, when not NULL, replaces the
 * file's [run] db; threads (cores per run), when > 0, applies where [run] sets none.
 * Returns 0, or -1: s->errors lists every problem found (by line), or e says why the
 * file could not be read. */
int pb_sweep_load(struct pb_sweep *s, const char *path, const char *db, int threads,
                  struct pb_err *e);
/* The same for a file's len bytes in memory (copied); name stands for its path. */
int pb_sweep_load_mem(struct pb_sweep *s, const char *name, const void *bytes, size_t len,
                      const char *db, int threads, struct pb_err *e);

/* A file that describes one configuration, for `pipebench run --config FILE`: its [run]
 * options and any [grid] key with one value, checked as pb_sweep_load does, into *f (whose strings live
 * in s). Errors as pb_sweep_load's; a file of several configurations is one, which says
 * to run it with sweep. */
int pb_sweep_load_run(struct pb_sweep *s, const char *path, struct pb_run_flags *f,
                      struct pb_err *e);

/* done[i] = whether run i (a configuration's repeat) already has a finished run (status
 * done or diverged) in the database: the same configuration JSON (pb_run_cfg_json) but for
 * the thread count, and the same repeat index. With create, makes the database when missing (before parallel runs
 * start, so they do not race to make it) and marks as failed the runs left 'running'
 * by processes that died; without, a missing database holds nothing. */
int pb_sweep_finished(struct pb_sweep *s, bool *done, bool create, struct pb_err *e);

void pb_sweep_finish(struct pb_sweep *s);

#endif
