/* harness/cli/cli_program.c — `pipebench program`: prints a schedule's per-device op
 * programs in the text form of semantics §4, optionally with the weight version each F
 * and B reads (program.h, design §2.2). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/base/args.h"
#include "harness/cli/cli.h"
#include "harness/ir/program.h"
#include "schedules/registry.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pipebench program --schedule S --stages D [--length N] [--microbatches M]\n"
            "                         [--chunks v] [--variant V] [--optimizer O] [--versions]\n"
            "                         [--sync]\n\n"
            "Prints one line per stage, e.g. \"stage 0: F0 F1 F2 F3 B0 U F4 ...\";\n"
            "I3 and W3 are the split backward's input- and weight-gradient passes; with\n"
            "--chunks v one line per device, F3@1 the forward of micro-batch 3 on the\n"
            "device's local chunk 1, F7@0+B3@1 an overlapped pair (dualpipe-v)\n"
            "(docs/semantics.md §4 says what every schedule's ops read).\n\n"
            "  --schedule S      one of:");
    for (int i = 0; pb_schedules[i]; i++)
        fprintf(f, "%s %s", i ? "," : "", pb_schedules[i]->name);
    fprintf(f,
            "\n"
            "  --stages D        pipeline stages, D >= 1\n"
            "  --length N        micro-batches in the epoch (default 8)\n"
            "  --microbatches M  micro-batches per update (the optimizer step) for gpipe, 1f1b,\n"
            "                    zb-h1, zb-h2, zb-v, dualpipe-v, pipedream-2bw and xpipe\n"
            "                    (default D); the other schedules update per micro-batch\n"
            "  --chunks v        model chunks per device (interleaved): the D stages run on\n"
            "                    p = D / v devices, chunk c of device r is stage r + c·p;\n"
            "                    zb-v and dualpipe-v fix v = 2 in a V (stages r, 2p-1-r)\n"
            "  --variant V       a schedule's variant: pipeoptim and spectrain 'code',\n"
            "                    xpipe 'note' (default: the paper's form)\n"
            "  --optimizer O     sgd, sgdm, adam, adamw or rmsprop (default sgdm)\n"
            "  --versions        tag each F, B, I and W with the weights it reads: ':u' for\n"
            "                    W^(u), ':u+s' for weights predicted from W^(u) s updates\n"
            "                    ahead\n"
            "  --sync            with the versions, '|v': the version the synchronous run\n"
            "                    reads there (mini-batch j / updates per mini-batch)\n"
            "  --help            this text\n");
}

int pb_cmd_program(int argc, char **argv)
{
    static const struct option opts[] = {
        {"schedule", required_argument, NULL, 's'},
        {"stages", required_argument, NULL, 'd'},
        {"length", required_argument, NULL, 'n'},
        {"microbatches", required_argument, NULL, 'm'},
        {"variant", required_argument, NULL, 'v'},
        {"chunks", required_argument, NULL, 'c'},
        {"optimizer", required_argument, NULL, 'o'},
        {"versions", no_argument, NULL, 'V'},
        {"sync", no_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *sched_name = NULL, *opt_name = "sgdm";
    struct pb_pipe pipe = {.stages = 0, .length = 8, .microbatches = 0};
    bool have_m = false, have_d = false;
    int print = 0;
    struct pb_err e;
    int c;
    if (pb_cli_once("program", argc, argv, opts, NULL))
        return PB_EXIT_USAGE;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            sched_name = optarg;
            break;
        case 'd':
            if (pb_arg_int("--stages", optarg, &pipe.stages, &e))
                return pb_cli_fail(e.msg);
            have_d = true;
            break;
        case 'n':
            if (pb_arg_int("--length", optarg, &pipe.length, &e))
                return pb_cli_fail(e.msg);
            break;
        case 'm':
            if (pb_arg_int("--microbatches", optarg, &pipe.microbatches, &e))
                return pb_cli_fail(e.msg);
            have_m = true;
            break;
        case 'v':
            pipe.variant = optarg;
            break;
        case 'c':
            if (pb_arg_int("--chunks", optarg, &pipe.chunks, &e))
                return pb_cli_fail(e.msg);
            if (pipe.chunks < 1) {
                pb_err_set(&e, "--chunks must be at least 1 (got %d): the model chunks each "
                               "device holds", pipe.chunks);
                return pb_cli_fail(e.msg);
            }
            break;
        case 'o':
            opt_name = optarg;
            break;
        case 'V':
            print |= PB_PRINT_VERSIONS;
            break;
        case 'S':
            print |= PB_PRINT_VERSIONS | PB_PRINT_SYNC;
            break;
        case 'h':
            usage(stdout);
            return PB_EXIT_OK;
        default:
            usage(stderr);
            return PB_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        pb_err_set(&e, "program: unexpected argument '%s' (see pipebench program --help)",
                   argv[optind]);
        return pb_cli_fail(e.msg);
    }
    if (have_d && pipe.stages == 0) {   /* given, so not "required": out of range */
        pb_err_set(&e, "program: --stages must be between 1 and %d (got 0)", PB_MAX_STAGES);
        return pb_cli_fail(e.msg);
    }
    const struct pb_schedule *sch;
    if (pb_cli_pipe("program", sched_name, opt_name, have_m, &pipe, &sch, &e) ||
        pb_cli_pipe_whole("program", &pipe, &e))
        return pb_cli_fail(e.msg);
    struct pb_program *progs = pb_xcalloc((size_t)pipe.stages, sizeof *progs);
    if (pb_programs_build(sch, &pipe, progs, &e)) {
        free(progs);
        return pb_cli_fail(e.msg);
    }
    for (int k = 0; k < pb_pipe_devices(&pipe); k++)
        pb_program_print(stdout, &pipe, &progs[k], print);
    pb_programs_finish(progs, pipe.stages);
    free(progs);
    return PB_EXIT_OK;
}
