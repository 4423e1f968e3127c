/* harness/cli/cli_results.c — `pipebench runs` and `pipebench show RUN`: read the results
 * database (results.h) and print the runs, one run's configuration and environment,
 * its epochs and the per-stage stats and staleness of its last epoch (semantics §6). */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/cli.h"
#include "results/results.h"

#define MAX_COLS 24

/* A text table: rows of cells, printed with columns padded to their widest cell. */
struct table {
    int ncols, nrows, cap;
    char **cells;   /* [nrows * ncols] */
};

static void table_add(struct table *t, const char *const *row)
{
    if (t->nrows == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        char **c = realloc(t->cells, (size_t)t->cap * t->ncols * sizeof *c);
        PB_CHECK(c != NULL);
        t->cells = c;
    }
    for (int j = 0; j < t->ncols; j++)
        t->cells[(size_t)t->nrows * t->ncols + j] = pb_xstrdup(row[j] ? row[j] : "-");
    t->nrows++;
}

static void table_free(struct table *t)
{
    for (int i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

/* Prints the table (or `empty` when it holds only its header row) and frees it. */
static void table_print(struct table *t, const char *indent, const char *empty)
{
    if (t->nrows <= 1 && empty) {
        printf("%s%s\n", indent, empty);
        table_free(t);
        return;
    }
    int width[MAX_COLS] = {0};
    for (int i = 0; i < t->nrows * t->ncols; i++) {
        int len = (int)strlen(t->cells[i]);
        if (len > width[i % t->ncols])
            width[i % t->ncols] = len;
    }
    for (int r = 0; r < t->nrows; r++) {
        fputs(indent, stdout);
        for (int j = 0; j < t->ncols; j++) {
            const char *c = t->cells[(size_t)r * t->ncols + j];
            if (j == t->ncols - 1)
                printf("%s\n", c);
            else
                printf("%-*s  ", width[j], c);
        }
    }
    table_free(t);
}

/* Column i of the current row as text, NULL for SQL NULL; fmt formats reals. */
static const char *col_text(sqlite3_stmt *s, int i, const char *fmt, char buf[64])
{
    switch (sqlite3_column_type(s, i)) {
    case SQLITE_NULL:
        return NULL;
    case SQLITE_FLOAT:
        snprintf(buf, 64, fmt, sqlite3_column_double(s, i));
        return buf;
    default:
        snprintf(buf, 64, "%s", (const char *)sqlite3_column_text(s, i));
        return buf;
    }
}

static const char *col_bytes(sqlite3_stmt *s, int i, char buf[64])
{
    if (sqlite3_column_type(s, i) == SQLITE_NULL)
        return NULL;
    double v = (double)sqlite3_column_int64(s, i);
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, 64, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return buf;
}

/* Parses [--db FILE] [RUN]; returns 1 after --help, -1 on a bad argument. */
static int parse_args(int argc, char **argv, const char *usage, const char **db,
                      const char **run)
{
    *db = PB_RESULTS_DEFAULT_DB;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 1;
        }
        if (!strcmp(a, "--db") && i + 1 < argc) {
            *db = argv[++i];
        } else if (!strncmp(a, "--db=", 5)) {
            *db = a + 5;
        } else if (a[0] != '-' && run && !*run) {
            *run = a;
        } else {
            fprintf(stderr, "pipebench: %s: unexpected argument '%s'\n%s", argv[0], a, usage);
            return -1;
        }
    }
    return 0;
}

static int query_fail(struct pb_results *db, const char *what)
{
    fprintf(stderr, "pipebench: results database %s: %s: %s\n", pb_results_path(db), what,
            sqlite3_errmsg(pb_results_sqlite(db)));
    pb_results_close(db);
    return PB_EXIT_USAGE;
}

/* `runs --json`: the listed runs as a JSON array, one object per run. */
static int print_runs_json(sqlite3_stmt *s)
{
    static const char *const keys[] = {"id", "status", "schedule", "variant", "optimizer",
                                       "model", "dataset", "stages", "epochs_done", "epochs",
                                       "best_acc", "created", "seed", "experiment", "executor",
                                       "repeat"};
    cJSON *arr = cJSON_CreateArray();
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        cJSON *o = cJSON_CreateObject();
        for (int j = 0; j < (int)(sizeof keys / sizeof *keys); j++) {
            int t = sqlite3_column_type(s, j);
            if (t == SQLITE_NULL)
                cJSON_AddNullToObject(o, keys[j]);
            else if (t == SQLITE_INTEGER || t == SQLITE_FLOAT)
                cJSON_AddNumberToObject(o, keys[j], sqlite3_column_double(s, j));
            else
                cJSON_AddStringToObject(o, keys[j], (const char *)sqlite3_column_text(s, j));
        }
        cJSON_AddItemToArray(arr, o);
    }
    char *text = cJSON_Print(arr);
    printf("%s\n", text);
    free(text);
    cJSON_Delete(arr);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* --status LIST: each name one of pb_run_status_names. */
static int check_statuses(const char *list, struct pb_err *e)
{
    for (const char *p = list;; p++) {
        size_t n = strcspn(p, ",");
        bool known = false;
        for (int k = 0; k < PB_RUN_NSTATUS; k++)
            known |= strlen(pb_run_status_names[k]) == n && !strncmp(pb_run_status_names[k], p, n);
        if (!known)
            return pb_err_set(e, "--status: unknown status '%.*s'; give a comma-separated list "
                                 "of running, done, failed, diverged, interrupted", (int)n, p);
        p += n;
        if (!*p)
            return 0;
    }
}

int pb_cmd_runs(int argc, char **argv)
{
    if (pb_cli_once("runs", argc, argv, NULL, "--where"))
        return PB_EXIT_USAGE;
    static const char usage[] =
        "usage: pipebench runs [--db FILE] [--json] [--status LIST] [--experiment NAME]\n"
        "                      [--where KEY=VALUE] [--runs IDS]\n"
        "Lists the recorded runs, one per line: id, status, schedule, optimizer, model,\n"
        "dataset, stages D, epochs done/planned, best validation accuracy, seed, repeat (which\n"
        "of --repeat N trainings of its configuration and seed), experiment, creation time.\n"
        "  --db FILE   results database (default " PB_RESULTS_DEFAULT_DB ")\n"
        "  --json      a JSON array of objects instead (accuracy as a fraction)\n"
        "  --status LIST  only the runs with one of these statuses, comma-separated:\n"
        "              running, done, failed, diverged, interrupted\n"
        PB_CLI_SELECT_HELP;
    const char *path = PB_RESULTS_DEFAULT_DB, *status = NULL;
    bool json = false;
    struct pb_report_select sel = {0};
    struct pb_err e;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int selected = pb_cli_select_flag(a, v, &sel, &e);
        if (selected < 0)
            return pb_cli_fail(e.msg);
        if (selected) {
            i++;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return PB_EXIT_OK;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--db") && v) {
            path = v;
            i++;
        } else if (!strcmp(a, "--status") && v) {
            if (check_statuses(v, &e))
                return pb_cli_fail(e.msg);
            status = v;
            i++;
        } else {
            fprintf(stderr, "pipebench: runs: unexpected argument '%s'%s\n%s", a,
                    a[0] == '-' && !v ? " (or a missing value)" : "", usage);
            return PB_EXIT_USAGE;
        }
    }
    struct pb_results *db;
    if (pb_report_open(&db, path, &e))
        return pb_cli_fail(e.msg);
    if (pb_report_select(db, &sel, &e)) {
        pb_results_close(db);
        return pb_cli_fail(e.msg);
    }
    static const char sql[] =
        "SELECT r.id, r.status, r.schedule, nullif(r.variant, ''), r.optimizer, r.model, "
        "r.dataset, r.stages, (SELECT count(*) FROM epochs x WHERE x.run_id = r.id), r.epochs, "
        "(SELECT max(x.val_acc) FROM epochs x WHERE x.run_id = r.id), r.created, "
        "CASE WHEN json_valid(r.config) THEN json_extract(r.config, '$.seed') END, "
        "CASE WHEN json_valid(r.config) THEN json_extract(r.config, '$.experiment') END, "
        "r.executor, r.repeat FROM runs r WHERE (NOT EXISTS (SELECT 1 FROM report_selecting) OR "
        "r.id IN (SELECT run_id FROM report_selection)) AND (?1 IS NULL OR "
        "instr(',' || ?1 || ',', ',' || r.status || ',') > 0) ORDER BY r.id";
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(pb_results_sqlite(db), sql, -1, &s, NULL) != SQLITE_OK)
        return query_fail(db, "listing the runs");
    sqlite3_bind_text(s, 1, status, -1, SQLITE_STATIC);
    if (json) {
        int rc = print_runs_json(s);
        sqlite3_finalize(s);
        if (rc)
            return query_fail(db, "listing the runs");
        pb_results_close(db);
        return PB_EXIT_OK;
    }
    struct table t = {.ncols = 13};
    table_add(&t, (const char *const[]){"id", "status", "schedule", "optimizer", "model",
                                        "dataset", "D", "epochs", "best acc", "seed", "repeat",
                                        "experiment", "created"});
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        char b[16][64], sched[96], epochs[96], acc[32];
        const char *v = (const char *)sqlite3_column_text(s, 3);
        const char *sch = (const char *)sqlite3_column_text(s, 2);
        snprintf(sched, sizeof sched, "%s%s%s", sch ? sch : "?", v ? ":" : "", v ? v : "");
        snprintf(epochs, sizeof epochs, "%d/%s", sqlite3_column_int(s, 8),
                 sqlite3_column_type(s, 9) == SQLITE_NULL ? "?" : col_text(s, 9, "%g", b[9]));
        if (sqlite3_column_type(s, 10) == SQLITE_NULL)
            snprintf(acc, sizeof acc, "-");
        else
            snprintf(acc, sizeof acc, "%.2f%%", 100 * sqlite3_column_double(s, 10));
        const char *row[13] = {col_text(s, 0, "%g", b[0]), col_text(s, 1, "%g", b[1]), sched,
                               col_text(s, 4, "%g", b[4]), col_text(s, 5, "%g", b[5]),
                               col_text(s, 6, "%g", b[6]), col_text(s, 7, "%g", b[7]), epochs,
                               acc, col_text(s, 12, "%g", b[12]), col_text(s, 15, "%g", b[15]),
                               col_text(s, 13, "%g", b[13]), col_text(s, 11, "%g", b[11])};
        table_add(&t, row);
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        table_free(&t);
        return query_fail(db, "listing the runs");
    }
    char empty[300];
    snprintf(empty, sizeof empty, "no runs in %s", path);
    table_print(&t, "", empty);
    pb_results_close(db);
    return PB_EXIT_OK;
}

static void print_config(const char *json)
{
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(root)) {
        printf("flags: %s\n", json ? json : "(not recorded)");
        cJSON_Delete(root);
        return;
    }
    struct table t = {.ncols = 2};
    for (const cJSON *it = root->child; it; it = it->next) {
        char *v = cJSON_IsString(it) ? pb_xstrdup(it->valuestring) : cJSON_PrintUnformatted(it);
        table_add(&t, (const char *const[]){it->string, v});
        free(v);
    }
    printf("flags:\n");
    table_print(&t, "  ", "(none)");
    cJSON_Delete(root);
}

static int show_run(struct pb_results *db, sqlite3_int64 id)
{
    static const char sql[] =
        "SELECT status, created, started, ended, message, model, dataset, schedule, variant, "
        "optimizer, stages, microbatch_size, microbatches, samples_per_update, "
        "updates_per_epoch, partition_cut, epochs, seed, repeat, executor, lr, bleu_scoring, "
        "git_revision, cpu_model, library_versions, host, pid, cores, threads_per_stage, "
        "printf('%.2f', load_avg), CASE WHEN executor = 'seq' THEN 'yes: the seq executor runs "
        "the stages in turn; timings carry a dagger' WHEN oversubscribed = 1 THEN 'yes: more "
        "stage threads than cores; timings carry a dagger' WHEN oversubscribed = 0 THEN 'no' "
        "END, "
        /* a run recorded before --devices ran every stage on device 0 */
        "CASE WHEN json_valid(config) AND json_type(config, '$.devices') IS NULL "
        "THEN json_set(config, '$.devices', '0') ELSE config END FROM runs WHERE id = ?";
    static const char *const names[] = {
        "status", "created", "started", "ended", "message", "model", "dataset", "schedule",
        "variant", "optimizer", "stages", "microbatch size", "microbatches",
        "samples per update", "updates per epoch", "partition cut", "epochs", "seed",
        "repeat", "executor", "lr", "bleu scoring", "git revision", "cpu", "libraries",
        "host", "pid", "cores", "threads per stage", "load average (1 min, at start)",
        "timings on shared cores",
    };
    /* Sections: the run's state, its configuration, its environment (columns [a, b)). */
    static const struct { const char *title; int a, b; } sections[] = {
        {"", 0, 5}, {"configuration:\n", 5, 22}, {"environment:\n", 22, 31},
    };
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(pb_results_sqlite(db), sql, -1, &s, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(s, 1, id);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(s);
        return rc == SQLITE_DONE ? 1 : -1;
    }
    printf("run %lld (%s)\n", (long long)id, pb_results_path(db));
    for (int k = 0; k < 3; k++) {
        struct table t = {.ncols = 2};
        for (int j = sections[k].a; j < sections[k].b; j++) {
            char b[64];
            const char *v = sqlite3_column_type(s, j) == SQLITE_TEXT
                                ? (const char *)sqlite3_column_text(s, j)
                                : col_text(s, j, "%g", b);
            if (v || k > 0)
                table_add(&t, (const char *const[]){names[j], v});
        }
        fputs(sections[k].title, stdout);
        table_print(&t, "  ", NULL);
    }
    print_config((const char *)sqlite3_column_text(s, 31));
    sqlite3_finalize(s);
    return 0;
}

static int show_epochs(struct pb_results *db, sqlite3_int64 id, int *last)
{
    static const char sql[] =
        "SELECT epoch + 1, train_loss, val_loss, 100 * val_acc, val_bleu, samples, wall_s, "
        "throughput, lr FROM epochs WHERE run_id = ? ORDER BY epoch";
    static const char *const fmt[] = {"%g", "%.4f", "%.4f", "%.2f", "%.2f", "%g", "%.2f", "%.1f",
                                      "%g"};
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(pb_results_sqlite(db), sql, -1, &s, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(s, 1, id);
    struct table t = {.ncols = 9};
    table_add(&t, (const char *const[]){"epoch", "train loss", "val loss", "val acc %",
                                        "val BLEU", "samples", "wall s", "samples/s", "lr"});
    int rc;
    *last = -1;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        char b[9][64];
        const char *row[9];
        for (int j = 0; j < 9; j++)
            row[j] = col_text(s, j, fmt[j], b[j]);
        *last = sqlite3_column_int(s, 0) - 1;
        table_add(&t, row);
    }
    sqlite3_finalize(s);
    printf("epochs:\n");
    table_print(&t, "  ", "(none recorded)");
    return rc == SQLITE_DONE ? 0 : -1;
}

static int show_stages(struct pb_results *db, sqlite3_int64 id, int epoch)
{
    static const char sql[] =
        "SELECT s.stage, s.busy_s, s.wait_s, s.comm_s, 100 * s.bubble_frac, s.versions_kept, "
        "printf('%.2f/%g', t.f_mean, t.f_max), printf('%.2f/%g', t.b_mean, t.b_max), "
        "CASE WHEN t.pred_count > 0 THEN printf('%.3g/%.3g (%d)', t.pred_err_mean, "
        "t.pred_err_max, t.pred_count) END, "
        "s.stage, s.mem_params, s.mem_grads, s.mem_optstate, s.mem_wcopies, s.mem_acts, "
        "s.mem_comm, s.mem_scratch, s.mem_bnstats, s.mem_host "
        "FROM stage_stats s LEFT JOIN staleness t USING (run_id, epoch, stage) "
        "WHERE s.run_id = ? AND s.epoch = ? ORDER BY s.stage";
    enum { NTIME = 9, NMEM = 10 };
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(pb_results_sqlite(db), sql, -1, &s, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int(s, 2, epoch);
    struct table time = {.ncols = NTIME}, mem = {.ncols = NMEM};
    table_add(&time, (const char *const[]){"stage", "busy s", "wait s", "comm s", "bubble %",
                                           "versions", "F stale", "B stale", "pred err (n)"});
    table_add(&mem, (const char *const[]){"stage", "params", "grads", "optstate", "wcopies",
                                          "acts", "comm", "scratch", "bnstats",
                                          "host"});
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        char b[NTIME + NMEM][64];
        const char *row[NTIME + NMEM];
        for (int j = 0; j < NTIME + NMEM; j++)
            row[j] = j > NTIME ? col_bytes(s, j, b[j]) : col_text(s, j, "%.3f", b[j]);
        table_add(&time, row);
        table_add(&mem, row + NTIME);
    }
    sqlite3_finalize(s);
    printf("stages, epoch %d (staleness: version difference vs the synchronous run, "
           "mean/max):\n", epoch + 1);
    table_print(&time, "  ", "(none recorded)");
    printf("peak memory by kind, epoch %d:\n", epoch + 1);
    table_print(&mem, "  ", "(none recorded)");
    return rc == SQLITE_DONE ? 0 : -1;
}

int pb_cmd_show(int argc, char **argv)
{
    if (pb_cli_once("show", argc, argv, NULL, NULL))
        return PB_EXIT_USAGE;
    static const char usage[] =
        "usage: pipebench show RUN [--db FILE]\n"
        "Prints run RUN's configuration and environment, its epochs, and the per-stage\n"
        "time, memory and staleness of its last epoch.\n"
        "  --db FILE   results database (default " PB_RESULTS_DEFAULT_DB ")\n";
    const char *path, *run = NULL;
    int a = parse_args(argc, argv, usage, &path, &run);
    if (a)
        return a > 0 ? PB_EXIT_OK : PB_EXIT_USAGE;
    char *end;
    long long id = run ? strtoll(run, &end, 10) : 0;
    if (!run || *end || id <= 0) {
        fprintf(stderr, "pipebench: show needs a run id (a positive integer; `pipebench runs` "
                        "lists them)\n%s", usage);
        return PB_EXIT_USAGE;
    }
    struct pb_results *db;
    struct pb_err e;
    if (pb_results_open_existing(&db, path, &e))
        return pb_cli_fail(e.msg);
    int rc = show_run(db, id);
    if (rc > 0) {
        fprintf(stderr, "pipebench: there is no run %lld in %s; `pipebench runs --db %s` lists "
                        "the runs\n", id, path, path);
        pb_results_close(db);
        return PB_EXIT_USAGE;
    }
    int last = -1;
    if (rc < 0 || show_epochs(db, id, &last) || (last >= 0 && show_stages(db, id, last)))
        return query_fail(db, "reading the run");
    pb_results_close(db);
    return PB_EXIT_OK;
}
