/* harness/exec/executor.h — executors run every device's program of an epoch on the
 * workers. They differ only in where devices run and how messages travel; the ops
 * themselves are pb_worker_exec, so all executors produce bit-identical weights. A run
 * picks one from the table pb_executors once, when its plan is built, and calls it
 * through the entry's `run` every pass. */
#ifndef PB_EXECUTOR_H
#define PB_EXECUTOR_H

#include "harness/exec/dist.h"
#include "harness/exec/worker.h"

/* The sequential reference: all devices in one thread, each op run as soon as its
 * input is there, device by device. Stops at the first error or divergence. workers[nst]
 * are the stages' (begun with their stage programs, pb_programs_stages), progs[p] the
 * devices' programs (p = nst / v, v from workers[0].pipe). */
int pb_exec_seq(struct pb_worker *workers, int nst, const struct pb_program *progs,
                struct pb_err *e);

/* One thread per device, workers and programs as pb_exec_seq's; channels hold at most
 * `capacity` messages (≥ the programs' pb_programs_capacity). */
int pb_exec_threads(struct pb_worker *workers, int nst, const struct pb_program *progs,
                    int capacity, struct pb_err *e);

/* One executor of the table: how a run's passes go. */
struct pb_executor {
    const char *name;             /* as --executor names it */
    bool one_rank_per_device;     /* mpi: each process holds one device's stages (dist.h) */
    bool stages_in_turn;          /* seq: the stages share one thread, so its timings are
                                     not a pipeline's */
    /* Runs the device programs progs[] on the workers[nst] of the stages this process
     * holds (one process: all of them; one rank per device: device dist->rank's chunks,
     * pb_pipe_stage_of), with
     * channels of at least `capacity` messages where they are bounded. */
    int (*run)(struct pb_worker *workers, int nst, const struct pb_dist *dist,
               const struct pb_program *progs, int capacity, struct pb_err *e);
};

/* seq, threads, mpi; {NULL}-terminated. */
extern const struct pb_executor *const pb_executors[];

/* The executor named name; NULL with a message listing the valid ones. */
const struct pb_executor *pb_executor_find(const char *name, struct pb_err *e);

#endif
