/* results/results.h — the SQLite results store (results/schema.sql, semantics §6 metrics).
 * A run is a row written at its start and closed at its end; each epoch (its row, the
 * per-stage stats and staleness, the op events) goes in one transaction, so a crash
 * leaves at most a run still marked 'running'. */
#ifndef PB_RESULTS_H
#define PB_RESULTS_H

#include <stdbool.h>
#include <stdint.h>

#include "harness/base/err.h"
#include "harness/ir/metrics.h"

/* The schema this build writes and reads (results/schema.sql's schema_version). */
#define PB_RESULTS_SCHEMA_VERSION 10
#define PB_RESULTS_DEFAULT_DB "results/pipebench.db"

struct pb_results;
struct sqlite3;

enum pb_run_status {
    PB_RUN_RUNNING,
    PB_RUN_DONE,
    PB_RUN_FAILED,
    PB_RUN_DIVERGED,
    PB_RUN_INTERRUPTED,
    PB_RUN_NSTATUS
};
/* "running", "done", "failed", "diverged", "interrupted" (the schema's CHECK values). */
extern const char *const pb_run_status_names[PB_RUN_NSTATUS];

/* What identifies a run; strings may be NULL (stored as NULL). The environment
 * (git revision, CPU model, library versions, host, pid) is added by run_begin. */
struct pb_run_info {
    const char *config_json;  /* every flag as a JSON object */
    const char *model, *dataset, *schedule, *variant, *optimizer, *executor;
    int stages, microbatch_size, microbatches, epochs;
    uint64_t seed;            /* stored as its 64-bit pattern in a signed INTEGER */
    double lr;
    /* the machine the timings come from (0 cores: not measured, stored as NULL): its
     * online cores, the cores each stage's kernels use, the 1-minute load average when
     * the run began, and whether the stages' threads outnumber the cores, so throughput
     * and bubble are not those of a pipeline with one device per stage (the seq
     * executor runs the stages one at a time: never a pipeline's timing either) */
    int cores, threads_per_stage;
    double load_avg;
    bool oversubscribed;
    /* equal footing: samples per optimizer update and updates per epoch (0: not known,
     * stored as NULL), and the stages' block bounds as "0,3,5,9" (NULL: not known) */
    int samples_per_update, updates_per_epoch;
    const char *partition_cut;
    /* which of the --repeat N trainings of this configuration and seed, 0 to N - 1 */
    int repeat;
    /* how the validation BLEU is scored: "detok-raw", "bpe-merged", NULL (no BLEU) */
    const char *bleu_scoring;
    /* the libraries the run's backend computes with ("oneDNN 2.6.3"; NULL: none, as a
     * simulation), recorded first in library_versions */
    const char *backend_libraries;
};

/* One epoch: its row, one stage record per stage and optional events. NaN losses
 * are stored as NULL. val_acc is a fraction in [0, 1]. */
struct pb_epoch_record {
    int epoch;          /* 0-based */
    double train_loss, val_loss, val_acc;
    bool has_bleu;      /* val_bleu holds a translation model's validation BLEU (0 to 100) */
    double val_bleu;
    int64_t samples;
    double wall_s, throughput, lr;
    /* the epoch simulated with its own median op costs on one device per stage (design
     * §6.6): makespan and samples / makespan; NaN: not simulated */
    double sim_wall_s, sim_throughput;
    int nstages;
    const struct pb_stage_record *stages;   /* [nstages] */
    int64_t ops;        /* ops every device ran in the epoch */
    int nevents;        /* of them, the events kept (--trace-epochs, --trace-window) */
    const struct pb_event_record *events;   /* [nevents], may be NULL when 0 */
};

/* Opens (creating it and its parent folder when missing) the database at path,
 * applies the schema to a new file, refuses a schema version other than this
 * build's, sets WAL mode and a busy timeout, and marks failed the runs whose process
 * died (pb_results_mark_orphans). */
int pb_results_open(struct pb_results **out, const char *path, struct pb_err *e);
/* -1 with a message when the database at path exists and this process cannot write it
 * (the file, its folder or its mount read-only): checked before work that would record. */
int pb_results_check_writable(const char *path, struct pb_err *e);
/* Opens an existing database for reading and writing (read-only, as immutable, where
 * this process cannot write it); a missing file is an error. A writable one has its
 * crashed runs marked too, as far as a short wait for the write lock allows. */
int pb_results_open_existing(struct pb_results **out, const char *path, struct pb_err *e);
/* Closes; NULL is a no-op. */
void pb_results_close(struct pb_results *db);

/* The SQLite connection, for queries (reports, `pipebench show`). */
struct sqlite3 *pb_results_sqlite(struct pb_results *db);
const char *pb_results_path(const struct pb_results *db);

/* Inserts a run with status 'running' and the environment; returns its id (> 0), or
 * -1 with a message. */
int64_t pb_results_run_begin(struct pb_results *db, const struct pb_run_info *info,
                             struct pb_err *e);
/* The embedded results/views.sql: the reporting views, TEMP (plots/report_db.c). */
extern const char pb_report_views_sql[];

/* Writes results/views.sql's views into the database as persistent views (each reads
 * every run; results/results_views.c), unless this build's are there already: a
 * database pb_results_open creates or opens has them, for sqlite3 or pandas. */
int pb_results_persist_views(struct pb_results *db, struct pb_err *e);
/* Drops every view of the database's main schema and clears the views' hash (within the
 * caller's transaction). */
int pb_results_drop_views(struct pb_results *db, struct pb_err *e);

/* The epochs run_id has recorded: *seconds their wall time summed, *best_acc their best
 * validation accuracy (0 for none). */
int pb_results_run_so_far(struct pb_results *db, int64_t run_id, double *seconds,
                          double *best_acc, struct pb_err *e);
/* Takes an interrupted or failed run up again (pipebench resume): its epochs from
 * first_epoch on are deleted (the resume state is older than them), its status is
 * 'running' again under this process. A done, diverged or running run is refused. */
int pb_results_run_resume(struct pb_results *db, int64_t run_id, int first_epoch,
                          struct pb_err *e);
/* Records when training began (after data loading and model building). */
int pb_results_run_started(struct pb_results *db, int64_t run_id, struct pb_err *e);
/* Writes an epoch, its stage_stats and staleness rows and its events in one
 * transaction; on any error nothing of it remains. */
int pb_results_epoch(struct pb_results *db, int64_t run_id, const struct pb_epoch_record *rec,
                     struct pb_err *e);
/* Sets the final status, the end time and message (NULL for none). */
int pb_results_run_end(struct pb_results *db, int64_t run_id, enum pb_run_status status,
                       const char *message, struct pb_err *e);
/* Marks 'failed' the runs still 'running' whose writing process, on this host, no
 * longer exists, is a zombie or is dying (it crashed or was killed: kill -9, an MPI job
 * torn down); returns how many, or -1. Takes the write lock only when there is one. */
int pb_results_mark_orphans(struct pb_results *db, struct pb_err *e);

/* A repeat (--repeat N) against the first finished training of its configuration and seed
 * (results/results_repeat.c): ref_id, the other run done with the same configuration
 * JSON but the thread count, the same threads per stage and code revision, of the lowest
 * repeat the latest (0 when there is none: nothing to compare with); epoch, the first epoch (0-based)
 * whose training loss, validation loss or accuracy differs from its, -1 when none does. */
struct pb_repeat_check {
    int64_t ref_id;
    int ref_repeat, epoch;
};
int pb_results_repeat_check(struct pb_results *db, int64_t run_id, struct pb_repeat_check *out,
                            struct pb_err *e);

/* A recorded run's op costs, for the simulator (results/results_costs.c). */
struct pb_run_costs {
    char schedule[32], variant[32], optimizer[32], executor[32];
    int stages, microbatches, microbatch_size;
    int length;      /* micro-batches in an epoch */
    double *op_s;    /* [stages × 5]: median seconds of the stage's F, B, U, I, W events
                        (NaN: none) */
    double *recv_s;  /* [stages]: the stage's copy time per message received, mean over epochs */
    int64_t *params_bytes, *acts_bytes;  /* [stages]: peak bytes of each kind over epochs */
    long nevents;    /* events the medians come from */
    int chunks;      /* model chunks per device (1: none) */
    bool contended;  /* measured where the stages' threads outnumbered the cores or the
                        load average was above them: its op times are not a stage's alone */
};
/* Reads run `id`'s pipe and the medians of its events; a missing run, a simulated one
 * or one without an epoch is an error. */
int pb_results_run_costs(struct pb_results *db, int64_t id, struct pb_run_costs *c,
                         struct pb_err *e);
void pb_run_costs_finish(struct pb_run_costs *c);

/* The embedded results/schema.sql. */
extern const char pb_results_schema_sql[];

/* Environment facts (results/results_env.c). Each fills buf (always terminated). */
const char *pb_env_git_revision(void);   /* 'unknown' outside a git checkout */
void pb_env_cpu_model(char *buf, size_t cap);
void pb_env_library_versions(const char *backend_libraries, char *buf, size_t cap);
void pb_env_host(char *buf, size_t cap);

#endif
