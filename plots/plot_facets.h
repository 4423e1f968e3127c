/* plots/plot_facets.h — the panels a comparing figure splits its schedules into when six
 * or more share one configuration, so each panel's uncertainty bands stay readable: the
 * synchronous schedules, then the asynchronous ones (then any of no known family), each
 * family in as few panels of at most PB_PLOT_FACET_MAX as it needs, sized evenly. */
#ifndef PB_PLOT_FACETS_H
#define PB_PLOT_FACETS_H

#include "plots/plot_data.h"

#define PB_PLOT_FACET_FROM 6   /* series in one panel from which it is split */
#define PB_PLOT_FACET_MAX 4    /* series in a panel of a split figure, at most */
#define PB_PLOT_MAX_FACETS 16

struct pb_plot_facets {
    int n;                                 /* panels; 1: the figure is not split */
    int first[PB_PLOT_MAX_FACETS];         /* a panel's series: first .. first + count - 1 */
    int count[PB_PLOT_MAX_FACETS];
    char title[PB_PLOT_MAX_FACETS][64];    /* "asynchronous (2 of 3)" */
};

/* Splits s's series (PB_PLOT_FACET_FROM or more) into f's panels, reordering them by
 * family (registry order kept within one; each series keeps its style); fewer series, or
 * more than PB_PLOT_MAX_FACETS panels would take, leave s as it is and f->n = 1. */
void pb_plot_facets_split(struct pb_plot_series *s, struct pb_plot_facets *f);

/* The script's variables: nfacets, and per panel k (from 1) facetfirst<k> and
 * facetlast<k> (series numbered from 1) and facettitle<k>. */
void pb_plot_facets_vars(struct pb_plot_job *j, const struct pb_plot_facets *f);

#endif
