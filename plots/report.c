/* plots/report.c — the paper-style tables (report.h, semantics §6) of run_summary's columns:
 * accuracy, throughput, bubble in Table IV's layout (mean ± std over a cell's seeds, each
 * seed's repeats counted once: seed_runs, seed_timing), memory and staleness a row per
 * configuration and schedule. */
#include "plots/report.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "plots/config_diff.h"
#include "plots/report_db.h"
#include "plots/stats.h"

#define MIB (1024.0 * 1024.0)

const char *const pb_report_table_names[PB_REPORT_NTABLES] = {
    "accuracy", "throughput", "bubble", "sim-throughput", "sim-bubble", "memory", "staleness",
    "updates",
};

/* Per-run quantities, in the order of the query's columns after the labels. */
enum metric {
    M_BEST_ACC, M_THROUGHPUT, M_BUBBLE,
    M_PARAMS, M_GRADS, M_OPTSTATE, M_WCOPIES, M_ACTS, M_COMM, M_SCRATCH, M_BNSTATS, M_HOST,
    M_TOTAL,
    M_STAGE_MAX,
    M_F_MEAN, M_F_MAX, M_B_MEAN, M_B_MAX, M_PRED_MEAN, M_PRED_MAX,
    M_EPOCHS_TO, M_SECS_TO,
    M_SIM_THROUGHPUT, M_SIM_BUBBLE, M_SHARED_TIMING, M_DIVERGED,
    M_THROUGHPUT_LO, M_THROUGHPUT_HI, M_WARMUP_INCLUDED, M_THROUGHPUT_REPEATS,
    M_BUBBLE_LO, M_BUBBLE_HI, M_BUBBLE_REPEATS,
    M_MICROBATCH, M_MICROBATCHES, M_SAMPLES_PER_UPDATE, M_UPDATES_PER_EPOCH, M_EPOCHS,
    M_HAS_BLEU, M_LOAD, M_SIM_CONTENDED,
    M_N
};

/* One row per seed group (results/views.sql's seed_runs: a configuration, schedule column
 * and seed, whatever its repeats), its first run's columns but for throughput and bubble:
 * the median over the group's repeats (seed_timing), with their range as the spread
 * where it has more than one timed repeat, else (throughput) its first run's range over
 * its steady epochs. AdamW with a weight decay of 0 is Adam, and its rows say so. */
static const char runs_sql[] =
    "SELECT CASE WHEN optimizer = 'adamw' AND (SELECT json_extract(config, '$.weight_decay') "
    "FROM runs WHERE id = s.run_id) = 0 THEN 'adamw (decay 0: Adam)' ELSE optimizer END, "
    "model, dataset, stages, schedule, variant, column_label, "
    "coalesce(best_bleu, 100 * best_acc), coalesce(g.throughput, s.throughput), "
    "100 * coalesce(g.bubble_frac, s.bubble_frac), params_sum, grads_sum, optstate_sum, "
    "wcopies_sum, acts_sum, comm_sum, scratch_sum, bnstats_sum, host_sum, total_sum, total_max, "
    "f_mean, f_max, b_mean, b_max, pred_err_mean, pred_err_max, epochs_to_target, "
    "seconds_to_target, pb_sim_throughput(s.run_id), 100 * pb_sim_bubble(s.run_id), shared_timing, "
    "s.status = 'diverged', "
    "CASE WHEN g.throughput_repeats > 1 THEN g.throughput_lo ELSE s.throughput_lo END, "
    "CASE WHEN g.throughput_repeats > 1 THEN g.throughput_hi ELSE s.throughput_hi END, "
    "warmup_included, g.throughput_repeats, "
    "CASE WHEN g.bubble_repeats > 1 THEN 100 * g.bubble_lo END, "
    "CASE WHEN g.bubble_repeats > 1 THEN 100 * g.bubble_hi END, g.bubble_repeats, "
    "(SELECT microbatch_size FROM runs WHERE id = s.run_id), "
    "(SELECT CASE WHEN samples_per_update > microbatch_size THEN microbatches ELSE 1 END "
    "FROM runs WHERE id = s.run_id), samples_per_update, updates_per_epoch, epochs_done, "
    "best_bleu IS NOT NULL, (SELECT load_avg FROM runs WHERE id = s.run_id), "
    "pb_sim_contended(s.run_id), config_id "
    "FROM run_summary s JOIN seed_timing g ON g.seed_run = s.run_id "
    "WHERE s.status IN ('done', 'diverged')";
enum { Q_LABELS = 7 };

struct run {
    char *key[4];    /* optimizer, model, dataset, config_id (the configuration's identity) */
    int stages;
    char *label;     /* "schedule" or "schedule (variant)" */
    int rank;        /* pb_report_schedule_rank */
    double m[M_N];   /* NAN where the run recorded nothing */
    char *setting;   /* "key=value, ..." where its configuration differs from another
                        row's of the same optimizer, model, dataset and D; NULL when none */
};

struct runs {
    int n;
    struct run *v;
    bool settings;   /* some row needs its setting shown: a label column more */
};

/* Label columns before the values: optimizer, model, dataset, D and, when configurations
 * that look alike differ, their setting. */
static int nlabels(const struct runs *rs)
{
    return rs->settings ? 5 : 4;
}

static char *text_or_null(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    return t ? pb_xstrdup((const char *)t) : NULL;
}

static int strcmp_null(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

static int same_row(const struct run *a, const struct run *b)
{
    for (int i = 0; i < 4; i++)
        if (strcmp_null(a->key[i], b->key[i]))
            return 0;
    return a->stages == b->stages;
}

static int cmp_column(const struct run *a, const struct run *b)
{
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return strcmp_null(a->label, b->label);
}

static int cmp_run(const void *pa, const void *pb)
{
    const struct run *a = pa, *b = pb;
    for (int i = 0; i < 3; i++) {
        int c = strcmp_null(a->key[i], b->key[i]);
        if (c)
            return c;
    }
    if (a->stages != b->stages)
        return a->stages < b->stages ? -1 : 1;
    int c = strcmp_null(a->key[3], b->key[3]);
    return c ? c : cmp_column(a, b);
}

static void runs_free(struct runs *rs)
{
    for (int i = 0; i < rs->n; i++) {
        for (int k = 0; k < 4; k++)
            free(rs->v[i].key[k]);
        free(rs->v[i].label);
        free(rs->v[i].setting);
    }
    free(rs->v);
}

static bool same_visible_row(const struct run *a, const struct run *b)
{
    for (int i = 0; i < 3; i++)
        if (strcmp_null(a->key[i], b->key[i]))
            return false;
    return a->stages == b->stages;
}

/* Where runs that look alike (same optimizer, model, dataset and D) hold different
 * configurations, each gets its own row, labelled with the settings it differs in. The
 * runs are sorted, so such a group and each configuration in it are contiguous. */
static void label_settings(struct runs *rs)
{
    for (int a = 0, b; a < rs->n; a = b) {
        b = a + 1;
        while (b < rs->n && same_visible_row(&rs->v[a], &rs->v[b]))
            b++;
        const char **configs = pb_xcalloc((size_t)(b - a), sizeof *configs);
        int n = 0;
        for (int i = a; i < b; i++)
            if (n == 0 || strcmp_null(configs[n - 1], rs->v[i].key[3]))
                configs[n++] = rs->v[i].key[3] ? rs->v[i].key[3] : "";
        for (int j = 0, i = a; n > 1 && j < n; j++) {
            char diff[512];
            if (!pb_config_diff(configs, n, j, diff, sizeof diff))
                snprintf(diff, sizeof diff, "configuration %d", j + 1);
            for (; i < b && !strcmp_null(rs->v[i].key[3] ? rs->v[i].key[3] : "", configs[j]);
                 i++)
                rs->v[i].setting = pb_xstrdup(diff);
        }
        rs->settings |= n > 1;
        free(configs);
    }
}

/* The finished runs, sorted by configuration and then column order. */
static int load_runs(struct pb_results *db, double target, struct runs *rs, struct pb_err *e)
{
    sqlite3 *d = pb_results_sqlite(db);
    sqlite3_stmt *s;
    memset(rs, 0, sizeof *rs);
    if (pb_report_set_target(db, target, e))
        return -1;
    if (sqlite3_prepare_v2(d, runs_sql, -1, &s, NULL) != SQLITE_OK)
        return pb_err_set(e, "results database %s: reading the runs: %s", pb_results_path(db),
                          sqlite3_errmsg(d));
    int rc, cap = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (rs->n == cap) {
            cap = cap ? 2 * cap : 16;
            rs->v = realloc(rs->v, (size_t)cap * sizeof *rs->v);
            PB_CHECK(rs->v != NULL);
        }
        struct run *r = &rs->v[rs->n++];
        for (int k = 0; k < 3; k++)
            r->key[k] = text_or_null(s, k);
        r->stages = sqlite3_column_int(s, 3);
        r->rank = pb_report_schedule_rank((const char *)sqlite3_column_text(s, 4),
                                          (const char *)sqlite3_column_text(s, 5));
        r->label = text_or_null(s, 6);
        for (int m = 0; m < M_N; m++)
            r->m[m] = sqlite3_column_type(s, Q_LABELS + m) == SQLITE_NULL
                          ? NAN : sqlite3_column_double(s, Q_LABELS + m);
        r->key[3] = text_or_null(s, Q_LABELS + M_N);
        r->setting = NULL;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        runs_free(rs);
        return pb_err_set(e, "results database %s: reading the runs: %s", pb_results_path(db),
                          sqlite3_errmsg(d));
    }
    qsort(rs->v, (size_t)rs->n, sizeof *rs->v, cmp_run);
    label_settings(rs);
    return 0;
}

/* Metric m over the runs [a, b) in column col (NULL: every run): mean and sample
 * standard deviation over the runs that finished (diverged runs are counted, never
 * averaged: a diverged run's numbers are those of a failure). runs: the runs of the
 * cell; diverged: of them, how many diverged; n: the finished ones that recorded m. */
struct summary {
    int n, total, runs, diverged;
    double mean, sd;
    /* throughput and bubble: the range over the cell's seeds of each seed's spread (of
     * its repeats where it has more than one timed repeat, else of its steady epochs:
     * throughput only), NAN when none has one; the fewest and most timed repeats of a
     * seed (1: none repeated) */
    double lo, hi;
    int rep_min, rep_max;
    bool warmup;           /* throughput: a run of one epoch, its warm-up timed */
};

/* The columns of a metric's spread (throughput and bubble; -1: none). */
static int lo_of(int m)
{
    return m == M_THROUGHPUT ? M_THROUGHPUT_LO : m == M_BUBBLE ? M_BUBBLE_LO : -1;
}

static int repeats_of(int m)
{
    return m == M_THROUGHPUT ? M_THROUGHPUT_REPEATS : M_BUBBLE_REPEATS;
}

static bool in_cell(const struct run *r, const struct run *col)
{
    return !col || !cmp_column(r, col);
}

static struct summary cell_stat(const struct runs *rs, int a, int b, const struct run *col, int m)
{
    struct summary st = {.lo = NAN, .hi = NAN};
    double sum = 0;
    int lo = lo_of(m);
    for (int i = a; i < b; i++) {
        const struct run *r = &rs->v[i];
        if (!in_cell(r, col))
            continue;
        st.runs++;
        if (r->m[M_DIVERGED] == 1) {
            st.diverged++;
            continue;
        }
        st.total++;
        if (!isnan(r->m[m])) {
            if (lo >= 0) {
                double l = r->m[lo], h = r->m[lo + 1];
                int reps = isnan(r->m[repeats_of(m)]) ? 1 : (int)r->m[repeats_of(m)];
                if (!isnan(l) && !(st.lo <= l))
                    st.lo = l;
                if (!isnan(h) && !(st.hi >= h))
                    st.hi = h;
                st.rep_min = st.n && st.rep_min < reps ? st.rep_min : reps;
                st.rep_max = st.n && st.rep_max > reps ? st.rep_max : reps;
            }
            if (m == M_THROUGHPUT)
                st.warmup |= r->m[M_WARMUP_INCLUDED] == 1;
            st.n++;
            sum += r->m[m];
        }
    }
    if (st.n == 0)
        return st;
    st.mean = sum / st.n;
    double ss = 0;
    for (int i = a; i < b; i++) {
        const struct run *r = &rs->v[i];
        if (in_cell(r, col) && r->m[M_DIVERGED] != 1 && !isnan(r->m[m]))
            ss += (r->m[m] - st.mean) * (r->m[m] - st.mean);
    }
    st.sd = st.n > 1 ? sqrt(ss / (st.n - 1)) : 0;
    return st;
}

/* End of the block of runs sharing run a's row (and column too when by_column). */
static int block_end(const struct runs *rs, int a, int by_column)
{
    int b = a + 1;
    while (b < rs->n && same_row(&rs->v[a], &rs->v[b]) &&
           (!by_column || !cmp_column(&rs->v[a], &rs->v[b])))
        b++;
    return b;
}

static void set_labels(struct pb_grid *g, int row, const struct runs *rs, const struct run *r)
{
    char d[16];
    for (int k = 0; k < 3; k++)
        pb_grid_set(g, row, k, r->key[k], false);
    snprintf(d, sizeof d, "%d", r->stages);
    pb_grid_set(g, row, 3, d, false);
    if (rs->settings)
        pb_grid_set(g, row, 4, r->setting ? r->setting : "", false);
}

/* The header's label cells (and `more` after them, e.g. "schedule"); returns the next
 * column. */
static int set_head_labels(struct pb_grid *g, int h, const struct runs *rs, const char *more)
{
    static const char *const head[] = {"optimizer", "model", "dataset", "D", "setting"};
    int n = nlabels(rs);
    for (int k = 0; k < n; k++)
        pb_grid_set(g, h, k, head[k], false);
    if (more)
        pb_grid_set(g, h, n++, more, false);
    return n;
}

/* The columns present: one run standing for each distinct schedule column, in order. */
static int columns(const struct runs *rs, const struct run ***out)
{
    const struct run **c = pb_xcalloc((size_t)rs->n + 1, sizeof *c);
    int n = 0;
    for (int i = 0; i < rs->n; i++) {
        int j = 0;
        while (j < n && cmp_column(c[j], &rs->v[i]))
            j++;
        if (j == n)
            c[n++] = &rs->v[i];
    }
    for (int i = 1; i < n; i++)   /* insertion sort: few columns */
        for (int j = i; j > 0 && cmp_column(c[j - 1], c[j]) > 0; j--) {
            const struct run *t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    *out = c;
    return n;
}

/* The target part of an accuracy's note: "E ep, S s", the mean epochs and seconds to
 * the target over the runs that reached it, with "k/n" when some did not. */
static void target_note(char *buf, size_t cap, const struct runs *rs, int a, int b,
                        const struct run *col)
{
    struct summary ep = cell_stat(rs, a, b, col, M_EPOCHS_TO);
    struct summary sec = cell_stat(rs, a, b, col, M_SECS_TO);
    if (ep.n == 0)
        snprintf(buf, cap, "not reached");
    else if (ep.n < ep.total)
        snprintf(buf, cap, "%.3g ep, %.1f s; %d/%d", ep.mean, sec.mean, ep.n, ep.total);
    else
        snprintf(buf, cap, "%.3g ep, %.1f s", ep.mean, sec.mean);
}

/* Whether any run of the cell [a, b) × col measured its timing with stages sharing cores
 * (for the simulated throughput and bubble: its op costs, results/results_sim.h). */
static bool cell_shared(const struct runs *rs, int a, int b, const struct run *col, int m)
{
    int shared = m == M_SIM_THROUGHPUT || m == M_SIM_BUBBLE ? M_SIM_CONTENDED : M_SHARED_TIMING;
    for (int i = a; i < b; i++)
        if (!cmp_column(&rs->v[i], col) && rs->v[i].m[shared] == 1)
            return true;
    return false;
}

/* How a per-schedule table reads metric m: printed with `decimals`, the lowest best when
 * lower_best; target: the accuracy target (0: none); mark_shared: a timing, where cells
 * measured with the stages sharing cores are marked and never ranked; ci: the level of
 * the confidence intervals the cells show (0: mean ± std); metric and unit name it in the
 * CSV ("accuracy", "%"; a translation model's rows "bleu", "BLEU"). */
struct how {
    int m, decimals;
    bool lower_best, mark_shared;
    double target, ci;
    const char *metric, *unit;
};

/* One cell of a per-schedule table. */
struct cell {
    struct summary st;
    bool shared;       /* some run measured with the stages sharing cores */
    char target[96];   /* the target part of the note, "" without a target */
};

/* A timing cell's noise within its seeds: half the range of its seeds' repeats (or, for
 * throughput without repeats, of their steady epochs); 0 where there is none. */
static double half_range(const struct summary *st)
{
    return st->hi > st->lo ? (st->hi - st->lo) / 2 : 0;
}

/* The level of a table's test of the best: its intervals', else PB_STATS_LEVEL. */
static double level_of(const struct how *h)
{
    return h->ci > 0 ? h->ci : PB_STATS_LEVEL;
}

/* The cells of the row [a, b) and its best column (-1: none). The highest mean (the
 * lowest when lower_best), at the printed precision, is the best only when it and the
 * runner-up each average at least PB_STATS_MIN_N seeds, Welch's two-sided t-test
 * separates them at the table's level (level_of), and the gap exceeds the range of
 * their repeats or epochs (a timing's noise within a seed); a cell alone in its row is
 * not ranked; for timings (mark_shared), only cells measured one device per stage are. */
static int row_cells(const struct runs *rs, int a, int b, const struct run **col, int ncol,
                     const struct how *h, struct cell *cells)
{
    double scale = pow(10, h->decimals), sign = h->lower_best ? -1 : 1;
    int best = -1, second = -1;
    for (int c = 0; c < ncol; c++) {
        struct cell *x = &cells[c];
        x->st = cell_stat(rs, a, b, col[c], h->m);
        x->shared = h->mark_shared && cell_shared(rs, a, b, col[c], h->m);
        x->target[0] = 0;
        if (h->target > 0 && x->st.n)
            target_note(x->target, sizeof x->target, rs, a, b, col[c]);
        if (!x->st.n || x->shared)
            continue;
        double v = sign * round(x->st.mean * scale);
        if (best < 0 || v > sign * round(cells[best].st.mean * scale)) {
            second = best;
            best = c;
        } else if (second < 0 || v > sign * round(cells[second].st.mean * scale)) {
            second = c;
        }
    }
    if (best < 0 || second < 0)
        return -1;
    const struct summary *p = &cells[best].st, *q = &cells[second].st;
    if (p->n < PB_STATS_MIN_N || q->n < PB_STATS_MIN_N)
        return -1;
    double pv = pb_stats_welch_p(p->mean, p->sd, p->n, q->mean, q->sd, q->n);
    double spread = half_range(p) > half_range(q) ? half_range(p) : half_range(q);
    if (!(pv < 1 - level_of(h)) || fabs(p->mean - q->mean) <= spread ||
        round(p->mean * scale) == round(q->mean * scale))
        return -1;
    return best;
}

/* What a cell's range of metric m is over: "repeats" where every seed has more than one
 * timed repeat (bubble: where any has; the others have no range), "epochs" where none
 * has (throughput only: the steady epochs of its runs), "epochs/repeats" where some
 * have; "" where there is no range. */
static const char *spread_over(const struct summary *st, int m)
{
    if (isnan(st->lo))
        return "";
    if (m == M_BUBBLE || st->rep_min > 1)
        return "repeats";
    return st->rep_max > 1 ? "epochs/repeats" : "epochs";
}

/* "; epochs A–B", "; 3 repeats A–B" (2–3 repeats where seeds have different counts) or
 * "; epochs/repeats A–B" into buf when the cell's range of metric m is not empty. */
static int range_note(char *buf, size_t cap, const struct summary *st, int m, int decimals)
{
    if (!st->n || !(st->hi > st->lo))
        return 0;
    const char *over = spread_over(st, m);
    char count[32] = "";
    if (st->rep_min > 1 && st->rep_min == st->rep_max)
        snprintf(count, sizeof count, "%d ", st->rep_min);
    else if (st->rep_min > 1)
        snprintf(count, sizeof count, "%d\xe2\x80\x93%d ", st->rep_min, st->rep_max);
    return snprintf(buf, cap, "; %s%s %.*f\xe2\x80\x93%.*f", count, over, decimals, st->lo,
                    decimals, st->hi);
}

/* Row [a, b)'s samples per update where its schedules' differ (not the equal footing of
 * semantics §1.5): "samples/update differ: gpipe 256, pipedream 64" into buf; "" where they
 * agree or were not recorded. */
static void footing_note(const struct runs *rs, int a, int b, const struct run **col, int ncol,
                         char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "samples/update differ:");
    double first = NAN;
    bool differ = false;
    int listed = 0;
    for (int c = 0; c < ncol; c++)
        for (int i = a; i < b; i++) {
            double v = rs->v[i].m[M_SAMPLES_PER_UPDATE];
            if (cmp_column(&rs->v[i], col[c]) || isnan(v) || v <= 0)
                continue;
            differ |= listed && v != first;
            first = listed ? first : v;
            if (len < cap)
                len += (size_t)snprintf(buf + len, cap - len, "%s %s %.0f", listed ? "," : "",
                                        col[c]->label, v);
            listed++;
            break;
        }
    if (!differ)
        buf[0] = 0;
}

/* Table IV layout: a row per configuration, a column per schedule; a cell shows mean ±
 * std (with h->ci, mean ± the half-width of its confidence interval), then "(n =
 * seeds[, k diverged][; range][; target])"; a timing measured with the stages sharing
 * cores carries a dagger. */
static void by_schedule_wide(const struct runs *rs, const struct run **col, int ncol,
                             const struct how *h, struct pb_grid *g)
{
    int m = h->m, decimals = h->decimals;
    int nl = nlabels(rs);
    char footing[512];
    bool mixed = false;   /* some row's schedules differ in samples per update: a note column */
    for (int a = 0, b; a < rs->n && !mixed; a = b) {
        b = block_end(rs, a, 0);
        footing_note(rs, a, b, col, ncol, footing, sizeof footing);
        mixed = footing[0] != 0;
    }
    pb_grid_init(g, nl + ncol + mixed, nl, g->caption);
    int head = pb_grid_add_row(g);
    set_head_labels(g, head, rs, NULL);
    for (int c = 0; c < ncol; c++)
        pb_grid_set(g, head, nl + c, col[c]->label, false);
    if (mixed)
        pb_grid_set(g, head, nl + ncol, "note", false);
    struct cell *cells = pb_xcalloc((size_t)ncol, sizeof *cells);
    for (int a = 0, b; a < rs->n; a = b) {
        b = block_end(rs, a, 0);
        int row = pb_grid_add_row(g);
        set_labels(g, row, rs, &rs->v[a]);
        if (mixed) {
            footing_note(rs, a, b, col, ncol, footing, sizeof footing);
            pb_grid_set(g, row, nl + ncol, footing, false);
        }
        int best = row_cells(rs, a, b, col, ncol, h, cells);
        for (int c = 0; c < ncol; c++) {
            const struct cell *x = &cells[c];
            if (x->st.runs == 0)
                continue;
            char buf[160], note[160];
            double pm = h->ci > 0 ? pb_stats_ci_half(x->st.sd, x->st.n, h->ci) : x->st.sd;
            int len;
            if (x->st.n == 0)
                len = snprintf(buf, sizeof buf, "%s", x->st.diverged ? "diverged" : "\xe2\x80\x93");
            else if (x->st.n > 1)
                len = snprintf(buf, sizeof buf, "%.*f \xc2\xb1 %.*f", decimals, x->st.mean,
                               decimals, pm);
            else
                len = snprintf(buf, sizeof buf, "%.*f", decimals, x->st.mean);
            if (x->shared)
                snprintf(buf + len, sizeof buf - (size_t)len, " \xe2\x80\xa0");
            pb_grid_set(g, row, nl + c, buf, c == best);
            len = snprintf(note, sizeof note, " (n = %d", x->st.runs);
            if (x->st.diverged)
                len += snprintf(note + len, sizeof note - (size_t)len, ", %d diverged",
                                x->st.diverged);
            len += range_note(note + len, sizeof note - (size_t)len, &x->st, m, decimals);
            if (x->st.warmup)
                len += snprintf(note + len, sizeof note - (size_t)len, "; with warm-up");
            snprintf(note + len, sizeof note - (size_t)len, "%s%s)", x->target[0] ? "; " : "",
                     x->target);
            pb_grid_note(g, row, nl + c, note);
        }
    }
    free(cells);
}

static void set_num(struct pb_grid *g, int row, int col, const char *fmt, double v, bool have)
{
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    pb_grid_set(g, row, col, have ? buf : "", false);
}

/* The same cells as numbers only (full precision), one CSV row per configuration and
 * schedule: mean, std, n (finished seeds averaged), runs (seeds), diverged, best (1/0),
 * shared_timing (1/0), with h->ci the interval's bounds (ci_low, ci_high), with a target
 * the mean epochs and seconds to it and how many seeds reached it; for throughput and
 * bubble the spread's range (spread_min, spread_max), what it is over (spread_over:
 * epochs, repeats, or epochs, repeats), the fewest timed repeats of a seed (repeats) and,
 * for throughput, warmup_included; empty where there is no value; then the metric and its
 * unit. */
static void by_schedule_long(const struct runs *rs, const struct run **col, int ncol,
                             const struct how *h, struct pb_grid *g)
{
    int m = h->m;
    double target = h->target;
    static const char *const head[] = {"mean", "std", "n", "runs", "diverged", "best",
                                       "shared_timing"};
    static const char *const ci_head[] = {"ci_low", "ci_high"};
    static const char *const target_head[] = {"epochs_to_target", "seconds_to_target",
                                              "reached"};
    static const char *const range_head[] = {"spread_min", "spread_max", "spread_over",
                                             "repeats", "warmup_included"};
    int nrange = m == M_THROUGHPUT ? 5 : m == M_BUBBLE ? 4 : 0;
    int nci = h->ci > 0 ? 2 : 0, ntarget = target > 0 ? 3 : 0;
    int nl = nlabels(rs) + 1, nv = 7 + nci + ntarget;
    int nu = nl + nv + nrange;   /* the metric's and unit's columns */
    pb_grid_init(g, nu + 2, nl, g->caption);
    int hr = pb_grid_add_row(g);
    pb_grid_set(g, hr, nu, "metric", false);
    pb_grid_set(g, hr, nu + 1, "unit", false);
    set_head_labels(g, hr, rs, "schedule");
    for (int k = 0; k < 7; k++)
        pb_grid_set(g, hr, nl + k, head[k], false);
    for (int k = 0; k < nci; k++)
        pb_grid_set(g, hr, nl + 7 + k, ci_head[k], false);
    for (int k = 0; k < ntarget; k++)
        pb_grid_set(g, hr, nl + 7 + nci + k, target_head[k], false);
    for (int k = 0; k < nrange; k++)
        pb_grid_set(g, hr, nl + nv + k, range_head[k], false);
    struct cell *cells = pb_xcalloc((size_t)ncol, sizeof *cells);
    for (int a = 0, b; a < rs->n; a = b) {
        b = block_end(rs, a, 0);
        int best = row_cells(rs, a, b, col, ncol, h, cells);
        for (int c = 0; c < ncol; c++) {
            const struct cell *x = &cells[c];
            if (x->st.runs == 0)
                continue;
            int row = pb_grid_add_row(g);
            set_labels(g, row, rs, &rs->v[a]);
            pb_grid_set(g, row, nl - 1, col[c]->label, false);
            set_num(g, row, nl, "%.10g", x->st.mean, x->st.n > 0);
            set_num(g, row, nl + 1, "%.10g", x->st.sd, x->st.n > 1);
            set_num(g, row, nl + 2, "%.0f", x->st.n, true);
            set_num(g, row, nl + 3, "%.0f", x->st.runs, true);
            set_num(g, row, nl + 4, "%.0f", x->st.diverged, true);
            set_num(g, row, nl + 5, "%.0f", c == best, true);
            set_num(g, row, nl + 6, "%.0f", x->shared, true);
            if (nci) {
                double half = pb_stats_ci_half(x->st.sd, x->st.n, h->ci);
                set_num(g, row, nl + 7, "%.10g", x->st.mean - half, x->st.n > 1);
                set_num(g, row, nl + 8, "%.10g", x->st.mean + half, x->st.n > 1);
            }
            if (target > 0) {
                struct summary ep = cell_stat(rs, a, b, col[c], M_EPOCHS_TO);
                struct summary sec = cell_stat(rs, a, b, col[c], M_SECS_TO);
                set_num(g, row, nl + 7 + nci, "%.3g", ep.mean, ep.n > 0);
                set_num(g, row, nl + 8 + nci, "%.1f", sec.mean, sec.n > 0);
                set_num(g, row, nl + 9 + nci, "%.0f", ep.n, true);
            }
            if (nrange) {
                bool have = x->st.n > 0 && !isnan(x->st.lo);
                set_num(g, row, nl + nv, "%.10g", x->st.lo, have);
                set_num(g, row, nl + nv + 1, "%.10g", x->st.hi, have);
                pb_grid_set(g, row, nl + nv + 2, x->st.n ? spread_over(&x->st, m) : "", false);
                set_num(g, row, nl + nv + 3, "%.0f", x->st.rep_min, x->st.n > 0);
            }
            if (nrange > 4)
                set_num(g, row, nl + nv + 4, "%.0f", x->st.warmup, x->st.n > 0);
            bool bleu = m == M_BEST_ACC && rs->v[a].m[M_HAS_BLEU] == 1;
            pb_grid_set(g, row, nu, bleu ? "bleu" : h->metric, false);
            pb_grid_set(g, row, nu + 1, bleu ? "BLEU" : h->unit, false);
        }
    }
    free(cells);
}

static void by_schedule(const struct runs *rs, const struct how *h, enum pb_report_format f,
                        struct pb_grid *g)
{
    const struct run **col;
    int ncol = columns(rs, &col);
    if (f == PB_FORMAT_CSV)
        by_schedule_long(rs, col, ncol, h, g);
    else
        by_schedule_wide(rs, col, ncol, h, g);
    free(col);
}

/* The runs' 1-minute load average when they began, appended to a timing table's caption
 * (" Load average at the runs' start: 0.52–4.18."); nothing where none was recorded. */
static void load_note(const struct runs *rs, char *caption, size_t cap)
{
    double lo = NAN, hi = NAN;
    for (int i = 0; i < rs->n; i++) {
        double l = rs->v[i].m[M_LOAD];
        if (!isnan(l) && !(lo <= l))
            lo = l;
        if (!isnan(l) && !(hi >= l))
            hi = l;
    }
    size_t len = strlen(caption);
    if (!isnan(lo) && len < cap)
        snprintf(caption + len, cap - len, lo == hi ? " Load average (1 min) when the runs "
                 "began: %.2f." : " Load average (1 min) when the runs began: %.2f\xe2\x80"
                 "\x93%.2f.", lo, hi);
}

/* The caption's words for what follows a cell's mean: "std", or the half-width of its
 * confidence interval at o->ci. */
static void spread_words(char *buf, size_t cap, const struct pb_report_opts *o)
{
    if (o->ci > 0)
        snprintf(buf, cap, "the half-width of its %g%% confidence interval (Student's t)",
                 100 * o->ci);
    else
        snprintf(buf, cap, "std");
}

/* The caption's words for the best mark: "the highest (extreme) of each row marked where
 * it and the runner-up ... separates them at the 5% level" (row_cells). */
static void best_words(char *buf, size_t cap, const struct pb_report_opts *o, const char *extreme)
{
    double level = o->ci > 0 ? o->ci : PB_STATS_LEVEL;
    snprintf(buf, cap, "the %s of each row marked where it and the runner-up each average "
             "at least %d seeds and Welch's t-test separates them at the %g%% level", extreme,
             PB_STATS_MIN_N, 100 * (1 - level));
}

/* A quantity column of the per-schedule tables: heading, metric, printf format. */
struct quantity {
    const char *head;
    int m;
    const char *fmt;
    double scale;
};

/* A row per configuration and schedule column; cells are means over its runs. */
static void by_row(const struct runs *rs, const struct quantity *q, int nq, struct pb_grid *g)
{
    int nl = nlabels(rs) + 1;
    pb_grid_init(g, nl + nq, nl, g->caption);
    int h = pb_grid_add_row(g);
    set_head_labels(g, h, rs, "schedule");
    for (int k = 0; k < nq; k++)
        pb_grid_set(g, h, nl + k, q[k].head, false);
    for (int a = 0, b; a < rs->n; a = b) {
        b = block_end(rs, a, 1);
        int row = pb_grid_add_row(g);
        set_labels(g, row, rs, &rs->v[a]);
        pb_grid_set(g, row, nl - 1, rs->v[a].label, false);
        for (int k = 0; k < nq; k++) {
            struct summary st = cell_stat(rs, a, b, NULL, q[k].m);
            char buf[64];
            snprintf(buf, sizeof buf, q[k].fmt, st.mean * q[k].scale);
            pb_grid_set(g, row, nl + k, st.n ? buf : NULL, false);
        }
    }
}

static const struct quantity memory_q[] = {
    {"params", M_PARAMS, "%.2f", 1 / MIB},     {"grads", M_GRADS, "%.2f", 1 / MIB},
    {"optstate", M_OPTSTATE, "%.2f", 1 / MIB}, {"wcopies", M_WCOPIES, "%.2f", 1 / MIB},
    {"acts", M_ACTS, "%.2f", 1 / MIB},         {"comm", M_COMM, "%.2f", 1 / MIB},
    {"scratch", M_SCRATCH, "%.2f", 1 / MIB},   {"bnstats", M_BNSTATS, "%.2f", 1 / MIB},
    {"host", M_HOST, "%.2f", 1 / MIB},
    {"total", M_TOTAL, "%.2f", 1 / MIB},
    {"max stage", M_STAGE_MAX, "%.2f", 1 / MIB},
};

static const struct quantity staleness_q[] = {
    {"F lag", M_F_MEAN, "%.2f", 1},          {"F max", M_F_MAX, "%.0f", 1},
    {"B lag", M_B_MEAN, "%.2f", 1},          {"B max", M_B_MAX, "%.0f", 1},
    {"pred err", M_PRED_MEAN, "%.2e", 1},    {"pred err max", M_PRED_MAX, "%.2e", 1},
};

static const struct quantity updates_q[] = {
    {"micro-batch", M_MICROBATCH, "%.0f", 1},
    {"per update", M_MICROBATCHES, "%.0f", 1},
    {"samples/update", M_SAMPLES_PER_UPDATE, "%.0f", 1},
    {"updates/epoch", M_UPDATES_PER_EPOCH, "%.0f", 1},
    {"epochs", M_EPOCHS, "%.0f", 1},
};

int pb_report_write(const char *db_path, const struct pb_report_opts *o, FILE *out,
                    struct pb_err *e)
{
    PB_CHECK(o->table >= 0 && o->table < PB_REPORT_NTABLES);
    struct pb_results *db;
    if (pb_report_open(&db, db_path, e))
        return -1;
    struct runs rs;
    if (pb_report_require_done(db, e) || pb_report_select(db, &o->sel, e) ||
        load_runs(db, o->target, &rs, e)) {
        pb_results_close(db);
        return -1;
    }
    pb_results_close(db);
    static const char shared_note[] = "\xe2\x80\xa0: measured with the stages sharing cores "
        "(the seq executor, or more stage threads than cores), so not a one-device-per-stage "
        "pipeline's timing and never marked best; the sim- tables give that.";
    char caption[1536], sw[128], bw[256];
    struct pb_grid g = {.caption = caption};
    spread_words(sw, sizeof sw, o);
    switch (o->table) {
    case PB_REPORT_ACCURACY: {
        bool bleu = false;
        for (int i = 0; i < rs.n; i++)
            bleu |= rs.v[i].m[M_HAS_BLEU] == 1;
        best_words(bw, sizeof bw, o, "best");
        int n = snprintf(caption, sizeof caption, "Maximum validation accuracy (%%%s) per "
                         "schedule: mean \xc2\xb1 %s over the finished seeds of a cell "
                         "(n: its seeds, the repeats of one counted once; diverged ones are "
                         "counted, not averaged), \xe2\x80\x93 where none; %s.",
                         bleu ? "; for a translation model, as GNMT's, the maximum validation "
                                "BLEU" : "", sw, bw);
        if (o->target > 0)
            snprintf(caption + n, sizeof caption - n, " In parentheses: epochs and seconds "
                     "of training to reach %g%% (mean over the runs that reached it).",
                     100 * o->target);
        by_schedule(&rs, &(struct how){M_BEST_ACC, 2, false, false, o->target, o->ci, "accuracy", "%"}, o->format,
                    &g);
        break;
    }
    case PB_REPORT_THROUGHPUT:
        best_words(bw, sizeof bw, o, "highest");
        snprintf(caption, sizeof caption, "Training throughput (samples/s: a run's median over "
                 "its epochs but the first, the warm-up, of training samples over wall time; a "
                 "seed run --repeat N times, the median over its repeats) per schedule: mean "
                 "\xc2\xb1 %s over the finished seeds of a cell (n: its seeds; diverged ones "
                 "are counted, not averaged; epochs: the range of the runs' epochs; repeats: "
                 "the range of the seeds' repeats; with warm-up: a run of one epoch, timed with "
                 "it); %s, and the gap exceeds half the range. %s", sw, bw, shared_note);
        load_note(&rs, caption, sizeof caption);
        by_schedule(&rs, &(struct how){M_THROUGHPUT, 1, false, true, 0, o->ci, "throughput", "samples/s"}, o->format, &g);
        break;
    case PB_REPORT_BUBBLE:
        best_words(bw, sizeof bw, o, "lowest");
        snprintf(caption, sizeof caption, "Bubble fraction (%%: a device's idle time over its "
                 "makespan, summed over the epochs but the first, the warm-up; mean over the "
                 "devices; a seed run --repeat N times, the median over its repeats) per "
                 "schedule: mean \xc2\xb1 %s over the finished seeds of a cell (n: its seeds; "
                 "diverged ones are counted, not averaged; repeats: the range of the seeds' "
                 "repeats); %s, and the gap exceeds half the repeats' range. %s", sw, bw,
                 shared_note);
        load_note(&rs, caption, sizeof caption);
        by_schedule(&rs, &(struct how){M_BUBBLE, 1, true, true, 0, o->ci, "bubble", "%"}, o->format, &g);
        break;
    case PB_REPORT_SIM_THROUGHPUT:
        best_words(bw, sizeof bw, o, "highest");
        snprintf(caption, sizeof caption, "Simulated training throughput (samples/s) per "
                 "schedule: a run's epoch simulated on one device per stage with its stages' "
                 "median op times (design \xc2\xa7" "6.6; `pipebench simulate --run` prints "
                 "the same number); mean \xc2\xb1 %s over the finished seeds of a cell (n: its "
                 "seeds, each its first repeat's); %s. \xe2\x80\xa0: the op times were "
                 "measured while the stages shared cores (more stage threads than cores, or a "
                 "load above them), so they are not each stage's alone; never marked best.",
                 sw, bw);
        by_schedule(&rs, &(struct how){M_SIM_THROUGHPUT, 1, false, true, 0, o->ci, "sim_throughput",
                                   "samples/s"}, o->format,
                    &g);
        break;
    case PB_REPORT_SIM_BUBBLE:
        best_words(bw, sizeof bw, o, "lowest");
        snprintf(caption, sizeof caption, "Simulated bubble fraction (%%) per schedule: each "
                 "epoch of a run replayed on one device per stage with its stages' median op "
                 "times (design \xc2\xa7" "6.6), idle time over makespan, mean over the "
                 "devices; mean \xc2\xb1 %s over the finished seeds of a cell; %s. \xe2\x80\xa0: "
                 "the op times were measured while the stages shared cores, so they are not "
                 "each stage's alone; never marked best.", sw, bw);
        by_schedule(&rs, &(struct how){M_SIM_BUBBLE, 1, true, true, 0, o->ci, "sim_bubble", "%"},
                    o->format, &g);
        break;
    case PB_REPORT_MEMORY:
        snprintf(caption, sizeof caption, "Peak memory (MiB) by kind, summed over stages (each "
                 "stage's peak over epochs); total: all kinds; max stage: the largest stage's "
                 "total. Mean over the runs of a row.");
        by_row(&rs, memory_q, (int)(sizeof memory_q / sizeof memory_q[0]), &g);
        break;
    case PB_REPORT_UPDATES:
        snprintf(caption, sizeof caption, "Equal footing (semantics \xc2\xa7" "1.5): samples "
                 "per micro-batch, micro-batches per update, samples per optimizer update, "
                 "updates per epoch and epochs recorded. Mean over the runs of a row; empty "
                 "where a run recorded none (before schema version 4).");
        by_row(&rs, updates_q, (int)(sizeof updates_q / sizeof updates_q[0]), &g);
        break;
    default:
        snprintf(caption, sizeof caption, "Weight version lag against the synchronous run "
                 "(F, B: mean over stages and epochs, and maximum) and prediction error "
                 "||W_pred - W|| / ||W|| (mean over predictions, and maximum). Mean over the "
                 "runs of a row.");
        by_row(&rs, staleness_q, (int)(sizeof staleness_q / sizeof staleness_q[0]), &g);
        g.latex_caption = "Weight version lag against the synchronous run ($F$, $B$: mean "
                          "over stages and epochs, and maximum) and prediction error "
                          "$\\|\\hat{W} - W\\| / \\|W\\|$ (mean over predictions, and "
                          "maximum). Mean over the runs of a row.";
        break;
    }
    char label[64];
    snprintf(label, sizeof label, "tab:pb-%s", pb_report_table_names[o->table]);
    g.label = label;
    runs_free(&rs);
    int rc = pb_grid_write(&g, o->format, out);
    pb_grid_finish(&g);
    if (rc)
        return pb_err_set(e, "cannot write the report (output error); check where stdout goes");
    return 0;
}
