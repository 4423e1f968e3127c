/* harness/driver/run_row.h — a run's row in the results database, written once its plan
 * and stages stand: the last checks of what the user gave (--save's folder, the BLEU
 * reference), then the row (or a resumed run's row taken up again). */
#ifndef PB_RUN_ROW_H
#define PB_RUN_ROW_H

#include "harness/driver/run_bleu.h"
#include "results/results.h"

/* At the writer: probes --save, prepares the BLEU scoring into bleu, opens the database
 * into *db and writes the row (or resumes cfg->resume_run from epoch start_epoch) into
 * *run_id. A collective: every rank fails together. */
int pb_run_row_begin(const struct pb_plan *p, struct pb_run_bleu *bleu, int start_epoch,
                     struct pb_results **db, int64_t *run_id, struct pb_err *e);

#endif
