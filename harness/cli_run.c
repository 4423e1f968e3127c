/* harness/cli_run.c — `pipebench run`: trains one configuration and logs it to the
 * results database, and `pipebench list`: the registries. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_args.h"
#include "dataset.h"
#include "program.h"
#include "run.h"
#include "workload.h"

enum {
    O_MODEL = 1, O_DATASET, O_DATA_DIR, O_SCHEDULE, O_VARIANT, O_OPTIMIZER, O_LR, O_MOMENTUM,
    O_DAMPENING, O_NESTEROV, O_WEIGHT_DECAY, O_BETAS, O_EPS, O_ALPHA, O_LR_STEPS, O_LR_GAMMA,
    O_STAGES, O_MB_SIZE, O_MICROBATCHES, O_EPOCHS, O_LIMIT_TRAIN, O_LIMIT_VAL, O_SEED, O_SHUFFLE,
    O_EXECUTOR, O_DB, O_INIT, O_SAVE, O_QUIET, O_THREADS, O_LABEL_SMOOTHING, O_HELP, O_COUNT
};

static const struct option run_options[] = {
    {"model", required_argument, 0, O_MODEL},
    {"dataset", required_argument, 0, O_DATASET},
    {"data-dir", required_argument, 0, O_DATA_DIR},
    {"schedule", required_argument, 0, O_SCHEDULE},
    {"variant", required_argument, 0, O_VARIANT},
    {"optimizer", required_argument, 0, O_OPTIMIZER},
    {"lr", required_argument, 0, O_LR},
    {"momentum", required_argument, 0, O_MOMENTUM},
    {"dampening", required_argument, 0, O_DAMPENING},
    {"nesterov", no_argument, 0, O_NESTEROV},
    {"weight-decay", required_argument, 0, O_WEIGHT_DECAY},
    {"betas", required_argument, 0, O_BETAS},
    {"eps", required_argument, 0, O_EPS},
    {"alpha", required_argument, 0, O_ALPHA},
    {"lr-steps", required_argument, 0, O_LR_STEPS},
    {"lr-gamma", required_argument, 0, O_LR_GAMMA},
    {"stages", required_argument, 0, O_STAGES},
    {"microbatch-size", required_argument, 0, O_MB_SIZE},
    {"microbatches", required_argument, 0, O_MICROBATCHES},
    {"epochs", required_argument, 0, O_EPOCHS},
    {"limit-train", required_argument, 0, O_LIMIT_TRAIN},
    {"limit-val", required_argument, 0, O_LIMIT_VAL},
    {"seed", required_argument, 0, O_SEED},
    {"shuffle", required_argument, 0, O_SHUFFLE},
    {"executor", required_argument, 0, O_EXECUTOR},
    {"db", required_argument, 0, O_DB},
    {"init", required_argument, 0, O_INIT},
    {"save", required_argument, 0, O_SAVE},
    {"quiet", no_argument, 0, O_QUIET},
    {"threads", required_argument, 0, O_THREADS},
    {"label-smoothing", required_argument, 0, O_LABEL_SMOOTHING},
    {"help", no_argument, 0, O_HELP},
    {0, 0, 0, 0},
};

static void run_usage(FILE *f)
{
    fprintf(f,
        "usage: pipebench run [options]\n"
        "Trains a model with a pipeline schedule and logs it to the results database.\n\n"
        "  --model NAME            mlp | lenet (default mlp; `pipebench list`)\n"
        "  --dataset NAME          fashion-mnist | synthetic (default: the model's)\n"
        "  --data-dir DIR          dataset folder (default /usr/share/datasets/fashion-mnist)\n"
        "  --schedule NAME         gpipe | pipedream | pipedream-2bw | spectrain | xpipe |\n"
        "                          pipeoptim (default pipedream)\n"
        "  --variant V             code (pipeoptim, spectrain), note (xpipe)\n"
        "  --optimizer NAME        sgd | sgdm | adam | adamw | rmsprop (default sgdm)\n"
        "  --lr X                  learning rate (default: the optimizer's torch default;\n"
        "                          sgd/sgdm/rmsprop 0.01, adam/adamw 0.001)\n"
        "  --momentum X --dampening X --nesterov --weight-decay X\n"
        "  --betas B1,B2 --eps X --alpha X   (Adam/AdamW betas and eps; RMSprop alpha)\n"
        "  --lr-steps E1,E2,...    multiply the rate by --lr-gamma (default 0.1) at these\n"
        "                          epochs (1-based: 2 = from the 2nd epoch on)\n"
        "  --stages D              pipeline stages (default 4)\n"
        "  --microbatch-size B     samples per micro-batch (default 64)\n"
        "  --microbatches M        micro-batches per update for gpipe, pipedream-2bw and\n"
        "                          xpipe (default D)\n"
        "  --epochs N              (default 1)\n"
        "  --limit-train N         keep the first N training samples (default all)\n"
        "  --limit-val N           keep the first N validation samples (default all)\n"
        "  --seed S                initialisation, shuffling and dropout (default 1)\n"
        "  --shuffle on|off        per-epoch shuffling (default on)\n"
        "  --label-smoothing X     (default 0)\n"
        "  --executor E            seq (one thread runs every stage) | threads (one thread\n"
        "                          per stage) (default seq)\n"
        "  --threads N             cores for all stages together (default all)\n"
        "  --db FILE               results database (default results/pipebench.db)\n"
        "  --init FILE             start from weights saved with --save\n"
        "  --save FILE             save the final weights (safetensors)\n"
        "  --quiet                 no per-epoch lines\n");
}

/* Applies the flags over the optimizer's defaults (whatever order they came in). */
static int apply(struct pb_run_cfg *c, char **val, struct pb_err *e)
{
    struct pb_optim_cfg *o = &c->optim;
    if (val[O_OPTIMIZER]) {
        c->optimizer = val[O_OPTIMIZER];
        if (pb_optim_cfg_from_name(o, c->optimizer, e))
            return -1;
    }
#define STR(id, field) if (val[id]) c->field = val[id]
    STR(O_MODEL, model);
    STR(O_DATASET, dataset);
    STR(O_DATA_DIR, data_dir);
    STR(O_SCHEDULE, schedule);
    STR(O_VARIANT, variant);
    STR(O_EXECUTOR, executor);
    STR(O_DB, db);
    STR(O_INIT, init);
    STR(O_SAVE, save);
#undef STR
    int rc = 0;
#define FLT(id, flag, dst) if (!rc && val[id]) rc = pb_arg_float(flag, val[id], &(dst), e)
#define INT(id, flag, dst) if (!rc && val[id]) rc = pb_arg_int(flag, val[id], &(dst), e)
    FLT(O_LR, "--lr", o->lr);
    FLT(O_MOMENTUM, "--momentum", o->momentum);
    FLT(O_DAMPENING, "--dampening", o->dampening);
    FLT(O_WEIGHT_DECAY, "--weight-decay", o->weight_decay);
    FLT(O_EPS, "--eps", o->eps);
    FLT(O_ALPHA, "--alpha", o->alpha);
    FLT(O_LR_GAMMA, "--lr-gamma", o->lr_gamma);
    FLT(O_LABEL_SMOOTHING, "--label-smoothing", c->label_smoothing);
    INT(O_STAGES, "--stages", c->stages);
    INT(O_MB_SIZE, "--microbatch-size", c->microbatch_size);
    INT(O_MICROBATCHES, "--microbatches", c->microbatches);
    INT(O_EPOCHS, "--epochs", c->epochs);
    INT(O_LIMIT_TRAIN, "--limit-train", c->limit_train);
    INT(O_LIMIT_VAL, "--limit-val", c->limit_val);
    INT(O_THREADS, "--threads", c->threads);
#undef FLT
#undef INT
    if (!rc && val[O_NESTEROV])
        o->nesterov = true;
    if (!rc && val[O_QUIET])
        c->quiet = true;
    if (!rc && val[O_BETAS]) {
        float b[2];
        rc = pb_arg_floats("--betas", val[O_BETAS], b, 2, e);
        o->beta1 = b[0];
        o->beta2 = b[1];
    }
    if (!rc && val[O_LR_STEPS]) {
        rc = pb_arg_ints("--lr-steps", val[O_LR_STEPS], o->lr_steps, PB_LR_MAX_STEPS,
                         &o->n_lr_steps, e);
        for (int i = 0; !rc && i < o->n_lr_steps; i++) {
            if (o->lr_steps[i] < 1)
                rc = pb_err_set(e, "--lr-steps are 1-based epochs (got %d)", o->lr_steps[i]);
            o->lr_steps[i] -= 1;
        }
    }
    if (!rc && val[O_SEED])
        rc = pb_arg_u64("--seed", val[O_SEED], &c->seed, e);
    if (!rc && val[O_SHUFFLE])
        rc = pb_arg_bool("--shuffle", val[O_SHUFFLE], &c->shuffle, e);
    if (!rc && c->microbatches == 0 && val[O_MICROBATCHES])
        rc = pb_err_set(e, "--microbatches must be at least 1 (got 0)");
    return rc;
}

int pb_cmd_run(int argc, char **argv)
{
    char *val[O_COUNT] = {0};
    static char set[] = "1";
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", run_options, NULL)) != -1) {
        if (opt == O_HELP) {
            run_usage(stdout);
            return PB_EXIT_OK;
        }
        if (opt == '?' || opt == ':') {
            fprintf(stderr, "pipebench run: unknown option or missing value: '%s' "
                            "(pipebench run --help lists the options)\n", argv[optind - 1]);
            return PB_EXIT_USAGE;
        }
        val[opt] = optarg ? optarg : set;
    }
    if (optind < argc) {
        fprintf(stderr, "pipebench run: unexpected argument '%s'\n", argv[optind]);
        return PB_EXIT_USAGE;
    }
    struct pb_run_cfg c;
    struct pb_err e;
    pb_run_cfg_defaults(&c);
    if (apply(&c, val, &e))
        return pb_cli_fail(e.msg);
    struct pb_run_summary sum;
    int rc = pb_run(&c, &sum, &e);
    if (rc == PB_EXIT_USAGE)
        return pb_cli_fail(e.msg);
    if (rc == PB_EXIT_RUN) {
        fprintf(stderr, "pipebench: run %lld %s: %s\n", (long long)sum.run_id,
                pb_run_status_names[sum.status], e.msg);
        return rc;
    }
    if (!c.quiet)
        printf("run %lld done: best val acc %.2f%%, final %.2f%%, %.1f s (results in %s)\n",
               (long long)sum.run_id, 100 * sum.best_acc, 100 * sum.final_acc, sum.seconds, c.db);
    return PB_EXIT_OK;
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
    printf("schedules:\n");
    for (int i = 0; pb_schedules[i]; i++)
        printf("  %-14s %s%s%s%s\n", pb_schedules[i]->name, pb_schedules[i]->summary,
               *pb_schedules[i]->variants ? " (variants: " : "", pb_schedules[i]->variants,
               *pb_schedules[i]->variants ? ")" : "");
    printf("models:\n");
    for (int i = 0; pb_workloads[i]; i++)
        printf("  %-14s %s\n", pb_workloads[i]->name, pb_workloads[i]->summary);
    printf("datasets:\n");
    for (int i = 0; pb_dataset_names[i]; i++)
        printf("  %-14s %s\n", pb_dataset_names[i], pb_dataset_summary(pb_dataset_names[i]));
    printf("optimizers:\n");
    printf("  %-14s %s\n", "sgd", "SGD (torch.optim.SGD; --momentum, --dampening, --nesterov)");
    printf("  %-14s %s\n", "sgdm", "SGD with momentum 0.9");
    printf("  %-14s %s\n", "adam", "Adam with L2 weight decay (torch.optim.Adam)");
    printf("  %-14s %s\n", "adamw", "AdamW, decoupled weight decay (torch.optim.AdamW)");
    printf("  %-14s %s\n", "rmsprop", "RMSprop (torch.optim.RMSprop; --alpha, --momentum)");
    return PB_EXIT_OK;
}
