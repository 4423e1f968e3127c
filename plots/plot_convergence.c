/* plots/plot_convergence.c — the convergence figure's data (plot_data.h): per schedule
 * of the compared configuration and per epoch, the mean and sample std over its runs
 * (seeds) of the validation accuracy (%), the validation and training losses and the
 * training seconds elapsed (view epoch_progress); with a target, each schedule's mean
 * epochs and seconds to it over the runs that reach it (view run_target, as report's). */
#include <math.h>
#include <sqlite3.h>
#include <string.h>

#include "plots/plot_data.h"
#include "plots/report_db.h"

#define RUNS_OF_SERIES " JOIN (SELECT c.run_id" PB_PLOT_SAME_CONFIG " AND c.column_label = ?2)"

static const char epochs_sql[] =
    "SELECT p.epoch + 1, 100 * avg(p.val_acc), " PB_PLOT_VAR("100 * p.val_acc") ", "
    "avg(p.elapsed_s), avg(p.val_loss), " PB_PLOT_VAR("p.val_loss") ", avg(p.train_loss), "
    PB_PLOT_VAR("p.train_loss") ", count(*) FROM epoch_progress p" RUNS_OF_SERIES
    " USING (run_id) GROUP BY p.epoch ORDER BY p.epoch";

static const char target_sql[] =
    "SELECT avg(g.epochs_to_target), avg(g.seconds_to_target), count(g.run_id), count(*) "
    "FROM (SELECT c.run_id" PB_PLOT_SAME_CONFIG " AND c.column_label = ?2) x "
    "LEFT JOIN run_target g USING (run_id)";

/* Columns 1..8 of an epochs_sql row: the variances (2, 5, 7) as std; NULL as '?'. */
static void put_epoch(FILE *f, sqlite3_stmt *q)
{
    fprintf(f, "%d", sqlite3_column_int(q, 0));
    for (int c = 1; c <= 7; c++) {
        if (sqlite3_column_type(q, c) == SQLITE_NULL) {
            fputs(" ?", f);
            continue;
        }
        double v = sqlite3_column_double(q, c);
        if (c == 2 || c == 5 || c == 7)
            v = sqrt(v > 0 ? v : 0);
        fprintf(f, " %.6g", v);
    }
    fprintf(f, " %d\n", sqlite3_column_int(q, 8));
}

static int run_series(struct pb_plot_job *j, sqlite3_stmt *q, const char *label)
{
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, j->run);
    sqlite3_bind_text(q, 2, label, -1, SQLITE_STATIC);
    return sqlite3_step(q);
}

/* A block per series, then (with a target) a row per series: its mean epochs and seconds
 * to the target ('?' when none of its runs reached it), reached and runs. */
static int write_blocks(struct pb_plot_job *j, const struct pb_plot_series *s, FILE *f,
                        int *any_loss, struct pb_err *e)
{
    sqlite3_stmt *q, *t = NULL;
    sqlite3 *d = pb_results_sqlite(j->db);
    if (sqlite3_prepare_v2(d, epochs_sql, -1, &q, NULL) != SQLITE_OK ||
        (j->opts.target > 0 && sqlite3_prepare_v2(d, target_sql, -1, &t, NULL) != SQLITE_OK)) {
        sqlite3_finalize(q);
        return pb_plot_db_fail(j, "reading the epochs", e);
    }
    int rc = SQLITE_DONE;
    for (int i = 0; i < s->n && rc == SQLITE_DONE; i++) {
        fprintf(f, "%sepoch ", i ? "\n\n" : "");
        pb_plot_put_label(f, s->label[i]);
        fputs(" acc_std seconds val_loss val_loss_std train_loss train_loss_std runs\n", f);
        for (rc = run_series(j, q, s->label[i]); rc == SQLITE_ROW; rc = sqlite3_step(q)) {
            put_epoch(f, q);
            *any_loss |= sqlite3_column_type(q, 4) != SQLITE_NULL;
        }
    }
    if (t && rc == SQLITE_DONE) {
        fputs("\n\nschedule epochs_to_target seconds_to_target reached runs\n", f);
        for (int i = 0; i < s->n && rc == SQLITE_DONE; i++) {
            if ((rc = run_series(j, t, s->label[i])) != SQLITE_ROW)
                break;
            pb_plot_put_label(f, s->label[i]);
            for (int c = 0; c < 2; c++)
                if (sqlite3_column_type(t, c) == SQLITE_NULL)
                    fputs(" ?", f);
                else
                    fprintf(f, " %.6g", sqlite3_column_double(t, c));
            fprintf(f, " %d %d\n", sqlite3_column_int(t, 2), sqlite3_column_int(t, 3));
            rc = SQLITE_DONE;
        }
    }
    sqlite3_finalize(q);
    sqlite3_finalize(t);
    return rc == SQLITE_DONE ? 0 : pb_plot_db_fail(j, "reading the epochs", e);
}

int pb_plot_data_convergence(struct pb_plot_job *j, struct pb_err *e)
{
    struct pb_plot_series s;
    if (pb_report_set_target(j->db, j->opts.target, e) ||
        pb_plot_load_series(j, PB_PLOT_SAME_CONFIG, "epochs WHERE val_acc IS NOT NULL", &s, e))
        return -1;
    if (s.n == 0) {
        pb_plot_series_free(&s);
        return pb_plot_no_data(e, "a validation accuracy", j->run);
    }
    struct pb_afile a;
    int any_loss = 0, rc = pb_plot_open_dat(j, &a, e);
    if (rc == 0) {
        fputs("# convergence: a block per schedule; per epoch (from 1) the mean over its runs "
              "(seeds) of the\n# validation accuracy (%) and its sample std, the training "
              "seconds elapsed, the validation\n# loss and its std, the training loss and "
              "its std, and the runs averaged (view epoch_progress)\n", a.f);
        if (j->opts.target > 0)
            fprintf(a.f, "# last block: per schedule the mean epochs and training seconds to "
                    "the target %g\n# (first epoch with val_acc >= it; view run_target) over "
                    "the runs that reached it, of its runs\n", j->opts.target);
        rc = write_blocks(j, &s, a.f, &any_loss, e);
        if (rc == 0)
            rc = pb_afile_commit(&a, e);
        else
            pb_afile_abort(&a);
    }
    if (rc == 0) {
        char what[256], title[512];
        pb_plot_describe(j, 1, what, sizeof what);
        snprintf(title, sizeof title, "Convergence per schedule (%s); mean over seeds, "
                 "band: \xc2\xb1 1 std", what);
        pb_plot_var_str(j, "plottitle", title);
        pb_plot_series_vars(j, &s);
        pb_plot_var(j, "target", "%.6g", 100 * j->opts.target);
        pb_plot_var(j, "hasloss", "%d", any_loss);
    }
    pb_plot_series_free(&s);
    return rc;
}
