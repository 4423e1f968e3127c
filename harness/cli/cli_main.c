/* harness/cli/cli_main.c — `pipebench COMMAND ...`: dispatches to the subcommands
 * (pb_cli_main; harness/cli/main.c is the program's main, a test's program may add a
 * backend to the registry first). */
#include <stdio.h>
#include <string.h>

#include "harness/cli/cli.h"
#include "pb_config.h"

struct command {
    const char *name, *summary;
    int (*main)(int argc, char **argv);
};

static const struct command commands[] = {
    {"run", "train one configuration and log it to the results database", pb_cmd_run},
    {"list", "list schedules, models, datasets and optimizers", pb_cmd_list},
    {"runs", "list the runs recorded in the results database", pb_cmd_runs},
    {"show", "print one run: configuration, environment, epochs, stage stats", pb_cmd_show},
    {"program", "print the per-device op programs of a schedule", pb_cmd_program},
    {"partition", "print how a model's blocks are cut into stages, measured and predicted",
     pb_cmd_partition},
    {"resume", "continue an interrupted run from its last resume state", pb_cmd_resume},
    {"simulate", "run a schedule on D virtual devices with given or measured op costs",
     pb_cmd_simulate},
    {"report", "print a paper-style table (accuracy, throughput, memory, staleness)",
     pb_cmd_report},
    {"plot", "draw figures of the results with gnuplot", pb_cmd_plot},
    {"trace", "write a run's op timeline as a Chrome trace for Perfetto", pb_cmd_trace},
    {"compare", "run every schedule on one workload; print a comparison, draw figures",
     pb_cmd_compare},
    {"sweep", "run a grid of configurations from a sweep file, resumable", pb_cmd_sweep},
    {"reproduce", "run an experiment kit (a paper's table) and print it beside the paper's",
     pb_cmd_reproduce},
    {"bleu", "score translations against a reference in corpus BLEU (as sacreBLEU)",
     pb_cmd_bleu},
};
#define NCOMMANDS (int)(sizeof commands / sizeof commands[0])

int pb_cli_fail(const char *msg)
{
    if (*msg)  /* empty: another MPI rank has said why */
        fprintf(stderr, "pipebench: %s\n", msg);
    return PB_EXIT_USAGE;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: pipebench COMMAND [options]   (pipebench COMMAND --help for its options)\n\n"
               "commands:\n");
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
}

int pb_cli_main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return PB_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return PB_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("pipebench %s\n", PB_VERSION);
        return PB_EXIT_OK;
    }
    for (int i = 0; i < NCOMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "pipebench: unknown command '%s'; valid commands:", argv[1]);
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(stderr, " %s", commands[i].name);
    fprintf(stderr, "\n");
    return PB_EXIT_USAGE;
}
