/* tests/plots/test_devtrace.c — the trace and the timeline of runs with model chunks, a row per
 * device (semantics §4.12, §4.13): a recorded interleaved run (mlp, D = 4 stages on 2
 * devices in loops: stage k on device k mod 2) and a zb-v run (D = 4 on 2 devices in a V:
 * device r holds stages r and 2p−1−r), each written by `pipebench trace` and the
 * timeline figure; the JSON's tracks and the .dat file's rows name devices, and each
 * stage's ops sit on its device's row with their chunk (F3@1). A recorded dualpipe-v run
 * marks its overlapped pairs in the events (pair 1 on the F, 2 on its B, as its device
 * programs pair them) and the trace joins each pair in a slice F7@0+B3@1; a schema 9
 * database (events without pair, made here by SQL) is upgraded in place by a command
 * that writes, its old events' pair NULL, and `runs`, `show` and `trace` read it. */
#include <check.h>
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/ir/program.h"
#include "plots/plot.h"
#include "plots/trace.h"
#include "schedules/registry.h"
#include "tests/support/report_fixture.h"
#include "tests/support/test_util.h"
#include "tests/support/train_util.h"

#define NP 2   /* devices */
#define NS 4   /* stages */

/* The device and chunk of stage k, by the placement's definition (semantics §4.12 loops:
 * chunk c of device r is stage r + c·p; §4.13 V: device r holds r and 2p−1−r). */
static int device_of(bool vee, int k) { return k < NP ? k : vee ? 2 * NP - 1 - k : k - NP; }
static int chunk_of(int k) { return k / NP; }

/* Records mlp under `schedule` on D = 4 stages (M = 4) into a database of its own. */
static int64_t record(const char *schedule, int chunks, const char *db)
{
    struct pb_run_cfg c;
    small_cfg(&c);
    c.model = "mlp";
    c.stages = NS;
    c.microbatches = 4;
    c.limit_train = 256;
    c.epochs = 1;
    c.schedule = schedule;
    c.chunks = chunks;
    c.db = tmp_path_kept(db);
    struct pb_run_summary sum;
    struct pb_err e;
    ck_assert_msg(pb_run(&c, &sum, &e) == PB_EXIT_OK, "%s: %s", schedule, e.msg);
    return sum.run_id;
}

/* The trace: two tracks named "device r: stages …", every slice on its stage's device
 * with the name "<kind><mb>@<chunk>". */
static void check_trace(const char *db, int64_t run, bool vee)
{
    char path[600];
    snprintf(path, sizeof path, "%s.json", db);
    struct pb_trace_info info;
    struct pb_err e;
    ck_assert_msg(pb_trace_write(db, run, -1, path, &info, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(info.devices, NP);
    ck_assert_int_eq(info.stages, NS);
    ck_assert_int_eq(info.chunks, 2);
    char *text = fx_read(path, NULL);
    ck_assert_ptr_nonnull(text);
    cJSON *root = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(root);
    const cJSON *ev;
    int names = 0, slices = 0, per_stage[NS] = {0};
    cJSON_ArrayForEach(ev, cJSON_GetObjectItem(root, "traceEvents")) {
        const char *name = cJSON_GetObjectItem(ev, "name")->valuestring;
        const char *ph = cJSON_GetObjectItem(ev, "ph")->valuestring;
        const cJSON *tid = cJSON_GetObjectItem(ev, "tid"), *args = cJSON_GetObjectItem(ev, "args");
        if (!strcmp(ph, "M") && !strcmp(name, "thread_name")) {
            char want[64];
            int r = tid->valueint;
            snprintf(want, sizeof want, "device %d: stages %d, %d", r, r,
                     vee ? 2 * NP - 1 - r : r + NP);
            ck_assert_str_eq(cJSON_GetObjectItem(args, "name")->valuestring, want);
            names++;
        }
        if (strcmp(ph, "X") || !strcmp(cJSON_GetObjectItem(ev, "cat")->valuestring, "pair"))
            continue;
        int k = cJSON_GetObjectItem(args, "stage")->valueint;
        ck_assert(k >= 0 && k < NS);
        ck_assert_msg(tid->valueint == device_of(vee, k), "%s of stage %d on track %d", name, k,
                      tid->valueint);
        ck_assert_int_eq(cJSON_GetObjectItem(args, "chunk")->valueint, chunk_of(k));
        char at[8];
        snprintf(at, sizeof at, "@%d", chunk_of(k));
        ck_assert_msg(strlen(name) > 2 && !strcmp(name + strlen(name) - 2, at), "slice %s of "
                      "stage %d", name, k);
        per_stage[k]++;
        slices++;
    }
    ck_assert_int_eq(names, NP);
    ck_assert_int_eq(slices, info.slices);
    for (int k = 0; k < NS; k++)
        ck_assert_msg(per_stage[k] > 0, "no slices of stage %d", k);
    cJSON_Delete(root);
}

/* The timeline's data: rows 0 and 1 only, each op's stage (column 8) on its device
 * (column 1) with its chunk (column 7), and the labels naming the devices' stages. */
static void check_timeline(const char *db, int64_t run, bool vee)
{
    char out[600], dat[700];
    snprintf(out, sizeof out, "%s.figs", db);
    struct pb_err e;
    ck_assert_msg(pb_plot_figure(db, "timeline", out, "svg", run, &e) == 0, "%s", e.msg);
    snprintf(dat, sizeof dat, "%s/timeline.dat", out);
    char *text = fx_read(dat, NULL);
    ck_assert_ptr_nonnull(text);
    int rows = 0, per_stage[NS] = {0};
    for (char *save, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        int d, kind, mb, clipped, chunk, k;
        double t0, t1;
        if (l[0] == '#' || sscanf(l, "%d %lf %lf %d %d %d %d %d", &d, &t0, &t1, &kind, &mb,
                                  &clipped, &chunk, &k) != 8)
            continue;
        ck_assert_msg(k >= 0 && k < NS && d == device_of(vee, k) && chunk == chunk_of(k),
                      "row %s", l);
        per_stage[k]++;
        rows++;
    }
    free(text);
    ck_assert_int_gt(rows, 0);
    for (int k = 0; k < NS; k++)
        ck_assert_msg(per_stage[k] > 0, "no rows of stage %d", k);
    text = fx_read(dat, NULL);
    char want[96];
    for (int r = 0; r < NP; r++) {
        snprintf(want, sizeof want, "\n%d \"device %d: stages %d, %d (epoch bubble ", r, r, r,
                 vee ? 2 * NP - 1 - r : r + NP);
        ck_assert_msg(strstr(text, want) != NULL, "lacks %s in:\n%s", want, text);
    }
    ck_assert_msg(!strstr(text, "\n2 ") && !strstr(text, "\"stage "), "%s", text);
    free(text);
}

START_TEST(interleaved_rows)
{
    int64_t run = record("interleaved", 2, "il.db");
    check_trace(tmp_path_kept("il.db"), run, false);
    check_timeline(tmp_path_kept("il.db"), run, false);
}
END_TEST

START_TEST(zbv_rows)
{
    int64_t run = record("zb-v", 0, "zbv.db");
    check_trace(tmp_path_kept("zbv.db"), run, true);
    check_timeline(tmp_path_kept("zbv.db"), run, true);
}
END_TEST

/* The first column of a query on the database at path, as an integer. */
static int db_int(const char *path, const char *sql)
{
    sqlite3 *d;
    sqlite3_stmt *q;
    ck_assert(sqlite3_open_v2(path, &d, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(d, sql, -1, &q, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(d));
    ck_assert_msg(sqlite3_step(q) == SQLITE_ROW, "%s: no row", sql);
    int v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(d);
    return v;
}

/* Every pair of the device programs of the recorded run's pipe is in its events: the F
 * marked 1 on its stage, the B marked 2 on its, nothing else marked; and the trace has
 * one "pair" slice per pair, named F<j>@<c>+B<j'>@<c'> on the pair's device. */
START_TEST(dualpipe_pairs)
{
    int64_t run = record("dualpipe-v", 0, "dpv.db");
    const char *db = tmp_path_kept("dpv.db");
    int n = db_int(db, "SELECT max(mb) + 1 FROM events WHERE kind = 'F'");
    struct pb_err e;
    const struct pb_schedule *sch = pb_schedule_find("dualpipe-v", &e);
    ck_assert_ptr_nonnull(sch);
    struct pb_pipe pipe = {.stages = NS, .length = n, .microbatches = 4,
                           .optimizer = PB_OPT_SGD};
    pb_pipe_adopt(&pipe, sch);
    struct pb_program progs[NP];
    ck_assert_msg(pb_programs_build(sch, &pipe, progs, &e) == 0, "%s", e.msg);
    char names[64][32], sql[256];
    int pairs = 0;
    for (int d = 0; d < NP; d++)
        for (int i = 0; i + 1 < progs[d].n; i++) {
            const struct pb_op *f = &progs[d].ops[i], *b = &progs[d].ops[i + 1];
            if (!f->pair)
                continue;
            int sf = f->chunk ? 2 * NP - 1 - d : d, sb = b->chunk ? 2 * NP - 1 - d : d;
            snprintf(sql, sizeof sql, "SELECT count(*) FROM events WHERE kind = 'F' AND pair "
                     "= 1 AND device = %d AND mb = %d", sf, (int)f->mb);
            ck_assert_int_eq(db_int(db, sql), 1);
            snprintf(sql, sizeof sql, "SELECT count(*) FROM events WHERE kind = 'B' AND pair "
                     "= 2 AND device = %d AND mb = %d", sb, (int)b->mb);
            ck_assert_int_eq(db_int(db, sql), 1);
            ck_assert_int_lt(pairs, 64);
            snprintf(names[pairs++], sizeof names[0], "F%d@%d+B%d@%d", (int)f->mb, f->chunk,
                     (int)b->mb, b->chunk);
        }
    pb_programs_finish(progs, NP);
    ck_assert_int_gt(pairs, 0);
    ck_assert_int_eq(db_int(db, "SELECT count(*) FROM events WHERE pair = 1"), pairs);
    ck_assert_int_eq(db_int(db, "SELECT count(*) FROM events WHERE pair = 2"), pairs);
    ck_assert_int_eq(db_int(db, "SELECT count(*) FROM events WHERE pair IS NULL OR pair NOT "
                                "IN (0, 1, 2)"), 0);
    char path[600];
    snprintf(path, sizeof path, "%s.json", db);
    struct pb_trace_info info;
    ck_assert_msg(pb_trace_write(db, run, -1, path, &info, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(info.pairs, pairs);
    char *text = fx_read(path, NULL);
    cJSON *root = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(root);
    const cJSON *ev;
    int seen = 0, halves = 0;
    cJSON_ArrayForEach(ev, cJSON_GetObjectItem(root, "traceEvents")) {
        const cJSON *cat = cJSON_GetObjectItem(ev, "cat"), *args = cJSON_GetObjectItem(ev, "args");
        if (strcmp(cJSON_GetObjectItem(ev, "ph")->valuestring, "X"))
            continue;
        if (!strcmp(cat->valuestring, "pair")) {
            const char *name = cJSON_GetObjectItem(ev, "name")->valuestring;
            int k = 0;
            while (k < pairs && strcmp(names[k], name))
                k++;
            ck_assert_msg(k < pairs, "pair slice %s is none of the programs' pairs", name);
            names[k][0] = '\0';
            seen++;
        } else if (cJSON_GetObjectItem(args, "pair")) {
            halves++;
        }
    }
    cJSON_Delete(root);
    ck_assert_int_eq(seen, pairs);
    ck_assert_int_eq(halves, 2 * pairs);
}
END_TEST

/* A schema 9 file: this build's database with the events' pair column dropped and the
 * version set back, by SQL. */
static void make_v9(const char *path)
{
    sqlite3 *d;
    ck_assert(sqlite3_open_v2(path, &d, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    for (;;) {   /* the views a build before this one wrote are not this build's */
        sqlite3_stmt *q;
        char sql[256] = "";
        ck_assert(sqlite3_prepare_v2(d, "SELECT name FROM sqlite_schema WHERE type = 'view' "
                                        "LIMIT 1", -1, &q, NULL) == SQLITE_OK);
        if (sqlite3_step(q) == SQLITE_ROW)
            snprintf(sql, sizeof sql, "DROP VIEW \"%s\"", sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
        if (!sql[0])
            break;
        ck_assert(sqlite3_exec(d, sql, NULL, NULL, NULL) == SQLITE_OK);
    }
    ck_assert_msg(sqlite3_exec(d, "PRAGMA user_version = 0; ALTER TABLE events DROP COLUMN "
                                  "pair; UPDATE schema_version SET version = 9", NULL, NULL,
                               NULL) == SQLITE_OK, "%s", sqlite3_errmsg(d));
    sqlite3_close(d);
}

START_TEST(schema_v9_upgrade)
{
    record("dualpipe-v", 0, "old.db");
    const char *db = tmp_path_kept("old.db");
    int events = db_int(db, "SELECT count(*) FROM events");
    make_v9(db);
    ck_assert_int_eq(db_int(db, "SELECT count(*) FROM pragma_table_info('events') WHERE name "
                                "= 'pair'"), 0);
    char args[1024], out[8192], err[4096];
    snprintf(args, sizeof args, "runs --db '%s'", db);
    ck_assert_int_eq(fx_cli(NULL, args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "schema version 9") && strstr(err, "upgrades it in place"), "%s",
                  err);
    struct pb_results *r;
    struct pb_err e;
    ck_assert_msg(pb_results_open(&r, db, &e) == 0, "%s", e.msg);   /* as run, compare do */
    pb_results_close(r);
    ck_assert_int_eq(db_int(db, "SELECT max(version) FROM schema_version"),
                     PB_RESULTS_SCHEMA_VERSION);
    ck_assert_int_eq(db_int(db, "SELECT count(*) FROM events WHERE pair IS NULL"), events);
    ck_assert_int_eq(fx_cli(NULL, args, out, sizeof out, err, sizeof err), 0);
    ck_assert_msg(strstr(out, "dualpipe-v"), "%s", out);
    snprintf(args, sizeof args, "show 1 --db '%s'", db);
    ck_assert_msg(fx_cli(NULL, args, out, sizeof out, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(strstr(out, "dualpipe-v"), "%s", out);
    snprintf(args, sizeof args, "trace 1 --db '%s' --out '%s.json'", db, db);
    ck_assert_msg(fx_cli(NULL, args, out, sizeof out, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(strstr(out, "2 devices (4 stages, 2 chunks each)") &&
                  !strstr(out, "overlapped pairs"), "%s", out);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("devtrace");
    TCase *tc = tcase_create("devtrace");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, interleaved_rows);
    tcase_add_test(tc, zbv_rows);
    tcase_add_test(tc, dualpipe_pairs);
    tcase_add_test(tc, schema_v9_upgrade);
    suite_add_tcase(s, tc);
    return s;
}
