/* plots/run_devices.c — a recorded run's stage → (device, chunk) map (run_devices.h), read
 * from runs.config with SQLite's JSON functions and inverted from pb_pipe_stage_of. */
#include "plots/run_devices.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/ir/program.h"
#include "schedules/registry.h"

/* Each stage a device of its own: the rows stay stages. */
static void one_per_device(struct pb_run_devices *m, int stages)
{
    m->stages = m->devices = stages;
    m->chunks = 1;
    m->device = calloc((size_t)(stages > 0 ? stages : 1), sizeof *m->device);
    m->chunk = calloc((size_t)(stages > 0 ? stages : 1), sizeof *m->chunk);
    PB_CHECK(m->device && m->chunk);
    for (int k = 0; k < stages; k++)
        m->device[k] = k;
}

int pb_run_devices_read(struct pb_results *db, int64_t run, int stages_seen,
                        struct pb_run_devices *m, struct pb_err *e)
{
    memset(m, 0, sizeof *m);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(pb_results_sqlite(db), "SELECT json_extract(config, '$.schedule'), "
                           "json_extract(config, '$.stages'), json_extract(config, "
                           "'$.chunks') FROM runs WHERE id = ? AND json_valid(config)", -1, &s,
                           NULL) != SQLITE_OK)
        return pb_err_set(e, "results database %s: reading run %lld's configuration: %s",
                          pb_results_path(db), (long long)run,
                          sqlite3_errmsg(pb_results_sqlite(db)));
    sqlite3_bind_int64(s, 1, run);
    char name[64] = "";
    struct pb_pipe pipe = {0};
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
        snprintf(name, sizeof name, "%s", (const char *)sqlite3_column_text(s, 0));
        pipe.stages = sqlite3_column_int(s, 1);
        pipe.chunks = sqlite3_column_int(s, 2);
    }
    sqlite3_finalize(s);
    struct pb_err ignored;
    const struct pb_schedule *sch = name[0] ? pb_schedule_find(name, &ignored) : NULL;
    if (sch)
        pb_pipe_adopt(&pipe, sch);
    int v = pb_pipe_chunks(&pipe);
    if (!sch || v < 2 || pipe.stages < stages_seen || pipe.stages > PB_MAX_STAGES ||
        pipe.stages % v) {
        one_per_device(m, stages_seen);
        return 0;
    }
    one_per_device(m, pipe.stages);
    m->chunks = v;
    m->devices = pb_pipe_devices(&pipe);
    for (int d = 0; d < m->devices; d++)
        for (int c = 0; c < v; c++) {
            int k = pb_pipe_stage_of(&pipe, d, c);
            PB_CHECK(k >= 0 && k < pipe.stages);
            m->device[k] = d;
            m->chunk[k] = c;
        }
    return 0;
}

void pb_run_devices_finish(struct pb_run_devices *m)
{
    free(m->device);
    free(m->chunk);
    memset(m, 0, sizeof *m);
}

void pb_run_devices_stages(const struct pb_run_devices *m, int d, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "stage%s", m->chunks > 1 ? "s" : "");
    int first = 1;
    for (int k = 0; k < m->stages && n < cap; k++)
        if (m->device[k] == d) {
            n += (size_t)snprintf(buf + n, cap - n, "%s %d", first ? "" : ",", k);
            first = 0;
        }
}
