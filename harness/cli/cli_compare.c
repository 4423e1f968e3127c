/* harness/cli/cli_compare.c — `pipebench compare`: runs the schedules × optimizers on one
 * workload (run's flags set it), prints the comparison tables of compare.h from the
 * database and writes the figures (plot.h) for each optimizer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/driver/batch.h"
#include "harness/cli/cli.h"
#include "harness/base/args.h"
#include "harness/driver/compare.h"
#include "harness/driver/finished.h"
#include "plots/plot.h"
#include "harness/ir/program.h"
#include "harness/driver/run_flags.h"
#include "harness/base/strlist.h"
#include "schedules/registry.h"
#include "workloads/models/workload.h"

enum { O_SCHEDULES = PB_RUN_FLAGS_EXTRA, O_OPTIMIZERS, O_TARGET, O_OUT, O_FORCE, O_HOSTFILE };

static const struct option compare_options[] = {
    {"schedules", required_argument, 0, O_SCHEDULES},
    {"optimizers", required_argument, 0, O_OPTIMIZERS},
    {"target", required_argument, 0, O_TARGET},
    {"out", required_argument, 0, O_OUT},
    {"force", no_argument, 0, O_FORCE},
    {"hostfile", required_argument, 0, O_HOSTFILE},
    {0, 0, 0, 0},
};

static void compare_usage(FILE *f)
{
    fprintf(f,
        "usage: pipebench compare [options]\n"
        "Runs every schedule on one workload with each optimizer, prints a comparison read\n"
        "back from the results database and draws the figures.\n\n"
        "  --schedules LIST        comma-separated (default: all of `pipebench list`)\n"
        "  --optimizers LIST       comma-separated (default %s); a schedule that cannot\n"
        "                          run an optimizer is skipped for it (spectrain: SGD only)\n"
        "  --target ACC            validation accuracy, a fraction, for the \"epochs to\" and\n"
        "                          \"s to\" columns (default %.2f)\n"
        "  --out DIR               figures, DIR/OPTIMIZER/NAME.png (default %s)\n"
        "  --force                 run every configuration, also those the database holds a\n"
        "                          finished (done or diverged) run of already\n"
        "  --hostfile FILE         mpirun's host file for --executor mpi (default: the ranks\n"
        "                          on this host, oversubscribed as needed)\n\n"
        "The default workload is lenet on Fashion-MNIST with D = 4 for %d epochs of the\n"
        "first %d training samples, validated on the first %d test samples, with the\n"
        "threads executor (one thread per stage): eleven runs in about three minutes on\n"
        "two cores. Every schedule updates once per --batch %s samples unless --batch or\n"
        "--microbatch-size is given (semantics §1.5): the same updates per epoch on the\n"
        "same samples; --microbatch-size B alone gives each schedule micro-batches of B\n"
        "(the accumulating ones then update every M of them). As sweep does, compare\n"
        "runs only the configurations the database holds no finished run of (the same\n"
        "configuration but the thread count) and shows the recorded ones; --force reruns.\n"
        "--repeat N runs each configuration N times with the same seed (repeat 0 of every\n"
        "configuration first), resumed repeat by repeat: a larger N adds the repeats\n"
        "missing; a row then shows the median samples/s and bubble over the repeats.\n"
        "--executor mpi starts each configuration as `mpirun -np D pipebench run ...` (D / v\n"
        "ranks with v chunks per device), as a sweep does (an interrupted one leaves its\n"
        "resume state, as any run: `mpirun -np D pipebench resume RUN` continues it).\n"
        "The options of `pipebench run` below, but\n"
        "--schedule and --optimizer, apply to all the runs (the defaults they list are\n"
        "run's; compare's are the above). The runs go to --db (default\n"
        "%s).\n"
        "Columns (the views of results/views.sql, as `pipebench report` prints them): best\n"
        "and final validation accuracy; epochs and training seconds until the first epoch\n"
        "at the target; samples/s (the median over the epochs but the first, the warm-up,\n"
        "of training samples over wall time); bubble (a device's idle time over its\n"
        "makespan, summed over the epochs but the first, mean over the devices); F and B lag (mean versions by which a forward's or backward's weights\n"
        "differ from the synchronous run's); pred err (mean ||W_hat - W|| / ||W||); peak\n"
        "memory by kind, each stage's peak summed over the stages. Exit status: 0 when every\n"
        "run is done, 1 when one failed or diverged (it is in the table), 2 on bad input.\n\n"
        "Options of pipebench run:\n",
        PB_COMPARE_OPTIMIZERS, PB_COMPARE_TARGET, PB_COMPARE_OUTDIR, PB_COMPARE_EPOCHS,
        PB_COMPARE_LIMIT_TRAIN, PB_COMPARE_LIMIT_VAL, PB_DEFAULT_BATCH, PB_RESULTS_DEFAULT_DB);
    pb_run_flags_usage(f);
}

struct opts {
    struct pb_strlist schedules, optimizers;
    float target;
    const char *out, *hostfile;
    bool force;
};

static int on_option(void *ctx, int opt, const char *arg, struct pb_err *e)
{
    struct opts *o = ctx;
    switch (opt) {
    case O_SCHEDULES:
        pb_strlist_finish(&o->schedules);
        return pb_strlist_add(&o->schedules, arg, "--schedules", e);
    case O_OPTIMIZERS:
        pb_strlist_finish(&o->optimizers);
        return pb_strlist_add(&o->optimizers, arg, "--optimizers", e);
    case O_TARGET:
        if (pb_arg_float("--target", arg, &o->target, e))
            return -1;
        if (!(o->target > 0 && o->target <= 1))
            return pb_err_set(e, "--target is a fraction in (0, 1] (got %s; for 80%% write "
                                 "0.80)", arg);
        return 0;
    case O_FORCE:
        o->force = true;
        return 0;
    case O_HOSTFILE:
        if (access(arg, R_OK))
            return pb_err_set(e, "cannot read the --hostfile %s: %s; give mpirun's host file "
                                 "(one host per line, slots=N)", arg, strerror(errno));
        o->hostfile = arg;
        return 0;
    default:
        o->out = arg;
        return 0;
    }
}

/* Names valid in their registries, so a typo fails before anything runs. */
static int check_names(const struct opts *o, struct pb_err *e)
{
    for (int i = 0; i < o->schedules.n; i++)
        if (!pb_schedule_find(o->schedules.items[i], e))
            return pb_err_prefix(e, "--schedules: ");
    for (int i = 0; i < o->optimizers.n; i++) {
        struct pb_optim_cfg oc;
        if (pb_optim_cfg_from_name(&oc, o->optimizers.items[i], e))
            return pb_err_prefix(e, "--optimizers: ");
    }
    return 0;
}

/* The runs: optimizer by optimizer, schedules in the order given; pairs a schedule
 * cannot run are left out with a note. Returns the count, or -1 with e. */
static int plan(const struct opts *o, const struct pb_run_flags *flags,
                struct pb_batch_item *items, struct pb_err *e)
{
    int n = 0;
    for (int j = 0; j < o->optimizers.n; j++)
        for (int i = 0; i < o->schedules.n; i++) {
            struct pb_run_flags f = *flags;
            pb_compare_flag_defaults(&f);
            pb_run_flags_set(&f, "schedule", o->schedules.items[i], NULL);
            pb_run_flags_set(&f, "optimizer", o->optimizers.items[j], NULL);
            pb_run_flags_default_batch(&f);
            struct pb_batch_item *it = &items[n];
            memset(it, 0, sizeof *it);
            pb_run_cfg_defaults(&it->cfg);
            snprintf(it->label, sizeof it->label, "%s %s", o->schedules.items[i],
                     o->optimizers.items[j]);
            bool unsupported;
            if (pb_run_flags_apply(&f, &it->cfg, e))
                return -1;
            it->flags = f;   /* the ranks' options under the mpi executor (batch_mpi.h) */
            it->hostfile = o->hostfile;
            if (pb_batch_check(&it->cfg, &unsupported, e)) {
                if (!unsupported)
                    return pb_err_prefix(e, "%s: ", it->label);
                printf("compare: skipping %s: %s\n", it->label, e->msg);
                continue;
            }
            n++;
        }
    if (n == 0)
        return pb_err_set(e, "no schedule in --schedules can run an optimizer in --optimizers");
    return n;
}

/* The n configurations of plan, each `repeats` times (every item's cfg.repeats): repeat
 * r of configuration k is item r * n + k, so every configuration has run once before
 * any runs again and a drift of the machine's speed touches all of them alike. Returns
 * the items (free() them). */
static struct pb_batch_item *with_repeats(const struct pb_batch_item *items, int n,
                                          int repeats)
{
    struct pb_batch_item *all = pb_xcalloc((size_t)n * (size_t)repeats, sizeof *all);
    for (int r = 0; r < repeats; r++)
        for (int k = 0; k < n; k++) {
            struct pb_batch_item *it = &all[r * n + k];
            *it = items[k];
            it->cfg.repeat = r;
            if (repeats > 1) {
                size_t len = strlen(it->label);
                snprintf(it->label + len, sizeof it->label - len, " repeat %d", r);
            }
        }
    return all;
}

/* The runs of one optimizer into DIR/OPTIMIZER; the figures show pipeoptim's run (the
 * paper's method) where compare made one, else the optimizer's first finished run. */
static int figures(const struct opts *o, const char *db, const struct pb_batch_item *items,
                   int n, const char *optimizer, struct pb_err *e)
{
    int64_t show = 0;
    for (int i = 0; i < n; i++) {
        const struct pb_batch_item *it = &items[i];
        if (strcmp(it->cfg.optimizer, optimizer) || it->exit_status != PB_EXIT_OK)
            continue;
        if (!show || !strcmp(it->cfg.schedule, "pipeoptim"))
            show = it->run_id;
    }
    if (!show) {
        printf("figures for %s: none, no run finished\n", optimizer);
        return 0;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", o->out, optimizer);
    if (pb_plot_figure(db, "all", dir, "png", show, e))
        return pb_err_prefix(e, "figures for %s: ", optimizer);
    printf("figures for %s: %s/\n", optimizer, dir);
    return 0;
}

/* Fails early when the figures' folder cannot be made (mkdir -p). */
static int check_outdir(const char *dir, struct pb_err *e)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
        return pb_err_set(e, "--out: path too long");
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p)
            continue;
        char saved = *p;
        *p = 0;
        struct stat st;
        if (mkdir(buf, 0777) && errno != EEXIST)
            return pb_err_set(e, "--out: cannot create %s: %s; pass a writable folder", buf,
                              strerror(errno));
        if (stat(buf, &st) || !S_ISDIR(st.st_mode))
            return pb_err_set(e, "--out: %s is not a folder; pass another --out", buf);
        if (!(*p = saved))
            return 0;
    }
}

/* The table: a row per configuration (of n, each with `repeats` items, with_repeats'
 * order), its status the first of its repeats that did not end done, else done; its
 * run is its first repeat's with a run, its throughput and bubble the median over the
 * repeats (compare.h). */
static int report(const struct opts *o, const struct pb_batch_item *items, int n, int repeats)
{
    struct pb_compare_row *rows = pb_xcalloc((size_t)n, sizeof *rows);
    int status = PB_EXIT_OK;
    struct pb_err e;
    for (int k = 0; k < n; k++) {
        struct pb_compare_row *r = &rows[k];
        const struct pb_batch_item *shown = &items[k], *with_run = NULL;
        for (int j = 0; j < repeats; j++) {
            const struct pb_batch_item *it = &items[j * n + k];
            int st = it->exit_status == PB_EXIT_USAGE ? PB_EXIT_USAGE
                     : it->exit_status != PB_EXIT_OK  ? PB_EXIT_RUN
                                                      : PB_EXIT_OK;
            status = st > status ? st : status;
            if (st != PB_EXIT_OK && shown->exit_status == PB_EXIT_OK)
                shown = it;
            if (!with_run && it->run_id > 0)
                with_run = it;
        }
        snprintf(r->schedule, sizeof r->schedule, "%s", shown->cfg.schedule);
        snprintf(r->optimizer, sizeof r->optimizer, "%s", shown->cfg.optimizer);
        snprintf(r->status, sizeof r->status, "%s",
                 shown->run_id > 0           ? pb_run_status_names[shown->status]
                 : !shown->started           ? "not run"
                 : shown->exit_status == -1  ? "crashed"
                                             : "error");
        char keep[sizeof r->status];
        snprintf(keep, sizeof keep, "%s", r->status);
        if (with_run && pb_compare_fetch(with_run->cfg.db, with_run->run_id, o->target, r, &e)) {
            fprintf(stderr, "pipebench: %s\n", e.msg);
            status = PB_EXIT_USAGE;
        }
        snprintf(r->status, sizeof r->status, "%s", keep);
    }
    printf("\n");
    if (repeats > 1)
        printf("Each configuration ran %d times with the same seed (--repeat): samples/s and "
               "bubble are the median over its repeats.\n", repeats);
    pb_compare_print(stdout, rows, n, o->target);
    bool first = true;
    for (int i = 0; i < n * repeats; i++)
        if (items[i].exit_status != PB_EXIT_OK) {
            printf("%s%s: %s\n", first ? "\n" : "", items[i].label, items[i].message);
            first = false;
        }
    printf("\n");
    free(rows);
    for (int j = 0; j < o->optimizers.n; j++)
        if (figures(o, items[0].cfg.db, items, n * repeats, o->optimizers.items[j], &e)) {
            fprintf(stderr, "pipebench: %s\n", e.msg);
            status = PB_EXIT_USAGE;
        }
    return status;
}

/* The items the database holds a finished run of (finished.h) take that run as theirs,
 * as if it had just run; returns how many, or -1 with e. */
static int reuse(const struct opts *o, struct pb_batch_item *items, int n, struct pb_err *e)
{
    int64_t *ids = pb_xcalloc((size_t)n, sizeof *ids);
    int count = 0;
    if (pb_finished_runs(items[0].cfg.db, items, n, ids, true, e)) {
        free(ids);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        struct pb_batch_item *it = &items[i];
        struct pb_compare_row row;
        if (!ids[i])
            continue;
        if (pb_compare_fetch(it->cfg.db, ids[i], o->target, &row, e)) {
            free(ids);
            return -1;
        }
        it->run_id = ids[i];
        it->started = true;
        it->status = strcmp(row.status, "done") ? PB_RUN_DIVERGED : PB_RUN_DONE;
        it->exit_status = it->status == PB_RUN_DONE ? PB_EXIT_OK : PB_EXIT_RUN;
        snprintf(it->message, sizeof it->message, "diverged (run %lld, recorded before)",
                 (long long)ids[i]);
        count++;
    }
    free(ids);
    return count;
}

/* Runs the items without a run yet; returns how many were left unstarted, -1 when a
 * signal stopped the batch (compare then exits 130). */
static int run_missing(struct pb_batch_item *items, int n)
{
    struct pb_batch_item *to_run = pb_xcalloc((size_t)n, sizeof *to_run);
    int *where = pb_xcalloc((size_t)n, sizeof *where), m = 0;
    for (int i = 0; i < n; i++)
        if (!items[i].run_id) {
            where[m] = i;
            to_run[m++] = items[i];
        }
    struct pb_batch_totals t = {0};
    if (m)
        pb_batch_run(to_run, m, 1, "compare", &t);
    for (int j = 0; j < m; j++)
        items[where[j]] = to_run[j];
    free(to_run);
    free(where);
    return t.stopped ? -1 : t.not_started;   /* -1: a signal stopped it */
}

static int compare(struct opts *o, const struct pb_run_flags *flags)
{
    struct pb_err e;
    if (pb_run_flags_get(flags, "schedule") || pb_run_flags_get(flags, "optimizer"))
        return pb_cli_fail("compare runs several schedules and optimizers: use --schedules "
                           "LIST and --optimizers LIST");
    if (!o->schedules.n)
        for (int i = 0; pb_schedules[i]; i++)
            pb_strlist_add(&o->schedules, pb_schedules[i]->name, "schedules", NULL);
    if (!o->optimizers.n)
        pb_strlist_add(&o->optimizers, PB_COMPARE_OPTIMIZERS, "optimizers", NULL);
    if (check_names(o, &e))
        return pb_cli_fail(e.msg);
    struct pb_batch_item *items =
        pb_xcalloc((size_t)(o->schedules.n * o->optimizers.n), sizeof *items);
    int n = plan(o, flags, items, &e);
    if (n < 0 || check_outdir(o->out, &e)) {
        free(items);
        return pb_cli_fail(e.msg);
    }
    int repeats = items[0].cfg.repeats, total = n * repeats;
    struct pb_batch_item *all = with_repeats(items, n, repeats);
    free(items);
    const struct pb_run_cfg *c = &all[0].cfg;
    int nreused = o->force ? 0 : reuse(o, all, total, &e);
    if (nreused < 0) {
        free(all);
        return pb_cli_fail(e.msg);
    }
    const char *dataset = c->dataset ? c->dataset : pb_workload_find(c->model, NULL)->dataset;
    char rep[80] = "";
    if (repeats > 1)
        snprintf(rep, sizeof rep, " (%d %s × %d repeats)", n,
                 n == 1 ? "configuration" : "configurations", repeats);
    printf("compare: %d %s%s of %s on %s, D = %d, %d %s; results in %s\n", total,
           total == 1 ? "run" : "runs", rep, c->model, dataset, c->stages, c->epochs,
           c->epochs == 1 ? "epoch" : "epochs", c->db);
    if (nreused)
        printf("compare: %d of them finished already (shown as recorded; --force reruns "
               "them)\n", nreused);
    int not_started = run_missing(all, total);
    int status = report(o, all, n, repeats);
    if (not_started < 0)
        status = PB_EXIT_INTERRUPTED;
    else if (not_started && status == PB_EXIT_OK)
        status = PB_EXIT_RUN;
    free(all);
    return status;
}

int pb_cmd_compare(int argc, char **argv)
{
    struct opts o = {.target = (float)PB_COMPARE_TARGET, .out = PB_COMPARE_OUTDIR};
    struct pb_run_flags flags = {0};
    struct pb_err e;
    int rc = pb_run_flags_parse(argc, argv, &flags, compare_options, on_option, &o, &e);
    if (rc == 1) {
        compare_usage(stdout);
        rc = PB_EXIT_OK;
    } else if (rc) {
        fprintf(stderr, "pipebench compare: %s\n", e.msg);
        rc = PB_EXIT_USAGE;
    } else {
        rc = compare(&o, &flags);
    }
    pb_strlist_finish(&o.schedules);
    pb_strlist_finish(&o.optimizers);
    return rc;
}
