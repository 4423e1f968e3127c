/* harness/sim/sim_periodic.h — simulating a whole pipe (design §6.6): its programs op by
 * op, or, for a large pipe, a shorter epoch whose steady state is verified to repeat
 * exactly, extrapolated to the pipe's N micro-batches (sim_periodic.c says how). */
#ifndef PB_SIM_PERIODIC_H
#define PB_SIM_PERIODIC_H

#include "harness/sim/sim.h"

/* Pipes of at most this many ops (3·D·N bounds them) are simulated op by op, as
 * pb_simulate does: a fraction of a second, and bit for bit what it always gave. */
#define PB_SIM_FULL_OPS 4000000LL

/* Simulates the epoch of `sch` on pipe p (the schedule's check first): op by op, on
 * `progs` when the caller has them built (validated) or else on programs it builds and
 * validates, when the
 * pipe has at most PB_SIM_FULL_OPS ops or keep_events asks for every op's event (then at
 * most PB_MAX_PROGRAM_OPS), else by extrapolating a verified steady state (r->extrapolated),
 * falling back to op by op when that cannot be verified and the pipe is under
 * PB_MAX_PROGRAM_OPS. Fails with a message saying what to change otherwise. */
int pb_simulate_pipe(const struct pb_schedule *sch, const struct pb_pipe *p,
                     const struct pb_program *progs, const struct pb_sim_cost *costs, int capacity, bool keep_events,
                     struct pb_sim_result *r, struct pb_err *e);

/* pb_simulate_pipe with the op-by-op threshold given: 0 extrapolates whenever it can
 * (the tests). */
int pb_simulate_pipe_above(const struct pb_schedule *sch, const struct pb_pipe *p,
                           const struct pb_program *progs, const struct pb_sim_cost *costs, int capacity, bool keep_events,
                           long long full_ops, struct pb_sim_result *r, struct pb_err *e);

#endif
