/* plots/report_grid.h — a report table (a header row, label columns on the left, value
 * columns on the right, some cells marked best) and its rendering as Markdown, CSV or
 * LaTeX (booktabs). Cells hold plain UTF-8 text; each format escapes and marks them. */
#ifndef PB_REPORT_GRID_H
#define PB_REPORT_GRID_H

#include <stdbool.h>
#include <stdio.h>

enum pb_report_format { PB_FORMAT_MD, PB_FORMAT_CSV, PB_FORMAT_LATEX, PB_FORMAT_N };
/* "md", "csv", "latex" */
extern const char *const pb_report_format_names[PB_FORMAT_N];

struct pb_grid {
    int ncols, nlabels;   /* columns; the first nlabels are labels (left-aligned) */
    int nrows, cap;       /* row 0 is the header */
    char **cells;         /* [nrows * ncols]; NULL prints as the absent mark */
    char **notes;         /* [nrows * ncols]; printed after the cell, outside its mark */
    bool *best;           /* [nrows * ncols] */
    const char *caption;  /* printed above the table (md) or as its caption (latex) */
    const char *latex_caption;  /* LaTeX's caption as it is, with its math (NULL: caption,
                                 * escaped) */
    const char *label;    /* latex: the float's \label ("tab:pb-accuracy"; NULL: none) */
};

void pb_grid_init(struct pb_grid *g, int ncols, int nlabels, const char *caption);
void pb_grid_finish(struct pb_grid *g);
/* Appends an empty row and returns its index. */
int pb_grid_add_row(struct pb_grid *g);
/* Sets a cell (text copied; NULL = absent). */
void pb_grid_set(struct pb_grid *g, int row, int col, const char *text, bool best);
/* Sets the note that follows a cell's text (" (3 ep, 12.0 s)"); NULL = none. */
void pb_grid_note(struct pb_grid *g, int row, int col, const char *note);

/* Writes the table: md pads the columns and bolds best cells, csv quotes where needed
 * and appends '*' to best cells, latex as pb_grid_write_latex. Returns 0, or -1 when
 * the stream fails. */
int pb_grid_write(const struct pb_grid *g, enum pb_report_format f, FILE *out);
/* The table as a LaTeX float (plots/report_latex.c): placement, caption, label, best
 * cells in \textbf, notes in footnotes below, set to fit the line. */
void pb_grid_write_latex(const struct pb_grid *g, FILE *out);

#endif
