/* plots/plot_convergence.c — the convergence figure's data (plot_data.h): per schedule
 * of the compared configuration and per epoch, the mean over its runs (seeds) of the
 * validation accuracy (%), the validation and training losses and the training seconds
 * elapsed (view epoch_progress), each with the half-width of its confidence interval
 * (plots/stats.h: Student's t at PB_STATS_LEVEL over the seeds, none for one seed); with a
 * target, each schedule's mean epochs and seconds to it (view run_target, as report's):
 * a marker where every seed reached it, else "k/n" where some did. Without --run, a
 * database of several configurations gets the blocks of each in turn (a facet each); six
 * or more schedules are split into panels by family, at most four a panel (plot_facets.h),
 * their blocks in the panels' order (in each configuration's facet likewise). */
#include <math.h>
#include <sqlite3.h>
#include <string.h>

#include "plots/plot_data.h"
#include "plots/plot_facets.h"
#include "plots/report_db.h"
#include "plots/stats.h"

/* The finished runs of every cell, a seed once (the schedules of a faceted figure). */
#define ANY_CELL                                                                      \
    " FROM run_config c JOIN run_config r ON r.run_id = ?1 AND c.status = 'done'"      \
    " AND c.run_id IN (SELECT seed_run FROM seed_runs)"

#define RUNS_OF_SERIES " JOIN (SELECT c.run_id" PB_PLOT_SAME_CONFIG " AND c.column_label = ?2)"

static const char epochs_sql[] =
    "SELECT p.epoch + 1, 100 * avg(p.val_acc), " PB_PLOT_VAR("100 * p.val_acc") ", "
    "avg(p.elapsed_s), avg(p.val_loss), " PB_PLOT_VAR("p.val_loss") ", avg(p.train_loss), "
    PB_PLOT_VAR("p.train_loss") ", count(*) FROM epoch_progress p" RUNS_OF_SERIES
    " USING (run_id) GROUP BY p.epoch ORDER BY p.epoch";

static const char count_sql[] =
    "SELECT 0, 0, 0, count(*) FROM (SELECT c.run_id" PB_PLOT_SAME_CONFIG
    " AND c.column_label = ?2)";

static const char target_sql[] =
    "SELECT avg(g.epochs_to_target), avg(g.seconds_to_target), count(g.run_id), count(*) "
    "FROM (SELECT c.run_id" PB_PLOT_SAME_CONFIG " AND c.column_label = ?2) x "
    "LEFT JOIN run_target g USING (run_id)";

/* Columns 1..8 of an epochs_sql row: the variances (2, 5, 7) as the half-width of the
 * mean's confidence interval over the row's runs; NULL, and an interval of one run, as '?'. */
static void put_epoch(FILE *f, sqlite3_stmt *q)
{
    int n = sqlite3_column_int(q, 8);
    fprintf(f, "%d", sqlite3_column_int(q, 0));
    for (int c = 1; c <= 7; c++) {
        double v = sqlite3_column_double(q, c);
        if (c == 2 || c == 5 || c == 7)
            v = pb_stats_ci_half(sqrt(v > 0 ? v : 0), n, PB_STATS_LEVEL);
        if (sqlite3_column_type(q, c) == SQLITE_NULL || isnan(v))
            fputs(" ?", f);
        else
            fprintf(f, " %.6g", v);
    }
    fprintf(f, " %d\n", n);
}

/* A series' header: its label with the seeds averaged, "gpipe (n = 2)", the legend's. */
static void put_head(FILE *f, const char *label, int n)
{
    char head[512];
    snprintf(head, sizeof head, "%s (n = %d)", label, n);
    fputs("epoch ", f);
    pb_plot_put_label(f, head);
    fprintf(f, " acc_ci%d seconds val_loss val_loss_ci%d train_loss train_loss_ci%d runs\n",
            (int)(100 * PB_STATS_LEVEL), (int)(100 * PB_STATS_LEVEL),
            (int)(100 * PB_STATS_LEVEL));
}

/* A target row's columns after the label: the mean epochs and seconds to it where every
 * run reached it (the marker), else '?'; where some but not all did, the same means over
 * those that did (where "k/n" is written), else '?'; then k and n. */
static void put_target(FILE *f, sqlite3_stmt *t)
{
    int k = sqlite3_column_int(t, 2), n = sqlite3_column_int(t, 3);
    for (int part = 0; part < 2; part++)
        for (int c = 0; c < 2; c++)
            if (k == 0 || (part == 0) != (k == n))
                fputs(" ?", f);
            else
                fprintf(f, " %.6g", sqlite3_column_double(t, c));
    fprintf(f, " %d %d\n", k, n);
}

static int run_series(struct pb_plot_job *j, sqlite3_stmt *q, const char *label)
{
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, j->run);
    sqlite3_bind_text(q, 2, label, -1, SQLITE_STATIC);
    return sqlite3_step(q);
}

/* Per cell (its newest run in cells[]), a block per series (header only where the cell has
 * none of its runs), its runs in runs[cell * s->n + series]; then, with a target, per cell
 * a row per series: see put_target. */
static int write_blocks(struct pb_plot_job *j, const struct pb_plot_series *s, FILE *f,
                        const int64_t *cells, int ncells, int *runs, int *any_loss,
                        struct pb_err *e)
{
    sqlite3_stmt *q = NULL, *t = NULL, *n = NULL;
    sqlite3 *d = pb_results_sqlite(j->db);
    if (sqlite3_prepare_v2(d, epochs_sql, -1, &q, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(d, count_sql, -1, &n, NULL) != SQLITE_OK ||
        (j->opts.target > 0 && sqlite3_prepare_v2(d, target_sql, -1, &t, NULL) != SQLITE_OK)) {
        sqlite3_finalize(q);
        sqlite3_finalize(n);
        return pb_plot_db_fail(j, "reading the epochs", e);
    }
    int64_t run = j->run;
    int rc = SQLITE_DONE;
    for (int c = 0; c < ncells && rc == SQLITE_DONE; c++) {
        j->run = cells[c];
        for (int i = 0; i < s->n && rc == SQLITE_DONE; i++) {
            if ((rc = run_series(j, n, s->label[i])) != SQLITE_ROW)
                break;
            fputs(c || i ? "\n\n" : "", f);
            runs[c * s->n + i] = sqlite3_column_int(n, 3);
            put_head(f, s->label[i], runs[c * s->n + i]);
            for (rc = run_series(j, q, s->label[i]); rc == SQLITE_ROW; rc = sqlite3_step(q)) {
                put_epoch(f, q);
                *any_loss |= sqlite3_column_type(q, 4) != SQLITE_NULL;
            }
        }
    }
    if (t && rc == SQLITE_DONE)
        fputs("\n\nschedule all_epochs all_seconds some_epochs some_seconds reached runs\n", f);
    for (int c = 0; t && c < ncells && rc == SQLITE_DONE; c++) {
        j->run = cells[c];
        for (int i = 0; i < s->n && rc == SQLITE_DONE; i++) {
            if ((rc = run_series(j, t, s->label[i])) != SQLITE_ROW)
                break;
            pb_plot_put_label(f, s->label[i]);
            put_target(f, t);
            rc = SQLITE_DONE;
        }
    }
    j->run = run;
    sqlite3_finalize(q);
    sqlite3_finalize(n);
    sqlite3_finalize(t);
    return rc == SQLITE_DONE ? 0 : pb_plot_db_fail(j, "reading the epochs", e);
}

/* The facets' titles, celltitle1 ... (a cell's optimizer, model, dataset and D). */
static void cell_vars(struct pb_plot_job *j)
{
    int64_t run = j->run;
    for (int c = 0; c < j->ncells; c++) {
        char name[32], what[256];
        j->run = j->cells[c];
        pb_plot_describe(j, 1, what, sizeof what);
        snprintf(name, sizeof name, "celltitle%d", c + 1);
        pb_plot_var_str(j, name, what);
    }
    j->run = run;
}

/* panelruns<c>_<k> (from 1): cell c's runs of panel k's series (0: the script marks the
 * panel empty, which gnuplot cannot autoscale). */
static void panel_runs(struct pb_plot_job *j, const struct pb_plot_facets *p, const int *runs,
                       int c)
{
    for (int k = 0; k < p->n; k++) {
        int n = 0;
        for (int i = p->first[k]; i < p->first[k] + p->count[k]; i++)
            n += runs[i];
        char name[48];
        snprintf(name, sizeof name, "panelruns%d_%d", c + 1, k + 1);
        pb_plot_var(j, name, "%d", n);
    }
}

int pb_plot_data_convergence(struct pb_plot_job *j, struct pb_err *e)
{
    struct pb_plot_series s;
    int facets = j->ncells > 1;
    if (pb_report_set_target(j->db, j->opts.target, e) ||
        pb_plot_load_series(j, facets ? ANY_CELL : PB_PLOT_SAME_CONFIG,
                            "epochs WHERE val_acc IS NOT NULL", &s, e))
        return -1;
    if (s.n == 0) {
        pb_plot_series_free(&s);
        return pb_plot_no_data(e, "a validation accuracy", j->run);
    }
    struct pb_plot_facets panels;
    pb_plot_facets_split(&s, &panels);
    struct pb_afile a;
    int *runs = pb_xcalloc((size_t)(facets ? j->ncells : 1) * (size_t)s.n, sizeof *runs);
    int any_loss = 0, rc = pb_plot_open_dat(j, &a, e);
    if (rc == 0) {
        fprintf(a.f, "# convergence: a block per schedule (n: its runs, the seeds); per epoch "
                "(from 1) the mean over its\n# runs of the validation accuracy (%%), the "
                "training seconds elapsed, the validation loss\n# and the training loss, "
                "each value but the seconds followed by the half-width of its\n# %g%% "
                "confidence interval (Student's t over the runs; '?' for one run), and the "
                "runs\n# averaged (view epoch_progress)\n", 100 * PB_STATS_LEVEL);
        if (j->opts.target > 0)
            fprintf(a.f, "# last block: per schedule the mean epochs and training seconds to "
                    "the target %g\n# (first epoch with val_acc >= it; view run_target): "
                    "where all its runs reached it (the marker),\n# where only some did "
                    "(drawn as reached/runs), reached and runs\n", j->opts.target);
        if (facets)
            fprintf(a.f, "# a facet per configuration (cell): its blocks in turn, %d a cell; "
                    "the target rows likewise\n", s.n);
        for (int k = 0; panels.n > 1 && k < panels.n; k++)
            fprintf(a.f, "# panel %d, %s: blocks %d to %d\n", k + 1, panels.title[k],
                    panels.first[k], panels.first[k] + panels.count[k] - 1);
        rc = facets ? write_blocks(j, &s, a.f, j->cells, j->ncells, runs, &any_loss, e)
                    : write_blocks(j, &s, a.f, &j->run, 1, runs, &any_loss, e);
        if (rc == 0)
            rc = pb_afile_commit(&a, e);
        else
            pb_afile_abort(&a);
    }
    if (rc == 0) {
        char what[256], title[512];
        pb_plot_describe(j, 1, what, sizeof what);
        if (facets)
            snprintf(what, sizeof what, "a facet per configuration");
        if (panels.n > 1)
            snprintf(what + strlen(what), sizeof what - strlen(what), ", split by family");
        snprintf(title, sizeof title, "Convergence per schedule (%s); mean over n seeds, "
                 "band: its %g%% confidence interval (Student's t; none where n = 1)", what,
                 100 * PB_STATS_LEVEL);
        pb_plot_var_str(j, "plottitle", title);
        pb_plot_var(j, "ncells", "%d", facets ? j->ncells : 1);
        if (facets)
            cell_vars(j);
        pb_plot_series_vars(j, &s);
        pb_plot_facets_vars(j, &panels);
        for (int c = 0; panels.n > 1 && c < (facets ? j->ncells : 1); c++)
            panel_runs(j, &panels, runs + c * s.n, c);
        pb_plot_var(j, "target", "%.6g", 100 * j->opts.target);
        pb_plot_var(j, "hasloss", "%d", any_loss);
    }
    free(runs);
    pb_plot_series_free(&s);
    return rc;
}
