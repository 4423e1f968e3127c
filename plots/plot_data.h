/* plots/plot_data.h — inside `pipebench plot`: what a figure's data writer gets and
 * fills (its .dat file, title and gnuplot variables), the writers themselves
 * (plot_data.c compares the schedules of a configuration, plot_run.c shows one run) and
 * the helpers they share. */
#ifndef PB_PLOT_DATA_H
#define PB_PLOT_DATA_H

#include <stdint.h>

#include "harness/base/atomic_file.h"
#include "harness/base/err.h"
#include "results/results.h"

/* A writer's result when the database holds nothing to draw (e says what is missing). */
#define PB_PLOT_NO_DATA 1

struct pb_plot_job {
    struct pb_results *db;   /* with the views of results/views.sql */
    int64_t run;             /* the run shown, or whose configuration is compared */
    const char *outdir, *figure;
    char datafile[4096];     /* outdir/figure.dat, set by pb_plot_open_dat */
    char vars[4096];         /* gnuplot assignments for the script: "name=value; ..." */
};

/* Each fills job->vars (at least plottitle) and writes outdir/FIGURE.dat; returns 0,
 * PB_PLOT_NO_DATA or -1. */
int pb_plot_data_convergence(struct pb_plot_job *j, struct pb_err *e);
int pb_plot_data_throughput(struct pb_plot_job *j, struct pb_err *e);
int pb_plot_data_staleness(struct pb_plot_job *j, struct pb_err *e);
int pb_plot_data_memory(struct pb_plot_job *j, struct pb_err *e);
int pb_plot_data_timeline(struct pb_plot_job *j, struct pb_err *e);

/* Appends "name=value; " (value printf-formatted, used as is). */
void pb_plot_var(struct pb_plot_job *j, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends "name='value'; " with value escaped for a gnuplot single-quoted string. */
void pb_plot_var_str(struct pb_plot_job *j, const char *name, const char *value);
/* Opens outdir/FIGURE.dat for writing (commit or abort it) and records its path. */
int pb_plot_open_dat(struct pb_plot_job *j, struct pb_afile *a, struct pb_err *e);
/* Quotes s for a gnuplot data file ("..." with inner quotes dropped). */
void pb_plot_put_label(FILE *f, const char *s);
/* "mlp, fashion-mnist, sgdm, D=4" for the job's run (the D only when with_stages). */
void pb_plot_describe(struct pb_plot_job *j, int with_stages, char *buf, size_t cap);
int pb_plot_db_fail(struct pb_plot_job *j, const char *what, struct pb_err *e);

#endif
