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

/* Makes figure (a name above, or "all") from the database at db_path into outdir
 * (created when missing): outdir/NAME.FORMAT and its data outdir/NAME*.dat, each written
 * whole or not at all. run_id picks the run shown (memory, timeline) or whose
 * configuration (optimizer, model, dataset, D) is compared (convergence, staleness;
 * throughput compares every D); 0 = the newest finished run. With "all", a figure the
 * database has no data for is skipped with a note on stderr. Scripts come from
 * $PB_PLOTS_DIR, else the source tree's plots/ (a binary in its build tree), else the
 * installed ones beside the binary (plot.c). */
int pb_plot_figure(const char *db_path, const char *figure, const char *outdir,
                   const char *format, int64_t run_id, struct pb_err *e);

/* As pb_plot_figure over the runs sel selects (NULL: all; plots/report_db.h), calling
 * wrote(path, arg) after each figure file it writes. */
int pb_plot_figure_cb(const char *db_path, const char *figure, const char *outdir,
                      const char *format, int64_t run_id, const struct pb_report_select *sel,
                      void (*wrote)(const char *path, void *arg), void *arg, struct pb_err *e);

#endif
