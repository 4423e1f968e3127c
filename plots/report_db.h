/* plots/report_db.h — the reporting connection to a results database: opened existing,
 * with the TEMP views of results/views.sql (semantics §6 metrics per run), plus what the tables,
 * figures and traces share: the registry order of schedule columns and the default run. */
#ifndef PB_REPORT_DB_H
#define PB_REPORT_DB_H

#include <stdint.h>

#include "harness/base/err.h"
#include "results/results.h"

/* Opens the existing database at path for reading and creates the views on the
 * connection (TEMP: the file is not changed). */
int pb_report_open(struct pb_results **out, const char *path, struct pb_err *e);

/* Which runs a report, figure or listing reads: those recorded under `experiment`
 * (NULL: any), whose recorded configuration has key = value for every "key=value" of
 * where[] (compared as the text of the JSON value: lr=0.01, nesterov=true), and, when
 * runs is set, whose id is in that comma-separated list. */
#define PB_REPORT_MAX_WHERE 16
struct pb_report_select {
    const char *experiment;
    const char *where[PB_REPORT_MAX_WHERE];
    int nwhere;
    const char *runs;
};

/* Restricts the views of this connection to the selected runs (nothing set: all). A key
 * no run records, a malformed KEY=VALUE or run list, and a selection that matches no run
 * are errors saying what to change. */
int pb_report_select(struct pb_results *db, const struct pb_report_select *sel,
                     struct pb_err *e);

/* Sets the target validation accuracy (a fraction; <= 0: none) of the run_target view and
 * run_summary's epochs_to_target and seconds_to_target on this connection. */
int pb_report_set_target(struct pb_results *db, double target_acc, struct pb_err *e);

/* Fails with a message saying how to record runs when the database holds no run with
 * status 'done'. */
int pb_report_require_done(struct pb_results *db, struct pb_err *e);

/* Column order of a schedule and variant (NULL or "" = the default): the registry order
 * gpipe, pipedream, pipedream-2bw, spectrain, xpipe, pipeoptim, each default first and
 * then its variants as listed; unknown schedules and variants sort after the known. */
int pb_report_schedule_rank(const char *schedule, const char *variant);

/* The run to plot or trace: run_id when > 0 (it must exist), else the newest run with
 * status 'done'. Returns the id, or -1 with a message. */
int64_t pb_report_pick_run(struct pb_results *db, int64_t run_id, struct pb_err *e);

#endif
