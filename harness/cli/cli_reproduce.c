/* harness/cli/cli_reproduce.c — `pipebench reproduce KIT`: runs an experiment kit's rows
 * (kit.h: one sweep file per published row and scale) into one database, resumably, and
 * prints the published table beside pipebench's numbers (plots/kit_table.h) and, with
 * --figures DIR, the paper's kind of figure (plots/plot.h's convergence, a facet per row). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/args.h"
#include "harness/base/data_dir.h"
#include "harness/cli/cli.h"
#include "harness/driver/finished.h"
#include "harness/driver/kit.h"
#include "harness/driver/plan.h"
#include "harness/driver/sweep.h"
#include "plots/plot.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: pipebench reproduce KIT [--scale cpu|paper] [--rows R1,R2,...] [--jobs N]\n"
        "                           [--db FILE] [--format md|csv|latex] [--figures DIR]\n"
        "                           [--dry-run] [--quiet]\n"
        "Runs an experiment kit, a paper's published table as sweep files, into one results\n"
        "database and prints the table: a line with the paper's numbers (\xe2\x80\x93 where "
        "none was\npublished) and one with pipebench's, mean \xc2\xb1 std over the seeds' "
        "finished runs, per row\nand schedule. Running it again resumes: finished runs are "
        "kept, interrupted ones\ncontinue (as pipebench sweep).\n\n"
        "  KIT            a folder of experiments/ (pipeoptim: PipeOptim's Table IV), found\n"
        "                 beside the binary or in $PB_EXPERIMENTS_DIR\n"
        "  --scale S      cpu (default): each row's small preset on the synthetic stand-in of\n"
        "                 its dataset, sized for two CPU cores; paper: the paper's presets,\n"
        "                 datasets and recipes, for GPUs (--backend and --data-dir are set in\n"
        "                 the row files' [run]; a Δ line gives pipebench − paper)\n"
        "  --rows R,...   only these rows (default: every row; a wrong name lists them)\n"
        "  --jobs N       runs at once, each with cores / N threads (default 1)\n"
        "  --db FILE      results database (default: KIT-SCALE.db)\n"
        "  --format F     md (default), csv or latex\n"
        "  --figures DIR  also draw the paper's kind of figure into DIR: top-1 against epoch,\n"
        "                 a facet per row, a line per schedule with its seeds' confidence\n"
        "                 band (pipebench plot's convergence figure, DIR/convergence.png;\n"
        "                 default: no figures)\n"
        "  --dry-run      list what would run and what is finished, print the table so far,\n"
        "                 run nothing\n"
        "  --quiet        no progress lines\n"
        "Exit status: 0 when every run is done, 1 when one failed or diverged, 2 for a bad\n"
        "kit or option (then nothing runs), 130 when a signal stopped it.\n");
}

struct args {
    const char *kit, *scale, *rows, *db, *format, *figures;
    int jobs;
    bool dry_run, quiet;
};

static int parse(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        {"scale", required_argument, 0, 's'},  {"rows", required_argument, 0, 'r'},
        {"jobs", required_argument, 0, 'j'},   {"db", required_argument, 0, 'd'},
        {"format", required_argument, 0, 'f'}, {"dry-run", no_argument, 0, 'n'},
        {"quiet", no_argument, 0, 'q'},        {"help", no_argument, 0, 'h'},
        {"figures", required_argument, 0, 'F'},
        {0, 0, 0, 0},
    };
    struct pb_err e;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            return 1;
        case 's':
            a->scale = optarg;
            break;
        case 'r':
            a->rows = optarg;
            break;
        case 'j':
            if (pb_arg_int("--jobs", optarg, &a->jobs, &e))
                return pb_cli_fail(e.msg);
            if (a->jobs < 1)
                return pb_cli_fail("--jobs must be at least 1");
            break;
        case 'd':
            a->db = optarg;
            break;
        case 'f':
            a->format = optarg;
            break;
        case 'n':
            a->dry_run = true;
            break;
        case 'q':
            a->quiet = true;
            break;
        case 'F':
            if (!*optarg)
                return pb_cli_fail("--figures names a folder");
            a->figures = optarg;
            break;
        default:
            fprintf(stderr, "pipebench reproduce: unknown option or missing value: '%s' "
                            "(pipebench reproduce --help lists the options)\n",
                    argv[optind - 1]);
            return PB_EXIT_USAGE;
        }
    }
    if (argc - optind != 1)
        return pb_cli_fail(argc == optind ? "reproduce: name the kit (pipebench reproduce "
                                            "pipeoptim)" : "reproduce: give one kit");
    a->kit = argv[optind];
    if (strcmp(a->scale, pb_kit_scales[0]) && strcmp(a->scale, pb_kit_scales[1]))
        return pb_cli_fail("--scale is cpu or paper");
    return 0;
}

/* The kit's rows to run, in the table's order: every row, or those --rows names. */
static int select_rows(const struct pb_kit *k, const char *list, const struct pb_kit_row **out,
                       int *n)
{
    *n = 0;
    if (!list) {
        for (int i = 0; i < k->n; i++)
            out[(*n)++] = &k->rows[i];
        return 0;
    }
    char *copy = strdup(list), *save = NULL;
    bool want[PB_KIT_MAX_ROWS] = {false};
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const struct pb_kit_row *r = pb_kit_row(k, t);
        if (!r) {
            fprintf(stderr, "pipebench: reproduce: the kit has no row '%s'; its rows:", t);
            for (int i = 0; i < k->n; i++)
                fprintf(stderr, " %s", k->rows[i].id);
            fprintf(stderr, "\n");
            free(copy);
            return PB_EXIT_USAGE;
        }
        want[r - k->rows] = true;
    }
    free(copy);
    for (int i = 0; i < k->n; i++)
        if (want[i])
            out[(*n)++] = &k->rows[i];
    return 0;
}

/* One row at the chosen scale: its sweep and which of its runs are finished. */
struct row_run {
    const struct pb_kit_row *row;
    char file[4400];
    struct pb_sweep sweep;
    int64_t *ids;
};

/* A kit row varies the schedule and the seed only: its table cell averages seeds. */
static int check_axes(const struct row_run *r)
{
    for (int g = 0; g < r->sweep.naxes; g++)
        if (strcmp(r->sweep.axes[g].key, "schedule") && strcmp(r->sweep.axes[g].key, "seed")) {
            fprintf(stderr, "pipebench: %s:%d: a kit's row varies schedule and seed only (its "
                            "table averages the seeds of one configuration per schedule); set "
                            "%s in [run]\n", r->file, r->sweep.axes[g].line,
                    r->sweep.axes[g].key);
            return PB_EXIT_USAGE;
        }
    return 0;
}

static int load_row(const struct pb_kit *k, const struct args *a, int threads,
                    struct row_run *r)
{
    struct pb_err e;
    if (pb_kit_row_file(k, r->row, a->scale, r->file, sizeof r->file, &e))
        return pb_cli_fail(e.msg);
    if (pb_sweep_load(&r->sweep, r->file, a->db, threads, &e)) {
        pb_cli_sweep_errors(&r->sweep, r->file, &e, "pipebench", true);
        return PB_EXIT_USAGE;
    }
    return check_axes(r);
}

static int finished(struct row_run *r, bool create)
{
    struct pb_err e;
    free(r->ids);
    r->ids = pb_xcalloc((size_t)r->sweep.n + 1, sizeof *r->ids);
    if (pb_finished_runs(r->sweep.items[0].cfg.db, r->sweep.items, r->sweep.n, r->ids, create,
                         &e))
        return pb_cli_fail(e.msg);
    return 0;
}

static int column_of(const char *schedule)
{
    for (int c = 0; c < PB_KIT_NCOLS; c++)
        if (!strcmp(pb_kit_columns[c], schedule))
            return c;
    return -1;
}

/* The table's rows: the paper's numbers, and each column's runs (0: not finished). */
static int table_rows(const struct row_run *rr, int n, struct pb_kit_table_row *out)
{
    for (int i = 0; i < n; i++) {
        const struct pb_kit_row *k = rr[i].row;
        struct pb_kit_table_row *t = &out[i];
        memset(t, 0, sizeof *t);
        t->label = k->label;
        t->optimizer = k->optimizer;
        t->metric = k->metric;
        t->note = k->note;
        t->chance = NAN;
        int classes;
        struct pb_err e;
        if (strstr(k->metric, "top-1") && rr[i].sweep.n &&
            !pb_run_data_classes(&rr[i].sweep.items[0].cfg, &classes, &e) && classes > 0)
            t->chance = 100.0 / classes;
        for (int c = 0; c < PB_KIT_NCOLS; c++)
            t->cells[c].paper = k->paper[c];
        for (int j = 0; j < rr[i].sweep.n; j++) {
            int c = column_of(rr[i].sweep.items[j].cfg.schedule);
            if (c < 0)
                continue;
            struct pb_kit_cell *cell = &t->cells[c];
            if (cell->nruns == PB_KIT_MAX_SEEDS) {
                fprintf(stderr, "pipebench: %s: more than %d seeds of %s\n", rr[i].file,
                        PB_KIT_MAX_SEEDS, pb_kit_columns[c]);
                return PB_EXIT_USAGE;
            }
            cell->runs[cell->nruns++] = rr[i].ids[j];
        }
    }
    return 0;
}

static int print_table(const struct args *a, const struct row_run *rr, int n,
                       enum pb_report_format f)
{
    struct pb_kit_table_row *rows = pb_xcalloc((size_t)n, sizeof *rows);
    int rc = table_rows(rr, n, rows);
    char caption[1024];
    snprintf(caption, sizeof caption, "Kit %s at scale %s (%s): the paper's maximum validation "
             "accuracy per schedule (\xe2\x80\x93: not published) and pipebench's, mean "
             "\xc2\xb1 std over the seeds' finished runs (n; diverged runs counted, not "
             "averaged; empty: not run yet)%s.", a->kit, a->scale, a->db,
             strcmp(a->scale, "paper") ? "; the cpu scale trains small presets on synthetic "
             "stand-ins, so its numbers are not the paper's quantity and get no \xce\x94"
                                        : "; \xce\x94: pipebench \xe2\x88\x92 paper");
    struct pb_err e;
    if (!rc && pb_kit_table_write(a->db, rows, n, !strcmp(a->scale, "paper"), caption, f, stdout,
                                  &e))
        rc = pb_cli_fail(e.msg);
    free(rows);
    return rc;
}

static void wrote(const char *path, void *arg)
{
    (void)arg;
    printf("wrote %s\n", path);
}

/* The paper's kind of figure of the rows' finished runs into a->figures: the convergence
 * figure (plots/plot.h) of exactly those runs, a facet per row's configuration. */
static int draw_figures(const struct args *a, const struct row_run *rr, int n)
{
    size_t cap = 16, len = 0;
    char *ids = pb_xmalloc(cap);
    ids[0] = '\0';
    for (int i = 0; i < n; i++)
        for (int j = 0; j < rr[i].sweep.n; j++) {
            if (rr[i].ids[j] <= 0)
                continue;
            char one[32];
            int w = snprintf(one, sizeof one, "%s%lld", len ? "," : "", (long long)rr[i].ids[j]);
            while (len + (size_t)w + 1 > cap) {
                ids = realloc(ids, cap *= 2);
                PB_CHECK(ids);
            }
            memcpy(ids + len, one, (size_t)w + 1);
            len += (size_t)w;
        }
    int rc = PB_EXIT_OK;
    if (!len) {
        printf("reproduce: no finished run to draw yet; no figures\n");
    } else {
        struct pb_report_select sel = {.runs = ids};
        struct pb_err e;
        if (pb_plot_figure_cb(a->db, "convergence", a->figures, "png", 0, &sel, NULL, wrote,
                              NULL, &e))
            rc = pb_cli_fail(e.msg);
    }
    free(ids);
    return rc;
}

/* Runs the rows' unfinished configurations in one batch; returns the exit status. */
static int run_pending(const struct args *a, struct row_run *rr, int n)
{
    int total = 0;
    for (int i = 0; i < n; i++)
        total += rr[i].sweep.n;
    struct pb_batch_item *pending = pb_xcalloc((size_t)total + 1, sizeof *pending);
    int m = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < rr[i].sweep.n; j++)
            if (rr[i].ids[j] <= 0) {
                pending[m] = rr[i].sweep.items[j];
                pending[m++].cfg.quiet = a->quiet;
            }
    int rc = PB_EXIT_OK;
    if (m) {
        struct pb_batch_totals t;
        pb_cli_warn_shared("reproduce", pending, m, a->jobs);
        pb_batch_run(pending, m, a->jobs, "reproduce", &t);
        printf("reproduce: %d runs: %d done, %d diverged, %d failed, %d errors", m, t.done,
               t.diverged, t.failed, t.errors);
        if (t.interrupted || t.not_started)
            printf(", %d interrupted, %d not started (run it again to go on)", t.interrupted,
                   t.not_started);
        printf("\n");
        rc = t.stopped ? PB_EXIT_INTERRUPTED : t.errors ? PB_EXIT_USAGE
             : t.failed || t.diverged || t.interrupted || t.not_started ? PB_EXIT_RUN
                                                                          : PB_EXIT_OK;
    }
    free(pending);
    return rc;
}

static int reproduce(struct args *a)
{
    if (strchr(a->kit, '/') || a->kit[0] == '.' || !a->kit[0])
        return pb_cli_fail("reproduce: a kit is named by its folder in experiments/ (e.g. "
                           "pipeoptim), not a path");
    int f = -1;
    for (int i = 0; i < PB_FORMAT_N; i++)
        if (!strcmp(a->format, pb_report_format_names[i]))
            f = i;
    if (f < 0)
        return pb_cli_fail("--format is md, csv or latex");
    char dir[4096], kitdir[4400], db[512];
    pb_data_dir("experiments", "PB_EXPERIMENTS_DIR", dir, sizeof dir);
    snprintf(kitdir, sizeof kitdir, "%s/%s", dir, a->kit);
    if (!a->db) {
        snprintf(db, sizeof db, "%s-%s.db", a->kit, a->scale);
        a->db = db;
    }
    struct pb_kit *k = pb_xcalloc(1, sizeof *k);
    struct pb_err e;
    const struct pb_kit_row *sel[PB_KIT_MAX_ROWS];
    int n = 0, rc = 0;
    if (pb_kit_load(k, kitdir, &e))
        rc = pb_cli_fail(e.msg);
    if (!rc)
        rc = select_rows(k, a->rows, sel, &n);
    struct row_run *rr = pb_xcalloc((size_t)n + 1, sizeof *rr);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cores / a->jobs > 0 ? (int)(cores / a->jobs) : 1;
    int loaded = 0;
    for (; !rc && loaded < n; loaded++) {
        rr[loaded].row = sel[loaded];
        rc = load_row(k, a, threads, &rr[loaded]);
    }
    for (int i = 0; !rc && i < n; i++)
        rc = finished(&rr[i], !a->dry_run);
    for (int i = 0; !rc && i < n; i++) {
        int done = 0;
        for (int j = 0; j < rr[i].sweep.n; j++)
            done += rr[i].ids[j] > 0;
        if (!a->quiet || a->dry_run)
            printf("reproduce: %s: %d runs, %d finished, %d to run%s\n", rr[i].row->id,
                   rr[i].sweep.n, done, rr[i].sweep.n - done,
                   rr[i].sweep.nunsupported ? " (leaving out the schedules that cannot run its "
                                              "optimizer)" : "");
        for (int j = 0; a->dry_run && j < rr[i].sweep.n; j++)
            printf("  %s: %s\n", rr[i].sweep.items[j].label,
                   rr[i].ids[j] > 0 ? "finished" : "to run");
    }
    if (!rc && !a->dry_run) {
        rc = run_pending(a, rr, n);
        for (int i = 0; i < n && rc != PB_EXIT_USAGE; i++)
            if (finished(&rr[i], false))
                rc = PB_EXIT_USAGE;
    }
    if (rc != PB_EXIT_USAGE && n) {
        int prc = print_table(a, rr, n, (enum pb_report_format)f);
        if (!prc && a->figures && !a->dry_run)
            prc = draw_figures(a, rr, n);
        rc = prc ? prc : rc;
    }
    for (int i = 0; i < loaded; i++) {
        pb_sweep_finish(&rr[i].sweep);
        free(rr[i].ids);
    }
    free(rr);
    free(k);
    return rc;
}

int pb_cmd_reproduce(int argc, char **argv)
{
    struct args a = {.scale = "cpu", .format = "md", .jobs = 1};
    int rc = parse(argc, argv, &a);
    if (rc == 1) {
        usage(stdout);
        return PB_EXIT_OK;
    }
    return rc ? rc : reproduce(&a);
}
