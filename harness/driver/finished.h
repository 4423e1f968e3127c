/* harness/driver/finished.h — which configurations a results database already holds a
 * finished run of (status done or diverged, the same configuration JSON but for the
 * thread count, and the same repeat index), so compare and sweep run each repeat of a
 * configuration once (`--force` reruns): a rerun with a larger --repeat adds the
 * repeats missing. */
#ifndef PB_FINISHED_H
#define PB_FINISHED_H

#include <stdbool.h>
#include <stdint.h>

#include "harness/driver/batch.h"

/* run_id[i] = the latest finished run of items[i]'s configuration (pb_run_cfg_json) and
 * repeat (cfg.repeat), 0
 * when there is none, for the database at db. With create, makes the database when
 * missing (before parallel runs start, so they do not race to make it) and marks as
 * failed the runs left 'running' by processes that died; without, a missing database
 * holds nothing. */
int pb_finished_runs(const char *db, const struct pb_batch_item *items, int n, int64_t *run_id,
                     bool create, struct pb_err *e);

#endif
