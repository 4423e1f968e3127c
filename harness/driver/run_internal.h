/* harness/driver/run_internal.h — the pieces of a run shared by harness/run*.c: its state,
 * setup (run_setup.c) and one epoch (run_epoch.c). A run spans one process (seq,
 * threads: it holds every stage) or one MPI rank per stage (mpi: it holds stage
 * `rank`); `dist` is NULL in the first case. Rank 0 writes the results. */
#ifndef PB_RUN_INTERNAL_H
#define PB_RUN_INTERNAL_H

#include "harness/exec/dist.h"
#include "harness/driver/run.h"
#include "harness/exec/worker.h"
#include "workloads/bleu/bleu.h"
#include "workloads/workload.h"

struct run_state {
    const struct pb_run_cfg *cfg;
    const struct pb_schedule *sch;
    const struct pb_workload *workload;
    const struct pb_preset *preset; /* NULL: a model without presets */
    bool paper_cut;               /* the preset's 4-stage cut, else the balanced partition */
    int input_side;               /* the preset's S, 0 = the dataset's native side */
    bool no_flip;                 /* the preset trains without horizontal flip */
    const char *dataset;          /* --dataset, or the preset's (the workload's) own */
    struct pb_pipe pipe;
    struct pb_optim_cfg optim;    /* the run's, keeping d_last when the schedule predicts */
    struct pb_dataset train, val; /* loaded where a local stage is first or last */
    struct pb_prefetch *prefetch; /* stage 0's loader thread, where stage 0 is local */
    int ntrain, nval;             /* samples (known on every rank) */
    struct pb_model model;
    int *bounds;                  /* [D + 1] block bounds of the stages */
    int lo, hi;                   /* the stages this process holds: [lo, hi) */
    struct pb_dist *dist;         /* NULL: one process */
    struct pb_backend **be;       /* [D], the local ones set */
    struct pb_stage *stages;      /* [D] */
    struct pb_worker *workers;    /* [D] */
    struct pb_program *progs;     /* [D] */
    struct pb_program *eval_progs; /* [D] the validation pass (pb_program_eval) */
    int nstages_ready, nworkers_ready;
    bool progs_ready;
    bool *trace_epochs;           /* [epochs]: events kept (--trace-epochs) */
    struct pb_results *db;        /* rank 0 only */
    int start_epoch;              /* 0, or the first epoch a resumed run trains */
    int64_t run_id;
    struct pb_dataset bleu_val;   /* rank 0, a translation model: the validation split
                                     with inputs and targets, when val lacks a part */
    struct pb_bleu_lines bleu_raw; /* rank 0: the raw reference (newstest2014.de) when the
                                      wmt16 folder has it, else empty (run_bleu.c) */
    const char *bleu_scoring;     /* rank 0: "detok-raw", "bpe-merged" or NULL (no BLEU) */
};

static inline bool run_writer(const struct run_state *r)
{
    return !r->dist || r->dist->rank == 0;
}

int pb_run_check_cfg(const struct pb_run_cfg *c, struct pb_err *e);
/* The dataset r loads (--dataset, else the model's) and its load options: the synthetic
 * shape of the configuration, r's input side and flip policy, and `like` the model's
 * (its preset's) image dataset when the synthetic data is asked for without a shape of its own. */
const char *pb_run_data_opts(const struct run_state *r, struct pb_dataset_opts *opts);
/* The model of c, its preset (NULL when it has none) and whether the paper cut applies:
 * an unknown model or preset, or a partition that does not apply, is an error. */
int pb_run_model(const struct pb_run_cfg *c, const struct pb_workload **w,
                 const struct pb_preset **p, bool *paper_cut, struct pb_err *e);
/* c's model, finalised for its micro-batch size on its dataset's sample shape and
 * classes (taken from the dataset's synthetic stand-in: no file is read), for
 * `pipebench partition`; *paper: the preset when the paper cut applies, else NULL.
 * pb_model_finish it. */
int pb_run_model_build(const struct pb_run_cfg *c, struct pb_model *m,
                       const struct pb_preset **paper, struct pb_err *e);
/* Cores each stage's kernels use: the same under every executor, so kernels split their
 * work the same way and all executors give the same bits (design §2.3). */
int pb_run_stage_threads(const struct pb_run_cfg *c);
/* Repetitions of each block's forward + backward that --partition time takes the
 * median of. */
#define PB_RUN_PROFILE_REPS 5
/* The stages' bounds[D + 1] of c's finalised model m: the paper cut of preset `paper`
 * when not NULL, else c->partition's method or hand-set bounds (the default method when
 * NULL). --partition time measures the blocks only when `measure` (else bounds are left
 * for the caller to fill). */
int pb_run_partition(const struct pb_run_cfg *c, const struct pb_model *m,
                     const struct pb_preset *paper, bool measure, int *bounds, struct pb_err *e);
/* The partition as the run's configuration records it (free() it): its method, the
 * FLOPs one as "balanced" (its name before the other methods), or its bounds "0,3,5,9". */
char *pb_run_partition_name(const struct pb_run_cfg *c, bool paper_cut);
/* --trace-epochs: sel[epochs] set for the epochs whose events are kept; NULL sel only
 * checks the text. */
int pb_run_trace_epochs(const char *spec, int epochs, bool *sel, struct pb_err *e);
/* Micro-batches in an epoch of ntrain samples: floor(ntrain / b), or with --batch B
 * floor(ntrain / B) updates' worth, so every schedule trains on the same samples. */
int pb_run_epoch_length(const struct pb_run_cfg *c, int ntrain);
/* Optimizer updates in an epoch of r's programs: stage 0's U ops (every stage makes
 * the same). */
int pb_run_updates_per_epoch(const struct run_state *r);
/* Builds and validates the programs of an epoch of nmb micro-batches. */
int pb_run_setup_schedule(struct run_state *r, int nmb, struct pb_err *e);
/* Data, model, partition, schedule, the local stages and workers: all that can fail
 * before a run row exists. Collective with MPI: every rank fails together. */
int pb_run_setup(struct run_state *r, struct pb_err *e);
/* The machine a run's timings come from: cores, threads per stage, load, whether the
 * stages' threads outnumber the cores (results.h). */
void pb_run_machine(const struct pb_run_cfg *c, struct pb_run_info *info);
/* Rank 0: opens the database and writes the run row. */
int pb_run_begin(struct run_state *r, struct pb_err *e);
void pb_run_state_finish(struct run_state *r);

/* One epoch: train, validate, record (rank 0). -1 with e and *diverged on failure. */
int pb_run_epoch(struct run_state *r, int epoch, int32_t *order, struct pb_run_summary *sum,
              bool *diverged, struct pb_err *e);

/* The resume state (harness/driver/run_resume.c, semantics §1.10): its save after
 * epochs_done epochs, its load into a resumed run's stages and workers (sets
 * start_epoch; 0 when there is none). Its file: pb_run_state_path (run.h). */
int pb_run_save_state(struct run_state *r, int epochs_done, struct pb_err *e);
int pb_run_load_state(struct run_state *r, struct pb_err *e);
/* Whether the run writes resume states (--checkpoint-every, executor). */
int pb_run_checkpoint_every(const struct pb_run_cfg *c);

/* Host copies of every stage's parameters and buffers gathered at rank 0 (with MPI; a
 * collective): use(r, lay, ps, bs, ctx, e) gets the layouts lay[k] and ps[k], bs[k] of
 * the D stages there, then they are freed. Every rank returns a failure (-1; e says why
 * at the rank that failed, empty elsewhere). */
typedef int (*pb_run_weights_fn)(struct run_state *r, struct pb_stage *lay, float *const *ps,
                                 float *const *bs, void *ctx, struct pb_err *e);
int pb_run_with_weights(struct run_state *r, pb_run_weights_fn use, void *ctx, struct pb_err *e);

/* A translation model's validation BLEU (0 to 100) of epoch's weights, decoded on a
 * one-stage copy of the model at rank 0 (run_bleu.c; --beam); NaN for other models and
 * on the other ranks. A collective. */
int pb_run_val_bleu(struct run_state *r, double *bleu, struct pb_err *e);
/* How a translation model's validation BLEU will be scored (rank 0, before the run is
 * recorded): with the wmt16 folder's raw newstest2014.de, read here into r->bleu_raw,
 * "detok-raw" (the MLPerf reference's way); else "bpe-merged"; NULL for other models. -1
 * with a message for a raw file that cannot be read or is not line-aligned with the test
 * split. */
int pb_run_bleu_prepare(struct run_state *r, struct pb_err *e);

/* Saves every stage's weights (gathered to rank 0 with MPI). */
int pb_run_save(struct run_state *r, const char *path, struct pb_err *e);

/* The shortest decimal that reads back as f (what the user typed: 0.01, not
 * 0.00999999977648258). */
double pb_run_decimal(float f);

#endif
