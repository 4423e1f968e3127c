/* results/results_sim.h — a recorded run's simulated throughput and bubble (design §6.6):
 * the one definition `pipebench simulate --run`, `report --table sim-throughput` and
 * `sim-bubble`, and the throughput figure's simulated bars use. */
#ifndef PB_RESULTS_SIM_H
#define PB_RESULTS_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "harness/sim/sim.h"
#include "results/results.h"

/* Samples per second of an epoch of `length` micro-batches of `microbatch_size` samples
 * that takes makespan_s. */
double pb_sim_samples_per_s(int length, int microbatch_size, double makespan_s);

/* The simulator's per-stage costs[rc->stages] from run `id`'s medians (rc): F and U, and
 * B or the split backward's I and W, each of which its events must hold, and each
 * stage's copy time per message received; a kind the run's programs lack costs 0. A run
 * of model chunks is refused (the simulator runs one chunk per device, as a run's own
 * epochs are simulated). */
int pb_run_sim_costs(const struct pb_run_costs *rc, int64_t id, struct pb_sim_cost *costs,
                     struct pb_err *e);

/* What pb_results_run_sim finds of a run. */
struct pb_run_sim {
    double samples_per_s;  /* the simulated epoch's throughput */
    double bubble;         /* its devices' mean idle fraction: the simulated makespan less
                              each device's busy time, over D makespans */
    bool contended;        /* rc.contended: its costs were measured while its stages shared
                              cores (set also when the run is read but cannot be simulated) */
};

/* Run `id` simulated: its own pipe (schedule, variant, optimizer, D, N, M, micro-batch
 * size) on one device per stage with pb_run_sim_costs. -1 with a message when it cannot
 * be simulated (out->contended still set where the run was read). */
int pb_results_run_sim(struct pb_results *db, int64_t id, struct pb_run_sim *out,
                       struct pb_err *e);

/* Registers the SQL functions pb_sim_throughput(run_id) and pb_sim_bubble(run_id)
 * (pb_results_run_sim's samples/s and bubble fraction, NULL where the run cannot be
 * simulated) and pb_sim_contended(run_id) (1 or 0: its op times measured on shared
 * cores, whether or not it can be simulated) on db's connection, for the reports. */
int pb_results_sim_functions(struct pb_results *db, struct pb_err *e);

#endif
