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
    "Draws figures with gnuplot (Debian package gnuplot-nox) into DIR/NAME.FORMAT, with\n"
    "their data in DIR/NAME.dat:\n"
    "  convergence  validation accuracy per epoch and per training second, a curve per\n"
    "               schedule (mean over the runs of each)\n"
    "  throughput   samples/s and bubble fraction per schedule, a bar per D\n"
    "  memory       peak memory per stage, stacked by kind (one run)\n"
    "  timeline     F, B and U ops per device over the last recorded epoch (one run)\n"
    "  staleness    forward and backward version lag and prediction error per stage\n"
    "  --run ID       the run shown (memory, timeline) or whose optimizer, model, dataset\n"
    "                 and D are compared (others); default the newest finished run\n"
    "  --db FILE      results database (default " PB_RESULTS_DEFAULT_DB ")\n"
    "  --format F     png (default), svg or pdf\n"
    PB_CLI_SELECT_HELP
    "gnuplot scripts come from $PB_PLOTS_DIR when set, else from the source tree's plots/\n"
    "(a binary in its build tree) or from where `meson install` put them beside the binary.\n";

static void wrote(const char *path, void *arg)
{
    (void)arg;
    printf("wrote %s\n", path);
}

int pb_cmd_plot(int argc, char **argv)
{
    const char *db = PB_RESULTS_DEFAULT_DB, *figure = NULL, *out = NULL, *format = "png";
    long long run = 0;
    struct pb_report_select sel = {0};
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
        } else {
            fprintf(stderr, "pipebench: plot: unexpected argument '%s'\n%s", a, usage);
            return PB_EXIT_USAGE;
        }
    }
    if (!figure || !out) {
        fprintf(stderr, "pipebench: plot needs --figure and --out\n%s", usage);
        return PB_EXIT_USAGE;
    }
    if (pb_plot_figure_cb(db, figure, out, format, run, &sel, wrote, NULL, &e))
        return pb_cli_fail(e.msg);
    return PB_EXIT_OK;
}
