/* tests/test_devtrace.c — the trace and the timeline of runs with model chunks, a row per
 * device (semantics §4.12, §4.13): a recorded interleaved run (mlp, D = 4 stages on 2
 * devices in loops: stage k on device k mod 2) and a zb-v run (D = 4 on 2 devices in a V:
 * device r holds stages r and 2p−1−r), each written by `pipebench trace` and the
 * timeline figure; the JSON's tracks and the .dat file's rows name devices, and each
 * stage's ops sit on its device's row with their chunk (F3@1). */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot.h"
#include "plots/trace.h"
#include "tests/report_fixture.h"
#include "tests/test_util.h"
#include "tests/train_util.h"

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

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("devtrace");
    TCase *tc = tcase_create("devtrace");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, interleaved_rows);
    tcase_add_test(tc, zbv_rows);
    suite_add_tcase(s, tc);
    return s;
}
