/* harness/cli/cli_sweep.c — `pipebench sweep FILE`: runs the configurations of a sweep file
 * (sweep.h) that the results database does not hold finished yet, one at a time or N
 * processes at once (batch.h), and sums up how they ended. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/driver/batch.h"
#include "harness/cli/cli.h"
#include "harness/base/args.h"
#include "harness/driver/sweep.h"

static void sweep_usage(FILE *f)
{
    fprintf(f,
        "usage: pipebench sweep FILE [--jobs N] [--db FILE] [--dry-run] [--quiet]\n"
        "Runs every configuration of a sweep file and logs each to the results database.\n"
        "Configurations the database already holds finished are skipped: running a sweep\n"
        "again resumes it.\n\n"
        "  --jobs N        runs at once, each in its own process with cores / N threads\n"
        "                  (default 1)\n"
        "  --db FILE       results database (default: the file's [run] db, else\n"
        "                  %s)\n"
        "  --dry-run       list the configurations and which are finished; run nothing\n"
        "  --quiet         no progress: only runs that went wrong and the closing count\n\n"
        "A sweep file is INI (; or # starts a comment line):\n\n"
        "  [grid]                   ; comma-separated lists: one run per combination\n"
        "  schedule = gpipe, pipedream, pipeoptim\n"
        "  optimizer = sgdm, adam\n"
        "  model = mlp\n"
        "  stages = 4\n"
        "  batch = 64, 256          ; samples per update, for every schedule (--batch)\n"
        "  microbatches = 4, 8      ; M: gpipe, pipedream-2bw, xpipe (the others run once)\n"
        "  seed = 1, 2, 3\n"
        "  lr = 0.01, 0.03\n"
        "  [run]                    ; fixed: any option of pipebench run, without dashes\n"
        "  epochs = 3\n"
        "  limit-train = 6000\n"
        "  microbatch-size = 32\n"
        "  nesterov = on            ; switches take on or off\n\n"
        "[grid] takes any option of pipebench run but db and quiet (dataset, batch, epochs,\n"
        "partition with hand-set bounds as 0:3:5:9, devices as 0:1, variant, a switch as on,\n"
        "off...); a list may go on over indented lines. The configurations vary model,\n"
        "preset, partition, schedule, optimizer, stages, microbatches and lr slowest, in this\n"
        "order, then the file's other keys in its order, the seed fastest. A key left out\n"
        "takes its value from [run], else run's default. Every value is checked, with its\n"
        "line, and every configuration as pipebench run would, before anything runs; a\n"
        "schedule x optimizer pair the schedule cannot run (spectrain with adam) is\n"
        "skipped. A configuration is finished when the database holds a run of it with\n"
        "status done or diverged (the same configuration as `pipebench show` prints it,\n"
        "but for --threads), repeat by repeat with repeat = N (each configuration's N\n"
        "repeats are runs of their own, repeat 0 of every configuration first; repeat takes\n"
        "one value); an interrupted or failed run that left a resume state is\n"
        "continued from it (under its id and threads), other failed and interrupted runs\n"
        "are run again. A failed run does not stop the sweep. Two copies of a sweep on\n"
        "one database split it: each configuration runs under a claim, and one claimed or\n"
        "finished by the other copy is skipped. SIGINT, SIGTERM or SIGHUP starts no other\n"
        "run and lets the running ones finish their epoch with their resume state (a\n"
        "second signal stops them now).\n"
        "Exit status: 0 when every run is done, 1 when one failed or diverged, 2 for a bad\n"
        "sweep file (then nothing runs) or a bad environment, 130 when a signal stopped it.\n",
        PB_RESULTS_DEFAULT_DB);
}

struct args {
    const char *file, *db;
    int jobs;
    bool dry_run, quiet;
};

/* Returns 0, 1 for --help, or PB_EXIT_USAGE after a message. */
static int parse(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        {"jobs", required_argument, 0, 'j'},
        {"db", required_argument, 0, 'd'},
        {"dry-run", no_argument, 0, 'n'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    struct pb_err e;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'h')
            return 1;
        if (opt == 'j' && pb_arg_int("--jobs", optarg, &a->jobs, &e))
            return pb_cli_fail(e.msg);
        if (opt == 'j' && a->jobs < 1)
            return pb_cli_fail("--jobs must be at least 1");
        if (opt == 'd')
            a->db = optarg;
        if (opt == 'n')
            a->dry_run = true;
        if (opt == 'q')
            a->quiet = true;
        if (opt == '?' || opt == ':') {
            fprintf(stderr, "pipebench sweep: unknown option or missing value: '%s' (pipebench "
                            "sweep --help lists the options)\n", argv[optind - 1]);
            return PB_EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "pipebench sweep: %s (usage: pipebench sweep FILE [--jobs N] "
                        "[--db FILE])\n", argc == optind ? "name the sweep file" :
                        "give one sweep file");
        return PB_EXIT_USAGE;
    }
    a->file = argv[optind];
    return 0;
}

void pb_cli_sweep_errors(const struct pb_sweep *s, const char *file, const struct pb_err *e)
{
    if (!s->nerrors)
        fprintf(stderr, "pipebench: %s\n", e->msg);
    for (int i = 0; i < s->nerrors; i++) {
        const struct pb_sweep_error *er = &s->errors[i];
        if (er->line)
            fprintf(stderr, "pipebench: %s:%d: %s\n", file, er->line, er->msg);
        else
            fprintf(stderr, "pipebench: %s: %s\n", file, er->msg);
    }
    if (s->nerrors)
        fprintf(stderr, "pipebench: nothing was run; fix the sweep file (pipebench sweep "
                        "--help describes it)\n");
}

static void print_plan(const struct pb_sweep *s, const bool *done, int ndone, bool list)
{
    if (s->nunsupported)
        printf("sweep: leaving out %d configurations whose schedule cannot run their "
               "optimizer (%s)\n", s->nunsupported, s->unsupported_note);
    if (s->n > s->nconfigs)
        printf("sweep: %d configurations, %d runs with their repeats, %d finished already, %d to "
               "run; results in %s\n", s->nconfigs, s->n, ndone, s->n - ndone, s->items[0].cfg.db);
    else
        printf("sweep: %d configurations, %d finished already, %d to run; results in %s\n", s->n,
               ndone, s->n - ndone, s->items[0].cfg.db);
    for (int i = 0; list && i < s->n; i++)
        printf("  %s: %s\n", s->items[i].label, done[i] ? "finished" : "to run");
}

static int status_of(const struct pb_batch_totals *t)
{
    if (t->stopped)
        return PB_EXIT_INTERRUPTED;
    if (t->errors)
        return PB_EXIT_USAGE;
    return t->failed || t->diverged || t->interrupted || t->not_started ? PB_EXIT_RUN
                                                                        : PB_EXIT_OK;
}

static int sweep(const struct args *a)
{
    struct pb_sweep s;
    struct pb_err e;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cores / a->jobs > 0 ? (int)(cores / a->jobs) : 1;
    if (pb_sweep_load(&s, a->file, a->db, threads, &e)) {
        pb_cli_sweep_errors(&s, a->file, &e);
        pb_sweep_finish(&s);
        return PB_EXIT_USAGE;
    }
    bool *done = pb_xcalloc((size_t)s.n, sizeof *done);
    int rc = PB_EXIT_USAGE;
    if (pb_sweep_finished(&s, done, !a->dry_run, &e)) {
        pb_cli_fail(e.msg);
        goto out;
    }
    int ndone = 0;
    for (int i = 0; i < s.n; i++)
        ndone += done[i];
    if (!a->quiet || a->dry_run)
        print_plan(&s, done, ndone, a->dry_run);
    rc = PB_EXIT_OK;
    if (a->dry_run || ndone == s.n)
        goto out;
    struct pb_batch_item *pending = pb_xcalloc((size_t)(s.n - ndone), sizeof *pending);
    int n = 0;
    for (int i = 0; i < s.n; i++)
        if (!done[i])
            pending[n++] = s.items[i];
    for (int i = 0; i < n; i++)
        pending[i].cfg.quiet = a->quiet;
    struct pb_batch_totals t;
    pb_batch_run(pending, n, a->jobs, "sweep", &t);
    printf("sweep: %d runs: %d done, %d diverged, %d failed, %d errors", n, t.done, t.diverged,
           t.failed, t.errors);
    if (t.elsewhere)
        printf(", %d skipped (another process runs them or has finished them)", t.elsewhere);
    if (t.interrupted || t.not_started)
        printf(", %d interrupted, %d not started (run the sweep again to go on)",
               t.interrupted, t.not_started);
    printf("\n");
    free(pending);
    rc = status_of(&t);
out:
    free(done);
    pb_sweep_finish(&s);
    return rc;
}

int pb_cmd_sweep(int argc, char **argv)
{
    struct args a = {.jobs = 1};
    int rc = parse(argc, argv, &a);
    if (rc == 1) {
        sweep_usage(stdout);
        return PB_EXIT_OK;
    }
    return rc ? rc : sweep(&a);
}
