/* harness/exec/executors.c — the table of executors (executor.h): each entry adapts one
 * executor's entry point to the one signature a run calls every pass. */
#include <string.h>

#include "harness/exec/executor.h"

static int run_seq(struct pb_worker *workers, int ndev, const struct pb_dist *dist,
                   const struct pb_program *progs, int capacity, struct pb_err *e)
{
    (void)dist;
    (void)capacity;
    return pb_exec_seq(workers, ndev, progs, e);
}

/* capacity D (or more where the programs need it): a stage may run a whole pipeline's
 * worth ahead of its neighbour */
static int run_threads(struct pb_worker *workers, int ndev, const struct pb_dist *dist,
                       const struct pb_program *progs, int capacity, struct pb_err *e)
{
    (void)dist;
    return pb_exec_threads(workers, ndev, progs, capacity > ndev ? capacity : ndev, e);
}

static int run_mpi(struct pb_worker *workers, int nst, const struct pb_dist *dist,
                   const struct pb_program *progs, int capacity, struct pb_err *e)
{
    (void)capacity;  /* MPI sends never block; a device's own edges are unbounded queues */
    return pb_exec_mpi(dist, workers, nst, &progs[dist->rank], e);
}

static const struct pb_executor seq = {"seq", false, true, run_seq};
static const struct pb_executor threads = {"threads", false, false, run_threads};
static const struct pb_executor mpi = {"mpi", true, false, run_mpi};

const struct pb_executor *const pb_executors[] = {&seq, &threads, &mpi, NULL};

const struct pb_executor *pb_executor_find(const char *name, struct pb_err *e)
{
    for (int i = 0; pb_executors[i]; i++)
        if (!strcmp(pb_executors[i]->name, name))
            return pb_executors[i];
    pb_err_set(e, "unknown executor '%s'; valid executors: seq, threads, mpi", name);
    return NULL;
}
