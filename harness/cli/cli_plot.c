/* harness/cli/cli_plot.c — `pipebench plot`: figures of a results database drawn by gnuplot
 * (plots/plot.h, scripts in plots/), one file per figure plus its data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/cli.h"
#include "plots/plot.h"
#include "results/results.h"

static const char usage[] =
    "usage: pipebench plot --figure NAME|all --out DIR [--db FILE] [--format png|svg|pdf]\n"
    "                      [--run ID] [--experiment NAME] [--where KEY=VALUE] [--runs IDS]\n"
    "                      [--target ACC] [--window A:B|all] [--epoch N]\n"
    "Draws figures with gnuplot (Debian package gnuplot-nox) into DIR/NAME.FORMAT, with\n"
    "their data in DIR/NAME.dat. A schedule has the same colour, marker and dash in every\n"
    "figure; the bubble is in % everywhere (idle / makespan, semantics \xc2\xa7" "6.5).\n"
    "  convergence  validation accuracy per epoch and per training second, validation and\n"
    "               training loss per epoch: a curve per schedule, the mean over its runs\n"
    "               (seeds) with its 95% confidence interval as a band (Student's t; n\n"
    "               in the key); the target line with --target; without --run, of a\n"
    "               database of several configurations: the accuracy per epoch, a facet\n"
    "               per configuration (of the selection)\n"
    "  throughput   samples/s and bubble (%) per D, a bar per schedule (mean \xc2\xb1 std\n"
    "               over its runs; timings leave out the warm-up epoch)\n"
    "               († runs: the simulated bars, one device per stage, hatched beside)\n"
    "  memory       peak memory per stage stacked by kind, a bar per schedule side by side,\n"
    "               each with its total, and the weights-only view (params + weight copies)\n"
    "  timeline     F, B and U ops per device in a window of a few steady-state steps of\n"
    "               an epoch (--window, --epoch); one panel per run with a selection\n"
    "               (--runs), simulations (`simulate --record`) labelled as simulated\n"
    "  staleness    forward and backward version lag and prediction error per stage\n"
    "  all          each of them; one the database has no data for is skipped\n"
    "  --run ID       the run shown (timeline) or whose configuration (every option but\n"
    "                 the schedule, variant and seed; throughput: and the stages) is\n"
    "                 compared (others); default the newest finished run (convergence:\n"
    "                 every configuration, a facet each)\n"
    "  --db FILE      results database (default " PB_RESULTS_DEFAULT_DB ")\n"
    "  --format F     png (default), svg or pdf\n"
    "  --target ACC   convergence: draw the target validation accuracy, a fraction in\n"
    "                 (0, 1] as in compare and report (0.8 for 80%), and mark where each\n"
    "                 schedule's seeds all reach it (mean epoch), k/n where only k do\n"
    "  --window A:B   timeline: micro-batches A to B-1 of the epoch (from the first F of A\n"
    "                 to the last B of B-1 on stage 0); 'all': the whole epoch; default:\n"
    "                 3 optimizer steps (at least 2D micro-batches) in mid-epoch\n"
    "  --epoch N      timeline: the epoch, from 1 as show and trace count (default each\n"
    "                 run's last with events)\n"
    PB_CLI_SELECT_HELP
    "                 (timeline: a panel per selected run with events, at most 8)\n"
    "gnuplot scripts come from $PB_PLOTS_DIR when set, else from the source tree's plots/\n"
    "(a binary in its build tree) or from where `meson install` put them beside the binary.\n";

static void wrote(const char *path, void *arg)
{
    (void)arg;
    printf("wrote %s\n", path);
}

int pb_cmd_plot(int argc, char **argv)
{
    if (pb_cli_once("plot", argc, argv, NULL, "--where"))
        return PB_EXIT_USAGE;
    const char *db = PB_RESULTS_DEFAULT_DB, *figure = NULL, *out = NULL, *format = "png";
    long long run = 0;
    struct pb_report_select sel = {0};
    struct pb_plot_opts opts = {0};
    struct pb_err e;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return PB_EXIT_OK;
        }
        if (!v) {
            fprintf(stderr, "pipebench: plot: unexpected argument '%s' (or a missing "
                            "value)\n%s", a, usage);
            return PB_EXIT_USAGE;
        }
        i++;
        int selected = pb_cli_select_flag(a, v, &sel, &e);
        if (selected < 0)
            return pb_cli_fail(e.msg);
        if (selected) {
            continue;
        } else if (!strcmp(a, "--db")) {
            db = v;
        } else if (!strcmp(a, "--figure")) {
            figure = v;
        } else if (!strcmp(a, "--out")) {
            out = v;
        } else if (!strcmp(a, "--format")) {
            format = v;
        } else if (!strcmp(a, "--run")) {
            char *end;
            run = strtoll(v, &end, 10);
            if (*end || end == v || run <= 0)
                return pb_cli_fail("--run expects a run id (a positive integer; `pipebench "
                                   "runs` lists them)");
        } else if (!strcmp(a, "--target")) {
            char *end;
            opts.target = strtod(v, &end);
            if (*end || end == v || !(opts.target > 0 && opts.target <= 1))
                return pb_cli_fail("--target is a validation accuracy as a fraction in (0, 1], "
                                   "as in compare and report (for 80% write --target 0.80)");
        } else if (!strcmp(a, "--window")) {
            int used = 0;
            if (!strcmp(v, "all"))
                opts.window_hi = PB_PLOT_WINDOW_ALL;
            else if (sscanf(v, "%d:%d%n", &opts.window_lo, &opts.window_hi, &used) != 2 ||
                     v[used] || opts.window_lo < 0 || opts.window_hi <= opts.window_lo)
                return pb_cli_fail("--window takes A:B, micro-batches A to B-1 of the epoch "
                                   "with 0 <= A < B (e.g. --window 8:16), or 'all'");
        } else if (!strcmp(a, "--epoch")) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || end == v || n <= 0 || n > 1000000)
                return pb_cli_fail("--epoch expects an epoch number counted from 1 (`pipebench "
                                   "show RUN` lists them)");
            opts.epoch = (int)n;
        } else {
            fprintf(stderr, "pipebench: plot: unexpected argument '%s'\n%s", a, usage);
            return PB_EXIT_USAGE;
        }
    }
    if (!figure || !out) {
        fprintf(stderr, "pipebench: plot needs --figure and --out\n%s", usage);
        return PB_EXIT_USAGE;
    }
    if (pb_plot_figure_cb(db, figure, out, format, run, &sel, &opts, wrote, NULL, &e))
        return pb_cli_fail(e.msg);
    return PB_EXIT_OK;
}
