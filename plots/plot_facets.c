/* plots/plot_facets.c — a figure's schedules split into panels by family (plot_facets.h). */
#include "plots/plot_facets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/ir/program.h"
#include "schedules/registry.h"

/* The order of the families' panels: synchronous, asynchronous, then unknown. */
static int family_rank(const char *schedule)
{
    const struct pb_schedule *sch = schedule ? pb_schedule_find(schedule, NULL) : NULL;
    enum pb_family f = sch ? pb_schedule_family(sch) : PB_FAMILY_UNKNOWN;
    return f == PB_FAMILY_SYNC ? 0 : f == PB_FAMILY_ASYNC ? 1 : 2;
}

static const char *const family_names[] = {"synchronous", "asynchronous", "no known family"};

void pb_plot_facets_split(struct pb_plot_series *s, struct pb_plot_facets *f)
{
    memset(f, 0, sizeof *f);
    f->n = 1;
    f->count[0] = s->n;
    if (s->n < PB_PLOT_FACET_FROM)
        return;
    int *rank = malloc((size_t)s->n * sizeof *rank), size[3] = {0}, panels = 0;
    PB_CHECK(rank != NULL);
    for (int i = 0; i < s->n; i++)
        size[rank[i] = family_rank(s->schedule[i])]++;
    for (int r = 0; r < 3; r++)
        panels += (size[r] + PB_PLOT_FACET_MAX - 1) / PB_PLOT_FACET_MAX;
    if (panels > PB_PLOT_MAX_FACETS) {
        free(rank);
        return;
    }
    /* a stable reorder of the series by family */
    struct pb_plot_series old = *s;
    s->label = pb_xcalloc((size_t)old.n + 1, sizeof *s->label);
    s->schedule = pb_xcalloc((size_t)old.n + 1, sizeof *s->schedule);
    s->style = pb_xcalloc((size_t)old.n + 1, sizeof *s->style);
    int at = 0;
    f->n = 0;
    for (int r = 0; r < 3; r++) {
        int start = at;
        for (int i = 0; i < old.n; i++)
            if (rank[i] == r) {
                s->label[at] = old.label[i];
                s->schedule[at] = old.schedule[i];
                s->style[at++] = old.style[i];
            }
        /* the family's size[r] series in k panels, the first size[r] % k one larger */
        int k = (size[r] + PB_PLOT_FACET_MAX - 1) / PB_PLOT_FACET_MAX;
        for (int p = 0, first = start; p < k; p++) {
            int count = size[r] / k + (p < size[r] % k);
            f->first[f->n] = first;
            f->count[f->n] = count;
            if (k > 1)
                snprintf(f->title[f->n], sizeof f->title[f->n], "%s (%d of %d)",
                         family_names[r], p + 1, k);
            else
                snprintf(f->title[f->n], sizeof f->title[f->n], "%s", family_names[r]);
            first += count;
            f->n++;
        }
    }
    free(old.label);
    free(old.schedule);
    free(old.style);
    free(rank);
}

void pb_plot_facets_vars(struct pb_plot_job *j, const struct pb_plot_facets *f)
{
    pb_plot_var(j, "nfacets", "%d", f->n);
    for (int k = 0; f->n > 1 && k < f->n; k++) {
        char name[32];
        snprintf(name, sizeof name, "facetfirst%d", k + 1);
        pb_plot_var(j, name, "%d", f->first[k] + 1);
        snprintf(name, sizeof name, "facetlast%d", k + 1);
        pb_plot_var(j, name, "%d", f->first[k] + f->count[k]);
        snprintf(name, sizeof name, "facettitle%d", k + 1);
        pb_plot_var_str(j, name, f->title[k]);
    }
}
