/* harness/cli/cli_resume.c — `pipebench resume RUN`: continues an interrupted or failed
 * run under its id from its last resume state (semantics §1.10), with the configuration it
 * recorded; its final weights are those of the run had it never stopped. */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/cli/cli.h"
#include "harness/driver/run.h"
#include "harness/driver/run_flags.h"
#include "results/results.h"

static const char usage[] =
    "usage: pipebench resume RUN [--db FILE] [--quiet]\n"
    "Continues run RUN (interrupted, or failed) from the resume state its last finished\n"
    "epoch left beside the database (run --checkpoint-every; always when a signal stopped\n"
    "it), with the options it was started with, under the same id: the epochs after that\n"
    "state are trained again. A run that left no resume state (killed in its first epoch,\n"
    "or run with --checkpoint-every 0) is trained again from its first epoch. The final\n"
    "weights are those of the run had it never stopped. A run of --executor mpi resumes\n"
    "under mpirun, one rank per device: `mpirun -np D pipebench resume RUN` (D / v ranks\n"
    "with v chunks per device).\n"
    "  --db FILE   results database (default " PB_RESULTS_DEFAULT_DB ")\n"
    "  --quiet     no per-epoch lines\n";

/* The run's recorded configuration (malloc'ed), or NULL with a message. A cut measured
 * (--partition time) is taken as recorded, not measured again. */
static char *recorded_config(const char *path, long long id, int *repeat, struct pb_err *e)
{
    static const char sql[] =
        "SELECT CASE WHEN json_valid(config) AND json_extract(config, '$.partition') = 'time' "
        "AND partition_cut IS NOT NULL THEN json_set(config, '$.partition', partition_cut) "
        "ELSE config END, status, repeat FROM runs WHERE id = ?";
    struct pb_results *db;
    /* as the writer it is (an older schema upgraded first); a missing file is an error */
    if ((access(path, F_OK) ? pb_results_open_existing : pb_results_open)(&db, path, e))
        return NULL;
    sqlite3_stmt *s = NULL;
    char *json = NULL;
    if (sqlite3_prepare_v2(pb_results_sqlite(db), sql, -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, id);
        const char *st = NULL;
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
            st = (const char *)sqlite3_column_text(s, 1);
        if (st && (!strcmp(st, "done") || !strcmp(st, "diverged") || !strcmp(st, "running")))
            pb_err_set(e, "run %lld is %s: only an interrupted or failed run can be resumed%s",
                       id, st, !strcmp(st, "running") ? " (is it still running?)" : "");
        else if (st && sqlite3_column_int(s, 2) >= 0 && sqlite3_column_int(s, 2) < PB_MAX_REPEATS)
            json = pb_xstrdup((const char *)sqlite3_column_text(s, 0));
        else if (st)
            pb_err_set(e, "run %lld records repeat %d, not one of 0 to %d; it cannot be "
                       "resumed", id, sqlite3_column_int(s, 2), PB_MAX_REPEATS - 1);
        if (json)
            *repeat = sqlite3_column_int(s, 2);
        if (!st)
            pb_err_set(e, "there is no run %lld with a recorded configuration in %s "
                       "(`pipebench runs --db %s` lists them)", id, path, path);
    } else {
        pb_err_set(e, "results database %s: %s", path, sqlite3_errmsg(pb_results_sqlite(db)));
    }
    sqlite3_finalize(s);
    pb_results_close(db);
    return json;
}

int pb_cmd_resume(int argc, char **argv)
{
    if (pb_cli_once("resume", argc, argv, NULL, NULL))
        return PB_EXIT_USAGE;
    const char *path = PB_RESULTS_DEFAULT_DB, *run = NULL;
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return PB_EXIT_OK;
        } else if (!strcmp(a, "--db") && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (a[0] != '-' && !run) {
            run = a;
        } else {
            fprintf(stderr, "pipebench: resume: unexpected argument '%s'\n%s", a, usage);
            return PB_EXIT_USAGE;
        }
    }
    char *end;
    long long id = run ? strtoll(run, &end, 10) : 0;
    if (!run || *end || id <= 0) {
        fprintf(stderr, "pipebench: resume needs a run id (a positive integer; `pipebench "
                        "runs` lists them)\n%s", usage);
        return PB_EXIT_USAGE;
    }
    struct pb_err e;
    int repeat = 0;
    char *json = recorded_config(path, id, &repeat, &e);
    if (!json)
        return pb_cli_fail(e.msg);
    struct pb_run_cfg c;
    struct pb_run_json *keep = NULL;
    pb_run_cfg_defaults(&c);
    int rc = pb_run_cfg_from_json(json, &c, &keep, &e);
    if (rc) {
        free(json);
        pb_run_json_finish(keep);
        return pb_cli_fail(e.msg);
    }
    c.db = path;
    c.resume_run = id;
    c.quiet = quiet;
    c.repeat = repeat;   /* that training only: pb_cli_run_cfg runs repeat .. repeats - 1 */
    c.repeats = repeat + 1;
    /* --init is no part of a resume (the state holds the weights), but a run trained again
     * from its first epoch, having no state, starts from it again */
    char state[4096];
    pb_run_state_path(path, id, state, sizeof state);
    cJSON *root = access(state, F_OK) ? cJSON_Parse(json) : NULL;
    const cJSON *init = cJSON_GetObjectItemCaseSensitive(root, "init");
    if (cJSON_IsString(init) && *init->valuestring)
        c.init = init->valuestring;
    rc = pb_cli_run_cfg(&c);
    cJSON_Delete(root);
    free(json);
    pb_run_json_finish(keep);
    return rc;
}
