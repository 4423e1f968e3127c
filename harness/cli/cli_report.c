/* harness/cli/cli_report.c — `pipebench report`: prints a paper-style table (plots/report.h)
 * of the finished runs in a results database as Markdown, CSV or LaTeX. */
#include <stdio.h>
#include <string.h>

#include "harness/cli/cli.h"
#include "harness/base/args.h"
#include "plots/report.h"
#include "results/results.h"

static const char usage[] =
    "usage: pipebench report --table accuracy|throughput|bubble|sim-throughput|sim-bubble|\n"
    "                                memory|staleness|updates\n"
    "                        [--db FILE] [--format md|csv|latex] [--target ACC] [--ci L]\n"
    "Prints a table of the runs with status done to stdout; the numbers are those of the\n"
    "views in results/views.sql, as `pipebench compare` and `pipebench plot` print them.\n"
    "  accuracy    maximum validation accuracy (%), the layout of PipeOptim's Table IV: a\n"
    "              row per optimizer, model, dataset and D, a column per schedule (and\n"
    "              variant); mean ± std over the runs of a cell; the best of a row marked\n"
    "              where it and the runner-up each average 3 seeds or more and Welch's\n"
    "              t-test separates them at the 5% level (--ci L: at 100 - L %)\n"
    "  throughput  samples/s: a run's median over its epochs but the first (the warm-up)\n"
    "              of training samples over wall time, with the epochs' range; same\n"
    "              layout; a cell measured with the stages sharing cores (the seq\n"
    "              executor, or more stage threads than cores) carries a dagger and is\n"
    "              never marked\n"
    "  bubble      bubble fraction (%): a device's idle time over its makespan, summed over\n"
    "              the epochs but the first, mean over the devices; same layout and marks\n"
    "  sim-throughput  a run's epoch simulated on one device per stage with its stages'\n"
    "              median op times: the number `pipebench simulate --run` prints (design\n"
    "              §6.6); a dagger where those times were measured on shared cores\n"
    "  sim-bubble  the same simulation's bubble, the devices' mean idle share of its\n"
    "              makespan: the one `pipebench simulate --run` prints (design §6.6)\n"
    "  memory      a row per configuration and schedule: peak MiB of each kind (params,\n"
    "              grads, optstate, wcopies, acts, comm, scratch, bnstats, host) summed over\n"
    "              the stages, their total, and the largest stage's total\n"
    "  staleness   same rows: mean and maximum F and B version lag against the synchronous\n"
    "              run, mean and maximum prediction error\n"
    "  updates     same rows: micro-batch size, micro-batches per update, samples per\n"
    "              update and updates per epoch (equal footing, --batch; semantics §1.5)\n"
    "A cell averages the runs of one configuration (all options but the seed, the\n"
    "schedule and how it was timed); runs of the same optimizer, model, dataset and D that\n"
    "differ in another option get a row each, with a setting column saying how.\n"
    "  --db FILE      results database (default " PB_RESULTS_DEFAULT_DB ")\n"
    "  --format F     md (default; best in bold), csv (numbers only: a row per cell with\n"
    "                 mean, std, n, runs, diverged, best, shared_timing, ..., then the\n"
    "                 metric and its unit: accuracy and %, bleu and BLEU, ...), latex\n"
    "  --target ACC   accuracy table: also the epochs and training seconds until the first\n"
    "                 epoch whose validation accuracy reaches ACC, a fraction (0.8 for 80%)\n"
    "  --ci L         accuracy, throughput, bubble and sim- tables: cells show mean ± the\n"
    "                 half-width of the L% confidence interval of the mean (Student's t,\n"
    "                 n - 1 degrees of freedom; L in (0, 100), e.g. 95), csv adds ci_low\n"
    "                 and ci_high, and the best is tested at the 100 - L % level\n"
    PB_CLI_SELECT_HELP;

static int lookup(const char *flag, const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i]))
            return i;
    fprintf(stderr, "pipebench: report: unknown %s '%s'; valid:", flag, v);
    for (int i = 0; i < n; i++)
        fprintf(stderr, " %s", names[i]);
    fprintf(stderr, "\n");
    return -1;
}

int pb_cmd_report(int argc, char **argv)
{
    if (pb_cli_once("report", argc, argv, NULL, "--where"))
        return PB_EXIT_USAGE;
    const char *db = PB_RESULTS_DEFAULT_DB, *table = NULL, *format = "md";
    struct pb_report_opts o = {0};
    struct pb_err e;
    int sel;
    /* every option takes a value: the arguments go in pairs */
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return PB_EXIT_OK;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--db") && v) {
            db = v;
        } else if (!strcmp(a, "--table") && v) {
            table = v;
        } else if (!strcmp(a, "--format") && v) {
            format = v;
        } else if ((sel = pb_cli_select_flag(a, v, &o.sel, &e)) != 0) {
            if (sel < 0)
                return pb_cli_fail(e.msg);
        } else if (!strcmp(a, "--target") && v) {
            float t;
            if (pb_arg_float("--target", v, &t, &e))
                return pb_cli_fail(e.msg);
            if (!(t > 0 && t <= 1))
                return pb_cli_fail("--target is a validation accuracy as a fraction in (0, 1], "
                                   "as in compare (for 80% write --target 0.80)");
            o.target = t;
        } else if (!strcmp(a, "--ci") && v) {
            float l;
            if (pb_arg_float("--ci", v, &l, &e))
                return pb_cli_fail(e.msg);
            if (!(l > 0 && l < 100))
                return pb_cli_fail("--ci is a confidence level in percent, between 0 and 100 "
                                   "(e.g. --ci 95)");
            o.ci = l / 100.0;
        } else {
            fprintf(stderr, "pipebench: report: unexpected argument '%s'%s\n%s", a,
                    v ? "" : " (or a missing value)", usage);
            return PB_EXIT_USAGE;
        }
    }
    if (!table) {
        fprintf(stderr, "pipebench: report needs --table\n%s", usage);
        return PB_EXIT_USAGE;
    }
    int t = lookup("table", table, pb_report_table_names, PB_REPORT_NTABLES);
    int f = lookup("format", format, pb_report_format_names, PB_FORMAT_N);
    if (t < 0 || f < 0)
        return PB_EXIT_USAGE;
    if (o.target > 0 && t != PB_REPORT_ACCURACY)
        return pb_cli_fail("--target applies to --table accuracy only");
    if (o.ci > 0 && (t == PB_REPORT_MEMORY || t == PB_REPORT_STALENESS || t == PB_REPORT_UPDATES))
        return pb_cli_fail("--ci applies to the per-schedule tables only: accuracy, "
                           "throughput, bubble, sim-throughput, sim-bubble");
    o.table = (enum pb_report_table)t;
    o.format = (enum pb_report_format)f;
    if (pb_report_write(db, &o, stdout, &e))
        return pb_cli_fail(e.msg);
    return PB_EXIT_OK;
}
