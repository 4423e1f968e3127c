/* tests/support/report_fixture.h — a small results database with made-up numbers for the report,
 * plot and trace suites, written through results/results.h, plus helpers that run the
 * CLI and read files back. The numbers are chosen so the expected tables can be worked
 * out by hand (see report_fixture.c). */
#ifndef PB_TESTS_REPORT_FIXTURE_H
#define PB_TESTS_REPORT_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

/* Ids of the fixture's runs (in creation order). */
enum {
    FX_GPIPE_S1 = 1,      /* sgdm mlp fashion-mnist D=4, seeds 1 and 2 share a cell */
    FX_GPIPE_S2,
    FX_PIPEDREAM,         /* best of its row; has op events (FX_NEVENTS per device) */
    FX_PIPEOPTIM_CODE,    /* variant code: its own column; predicts weights */
    FX_PIPEOPTIM_FAILED,  /* status failed, 90% accuracy: must never appear */
    FX_ADAM_GPIPE,        /* adam mlp fashion-mnist D=2: ties with the next */
    FX_ADAM_PIPEOPTIM,
    FX_NRUNS = FX_ADAM_PIPEOPTIM
};
#define FX_STAGES 4
#define FX_MICROBATCHES 3
#define FX_NEVENTS (3 * FX_MICROBATCHES)   /* F, B and U per micro-batch on each device */

/* Creates dir/results.db with the runs above; dir must exist. Returns the path (static). */
const char *fx_build_db(const char *dir);
/* Creates dir/empty.db: the schema and no run. */
const char *fx_build_empty_db(const char *dir);

/* A fresh temporary folder (static path); fx_rmdir removes it. */
const char *fx_mkdtemp(const char *tag);
void fx_rmdir(const char *dir);

/* Runs `$PB_PIPEBENCH ARGS` with env (NULL or "NAME=value ...") before it; returns the exit
 * status, stdout in out and stderr in err (either may be NULL). */
int fx_cli(const char *env, const char *args, char *out, size_t out_cap, char *err,
           size_t err_cap);

/* The whole file (malloc'ed, NUL-terminated; *len its size); NULL when unreadable. */
char *fx_read(const char *path, size_t *len);

#endif
