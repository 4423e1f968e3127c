/* plots/trace.c — Chrome trace export of a run's op events (trace.h): complete events
 * ("ph":"X") on a thread per device, named "stage k" where each stage is its own device
 * and "device d: stages k, l" where the run held v > 1 chunks per device (run_devices.h),
 * v1 flow events ("s"/"f", bound to the enclosing slices) between the stages a
 * micro-batch passes, and a slice over each of DualPipeV's overlapped pairs, written with
 * cJSON. */
#include "plots/trace.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/atomic_file.h"
#include "plots/report_db.h"
#include "plots/run_devices.h"

struct event {
    int stage, mb, version, ahead;    /* mb < 0 for U */
    int device, chunk;                /* the row it is drawn on, its local chunk there */
    int pair;                         /* 1: the F of an overlapped pair, 2: its B */
    char kind;
    double ts, dur;                   /* microseconds */
};

struct events {
    int n, stages, max_mb;
    struct event *v;
};

/* Microseconds, rounded to nanoseconds so the JSON stays short. */
static double usec(double s)
{
    return round(s * 1e9) / 1e3;
}

static int db_fail(struct pb_results *db, const char *what, struct pb_err *e)
{
    return pb_err_set(e, "results database %s: %s: %s", pb_results_path(db), what,
                      sqlite3_errmsg(pb_results_sqlite(db)));
}

/* The epoch to trace: the requested one when it has events, else the last with events. */
static int pick_epoch(struct pb_results *db, int64_t run, int epoch, struct pb_err *e)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(pb_results_sqlite(db), "SELECT min(epoch), max(epoch), "
                           "sum(epoch = ?2) FROM events WHERE run_id = ?1", -1, &s,
                           NULL) != SQLITE_OK)
        return db_fail(db, "reading the events", e);
    sqlite3_bind_int64(s, 1, run);
    sqlite3_bind_int(s, 2, epoch);
    int rc = sqlite3_step(s);
    int null = rc != SQLITE_ROW || sqlite3_column_type(s, 0) == SQLITE_NULL;
    int lo = null ? 0 : sqlite3_column_int(s, 0), hi = null ? 0 : sqlite3_column_int(s, 1);
    int here = null ? 0 : sqlite3_column_int(s, 2);
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW)
        return db_fail(db, "reading the events", e);
    if (null)
        return pb_err_set(e, "run %lld recorded no op events, so there is no timeline to "
                          "trace; pick another run (`pipebench runs`)", (long long)run);
    if (epoch < 0)
        return hi;
    if (!here)
        return pb_err_set(e, "run %lld has no events in epoch %d; its events cover epochs "
                          "%d to %d (--epoch counts from 1)", (long long)run, epoch + 1, lo + 1,
                          hi + 1);
    return epoch;
}

static int load_events(struct pb_results *db, int64_t run, int epoch, struct events *ev,
                       struct pb_err *e)
{
    sqlite3_stmt *s;
    memset(ev, 0, sizeof *ev);
    if (sqlite3_prepare_v2(pb_results_sqlite(db), "SELECT device, kind, coalesce(mb, -1), "
                           "version, ahead, start_s, end_s, coalesce(pair, 0) FROM events WHERE run_id = ? AND "
                           "epoch = ? ORDER BY device, seq", -1, &s, NULL) != SQLITE_OK)
        return db_fail(db, "reading the events", e);
    sqlite3_bind_int64(s, 1, run);
    sqlite3_bind_int(s, 2, epoch);
    int rc, cap = 0;
    ev->max_mb = -1;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (ev->n == cap) {
            cap = cap ? 2 * cap : 256;
            ev->v = realloc(ev->v, (size_t)cap * sizeof *ev->v);
            PB_CHECK(ev->v != NULL);
        }
        struct event *x = &ev->v[ev->n++];
        x->stage = sqlite3_column_int(s, 0);
        x->kind = (char)sqlite3_column_text(s, 1)[0];
        x->mb = sqlite3_column_int(s, 2);
        x->version = sqlite3_column_int(s, 3);
        x->ahead = sqlite3_column_int(s, 4);
        double t0 = sqlite3_column_double(s, 5), t1 = sqlite3_column_double(s, 6);
        x->ts = usec(t0);
        x->dur = t1 > t0 ? usec(t1) - x->ts : 0;
        x->pair = sqlite3_column_int(s, 7);
        if (x->stage + 1 > ev->stages)
            ev->stages = x->stage + 1;
        if (x->mb > ev->max_mb)
            ev->max_mb = x->mb;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        free(ev->v);
        return db_fail(db, "reading the events", e);
    }
    return 0;
}

static cJSON *meta(const char *name, int tid, const char *key, cJSON *value)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "ph", "M");
    cJSON_AddNumberToObject(m, "pid", 0);
    if (tid >= 0)
        cJSON_AddNumberToObject(m, "tid", tid);
    cJSON *args = cJSON_AddObjectToObject(m, "args");
    cJSON_AddItemToObject(args, key, value);
    return m;
}

/* Puts each event on its stage's device row (run_devices.h). */
static void place(struct events *ev, const struct pb_run_devices *m)
{
    for (int i = 0; i < ev->n; i++) {
        ev->v[i].device = m->device[ev->v[i].stage];
        ev->v[i].chunk = m->chunk[ev->v[i].stage];
    }
}

/* "F3", "U" where each stage is its own device; "F3@1", "U@1" (the op's local chunk,
 * as `pipebench program` prints it) where a device holds v > 1. */
static void op_name(const struct event *x, int chunks, char *name, size_t cap)
{
    int n = x->mb >= 0 ? snprintf(name, cap, "%c%d", x->kind, x->mb)
                       : snprintf(name, cap, "%c", x->kind);
    if (chunks > 1)
        snprintf(name + n, cap - (size_t)n, "@%d", x->chunk);
}

static cJSON *slice(const struct event *x, int chunks)
{
    char name[32];
    op_name(x, chunks, name, sizeof name);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "cat", (char[]){x->kind, 0});
    cJSON_AddStringToObject(o, "ph", "X");
    cJSON_AddNumberToObject(o, "ts", x->ts);
    cJSON_AddNumberToObject(o, "dur", x->dur);
    cJSON_AddNumberToObject(o, "pid", 0);
    cJSON_AddNumberToObject(o, "tid", x->device);
    cJSON *args = cJSON_AddObjectToObject(o, "args");
    if (x->mb >= 0)
        cJSON_AddNumberToObject(args, "mb", x->mb);
    cJSON_AddNumberToObject(args, "stage", x->stage);
    if (chunks > 1)
        cJSON_AddNumberToObject(args, "chunk", x->chunk);
    cJSON_AddNumberToObject(args, "version", x->version);
    cJSON_AddNumberToObject(args, "ahead", x->ahead);
    if (x->pair)
        cJSON_AddNumberToObject(args, "pair", x->pair);
    return o;
}

/* Events by device, then start. */
static int by_time(const void *a, const void *b)
{
    const struct event *x = *(const struct event *const *)a, *y = *(const struct event *const *)b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

/* DualPipeV's overlapped pairs (pb_op.pair): for each F marked 1 whose next op on its
 * device is the B marked 2, a slice "F7@0+B3@1" (cat "pair") from the F's start to the
 * B's end, over the two slices, which nest under it. Returns the number of pairs. */
static int add_pairs(const struct events *ev, int chunks, cJSON *list)
{
    if (ev->n == 0)
        return 0;
    const struct event **order = malloc((size_t)ev->n * sizeof *order);
    PB_CHECK(order != NULL);
    for (int i = 0; i < ev->n; i++)
        order[i] = &ev->v[i];
    qsort(order, (size_t)ev->n, sizeof *order, by_time);
    int pairs = 0;
    for (int i = 0; i + 1 < ev->n; i++) {
        const struct event *f = order[i], *b = order[i + 1];
        if (f->pair != 1 || b->pair != 2 || f->kind != 'F' || b->kind != 'B' ||
            b->device != f->device)
            continue;
        char fn[32], bn[32], name[72];
        op_name(f, chunks, fn, sizeof fn);
        op_name(b, chunks, bn, sizeof bn);
        snprintf(name, sizeof name, "%s+%s", fn, bn);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", name);
        cJSON_AddStringToObject(o, "cat", "pair");
        cJSON_AddStringToObject(o, "ph", "X");
        cJSON_AddNumberToObject(o, "ts", f->ts);
        cJSON_AddNumberToObject(o, "dur", b->ts + b->dur - f->ts);
        cJSON_AddNumberToObject(o, "pid", 0);
        cJSON_AddNumberToObject(o, "tid", f->device);
        cJSON *args = cJSON_AddObjectToObject(o, "args");
        cJSON_AddStringToObject(args, "pair", "overlapped F and B, run in turn");
        cJSON_AddItemToArray(list, o);
        pairs++;
    }
    free(order);
    return pairs;
}

/* One end of a flow arrow, at the middle of its slice so it binds to that slice. */
static cJSON *flow_end(const struct event *x, int chunks, const char *ph, int id)
{
    char name[32];
    op_name(x, chunks, name, sizeof name);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "cat", "pipeline");
    cJSON_AddStringToObject(o, "ph", ph);
    cJSON_AddNumberToObject(o, "id", id);
    cJSON_AddNumberToObject(o, "ts", x->ts + x->dur / 2);
    cJSON_AddNumberToObject(o, "pid", 0);
    cJSON_AddNumberToObject(o, "tid", x->device);
    if (ph[0] == 'f')
        cJSON_AddStringToObject(o, "bp", "e");
    return o;
}

/* Flows F(j): stage k → k+1 and B(j) or I(j) (the gradient's carrier): k+1 → k, matching
 * the first F and B or I of each micro-batch on each stage, each end on its device's row.
 * Returns the number of arrows. */
static int add_flows(const struct events *ev, int chunks, cJSON *list)
{
    int nmb = ev->max_mb + 1, flows = 0;
    if (nmb == 0)
        return 0;
    size_t n = (size_t)ev->stages * nmb;
    int *first_f = malloc(n * sizeof *first_f), *first_b = malloc(n * sizeof *first_b);
    PB_CHECK(first_f && first_b);
    for (size_t i = 0; i < n; i++)
        first_f[i] = first_b[i] = -1;
    for (int i = 0; i < ev->n; i++) {
        const struct event *x = &ev->v[i];
        int *slot = x->kind == 'F'                      ? first_f
                    : x->kind == 'B' || x->kind == 'I' ? first_b
                                                       : NULL;
        if (slot && x->mb >= 0 && slot[(size_t)x->stage * nmb + x->mb] < 0)
            slot[(size_t)x->stage * nmb + x->mb] = i;
    }
    for (int k = 0; k + 1 < ev->stages; k++)
        for (int j = 0; j < nmb; j++) {
            int f0 = first_f[(size_t)k * nmb + j], f1 = first_f[(size_t)(k + 1) * nmb + j];
            int b1 = first_b[(size_t)(k + 1) * nmb + j], b0 = first_b[(size_t)k * nmb + j];
            if (f0 >= 0 && f1 >= 0) {
                flows++;
                cJSON_AddItemToArray(list, flow_end(&ev->v[f0], chunks, "s", flows));
                cJSON_AddItemToArray(list, flow_end(&ev->v[f1], chunks, "f", flows));
            }
            if (b1 >= 0 && b0 >= 0) {
                flows++;
                cJSON_AddItemToArray(list, flow_end(&ev->v[b1], chunks, "s", flows));
                cJSON_AddItemToArray(list, flow_end(&ev->v[b0], chunks, "f", flows));
            }
        }
    free(first_f);
    free(first_b);
    return flows;
}

/* The process name: "run N: schedule (variant), model, epoch E" (E from 1). */
static void run_title(struct pb_results *db, int64_t run, int epoch, char *buf, size_t cap)
{
    sqlite3_stmt *s;
    snprintf(buf, cap, "run %lld, epoch %d", (long long)run, epoch + 1);
    if (sqlite3_prepare_v2(pb_results_sqlite(db), "SELECT column_label, model FROM run_config "
                           "WHERE run_id = ?", -1, &s, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(s, 1, run);
    if (sqlite3_step(s) == SQLITE_ROW)
        snprintf(buf, cap, "run %lld: %s, %s, epoch %d", (long long)run,
                 sqlite3_column_text(s, 0) ? (const char *)sqlite3_column_text(s, 0) : "?",
                 sqlite3_column_text(s, 1) ? (const char *)sqlite3_column_text(s, 1) : "?",
                 epoch + 1);
    sqlite3_finalize(s);
}

static int write_json(cJSON *root, const char *path, struct pb_err *e)
{
    char *text = cJSON_PrintUnformatted(root);
    PB_CHECK(text != NULL);
    struct pb_afile a;
    int rc = pb_afile_open(&a, path, e);
    if (rc == 0) {
        fputs(text, a.f);
        fputc('\n', a.f);
        rc = pb_afile_commit(&a, e);
    }
    free(text);
    return rc;
}

int pb_trace_write(const char *db_path, int64_t run_id, int epoch, const char *out_path,
                   struct pb_trace_info *info, struct pb_err *e)
{
    struct pb_results *db;
    if (pb_report_open(&db, db_path, e))
        return -1;
    struct events ev;
    struct pb_run_devices map;
    int64_t run = pb_report_pick_run(db, run_id, e);
    int ep = run > 0 ? pick_epoch(db, run, epoch, e) : -1;
    if (ep < 0 || load_events(db, run, ep, &ev, e)) {
        pb_results_close(db);
        return -1;
    }
    if (pb_run_devices_read(db, run, ev.stages, &map, e)) {
        free(ev.v);
        pb_results_close(db);
        return -1;
    }
    place(&ev, &map);
    char title[256];
    run_title(db, run, ep, title, sizeof title);
    pb_results_close(db);

    cJSON *root = cJSON_CreateObject();
    cJSON *list = cJSON_AddArrayToObject(root, "traceEvents");
    cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
    cJSON_AddItemToArray(list, meta("process_name", -1, "name", cJSON_CreateString(title)));
    for (int k = 0; k < map.devices; k++) {
        char name[288], held[256];
        pb_run_devices_stages(&map, k, held, sizeof held);
        if (map.chunks > 1)
            snprintf(name, sizeof name, "device %d: %s", k, held);
        else
            snprintf(name, sizeof name, "stage %d", k);
        cJSON_AddItemToArray(list, meta("thread_name", k, "name", cJSON_CreateString(name)));
        cJSON_AddItemToArray(list, meta("thread_sort_index", k, "sort_index",
                                        cJSON_CreateNumber(k)));
    }
    for (int i = 0; i < ev.n; i++)
        cJSON_AddItemToArray(list, slice(&ev.v[i], map.chunks));
    int flows = add_flows(&ev, map.chunks, list);
    int pairs = add_pairs(&ev, map.chunks, list);
    int rc = write_json(root, out_path, e);
    cJSON_Delete(root);
    if (info)
        *info = (struct pb_trace_info){ep, map.devices, map.stages, map.chunks, ev.n, flows,
                                       pairs};
    pb_run_devices_finish(&map);
    free(ev.v);
    return rc;
}
