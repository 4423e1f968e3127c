/* plots/kit_table.h — an experiment kit's table (experiments/KIT/table.csv): a row per
 * published row, a column per schedule, the published number beside pipebench's (mean ±
 * std over the seeds' finished runs, n) and, where both exist and the scale is the
 * paper's, their difference, as Markdown, CSV or LaTeX (report_grid.h). */
#ifndef PB_KIT_TABLE_H
#define PB_KIT_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "harness/base/err.h"
#include "plots/report_grid.h"

/* The schedules a kit's table has a column for, in the paper's order. */
#define PB_KIT_NCOLS 6
extern const char *const pb_kit_columns[PB_KIT_NCOLS];

/* Most seeds a kit's cell averages. */
#define PB_KIT_MAX_SEEDS 16

struct pb_kit_cell {
    double paper;                       /* the published number; NAN: not published */
    int64_t runs[PB_KIT_MAX_SEEDS];     /* the finished runs of its seeds (0: none yet) */
    int nruns;
};

struct pb_kit_table_row {
    const char *label, *optimizer, *metric;   /* "AlexNet", "SGDM", "top-1 %" */
    const char *note;                         /* "" or "not in Table IV" */
    double chance;   /* the metric a uniform guess scores over the classes of the data its
                        runs read (100 / classes, top-1 %); NAN: none given (BLEU) */
    struct pb_kit_cell cells[PB_KIT_NCOLS];
};

/* Writes the table of rows[0 .. n) to out; runs' numbers (their maximum validation
 * accuracy in %, or BLEU) are read from the database at db, which may not exist yet
 * (then every pipebench cell is empty). with_diff adds a Δ line per row; caption heads
 * it. */
int pb_kit_table_write(const char *db, const struct pb_kit_table_row *rows, int n, bool with_diff,
                       const char *caption, enum pb_report_format f, FILE *out,
                       struct pb_err *e);

#endif
