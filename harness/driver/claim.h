/* harness/driver/claim.h — a configuration's claim, so that two sweeps on one database
 * split its configurations instead of running each twice: an open-file-description lock
 * (fcntl F_OFD_SETLK) on one byte of <db>.claims, the byte chosen by a 64-bit hash of
 * the configuration (its JSON without the thread count) and its repeat index (--repeat:
 * each repeat is claimed apart). The kernel drops the lock when
 * the last process holding it ends however it ends, kill -9 included, so a claim never
 * outlives its owner; the run row such a process leaves 'running' is marked failed by
 * the next open of the database (results.h). */
#ifndef PB_CLAIM_H
#define PB_CLAIM_H

#include "harness/driver/run.h"

enum pb_claim {
    PB_CLAIM_TAKEN,     /* *fd holds the claim: fork the run with it, close it after */
    PB_CLAIM_BUSY,      /* another process holds it: that process runs the configuration */
    PB_CLAIM_FINISHED,  /* the database holds a finished run of it, of that repeat (done
                         * or diverged) */
};

/* Takes configuration c's claim in c->db's claim file, or says who has it; -1 with e
 * when the claim file or the database cannot be used. With PB_CLAIM_TAKEN, *fd is the
 * descriptor that holds it (close-on-exec, inherited by fork; the claim ends when every
 * copy of it is closed), and *resume_run, when > 0, the newest interrupted or failed run
 * of the configuration that left a resume state, to be continued (pipebench resume)
 * rather than run again, with its recorded *threads (its numbers depend on them);
 * otherwise *fd is -1. */
int pb_claim_take(const struct pb_run_cfg *c, int *fd, int64_t *resume_run, int *threads,
                  struct pb_err *e);

/* Without a claim, for a plan (sweep --dry-run): *resume_run, when > 0, the run that
 * taking c's claim now would continue from its resume state (0: it would run afresh or
 * is finished). -1 with e when the database cannot be read. */
int pb_claim_resumable(const struct pb_run_cfg *c, int64_t *resume_run, struct pb_err *e);

#endif
