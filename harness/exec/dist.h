/* harness/exec/dist.h — the processes a run spans. One process (seq, threads) passes
 * d = NULL and every call below is then local; the mpi executor runs one rank per device
 * (the stages of its v chunks) and these become MPI collectives and point-to-point
 * messages (Open MPI), so the same command spans machines with a hostfile. */
#ifndef PB_DIST_H
#define PB_DIST_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/base/err.h"
#include "harness/ir/program.h"

struct pb_worker;

struct pb_dist {
    int rank, size;
};

/* Whether this build has the mpi executor. */
bool pb_dist_available(void);
/* MPI_Init (once per process) and the world's rank and size. */
int pb_dist_init(struct pb_dist *d, struct pb_err *e);
void pb_dist_finish(struct pb_dist *d);

/* true when `local` is true on any rank (d NULL: local). */
bool pb_dist_any(const struct pb_dist *d, bool local);
/* The sum of *x over all ranks, on every rank (d NULL: unchanged). */
void pb_dist_sum(const struct pb_dist *d, double *x);
/* Root's bytes to every rank. */
void pb_dist_bcast(const struct pb_dist *d, void *buf, size_t bytes, int root);
/* Point-to-point, blocking; FIFO per (source, tag). */
void pb_dist_send(const struct pb_dist *d, const void *buf, size_t bytes, int to, int tag);
void pb_dist_recv(const struct pb_dist *d, void *buf, size_t bytes, int from, int tag);
/* Every rank's `bytes` (the same on all) into all[size · bytes] at root. */
void pb_dist_gather(const struct pb_dist *d, const void *mine, size_t bytes, void *all, int root);
/* Variable sizes: root receives a malloc'ed concatenation and its length. */
void pb_dist_gatherv(const struct pb_dist *d, const void *mine, size_t bytes, void **all,
                     size_t *total, int root);
void pb_dist_barrier(const struct pb_dist *d);
/* Ends every rank at once, after the message was printed. */
_Noreturn void pb_dist_abort(const struct pb_dist *d, int status);

/* The mpi executor, one rank per device: this rank runs its device's program prog (the
 * device is the rank) on the workers[nst] of the stages it holds (pb_pipe_stage_of), an
 * op on chunk c on its stage's worker and a U on every chunk's, as the threads executor
 * runs a device. An edge between two stages of this rank (V placement's p−1 → p) is a
 * local queue; one to another rank goes by MPI point-to-point (non-blocking sends, so
 * channels never block a sender), each edge and direction under its own tag. A failure
 * prints the reason and aborts every rank (bounded time, no hang). Divergence is reported
 * through the workers' `diverged` at the end. */
int pb_exec_mpi(const struct pb_dist *d, struct pb_worker *workers, int nst,
                const struct pb_program *prog, struct pb_err *e);

/* PB_TAG_WEIGHTS: stage weights gathered at rank 0; PB_TAG_STATE: the stages' resume
 * states sent to rank 0 and back; edge k's forward messages (stage k to k + 1) go under
 * PB_TAG_EDGES + 2k, its backward ones under PB_TAG_EDGES + 2k + 1. */
enum { PB_TAG_WEIGHTS = 3, PB_TAG_STATE = 4, PB_TAG_EDGES = 16 };

#endif
