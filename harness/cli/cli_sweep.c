/* harness/cli/cli_sweep.c — `pipebench sweep FILE`: runs the configurations of a sweep file
 * (sweep.h) that the results database does not hold finished yet, one at a time or N
 * processes at once (batch.h), and sums up how they ended. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/driver/batch.h"
#include "harness/driver/claim.h"
#include "harness/cli/cli.h"
#include "harness/base/args.h"
#include "harness/driver/sweep.h"

static void sweep_usage(FILE *f)
{
    fprintf(f,
        "usage: pipebench sweep FILE [--jobs N] [--db FILE] [--dry-run] [--quiet]\n"
        "                            [--hostfile FILE] [--task I] [--emit slurm]\n"
        "Runs every configuration of a sweep file and logs each to the results database.\n"
        "Configurations the database already holds finished are skipped: running a sweep\n"
        "again resumes it.\n\n"
        "  --jobs N        runs at once, each in its own process with cores / N threads\n"
        "                  (default 1); where their stage threads then outnumber the\n"
        "                  cores it says so once: every timing will carry a dagger\n"
        "  --db FILE       results database (default: the file's [run] db, else\n"
        "                  %s)\n"
        "  --dry-run       list the configurations and which are finished; run nothing\n"
        "  --quiet         no progress: only runs that went wrong and the closing count\n"
        "  --hostfile FILE mpirun's host file for the configurations of executor = mpi\n"
        "                  (default: their D ranks on this host)\n"
        "  --task I        run only run I of the sweep (0-based, the --dry-run order), under\n"
        "                  the same claim: a Slurm array task\n"
        "  --emit slurm    print a Slurm job-array script instead of running: one array task\n"
        "                  per run, each `pipebench sweep FILE --task I` on the database\n\n"
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
        "executor = mpi starts each configuration as `mpirun -np D pipebench run ...`\n"
        "(one rank per device: D / v with v chunks; --hostfile passed on) under its\n"
        "claim, resumed and interrupted as the others (an interrupted one continues from its\n"
        "resume state as `mpirun -np D pipebench resume`).\n"
        "[grid] takes any option of pipebench run but db and quiet (dataset, batch, epochs,\n"
        "partition with hand-set bounds as 0:3:5:9, devices as 0:1, variant, a switch as on,\n"
        "off...); a list may go on over indented lines. The configurations vary model,\n"
        "preset, partition, schedule, optimizer, stages, microbatches and lr slowest, in this\n"
        "order, then the file's other keys in its order, the seed fastest. A key left out\n"
        "takes its value from [run], else run's default: without batch or microbatch-size,\n"
        "batch = " PB_DEFAULT_BATCH " (every schedule the same samples per update; a run\n"
        "recorded before this default with micro-batches of 64 counts as finished for a\n"
        "schedule of one micro-batch per update, the same training, and not for those\n"
        "that sum M, now M of 64 / M). Every value is checked, with its\n"
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
    const char *file, *db, *hostfile, *emit;
    int jobs, task;   /* task: -1 for all */
    bool dry_run, quiet;
};

/* sweep's options, for getopt_long and for pb_cli_once's abbreviations */
static const struct option sweep_options[] = {
    {"jobs", required_argument, 0, 'j'},
    {"db", required_argument, 0, 'd'},
    {"dry-run", no_argument, 0, 'n'},
    {"quiet", no_argument, 0, 'q'},
    {"hostfile", required_argument, 0, 'H'},
    {"task", required_argument, 0, 't'},
    {"emit", required_argument, 0, 'e'},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

/* Returns 0, 1 for --help, or PB_EXIT_USAGE after a message. */
static int parse(int argc, char **argv, struct args *a)
{
    struct pb_err e;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", sweep_options, NULL)) != -1) {
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
        if (opt == 'H')
            a->hostfile = optarg;
        if (opt == 't' && pb_arg_int("--task", optarg, &a->task, &e))
            return pb_cli_fail(e.msg);
        if (opt == 't' && a->task < 0)
            return pb_cli_fail("--task is a run's index in the sweep, from 0 (`pipebench sweep "
                               "FILE --dry-run` lists them in order)");
        if (opt == 'e' && strcmp(optarg, "slurm"))
            return pb_cli_fail("--emit takes slurm (a Slurm job-array script, one task per "
                               "run of the sweep)");
        if (opt == 'e')
            a->emit = optarg;
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

void pb_cli_sweep_errors(const struct pb_sweep *s, const char *file, const struct pb_err *e,
                         const char *who, bool advice)
{
    if (!s->nerrors)
        fprintf(stderr, "%s: %s\n", who, e->msg);
    for (int i = 0; i < s->nerrors; i++) {
        const struct pb_sweep_error *er = &s->errors[i];
        if (er->line)
            fprintf(stderr, "%s: %s:%d: %s\n", who, file, er->line, er->msg);
        else
            fprintf(stderr, "%s: %s: %s\n", who, file, er->msg);
    }
    if (s->nerrors && advice)
        fprintf(stderr, "%s: nothing was run; fix the sweep file (pipebench sweep --help "
                        "describes it)\n", who);
}

void pb_cli_warn_shared(const char *who, const struct pb_batch_item *items, int n, int jobs)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = pb_batch_threads(items, n, jobs);
    if (jobs > 1 && threads > cores)
        printf("%s: --jobs %d runs %d stage threads at once on %ld cores: the runs share "
               "cores, so every throughput and bubble they record carries a \xe2\x80\xa0 "
               "(for timings run --jobs 1 with a core per stage; the sim- tables replay each "
               "run on one device per stage)\n", who, jobs, threads, cores);
}

/* "1 configuration", "2 configurations" */
static const char *plural(int n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

static void print_plan(const struct pb_sweep *s, const bool *done, int ndone, bool list)
{
    if (s->nunsupported)
        printf("sweep: leaving out %d %s whose schedule cannot run %s optimizer (%s)\n",
               s->nunsupported, plural(s->nunsupported, "configuration", "configurations"),
               plural(s->nunsupported, "its", "their"), s->unsupported_note);
    if (s->n > s->nconfigs)
        printf("sweep: %d %s, %d runs with their repeats, %d finished already, %d to "
               "run; results in %s\n", s->nconfigs,
               plural(s->nconfigs, "configuration", "configurations"), s->n, ndone,
               s->n - ndone, s->items[0].cfg.db);
    else
        printf("sweep: %d %s, %d finished already, %d to run; results in %s\n", s->n,
               plural(s->n, "configuration", "configurations"), ndone, s->n - ndone,
               s->items[0].cfg.db);
    if (list)   /* #I: the sweep's own index (--task I), not a run id of the database */
        printf("  (#I: the run's index in the sweep, as --task I takes it; run ids are the "
               "database's)\n");
    for (int i = 0; list && i < s->n; i++) {
        int64_t resume = 0;
        struct pb_err e;
        if (!done[i] && pb_claim_resumable(&s->items[i].cfg, &resume, &e))
            resume = 0;
        if (done[i])
            printf("  #%d %s: finished\n", i, s->items[i].label);
        else if (resume > 0)
            printf("  #%d %s: to resume (run %lld, from its resume state)\n", i,
                   s->items[i].label, (long long)resume);
        else
            printf("  #%d %s: to run\n", i, s->items[i].label);
    }
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
        pb_cli_sweep_errors(&s, a->file, &e, "pipebench", true);
        pb_sweep_finish(&s);
        return PB_EXIT_USAGE;
    }
    bool *done = pb_xcalloc((size_t)s.n, sizeof *done);
    int rc = PB_EXIT_USAGE;
    if (a->task >= s.n) {
        fprintf(stderr, "pipebench: --task %d: the sweep %s has %d %s, 0 to %d (`pipebench "
                        "sweep %s --dry-run` lists them)\n", a->task, a->file, s.n,
                plural(s.n, "run", "runs"), s.n - 1, a->file);
        goto out;
    }
    if (a->hostfile && access(a->hostfile, R_OK)) {
        fprintf(stderr, "pipebench: cannot read the --hostfile %s: %s; give mpirun's host "
                        "file (one host per line, slots=N)\n", a->hostfile, strerror(errno));
        goto out;
    }
    if (a->emit) {
        rc = pb_cli_emit_slurm(&s, a->file, a->hostfile, stdout) ? PB_EXIT_USAGE : PB_EXIT_OK;
        goto out;
    }
    if (pb_sweep_finished(&s, done, !a->dry_run, &e)) {
        pb_cli_fail(e.msg);
        goto out;
    }
    int ndone = 0;
    for (int i = 0; i < s.n; i++)
        ndone += done[i];
    rc = PB_EXIT_OK;
    if (a->task >= 0) {   /* one run of the sweep (a Slurm array task) */
        if (done[a->task]) {
            printf("sweep: run %d (%s) is finished already; results in %s\n", a->task,
                   s.items[a->task].label, s.items[a->task].cfg.db);
            goto out;
        }
        memset(done, 1, (size_t)s.n * sizeof *done);
        done[a->task] = false;
        ndone = s.n - 1;
    } else if (!a->quiet || a->dry_run) {
        print_plan(&s, done, ndone, a->dry_run);
    }
    if (a->dry_run || ndone == s.n)
        goto out;
    struct pb_batch_item *pending = pb_xcalloc((size_t)(s.n - ndone), sizeof *pending);
    int n = 0;
    for (int i = 0; i < s.n; i++)
        if (!done[i])
            pending[n++] = s.items[i];
    for (int i = 0; i < n; i++) {
        pending[i].cfg.quiet = a->quiet;
        pending[i].hostfile = a->hostfile;
    }
    struct pb_batch_totals t;
    pb_cli_warn_shared("sweep", pending, n, a->jobs);
    pb_batch_run(pending, n, a->jobs, "sweep", &t);
    printf("sweep: %d %s: %d done, %d diverged, %d failed, %d %s", n, plural(n, "run", "runs"),
           t.done, t.diverged, t.failed, t.errors, plural(t.errors, "error", "errors"));
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
    if (pb_cli_once("sweep", argc, argv, sweep_options, NULL))
        return PB_EXIT_USAGE;
    struct args a = {.jobs = 1, .task = -1};
    int rc = parse(argc, argv, &a);
    if (rc == 1) {
        sweep_usage(stdout);
        return PB_EXIT_OK;
    }
    return rc ? rc : sweep(&a);
}
