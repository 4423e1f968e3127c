/* harness/cli/cli_run.c — `pipebench run`: trains one configuration and logs it to the
 * results database, and `pipebench list`: the registries. */
#include <stdio.h>
#include <string.h>

#include "harness/cli/cli.h"
#include "harness/compute/backend.h"
#include "harness/compute/registry.h"
#include "schedules/registry.h"
#include "workloads/datasets/dataset.h"
#include "harness/ir/program.h"
#include "harness/driver/run.h"
#include "harness/driver/run_flags.h"
#include "harness/driver/sweep.h"
#include "workloads/models/workload.h"

static void run_usage(FILE *f)
{
    fprintf(f,
        "usage: pipebench run [--config FILE] [options]\n"
        "Trains a model with a pipeline schedule and logs it to the results database.\n\n"
        "  --config FILE           the run's options from a file in a sweep file's form: a\n"
        "                          [run] section of options without dashes (epochs = 3,\n"
        "                          nesterov = on), and [grid] keys of one value each; an\n"
        "                          option given here as well replaces the file's\n");
    pb_run_flags_usage(f);
}

enum { O_CONFIG = PB_RUN_FLAGS_EXTRA };

static int on_option(void *ctx, int opt, const char *arg, struct pb_err *e)
{
    (void)opt;
    (void)e;
    *(const char **)ctx = arg;
    return 0;
}

/* The flags of --config FILE (kept in *s) under those of the command line. */
static int with_config(const char *path, const struct pb_run_flags *cmdline,
                       struct pb_sweep *s, struct pb_run_flags *f)
{
    struct pb_err e;
    if (!pb_sweep_load_run(s, path, f, &e)) {
        pb_run_flags_overlay(f, cmdline);
        return 0;
    }
    pb_cli_sweep_errors(s, path, &e, "pipebench run", false);
    return -1;
}

int pb_cmd_run(int argc, char **argv)
{
    static const struct option extra[] = {
        {"config", required_argument, 0, O_CONFIG},
        {0, 0, 0, 0},
    };
    struct pb_run_flags cmdline = {0}, flags;
    struct pb_run_cfg c;
    struct pb_err e;
    const char *config = NULL;
    int rc = pb_run_flags_parse(argc, argv, &cmdline, extra, on_option, &config, &e);
    if (rc == 1) {
        run_usage(stdout);
        return PB_EXIT_OK;
    }
    if (rc) {
        fprintf(stderr, "pipebench run: %s\n", e.msg);
        return PB_EXIT_USAGE;
    }
    struct pb_sweep s = {0};
    flags = cmdline;
    if (config && with_config(config, &cmdline, &s, &flags)) {
        pb_sweep_finish(&s);
        return PB_EXIT_USAGE;
    }
    pb_run_flags_default_batch(&flags);
    pb_run_cfg_defaults(&c);
    rc = pb_run_flags_apply(&flags, &c, &e) ? pb_cli_fail(e.msg) : pb_cli_run_cfg(&c);
    pb_sweep_finish(&s);
    return rc;
}

/* Trains repeat c->repeat of c and says how it ended. */
static int run_one(const struct pb_run_cfg *c)
{
    struct pb_run_summary sum;
    struct pb_err e;
    int rc = pb_run(c, &sum, &e);
    if (rc == PB_EXIT_USAGE)
        return pb_cli_fail(e.msg);
    if (rc == PB_EXIT_RUN || rc == PB_EXIT_INTERRUPTED) {
        if (sum.run_id > 0)  /* under MPI, the rank that writes the results says it */
            fprintf(stderr, "pipebench: run %lld %s: %s\n", (long long)sum.run_id,
                    pb_run_status_names[sum.status], e.msg);
        return rc;
    }
    char rep[48] = "";
    if (c->resume_run > 0 && c->repeat > 0)
        snprintf(rep, sizeof rep, " (repeat %d)", c->repeat);
    else if (c->repeats > 1)
        snprintf(rep, sizeof rep, " (repeat %d of %d)", c->repeat, c->repeats);
    if (!c->quiet && sum.run_id > 0)
        printf("run %lld done%s: best val acc %.2f%%, final %.2f%%, %.1f s (results in %s)\n",
               (long long)sum.run_id, rep, 100 * sum.best_acc, 100 * sum.final_acc, sum.seconds,
               c->db);
    return PB_EXIT_OK;
}

int pb_cli_run_cfg(const struct pb_run_cfg *c)
{
    struct pb_run_cfg one = *c;
    int rc = PB_EXIT_OK;
    /* repeats c->repeat .. c->repeats - 1, one after another; the first that does not end
     * done ends the rest */
    for (int i = c->repeat; rc == PB_EXIT_OK && i < c->repeats; i++) {
        one.repeat = i;
        rc = run_one(&one);
    }
    return rc;
}

/* "    NAME  dataset, SHAPE, N parameters, B blocks[, a 4-stage cut]: summary" for each
 * preset of w (the default marked *), each built to count; SHAPE is "3xSxS, K-way head",
 * a classifier of sequences' "T tokens, V-word vocabulary, K-way head" or a translation
 * model's "2xT tokens, V-word vocabulary". */
static void list_presets(const struct pb_workload *w)
{
    for (const struct pb_preset *p = w->presets; p && p->name; p++) {
        struct pb_model m;
        struct pb_err e;
        if (w->build(&m, p, pb_preset_sample(p), p->classes, &e) ||
            pb_model_finalize(&m, 2, &e)) {
            printf("    %-6s (cannot be built: %s)\n", p->name, e.msg);
            continue;
        }
        char shape[64];
        if (p->sample == PB_SAMPLE_PAIR)
            snprintf(shape, sizeof shape, "2x%d tokens, %d-word vocabulary", p->steps, p->vocab);
        else if (p->sample == PB_SAMPLE_TOKENS)
            snprintf(shape, sizeof shape, "%d tokens, %d-word vocabulary, %d-way head", p->steps,
                     p->vocab, p->classes);
        else
            snprintf(shape, sizeof shape, "3x%dx%d, %d-way head", p->input_side, p->input_side,
                     p->classes);
        printf("    %-6s%s %s, %s, %zu parameters, %d blocks%s: %s\n", p->name,
               strcmp(p->name, PB_DEFAULT_PRESET) ? "" : "*", p->dataset, shape,
               pb_model_param_count(&m, 0, m.nblocks), m.nblocks,
               p->cut[0] ? ", a 4-stage cut" : "", p->summary);
        pb_model_finish(&m);
    }
}

int pb_cmd_list(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: pipebench list\nPrints the schedules, models, datasets and optimizers.\n");
        return PB_EXIT_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "pipebench list: unexpected argument '%s'\n", argv[1]);
        return PB_EXIT_USAGE;
    }
    printf("schedules (family; what the pipe needs: D stages, N micro-batches, M per "
           "update, v chunks per device):\n");
    static const char *const family[] = {"?", "synchronous", "asynchronous"};
    for (int i = 0; pb_schedules[i]; i++) {
        const struct pb_schedule *s = pb_schedules[i];
        char needs[48];
        if (s->chunks)  /* v fixed by the schedule, and its placement */
            snprintf(needs, sizeof needs, "D, N, M, v = %d%s", s->chunks,
                     s->placement == PB_PLACE_V ? " in a V" : "");
        else
            snprintf(needs, sizeof needs, "%s",
                     s->chunked ? "D, N, M, v" : s->uses_microbatches ? "D, N, M" : "D, N");
        printf("  %-14s [%s; %s] %s%s%s%s\n", s->name, family[pb_schedule_family(s)], needs,
               s->summary, *s->variants ? " (variants: " : "", s->variants,
               *s->variants ? ")" : "");
    }
    printf("models (presets: --preset NAME, * the default; semantics §5):\n");
    for (int i = 0; pb_workloads[i]; i++) {
        const struct pb_workload *w = pb_workloads[i];
        printf("  %-14s %s%s%s%s\n", w->name, w->summary, w->presets ? "" : " (",
               w->presets ? "" : w->dataset, w->presets ? "" : ")");
        list_presets(w);
    }
    printf("datasets:\n");
    for (int i = 0; pb_dataset_names[i]; i++)
        printf("  %-14s %s\n", pb_dataset_names[i], pb_dataset_summary(pb_dataset_names[i]));
    printf("optimizers:\n");
    printf("  %-14s %s\n", "sgd", "SGD (torch.optim.SGD; --momentum, --dampening, --nesterov)");
    printf("  %-14s %s\n", "sgdm", "SGD with momentum 0.9");
    printf("  %-14s %s\n", "adam", "Adam with L2 weight decay (torch.optim.Adam)");
    printf("  %-14s %s\n", "adamw", "AdamW, decoupled weight decay (torch.optim.AdamW)");
    printf("  %-14s %s\n", "rmsprop", "RMSprop (torch.optim.RMSprop; --alpha, --momentum)");
    printf("  %-14s %s\n", "nadam", "NAdam with decoupled weight decay (torch 2.x "
           "torch.optim.NAdam, decoupled_weight_decay=True; --momentum-decay)");
    printf("backends:\n");
    for (const struct pb_backend_reg *r = pb_backends; r->name; r++)
        printf("  %-14s %s%s\n", r->name, r->summary, r->create ? "" : " (not in this build)");
    return PB_EXIT_OK;
}
