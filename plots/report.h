/* plots/report.h — paper-style tables from a results database (semantics §6): maximum accuracy
 * in PipeOptim's Table IV layout, throughput, bubble fraction, peak memory by kind and
 * staleness, over the runs with status 'done', as Markdown, CSV or LaTeX. */
#ifndef PB_REPORT_H
#define PB_REPORT_H

#include <stdio.h>

#include "harness/base/err.h"
#include "plots/report_db.h"
#include "plots/report_grid.h"

enum pb_report_table {
    PB_REPORT_ACCURACY,
    PB_REPORT_THROUGHPUT,
    PB_REPORT_BUBBLE,
    PB_REPORT_SIM_THROUGHPUT,   /* each run simulated on one device per stage (design §6.6) */
    PB_REPORT_SIM_BUBBLE,
    PB_REPORT_MEMORY,
    PB_REPORT_STALENESS,
    PB_REPORT_UPDATES,          /* equal footing: samples per update, updates per epoch */
    PB_REPORT_NTABLES
};
/* "accuracy", "throughput", "bubble", "sim-throughput", "sim-bubble", "memory", "staleness",
 * "updates" */
extern const char *const pb_report_table_names[PB_REPORT_NTABLES];

struct pb_report_opts {
    enum pb_report_table table;
    enum pb_report_format format;
    double target;   /* accuracy table: target validation accuracy, a fraction; 0 = none */
    double ci;       /* per-schedule tables: cells show mean ± the half-width of the
                        confidence interval of this level (0.95 for --ci 95), and the best
                        is tested at it; 0: mean ± std, tested at PB_STATS_LEVEL */
    struct pb_report_select sel;   /* the runs it reads (report_db.h) */
};

/* Writes the table for the database at db_path to out. A database without finished runs
 * is an error with a message saying how to record some. */
int pb_report_write(const char *db_path, const struct pb_report_opts *o, FILE *out,
                    struct pb_err *e);

#endif
