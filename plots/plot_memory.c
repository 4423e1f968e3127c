/* plots/plot_memory.c — the memory figure's data (plot_data.h): per stage, a bar per
 * schedule of the compared configuration, stacked by memory kind: the mean over the
 * schedule's runs of each kind's peak bytes on the stage (view stage_memory), in MiB, with
 * the bar's total and its weights-only total (params + weight copies, the kinds that set
 * the schedules apart where activations and scratch space are alike). */
#include <sqlite3.h>
#include <string.h>

#include "plots/plot_data.h"

#define MIB (1024.0 * 1024.0)
#define MAX_TOTALS 16   /* bars: above this, the totals are turned upright */
#define PARAMS 0        /* the weights' kinds in pb_plot_mem_columns */
#define WCOPIES 3

static const char sql[] =
    "SELECT m.stage, c.column_label, avg(m.params), avg(m.grads), avg(m.optstate), "
    "avg(m.wcopies), avg(m.acts), avg(m.comm), avg(m.scratch), avg(m.bnstats), avg(m.host), "
    "count(*) FROM stage_memory m JOIN (SELECT c.run_id, c.column_label" PB_PLOT_SAME_CONFIG
    ") c USING (run_id) GROUP BY 1, 2";

static int series_index(const struct pb_plot_series *s, const char *label)
{
    for (int i = 0; i < s->n; i++)
        if (label && !strcmp(s->label[i], label))
            return i;
    return -1;
}

/* Block 0: a bar per line (x, stage, schedule index from 0, its label, MiB per kind, runs,
 * the MiB of all kinds, of the weights: params and weight copies),
 * stage by stage with a gap between stages; block 1: each stage's label at its centre. */
static int write_bars(struct pb_plot_job *j, const struct pb_plot_series *s, FILE *f,
                      int *nstages, struct pb_err *e)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), sql, -1, &q, NULL) != SQLITE_OK)
        return pb_plot_db_fail(j, "reading the memory", e);
    sqlite3_bind_int64(q, 1, j->run);
    fputs("# memory: per stage and schedule, the mean over the schedule's runs of each kind's "
          "peak MiB on\n# the stage (view stage_memory); block 0 a bar per line at x = stage "
          "* (schedules + 1) +\n# schedule (then its runs, its total and its weights-only "
          "total: params + weight copies),\n# block 1 the stages' labels at the centre of "
          "their bars\nx stage schedule label", f);
    for (int k = 0; k < PB_PLOT_NMEMKINDS; k++) {
        fputc(' ', f);
        pb_plot_put_label(f, pb_plot_mem_titles[k]);
    }
    fputs(" runs total weights\n", f);
    int rc;
    *nstages = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int stage = sqlite3_column_int(q, 0);
        const char *label = (const char *)sqlite3_column_text(q, 1);
        int i = series_index(s, label);
        if (i < 0)
            continue;
        fprintf(f, "%d %d %d ", stage * (s->n + 1) + i, stage, i);
        pb_plot_put_label(f, label);
        double total = 0;
        for (int k = 0; k < PB_PLOT_NMEMKINDS; k++) {
            fprintf(f, " %.6g", sqlite3_column_double(q, 2 + k) / MIB);
            total += sqlite3_column_double(q, 2 + k);
        }
        fprintf(f, " %d %.6g %.6g\n", sqlite3_column_int(q, 11), total / MIB,
                (sqlite3_column_double(q, 2 + PARAMS) + sqlite3_column_double(q, 2 + WCOPIES)) /
                    MIB);
        *nstages = stage + 1 > *nstages ? stage + 1 : *nstages;
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return pb_plot_db_fail(j, "reading the memory", e);
    fputs("\n\nx label\n", f);
    for (int k = 0; k < *nstages; k++)
        fprintf(f, "%g \"stage %d\"\n", k * (s->n + 1) + (s->n - 1) / 2.0, k);
    return 0;
}

int pb_plot_data_memory(struct pb_plot_job *j, struct pb_err *e)
{
    struct pb_plot_series s;
    if (pb_plot_load_series(j, PB_PLOT_SAME_CONFIG, "stage_memory WHERE total >= 0", &s, e))
        return -1;
    if (s.n == 0) {
        pb_plot_series_free(&s);
        return pb_plot_no_data(e, "per-stage memory", j->run);
    }
    struct pb_afile a;
    int nstages = 0, rc = pb_plot_open_dat(j, &a, e);
    if (rc == 0) {
        rc = write_bars(j, &s, a.f, &nstages, e);
        if (rc == 0)
            rc = pb_afile_commit(&a, e);
        else
            pb_afile_abort(&a);
    }
    if (rc == 0) {
        char what[256], title[512], colors[256] = "";
        pb_plot_describe(j, 1, what, sizeof what);
        snprintf(title, sizeof title, "Peak memory per stage by kind, a bar per schedule (%s)",
                 what);
        pb_plot_var_str(j, "plottitle", title);
        for (int k = 0; k < PB_PLOT_NMEMKINDS; k++)
            snprintf(colors + strlen(colors), sizeof colors - strlen(colors), "%s%s",
                     k ? " " : "", pb_plot_mem_colors[k]);
        pb_plot_var_str(j, "kindcolors", colors);
        pb_plot_var(j, "nkinds", "%d", PB_PLOT_NMEMKINDS);
        pb_plot_var(j, "nbars", "%d", s.n);
        pb_plot_var(j, "nstages", "%d", nstages);
        pb_plot_var(j, "showtotals", "%d", s.n * nstages <= MAX_TOTALS);
    }
    pb_plot_series_free(&s);
    return rc;
}
