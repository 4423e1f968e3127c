/* harness/exec/executor.h — executors run every device's program of an epoch on the
 * workers. They differ only in where devices run and how messages travel; the ops
 * themselves are pb_worker_exec, so all executors produce bit-identical weights. */
#ifndef PB_EXECUTOR_H
#define PB_EXECUTOR_H

#include "harness/exec/worker.h"

/* The sequential reference: all devices in one thread, each op run as soon as its
 * input is there, device by device. Stops at the first error or divergence. */
int pb_exec_seq(struct pb_worker *workers, int ndev, const struct pb_program *progs,
                struct pb_err *e);

/* One thread per device; channels hold at most `capacity` messages (≥ 1: every
 * validated program runs without deadlock with capacity 1). */
int pb_exec_threads(struct pb_worker *workers, int ndev, const struct pb_program *progs,
                    int capacity, struct pb_err *e);

#endif
