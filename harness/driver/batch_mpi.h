/* harness/driver/batch_mpi.h — one configuration of a batch (compare, sweep) under the mpi
 * executor: `mpirun -np D pipebench run ...` (or `... pipebench resume RUN` where the
 * claim found the configuration's run with a resume state) started and waited for by the
 * batch's child process, which keeps the configuration's claim meanwhile, and how the run
 * ended read back from the results database. */
#ifndef PB_BATCH_MPI_H
#define PB_BATCH_MPI_H

#include <stddef.h>

#include "harness/driver/batch.h"

/* Runs it (its cfg.executor is mpi) under mpirun: --hostfile it->hostfile when set, else
 * this host's cores oversubscribed as needed; it->cfg.resume_run > 0 resumes that run. A
 * SIGTERM to this process is passed on to mpirun, which passes it to the ranks: the first
 * stops them at their epoch boundary (with their resume state), a second now. Fills *sum
 * from the run row the ranks wrote (run_id 0: none was written) and message with why it
 * did not end done; returns the exit status pb_run would have (PB_EXIT_USAGE when mpirun
 * could not start, failed before the run was recorded, or refused the resume). */
int pb_batch_mpi_run(const struct pb_batch_item *it, struct pb_run_summary *sum, char *message,
                     size_t cap);

#endif
