/* harness/cli/cli_partition.c — `pipebench partition`: prints how a model is cut into
 * stages (harness/driver/partition_report.h), with run's model options. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "harness/base/args.h"
#include "harness/base/out_path.h"
#include "harness/cli/cli.h"
#include "harness/driver/op_costs_alone.h"
#include "harness/driver/partition_report.h"
#include "harness/driver/run_flags.h"

static const char usage[] =
    "usage: pipebench partition --model M [--preset P] [--stages D] [--by METHOD]\n"
    "                           [--microbatch-size B] [--dataset NAME] [--threads N]\n"
    "                           [--backend NAME] [--reps N] [--op-costs-out FILE]\n"
    "Measures each block of the model (forward + backward of one micro-batch on the\n"
    "backend, the median of --reps, on the cores a stage of a D-stage run gets) and\n"
    "prints the cut of METHOD into D stages (semantics §5.3): per stage its blocks,\n"
    "parameters, forward FLOPs, activation KiB per micro-batch and measured milliseconds;\n"
    "then every block; then how well each cost predicts the measured block times: the\n"
    "correlation over the blocks, the measured slowest stage of its cut, and its largest\n"
    "stage error. The model is built on its dataset's shape; no data is read.\n"
    "  --model M            as pipebench run (default mlp)\n"
    "  --preset P           as pipebench run\n"
    "  --stages D           (default 4)\n"
    "  --by METHOD          flops | cost | params | time | paper, or bounds 0,3,5,9: what\n"
    "                       `pipebench run --partition` takes (default: run's default)\n"
    "  --microbatch-size B  (default 64)\n"
    "  --dataset NAME       whose sample shape and classes (default: the model's)\n"
    "  --threads N          cores for all stages together, as pipebench run (default all)\n"
    "  --backend NAME       (default cpu)\n"
    "  --reps N             timed repetitions per block (default 5)\n"
    "  --optimizer O        the optimizer whose step --op-costs-out times (default sgdm)\n"
    "  --op-costs-out FILE  also write the cut's op costs, each stage measured alone on\n"
    "                       its cores, for `pipebench simulate --op-costs FILE`: per stage\n"
    "                       F (its blocks' forwards), B (their backwards), I and W\n"
    "                       (their split backward's input- and weight-gradient passes),\n"
    "                       U (one optimizer step over its parameters) and recv (its\n"
    "                       messages carried as the executors carry them, per message\n"
    "                       received), seconds\n";

enum { O_BY = PB_RUN_FLAGS_EXTRA, O_REPS, O_COSTS_OUT, O_HELP };

static const struct option options[] = {
    {"model", required_argument, 0, 'm'},
    {"preset", required_argument, 0, 'p'},
    {"stages", required_argument, 0, 'd'},
    {"microbatch-size", required_argument, 0, 'b'},
    {"dataset", required_argument, 0, 's'},
    {"threads", required_argument, 0, 't'},
    {"backend", required_argument, 0, 'k'},
    {"by", required_argument, 0, O_BY},
    {"reps", required_argument, 0, O_REPS},
    {"optimizer", required_argument, 0, 'o'},
    {"op-costs-out", required_argument, 0, O_COSTS_OUT},
    {"help", no_argument, 0, O_HELP},
    {0, 0, 0, 0},
};

int pb_cmd_partition(int argc, char **argv)
{
    struct pb_run_flags f = {{0}};
    struct pb_err e;
    int reps = 5, opt;
    const char *costs_out = NULL;
    if (pb_cli_once("partition", argc, argv, options, NULL))
        return PB_EXIT_USAGE;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        if (opt == O_HELP) {
            fputs(usage, stdout);
            return PB_EXIT_OK;
        }
        if (opt == '?' || opt == ':') {
            fprintf(stderr, "pipebench partition: unknown option or missing value: '%s'\n%s",
                    argv[optind - 1], usage);
            return PB_EXIT_USAGE;
        }
        if (opt == O_REPS) {
            if (pb_arg_int("--reps", optarg, &reps, &e))
                return pb_cli_fail(e.msg);
            if (reps < 1 || reps > 1000)
                return pb_cli_fail("--reps must be between 1 and 1000");
            continue;
        }
        if (opt == O_COSTS_OUT) {
            costs_out = optarg;
            continue;
        }
        const char *name = opt == O_BY ? "partition" : NULL;
        for (int i = 0; !name && options[i].name; i++)
            if (options[i].val == opt)
                name = options[i].name;
        PB_CHECK(pb_run_flags_set(&f, name, optarg, NULL) == 0);
    }
    if (optind < argc) {
        fprintf(stderr, "pipebench partition: unexpected argument '%s'\n%s", argv[optind], usage);
        return PB_EXIT_USAGE;
    }
    struct pb_run_cfg c;
    pb_run_cfg_defaults(&c);
    if (pb_run_flags_apply(&f, &c, &e))
        return pb_cli_fail(e.msg);
    if (costs_out && pb_out_path_check("--op-costs-out", costs_out, NULL, &e))
        return pb_cli_fail(e.msg);   /* before measuring anything */
    struct pb_partition_study st;
    int rc = pb_partition_study(&c, reps, costs_out != NULL, &st, &e);
    if (!rc)
        pb_partition_study_print(&st, stdout);
    if (!rc && costs_out) {
        rc = pb_op_costs_alone_write(&c, &st, costs_out, &e);
        if (!rc)
            printf("\nop costs of each stage alone: %s (pipebench simulate --op-costs %s)\n",
                   costs_out, costs_out);
    }
    pb_partition_study_finish(&st);
    return rc ? pb_cli_fail(e.msg) : PB_EXIT_OK;
}
