/* harness/exec/worker.h — what one device does with one op of its program (design
 * §2.2, §2.3): resolve the weight version the op names, run the stage's
 * forward, backward or optimizer step, and account time, staleness, prediction
 * error and memory. Every executor (seq, threads, mpi) drives workers through this
 * one function and differs only in how activations and gradients travel, so their
 * results are bit-identical by construction. */
#ifndef PB_WORKER_H
#define PB_WORKER_H

#include <time.h>

#include "workloads/datasets/dataset.h"
#include "harness/exec/feed.h"
#include "harness/ir/metrics.h"
#include "harness/ir/program.h"
#include "harness/model/stage.h"
#include "harness/store/wstore.h"

/* A tensor between stages: plain float32 in the memory of the backend that sent it
 * (device memory on a GPU), counted as that stage's communication memory until the
 * receiver takes it (pb_backend_take) — or, for a receiver that shares no memory with
 * the sender (another device), in host memory the sender downloaded it to on its own
 * thread, which the receiver uploads on its own: no thread uses another's instance. */
struct pb_msg {
    struct pb_backend *be;   /* owner of data */
    float *data;
    struct pb_shape shape;
    float *host;             /* instead of data: the tensor in host memory (malloc) */
};

/* Moves a message into a tensor of backend be (the receiving stage's): a buffer of an
 * instance that shares memory with it is taken over without a copy (it stops counting
 * as the sender's communication memory now), one on another device is peer-copied on
 * be's stream and released with be's fence, one staged in host memory is uploaded,
 * another is copied across and freed. */
int pb_msg_to_tensor(struct pb_backend *be, struct pb_msg *m, enum pb_mem_kind kind,
                     struct pb_tensor *t, struct pb_err *e);

/* The sender's side: tensor t (plain, PB_MEM_COMM of be) becomes message m and stays
 * be's memory until the receiver (on backend `to`) takes or peer-copies it; for a
 * receiver that can do neither, it is downloaded here and m holds the host copy.
 * Returns the seconds that download took (0 when there was none). */
double pb_msg_from_tensor(struct pb_backend *be, struct pb_backend *to, struct pb_tensor *t,
                          struct pb_msg *m);

/* Whether an op produced a message. */
static inline bool pb_msg_present(const struct pb_msg *m)
{
    return m->data || m->host;
}

/* Frees a message's buffer, if any, to its owner. */
static inline void pb_msg_free(struct pb_msg *m)
{
    if (m->data)
        pb_backend_free(m->be, m->data);
    m->data = NULL;
    free(m->host);
    m->host = NULL;
}

struct pb_worker_stats {
    double busy_s, comm_s, wait_s;     /* seconds in ops, in copies, blocked */
    double f_stale_sum, b_stale_sum, f_stale_max, b_stale_max;
    long f_count, b_count;
    double pred_err_sum, pred_err_max;
    long pred_count;
    double loss_sum;                   /* last stage: Σ micro-batch mean losses */
    long loss_count;
    long ops;                          /* ops run this epoch */
    int nevents;                       /* events kept this epoch (pb_worker_trace) */
};

/* Which ops of an epoch are logged as events: none, or those of micro-batches
 * [mb_lo, mb_hi) (a U with the backward before it). Nothing is dropped silently: the
 * epoch's record says how many ops ran and how many events were kept. */
struct pb_worker_trace {
    bool on;
    int mb_lo, mb_hi;
};

struct pb_worker {
    struct pb_stage *stage;
    /* the neighbours' instances in this process (pb_workers_link; NULL: none, or another
     * process's, reached through the executor's transport) */
    struct pb_backend *prev_be, *next_be;
    struct pb_optim optim;
    struct pb_wstore ws;
    struct pb_pipe pipe;            /* D, N, M, variant of the schedule */
    const struct pb_program *prog;  /* this epoch's program */
    struct pb_version_plan plan;    /* the version every op of it reads (harness/ir) */
    uint64_t seed;
    int epoch;
    long u;                         /* updates applied so far (all epochs) */
    long u_epoch;                   /* u when this epoch began */
    int nacc;                       /* backwards accumulated since the last update */
    int last_b_mb;                  /* micro-batch of the last backward */
    struct pb_stage_act *acts;      /* [N] in flight, by micro-batch */
    struct pb_data_view data;       /* this pass's micro-batches (feed.h) */
    int32_t *host_y, *labels;       /* last stage: host and device labels [nlabels] */
    int32_t *host_len, *lengths;    /* stages that read lengths: host and device [b] */
    float *probe;                   /* a prediction kept (host) and its target version */
    long probe_target;
    const float *probe_pending;     /* a prediction to keep once its op is timed */
    long probe_pending_target;
    struct timespec epoch_t0;
    bool diverged;
    struct pb_worker_trace trace;   /* set before pb_worker_begin_epoch */
    bool evaluating;                /* a validation pass (pb_worker_begin_eval) */
    struct {
        double loss_sum;            /* Σ batch mean losses (last stage) */
        long correct, counted, batches;  /* labels right and counted (not ignored) */
    } eval;
    struct pb_event_record *events; /* [st.nevents] this epoch's, capacity kept */
    int events_cap;
    struct {
        double *s;                  /* [n] this epoch's op durations of one kind */
        int n, cap;
    } op_times[5];                  /* by enum pb_op_kind: their medians are the
                                       simulator's costs */
    struct pb_worker_stats st;
};

int pb_worker_init(struct pb_worker *w, struct pb_stage *s, const struct pb_optim_cfg *oc,
                   const struct pb_pipe *pipe, uint64_t seed, struct pb_err *e);
void pb_worker_finish(struct pb_worker *w);
/* Tells the n workers of one process their neighbours, so that a message to a stage on
 * another device is staged through host memory by its sender (struct pb_msg). */
void pb_workers_link(struct pb_worker *workers, int n);

/* Prepares an epoch: the program and its version plan (the weight store sized for
 * it), data order, stats. */
int pb_worker_begin_epoch(struct pb_worker *w, int epoch, const struct pb_program *prog,
                          struct pb_data_view data, struct pb_err *e);

/* Prepares a validation pass with the current weights: prog is a forward-only
 * program (pb_program_eval) over data in file order. Forwards then run without
 * training (nothing kept for a backward, no statistics or events of the epoch
 * touched); the last stage sums the loss and correct count into w->eval. */
int pb_worker_begin_eval(struct pb_worker *w, const struct pb_program *prog,
                         struct pb_data_view data, struct pb_err *e);

/* Runs one op, an element of the epoch's program. F on stage k > 0 consumes *in (the activation, freed here); F on a
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
void pb_worker_record(struct pb_worker *w, struct pb_stage_record *r);

#endif
