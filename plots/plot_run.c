/* plots/plot_run.c — data of the figures that show one run (plot_data.h): peak memory
 * per stage by kind (stage_memory) and the op timeline of its last recorded epoch (the
 * events table, with each device's bubble fraction in that epoch from stage_epoch_time). */
#include <sqlite3.h>
#include <string.h>

#include "plots/plot_data.h"

#define MIB (1024.0 * 1024.0)
#define MAX_LABELED_OPS 64   /* per device: above this, boxes are too narrow to number */

/* "run 6: pipeoptim; mlp, fashion-mnist, sgdm, D=4" */
static void run_title(struct pb_plot_job *j, char *buf, size_t cap)
{
    char what[256], sched[128] = "?";
    sqlite3_stmt *q;
    pb_plot_describe(j, 1, what, sizeof what);
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT column_label FROM run_config "
                           "WHERE run_id = ?", -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, j->run);
        if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
            snprintf(sched, sizeof sched, "%s", (const char *)sqlite3_column_text(q, 0));
    }
    sqlite3_finalize(q);
    snprintf(buf, cap, "run %lld: %s; %s", (long long)j->run, sched, what);
}

/* The stage_memory rows of the run in MiB; returns the number of stages, or -1. */
static int write_memory(struct pb_plot_job *j, FILE *f, struct pb_err *e)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT stage, params, grads, optstate, "
                           "wcopies, acts, comm, scratch, bnstats, host FROM stage_memory WHERE run_id = ? "
                           "ORDER BY stage", -1, &q, NULL) != SQLITE_OK)
        return pb_plot_db_fail(j, "reading the memory", e);
    sqlite3_bind_int64(q, 1, j->run);
    fprintf(f, "# memory: run %lld's peak MiB per stage (over its epochs) by kind\n"
            "stage params grads \"optimizer state\" \"weight copies\" activations "
            "\"comm buffers\" scratch \"BN statistics\" host\n", (long long)j->run);
    int rc, rows = 0;
    for (; (rc = sqlite3_step(q)) == SQLITE_ROW; rows++) {
        fprintf(f, "\"stage %d\"", sqlite3_column_int(q, 0));
        for (int c = 1; c <= 9; c++)
            fprintf(f, " %.6g", sqlite3_column_double(q, c) / MIB);
        fputc('\n', f);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? rows : pb_plot_db_fail(j, "reading the memory", e);
}

int pb_plot_data_memory(struct pb_plot_job *j, struct pb_err *e)
{
    struct pb_afile a;
    if (pb_plot_open_dat(j, &a, e))
        return -1;
    int rows = write_memory(j, a.f, e);
    if (rows <= 0) {
        pb_afile_abort(&a);
        if (rows < 0)
            return -1;
        pb_err_set(e, "run %lld recorded no per-stage memory; pass --run with another run",
                   (long long)j->run);
        return PB_PLOT_NO_DATA;
    }
    if (pb_afile_commit(&a, e))
        return -1;
    char title[512];
    run_title(j, title, sizeof title);
    pb_plot_var_str(j, "plottitle", title);
    return 0;
}

/* The last epoch with events, the devices and the most ops on one device; -1 if none. */
static int timeline_extent(struct pb_plot_job *j, int *devices, int *most)
{
    sqlite3_stmt *q;
    int epoch = -1;
    *devices = *most = 0;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT epoch, max(device) + 1, "
                           "max(n) FROM (SELECT epoch, device, count(*) AS n FROM events "
                           "WHERE run_id = ?1 AND epoch = (SELECT max(epoch) FROM events "
                           "WHERE run_id = ?1) GROUP BY device)", -1, &q, NULL) != SQLITE_OK)
        return -2;
    sqlite3_bind_int64(q, 1, j->run);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL) {
        epoch = sqlite3_column_int(q, 0);
        *devices = sqlite3_column_int(q, 1);
        *most = sqlite3_column_int(q, 2);
    }
    sqlite3_finalize(q);
    return epoch;
}

/* Block 0: an op per line; block 1: the y tic label of each device with its idle %. */
static int write_timeline(struct pb_plot_job *j, int epoch, FILE *f, struct pb_err *e)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT device, 1000 * start_s, "
                           "1000 * end_s, instr('FBU', kind) - 1, coalesce(mb, -1) FROM "
                           "events WHERE run_id = ? AND epoch = ? ORDER BY device, seq", -1, &q,
                           NULL) != SQLITE_OK)
        return pb_plot_db_fail(j, "reading the events", e);
    sqlite3_bind_int64(q, 1, j->run);
    sqlite3_bind_int(q, 2, epoch);
    fprintf(f, "# timeline: run %lld, epoch %d (from 1); block 0 an op per line: device, start (ms), "
            "end (ms),\n# kind (0 F, 1 B, 2 U), micro-batch (-1 for U); block 1 the devices' "
            "labels with\n# their idle (bubble) fraction\n", (long long)j->run, epoch + 1);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        fprintf(f, "%d %.6f %.6f %d %d\n", sqlite3_column_int(q, 0), sqlite3_column_double(q, 1),
                sqlite3_column_double(q, 2), sqlite3_column_int(q, 3), sqlite3_column_int(q, 4));
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return pb_plot_db_fail(j, "reading the events", e);
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT d.device, s.bubble_frac FROM "
                           "(SELECT DISTINCT device FROM events WHERE run_id = ?1 AND epoch = "
                           "?2) d LEFT JOIN stage_epoch_time s ON s.run_id = ?1 AND s.epoch = "
                           "?2 AND s.stage = d.device ORDER BY d.device", -1, &q,
                           NULL) != SQLITE_OK)
        return pb_plot_db_fail(j, "reading the stage stats", e);
    sqlite3_bind_int64(q, 1, j->run);
    sqlite3_bind_int(q, 2, epoch);
    fputs("\n\n", f);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int d = sqlite3_column_int(q, 0);
        if (sqlite3_column_type(q, 1) == SQLITE_NULL)
            fprintf(f, "%d \"stage %d\"\n", d, d);
        else
            fprintf(f, "%d \"stage %d (%.0f%% idle)\"\n", d, d,
                    100 * sqlite3_column_double(q, 1));
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : pb_plot_db_fail(j, "reading the stage stats", e);
}

int pb_plot_data_timeline(struct pb_plot_job *j, struct pb_err *e)
{
    int devices, most, epoch = timeline_extent(j, &devices, &most);
    if (epoch == -2)
        return pb_plot_db_fail(j, "reading the events", e);
    if (epoch < 0) {
        pb_err_set(e, "run %lld recorded no op events; pass --run with another run",
                   (long long)j->run);
        return PB_PLOT_NO_DATA;
    }
    struct pb_afile a;
    if (pb_plot_open_dat(j, &a, e))
        return -1;
    if (write_timeline(j, epoch, a.f, e)) {
        pb_afile_abort(&a);
        return -1;
    }
    if (pb_afile_commit(&a, e))
        return -1;
    char what[384], title[512];
    run_title(j, what, sizeof what);
    snprintf(title, sizeof title, "Op timeline of %s, epoch %d", what, epoch + 1);
    pb_plot_var_str(j, "plottitle", title);
    pb_plot_var(j, "ndevices", "%d", devices);
    pb_plot_var(j, "showlabels", "%d", most <= MAX_LABELED_OPS);
    return 0;
}
