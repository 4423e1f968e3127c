/* harness/driver/compare.c — the comparison of `pipebench compare` (compare.h): its default
 * workload, one row per run read back from the results database's run_summary view (the
 * metrics of semantics §6 as results/views.sql defines them), and the two text tables. */
#include "harness/driver/compare.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "plots/report_db.h"
#include "results/results.h"

#define MIB (1024.0 * 1024.0)

#define STR_(x) #x
#define STR(x) STR_(x)

void pb_compare_flag_defaults(struct pb_run_flags *f)
{
    /* threads: stages run at the same time, so throughput and bubbles are the schedule's
     * own; the weights are those of the sequential reference, bit for bit */
    static const char *const defaults[][2] = {
        {"model", PB_COMPARE_MODEL},
        {"epochs", STR(PB_COMPARE_EPOCHS)},
        {"limit-train", STR(PB_COMPARE_LIMIT_TRAIN)},
        {"limit-val", STR(PB_COMPARE_LIMIT_VAL)},
        {"executor", "threads"},
    };
    for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++)
        if (!pb_run_flags_get(f, defaults[i][0]))
            PB_CHECK(pb_run_flags_set(f, defaults[i][0], defaults[i][1], NULL) == 0);
}

/* The run's row of the run_summary view (results/views.sql, the one definition of the
 * metrics that report and plot print too), in the order of enum summary_col. */
/* Throughput and bubble are the medians over the repeats of the run's configuration and
 * seed (seed_timing), the run's own where it has none. */
static const char sql_summary[] =
    "SELECT s.status, epochs_done, best_acc, final_acc, epochs_to_target, seconds_to_target, "
    "coalesce(t.throughput, s.throughput), coalesce(t.bubble_frac, s.bubble_frac), f_mean, "
    "b_mean, pred_err_mean, pred_count, params_sum, grads_sum, optstate_sum, wcopies_sum, "
    "acts_sum, comm_sum, scratch_sum, bnstats_sum, host_sum, samples_per_update, "
    "updates_per_epoch, shared_timing, "
    "CASE WHEN t.throughput_repeats > 1 THEN t.throughput_lo ELSE s.throughput_lo END, "
    "CASE WHEN t.throughput_repeats > 1 THEN t.throughput_hi ELSE s.throughput_hi END "
    "FROM run_summary s LEFT JOIN seed_runs g ON g.run_id = s.run_id "
    "LEFT JOIN seed_timing t ON t.seed_run = g.seed_run WHERE s.run_id = ?1";
enum summary_col {
    C_STATUS, C_EPOCHS, C_BEST, C_FINAL, C_EPOCHS_TO, C_SECS_TO, C_THROUGHPUT, C_BUBBLE,
    C_F_LAG, C_B_LAG, C_PRED_ERR, C_PRED_COUNT, C_MEM, C_SAMPLES_PER_UPDATE = C_MEM + PB_MEM_NKINDS,
    C_UPDATES_PER_EPOCH, C_SHARED, C_THROUGHPUT_LO, C_THROUGHPUT_HI
};
_Static_assert(PB_MEM_NKINDS == 9, "sql_summary lists the memory kinds");

/* Column c as a double, 0 when NULL. */
static double num(sqlite3_stmt *s, int c)
{
    return sqlite3_column_type(s, c) == SQLITE_NULL ? 0 : sqlite3_column_double(s, c);
}

static int fetch(struct pb_results *db, int64_t id, double target, struct pb_compare_row *r,
                 struct pb_err *e)
{
    sqlite3 *d = pb_results_sqlite(db);
    sqlite3_stmt *s;
    if (pb_report_set_target(db, target, e))
        return -1;
    if (sqlite3_prepare_v2(d, sql_summary, -1, &s, NULL) != SQLITE_OK)
        return pb_err_set(e, "reading the results database %s: %s", pb_results_path(db),
                          sqlite3_errmsg(d));
    sqlite3_bind_int64(s, 1, id);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        if (rc == SQLITE_DONE)
            pb_err_set(e, "run %lld is not in %s", (long long)id, pb_results_path(db));
        else
            pb_err_set(e, "reading the results database %s: %s", pb_results_path(db),
                       sqlite3_errmsg(d));
        sqlite3_finalize(s);
        return -1;
    }
    snprintf(r->status, sizeof r->status, "%s", (const char *)sqlite3_column_text(s, C_STATUS));
    r->run_id = id;
    r->epochs = (int)num(s, C_EPOCHS);
    r->best_acc = num(s, C_BEST);
    r->final_acc = num(s, C_FINAL);
    r->epochs_to_target = (int)num(s, C_EPOCHS_TO);
    r->seconds_to_target = num(s, C_SECS_TO);
    r->throughput = num(s, C_THROUGHPUT);
    r->bubble = num(s, C_BUBBLE);
    r->f_lag = num(s, C_F_LAG);
    r->b_lag = num(s, C_B_LAG);
    r->pred_err = num(s, C_PRED_ERR);
    r->pred_count = (int64_t)num(s, C_PRED_COUNT);
    for (int k = 0; k < PB_MEM_NKINDS; k++)
        r->mem_mib[k] = num(s, C_MEM + k) / MIB;
    r->samples_per_update = (int)num(s, C_SAMPLES_PER_UPDATE);
    r->updates_per_epoch = (int)num(s, C_UPDATES_PER_EPOCH);
    r->shared = num(s, C_SHARED) == 1;
    r->throughput_lo = num(s, C_THROUGHPUT_LO);
    r->throughput_hi = num(s, C_THROUGHPUT_HI);
    sqlite3_finalize(s);
    return 0;
}

int pb_compare_fetch(const char *db_path, int64_t run_id, double target,
                     struct pb_compare_row *row, struct pb_err *e)
{
    if (run_id <= 0)
        return 0;
    struct pb_results *r;
    if (pb_report_open(&r, db_path, e))
        return -1;
    int rc = fetch(r, run_id, target, row, e);
    pb_results_close(r);
    return rc;
}

/* A text table: the first two columns left-aligned, the others right-aligned. */
#define TCOLS 16
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

/* The columns a cell takes on a terminal: its UTF-8 characters (†, – are one each). */
static int width(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static void table_print(FILE *f, struct table *t)
{
    int w[TCOLS] = {0};
    for (int r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            int len = width(cell(t, r, c));
            w[c] = len > w[c] ? len : w[c];
        }
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *v = cell(t, r, c);
            int pad = w[c] - width(v);
            if (c < 2)
                fprintf(f, "  %s%*s", v, pad, "");
            else
                fprintf(f, "  %*s%s", pad, "", v);
        }
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
    bool shared = false;
    struct table t;
    table_init(&t, 16, n + 1);
    const char *head[] = {"schedule", "optimizer", "run", "status", "samples/upd", "upd/epoch",
                          "best acc", "final acc", "epochs to", "s to", "samples/s", "range",
                          "bubble", "F lag", "B lag", "pred err"};
    for (int c = 0; c < t.ncols; c++)
        snprintf(cell(&t, 0, c), TCELL, "%s", head[c]);
    snprintf(cell(&t, 0, 8), TCELL, "epochs to %.0f%%", 100 * target);
    snprintf(cell(&t, 0, 9), TCELL, "s to %.0f%%", 100 * target);
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
        if (r->samples_per_update > 0)
            cellf(&t, row, 4, "%.0f", r->samples_per_update);
        if (r->updates_per_epoch > 0)
            cellf(&t, row, 5, "%.0f", r->updates_per_epoch);
        if (!has_epochs(r))
            continue;
        cellf(&t, row, 6, "%.2f%%", 100 * r->best_acc);
        cellf(&t, row, 7, "%.2f%%", 100 * r->final_acc);
        if (r->epochs_to_target > 0) {
            cellf(&t, row, 8, "%.0f", r->epochs_to_target);
            cellf(&t, row, 9, "%.1f", r->seconds_to_target);
        }
        const char *dagger = r->shared ? "\xe2\x80\xa0" : "";
        shared |= r->shared;
        snprintf(cell(&t, row, 10), TCELL, "%.0f%s", r->throughput, dagger);
        if (r->throughput_hi > r->throughput_lo)
            snprintf(cell(&t, row, 11), TCELL, "%.0f\xe2\x80\x93%.0f", r->throughput_lo,
                     r->throughput_hi);
        snprintf(cell(&t, row, 12), TCELL, "%.1f%%%s", 100 * r->bubble, dagger);
        cellf(&t, row, 13, "%.2f", r->f_lag);
        cellf(&t, row, 14, "%.2f", r->b_lag);
        if (r->pred_count > 0)
            cellf(&t, row, 15, "%.2e", r->pred_err);
    }
    fprintf(f, "Convergence and speed (target: %.0f%% validation accuracy; seconds are "
               "training time; samples/s: the median over the steady epochs, range: theirs, "
               "or their repeats'):\n", 100 * target);
    table_print(f, &t);
    if (shared)
        fprintf(f, "\xe2\x80\xa0: measured with the stages sharing cores (the seq executor, "
                   "or more stage threads than cores): not a one-device-per-stage pipeline's "
                   "timing\n");
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
