/* schedules/common.h — what the schedule files share (semantics §4): the checks
 * every pipe must pass, the 1F1B op order of §4 and the schedule instances the
 * registry lists. */
#ifndef PB_SCHEDULES_COMMON_H
#define PB_SCHEDULES_COMMON_H

#include "harness/ir/program.h"

extern const struct pb_schedule pb_schedule_gpipe, pb_schedule_1f1b, pb_schedule_zb_h1,
    pb_schedule_zb_h2, pb_schedule_interleaved, pb_schedule_looped_bfs, pb_schedule_pipedream,
    pb_schedule_pipedream_2bw, pb_schedule_spectrain, pb_schedule_xpipe, pb_schedule_pipeoptim,
    pb_schedule_pipemare;
extern const struct pb_schedule pb_schedule_zb_v, pb_schedule_dualpipe_v;

/* D ≥ 1, N ≥ 1, M ≥ 1 where the schedule uses it, the step_min·p micro-batches every
 * step needs, and a variant the schedule lists. */
int pb_sched_check_pipe(const struct pb_schedule *sch, const struct pb_pipe *p, struct pb_err *e);

/* True when the pipe names a variant (non-default) equal to v. */
bool pb_sched_variant_is(const struct pb_pipe *p, const char *v);

/* Emits stage k's ops in 1F1B order (semantics §4): w_k = min(D−1−k, N) warm-up
 * forwards, then F(j+w_k), B(j) pairs, then the remaining backwards. fwd emits
 * F(mb); bwd emits B(mb) and any U that follows it. */
typedef void (*pb_sched_emit_fn)(const struct pb_pipe *p, int k, int mb, struct pb_program *out);
void pb_sched_emit_1f1b(const struct pb_pipe *p, int k, struct pb_program *out,
                        pb_sched_emit_fn fwd, pb_sched_emit_fn bwd);

/* True when B(mb) completes a mini-batch of M micro-batches (the last of the epoch
 * completes a final partial one). */
bool pb_sched_ends_minibatch(const struct pb_pipe *p, int mb);

/* Emits device d's ops of one step: micro-batches first … first + n − 1, then its U. */
typedef void (*pb_sched_step_fn)(const struct pb_pipe *p, int d, int first, int n,
                                 struct pb_program *out);
/* A synchronous schedule's epoch: the N micro-batches in steps of M (the last step the
 * rest), each emitted by step. */
void pb_sched_emit_steps(const struct pb_pipe *p, int d, struct pb_program *out,
                         pb_sched_step_fn step);

#endif
