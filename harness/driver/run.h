/* harness/driver/run.h — one training run end to end: validate the configuration, load the
 * data, build and partition the model, generate and validate the schedule's programs,
 * train with an executor, validate after each epoch, and log everything to SQLite.
 * `pipebench run` is a thin flag parser over pb_run; compare and sweep reuse it. */
#ifndef PB_RUN_H
#define PB_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "workloads/datasets/dataset.h"
#include "harness/ir/program.h"
#include "harness/optim/optim.h"
#include "results/results.h"

/* Most epochs one run may plan (the paper's longest recipe has 120). */
#define PB_MAX_EPOCHS 1000000
/* PipeMare's rescheduling length in epochs when not given: AsyncPP's
 * --lr_correction_epoch default. */
#define PB_LR_RESCHEDULE_EPOCHS 7
/* Most trainings --repeat may ask of one configuration and seed. */
#define PB_MAX_REPEATS 1000
/* The widest --beam a run takes. */
#define PB_RUN_MAX_BEAM 64
/* The message of a --repeat out of range (its printf arguments: PB_MAX_REPEATS, N). */
#define PB_REPEAT_RANGE_MSG "--repeat counts trainings of the configuration: between 1 and %d (got %d)"
/* The message of --repeat N > 1 under --executor mpi (its printf argument: N). */
#define PB_REPEAT_MPI_MSG                                                                     \
    "--repeat %d cannot run under --executor mpi: MPI starts once per process and one "     \
    "process would train every repeat; use --executor threads, or start the mpi run once "  \
    "per repeat"

struct pb_run_cfg {
    const char *model, *dataset, *data_dir;
    /* the model's preset (NULL: "small" for the zoo's models, none for the others) and
     * partition (harness/model/partition.h: "flops", "cost", "params", "time", "paper" or
     * the bounds "0,3,5,9"; NULL: paper for the paper preset at D = 4, else the default
     * method) */
    const char *preset, *partition;
    const char *schedule, *variant;
    const char *executor;         /* "seq" */
    const char *backend;          /* "cpu" (harness/compute/backend.h's registry) */
    /* --devices: each stage's device, k comma-separated indices for D stages placing
     * stage i on entry i·k/D (harness/driver/placement.h); NULL: "0" */
    const char *devices;
    const char *db;               /* results database */
    const char *init, *save;      /* safetensors checkpoints, NULL for none */
    const char *experiment;       /* --experiment: a name grouping runs, NULL for none */
    /* --checkpoint-every N: the resume state written every N epochs (semantics §1.10);
     * -1 (the default) every epoch (under mpi too: rank 0 writes every rank's stage); 0 never */
    int checkpoint_every;
    int64_t resume_run;           /* > 0: take this interrupted run up again (resume) */
    struct pb_optim_cfg optim;
    const char *optimizer;        /* its name as given ("sgdm", ...) */
    /* --lr-reschedule-epochs E: a schedule that reschedules its rates (pipemare) does so
     * over K = E epochs' updates (semantics §4.11); 0: not given, PB_LR_RESCHEDULE_EPOCHS */
    int lr_reschedule_epochs;
    int stages, microbatch_size, microbatches, epochs;
    int chunks;                   /* --chunks v: stages per device (0: one; D = p·v) */
    /* --batch B: samples per optimizer update, 0 = not given. Set, the micro-batch size
     * is derived from it (pb_run_batch_split): B / M where the schedule accumulates M
     * micro-batches per update, else B; an epoch then makes floor(N / B) updates of B
     * samples under every schedule. */
    int batch;
    int limit_train, limit_val;   /* 0 = all */
    int beam;                     /* a translation model's validation BLEU: 0 greedy
                                     decoding, K >= 1 beam search of K */
    int threads;                  /* cores for all stages together, 0 = all */
    uint64_t seed;
    /* --repeat N: the configuration is trained N times with the same seed, one run each,
     * recorded with repeat = 0 .. N - 1 (part of neither the configuration's JSON nor
     * the seed); pb_run trains the one of index `repeat`, and a repeat whose losses
     * differ from the first finished one's fails (results.h: pb_results_repeat_check) */
    int repeats, repeat;
    bool shuffle, quiet;
    /* --tf32, --deterministic: a GPU backend's math (harness/compute/backend.h) */
    bool tf32, deterministic;
    float label_smoothing;
    /* events kept: "first,last" (NULL: the default), "all", "none", or 1-based epoch
     * numbers and first/last, comma-separated; micro-batches [trace_mb_lo, trace_mb_hi)
     * of those epochs (trace_mb_hi 0: to the end) */
    const char *trace_epochs;
    int trace_mb_lo, trace_mb_hi;
    struct pb_dataset_opts synthetic;
    /* Called after each epoch is recorded (NULL: none); epoch is 0-based, val_acc a
     * fraction. Not part of the configuration's JSON. */
    void (*on_epoch)(void *ctx, int epoch, int epochs, double val_acc);
    void *on_epoch_ctx;
    /* Called once the schedule has emitted the epoch's D programs, before they are
     * validated (NULL: none): rewrites ops for an experiment the schedules do not
     * offer (the equivalences of semantics §4.7 are tested this way). The result must pass
     * the validator like any schedule's. Not part of the configuration's JSON. */
    void (*edit_programs)(void *ctx, const struct pb_pipe *pipe, struct pb_program *progs);
    void *edit_programs_ctx;
};

struct pb_run_summary {
    int64_t run_id;
    enum pb_run_status status;
    int epochs_done;
    double best_acc, final_acc, final_train_loss, seconds;
};

/* Defaults: mlp on fashion-mnist, pipedream, sgdm lr 0.01, D 4, b 64, M = D, 1 epoch,
 * seed 1, one repeat, shuffled, results/pipebench.db. */
void pb_run_cfg_defaults(struct pb_run_cfg *c);

/* Runs; returns PB_EXIT_OK (done), PB_EXIT_RUN (the run diverged or failed while
 * training: recorded so in the database), PB_EXIT_INTERRUPTED (SIGINT, SIGTERM or
 * SIGHUP stopped it: recorded 'interrupted'; before the run's row is written a
 * signal has its default action) or PB_EXIT_USAGE (bad configuration or environment: nothing
 * recorded). e says why when not OK. A first signal lets the epoch in progress finish
 * and writes the resume state (semantics §1.10); a second stops between ops. */
int pb_run(const struct pb_run_cfg *c, struct pb_run_summary *out, struct pb_err *e);

/* Checks c as pb_run does before it reads any data — flag ranges, executor, optimizer,
 * model and dataset names, the schedule's pipe and its predictions — without writing
 * anything. Returns 0, or -1 with the message pb_run would give. */
int pb_run_check(const struct pb_run_cfg *c, struct pb_err *e);

/* The file of run run_id's resume state beside the database db: <db>.run<ID>.state
 * (semantics §1.10). */
void pb_run_state_path(const char *db, int64_t run_id, char *buf, size_t cap);

/* The configuration as a JSON object (for the runs table); free() the result. */
char *pb_run_cfg_json(const struct pb_run_cfg *c);

#endif
