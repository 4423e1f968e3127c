/* harness/driver/run_flags.c — the options of `pipebench run` (run_flags.h): the table, the
 * recording by name, their application over a configuration, and the --help lines that
 * run prints and compare repeats. */
#include "harness/driver/run_flags.h"

#include <stdlib.h>
#include <string.h>

#include "harness/base/args.h"
#include "harness/exec/executor.h"
#include "schedules/registry.h"
#include "workloads/models/workload.h"

enum {
    O_MODEL = 1, O_PRESET, O_PARTITION, O_DATASET, O_DATA_DIR, O_SCHEDULE, O_VARIANT, O_OPTIMIZER, O_LR, O_MOMENTUM,
    O_DAMPENING, O_NESTEROV, O_WEIGHT_DECAY, O_BETAS, O_EPS, O_ALPHA, O_MOMENTUM_DECAY, O_LR_RESCHEDULE, O_LR_STEPS, O_LR_GAMMA,
    O_STAGES, O_MB_SIZE, O_MICROBATCHES, O_CHUNKS, O_EPOCHS, O_LIMIT_TRAIN, O_LIMIT_VAL, O_SEED, O_SHUFFLE,
    O_EXECUTOR, O_DB, O_INIT, O_SAVE, O_QUIET, O_THREADS, O_LABEL_SMOOTHING, O_TRACE_EPOCHS, O_TRACE_WINDOW, O_BACKEND,
    O_EXPERIMENT, O_CHECKPOINT_EVERY, O_BATCH, O_REPEAT, O_BEAM, O_DEVICES, O_TF32, O_DETERMINISTIC,
    O_LR_WARMUP, O_LR_COSINE, O_CLIP_GRAD, O_SYNTH_NOISE,
    O_HELP,
    O_COUNT
};
_Static_assert(O_COUNT <= PB_RUN_FLAGS_MAX, "raise PB_RUN_FLAGS_MAX");

static const struct option run_options[] = {
    {"model", required_argument, 0, O_MODEL},
    {"preset", required_argument, 0, O_PRESET},
    {"partition", required_argument, 0, O_PARTITION},
    {"dataset", required_argument, 0, O_DATASET},
    {"data-dir", required_argument, 0, O_DATA_DIR},
    {"synthetic-noise", required_argument, 0, O_SYNTH_NOISE},
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
    {"momentum-decay", required_argument, 0, O_MOMENTUM_DECAY},
    {"lr-reschedule-epochs", required_argument, 0, O_LR_RESCHEDULE},
    {"lr-steps", required_argument, 0, O_LR_STEPS},
    {"lr-gamma", required_argument, 0, O_LR_GAMMA},
    {"lr-warmup", required_argument, 0, O_LR_WARMUP},
    {"lr-cosine", no_argument, 0, O_LR_COSINE},
    {"clip-grad", required_argument, 0, O_CLIP_GRAD},
    {"stages", required_argument, 0, O_STAGES},
    {"microbatch-size", required_argument, 0, O_MB_SIZE},
    {"microbatches", required_argument, 0, O_MICROBATCHES},
    {"chunks", required_argument, 0, O_CHUNKS},
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
    {"tf32", no_argument, 0, O_TF32},
    {"deterministic", no_argument, 0, O_DETERMINISTIC},
    {"threads", required_argument, 0, O_THREADS},
    {"label-smoothing", required_argument, 0, O_LABEL_SMOOTHING},
    {"trace-epochs", required_argument, 0, O_TRACE_EPOCHS},
    {"trace-window", required_argument, 0, O_TRACE_WINDOW},
    {"backend", required_argument, 0, O_BACKEND},
    {"devices", required_argument, 0, O_DEVICES},
    {"experiment", required_argument, 0, O_EXPERIMENT},
    {"checkpoint-every", required_argument, 0, O_CHECKPOINT_EVERY},
    {"beam", required_argument, 0, O_BEAM},
    {"batch", required_argument, 0, O_BATCH},
    {"repeat", required_argument, 0, O_REPEAT},
    {"help", no_argument, 0, O_HELP},
    {0, 0, 0, 0},
};
#define NOPTIONS (int)(sizeof run_options / sizeof run_options[0] - 1)

/* "  --schedule NAME         a | b | ... (default pipedream)" and the variants, from the
 * schedule registry, wrapped at 88 columns. */
static void usage_schedules(FILE *f)
{
    int col = fprintf(f, "  --schedule NAME        ");
    for (int i = 0; pb_schedules[i]; i++) {
        const char *name = pb_schedules[i]->name;
        if (col + (int)strlen(name) + 3 > 88)
            col = fprintf(f, "\n                         ");
        col += fprintf(f, " %s%s", name, pb_schedules[i + 1] ? " |" : "");
    }
    fprintf(f, " (default pipedream)\n  --variant V            ");
    bool first = true;
    for (int i = 0; pb_schedules[i]; i++)
        if (pb_schedules[i]->variants[0]) {
            fprintf(f, "%s %s (%s)", first ? "" : ",", pb_schedules[i]->variants,
                    pb_schedules[i]->name);
            first = false;
        }
    fprintf(f, "\n");
}

void pb_run_flags_usage(FILE *f)
{
    int col = fprintf(f, "  --model NAME           ");
    for (int i = 0; pb_workloads[i]; i++) {
        const char *name = pb_workloads[i]->name;
        if (col + (int)strlen(name) + 3 > 88)
            col = fprintf(f, "\n                         ");
        col += fprintf(f, " %s%s", name, pb_workloads[i + 1] ? " |" : "");
    }
    fprintf(f, "\n                          (default mlp; `pipebench list`)\n"
        "  --preset NAME           paper | small: the zoo model's widths, depths, input side,\n"
        "                          head and default dataset (default small; the zoo's image\n"
        "                          models only)\n"
        "  --partition P           how the blocks are cut into stages (semantics §5.3; see\n"
        "                          `pipebench partition`): cost (FLOPs and bytes moved; the\n"
        "                          default) | flops (balanced forward FLOPs; also\n"
        "                          'balanced') | params | time (each block's forward + backward\n"
        "                          measured here, then the cut with the fastest slowest\n"
        "                          stage) | paper (the paper's 4-stage cut, --stages 4;\n"
        "                          default for --preset paper --stages 4) | the D + 1 block\n"
        "                          bounds, 0,3,5,9 (or 0:3:5:9 in a sweep file's [grid])\n"
        "  --dataset NAME         ");
    for (int i = 0; pb_dataset_names[i]; i++)
        fprintf(f, " %s%s", pb_dataset_names[i], pb_dataset_names[i + 1] ? " |" : "");
    fprintf(f, " (default: the model's)\n"
        "  --data-dir DIR          dataset folder (default $PIPEBENCH_<DATASET>_DIR, else\n"
        "                          /usr/share/datasets/<dataset>; semantics §1.6)\n"
        "  --synthetic-noise X     --dataset synthetic: its noise as a multiple of the\n"
        "                          calibrated level at which the nearest class prototype is\n"
        "                          right for about 95%% of samples, above 0 and at most 10\n"
        "                          (default 1; semantics §1.6)\n");
    usage_schedules(f);
    fprintf(f,
        "  --optimizer NAME        sgd | sgdm | adam | adamw | rmsprop | nadam (default sgdm)\n"
        "  --lr X                  learning rate, any finite X > 0 (default: the optimizer's\n"
        "                          torch default; sgd/sgdm/rmsprop 0.01, adam/adamw 0.001,\n"
        "                          nadam 0.002)\n"
        "  --momentum X --dampening X --nesterov --weight-decay X\n"
        "                          momentum and dampening in [0, 1), weight decay >= 0;\n"
        "                          --nesterov needs momentum > 0 and dampening 0\n"
        "  --betas B1,B2 --eps X --alpha X   (Adam/AdamW/NAdam betas, each in [0, 1), and\n"
        "                          eps > 0; RMSprop alpha in [0, 1) and eps > 0)\n"
        "  --momentum-decay X      NAdam's psi >= 0 (default 0.004, torch's)\n"
        "  --lr-reschedule-epochs E  pipemare: each stage's rate starts at lr / its delay and\n"
        "                          reaches lr after E epochs' updates (default 7; semantics\n"
        "                          §4.11)\n"
        "  --lr-steps E1,E2,...    multiply the rate by --lr-gamma (> 0, default 0.1) after\n"
        "                          these many epochs, as torch's MultiStepLR milestones\n"
        "                          stepped once per epoch (40,60: from the 41st and 61st)\n"
        "  --lr-warmup W           the first W epochs at lr x (e + 1) / W, epoch e from 0\n"
        "                          (torch's LinearLR; default 0: none); fewer than --epochs\n"
        "  --lr-cosine             after the warm-up, the rate falls as a half cosine from lr\n"
        "                          to 0 over the remaining epochs (torch's CosineAnnealingLR,\n"
        "                          stepped per epoch); not with --lr-steps\n"
        "  --clip-grad C           before each update, scale a stage's gradient to global norm\n"
        "                          C where its norm is larger (torch's clip_grad_norm_ over the\n"
        "                          stage's parameters; default 0: no clipping)\n"
        "  --stages D              pipeline stages, 1 to 1024 and at most the model's blocks\n"
        "                          (default 4)\n"
        "  --batch B               samples per optimizer update (1 or more), the same for\n"
        "                          every schedule\n"
        "                          (semantics §1.5): where the schedule accumulates M\n"
        "                          micro-batches per update (gpipe, pipedream-2bw, xpipe)\n"
        "                          they hold B / M samples each, else one micro-batch holds\n"
        "                          B; every schedule then makes floor(N / B) updates an\n"
        "                          epoch of N samples (default " PB_DEFAULT_BATCH " where\n"
        "                          --microbatch-size is not given, for run, sweep and\n"
        "                          compare alike)\n"
        "  --microbatch-size B     samples per micro-batch, 1 or more and at most the\n"
        "                          training samples, instead of --batch (default: what\n"
        "                          --batch derives)\n"
        "  --microbatches M        micro-batches per update for gpipe, 1f1b, zb-h1, zb-h2,\n"
        "                          pipedream-2bw and xpipe, 1 to 1,000,000 (default D)\n"
        "  --chunks v              model chunks per device (interleaved, looped-bfs): the D\n"
        "                          stages run on p = D / v devices, chunk c of device r\n"
        "                          is stage r + c·p; every executor (default 1)\n"
        "  --epochs N              1 to 1,000,000 (default 1)\n"
        "  --limit-train N         keep the first N training samples, 0 to the split's size\n"
        "                          (default 0: all); an IDX file read in part is checked\n"
        "                          against its length (gzip trailer), not its CRC\n"
        "  --limit-val N           the same for the validation samples (default 0: all)\n"
        "  --beam K                a translation model's validation BLEU each epoch: 0\n"
        "                          greedy decoding (default), K >= 1 beam search of K\n"
        "                          with the paper's length normalisation and coverage\n"
        "                          penalty, 0 to 64\n"
        "  --seed S                initialisation, shuffling and dropout, 0 to 2^64 - 1\n"
        "                          (default 1)\n"
        "  --repeat N              train the configuration N times with the same seed, one\n"
        "                          after another, 1 to 1000 (default 1): N runs, repeat 0 to\n"
        "                          N - 1, whose losses must be equal; report's throughput\n"
        "                          and bubble take the median over them, spread their range\n"
        "  --shuffle on|off        per-epoch shuffling (default on)\n"
        "  --label-smoothing X     in [0, 1) (default 0)\n"
        "  --executor E            seq (one thread runs every stage) | threads (one thread\n"
        "                          per device) | mpi (one rank per device: mpirun -np D\n"
        "                          pipebench run --executor mpi ..., -np D / v with\n"
        "                          --chunks v) (default seq)\n"
        "  --backend NAME          cpu (oneDNN; default) | cuda (cuBLAS, cuDNN; a CUDA build)\n"
        "  --devices LIST          the stages' devices: k comma-separated device indices\n"
        "                          (0-based, k <= D) place consecutive stages in k contiguous\n"
        "                          groups, stage i on LIST[i*k/D] (k = D: stage i on LIST[i];\n"
        "                          k = 1: every stage on that device; stages may share one);\n"
        "                          recorded one entry per stage, so 0 and 0,0 at D = 2 are\n"
        "                          one configuration; 0:1 in a sweep file's [grid] (default\n"
        "                          0; the cpu backend has device 0 only)\n"
        "  --tf32                  let a GPU's FP32 GEMMs and convolutions run on TF32 tensor\n"
        "                          cores (cuda; off: FP32 math, as the CPU)\n"
        "  --deterministic         deterministic GPU kernels only (cuda: cuDNN algorithms\n"
        "                          reported deterministic; the cpu backend always is)\n"
        "  --experiment NAME       record the run under this experiment (report, plot and runs\n"
        "                          select it with --experiment NAME)\n"
        "  --checkpoint-every N    write the resume state every N >= 1 epochs beside the database\n"
        "                          (`pipebench resume RUN` continues an interrupted run from\n"
        "                          it); default every epoch, 0 only when a signal stops the\n"
        "                          run (always then: semantics §1.10); under mpi rank 0\n"
        "                          writes it, every rank's stage in it\n"
        "  --threads N             cores for all stages together, 0 (all, the default) to the\n"
        "                          cores, or to D when D is more\n"
        "  --db FILE               results database (default results/pipebench.db)\n"
        "  --init FILE             start from weights saved with --save\n"
        "  --save FILE             save the final weights (safetensors)\n"
        "  --quiet                 no per-epoch lines\n"
        "  --trace-epochs LIST     epochs whose ops are logged as events (timelines,\n"
        "                          `pipebench trace`): all, none, or 1-based numbers and\n"
        "                          first/last, comma-separated (default first,last)\n"
        "  --trace-window A:B      of those epochs, the ops of micro-batches A to B-1\n"
        "                          (default all); each epoch records how many it kept\n");
}

/* The table entry of a run option by name; --help is not a flag to record. */
static const struct option *find(const char *name)
{
    for (int i = 0; i < NOPTIONS; i++)
        if (run_options[i].val != O_HELP && !strcmp(run_options[i].name, name))
            return &run_options[i];
    return NULL;
}

bool pb_run_flag_known(const char *name, bool *switch_)
{
    const struct option *o = find(name);
    if (o && switch_)
        *switch_ = o->has_arg == no_argument;
    return o != NULL;
}

int pb_run_flags_set(struct pb_run_flags *f, const char *name, const char *value,
                     struct pb_err *e)
{
    const struct option *o = find(name);
    if (!o)
        return pb_err_set(e, "'%s' is not an option of pipebench run (pipebench run --help "
                             "lists them)", name);
    if (o->has_arg == no_argument) {
        bool on = true;
        if (value) {
            char flag[64];
            snprintf(flag, sizeof flag, "--%s", name);
            if (pb_arg_bool(flag, value, &on, e))
                return -1;
        }
        f->val[o->val] = on ? "1" : NULL;
        return 0;
    }
    if (!value)
        return pb_err_set(e, "--%s needs a value", name);
    f->val[o->val] = value;
    return 0;
}

const char *pb_run_flags_get(const struct pb_run_flags *f, const char *name)
{
    const struct option *o = find(name);
    return o ? f->val[o->val] : NULL;
}

/* The default --batch, told apart from a --batch 64 given by its address. */
static const char default_batch[] = PB_DEFAULT_BATCH;

void pb_run_flags_default_batch(struct pb_run_flags *f)
{
    if (!f->val[O_BATCH] && !f->val[O_MB_SIZE])
        f->val[O_BATCH] = default_batch;
}

int pb_run_flags_apply(const struct pb_run_flags *f, struct pb_run_cfg *c, struct pb_err *e)
{
    const char *const *val = f->val;
    struct pb_optim_cfg *o = &c->optim;
#define STR(id, field) if (val[id]) c->field = val[id]
    STR(O_MODEL, model);
    STR(O_PRESET, preset);
    STR(O_PARTITION, partition);
    STR(O_DATASET, dataset);
    STR(O_DATA_DIR, data_dir);
    STR(O_SCHEDULE, schedule);
    STR(O_VARIANT, variant);
    STR(O_EXECUTOR, executor);
    STR(O_DB, db);
    STR(O_INIT, init);
    STR(O_SAVE, save);
    STR(O_TRACE_EPOCHS, trace_epochs);
    STR(O_BACKEND, backend);
    STR(O_DEVICES, devices);
    STR(O_EXPERIMENT, experiment);
#undef STR
    /* the optimizer named, else the preset's own recipe where it has one; the rate and
       the other optimizer flags below apply over either */
    const struct pb_preset *p = pb_preset_lookup(c->model, c->preset);
    if (val[O_OPTIMIZER] || (p && p->optimizer)) {
        c->optimizer = val[O_OPTIMIZER] ? val[O_OPTIMIZER] : p->optimizer;
        if (pb_optim_cfg_from_name(o, c->optimizer, e))
            return -1;
        if (!val[O_OPTIMIZER] && p->lr > 0)
            o->lr = p->lr;
    }
    int rc = 0;
#define FLT(id, flag, dst) if (!rc && val[id]) rc = pb_arg_float(flag, val[id], &(dst), e)
#define INT(id, flag, dst) if (!rc && val[id]) rc = pb_arg_int(flag, val[id], &(dst), e)
    FLT(O_LR, "--lr", o->lr);
    FLT(O_MOMENTUM, "--momentum", o->momentum);
    FLT(O_DAMPENING, "--dampening", o->dampening);
    FLT(O_WEIGHT_DECAY, "--weight-decay", o->weight_decay);
    FLT(O_EPS, "--eps", o->eps);
    FLT(O_ALPHA, "--alpha", o->alpha);
    FLT(O_MOMENTUM_DECAY, "--momentum-decay", o->momentum_decay);
    FLT(O_LR_GAMMA, "--lr-gamma", o->lr_gamma);
    FLT(O_CLIP_GRAD, "--clip-grad", o->clip_grad);
    INT(O_LR_WARMUP, "--lr-warmup", o->lr_warmup);
    FLT(O_LABEL_SMOOTHING, "--label-smoothing", c->label_smoothing);
    FLT(O_SYNTH_NOISE, "--synthetic-noise", c->synthetic.noise);
    INT(O_STAGES, "--stages", c->stages);
    INT(O_MB_SIZE, "--microbatch-size", c->microbatch_size);
    INT(O_MICROBATCHES, "--microbatches", c->microbatches);
    INT(O_CHUNKS, "--chunks", c->chunks);
    INT(O_EPOCHS, "--epochs", c->epochs);
    INT(O_LIMIT_TRAIN, "--limit-train", c->limit_train);
    INT(O_LIMIT_VAL, "--limit-val", c->limit_val);
    INT(O_THREADS, "--threads", c->threads);
    INT(O_CHECKPOINT_EVERY, "--checkpoint-every", c->checkpoint_every);
    INT(O_BATCH, "--batch", c->batch);
    INT(O_REPEAT, "--repeat", c->repeats);
    INT(O_BEAM, "--beam", c->beam);
    INT(O_LR_RESCHEDULE, "--lr-reschedule-epochs", c->lr_reschedule_epochs);
#undef FLT
#undef INT
    if (!rc && val[O_SYNTH_NOISE] && !(c->synthetic.noise > 0 && c->synthetic.noise <= 10))
        rc = pb_err_set(e, "--synthetic-noise must be above 0 and at most 10, a multiple of the "
                           "synthetic data's calibrated noise (got %s)", val[O_SYNTH_NOISE]);
    if (!rc && val[O_NESTEROV])
        o->nesterov = true;
    if (!rc && val[O_LR_COSINE])
        o->lr_cosine = true;
    if (!rc && val[O_QUIET])
        c->quiet = true;
    if (!rc && val[O_TF32])
        c->tf32 = true;
    if (!rc && val[O_DETERMINISTIC])
        c->deterministic = true;
    if (!rc && val[O_BETAS]) {
        float b[2];
        rc = pb_arg_floats("--betas", val[O_BETAS], b, 2, e) ? -1 : 0;
        o->beta1 = b[0];
        o->beta2 = b[1];
    }
    if (!rc && val[O_LR_STEPS]) {
        rc = pb_arg_ints("--lr-steps", val[O_LR_STEPS], o->lr_steps, PB_LR_MAX_STEPS,
                         &o->n_lr_steps, e);
        for (int i = 0; !rc && i < o->n_lr_steps; i++) {
            if (o->lr_steps[i] < 1)
                rc = pb_err_set(e, "--lr-steps are epoch counts of at least 1, as torch's "
                                   "MultiStepLR milestones (got %d)", o->lr_steps[i]);
        }
    }
    if (!rc && val[O_TRACE_WINDOW]) {
        int end = 0;
        if (sscanf(val[O_TRACE_WINDOW], "%d:%d%n", &c->trace_mb_lo, &c->trace_mb_hi, &end) != 2 ||
            val[O_TRACE_WINDOW][end] != 0)
            rc = pb_err_set(e, "--trace-window takes A:B, two micro-batch indices (got '%s')",
                            val[O_TRACE_WINDOW]);
    }
    if (!rc && val[O_SEED])
        rc = pb_arg_u64("--seed", val[O_SEED], &c->seed, e);
    if (!rc && val[O_SHUFFLE])
        rc = pb_arg_bool("--shuffle", val[O_SHUFFLE], &c->shuffle, e);
    if (!rc && val[O_REPEAT] && (c->repeats < 1 || c->repeats > PB_MAX_REPEATS))
        rc = pb_err_set(e, PB_REPEAT_RANGE_MSG, PB_MAX_REPEATS, c->repeats);
    if (!rc && c->microbatches == 0 && val[O_MICROBATCHES])
        rc = pb_err_set(e, "--microbatches must be at least 1 (got 0)");
    if (!rc && val[O_CHUNKS] && c->chunks < 1)
        rc = pb_err_set(e, "--chunks must be at least 1 (got %d): the model chunks each device "
                           "holds", c->chunks);
    const struct pb_executor *ex = rc ? NULL : pb_executor_find(c->executor, NULL);
    if (ex && c->repeats > 1 && ex->one_rank_per_device)   /* before MPI starts */
        rc = pb_err_set(e, PB_REPEAT_MPI_MSG, c->repeats);
    if (!rc && val[O_BATCH]) {
        int mb;
        rc = pb_run_batch_split(c, &mb, e);
        if (rc && val[O_BATCH] == default_batch)
            pb_err_prefix(e, "samples per update: neither --batch nor --microbatch-size is "
                          "given, so --batch is %s (the default): ", default_batch);
        if (!rc && val[O_MB_SIZE] && mb != c->microbatch_size)
            rc = pb_err_set(e, "--batch %d and --microbatch-size %d disagree: %s makes "
                            "micro-batches of %d samples of --batch %d; give only one of the "
                            "two", c->batch, c->microbatch_size, c->schedule, mb, c->batch);
        if (!rc)
            c->microbatch_size = mb;
    }
    return rc;
}

int pb_run_batch_split(const struct pb_run_cfg *c, int *mb, struct pb_err *e)
{
    if (c->batch < 1)
        return pb_err_set(e, "--batch counts samples per update: 1 or more (got %d)", c->batch);
    const struct pb_schedule *sch = pb_schedule_find(c->schedule, e);
    if (!sch)
        return -1;
    int m = !sch->uses_microbatches ? 1 : c->microbatches ? c->microbatches : c->stages;
    if (m < 1 || m > PB_MAX_MICROBATCHES)
        return pb_err_set(e, "--microbatches must be between 1 and %d (got %d)",
                          PB_MAX_MICROBATCHES, m);
    if (c->batch < m)
        return pb_err_set(e, "--batch %d is less than the %d micro-batches %s sums per update "
                          "(M = %s): give --batch %d or more, or fewer --microbatches", c->batch,
                          m, c->schedule, c->microbatches ? "--microbatches" : "D, the stages", m);
    if (c->batch % m)
        return pb_err_set(e, "--batch %d does not split into the %d micro-batches %s sums per "
                          "update (M = %s): give a multiple of %d (%d or %lld), or another "
                          "--microbatches", c->batch, m, c->schedule,
                          c->microbatches ? "--microbatches" : "D, the stages", m,
                          c->batch / m * m, (long long)(c->batch / m + 1) * m);
    *mb = c->batch / m;
    return 0;
}

int pb_run_flags_args(const struct pb_run_flags *f, const char *const *skip, char **out,
                      int cap)
{
    int n = 0;
    for (int i = 0; i < NOPTIONS; i++) {
        const struct option *o = &run_options[i];
        bool skipped = false;
        for (int k = 0; skip && skip[k]; k++)
            skipped |= !strcmp(skip[k], o->name);
        if (o->val == O_HELP || !f->val[o->val] || skipped)
            continue;
        PB_CHECK(n + 2 <= cap);
        size_t len = strlen(o->name) + 3;
        out[n] = pb_xmalloc(len);
        snprintf(out[n++], len, "--%s", o->name);
        if (o->has_arg != no_argument)
            out[n++] = pb_xstrdup(f->val[o->val]);
    }
    return n;
}

void pb_run_flags_overlay(struct pb_run_flags *dst, const struct pb_run_flags *src)
{
    for (int i = 0; i < PB_RUN_FLAGS_MAX; i++)
        if (src->val[i])
            dst->val[i] = src->val[i];
}

/* run's table followed by the extra options, {0}-terminated; free() it. */
static struct option *merged_options(const struct option *extra)
{
    int nextra = 0;
    while (extra && extra[nextra].name)
        nextra++;
    struct option *all = pb_xcalloc((size_t)(NOPTIONS + nextra + 1), sizeof *all);
    memcpy(all, run_options, (size_t)NOPTIONS * sizeof *all);
    if (nextra)
        memcpy(all + NOPTIONS, extra, (size_t)nextra * sizeof *all);
    return all;
}

/* Whether option slot was seen already; marks it seen. */
static bool seen_before(bool *seen, int n, int slot)
{
    if (slot < 0 || slot >= n)
        return false;
    bool was = seen[slot];
    seen[slot] = true;
    return was;
}

int pb_run_flags_parse(int argc, char **argv, struct pb_run_flags *f, const struct option *extra,
                       pb_run_flags_extra_fn handle, void *ctx, struct pb_err *e)
{
    struct option *all = merged_options(extra);
    int opt, idx, rc = 0;
    bool seen[PB_RUN_FLAGS_MAX + PB_RUN_FLAGS_MAX_EXTRA] = {0};
    optind = 0;
    opterr = 0;
    while (!rc && (opt = getopt_long(argc, argv, "", all, &idx)) != -1) {
        int slot = opt >= PB_RUN_FLAGS_EXTRA ? PB_RUN_FLAGS_MAX + opt - PB_RUN_FLAGS_EXTRA : opt;
        if (opt == O_HELP)
            rc = 1;
        else if (opt == '?' || opt == ':')
            rc = pb_err_set(e, "unknown option or missing value: '%s' (pipebench %s --help "
                               "lists the options)", argv[optind - 1], argv[0]);
        else if (seen_before(seen, (int)(sizeof seen / sizeof *seen), slot))
            rc = pb_err_set(e, "--%s is given twice; give it once (a later value would "
                               "silently replace the earlier)", all[idx].name);
        else if (opt >= PB_RUN_FLAGS_EXTRA)
            rc = handle(ctx, opt, optarg, e);
        else
            f->val[opt] = optarg ? optarg : "1";
    }
    free(all);
    if (!rc && optind < argc)
        rc = pb_err_set(e, "unexpected argument '%s'", argv[optind]);
    return rc;
}
