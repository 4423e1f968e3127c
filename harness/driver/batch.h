/* harness/driver/batch.h — runs a list of configurations for compare and sweep, each in a
 * forked process (one at a time or N at once), and shows the progress: a bar redrawn
 * in place on a terminal (runs done, each current run's epoch, ETA), plain lines else. */
#ifndef PB_BATCH_H
#define PB_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "harness/driver/run.h"
#include "harness/driver/run_flags.h"

struct pb_batch_item {
    struct pb_run_cfg cfg;    /* in: what to run (its on_epoch hook is the batch's) */
    char label[160];          /* in: how progress lines name it */
    bool claim;               /* in: run it under its claim (claim.h), skip it when another
                               * process holds that or has finished it */
    struct pb_run_flags flags;   /* in, for the mpi executor: the options cfg was made of,
                                  * passed to `pipebench run` under mpirun (but db, threads,
                                  * quiet and repeat, which come from cfg) */
    const char *hostfile;     /* in, for the mpi executor: mpirun's --hostfile (NULL: none,
                               * the ranks on this host, oversubscribed as needed) */
    /* out */
    bool started;             /* a process ran it */
    bool elsewhere;           /* skipped: another process runs it or has finished it */
    int exit_status;          /* PB_EXIT_OK, PB_EXIT_RUN, PB_EXIT_INTERRUPTED (run_id 0:
                               * stopped while it set up, no row), PB_EXIT_USAGE; -1: it
                               * crashed, or was not started */
    int64_t run_id;           /* 0 when no run row was written */
    enum pb_run_status status;
    int epochs_done;
    double best_acc, final_acc, seconds;
    char message[1024];       /* why, when it did not end done */
};

/* What a batch ended with. */
struct pb_batch_totals {
    int done, diverged, interrupted;
    int failed;                           /* also crashed */
    int errors;                           /* the environment stopped a run from starting */
    int not_started;                      /* left, or stopped while they set up, when a
                                           * signal stopped the batch */
    int elsewhere;                        /* skipped: claimed by another process */
    bool stopped;                         /* SIGINT, SIGTERM or SIGHUP stopped the batch */
};

/* The stage threads of items[0 .. n) run `jobs` at a time when the widest run at a time:
 * its stages (one for the seq executor, which runs them in turn) times the runs at once.
 * Above the machine's cores every timing is a shared machine's (a dagger in the tables). */
int pb_batch_threads(const struct pb_batch_item *items, int n, int jobs);

/* Checks a configuration with pb_run_check. *unsupported is set when the only problem
 * is that the schedule cannot run the optimizer (spectrain with Adam): compare and sweep
 * skip those pairs. */
int pb_batch_check(const struct pb_run_cfg *c, bool *unsupported, struct pb_err *e);

/* Runs items[0 .. n) in order, `jobs` processes at a time (each a fork that runs
 * pb_run quietly and exits; for the mpi executor, one that runs `mpirun -np D pipebench
 * run ...` with the item's flags under the item's claim and reads how the run ended
 * from the database), and fills their outcomes and *totals. `what` names the
 * batch in the progress ("compare", "sweep"). The run row of a process that crashed is
 * marked failed; an item whose process could not be started counts as an error.
 * SIGINT, SIGTERM or SIGHUP stops it: no other run starts, each signal is passed on to
 * the running runs (the first stops them at their epoch boundary with their resume
 * state, a second now; each records itself interrupted), and a run still setting up
 * ends without a row and counts as not started. */
void pb_batch_run(struct pb_batch_item *items, int n, int jobs, const char *what,
                  struct pb_batch_totals *totals);

#endif
