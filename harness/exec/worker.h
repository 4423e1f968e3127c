/* harness/exec/worker.h — what one device does with one op of its program (DESIGN
 * principles 2, 3): resolve the weight version the op names, run the stage's
 * forward, backward or optimizer step, and account time, staleness, prediction
 * error and memory. Every executor (seq, threads, mpi) drives workers through this
 * one function and differs only in how activations and gradients travel, so their
 * results are bit-identical by construction. */
#ifndef PB_WORKER_H
#define PB_WORKER_H

#include <time.h>

#include "workloads/datasets/dataset.h"
#include "harness/exec/metrics.h"
#include "harness/ir/program.h"
#include "harness/model/stage.h"
#include "harness/store/wstore.h"

#define PB_EVENTS_PER_EPOCH 4096

/* A tensor between stages: plain float32 in host memory from posix_memalign (64),
 * owned by whoever holds it (free() releases it). */
struct pb_msg {
    float *data;
    struct pb_shape shape;
};

/* A message buffer for count floats. */
float *pb_msg_alloc(size_t count);

struct pb_worker_stats {
    double busy_s, comm_s, wait_s;     /* seconds in ops, in copies, blocked */
    double f_stale_sum, b_stale_sum, f_stale_max, b_stale_max;
    long f_count, b_count;
    double pred_err_sum, pred_err_max;
    long pred_count;
    double loss_sum;                   /* last stage: Σ micro-batch mean losses */
    long loss_count;
    int nevents;
    struct pb_event_record events[PB_EVENTS_PER_EPOCH];
};

/* The data a stage reads: stage 0 the inputs, the last stage the labels. */
struct pb_data_view {
    const struct pb_dataset *ds;
    const int32_t *order;   /* the epoch's sample order */
    int batch;              /* b */
};

struct pb_worker {
    struct pb_stage *stage;
    struct pb_optim optim;
    struct pb_wstore ws;
    struct pb_pipe pipe;            /* D, N, M, variant of the schedule */
    int update_every;               /* micro-batches per update (1 or M) */
    bool stashes, buffered;         /* the program reads stashed / older weights */
    uint64_t seed;
    int epoch;
    long u;                         /* updates applied so far (all epochs) */
    long u_epoch;                   /* u when this epoch began */
    int nacc;                       /* backwards accumulated since the last update */
    int last_b_mb;                  /* micro-batch of the last backward */
    struct pb_stage_act *acts;      /* [N] in flight, by micro-batch */
    long *fwd_version;              /* [N] the version F(j) read (for stashing) */
    struct pb_data_view data;
    float *host_x;                  /* stage 0: gathered inputs [b, c, h, w] */
    int32_t *host_y, *labels;       /* last stage: host and device labels [b] */
    float *probe;                   /* a pending prediction (host) and its target */
    long probe_target;
    struct timespec epoch_t0;
    bool diverged;
    struct pb_worker_stats st;
};

int pb_worker_init(struct pb_worker *w, struct pb_stage *s, const struct pb_optim_cfg *oc,
                   const struct pb_pipe *pipe, uint64_t seed, struct pb_err *e);
void pb_worker_finish(struct pb_worker *w);

/* Prepares an epoch: the program (scanned for stash/buffer use), data order, stats. */
void pb_worker_begin_epoch(struct pb_worker *w, int epoch, const struct pb_program *prog,
                           struct pb_data_view data);

/* Runs one op. F on stage k > 0 consumes *in (the activation, freed here); F on a
 * non-last stage produces *out. B on a non-last stage consumes *in (the gradient);
 * B on stage k > 0 produces *out. U uses neither. */
int pb_worker_exec(struct pb_worker *w, const struct pb_op *op, struct pb_msg *in,
                   struct pb_msg *out, struct pb_err *e);

/* For the in-process executors, after an op: -1 with a message when the run must
 * stop now (the loss diverged, or SIGINT/SIGTERM arrived), else 0. */
int pb_worker_should_stop(const struct pb_worker *w, const struct pb_op *op, struct pb_err *e);

/* Seconds since the epoch began (for events and wait accounting). */
double pb_worker_clock(const struct pb_worker *w);

/* This epoch's stage record for the results. */
void pb_worker_record(const struct pb_worker *w, struct pb_stage_record *r);

#endif
