/* plots/plot_data.c — data of the figures that compare schedules (plot_data.h):
 * convergence, throughput and bubble fraction (per schedule and D) and staleness (per
 * stage), each the mean over the compared configuration's finished runs of a value of
 * results/views.sql (as report.c averages them), a data block or column per schedule. */
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot_data.h"
#include "plots/report_db.h"

/* The runs compared: finished (or the chosen one) with the chosen run's optimizer, model
 * and dataset, and its D unless every D is compared; ?1 is the chosen run. */
#define SAME_CONFIG                                                                  \
    " FROM run_config c JOIN run_config r ON r.run_id = ?1"                         \
    " AND c.optimizer IS r.optimizer AND c.model IS r.model"                        \
    " AND c.dataset IS r.dataset AND (c.status = 'done' OR c.run_id = ?1)"
#define SAME_D " AND c.stages IS r.stages"

/* Colours per schedule in registry order (default, then its variants). */
static const char *const base_colors[] = {"#4E79A7", "#F28E2B", "#59A14F", "#B07AA1",
                                          "#76B7B2", "#E15759"};
static const char *const variant_colors[] = {"#A0CBE8", "#FFBE7D", "#8CD17D", "#D4A6C8",
                                             "#499894", "#9C2F31"};
#define NCOLORS (int)(sizeof base_colors / sizeof base_colors[0])

struct series {
    int n;
    char **label;
    const char **color;
};

static void series_free(struct series *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->label[i]);
    free(s->label);
    free(s->color);
}

static const char *color_of(int rank)
{
    int sched = rank / 32, variant = rank % 32;
    if (sched >= NCOLORS)
        return "#7F7F7F";
    return variant ? variant_colors[sched] : base_colors[sched];
}

/* The schedule columns of the compared runs that have rows in `rows` (a table or view
 * keyed by run_id, with a condition), in registry order. */
static int load_series(struct pb_plot_job *j, const char *rows, int same_d, struct series *s,
                       struct pb_err *e)
{
    char sql[1024];
    snprintf(sql, sizeof sql, "SELECT DISTINCT c.schedule, c.variant, c.column_label" SAME_CONFIG
             "%s AND c.run_id IN (SELECT run_id FROM %s)", same_d ? SAME_D : "", rows);
    sqlite3_stmt *q;
    memset(s, 0, sizeof *s);
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), sql, -1, &q, NULL) != SQLITE_OK)
        return pb_plot_db_fail(j, "listing the schedules", e);
    sqlite3_bind_int64(q, 1, j->run);
    int rc, *rank = NULL;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        s->label = realloc(s->label, (size_t)(s->n + 1) * sizeof *s->label);
        rank = realloc(rank, (size_t)(s->n + 1) * sizeof *rank);
        PB_CHECK(s->label && rank);
        const char *t = (const char *)sqlite3_column_text(q, 2);
        rank[s->n] = pb_report_schedule_rank((const char *)sqlite3_column_text(q, 0),
                                             (const char *)sqlite3_column_text(q, 1));
        s->label[s->n++] = pb_xstrdup(t ? t : "?");
    }
    sqlite3_finalize(q);
    for (int a = 1; a < s->n; a++)   /* insertion sort by rank, then label */
        for (int b = a; b > 0 && (rank[b - 1] > rank[b] ||
                                  (rank[b - 1] == rank[b] &&
                                   strcmp(s->label[b - 1], s->label[b]) > 0)); b--) {
            int r = rank[b];
            rank[b] = rank[b - 1];
            rank[b - 1] = r;
            char *t = s->label[b];
            s->label[b] = s->label[b - 1];
            s->label[b - 1] = t;
        }
    s->color = pb_xcalloc((size_t)s->n + 1, sizeof *s->color);
    for (int i = 0; i < s->n; i++)
        s->color[i] = color_of(rank[i]);
    free(rank);
    if (rc != SQLITE_DONE) {
        series_free(s);
        return pb_plot_db_fail(j, "listing the schedules", e);
    }
    return 0;
}

/* nseries and colors ('#rrggbb ...', one per series) for the script. */
static void series_vars(struct pb_plot_job *j, const struct series *s)
{
    char colors[1024] = "";
    for (int i = 0; i < s->n && strlen(colors) + 9 < sizeof colors; i++)
        snprintf(colors + strlen(colors), sizeof colors - strlen(colors), "%s%s",
                 i ? " " : "", s->color[i]);
    pb_plot_var(j, "nseries", "%d", s->n);
    pb_plot_var_str(j, "colors", colors);
}

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

/* Writes the blocks to FIGURE.dat after the comment; returns 0 or -1. */
static int write_matrix(struct pb_plot_job *j, const struct matrix *m, const char *comment,
                        const char *corner, struct pb_err *e)
{
    struct pb_afile a;
    if (pb_plot_open_dat(j, &a, e))
        return -1;
    fputs(comment, a.f);
    for (int b = 0; b < m->nblocks; b++) {
        fprintf(a.f, "%s%s", b ? "\n\n" : "", corner);
        for (int c = 0; c < m->ncols; c++) {
            fputc(' ', a.f);
            pb_plot_put_label(a.f, m->cols[c]);
        }
        fputc('\n', a.f);
        for (int r = 0; r < m->nrows; r++) {
            pb_plot_put_label(a.f, m->rows[r]);
            for (int c = 0; c < m->ncols; c++) {
                double v = m->v[((size_t)b * m->nrows + r) * m->ncols + c];
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

static int no_data(struct pb_err *e, const char *what, int64_t run)
{
    pb_err_set(e, "no run comparable with run %lld (same optimizer, model and dataset, "
               "status done) recorded %s", (long long)run, what);
    return PB_PLOT_NO_DATA;
}

/* Runs the query (?1 = the run) and stores each row's value columns [first, first +
 * nblocks) into the matrix cell named by columns 0 (the row: its label, or its index when
 * rows_by_index) and 1 (the column's label). */
static int fill_matrix(struct pb_plot_job *j, const char *sql, struct matrix *m, int rows_by_index,
                       int first, struct pb_err *e)
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
        for (int b = 0; b < m->nblocks; b++)
            if (sqlite3_column_type(q, first + b) != SQLITE_NULL)
                *cell(m, b, r, c) = sqlite3_column_double(q, first + b);
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

int pb_plot_data_convergence(struct pb_plot_job *j, struct pb_err *e)
{
    struct series s;
    if (load_series(j, "epochs WHERE val_acc IS NOT NULL", 1, &s, e))
        return -1;
    if (s.n == 0) {
        series_free(&s);
        return no_data(e, "a validation accuracy", j->run);
    }
    static const char sql[] =
        "SELECT p.epoch + 1, 100 * avg(p.val_acc), avg(p.elapsed_s), count(*)"
        " FROM epoch_progress p JOIN (SELECT c.run_id" SAME_CONFIG SAME_D
        " AND c.column_label = ?2) USING (run_id) GROUP BY p.epoch ORDER BY p.epoch";
    sqlite3_stmt *q;
    struct pb_afile a;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), sql, -1, &q, NULL) != SQLITE_OK) {
        series_free(&s);
        return pb_plot_db_fail(j, "reading the epochs", e);
    }
    int rc = pb_plot_open_dat(j, &a, e);
    if (rc == 0)
        fputs("# convergence: a block per schedule; per epoch the mean over its runs of\n"
              "# epoch (1-based), validation accuracy (%), training seconds elapsed; runs\n",
              a.f);
    for (int i = 0; i < s.n && rc == 0; i++) {
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, j->run);
        sqlite3_bind_text(q, 2, s.label[i], -1, SQLITE_STATIC);
        fprintf(a.f, "%sepoch ", i ? "\n\n" : "");
        pb_plot_put_label(a.f, s.label[i]);
        fputs(" seconds runs\n", a.f);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            fprintf(a.f, "%d", sqlite3_column_int(q, 0));
            for (int c = 1; c <= 2; c++)
                if (sqlite3_column_type(q, c) == SQLITE_NULL)
                    fputs(" ?", a.f);
                else
                    fprintf(a.f, " %.6g", sqlite3_column_double(q, c));
            fprintf(a.f, " %d\n", sqlite3_column_int(q, 3));
        }
        rc = rc == SQLITE_DONE ? 0 : pb_plot_db_fail(j, "reading the epochs", e);
    }
    sqlite3_finalize(q);
    if (rc == 0)
        rc = pb_afile_commit(&a, e);
    else
        pb_afile_abort(&a);
    if (rc == 0) {
        char what[256], title[512];
        pb_plot_describe(j, 1, what, sizeof what);
        snprintf(title, sizeof title, "Validation accuracy per schedule (%s)", what);
        pb_plot_var_str(j, "plottitle", title);
        series_vars(j, &s);
    }
    series_free(&s);
    return rc;
}

int pb_plot_data_throughput(struct pb_plot_job *j, struct pb_err *e)
{
    struct series s;
    if (load_series(j, "run_throughput WHERE throughput IS NOT NULL", 0, &s, e))
        return -1;
    if (s.n == 0) {
        series_free(&s);
        return no_data(e, "throughput", j->run);
    }
    sqlite3_stmt *q;
    char *dl[64];
    int nd = 0, rc;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT DISTINCT c.stages" SAME_CONFIG
                           " AND c.run_id IN (SELECT run_id FROM run_throughput WHERE "
                           "throughput IS NOT NULL) ORDER BY 1",
                           -1, &q, NULL) != SQLITE_OK) {
        series_free(&s);
        return pb_plot_db_fail(j, "listing the stage counts", e);
    }
    sqlite3_bind_int64(q, 1, j->run);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW && nd < 64) {
        char d[32];
        snprintf(d, sizeof d, "D=%d", sqlite3_column_int(q, 0));
        dl[nd++] = pb_xstrdup(d);
    }
    sqlite3_finalize(q);
    struct matrix m;
    matrix_init(&m, 2, s.n, s.label, nd, dl);
    rc = fill_matrix(j, "SELECT c.column_label, 'D=' || c.stages, avg(t.throughput), "
                     "100 * avg(b.bubble_frac) FROM run_throughput t JOIN (SELECT c.run_id, "
                     "c.column_label, c.stages" SAME_CONFIG ") c USING (run_id) "
                     "LEFT JOIN run_bubble b USING (run_id) GROUP BY 1, 2", &m, 0, 2, e);
    if (rc == 0)
        rc = write_matrix(j, &m, "# throughput: the mean over the runs of each schedule (row) "
                          "and D (column) of: block 0 the\n# run's throughput (the median samples/s "
                          "of its steady epochs, view run_throughput), block 1\n# its bubble "
                          "fraction (%, view run_bubble)\n", "schedule", e);
    if (rc == 0) {
        char what[256], title[512];
        pb_plot_describe(j, 0, what, sizeof what);
        snprintf(title, sizeof title, "Throughput and bubbles per schedule (%s)", what);
        pb_plot_var_str(j, "plottitle", title);
        pb_plot_var(j, "ncols", "%d", nd);
        pb_plot_var(j, "nrows", "%d", s.n);
        pb_plot_var(j, "hasbubble", "%d", any_value(&m, 1));
    }
    free(m.v);
    for (int i = 0; i < nd; i++)
        free(dl[i]);
    series_free(&s);
    return rc;
}

int pb_plot_data_staleness(struct pb_plot_job *j, struct pb_err *e)
{
    struct series s;
    if (load_series(j, "run_staleness WHERE f_mean IS NOT NULL AND b_mean IS NOT NULL", 1, &s,
                    e))
        return -1;
    if (s.n == 0) {
        series_free(&s);
        return no_data(e, "staleness", j->run);
    }
    sqlite3_stmt *q;
    int nstages = 0;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT max(s.stage) + 1 FROM "
                           "stage_staleness s JOIN (SELECT c.run_id" SAME_CONFIG SAME_D ") "
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
    matrix_init(&m, 3, nstages, sl, s.n, s.label);
    int rc = fill_matrix(j, "SELECT s.stage, c.column_label, avg(s.f_mean), avg(s.b_mean), "
                         "avg(s.pred_err_mean) FROM stage_staleness s JOIN (SELECT c.run_id, "
                         "c.column_label"
                         SAME_CONFIG SAME_D ") c USING (run_id) GROUP BY 1, 2", &m, 1, 2, e);
    for (int i = 0; i < nstages * s.n; i++)   /* log scale: zero errors are not drawn */
        if (m.v[2 * (size_t)nstages * s.n + i] <= 0)
            m.v[2 * (size_t)nstages * s.n + i] = NAN;
    if (rc == 0)
        rc = write_matrix(j, &m, "# staleness: per stage (row) and schedule (column), mean "
                          "over epochs and runs of: block 0 the\n# forward version lag, block "
                          "1 the backward version lag (versions behind the synchronous run),\n"
                          "# block 2 the prediction error ||W_pred - W|| / ||W|| (? where "
                          "none or zero)\n", "stage", e);
    if (rc == 0) {
        char what[256], title[512];
        pb_plot_describe(j, 1, what, sizeof what);
        snprintf(title, sizeof title, "Weight staleness per stage (%s)", what);
        pb_plot_var_str(j, "plottitle", title);
        series_vars(j, &s);
        pb_plot_var(j, "haspred", "%d", any_value(&m, 2));
        pb_plot_var(j, "nstages", "%d", nstages);
    }
    free(m.v);
    for (int k = 0; k < nstages; k++)
        free(sl[k]);
    free(sl);
    series_free(&s);
    return rc;
}
