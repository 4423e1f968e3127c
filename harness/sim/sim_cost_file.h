/* harness/sim/sim_cost_file.h — the simulator's op costs from a file (`pipebench
 * simulate --op-costs FILE`): CSV rows `stage,op,seconds` under that header line. */
#ifndef PB_SIM_COST_FILE_H
#define PB_SIM_COST_FILE_H

#include <stdbool.h>

#include "harness/sim/sim.h"

/* The op kinds of a program, a bit (1 << kind) each. */
unsigned pb_program_kinds(const struct pb_program *prog);

/* Reads costs[stages] from the CSV file at path: '#' comments and blank lines aside, a
 * header `stage,op,seconds`, then one row per stage and op, the stage 0..stages − 1, the
 * op F, B, U, I, W or recv (a message's transfer into the stage), the seconds finite and
 * at least 0. Every stage needs a row for each kind its program runs (kinds[k], bits of
 * pb_program_kinds); recv defaults to 0 and a kind the program does not run costs 0
 * whatever its row says. *contended: some comment line begins "# †" (costs measured
 * while the stages shared cores, as `pipebench partition --op-costs-out` marks them). A
 * malformed row, an unknown stage or op, a repeated row, a bad number or a missing row
 * is an error naming the file, the line and what to write. */
int pb_sim_cost_file_read(const char *path, int stages, const unsigned *kinds,
                          struct pb_sim_cost *costs, bool *contended, struct pb_err *e);

#endif
