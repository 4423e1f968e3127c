/* harness/cli/cli_trace.c — `pipebench trace RUN --out FILE.json`: one epoch of a run's op
 * timeline as a Chrome trace for Perfetto (plots/trace.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/cli.h"
#include "harness/base/args.h"
#include "harness/base/out_path.h"
#include "results/results.h"
#include "plots/trace.h"

static const char usage[] =
    "usage: pipebench trace RUN --out FILE.json [--db FILE] [--epoch E]\n"
    "Writes run RUN's op events (F, B, U, I, W) of one epoch as a Chrome trace (JSON Trace\n"
    "Event Format): open it at https://ui.perfetto.dev or chrome://tracing. A track per\n"
    "device: per stage where each stage is its own device; with --chunks v (or zb-v,\n"
    "dualpipe-v) the device's chunks' ops on one track, named F3@1 (micro-batch 3 on local\n"
    "chunk 1). Flow arrows along the pipeline per micro-batch, times in microseconds;\n"
    "DualPipeV's overlapped pairs (run as F then B) in a slice F7@0+B3@1 over the two.\n"
    "  --out FILE   the trace to write\n"
    "  --db FILE    results database (default " PB_RESULTS_DEFAULT_DB ")\n"
    "  --epoch E    the epoch, numbered from 1 as run, show and --trace-epochs number\n"
    "               them (default the last one with events)\n";

int pb_cmd_trace(int argc, char **argv)
{
    if (pb_cli_once("trace", argc, argv, NULL, NULL))
        return PB_EXIT_USAGE;
    const char *db = PB_RESULTS_DEFAULT_DB, *out = NULL, *run = NULL;
    int epoch = -1;
    struct pb_err e;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return PB_EXIT_OK;
        }
        if (!strcmp(a, "--db") && v) {
            db = argv[++i];
        } else if (!strcmp(a, "--out") && v) {
            out = argv[++i];
        } else if (!strcmp(a, "--epoch") && v) {
            if (pb_arg_int("--epoch", argv[++i], &epoch, &e))
                return pb_cli_fail(e.msg);
            if (epoch < 1)
                return pb_cli_fail("--epoch counts from 1, as run and show number the epochs; "
                                   "leave it out for the last epoch with events");
            epoch--;
        } else if (a[0] != '-' && !run) {
            run = a;
        } else {
            fprintf(stderr, "pipebench: trace: unexpected argument '%s'%s\n%s", a,
                    a[0] == '-' && !v ? " (or a missing value)" : "", usage);
            return PB_EXIT_USAGE;
        }
    }
    char *end;
    long long id = run ? strtoll(run, &end, 10) : 0;
    if (!run || *end || id <= 0) {
        fprintf(stderr, "pipebench: trace needs a run id (a positive integer; `pipebench runs` "
                        "lists them)\n%s", usage);
        return PB_EXIT_USAGE;
    }
    if (!out) {
        fprintf(stderr, "pipebench: trace needs --out FILE.json\n%s", usage);
        return PB_EXIT_USAGE;
    }
    struct pb_trace_info info;
    if (pb_out_path_check("--out", out, db, &e))
        return pb_cli_fail(e.msg);
    if (pb_trace_write(db, id, epoch, out, &info, &e))
        return pb_cli_fail(e.msg);
    char held[64] = "";
    if (info.chunks > 1)
        snprintf(held, sizeof held, " (%d stages, %d chunks each)", info.stages, info.chunks);
    char pairs[48] = "";
    if (info.pairs)
        snprintf(pairs, sizeof pairs, ", %d overlapped pairs", info.pairs);
    printf("wrote %s: run %lld, epoch %d, %d devices%s, %d slices, %d flows%s\n", out, id,
           info.epoch + 1, info.devices, held, info.slices, info.flows, pairs);
    return PB_EXIT_OK;
}
