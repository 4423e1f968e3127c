/* plots/plot_series.c — the schedules a comparing figure draws (plot_data.h): the schedule
 * columns of the compared runs in registry order, each with its style (plot_style.h),
 * and the gnuplot variables plots/style.gp reads them from. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot_data.h"
#include "plots/report_db.h"

void pb_plot_series_free(struct pb_plot_series *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->label[i]);
        free(s->schedule[i]);
    }
    free(s->label);
    free(s->schedule);
    free(s->style);
    memset(s, 0, sizeof *s);
}

struct found {
    int rank;
    char *label, *schedule;
    struct pb_plot_style style;
};

static int by_rank(const void *a, const void *b)
{
    const struct found *x = a, *y = b;
    return x->rank != y->rank ? (x->rank > y->rank) - (x->rank < y->rank)
                              : strcmp(x->label, y->label);
}

int pb_plot_load_series(struct pb_plot_job *j, const char *from, const char *rows,
                        struct pb_plot_series *s, struct pb_err *e)
{
    char sql[2048];
    snprintf(sql, sizeof sql, "SELECT DISTINCT c.schedule, c.variant, c.column_label%s"
             " AND c.run_id IN (SELECT run_id FROM %s)", from, rows);
    sqlite3_stmt *q;
    memset(s, 0, sizeof *s);
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), sql, -1, &q, NULL) != SQLITE_OK)
        return pb_plot_db_fail(j, "listing the schedules", e);
    sqlite3_bind_int64(q, 1, j->run);
    struct found *f = NULL;
    int n = 0, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        f = realloc(f, (size_t)(n + 1) * sizeof *f);
        PB_CHECK(f);
        const char *sched = (const char *)sqlite3_column_text(q, 0);
        const char *variant = (const char *)sqlite3_column_text(q, 1);
        const char *t = (const char *)sqlite3_column_text(q, 2);
        f[n].rank = pb_report_schedule_rank(sched, variant);
        f[n].label = pb_xstrdup(t ? t : "?");
        f[n].schedule = pb_xstrdup(sched ? sched : "?");
        f[n++].style = pb_plot_style_of(sched, variant, NULL);
    }
    sqlite3_finalize(q);
    if (n > 1)
        qsort(f, (size_t)n, sizeof *f, by_rank);
    s->n = n;
    s->label = pb_xcalloc((size_t)n + 1, sizeof *s->label);
    s->schedule = pb_xcalloc((size_t)n + 1, sizeof *s->schedule);
    s->style = pb_xcalloc((size_t)n + 1, sizeof *s->style);
    for (int i = 0; i < n; i++) {
        s->label[i] = f[i].label;
        s->schedule[i] = f[i].schedule;
        s->style[i] = f[i].style;
    }
    free(f);
    if (rc != SQLITE_DONE) {
        pb_plot_series_free(s);
        return pb_plot_db_fail(j, "listing the schedules", e);
    }
    return 0;
}

void pb_plot_series_vars(struct pb_plot_job *j, const struct pb_plot_series *s)
{
    char colors[1024] = "", points[512] = "", dashes[2048] = "";
    for (int i = 0; i < s->n; i++) {
        const char *sep = i ? " " : "";
        size_t c = strlen(colors), p = strlen(points), d = strlen(dashes);
        snprintf(colors + c, sizeof colors - c, "%s%s", sep, s->style[i].color);
        snprintf(points + p, sizeof points - p, "%s%d", sep, s->style[i].point);
        snprintf(dashes + d, sizeof dashes - d, "%s%s", sep, s->style[i].dash);
    }
    pb_plot_var(j, "nseries", "%d", s->n);
    pb_plot_var_str(j, "colors", colors);
    pb_plot_var_str(j, "points", points);
    pb_plot_var_str(j, "dashes", dashes);
}

int pb_plot_no_data(struct pb_err *e, const char *what, int64_t run)
{
    pb_err_set(e, "no run of run %lld's configuration (the same options but the schedule, "
               "variant and seed; status done) recorded %s", (long long)run, what);
    return PB_PLOT_NO_DATA;
}
