/* plots/kit_table.c — an experiment kit's table (kit_table.h): for each published row a
 * "paper" line, a "pipebench" line (mean ± std over the seeds, diverged runs counted and
 * not averaged) and, at the paper's scale, a "Δ" line; a note where a row's schedules ran
 * on different partitions. */
#include "plots/kit_table.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plots/report_db.h"

const char *const pb_kit_columns[PB_KIT_NCOLS] = {"gpipe", "pipedream", "pipedream-2bw",
                                                  "spectrain", "xpipe", "pipeoptim"};

static const char *const column_heads[PB_KIT_NCOLS] = {"GPipe", "PipeDream", "PipeDream-2BW",
                                                       "SpecTrain", "XPipe", "PipeOptim"};

/* A cell's runs: their mean and std over the runs done, and how many diverged. */
struct ours {
    int n, diverged;
    double mean, sd;
};

static int cell_of(sqlite3_stmt *q, const struct pb_kit_cell *c, struct ours *o,
                   struct pb_err *e)
{
    double v[PB_KIT_MAX_SEEDS];
    memset(o, 0, sizeof *o);
    for (int i = 0; q && i < c->nruns; i++) {
        if (c->runs[i] <= 0)
            continue;
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, c->runs[i]);
        int rc = sqlite3_step(q);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return pb_err_set(e, "cannot read run %lld's accuracy: %s", (long long)c->runs[i],
                              sqlite3_errmsg(sqlite3_db_handle(q)));
        if (rc != SQLITE_ROW)
            continue;
        const unsigned char *status = sqlite3_column_text(q, 0);
        if (status && !strcmp((const char *)status, "diverged"))
            o->diverged++;
        else if (sqlite3_column_type(q, 1) != SQLITE_NULL)
            v[o->n++] = sqlite3_column_double(q, 1);
    }
    for (int i = 0; i < o->n; i++)
        o->mean += v[i] / o->n;
    for (int i = 0; o->n > 1 && i < o->n; i++)
        o->sd += (v[i] - o->mean) * (v[i] - o->mean) / (o->n - 1);
    o->sd = sqrt(o->sd);
    return 0;
}

/* Row kr's partitions where its schedules' differ (a row compares schedules on one
 * partition: a cut chosen per micro-batch size can differ between the schedules that sum
 * M micro-batches and the others): "partitions differ: GPipe 0,4,6,9,14; PipeDream
 * 0,2,5,8,14" into note, a column's first run's cut each; "" where they agree. */
static int cuts_note(sqlite3 *h, const struct pb_kit_table_row *kr, char *note, size_t cap,
                     struct pb_err *e)
{
    sqlite3_stmt *q;
    note[0] = 0;
    if (!h)
        return 0;
    if (sqlite3_prepare_v2(h, "SELECT partition_cut FROM runs WHERE id = ?", -1, &q, NULL) !=
        SQLITE_OK)
        return pb_err_set(e, "cannot read the runs' partitions: %s", sqlite3_errmsg(h));
    char first[128] = "";
    bool differ = false;
    int listed = 0;
    size_t len = (size_t)snprintf(note, cap, "partitions differ:");
    for (int c = 0; c < PB_KIT_NCOLS; c++)
        for (int i = 0; i < kr->cells[c].nruns; i++) {
            sqlite3_reset(q);
            sqlite3_bind_int64(q, 1, kr->cells[c].runs[i]);
            if (kr->cells[c].runs[i] <= 0 || sqlite3_step(q) != SQLITE_ROW ||
                sqlite3_column_type(q, 0) == SQLITE_NULL)
                continue;
            const char *cut = (const char *)sqlite3_column_text(q, 0);
            differ |= first[0] && strcmp(cut, first);
            if (!first[0])
                snprintf(first, sizeof first, "%s", cut);
            if (len < cap)
                len += (size_t)snprintf(note + len, cap - len, "%s %s %s", listed ? ";" : "",
                                        column_heads[c], cut);
            listed++;
            break;
        }
    sqlite3_finalize(q);
    if (!differ)
        note[0] = 0;
    return 0;
}

static void set_text(struct pb_grid *g, int row, int col, const char *fmt, double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    pb_grid_set(g, row, col, buf, false);
}

int pb_kit_table_write(const char *db, const struct pb_kit_table_row *rows, int n, bool with_diff,
                       const char *caption, enum pb_report_format f, FILE *out,
                       struct pb_err *e)
{
    struct pb_results *r = NULL;
    sqlite3_stmt *q = NULL;
    if (access(db, F_OK) == 0) {
        if (pb_report_open(&r, db, e))
            return -1;
        if (sqlite3_prepare_v2(pb_results_sqlite(r), "SELECT status, coalesce(best_bleu, 100 * "
                               "best_acc) FROM run_summary WHERE run_id = ?", -1, &q,
                               NULL) != SQLITE_OK) {
            pb_err_set(e, "cannot read %s: %s", db, sqlite3_errmsg(pb_results_sqlite(r)));
            pb_results_close(r);
            return -1;
        }
    }
    enum { NL = 4, NOTE = NL + PB_KIT_NCOLS };
    char (*notes)[512] = pb_xcalloc((size_t)n + 1, sizeof *notes);
    bool mixed = false;   /* some row's schedules ran on different partitions: a note column */
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        rc = cuts_note(r ? pb_results_sqlite(r) : NULL, &rows[i], notes[i], sizeof notes[i], e);
        mixed |= notes[i][0] != 0;
    }
    struct pb_grid g;
    pb_grid_init(&g, NOTE + mixed, NL, caption);
    int h = pb_grid_add_row(&g);
    static const char *const labels[NL] = {"workload", "optimizer", "metric", "source"};
    for (int k = 0; k < NL; k++)
        pb_grid_set(&g, h, k, labels[k], false);
    for (int c = 0; c < PB_KIT_NCOLS; c++)
        pb_grid_set(&g, h, NL + c, column_heads[c], false);
    if (mixed)
        pb_grid_set(&g, h, NOTE, "note", false);
    for (int i = 0; i < n && !rc; i++) {
        const struct pb_kit_table_row *kr = &rows[i];
        int paper = pb_grid_add_row(&g), ours = pb_grid_add_row(&g);
        int diff = with_diff ? pb_grid_add_row(&g) : -1;
        pb_grid_set(&g, paper, 0, kr->label, false);
        pb_grid_set(&g, paper, 1, kr->optimizer, false);
        pb_grid_set(&g, paper, 2, kr->metric, false);
        pb_grid_set(&g, paper, 3, kr->note[0] ? kr->note : "paper", false);
        if (!isnan(kr->chance))
            set_text(&g, ours, 2, "chance %.2f", kr->chance);
        else
            pb_grid_set(&g, ours, 2, "", false);
        for (int k = 0; k < 3; k++) {
            if (k != 2)
                pb_grid_set(&g, ours, k, "", false);
            if (diff >= 0)
                pb_grid_set(&g, diff, k, "", false);
        }
        pb_grid_set(&g, ours, 3, "pipebench", false);
        if (mixed) {
            pb_grid_set(&g, paper, NOTE, "", false);
            pb_grid_set(&g, ours, NOTE, notes[i], false);
            if (diff >= 0)
                pb_grid_set(&g, diff, NOTE, "", false);
        }
        if (diff >= 0)
            pb_grid_set(&g, diff, 3, "\xce\x94 (pipebench \xe2\x88\x92 paper)", false);
        for (int c = 0; c < PB_KIT_NCOLS && !rc; c++) {
            const struct pb_kit_cell *cell = &kr->cells[c];
            if (!isnan(cell->paper))
                set_text(&g, paper, NL + c, "%.2f", cell->paper);
            else
                pb_grid_set(&g, paper, NL + c, NULL, false);
            struct ours o;
            rc = cell_of(q, cell, &o, e);
            if (rc)
                break;
            char buf[96], note[64] = "";
            if (o.n > 1)
                snprintf(buf, sizeof buf, "%.2f \xc2\xb1 %.2f", o.mean, o.sd);
            else if (o.n == 1)
                snprintf(buf, sizeof buf, "%.2f", o.mean);
            else
                snprintf(buf, sizeof buf, "%s", o.diverged ? "diverged" : "");
            if (o.n || o.diverged)
                snprintf(note, sizeof note, o.diverged ? " (n = %d, %d diverged)" : " (n = %d)",
                         o.n + o.diverged, o.diverged);
            pb_grid_set(&g, ours, NL + c, cell->nruns ? buf : NULL, false);
            pb_grid_note(&g, ours, NL + c, note[0] ? note : NULL);
            if (diff >= 0 && o.n && !isnan(cell->paper))
                set_text(&g, diff, NL + c, "%+.2f", o.mean - cell->paper);
            else if (diff >= 0)
                pb_grid_set(&g, diff, NL + c, isnan(cell->paper) || !cell->nruns ? NULL : "",
                            false);
        }
    }
    sqlite3_finalize(q);
    free(notes);
    if (r)
        pb_results_close(r);
    if (!rc && pb_grid_write(&g, f, out))
        rc = pb_err_set(e, "cannot write the table (output error); check where stdout goes");
    pb_grid_finish(&g);
    return rc;
}
