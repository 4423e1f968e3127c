/* harness/driver/run_resume.h — a run's resume state (run_resume.c, semantics §1.10): its
 * save after some epochs and its load into a resumed run's stages and workers. Its file:
 * pb_run_state_path (run.h). */
#ifndef PB_RUN_RESUME_H
#define PB_RUN_RESUME_H

#include "harness/driver/local_stages.h"

/* Writes run run_id's state after epochs_done epochs: rank 0 writes it under MPI, from
 * every rank's stage (collective; every rank fails together, rank 0 says why). */
int pb_run_save_state(const struct pb_plan *p, struct pb_local_stages *ls, int64_t run_id,
                      int epochs_done, struct pb_err *e);
/* Loads the state of the plan's run to resume (cfg->resume_run) into the stages and
 * workers, rank 0 reading it under MPI and each rank taking its stage's part
 * (collective); *start_epoch the first epoch to train (0 when there is no state). */
int pb_run_load_state(const struct pb_plan *p, struct pb_local_stages *ls, int *start_epoch,
                      struct pb_err *e);

#endif
