/* harness/driver/op_costs_alone.h — the simulator's op costs measured with each stage
 * alone on the cores a stage of the run gets (`pipebench partition --op-costs-out FILE`),
 * written as the CSV `pipebench simulate --op-costs FILE` reads. */
#ifndef PB_OP_COSTS_ALONE_H
#define PB_OP_COSTS_ALONE_H

#include "harness/driver/partition_report.h"

/* Per stage k of st's cut: F the sum of its blocks' forwards and B of their backwards
 * (forward + backward − forward), as pb_partition_study measured them, I and W of their
 * split backward's passes where the study measured them, U one step of c's optimizer
 * over the stage's parameters on a fresh backend with st->threads cores, and recv its
 * seconds carrying messages (both ways across its edges, as the workers send and
 * receive them between fresh backends on c->devices' placement) over the messages it
 * receives, each the median of st->reps after one untimed; into path (written whole or
 * not at all), in seconds, rows `k,F,s`, `k,B,s`, `k,U,s`, [`k,I,s`, `k,W,s`,] `k,recv,s`
 * under the header stage,op,seconds, after a comment saying how they were measured (and
 * a † line where the load average was above the cores: then they are not each stage's
 * alone). */
int pb_op_costs_alone_write(const struct pb_run_cfg *c, const struct pb_partition_study *st,
                            const char *path, struct pb_err *e);

#endif
