/* harness/driver/compare.c — the comparison of `pipebench compare` (compare.h): its default
 * workload, one row per run read back from the results database with the metrics of
 * SPEC §6, and the two text tables. */
#include "harness/driver/compare.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "results/results.h"

#define MIB (1024.0 * 1024.0)

void pb_compare_cfg_defaults(struct pb_run_cfg *c)
{
    pb_run_cfg_defaults(c);
    c->model = PB_COMPARE_MODEL;
    c->epochs = PB_COMPARE_EPOCHS;
    c->limit_train = PB_COMPARE_LIMIT_TRAIN;
    c->limit_val = PB_COMPARE_LIMIT_VAL;
    /* stages run at the same time, so throughput and bubbles are the schedule's own;
     * the weights are those of the sequential reference, bit for bit */
    c->executor = "threads";
}

/* Runs one query with run_id as ?1 (and target as ?2 when it has one); fills the
 * columns of its first row as doubles (NULL: *null set). Returns 0, 1 for no row, -1. */
static int query(sqlite3 *db, const char *sql, int64_t run_id, double target, double *out,
                 bool *null, int ncols, struct pb_err *e)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return pb_err_set(e, "reading the results database: %s", sqlite3_errmsg(db));
    sqlite3_bind_int64(s, 1, run_id);
    if (sqlite3_bind_parameter_count(s) > 1)
        sqlite3_bind_double(s, 2, target);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        for (int i = 0; i < ncols; i++) {
            null[i] = sqlite3_column_type(s, i) == SQLITE_NULL;
            out[i] = sqlite3_column_double(s, i);
        }
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_ROW)
        return 0;
    if (rc == SQLITE_DONE)
        return 1;
    return pb_err_set(e, "reading the results database: %s", sqlite3_errmsg(db));
}

static const char *const sql_epochs =
    "SELECT COUNT(*), MAX(val_acc), SUM(samples) / SUM(wall_s), "
    "(SELECT val_acc FROM epochs WHERE run_id = ?1 ORDER BY epoch DESC LIMIT 1) "
    "FROM epochs WHERE run_id = ?1";
static const char *const sql_target =
    "SELECT e.epoch + 1, (SELECT SUM(wall_s) FROM epochs f WHERE f.run_id = ?1 AND "
    "f.epoch <= e.epoch) FROM epochs e WHERE e.run_id = ?1 AND e.val_acc >= ?2 "
    "ORDER BY e.epoch LIMIT 1";
static const char *const sql_stages =
    "SELECT (SELECT AVG(bubble_frac) FROM stage_stats WHERE run_id = ?1), "
    "SUM(p), SUM(g), SUM(o), SUM(w), SUM(a), SUM(c), SUM(s) FROM ("
    "SELECT MAX(mem_params) p, MAX(mem_grads) g, MAX(mem_optstate) o, MAX(mem_wcopies) w, "
    "MAX(mem_acts) a, MAX(mem_comm) c, MAX(mem_scratch) s FROM stage_stats "
    "WHERE run_id = ?1 GROUP BY stage)";
static const char *const sql_staleness =
    "SELECT AVG(f_mean), SUM(pred_err_mean * pred_count) / SUM(pred_count), SUM(pred_count) "
    "FROM staleness WHERE run_id = ?1";
_Static_assert(PB_MEM_NKINDS == 7, "sql_stages lists the memory kinds");

static int fetch(sqlite3 *db, int64_t id, double target, struct pb_compare_row *r,
                 struct pb_err *e)
{
    double v[8];
    bool null[8];
    int rc = query(db, sql_epochs, id, 0, v, null, 4, e);
    if (rc < 0)
        return -1;
    r->epochs = (int)v[0];
    r->best_acc = v[1];
    r->throughput = null[2] ? 0 : v[2];
    r->final_acc = v[3];
    if ((rc = query(db, sql_target, id, target, v, null, 2, e)) < 0)
        return -1;
    if (rc == 0) {
        r->epochs_to_target = (int)v[0];
        r->seconds_to_target = v[1];
    }
    if (query(db, sql_stages, id, 0, v, null, 8, e) < 0)
        return -1;
    r->bubble = v[0];
    for (int k = 0; k < PB_MEM_NKINDS; k++)
        r->mem_mib[k] = v[k + 1] / MIB;
    if (query(db, sql_staleness, id, 0, v, null, 3, e) < 0)
        return -1;
    r->f_lag = v[0];
    r->pred_err = null[1] ? 0 : v[1];
    r->pred_count = (int64_t)v[2];
    return 0;
}

int pb_compare_fetch(const char *db_path, int64_t run_id, double target,
                     struct pb_compare_row *row, struct pb_err *e)
{
    if (run_id <= 0)
        return 0;
    struct pb_results *r;
    if (pb_results_open_existing(&r, db_path, e))
        return -1;
    sqlite3 *db = pb_results_sqlite(r);
    sqlite3_stmt *s;
    int rc = -1;
    if (sqlite3_prepare_v2(db, "SELECT status FROM runs WHERE id = ?1", -1, &s, NULL) !=
        SQLITE_OK) {
        pb_err_set(e, "reading the results database %s: %s", db_path, sqlite3_errmsg(db));
        goto out;
    }
    sqlite3_bind_int64(s, 1, run_id);
    if (sqlite3_step(s) != SQLITE_ROW) {
        sqlite3_finalize(s);
        pb_err_set(e, "run %lld is not in %s", (long long)run_id, db_path);
        goto out;
    }
    snprintf(row->status, sizeof row->status, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    row->run_id = run_id;
    rc = fetch(db, run_id, target, row, e);
out:
    pb_results_close(r);
    return rc;
}

/* A text table: the first two columns left-aligned, the others right-aligned. */
#define TCOLS 12
#define TCELL 32
_Static_assert(2 + PB_MEM_NKINDS + 1 <= TCOLS, "the memory table fits");

struct table {
    int ncols, nrows;
    char (*cells)[TCELL];   /* [rows * TCOLS] */
};

static void table_init(struct table *t, int ncols, int maxrows)
{
    t->ncols = ncols;
    t->nrows = 1;
    t->cells = pb_xcalloc((size_t)maxrows * TCOLS, sizeof *t->cells);
}

static char *cell(struct table *t, int row, int col)
{
    return t->cells[(size_t)row * TCOLS + (size_t)col];
}

static void cellf(struct table *t, int row, int col, const char *fmt, double v)
{
    snprintf(cell(t, row, col), TCELL, fmt, v);
}

static void table_print(FILE *f, struct table *t)
{
    int w[TCOLS] = {0};
    for (int r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            int len = (int)strlen(cell(t, r, c));
            w[c] = len > w[c] ? len : w[c];
        }
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++)
            fprintf(f, c < 2 ? "  %-*s" : "  %*s", w[c], cell(t, r, c));
        fputc('\n', f);
    }
    free(t->cells);
}

static bool has_epochs(const struct pb_compare_row *r)
{
    return r->run_id > 0 && r->epochs > 0;
}

static void print_speed(FILE *f, const struct pb_compare_row *rows, int n, double target)
{
    struct table t;
    table_init(&t, 12, n + 1);
    const char *head[] = {"schedule", "optimizer", "run", "status", "best acc", "final acc",
                          "epochs to", "s to", "samples/s", "bubble", "F lag", "pred err"};
    for (int c = 0; c < t.ncols; c++)
        snprintf(cell(&t, 0, c), TCELL, "%s", head[c]);
    snprintf(cell(&t, 0, 6), TCELL, "epochs to %.0f%%", 100 * target);
    snprintf(cell(&t, 0, 7), TCELL, "s to %.0f%%", 100 * target);
    for (int i = 0; i < n; i++, t.nrows++) {
        const struct pb_compare_row *r = &rows[i];
        int row = t.nrows;
        for (int k = 0; k < t.ncols; k++)
            snprintf(cell(&t, row, k), TCELL, "-");
        snprintf(cell(&t, row, 0), TCELL, "%s", r->schedule);
        snprintf(cell(&t, row, 1), TCELL, "%s", r->optimizer);
        if (r->run_id > 0)
            snprintf(cell(&t, row, 2), TCELL, "%lld", (long long)r->run_id);
        snprintf(cell(&t, row, 3), TCELL, "%s", r->status);
        if (!has_epochs(r))
            continue;
        cellf(&t, t.nrows, 4, "%.2f%%", 100 * r->best_acc);
        cellf(&t, t.nrows, 5, "%.2f%%", 100 * r->final_acc);
        if (r->epochs_to_target > 0) {
            cellf(&t, t.nrows, 6, "%.0f", r->epochs_to_target);
            cellf(&t, t.nrows, 7, "%.1f", r->seconds_to_target);
        }
        cellf(&t, t.nrows, 8, "%.0f", r->throughput);
        cellf(&t, t.nrows, 9, "%.3f", r->bubble);
        cellf(&t, t.nrows, 10, "%.2f", r->f_lag);
        if (r->pred_count > 0)
            cellf(&t, t.nrows, 11, "%.2e", r->pred_err);
    }
    fprintf(f, "Convergence and speed (target: %.0f%% validation accuracy; seconds are "
               "training time):\n", 100 * target);
    table_print(f, &t);
}

static void print_memory(FILE *f, const struct pb_compare_row *rows, int n)
{
    struct table t;
    table_init(&t, 2 + PB_MEM_NKINDS + 1, n + 1);
    snprintf(cell(&t, 0, 0), TCELL, "schedule");
    snprintf(cell(&t, 0, 1), TCELL, "optimizer");
    for (int k = 0; k < PB_MEM_NKINDS; k++)
        snprintf(cell(&t, 0, 2 + k), TCELL, "%s", pb_mem_kind_names[k]);
    snprintf(cell(&t, 0, t.ncols - 1), TCELL, "total");
    for (int i = 0; i < n; i++) {
        const struct pb_compare_row *r = &rows[i];
        if (!has_epochs(r))
            continue;
        snprintf(cell(&t, t.nrows, 0), TCELL, "%s", r->schedule);
        snprintf(cell(&t, t.nrows, 1), TCELL, "%s", r->optimizer);
        double total = 0;
        for (int k = 0; k < PB_MEM_NKINDS; k++) {
            cellf(&t, t.nrows, 2 + k, "%.2f", r->mem_mib[k]);
            total += r->mem_mib[k];
        }
        cellf(&t, t.nrows, t.ncols - 1, "%.2f", total);
        t.nrows++;
    }
    fprintf(f, "Peak memory by kind (MiB, each stage's peak summed over the stages):\n");
    if (t.nrows == 1) {
        fprintf(f, "  (no run recorded an epoch)\n");
        free(t.cells);
    } else {
        table_print(f, &t);
    }
}

void pb_compare_print(FILE *f, const struct pb_compare_row *rows, int n, double target)
{
    print_speed(f, rows, n, target);
    fputc('\n', f);
    print_memory(f, rows, n);
}
