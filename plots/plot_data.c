/* plots/plot_data.c — data of two figures that compare schedules (plot_data.h):
 * throughput and bubble (%) per D and schedule (a seed's repeats counted once, by their
 * median), and staleness per stage and schedule, each
 * the mean (and for throughput and bubble the sample std) over the compared runs of a
 * value of results/views.sql (as report.c averages them), a column per schedule. */
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot_data.h"
#include "plots/report_db.h"

/* A table of values (NAN: missing, written '?') as gnuplot data blocks: a header line
 * (corner, then the column labels), then a line per row (its label, the values). */
struct matrix {
    int nrows, ncols, nblocks;
    char **rows, **cols;   /* labels */
    double *v;             /* [nblocks][nrows][ncols] */
};

static double *cell(struct matrix *m, int b, int r, int c)
{
    return &m->v[((size_t)b * m->nrows + r) * m->ncols + c];
}

static void matrix_init(struct matrix *m, int nblocks, int nrows, char **rows, int ncols,
                        char **cols)
{
    *m = (struct matrix){nrows, ncols, nblocks, rows, cols, NULL};
    size_t n = (size_t)nblocks * nrows * ncols;
    m->v = pb_xmalloc((n ? n : 1) * sizeof *m->v);
    for (size_t i = 0; i < n; i++)
        m->v[i] = NAN;
}

static int label_index(char **labels, int n, const char *v)
{
    for (int i = 0; i < n; i++)
        if (v && !strcmp(labels[i], v))
            return i;
    return -1;
}

/* Writes the blocks to FIGURE.dat after the comment; with pairs, blocks 2k and 2k + 1
 * (a mean and its std) are written as one, their columns interleaved (a "std" column after
 * each). Returns 0 or -1. */
static int write_matrix(struct pb_plot_job *j, const struct matrix *m, const char *comment,
                        const char *corner, int pairs, struct pb_err *e)
{
    struct pb_afile a;
    if (pb_plot_open_dat(j, &a, e))
        return -1;
    fputs(comment, a.f);
    int step = pairs ? 2 : 1;
    for (int b = 0; b < m->nblocks; b += step) {
        fprintf(a.f, "%s%s", b ? "\n\n" : "", corner);
        for (int c = 0; c < m->ncols; c++) {
            fputc(' ', a.f);
            pb_plot_put_label(a.f, m->cols[c]);
            if (pairs)
                fputs(" std", a.f);
        }
        fputc('\n', a.f);
        for (int r = 0; r < m->nrows; r++) {
            pb_plot_put_label(a.f, m->rows[r]);
            for (int c = 0; c < m->ncols; c++)
                for (int k = 0; k < step; k++) {
                    double v = m->v[((size_t)(b + k) * m->nrows + r) * m->ncols + c];
                    if (isnan(v))
                        fputs(" ?", a.f);
                    else
                        fprintf(a.f, " %.6g", v);
                }
            fputc('\n', a.f);
        }
    }
    return pb_afile_commit(&a, e);
}

/* Runs the query (?1 = the run) and stores each row's value columns [first, first + nb)
 * into blocks [b0, b0 + nb) of the matrix cell named by columns 0 (the row: its label, or
 * its index when rows_by_index) and 1 (the column's label). */
static int fill_matrix(struct pb_plot_job *j, const char *sql, struct matrix *m, int rows_by_index,
                       int first, int b0, int nb, struct pb_err *e)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), sql, -1, &q, NULL) != SQLITE_OK)
        return pb_plot_db_fail(j, "reading the runs", e);
    sqlite3_bind_int64(q, 1, j->run);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *k0 = (const char *)sqlite3_column_text(q, 0);
        const char *k1 = (const char *)sqlite3_column_text(q, 1);
        int r = rows_by_index ? sqlite3_column_int(q, 0) : label_index(m->rows, m->nrows, k0);
        int c = label_index(m->cols, m->ncols, k1);
        if (r < 0 || r >= m->nrows || c < 0 || c >= m->ncols)
            continue;
        for (int b = 0; b < nb; b++)
            if (sqlite3_column_type(q, first + b) != SQLITE_NULL)
                *cell(m, b0 + b, r, c) = sqlite3_column_double(q, first + b);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : pb_plot_db_fail(j, "reading the runs", e);
}

static int any_value(const struct matrix *m, int b)
{
    for (int i = 0; i < m->nrows * m->ncols; i++)
        if (!isnan(m->v[(size_t)b * m->nrows * m->ncols + i]))
            return 1;
    return 0;
}

/* Replaces the variances of block b by their square roots. */
static void to_std(struct matrix *m, int b)
{
    for (int i = 0; i < m->nrows * m->ncols; i++) {
        double *v = &m->v[(size_t)b * m->nrows * m->ncols + i];
        *v = isnan(*v) ? NAN : sqrt(*v > 0 ? *v : 0);
    }
}

/* Whether `what` is 1 for some compared run: c.shared_timing (its timing measured with
 * the stages sharing cores), or pb_sim_contended(c.run_id) (its simulation's op times). */
static int any_shared_timing(struct pb_plot_job *j, const char *what)
{
    char sql[1024];
    snprintf(sql, sizeof sql, "SELECT max(%s)" PB_PLOT_SAME_CONFIG_ANY_D, what);
    sqlite3_stmt *q;
    int shared = 0;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), sql, -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, j->run);
        if (sqlite3_step(q) == SQLITE_ROW)
            shared = sqlite3_column_int(q, 0);
    }
    sqlite3_finalize(q);
    return shared;
}

int pb_plot_data_throughput(struct pb_plot_job *j, struct pb_err *e)
{
    struct pb_plot_series s;
    if (pb_plot_load_series(j, PB_PLOT_SAME_CONFIG_ANY_D,
                            "run_throughput WHERE throughput IS NOT NULL", &s, e))
        return -1;
    if (s.n == 0) {
        pb_plot_series_free(&s);
        return pb_plot_no_data(e, "throughput", j->run);
    }
    sqlite3_stmt *q;
    char *dl[64];
    int nd = 0, rc;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT DISTINCT c.stages"
                           PB_PLOT_SAME_CONFIG_ANY_D " AND c.run_id IN (SELECT run_id FROM "
                           "run_throughput WHERE throughput IS NOT NULL) ORDER BY 1",
                           -1, &q, NULL) != SQLITE_OK) {
        pb_plot_series_free(&s);
        return pb_plot_db_fail(j, "listing the stage counts", e);
    }
    sqlite3_bind_int64(q, 1, j->run);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW && nd < 64) {
        char d[32];
        snprintf(d, sizeof d, "D=%d", sqlite3_column_int(q, 0));
        dl[nd++] = pb_xstrdup(d);
    }
    sqlite3_finalize(q);
    /* runs whose stages shared cores (†): their simulated throughput too, blocks 4, 5 */
    int shared = any_shared_timing(j, "c.shared_timing");
    struct matrix m;
    matrix_init(&m, shared ? 6 : 4, nd, dl, s.n, s.label);
    /* a seed counts once: its repeats' median (seed_timing), as the report takes it */
    rc = fill_matrix(j, "SELECT 'D=' || c.stages, c.column_label, avg(t.throughput), "
                     PB_PLOT_VAR("t.throughput") ", 100 * avg(t.bubble_frac), "
                     PB_PLOT_VAR("100 * t.bubble_frac") " FROM seed_timing t JOIN (SELECT "
                     "c.run_id, c.column_label, c.stages" PB_PLOT_SAME_CONFIG_ANY_D ") c ON "
                     "c.run_id = t.seed_run WHERE t.throughput IS NOT NULL GROUP BY 1, 2", &m, 0,
                     2, 0, 4, e);
    /* a seed's simulation: its first run's (seed_runs), as the bands and bars count seeds */
    if (rc == 0 && shared)
        rc = fill_matrix(j, "SELECT 'D=' || c.stages, c.column_label, avg(t.sim_throughput), "
                         PB_PLOT_VAR("t.sim_throughput") " FROM (SELECT id AS run_id, "
                         "pb_sim_throughput(id) AS sim_throughput FROM runs) t JOIN (SELECT "
                         "c.run_id, c.column_label, c.stages" PB_PLOT_SAME_CONFIG_ANY_D ") c "
                         "USING (run_id) WHERE t.sim_throughput IS NOT NULL GROUP BY 1, 2", &m,
                         0, 2, 4, 2, e);
    to_std(&m, 1);
    to_std(&m, 3);
    if (shared)
        to_std(&m, 5);
    if (rc == 0)
        rc = write_matrix(j, &m, "# throughput: per D (row) and schedule (column, then its std), "
                          "the mean and sample std over\n# the schedule's seeds of: block 0 the "
                          "run's throughput (the median samples/s of its steady\n# epochs, view "
                          "run_throughput), block 1 its bubble (%: idle / makespan, the mean over "
                          "the\n# devices, view run_bubble); a seed run --repeat N times: the "
                          "median over its repeats\n# (view seed_timing); where the stages "
                          "shared cores, block 2 the simulated throughput\n# (pb_sim_throughput: "
                          "the run's epoch simulated with its median op costs on one device\n# "
                          "per stage, results/results_sim.h)\n", "D", 1, e);
    if (rc == 0) {
        char what[256], title[768];
        int hassim = shared && any_value(&m, 4);
        /* the simulation's op times measured on shared cores (results/results_sim.h) */
        int contended = hassim && any_shared_timing(j, "pb_sim_contended(c.run_id)");
        pb_plot_describe(j, 0, what, sizeof what);
        snprintf(title, sizeof title, "Throughput and bubble per schedule (%s)%s%s%s", what,
                 shared ? "\nmeasured with the stages sharing cores (executor seq, or more "
                 "threads than cores): not one device per stage" : "",
                 hassim ? "; hatched: simulated, one device per stage" : "",
                 contended ? "\n\xe2\x80\xa0 simulated with op times measured on shared cores: "
                 "not each stage's alone" : "");
        pb_plot_var_str(j, "plottitle", title);
        pb_plot_var(j, "ngroups", "%d", nd);
        pb_plot_series_vars(j, &s);
        pb_plot_var(j, "hasbubble", "%d", any_value(&m, 2));
        pb_plot_var(j, "hassim", "%d", hassim);
    }
    free(m.v);
    for (int i = 0; i < nd; i++)
        free(dl[i]);
    pb_plot_series_free(&s);
    return rc;
}

/* heads[i]: "LABEL (n = N)", N the compared runs of series i with staleness records. */
static int staleness_heads(struct pb_plot_job *j, const struct pb_plot_series *s, char **heads,
                           struct pb_err *e)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT count(DISTINCT s.run_id) FROM "
                           "stage_staleness s JOIN (SELECT c.run_id" PB_PLOT_SAME_CONFIG
                           " AND c.column_label = ?2) USING (run_id)", -1, &q, NULL) != SQLITE_OK)
        return pb_plot_db_fail(j, "counting the staleness runs", e);
    int rc = SQLITE_ROW;
    for (int i = 0; i < s->n && rc == SQLITE_ROW; i++) {
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, j->run);
        sqlite3_bind_text(q, 2, s->label[i], -1, SQLITE_STATIC);
        if ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            char h[512];
            snprintf(h, sizeof h, "%s (n = %d)", s->label[i], sqlite3_column_int(q, 0));
            heads[i] = pb_xstrdup(h);
        }
    }
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? 0 : pb_plot_db_fail(j, "counting the staleness runs", e);
}

int pb_plot_data_staleness(struct pb_plot_job *j, struct pb_err *e)
{
    struct pb_plot_series s;
    if (pb_plot_load_series(j, PB_PLOT_SAME_CONFIG,
                            "run_staleness WHERE f_mean IS NOT NULL AND b_mean IS NOT NULL", &s,
                            e))
        return -1;
    if (s.n == 0) {
        pb_plot_series_free(&s);
        return pb_plot_no_data(e, "staleness", j->run);
    }
    sqlite3_stmt *q;
    int nstages = 0;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT max(s.stage) + 1 FROM "
                           "stage_staleness s JOIN (SELECT c.run_id" PB_PLOT_SAME_CONFIG ") "
                           "USING (run_id)", -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, j->run);
        if (sqlite3_step(q) == SQLITE_ROW)
            nstages = sqlite3_column_int(q, 0);
    }
    sqlite3_finalize(q);
    char **sl = pb_xcalloc((size_t)nstages + 1, sizeof *sl);
    for (int k = 0; k < nstages; k++) {
        char t[32];
        snprintf(t, sizeof t, "stage %d", k);
        sl[k] = pb_xstrdup(t);
    }
    struct matrix m;
    matrix_init(&m, 4, nstages, sl, s.n, s.label);
    /* block 3: 1 where a schedule that predicts on other stages made no prediction on
     * this one (its look-ahead s is 0 there: the last stage in the paper's forms) */
    int rc = fill_matrix(j, "SELECT s.stage, c.column_label, avg(s.f_mean), avg(s.b_mean), "
                         "avg(s.pred_err_mean), coalesce(sum(s.pred_count), 0) = 0 AND "
                         "max(coalesce(sum(s.pred_count), 0)) OVER (PARTITION BY "
                         "c.column_label) > 0 FROM stage_staleness s JOIN (SELECT c.run_id, "
                         "c.column_label" PB_PLOT_SAME_CONFIG ") c USING (run_id) GROUP BY 1, 2",
                         &m, 1, 2, 0, 4, e);
    /* the "n/a (s = 0)" marks, placed in the error panel's clusters (gnuplot's clustered
     * histogram: member i of N at stage k is centred at k - 0.5 + (i + 1) / (N + 1)) */
    char marks[4096] = "";
    size_t mlen = 0;
    for (int k = 0; rc == 0 && k < nstages; k++)
        for (int i = 0; i < s.n && mlen + 160 < sizeof marks; i++)
            if (m.v[3 * (size_t)nstages * s.n + (size_t)k * s.n + i] > 0)
                mlen += (size_t)snprintf(marks + mlen, sizeof marks - mlen,
                                         "set label %d 'n/a (s = 0)' at first %.4f, graph 0.03 "
                                         "rotate by 90 front font ',8' tc rgb '#404040'; ",
                                         100 + k * s.n + i, k - 0.5 + (i + 1.0) / (s.n + 1));
    for (int i = 0; i < nstages * s.n; i++)   /* log scale: zero errors are not drawn */
        if (m.v[2 * (size_t)nstages * s.n + i] <= 0)
            m.v[2 * (size_t)nstages * s.n + i] = NAN;
    /* the columns as the legend names them: each schedule with its runs (seeds), n */
    char **heads = pb_xcalloc((size_t)s.n + 1, sizeof *heads);
    if (rc == 0)
        rc = staleness_heads(j, &s, heads, e);
    m.cols = heads;
    if (rc == 0)
        rc = write_matrix(j, &m, "# staleness: per stage (row) and schedule (column, with n: "
                          "its runs), mean "
                          "over epochs and runs of: block 0 the\n# forward version lag, block "
                          "1 the backward version lag (versions behind the synchronous run),\n"
                          "# block 2 the prediction error ||W_pred - W|| / ||W|| (? where "
                          "none or zero),\n# block 3 1 where a predicting schedule made no "
                          "prediction on the stage (n/a, s = 0)\n", "stage", 0, e);
    if (rc == 0) {
        char what[256], title[512];
        pb_plot_describe(j, 1, what, sizeof what);
        snprintf(title, sizeof title, "Weight staleness per stage (%s)", what);
        pb_plot_var_str(j, "plottitle", title);
        pb_plot_series_vars(j, &s);
        pb_plot_var(j, "haspred", "%d", any_value(&m, 2));
        pb_plot_var(j, "nstages", "%d", nstages);
        pb_plot_var_str(j, "namarks", marks);
    }
    free(m.v);
    for (int k = 0; k < nstages; k++)
        free(sl[k]);
    free(sl);
    for (int i = 0; i < s.n; i++)
        free(heads[i]);
    free(heads);
    pb_plot_series_free(&s);
    return rc;
}
