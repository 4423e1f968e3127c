/* harness/driver/stage_states.h — every stage's resumable state at the plan's writer
 * (semantics §1.10): the host copies of each stage's weights, BatchNorm statistics and
 * optimizer slots (checkpoint.h), and its worker's update and step counts. In one process
 * they are the local stages'; under MPI each rank sends its stage's to rank 0 (which
 * writes the one resume state file) and, on a resume, receives its own back from it. */
#ifndef PB_STAGE_STATES_H
#define PB_STAGE_STATES_H

#include "harness/driver/local_stages.h"
#include "harness/store/checkpoint.h"

struct pb_stage_states {
    int n;                        /* D at the writer, 0 elsewhere */
    struct pb_stage *lay;         /* [n] every stage's layout (pb_stage_layout) */
    struct pb_stage_state *h;     /* [n] */
    long *updates, *steps;        /* [n] each worker's applied updates, optimizer steps */
};

/* Downloads the local stages' states; the writer receives the others' (collective). */
void pb_stage_states_gather(struct pb_stage_states *ss, struct pb_local_stages *ls,
                            const struct pb_plan *p);
/* For a load: the writer's host copies, allocated with each stage's sizes and the slots
 * its optimizer keeps (collective; the ranks say theirs), counts zero. */
void pb_stage_states_shape(struct pb_stage_states *ss, struct pb_local_stages *ls,
                           const struct pb_plan *p);
/* The writer's copies and counts into every stage and worker, each rank taking its own
 * (collective). */
void pb_stage_states_scatter(struct pb_stage_states *ss, struct pb_local_stages *ls,
                             const struct pb_plan *p);
void pb_stage_states_free(struct pb_stage_states *ss);

#endif
