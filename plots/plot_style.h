/* plots/plot_style.h — the one table of the figures' styles (plot_style.c): each schedule
 * and variant its own colour, marker and dash, the same in every figure, from
 * colour-blind-safe palettes (Paul Tol's), and the colours of the op kinds (timeline) and
 * memory kinds (memory), none of them close to a schedule's. Scripts get them as gnuplot
 * variables and plots/style.gp turns those into per-series helpers. */
#ifndef PB_PLOT_STYLE_H
#define PB_PLOT_STYLE_H

#include <stdbool.h>

struct pb_plot_style {
    const char *color;   /* '#rrggbb' */
    int point;           /* gnuplot point type */
    const char *dash;    /* "solid" or a gnuplot dash array body, "12,6" */
};

/* The style of a schedule and variant (NULL or "" = the default); *known (may be NULL)
 * says whether the table has it (else a grey fallback). */
struct pb_plot_style pb_plot_style_of(const char *schedule, const char *variant, bool *known);

/* Every styled schedule and variant, then {NULL}. */
struct pb_plot_styled {
    const char *schedule, *variant;
    struct pb_plot_style style;
};
extern const struct pb_plot_styled pb_plot_styles[];

/* Op kinds F, B, U, I, W (timeline; enum pb_op_kind's order) and memory kinds in stage_memory's column order params,
 * grads, optstate, wcopies, acts, comm, scratch, bnstats, host (memory). */
#define PB_PLOT_NOPKINDS 5
#define PB_PLOT_NMEMKINDS 9
extern const char *const pb_plot_op_colors[PB_PLOT_NOPKINDS];
extern const char *const pb_plot_mem_colors[PB_PLOT_NMEMKINDS];
/* "params", ..., "host": stage_memory's columns; and their legend titles. */
extern const char *const pb_plot_mem_columns[PB_PLOT_NMEMKINDS];
extern const char *const pb_plot_mem_titles[PB_PLOT_NMEMKINDS];

#endif
