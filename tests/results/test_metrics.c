/* tests/results/test_metrics.c — semantics §6 metrics defined once (results/views.sql): on known rows,
 * compare's table, `pipebench report` and plot's data print the same throughput, bubble,
 * staleness and time to target, equal to hand-worked values (epochs of unequal length). */
#include <check.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/driver/compare.h"
#include "plots/plot.h"
#include "plots/report_db.h"
#include "tests/support/report_fixture.h"

/* One epoch of a fixture run; per stage k: bubble fraction, staleness, predictions. */
struct mx_epoch {
    int64_t samples;
    double wall_s, val_acc;
    double bubble[2], f_mean[2], f_max[2], b_mean[2], b_max[2], pred_err[2], pred_max[2];
    int64_t pred_count[2];
};

struct mx_run {
    const char *schedule;
    int nepochs;
    struct mx_epoch ep[4];
};

/* Both sgdm, mlp, fashion-mnist, D = 2, status done, so `report` puts them in one row. */
static const struct mx_run mx_runs[2] = {
    {"pipedream", 4, {
        {6000, 10, 0.40, {0.1, 0.4}, {1.0, 0.0}, {1, 0}, {0.5, 0.25}, {1, 1},
         {1e-3, 0}, {2e-3, 0}, {10, 0}},
        {6000, 5, 0.70, {0.4, 0.2}, {2.0, 0.5}, {3, 1}, {0.5, 0.50}, {1, 1},
         {3e-3, 0}, {5e-3, 0}, {30, 0}},
        {6000, 15, 0.65, {0.2, 0.6}, {1.5, 1.0}, {2, 2}, {0.5, 0.75}, {1, 2},
         {0, 0}, {0, 0}, {0, 0}},
        {6000, 6, 0.65, {0.5, 0.5}, {1.0, 1.0}, {1, 1}, {0.5, 0.50}, {1, 1},
         {0, 0}, {0, 0}, {0, 0}},
    }},
    {"gpipe", 2, {
        {6000, 12, 0.50, {0.25, 0.5}, {0}, {0}, {0}, {0}, {0}, {0}, {0}},
        {6000, 18, 0.62, {0.50, 0.5}, {0}, {0}, {0}, {0}, {0}, {0}, {0}},
    }},
};
enum { MX_PIPEDREAM = 1, MX_GPIPE = 2 };
#define MX_TARGET 0.60

/* The values by hand, from the rows above.
 * Timings are taken over the steady epochs: all but the first (the warm-up).
 * Throughput: the median of the steady epochs' samples / wall seconds, with their range.
 *   pipedream: epochs 2 to 4 run 1200, 400 and 1000 samples/s: median 1000, range
 *   400–1200 (the mean of all four epochs' would be 800, the steady samples over their
 *   seconds 18000 / 26 = 692.3); gpipe: its second epoch only, 6000 / 18 = 333.3.
 * Bubble: per device, over the steady epochs, Σ bubble · wall / Σ wall; then the mean
 *   over the devices. pipedream stage 0: (2 + 3 + 3) / 26 = 8/26, stage 1: (1 + 9 + 3)
 *   / 26 = 0.5, mean 21/52 (the mean of the eight rows would be 0.3625); gpipe: 0.5 and
 *   0.5, mean 0.5.
 * Staleness: mean of the (stage, epoch) means over every epoch, max of the maxima.
 *   pipedream F: (1 + 2 + 1.5 + 1 + 0 + 0.5 + 1 + 1) / 8 = 1, max 3; B: (5 × 0.5 + 0.25
 *   + 0.75 + 0.5) / 8 = 0.5, max 2; prediction error weighted by the predictions:
 *   (1e-3 · 10 + 3e-3 · 30) / 40 = 2.5e-3, max 5e-3. gpipe: all 0, none predicted.
 * Target 60%: pipedream's first epoch at or above it is epoch 2 (70%) after 10 + 5 =
 *   15 s; gpipe's is epoch 2 (62%) after 12 + 18 = 30 s. */
struct mx_hand {
    int64_t run;
    const char *schedule;
    double throughput, throughput_lo, throughput_hi, bubble, f_lag, f_max, b_lag, b_max, pred_err, pred_max;
    int epochs_to;
    double secs_to, best_acc, final_acc;
};
static const struct mx_hand hand[2] = {
    {MX_PIPEDREAM, "pipedream", 1000, 400, 1200, 21.0 / 52, 1, 3, 0.5, 2, 2.5e-3, 5e-3, 2, 15,
     0.70, 0.65},
    {MX_GPIPE, "gpipe", 6000.0 / 18, 6000.0 / 18, 6000.0 / 18, 0.5, 0, 0, 0, 0, NAN, NAN, 2, 30,
     0.62, 0.62},
};

/* Values the database computed, against the hand values: sums of a handful of
 * terms, so a few ulps apart at most; 1e-9 relative is far above that. */
#define EXACT_RTOL 1e-9

static const char *dir, *db;

static const char *build_db(const char *where)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/metrics.db", where);
    struct pb_results *r;
    struct pb_err e;
    ck_assert_msg(pb_results_open(&r, path, &e) == 0, "%s", e.msg);
    for (int i = 0; i < 2; i++) {
        const struct mx_run *m = &mx_runs[i];
        struct pb_run_info info = {
            .model = "mlp", .dataset = "fashion-mnist", .schedule = m->schedule,
            .optimizer = "sgdm", .executor = "threads", .stages = 2, .microbatch_size = 64,
            .microbatches = 2, .epochs = m->nepochs, .seed = 1, .lr = 0.01,
        };
        int64_t id = pb_results_run_begin(r, &info, &e);
        ck_assert_msg(id == i + 1, "run %d: %s", i + 1, id < 0 ? e.msg : "unexpected id");
        for (int ep = 0; ep < m->nepochs; ep++) {
            const struct mx_epoch *x = &m->ep[ep];
            struct pb_stage_record st[2];
            for (int k = 0; k < 2; k++)
                st[k] = (struct pb_stage_record){
                    .busy_s = x->wall_s * (1 - x->bubble[k]),
                    .wait_s = x->wall_s * x->bubble[k],
                    .bubble_frac = x->bubble[k],
                    .versions_kept = 1,
                    .f_mean = x->f_mean[k], .f_max = x->f_max[k],
                    .b_mean = x->b_mean[k], .b_max = x->b_max[k],
                    .pred_err_mean = x->pred_err[k], .pred_err_max = x->pred_max[k],
                    .pred_count = x->pred_count[k],
                };
            struct pb_epoch_record rec = {
                .epoch = ep, .train_loss = 1, .val_loss = 1, .val_acc = x->val_acc,
                .samples = x->samples, .wall_s = x->wall_s,
                .throughput = (double)x->samples / x->wall_s, .lr = 0.01, .nstages = 2,
                .stages = st,
            };
            ck_assert_msg(pb_results_epoch(r, id, &rec, &e) == 0, "%s", e.msg);
        }
        ck_assert_msg(pb_results_run_end(r, id, PB_RUN_DONE, NULL, &e) == 0, "%s", e.msg);
    }
    pb_results_close(r);
    return path;
}

static void setup(void)
{
    dir = fx_mkdtemp("metrics");
    db = build_db(dir);
}

static void teardown(void)
{
    fx_rmdir(dir);
}

static void assert_near(const char *what, double got, double want, double tol)
{
    ck_assert_msg(fabs(got - want) <= tol, "%s: got %.9g, expected %.9g (tolerance %g)", what,
                  got, want, tol);
}

static void assert_exact(const char *what, double got, double want)
{
    assert_near(what, got, want, EXACT_RTOL * fmax(1, fabs(want)));
}

/* Column c of sql's first row on a reporting connection with target MX_TARGET. */
static double view_value(const char *sql, int64_t run, int c)
{
    struct pb_results *r;
    struct pb_err e;
    ck_assert_msg(pb_report_open(&r, db, &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_report_set_target(r, MX_TARGET, &e) == 0, "%s", e.msg);
    sqlite3_stmt *s;
    ck_assert_msg(sqlite3_prepare_v2(pb_results_sqlite(r), sql, -1, &s, NULL) == SQLITE_OK,
                  "%s: %s", sql, sqlite3_errmsg(pb_results_sqlite(r)));
    sqlite3_bind_int64(s, 1, run);
    ck_assert_msg(sqlite3_step(s) == SQLITE_ROW, "%s: no row for run %lld", sql, (long long)run);
    double v = sqlite3_column_type(s, c) == SQLITE_NULL ? NAN : sqlite3_column_double(s, c);
    sqlite3_finalize(s);
    pb_results_close(r);
    return v;
}

START_TEST(views_equal_hand_values)
{
    static const char sql[] =
        "SELECT throughput, throughput_lo, throughput_hi, bubble_frac, f_mean, f_max, b_mean, "
        "b_max, pred_err_mean, pred_err_max, epochs_to_target, seconds_to_target, best_acc, "
        "final_acc FROM run_summary WHERE run_id = ?1";
    for (int i = 0; i < 2; i++) {
        const struct mx_hand *h = &hand[i];
        double want[] = {h->throughput, h->throughput_lo, h->throughput_hi, h->bubble, h->f_lag, h->f_max, h->b_lag, h->b_max,
                         h->pred_err, h->pred_max, h->epochs_to, h->secs_to, h->best_acc,
                         h->final_acc};
        for (int c = 0; c < (int)(sizeof want / sizeof *want); c++) {
            char what[64];
            snprintf(what, sizeof what, "%s column %d", h->schedule, c);
            double got = view_value(sql, h->run, c);
            if (isnan(want[c]))
                ck_assert_msg(isnan(got), "%s: got %g, expected NULL", what, got);
            else
                assert_exact(what, got, want[c]);
        }
    }
    /* the fixture tells the definitions from the plain means of the rows */
    double mean_thr = view_value("SELECT avg(throughput) FROM epochs WHERE run_id = ?1",
                                 MX_PIPEDREAM, 0);
    double mean_bub = view_value("SELECT avg(bubble_frac) FROM stage_stats WHERE run_id = ?1",
                                 MX_PIPEDREAM, 0);
    double steady_thr = view_value("SELECT sum(samples) / sum(wall_s) FROM epochs WHERE "
                                   "run_id = ?1 AND epoch > 0", MX_PIPEDREAM, 0);
    ck_assert_msg(fabs(mean_thr - 1000) > 100 && fabs(steady_thr - 1000) > 100 &&
                  fabs(mean_bub - 21.0 / 52) > 0.01, "%g %g %g", mean_thr, steady_thr, mean_bub);
    /* the warm-up is left out of the timings of a run of several epochs only */
    assert_exact("epochs timed", view_value("SELECT throughput_epochs FROM run_throughput "
                                            "WHERE run_id = ?1", MX_PIPEDREAM, 0), 3);
    assert_exact("warm-up kept", view_value("SELECT warmup_included FROM run_throughput "
                                            "WHERE run_id = ?1", MX_GPIPE, 0), 0);
    /* per device, per epoch: idle seconds = bubble · makespan (stage 1, epoch 2: 0.6 · 15) */
    assert_exact("idle_s", view_value("SELECT idle_s FROM stage_epoch_time WHERE run_id = ?1 "
                                      "AND epoch = 2 AND stage = 1", MX_PIPEDREAM, 0), 9);
    assert_exact("stage bubble", view_value("SELECT bubble_frac FROM stage_bubble WHERE "
                                            "run_id = ?1 AND stage = 1", MX_PIPEDREAM, 0),
                 0.5);
    assert_exact("worst device", view_value("SELECT bubble_frac_max FROM run_bubble WHERE "
                                            "run_id = ?1", MX_GPIPE, 0), 0.5);
}
END_TEST

/* The table pb_compare_print writes for the two runs (what `pipebench compare` prints
 * after its runs), and the tokens of a schedule's row in its first table. */
static char *compare_table(void)
{
    struct pb_compare_row rows[2];
    memset(rows, 0, sizeof rows);
    struct pb_err e;
    for (int i = 0; i < 2; i++) {
        snprintf(rows[i].schedule, sizeof rows[i].schedule, "%s", hand[i].schedule);
        snprintf(rows[i].optimizer, sizeof rows[i].optimizer, "sgdm");
        ck_assert_msg(pb_compare_fetch(db, hand[i].run, MX_TARGET, &rows[i], &e) == 0, "%s",
                      e.msg);
    }
    static char *buf;   /* static: open_memstream keeps its address until fclose */
    static size_t len;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    pb_compare_print(f, rows, 2, MX_TARGET);
    fclose(f);
    return buf;
}

enum {
    T_SCHEDULE, T_OPTIMIZER, T_RUN, T_STATUS, T_SAMPLES_PER_UPDATE, T_UPDATES_PER_EPOCH, T_BEST,
    T_FINAL, T_EPOCHS_TO, T_SECS_TO, T_THROUGHPUT, T_RANGE, T_BUBBLE, T_F_LAG, T_B_LAG,
    T_PRED_ERR, T_N
};

static void compare_tokens(const char *table, const char *schedule, char tok[T_N][32])
{
    char start[64];
    snprintf(start, sizeof start, "\n  %s ", schedule);
    const char *row = strstr(table, start);
    ck_assert_msg(row != NULL, "no row for %s in:\n%s", schedule, table);
    size_t at = (size_t)(row - table) + 1;
    int n = 0, used;
    for (; n < T_N && sscanf(table + at, " %31s%n", tok[n], &used) == 1; n++)
        at += (size_t)used;
    ck_assert_msg(n == T_N, "row of %s has %d cells:\n%s", schedule, n, table);
}

/* The field of CSV text (quotes honoured) at line row, column col; NULL when absent. */
static const char *csv_cell(const char *text, int row, int col)
{
    static char cell[256];
    const char *p = text;
    for (int r = 0; r < row && p; r++)
        p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL;
    if (!p || !*p)
        return NULL;
    for (int c = 0;; c++) {
        size_t n = 0;
        bool quoted = *p == '"';
        p += quoted;
        while (*p && (quoted ? *p != '"' : *p != ',' && *p != '\n')) {
            if (n + 1 < sizeof cell)
                cell[n++] = *p;
            p++;
        }
        cell[n] = 0;
        p += quoted && *p == '"';
        if (c == col)
            return cell;
        if (*p != ',')
            return NULL;
        p++;
    }
}

/* The CSV cell of the row whose column key_col is key, in the column headed head. */
static const char *csv_lookup(const char *text, int key_col, const char *key, const char *head)
{
    int col = -1;
    for (int c = 0; csv_cell(text, 0, c); c++)
        if (!strcmp(csv_cell(text, 0, c), head))
            col = c;
    ck_assert_msg(col >= 0, "no column %s in:\n%s", head, text);
    for (int r = 1; csv_cell(text, r, 0); r++)
        if (!strcmp(csv_cell(text, r, key_col), key))
            return csv_cell(text, r, col);
    ck_abort_msg("no row %s in:\n%s", key, text);
    return NULL;
}

static char *report_csv(const char *table, const char *more)
{
    static char out[8192];
    char args[1024], err[1024];
    snprintf(args, sizeof args, "report --db '%s' --table %s --format csv %s", db, table, more);
    int rc = fx_cli(NULL, args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "%s: exit %d: %s", args, rc, err);
    return out;
}

/* compare printed c (decimals dc), report printed r (decimals dr), of hand value h:
 * each within half a unit of its last printed digit of h (rounding) plus EXACT_RTOL,
 * so within the sum of both of each other. */
static void same_number(const char *what, double c, int dc, double r, int dr, double h)
{
    double hc = 0.5 * pow(10, -dc), hr = 0.5 * pow(10, -dr), slack = EXACT_RTOL * fmax(1, h);
    assert_near(what, c, h, hc + slack);
    assert_near(what, r, h, hr + slack);
    assert_near(what, c, r, hc + hr + slack);
}

START_TEST(compare_and_report_agree)
{
    char *table = compare_table();
    char *thr = pb_xstrdup(report_csv("throughput", ""));
    char *bub = pb_xstrdup(report_csv("bubble", ""));
    char *stale = pb_xstrdup(report_csv("staleness", ""));
    char *acc = pb_xstrdup(report_csv("accuracy", "--target 0.6"));
    for (int i = 0; i < 2; i++) {
        const struct mx_hand *h = &hand[i];
        char tok[T_N][32], what[96];
        compare_tokens(table, h->schedule, tok);
        ck_assert_str_eq(tok[T_STATUS], "done");
        /* throughput: compare %.0f, report %.1f */
        snprintf(what, sizeof what, "%s throughput", h->schedule);
        /* the range it is the median of: compare's %.0f–%.0f, '-' where it has none */
        char range[64] = "-";
        if (h->throughput_hi > h->throughput_lo)
            snprintf(range, sizeof range, "%.0f\xe2\x80\x93%.0f", h->throughput_lo,
                     h->throughput_hi);
        ck_assert_str_eq(tok[T_RANGE], range);
        same_number(what, atof(tok[T_THROUGHPUT]), 0, atof(csv_lookup(thr, 4, h->schedule, "mean")),
                    6, h->throughput);
        /* bubble: both in % (semantics §6.5), compare %.1f%%, report in full */
        snprintf(what, sizeof what, "%s bubble", h->schedule);
        same_number(what, atof(tok[T_BUBBLE]) / 100, 3,
                    atof(csv_lookup(bub, 4, h->schedule, "mean")) / 100, 6, h->bubble);
        /* staleness: both %.2f */
        snprintf(what, sizeof what, "%s F lag", h->schedule);
        same_number(what, atof(tok[T_F_LAG]), 2, atof(csv_lookup(stale, 4, h->schedule, "F lag")),
                    2, h->f_lag);
        snprintf(what, sizeof what, "%s B lag", h->schedule);
        same_number(what, atof(tok[T_B_LAG]), 2, atof(csv_lookup(stale, 4, h->schedule, "B lag")),
                    2, h->b_lag);
        assert_exact("F max", atof(csv_lookup(stale, 4, h->schedule, "F max")), h->f_max);
        assert_exact("B max", atof(csv_lookup(stale, 4, h->schedule, "B max")), h->b_max);
        const char *pe = csv_lookup(stale, 4, h->schedule, "pred err");
        if (isnan(h->pred_err)) {
            ck_assert_str_eq(tok[T_PRED_ERR], "-");
            ck_assert_str_eq(pe, "\xe2\x80\x93");
        } else {
            /* %.2e: half a unit of the third significant digit */
            double tol = 0.5e-2 * h->pred_err;
            snprintf(what, sizeof what, "%s pred err", h->schedule);
            assert_near(what, atof(tok[T_PRED_ERR]), h->pred_err, tol);
            assert_near(what, atof(pe), h->pred_err, tol);
            ck_assert_str_eq(tok[T_PRED_ERR], pe);
        }
        /* time to target: compare's columns and report's; both S %.1f */
        int ep = atoi(csv_lookup(acc, 4, h->schedule, "epochs_to_target"));
        double secs = atof(csv_lookup(acc, 4, h->schedule, "seconds_to_target"));
        ck_assert_int_eq(atoi(tok[T_EPOCHS_TO]), h->epochs_to);
        ck_assert_int_eq(ep, h->epochs_to);
        snprintf(what, sizeof what, "%s seconds to target", h->schedule);
        same_number(what, atof(tok[T_SECS_TO]), 1, secs, 1, h->secs_to);
        /* maximum accuracy: both %.2f of a percentage */
        snprintf(what, sizeof what, "%s best accuracy", h->schedule);
        same_number(what, atof(tok[T_BEST]) / 100, 4,
                    atof(csv_lookup(acc, 4, h->schedule, "mean")) / 100, 8, h->best_acc);
    }
    /* threads runs with a core per stage: not shared timings; one seed a cell, below
     * PB_STATS_MIN_N: none is ranked */
    ck_assert_str_eq(csv_lookup(thr, 4, "pipedream", "shared_timing"), "0");
    ck_assert_str_eq(csv_lookup(thr, 4, "pipedream", "best"), "0");
    ck_assert_str_eq(csv_lookup(bub, 4, "pipedream", "best"), "0");
    free(table);
    free(thr);
    free(bub);
    free(stale);
    free(acc);
}
END_TEST

/* The library's compare rows hold the view's values unrounded. */
START_TEST(compare_rows_exact)
{
    struct pb_err e;
    for (int i = 0; i < 2; i++) {
        const struct mx_hand *h = &hand[i];
        struct pb_compare_row r;
        memset(&r, 0, sizeof r);
        ck_assert_msg(pb_compare_fetch(db, h->run, MX_TARGET, &r, &e) == 0, "%s", e.msg);
        ck_assert_str_eq(r.status, "done");
        ck_assert_int_eq(r.epochs, mx_runs[i].nepochs);
        assert_exact("throughput", r.throughput, h->throughput);
        assert_exact("bubble", r.bubble, h->bubble);
        assert_exact("F lag", r.f_lag, h->f_lag);
        assert_exact("B lag", r.b_lag, h->b_lag);
        assert_exact("seconds to target", r.seconds_to_target, h->secs_to);
        ck_assert_int_eq(r.epochs_to_target, h->epochs_to);
        assert_exact("best acc", r.best_acc, h->best_acc);
        assert_exact("final acc", r.final_acc, h->final_acc);
        if (isnan(h->pred_err))
            ck_assert_int_eq(r.pred_count, 0);
        else
            assert_exact("pred err", r.pred_err, h->pred_err);
    }
    /* 71%: pipedream never reaches it */
    struct pb_compare_row r;
    memset(&r, 0, sizeof r);
    ck_assert_msg(pb_compare_fetch(db, MX_PIPEDREAM, 0.71, &r, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(r.epochs_to_target, 0);
}
END_TEST

/* `pipebench plot`'s throughput and staleness data: per schedule the same values (the
 * mean over a cell's one run, its std 0), printed %.6g. */
START_TEST(plot_data_agrees)
{
    char out[600];
    snprintf(out, sizeof out, "%s/figs", dir);
    struct pb_err e;
    ck_assert_msg(pb_plot_figure(db, "throughput", out, "png", MX_PIPEDREAM, &e) == 0, "%s",
                  e.msg);
    ck_assert_msg(pb_plot_figure(db, "staleness", out, "png", MX_PIPEDREAM, &e) == 0, "%s",
                  e.msg);
    char path[700];
    snprintf(path, sizeof path, "%s/throughput.dat", out);
    char *t = fx_read(path, NULL);
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(strstr(t, "D \"gpipe\" std \"pipedream\" std\n\"D=2\" 333.333 0 1000 0\n\n\n"),
                  "%s", t);
    /* the bubble in %, as report's table and compare's print it */
    ck_assert_msg(strstr(t, "D \"gpipe\" std \"pipedream\" std\n\"D=2\" 50 0 40.3846 0\n"), "%s",
                  t);
    free(t);
    /* per stage: pipedream F 1.375 and 0.625, B 0.5 and 0.5, prediction error 2.5e-3 on
     * stage 0 (by hand as above, one stage at a time) */
    snprintf(path, sizeof path, "%s/staleness.dat", out);
    t = fx_read(path, NULL);
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(strstr(t, "stage \"gpipe (n = 1)\" \"pipedream (n = 1)\"\n\"stage 0\" 0 "
                            "1.375\n\"stage 1\" 0 0.625\n\n\n"), "%s", t);
    ck_assert_msg(strstr(t, "\"stage 0\" 0 0.5\n\"stage 1\" 0 0.5\n\n\n"), "%s", t);
    ck_assert_msg(strstr(t, "\"stage 0\" ? 0.0025\n\"stage 1\" ? ?\n"), "%s", t);
    free(t);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("metrics");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, views_equal_hand_values);
    tcase_add_test(tc, compare_and_report_agree);
    tcase_add_test(tc, compare_rows_exact);
    tcase_add_test(tc, plot_data_agrees);
    suite_add_tcase(s, tc);
    return s;
}
