/* plots/plot_data.h — inside `pipebench plot`: what a figure's data writer gets and
 * fills (its .dat file, title and gnuplot variables), the writers themselves (plot_data.c:
 * throughput and staleness, plot_convergence.c, plot_memory.c compare the schedules of a
 * configuration; plot_timeline.c draws runs' ops) and the helpers they share
 * (plot_series.c: the compared runs' schedules and their styles). */
#ifndef PB_PLOT_DATA_H
#define PB_PLOT_DATA_H

#include <stdint.h>

#include "harness/base/atomic_file.h"
#include "harness/base/err.h"
#include "plots/plot.h"
#include "plots/plot_style.h"
#include "results/results.h"

/* A writer's result when the database holds nothing to draw (e says what is missing). */
#define PB_PLOT_NO_DATA 1

struct pb_plot_job {
    struct pb_results *db;   /* with the views of results/views.sql */
    int64_t run;             /* the run shown, or whose configuration is compared */
    int selecting;           /* --experiment, --where or --runs chose the runs */
    /* without --run, the configurations (cells) holding validation accuracies, each by
     * its newest finished run (plot.c): the convergence figure draws a facet per cell */
    int ncells;
    int64_t cells[PB_PLOT_MAX_CELLS];
    struct pb_plot_opts opts;
    const char *outdir, *figure;
    char datafile[4096];     /* outdir/figure.dat, set by pb_plot_open_dat */
    char vars[8192];         /* gnuplot assignments for the script: "name=value; ..." */
};

/* Each fills job->vars (at least plottitle) and writes outdir/FIGURE.dat; returns 0,
 * PB_PLOT_NO_DATA or -1. */
int pb_plot_data_convergence(struct pb_plot_job *j, struct pb_err *e);
int pb_plot_data_throughput(struct pb_plot_job *j, struct pb_err *e);
int pb_plot_data_staleness(struct pb_plot_job *j, struct pb_err *e);
int pb_plot_data_memory(struct pb_plot_job *j, struct pb_err *e);
int pb_plot_data_timeline(struct pb_plot_job *j, struct pb_err *e);

/* The runs compared, as SQL after SELECT ...: run_config c of the chosen run's
 * configuration (config_id: everything but the schedule, variant and seed) that finished
 * (or are the chosen run, ?1), one per seed: a seed's repeats (--repeat) count once, by
 * its first run (seed_runs), so they are no seeds of the bands and bars;
 * PB_PLOT_SAME_CONFIG_ANY_D ignores the stages and the cut. */
#define PB_PLOT_RUNS_FROM                                                            \
    " FROM run_config c JOIN run_config r ON r.run_id = ?1"                         \
    " AND c.optimizer IS r.optimizer AND c.model IS r.model"                        \
    " AND c.dataset IS r.dataset AND ((c.status = 'done' AND c.run_id IN"           \
    " (SELECT seed_run FROM seed_runs)) OR (c.run_id = ?1 AND c.run_id NOT IN"      \
    " (SELECT run_id FROM seed_runs WHERE seed_run <> run_id)))"
#define PB_PLOT_SAME_CONFIG PB_PLOT_RUNS_FROM " AND c.config_id IS r.config_id"
#define PB_PLOT_SAME_CONFIG_ANY_D                                                    \
    PB_PLOT_RUNS_FROM " AND json_remove(c.config_id, '$.stages', '$.cut') IS"        \
    " json_remove(r.config_id, '$.stages', '$.cut')"

/* SQL of the sample variance of x over a group (0 for one value; the caller takes its
 * square root: SQLite may lack sqrt) — the spread report.c gives as ± std. */
#define PB_PLOT_VAR(x)                                                                  \
    "CASE WHEN count(" x ") > 1 THEN (sum((" x ") * (" x ")) - sum(" x ") * sum(" x    \
    ") / count(" x ")) / (count(" x ") - 1) ELSE 0 END"

/* The compared runs' schedule columns ('schedule (variant)') in registry order, each
 * with its style. */
struct pb_plot_series {
    int n;
    char **label;
    char **schedule;   /* each label's schedule name (its family: plot_facets.h) */
    struct pb_plot_style *style;
};

/* The series of the runs of `from` (PB_PLOT_SAME_CONFIG...) that have rows in `rows` (a
 * table or view keyed by run_id, with a condition). */
int pb_plot_load_series(struct pb_plot_job *j, const char *from, const char *rows,
                        struct pb_plot_series *s, struct pb_err *e);
void pb_plot_series_free(struct pb_plot_series *s);
/* nseries, colors, points and dashes (one word per series) for style.gp. */
void pb_plot_series_vars(struct pb_plot_job *j, const struct pb_plot_series *s);
/* The error of a figure the database has no data for (returns PB_PLOT_NO_DATA). */
int pb_plot_no_data(struct pb_err *e, const char *what, int64_t run);

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
