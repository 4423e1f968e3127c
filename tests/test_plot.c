/* tests/test_plot.c — `pipebench plot` (plots/plot.c and the scripts of plots/) and
 * `pipebench trace` (plots/trace.c) on a made-up database: every figure as non-empty PNG
 * and SVG, the rows and values of its .dat file, skipping and errors, and the Chrome
 * trace's slices per device and flow arrows read back with cJSON (needs gnuplot-nox). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "plots/plot.h"
#include "tests/report_fixture.h"
#include "tests/test_util.h"
#include "plots/trace.h"

static const char *dir, *db;
static char out[512];

static void setup(void)
{
    dir = fx_mkdtemp("plot");
    db = fx_build_db(dir);
    snprintf(out, sizeof out, "%s/figs", dir);
}

static void teardown(void)
{
    fx_rmdir(dir);
}

static char *path_of(const char *name)
{
    static char p[4][600];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%s/%s", out, name);
    return p[i];
}

static void plot_ok(const char *figure, const char *format, int64_t run)
{
    struct pb_err e;
    ck_assert_msg(pb_plot_figure(db, figure, out, format, run, &e) == 0, "%s %s: %s", figure,
                  format, e.msg);
}

/* The lines of a data file that hold data: neither comments nor blank. */
static int data_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0 && p[0] != '#')
            n++;
        p += len + (end != NULL);
    }
    return n;
}

static char *read_dat(const char *figure)
{
    char name[64];
    snprintf(name, sizeof name, "%s.dat", figure);
    char *t = fx_read(path_of(name), NULL);
    ck_assert_msg(t != NULL, "%s was not written", path_of(name));
    return t;
}

static void assert_has(const char *text, const char *line)
{
    ck_assert_msg(strstr(text, line) != NULL, "lacks \"%s\" in:\n%s", line, text);
}

START_TEST(figures_png_svg)
{
    static const char png_magic[] = "\x89PNG\r\n\x1a\n";
    for (int f = 0; pb_plot_figure_names[f]; f++) {
        plot_ok(pb_plot_figure_names[f], "png", FX_PIPEDREAM);
        plot_ok(pb_plot_figure_names[f], "svg", FX_PIPEDREAM);
        char name[64];
        size_t len;
        snprintf(name, sizeof name, "%s.png", pb_plot_figure_names[f]);
        char *png = fx_read(path_of(name), &len);
        ck_assert_msg(png && len > 1000 && !memcmp(png, png_magic, 8), "%s: not a PNG", name);
        free(png);
        snprintf(name, sizeof name, "%s.svg", pb_plot_figure_names[f]);
        char *svg = fx_read(path_of(name), &len);
        ck_assert_msg(svg && len > 1000 && strstr(svg, "<svg") && strstr(svg, "</svg>"),
                      "%s: not an SVG", name);
        free(svg);
    }
}
END_TEST

/* Blocks per schedule (gpipe, pipedream, pipeoptim (code); not the failed run), each a
 * header and two epochs: gpipe is the mean of its two seeds (50 and 55 %, then 60, 64). */
START_TEST(convergence_dat)
{
    plot_ok("convergence", "png", FX_PIPEDREAM);
    char *t = read_dat("convergence");
    ck_assert_int_eq(data_lines(t), 3 * 3);
    assert_has(t, "epoch \"gpipe\" seconds runs\n1 52.5 10 2\n2 62 20 2\n\n\n");
    assert_has(t, "epoch \"pipedream\" seconds runs\n1 59 10 1\n2 66 20 1\n\n\n");
    assert_has(t, "epoch \"pipeoptim (code)\" seconds runs\n1 61 10 1\n2 65 20 1\n");
    ck_assert_msg(!strstr(t, "90") && !strstr(t, "\"pipeoptim\""), "%s", t);
    free(t);
}
END_TEST

/* Rows per schedule, a column for the one D; bubble 0.25 (k + 1) / 4 averages 15.625 %. */
START_TEST(throughput_dat)
{
    plot_ok("throughput", "png", FX_PIPEDREAM);
    char *t = read_dat("throughput");
    ck_assert_int_eq(data_lines(t), 2 * 4);
    assert_has(t, "schedule \"D=4\"\n\"gpipe\" 1150\n\"pipedream\" 1500\n"
                  "\"pipeoptim (code)\" 1300\n\n\n");
    assert_has(t, "schedule \"D=4\"\n\"gpipe\" 15.625\n\"pipedream\" 15.625\n"
                  "\"pipeoptim (code)\" 15.625\n");
    free(t);
}
END_TEST

/* Run 3 (pipedream): per stage 1, 1, 2 MiB, 1 MiB weight copies, acts 1 MiB at peak. */
START_TEST(memory_dat)
{
    plot_ok("memory", "png", FX_PIPEDREAM);
    char *t = read_dat("memory");
    ck_assert_int_eq(data_lines(t), 1 + FX_STAGES);
    assert_has(t, "\n\"stage 0\" 1 1 2 1 1 0.25 0.25 0 0\n");
    assert_has(t, "\n\"stage 3\" 1 1 2 1 1 0.25 0.25 0 0\n");
    free(t);
}
END_TEST

/* FX_NEVENTS ops per device in the last epoch, then a label per device with its idle
 * fraction (stage 0: 6.25 %, stage 3: 25 %). */
START_TEST(timeline_dat)
{
    plot_ok("timeline", "png", FX_PIPEDREAM);
    char *t = read_dat("timeline");
    ck_assert_int_eq(data_lines(t), FX_STAGES * FX_NEVENTS + FX_STAGES);
    assert_has(t, "\n0 0.000000 1.000000 0 0\n");          /* F0 on stage 0 */
    assert_has(t, "\n3 44.000000 46.000000 1 0\n");        /* B0 on stage 3 */
    assert_has(t, "\n3 46.000000 46.500000 2 -1\n");       /* its U */
    assert_has(t, "\n\n0 \"stage 0 (6% idle)\"\n");
    assert_has(t, "\n3 \"stage 3 (25% idle)\"\n");
    free(t);
}
END_TEST

/* Blocks F lag, B lag, prediction error; a row per stage, a column per schedule. */
START_TEST(staleness_dat)
{
    plot_ok("staleness", "png", FX_PIPEDREAM);
    char *t = read_dat("staleness");
    ck_assert_int_eq(data_lines(t), 3 * (1 + FX_STAGES));
    assert_has(t, "stage \"gpipe\" \"pipedream\" \"pipeoptim (code)\"\n\"stage 0\" 0 3 0\n"
                  "\"stage 1\" 0 2 0\n");
    assert_has(t, "\"stage 0\" ? ? 0.001\n\"stage 1\" ? ? 0.001\n\"stage 2\" ? ? 0.001\n"
                  "\"stage 3\" ? ? ?\n");
    free(t);
}
END_TEST

/* The default run is the newest finished one (7, no events): "all" skips the timeline. */
START_TEST(all_skips_missing_data)
{
    plot_ok("all", "png", 0);
    static const char *const made[] = {"convergence", "throughput", "memory", "staleness"};
    struct stat st;
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.png", made[i]);
        ck_assert_msg(stat(path_of(name), &st) == 0 && st.st_size > 0, "%s missing", name);
    }
    ck_assert_int_ne(stat(path_of("timeline.png"), &st), 0);
    struct pb_err e;
    ck_assert_int_eq(pb_plot_figure(db, "timeline", out, "png", 0, &e), -1);
    ck_assert_msg(strstr(e.msg, "recorded no op events") != NULL, "%s", e.msg);
}
END_TEST

static void expect_fail(const char *db_path, const char *figure, const char *format,
                        int64_t run, const char *msg)
{
    struct pb_err e;
    ck_assert_int_eq(pb_plot_figure(db_path, figure, out, format, run, &e), -1);
    ck_assert_msg(strstr(e.msg, msg) != NULL, "\"%s\" lacks \"%s\"", e.msg, msg);
}

static void expect_cli(const char *env, const char *args, const char *msg)
{
    char err[4096];
    ck_assert_int_eq(fx_cli(env, args, NULL, 0, err, sizeof err), 2);
    ck_assert_msg(strstr(err, msg) != NULL, "%s: stderr \"%s\" lacks \"%s\"", args, err, msg);
}

/* An installed binary (meson install into a scratch DESTDIR) finds the figure scripts
 * installed beside it, away from the source tree: it draws a figure. */
START_TEST(installed_scripts)
{
    const char *bin = getenv("PB_PIPEBENCH");
    ck_assert(bin != NULL);
    char build[512], cmd[2048];
    snprintf(build, sizeof build, "%s", bin);
    *strrchr(build, '/') = 0;
    snprintf(cmd, sizeof cmd, "meson install -C '%s' --no-rebuild --quiet --destdir '%s/inst' "
             ">'%s/install.log' 2>&1", build, dir, dir);
    ck_assert_msg(system(cmd) == 0, "meson install failed: see %s/install.log", dir);
    snprintf(cmd, sizeof cmd, "find '%s/inst' -type f -path '*/bin/pipebench' -print -quit", dir);
    FILE *f = popen(cmd, "r");
    char installed[1024] = "";
    ck_assert(f && fgets(installed, sizeof installed, f));
    pclose(f);
    installed[strcspn(installed, "\n")] = 0;
    snprintf(cmd, sizeof cmd, "env -u PB_PLOTS_DIR '%s' plot --db '%s' --figure memory --run 3 "
             "--out '%s/inst-figs' >/dev/null 2>&1", installed, db, dir);
    ck_assert_msg(system(cmd) == 0, "%s could not draw with its installed scripts", installed);
    snprintf(cmd, sizeof cmd, "%s/inst-figs/memory.png", dir);
    ck_assert_msg(access(cmd, R_OK) == 0, "no %s", cmd);
}
END_TEST

START_TEST(bad_input)
{
    expect_fail(fx_build_empty_db(dir), "all", "png", 0, "holds no finished run");
    expect_fail(db, "pie", "png", 0, "unknown figure 'pie'; valid: convergence, throughput, "
                "memory, timeline, staleness, all");
    expect_fail(db, "memory", "gif", 0, "unknown figure format 'gif'; valid: png, svg, pdf");
    expect_fail(db, "memory", "png", 42, "there is no run 42");
    char args[700];
    snprintf(args, sizeof args, "plot --db '%s' --figure memory --out '%s'", db, out);
    expect_cli("PATH=/nonexistent", args, "install the Debian package gnuplot-nox");
    expect_cli("PB_PLOTS_DIR=/nonexistent", args, "set PB_PLOTS_DIR");
    snprintf(args, sizeof args, "plot --db '%s' --figure memory", db);
    expect_cli(NULL, args, "needs --figure and --out");
    snprintf(args, sizeof args, "plot --db '%s' --figure memory --out '%s' --run x", db, out);
    expect_cli(NULL, args, "--run expects a run id");
    char stdout_text[4096];
    snprintf(args, sizeof args, "plot --db '%s' --figure memory --out '%s' --run 3", db, out);
    ck_assert_int_eq(fx_cli(NULL, args, stdout_text, sizeof stdout_text, NULL, 0), 0);
    assert_has(stdout_text, "/figs/memory.png\n");
}
END_TEST

static int count_ph(const cJSON *list, const char *ph, int tid)
{
    int n = 0;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, list) {
        const cJSON *p = cJSON_GetObjectItem(ev, "ph"), *t = cJSON_GetObjectItem(ev, "tid");
        if (!strcmp(p->valuestring, ph) && (tid < 0 || (t && t->valueint == tid)))
            n++;
    }
    return n;
}

/* Each flow id has one start and one end; F flows go down the pipeline, B flows up. */
static void check_flows(const cJSON *list, int nflows)
{
    int *from = calloc((size_t)nflows + 1, sizeof *from), *to = calloc((size_t)nflows + 1,
                                                                        sizeof *to);
    char *kind = calloc((size_t)nflows + 1, 1);
    for (int i = 0; i <= nflows; i++)
        from[i] = to[i] = -1;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, list) {
        const char *ph = cJSON_GetObjectItem(ev, "ph")->valuestring;
        if (strcmp(ph, "s") && strcmp(ph, "f"))
            continue;
        int id = cJSON_GetObjectItem(ev, "id")->valueint;
        ck_assert(id >= 1 && id <= nflows);
        int tid = cJSON_GetObjectItem(ev, "tid")->valueint;
        if (ph[0] == 's') {
            ck_assert_int_eq(from[id], -1);
            from[id] = tid;
            kind[id] = cJSON_GetObjectItem(ev, "name")->valuestring[0];
        } else {
            ck_assert_int_eq(to[id], -1);
            to[id] = tid;
            ck_assert_str_eq(cJSON_GetObjectItem(ev, "bp")->valuestring, "e");
        }
    }
    for (int id = 1; id <= nflows; id++)
        ck_assert_int_eq(to[id] - from[id], kind[id] == 'F' ? 1 : -1);
    free(from);
    free(to);
    free(kind);
}

START_TEST(trace_json)
{
    char path[600];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    struct pb_trace_info info;
    struct pb_err e;
    ck_assert_msg(pb_trace_write(db, FX_PIPEDREAM, -1, path, &info, &e) == 0, "%s", e.msg);
    int flows = 2 * FX_MICROBATCHES * (FX_STAGES - 1);
    ck_assert_int_eq(info.epoch, 1);
    ck_assert_int_eq(info.slices, FX_STAGES * FX_NEVENTS);
    ck_assert_int_eq(info.flows, flows);
    char *text = fx_read(path, NULL);
    ck_assert_ptr_nonnull(text);
    cJSON *root = cJSON_Parse(text);
    free(text);
    ck_assert_msg(root != NULL, "the trace is not JSON");
    const cJSON *list = cJSON_GetObjectItem(root, "traceEvents");
    ck_assert(cJSON_IsArray(list));
    for (int k = 0; k < FX_STAGES; k++)
        ck_assert_int_eq(count_ph(list, "X", k), FX_NEVENTS);
    ck_assert_int_eq(count_ph(list, "X", -1), FX_STAGES * FX_NEVENTS);
    ck_assert_int_eq(count_ph(list, "s", -1), flows);
    ck_assert_int_eq(count_ph(list, "f", -1), flows);
    check_flows(list, flows);
    int names = 0;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, list) {
        const char *name = cJSON_GetObjectItem(ev, "name")->valuestring;
        const char *ph = cJSON_GetObjectItem(ev, "ph")->valuestring;
        int tid = cJSON_IsNumber(cJSON_GetObjectItem(ev, "tid"))
                      ? cJSON_GetObjectItem(ev, "tid")->valueint : -1;
        const cJSON *args = cJSON_GetObjectItem(ev, "args");
        if (!strcmp(ph, "M") && !strcmp(name, "thread_name")) {
            char want[16];
            snprintf(want, sizeof want, "stage %d", tid);
            ck_assert_str_eq(cJSON_GetObjectItem(args, "name")->valuestring, want);
            names++;
        }
        if (!strcmp(ph, "X") && tid == 2 && !strcmp(name, "F1")) {   /* 10 + 4 ms, 1 ms */
            ck_assert_double_eq_tol(cJSON_GetObjectItem(ev, "ts")->valuedouble, 14000, 1e-6);
            ck_assert_double_eq_tol(cJSON_GetObjectItem(ev, "dur")->valuedouble, 1000, 1e-6);
            ck_assert_int_eq(cJSON_GetObjectItem(args, "mb")->valueint, 1);
            ck_assert_int_eq(cJSON_GetObjectItem(args, "ahead")->valueint, 1);
        }
        if (!strcmp(ph, "X") && !strcmp(name, "U"))
            ck_assert_ptr_null(cJSON_GetObjectItem(args, "mb"));
    }
    ck_assert_int_eq(names, FX_STAGES);
    cJSON_Delete(root);
}
END_TEST

START_TEST(trace_cli)
{
    char args[700], text[4096];
    snprintf(args, sizeof args, "trace %d --db '%s' --out '%s/t.json' --epoch 1", FX_PIPEDREAM,
             db, dir);
    ck_assert_int_eq(fx_cli(NULL, args, text, sizeof text, NULL, 0), 0);
    assert_has(text, "epoch 1, 4 devices, 36 slices, 18 flows\n");
    snprintf(args, sizeof args, "trace %d --db '%s' --out '%s/t.json' --epoch 5", FX_PIPEDREAM,
             db, dir);
    expect_cli(NULL, args, "has no events in epoch 5; its events cover epochs 1 to 2");
    snprintf(args, sizeof args, "trace %d --db '%s' --out '%s/t.json'", FX_GPIPE_S1, db, dir);
    expect_cli(NULL, args, "recorded no op events");
    snprintf(args, sizeof args, "trace --db '%s' --out '%s/t.json'", db, dir);
    expect_cli(NULL, args, "trace needs a run id");
    snprintf(args, sizeof args, "trace 3 --db '%s'", db);
    expect_cli(NULL, args, "trace needs --out");
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("plot");
    TCase *tc = tcase_create("plot");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, figures_png_svg);
    tcase_add_test(tc, convergence_dat);
    tcase_add_test(tc, throughput_dat);
    tcase_add_test(tc, memory_dat);
    tcase_add_test(tc, timeline_dat);
    tcase_add_test(tc, staleness_dat);
    tcase_add_test(tc, all_skips_missing_data);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, installed_scripts);
    tcase_add_test(tc, trace_json);
    tcase_add_test(tc, trace_cli);
    suite_add_tcase(s, tc);
    return s;
}
