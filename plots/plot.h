/* plots/plot.h — the figures of a results database (semantics §6): C writes each figure's
 * data files, gnuplot draws it with the script plots/NAME.gp (Debian gnuplot-nox). */
#ifndef PB_PLOT_H
#define PB_PLOT_H

#include <stdint.h>

#include "harness/base/err.h"
#include "plots/report_db.h"

/* "convergence", "throughput", "memory", "timeline", "staleness", then NULL. */
extern const char *const pb_plot_figure_names[];
/* "png", "svg", "pdf", then NULL. */
extern const char *const pb_plot_format_names[];

/* The options of `pipebench plot` beyond the selection (all 0: the defaults). */
struct pb_plot_opts {
    double target;     /* convergence: target validation accuracy, a fraction (0: none),
                        * as compare's and report's --target (val_acc >= target) */
    int window_lo;     /* timeline: the ops from micro-batch window_lo's first F to */
    int window_hi;     /* window_hi - 1's last B on stage 0 (0: a few steady-state steps
                        * mid-epoch; PB_PLOT_WINDOW_ALL: the whole epoch) */
    int epoch;         /* timeline: the epoch, from 1 (0: each run's last with events) */
};
#define PB_PLOT_WINDOW_ALL (-1)

/* Makes figure (a name above, or "all") from the database at db_path into outdir
 * (created when missing): outdir/NAME.FORMAT and its data outdir/NAME*.dat, each written
 * whole or not at all. run_id picks the run shown (timeline) or whose
 * configuration (results/views.sql's config_id) is compared (convergence, memory,
 * staleness; throughput compares every D); 0 = the newest finished run. With "all", a figure the
 * database has no data for is skipped with a note on stderr. Scripts come from
 * $PB_PLOTS_DIR, else the source tree's plots/ (a binary in its build tree), else the
 * installed ones beside the binary (plot.c). */
int pb_plot_figure(const char *db_path, const char *figure, const char *outdir,
                   const char *format, int64_t run_id, struct pb_err *e);

/* As pb_plot_figure over the runs sel selects (NULL: all; plots/report_db.h) with opts
 * (NULL: the defaults), calling wrote(path, arg) after each figure file it writes. With a
 * selection the timeline draws a panel per selected run that has events (at most
 * PB_PLOT_MAX_PANELS), simulations (`simulate --record`) included. */
#define PB_PLOT_MAX_PANELS 8
/* Without run_id, the convergence figure draws a facet per configuration of the selection
 * (optimizer, model, dataset and results/views.sql's config_id), at most this many; the
 * other figures show run_id's configuration and say so on stderr when there are several. */
#define PB_PLOT_MAX_CELLS 12
int pb_plot_figure_cb(const char *db_path, const char *figure, const char *outdir,
                      const char *format, int64_t run_id, const struct pb_report_select *sel,
                      const struct pb_plot_opts *opts,
                      void (*wrote)(const char *path, void *arg), void *arg, struct pb_err *e);

#endif
