/* plots/plot_timeline.c — the timeline figure's data (plot_data.h): a Gantt chart panel per
 * run (the chosen one, or each selected run with events, simulations included), each of
 * a window of its epoch: by default a few steady-state steps mid-epoch, else the
 * micro-batches --window asks for, from the first F of the window's first micro-batch to
 * the last B (and its U) of its last on stage 0; ops crossing the window's edges are
 * clipped to it. A row per device: per stage where each stage is its own device, and where
 * the run held v > 1 model chunks per device (--chunks, zb-v, dualpipe-v) the device's
 * chunks' ops on its row, each with its chunk (the stage → device map of
 * plots/run_devices.h). Rows are labelled with their bubble in the epoch (stage_stats'
 * idle / makespan; a device's is 1 − Σ (1 − its stages' bubbles): the makespan less the
 * busy time of all its stages).
 * Where every panel is a simulation of costs given to `simulate --cost` (numbers a user
 * chose, often unitless), times are in those cost units, not converted to ms. */
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot_data.h"
#include "plots/run_devices.h"

#define MAX_LABELED_OPS 48   /* per device in a window: above this, boxes are too narrow */
#define STEPS 3              /* optimizer steps in the default window */

struct panel {
    int64_t run;
    int epoch, devices, lo, hi, mb_lo, mb_hi, per_update, most;
    double t0, t1;               /* the window, seconds since the epoch began */
    bool given_costs;            /* a simulation of costs given to simulate --cost */
    char title[512];
    struct pb_run_devices map;   /* the rows: each stage's device and chunk */
    int label_chars;             /* the longest row label */
};

/* One op in the window: its row, times from the window's start, kind, micro-batch,
 * whether clipped, its stage. */
struct row {
    int device, kind, mb, clipped, stage;
    double t0, t1;
};

static int row_order(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return (x->stage > y->stage) - (x->stage < y->stage);
}

/* The first column of the query's row (?1 run, ?2 epoch, ?3 a, ?4 b), or none. */
static double num(struct pb_plot_job *j, const char *sql, const struct panel *p, double a,
                  double b, double none)
{
    sqlite3_stmt *q;
    double v = none;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), sql, -1, &q, NULL) != SQLITE_OK)
        return none;
    sqlite3_bind_int64(q, 1, p->run);
    sqlite3_bind_int(q, 2, p->epoch);
    sqlite3_bind_double(q, 3, a);
    sqlite3_bind_double(q, 4, b);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL)
        v = sqlite3_column_double(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* The panel's epoch (the asked one, else its last with events), devices and micro-batches
 * traced; returns 0, PB_PLOT_NO_DATA or -1. */
static int find_epoch(struct pb_plot_job *j, struct panel *p, struct pb_err *e)
{
    p->epoch = j->opts.epoch > 0 ? j->opts.epoch - 1
               : (int)num(j, "SELECT max(epoch) FROM events WHERE run_id = ?1", p, 0, 0, -1);
    if (p->epoch < 0) {
        pb_err_set(e, "run %lld recorded no op events; pass --run with another run, or record "
                   "events with run's --trace-epochs", (long long)p->run);
        return PB_PLOT_NO_DATA;
    }
    p->devices = (int)num(j, "SELECT max(device) + 1 FROM events WHERE run_id = ?1 AND epoch "
                          "= ?2", p, 0, 0, 0);
    p->mb_lo = (int)num(j, "SELECT min(mb) FROM events WHERE run_id = ?1 AND epoch = ?2 AND "
                        "kind = 'F'", p, 0, 0, -1);
    p->mb_hi = 1 + (int)num(j, "SELECT max(mb) FROM events WHERE run_id = ?1 AND epoch = ?2 "
                            "AND kind = 'F'", p, 0, 0, -2);
    if (p->devices <= 0 || p->mb_lo < 0 || p->mb_hi <= p->mb_lo) {
        char span[96] = "";
        int lo = (int)num(j, "SELECT min(epoch) FROM events WHERE run_id = ?1", p, 0, 0, -1);
        int hi = (int)num(j, "SELECT max(epoch) FROM events WHERE run_id = ?1", p, 0, 0, -1);
        if (lo >= 0)
            snprintf(span, sizeof span, "; its events cover epochs %d to %d", lo + 1, hi + 1);
        return pb_err_set(e, "run %lld has no events in epoch %d%s (--epoch counts from 1)",
                          (long long)p->run, p->epoch + 1, span);
    }
    if (pb_run_devices_read(j->db, p->run, p->devices, &p->map, e))
        return -1;
    p->devices = p->map.devices;
    /* micro-batches per update: the gradient ops (B, W) before stage 0's first U
     * (semantics §6.1) */
    p->per_update = (int)num(j, "SELECT count(*) FROM events WHERE run_id = ?1 AND epoch = ?2 "
                             "AND device = 0 AND kind IN ('B', 'W') AND seq < coalesce((SELECT "
                             "min(seq) FROM events WHERE run_id = ?1 AND epoch = ?2 AND device "
                             "= 0 AND kind = 'U'), 1e18)", p, 0, 0, 1);
    if (p->per_update < 1 || p->per_update > p->mb_hi - p->mb_lo)
        p->per_update = 1;
    return 0;
}

/* The window's micro-batches [lo, hi) and times [t0, t1]. */
static int find_window(struct pb_plot_job *j, struct panel *p, struct pb_err *e)
{
    int span = p->mb_hi - p->mb_lo, want = STEPS * p->per_update;
    if (want < 2 * p->devices)
        want = (2 * p->devices + p->per_update - 1) / p->per_update * p->per_update;
    if (j->opts.window_hi > 0) {
        p->lo = j->opts.window_lo;
        p->hi = j->opts.window_hi;
        if (p->lo < p->mb_lo || p->hi > p->mb_hi)
            return pb_err_set(e, "--window %d:%d: run %lld's epoch %d has events for "
                              "micro-batches %d to %d only (--window A:B draws A to B-1)",
                              p->lo, p->hi, (long long)p->run, p->epoch + 1, p->mb_lo,
                              p->mb_hi - 1);
    } else if (j->opts.window_hi == PB_PLOT_WINDOW_ALL || span <= want + 2 * p->per_update) {
        p->lo = p->mb_lo;
        p->hi = p->mb_hi;
    } else {   /* mid-epoch, starting at an update's first micro-batch */
        p->lo = (p->mb_lo + (span - want) / 2) / p->per_update * p->per_update;
        if (p->lo < p->mb_lo)
            p->lo += p->per_update;
        p->hi = p->lo + want;
    }
    int whole = p->lo == p->mb_lo && p->hi == p->mb_hi;
    p->t0 = whole ? 0 : num(j, "SELECT min(start_s) FROM events WHERE run_id = ?1 AND epoch = "
                            "?2 AND device = 0 AND kind = 'F' AND mb = ?3", p, p->lo, 0, 0);
    p->t1 = num(j, whole ? "SELECT max(end_s) FROM events WHERE run_id = ?1 AND epoch = ?2"
                         : "WITH b AS (SELECT max(seq) AS s FROM events WHERE run_id = ?1 AND "
                           "epoch = ?2 AND device = 0 AND kind IN ('B', 'W') AND mb = ?3 - 1) "
                           "SELECT "
                           "max(end_s) FROM events, b WHERE run_id = ?1 AND epoch = ?2 AND "
                           "device = 0 AND seq >= b.s AND seq <= coalesce((SELECT min(seq) FROM "
                           "events WHERE run_id = ?1 AND epoch = ?2 AND device = 0 AND kind = "
                           "'U' AND seq > b.s), b.s)", p, p->hi, 0, p->t0);
    if (!(p->t1 > p->t0))
        return pb_err_set(e, "run %lld's epoch %d: no ops of micro-batches %d to %d on stage 0 "
                          "to draw; pass another --window", (long long)p->run, p->epoch + 1,
                          p->lo, p->hi - 1);
    return 0;
}

/* "run 3: pipedream, measured (threads executor) ..." or "... simulated (ideal ...)". */
static void panel_title(struct pb_plot_job *j, struct panel *p)
{
    sqlite3_stmt *q;
    char what[160] = "?", how[200] = "";
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT schedule || coalesce(' (' || "
                           "nullif(variant, '') || ')', ''), executor, json_extract(config, "
                           "'$.from_run'), stages, model FROM runs WHERE id = ?", -1, &q,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, p->run);
        if (sqlite3_step(q) == SQLITE_ROW) {
            const char *ex = (const char *)sqlite3_column_text(q, 1);
            snprintf(what, sizeof what, "%s, D=%d%s%s", sqlite3_column_text(q, 0),
                     sqlite3_column_int(q, 3), sqlite3_column_text(q, 4) ? ", " : "",
                     sqlite3_column_text(q, 4) ? (const char *)sqlite3_column_text(q, 4) : "");
            if (ex && !strcmp(ex, "sim")) {
                if (sqlite3_column_type(q, 2) != SQLITE_NULL)
                    snprintf(how, sizeof how, "SIMULATED: ideal, one device per stage, the "
                             "median op costs of run %lld", (long long)sqlite3_column_int64(q, 2));
                else
                    snprintf(how, sizeof how, "SIMULATED: ideal, one device per stage, given "
                             "op costs");
                p->given_costs = sqlite3_column_type(q, 2) == SQLITE_NULL;
            } else {
                snprintf(how, sizeof how, "measured, %s executor", ex ? ex : "?");
            }
        }
    }
    sqlite3_finalize(q);
    snprintf(p->title, sizeof p->title, "run %lld: %s; %s; epoch %d, micro-batches %d to %d",
             (long long)p->run, what, how, p->epoch + 1, p->lo, p->hi - 1);
}

/* The labels block: each row's name and its bubble over the whole epoch, "stage 3 (epoch
 * bubble 25%)" or, with chunks, "device 1: stages 1, 2 (epoch bubble 12%)". */
static int write_labels(struct pb_plot_job *j, struct panel *p, FILE *f, struct pb_err *e)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT stage, bubble_frac FROM "
                           "stage_stats WHERE run_id = ?1 AND epoch = ?2", -1, &q,
                           NULL) != SQLITE_OK)
        return pb_plot_db_fail(j, "reading the stage stats", e);
    sqlite3_bind_int64(q, 1, p->run);
    sqlite3_bind_int(q, 2, p->epoch);
    int nd = p->map.devices, rc;
    double *busy = calloc((size_t)nd, sizeof *busy);   /* Σ busy / makespan */
    int *known = calloc((size_t)nd, sizeof *known);
    PB_CHECK(busy && known);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int k = sqlite3_column_int(q, 0);
        if (k < 0 || k >= p->map.stages || sqlite3_column_type(q, 1) == SQLITE_NULL)
            continue;
        busy[p->map.device[k]] += 1 - sqlite3_column_double(q, 1);
        known[p->map.device[k]]++;
    }
    sqlite3_finalize(q);
    if (rc == SQLITE_DONE) {
        fputs("\n\n# the devices' labels: their bubble (idle / makespan) over the whole "
              "epoch\n", f);
        for (int d = 0; d < nd; d++) {
            char name[288];
            if (p->map.chunks > 1) {
                char held[256];
                pb_run_devices_stages(&p->map, d, held, sizeof held);
                snprintf(name, sizeof name, "device %d: %s", d, held);
            } else {
                snprintf(name, sizeof name, "stage %d", d);
            }
            char label[320];
            if (known[d] == p->map.chunks)
                snprintf(label, sizeof label, "%s (epoch bubble %.0f%%)", name,
                         100 * (1 - busy[d]));
            else
                snprintf(label, sizeof label, "%s", name);
            fprintf(f, "%d \"%s\"\n", d, label);
            int len = (int)strlen(label);
            p->label_chars = len > p->label_chars ? len : p->label_chars;
        }
    }
    free(busy);
    free(known);
    return rc == SQLITE_DONE ? 0 : pb_plot_db_fail(j, "reading the stage stats", e);
}

/* Block 2i: the ops in the window (device, start ms, end ms from t0, kind 0 F / 1 B / 2 U
 * / 3 I / 4 W, micro-batch or -1, clipped, local chunk or -1 where each stage is its own
 * device, stage), by device and start; block 2i + 1: each device's label (write_labels).
 * Sets p->most, the most ops on one row. */
static int write_panel(struct pb_plot_job *j, struct panel *p, int i, double scale, FILE *f,
                       struct pb_err *e)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT device, ?5 * (max(start_s, ?3) "
                           "- ?3), ?5 * (min(end_s, ?4) - ?3), instr('FBUIW', kind) - 1, "
                           "coalesce(mb, -1), start_s < ?3 OR end_s > ?4 FROM events WHERE "
                           "run_id = ?1 AND epoch = ?2 AND end_s > ?3 AND start_s < ?4", -1, &q,
                           NULL) != SQLITE_OK)
        return pb_plot_db_fail(j, "reading the events", e);
    sqlite3_bind_int64(q, 1, p->run);
    sqlite3_bind_int(q, 2, p->epoch);
    sqlite3_bind_double(q, 3, p->t0);
    sqlite3_bind_double(q, 4, p->t1);
    sqlite3_bind_double(q, 5, scale);
    struct row *r = NULL;
    int n = 0, cap = 0, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int k = sqlite3_column_int(q, 0);
        if (k < 0 || k >= p->map.stages)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            r = realloc(r, (size_t)cap * sizeof *r);
            PB_CHECK(r != NULL);
        }
        r[n++] = (struct row){p->map.device[k], sqlite3_column_int(q, 3),
                              sqlite3_column_int(q, 4), sqlite3_column_int(q, 5), k,
                              sqlite3_column_double(q, 1), sqlite3_column_double(q, 2)};
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        free(r);
        return pb_plot_db_fail(j, "reading the events", e);
    }
    if (n)
        qsort(r, (size_t)n, sizeof *r, row_order);
    fprintf(f, "%s# panel %d: run %lld, epoch %d, micro-batches %d to %d: device, start, end "
            "(%s since the window began), kind, micro-batch, clipped, chunk (-1: each stage "
            "its own device), stage\n", i ? "\n\n" : "", i + 1, (long long)p->run,
            p->epoch + 1, p->lo, p->hi - 1, scale == 1 ? "cost units" : "ms");
    p->most = 0;
    for (int a = 0, run = 0; a < n; a++) {
        fprintf(f, "%d %.6f %.6f %d %d %d %d %d\n", r[a].device, r[a].t0, r[a].t1, r[a].kind,
                r[a].mb, r[a].clipped, p->map.chunks > 1 ? p->map.chunk[r[a].stage] : -1,
                r[a].stage);
        run = a > 0 && r[a - 1].device == r[a].device ? run + 1 : 1;
        p->most = run > p->most ? run : p->most;
    }
    free(r);
    return write_labels(j, p, f, e);
}

/* The runs drawn: the selected ones with events (at most PB_PLOT_MAX_PANELS, by id), or
 * the chosen run. */
static int list_runs(struct pb_plot_job *j, struct panel *p, int *n, struct pb_err *e)
{
    *n = 0;
    if (!j->selecting) {
        p[(*n)++].run = j->run;
        return 0;
    }
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT run_id FROM report_selection "
                           "WHERE run_id IN (SELECT run_id FROM events) ORDER BY run_id", -1, &q,
                           NULL) != SQLITE_OK)
        return pb_plot_db_fail(j, "listing the runs", e);
    int total = 0;
    while (sqlite3_step(q) == SQLITE_ROW)
        if (total++ < PB_PLOT_MAX_PANELS)
            p[(*n)++].run = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    if (total > PB_PLOT_MAX_PANELS)
        fprintf(stderr, "pipebench: plot: the timeline draws the first %d of the %d selected "
                "runs with events; choose them with --runs\n", PB_PLOT_MAX_PANELS, total);
    if (*n == 0) {
        pb_err_set(e, "none of the selected runs recorded op events; record them with run's "
                   "--trace-epochs or `pipebench simulate --record`");
        return PB_PLOT_NO_DATA;
    }
    return 0;
}

int pb_plot_data_timeline(struct pb_plot_job *j, struct pb_err *e)
{
    struct panel p[PB_PLOT_MAX_PANELS];
    memset(p, 0, sizeof p);
    int n, rc = list_runs(j, p, &n, e);
    for (int i = 0; i < n && rc == 0; i++)
        if ((rc = find_epoch(j, &p[i], e)) == 0 && (rc = find_window(j, &p[i], e)) == 0)
            panel_title(j, &p[i]);
    if (rc) {
        for (int i = 0; i < n; i++)
            pb_run_devices_finish(&p[i].map);
        return rc;
    }
    struct pb_afile a;
    if (pb_plot_open_dat(j, &a, e)) {
        for (int i = 0; i < n; i++)
            pb_run_devices_finish(&p[i].map);
        return -1;
    }
    fprintf(a.f, "# timeline: %d panel(s), each two blocks: the ops of a window, the devices' "
            "labels\n", n);
    double xmax = 0;
    int most = 0, units = 1, label_chars = 0;
    for (int i = 0; i < n; i++)
        units &= p[i].given_costs;
    double scale = units ? 1 : 1000;
    char devices[128] = "";
    for (int i = 0; i < n && rc == 0; i++) {
        rc = write_panel(j, &p[i], i, scale, a.f, e);
        xmax = scale * (p[i].t1 - p[i].t0) > xmax ? scale * (p[i].t1 - p[i].t0) : xmax;
        most = p[i].most > most ? p[i].most : most;
        label_chars = p[i].label_chars > label_chars ? p[i].label_chars : label_chars;
        snprintf(devices + strlen(devices), sizeof devices - strlen(devices), "%s%d",
                 i ? " " : "", p[i].devices);
        char name[16];
        snprintf(name, sizeof name, "paneltitle%d", i + 1);
        pb_plot_var_str(j, name, p[i].title);
    }
    for (int i = 0; i < n; i++)
        pb_run_devices_finish(&p[i].map);
    if (rc) {
        pb_afile_abort(&a);
        return rc;
    }
    if (pb_afile_commit(&a, e))
        return -1;
    char title[64], colors[96];
    snprintf(title, sizeof title, "Op timeline%s", n > 1 ? "s, one panel per run" : "");
    pb_plot_var_str(j, "plottitle", title);
    pb_plot_var(j, "npanels", "%d", n);
    pb_plot_var_str(j, "paneldevices", devices);
    pb_plot_var(j, "xmax", "%.6f", xmax);
    pb_plot_var(j, "costunits", "%d", units);
    pb_plot_var(j, "showlabels", "%d", most <= MAX_LABELED_OPS);
    pb_plot_var(j, "labelchars", "%d", label_chars);
    snprintf(colors, sizeof colors, "%s %s %s %s %s", pb_plot_op_colors[0], pb_plot_op_colors[1],
             pb_plot_op_colors[2], pb_plot_op_colors[3], pb_plot_op_colors[4]);
    pb_plot_var_str(j, "kindcolors", colors);
    return 0;
}
