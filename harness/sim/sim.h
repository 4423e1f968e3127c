/* harness/sim/sim.h — the pipeline simulator (design §6.6): the D programs of an epoch
 * run on D virtual devices, one per stage, in virtual time. Each op takes its stage's
 * cost for its kind; activations and gradients travel through FIFO channels of the
 * executors' capacity, a send blocking while its channel is full and a message
 * arriving its receiver's `recv` seconds after it is sent. Nothing is computed: it answers what the
 * schedule does on a machine with one device per stage, whatever cores this one has. */
#ifndef PB_SIM_H
#define PB_SIM_H

#include <stdbool.h>

#include "harness/ir/metrics.h"
#include "harness/ir/program.h"

/* Seconds one op of each kind takes on a stage, and a message's transfer time into it
 * (from either neighbour: what a run measures as the receiver's copy time); i and w:
 * the split backward's input- and weight-gradient passes (b = i + w for most layers). */
struct pb_sim_cost {
    double f, b, u, recv, i, w;
};

/* The cost of one op of kind `kind` (enum pb_op_kind). */
double pb_sim_op_cost(const struct pb_sim_cost *c, int kind);

struct pb_sim_result {
    int stages;
    long ops;                       /* ops simulated, all devices */
    double makespan_s;              /* the last device's end */
    double *busy_s;                 /* [D] time in ops */
    double *bubble;                 /* [D] idle fraction: 1 − busy_s / makespan_s */
    int *acts_peak;                 /* [D] most micro-batches whose activations a device
                                       holds at once (forwarded, their B or W not run) */
    int *stash_peak;                /* [D] most stashed weight versions held at once */
    int *wcopies_peak;              /* [D] copies of the stage's weights its store holds at
                                       most: the stash, XPipe's mini-batch predictions,
                                       2BW's older buffer and a prediction's Ŵ (the memory
                                       kind wcopies, in parameter sets) */
    struct pb_event_record *events; /* [ops] when asked for: every op, as a run logs it */
    /* Set by pb_simulate_pipe when it extrapolated a verified steady state (design
     * §6.6) instead of running every op: the epoch is that of `from_length`
     * micro-batches plus (N − from_length) / period_mbs periods of period_s each. */
    bool extrapolated;
    int from_length;                /* N': the micro-batches simulated op by op */
    long from_ops;                  /* the ops of N', all devices */
    int period_mbs;                 /* P: micro-batches per period */
    double period_s;                /* T: the verified time of one period */
};

/* Simulates one epoch: progs[D] (validated), costs[D], channel capacity ≥ 1 (the threads
 * executor's is D). With v chunks per device progs[] are the p = D / v devices'
 * programs, an op costs its stage's op (a U every chunk's), and the result's per-device
 * arrays hold the devices' in [0, p): busy, bubble and activations in chunk units (the
 * version-derived peaks stay 0). keep_events fills r->events with each op's virtual start and end
 * and its versions from the version plan. Fails only when the programs deadlock (which
 * pb_programs_validate rules out) or a cost is negative or not finite. */
int pb_simulate(const struct pb_pipe *p, const struct pb_program *progs,
                const struct pb_sim_cost *costs, int capacity, bool keep_events,
                struct pb_sim_result *r, struct pb_err *e);
/* A zeroed result for D stages with its per-device arrays allocated. */
void pb_sim_result_init(struct pb_sim_result *r, int stages);
void pb_sim_result_finish(struct pb_sim_result *r);

/* An op's start, and when its device is free after it (its output sent). */
struct pb_op_times {
    double start, free;
};

/* pb_simulate without events or peaks (acts_peak, stash_peak, wcopies_peak stay 0), that
 * also writes every op's times into times[ops]: device 0's ops first, then device 1's. */
int pb_sim_times(const struct pb_pipe *p, const struct pb_program *progs,
                 const struct pb_sim_cost *costs, int capacity, struct pb_op_times *times,
                 struct pb_sim_result *r, struct pb_err *e);

/* A program's peaks as pb_simulate reports them: acts_peak, stash_peak, wcopies_peak. */
void pb_sim_peaks(const struct pb_pipe *p, const struct pb_program *prog, int *acts,
                  int *stash, int *wcopies);

/* Most micro-batches a program holds between F and B or W (its activations), from the
 * order of its ops alone. */
int pb_sim_acts_peak(const struct pb_program *prog);

#endif
