/* tests/plots/test_plot.c — `pipebench plot` (plots/plot.c and the scripts of plots/) and
 * `pipebench trace` (plots/trace.c) on a made-up database: every figure as non-empty PNG
 * and SVG, the rows and values of its .dat file, skipping and errors, and the Chrome
 * trace's slices per device and flow arrows read back with cJSON (needs gnuplot-nox). */
#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "harness/ir/program.h"
#include "pb_config.h"
#include "plots/plot.h"
#include "plots/plot_style.h"
#include "results/results.h"
#include "schedules/registry.h"
#include "tests/support/report_fixture.h"
#include "tests/support/test_util.h"
#include "plots/trace.h"
#include "results/results_sim.h"

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

/* CIELAB (D65) of '#rrggbb' as seen through the 3x3 matrix m on linear RGB (NULL: as
 * is); protanopia and deuteranopia as Viénot, Brettel and Mollon (1999) simulate them. */
static const double protan[9] = {0.11238, 0.88762, 0, 0.11238, 0.88762, 0, 0.00401, -0.00401, 1};
static const double deutan[9] = {0.29275, 0.70725, 0, 0.29275, 0.70725, 0, -0.02234, 0.02234, 1};

static void lab_of(const char *hex, const double *m, double lab[3])
{
    unsigned rgb[3];
    ck_assert_msg(strlen(hex) == 7 && sscanf(hex, "#%2x%2x%2x", &rgb[0], &rgb[1], &rgb[2]) == 3,
                  "not a colour: %s", hex);
    double l[3], v[3];
    for (int i = 0; i < 3; i++) {
        double c = rgb[i] / 255.0;
        l[i] = c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
    }
    for (int i = 0; i < 3; i++)
        v[i] = m ? fmin(1, fmax(0, m[3 * i] * l[0] + m[3 * i + 1] * l[1] + m[3 * i + 2] * l[2]))
                 : l[i];
    double xyz[3] = {(0.4124 * v[0] + 0.3576 * v[1] + 0.1805 * v[2]) / 0.95047,
                     0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2],
                     (0.0193 * v[0] + 0.1192 * v[1] + 0.9505 * v[2]) / 1.08883};
    for (int i = 0; i < 3; i++)
        xyz[i] = xyz[i] > 0.008856 ? cbrt(xyz[i]) : 7.787 * xyz[i] + 16.0 / 116;
    lab[0] = 116 * xyz[1] - 16;
    lab[1] = 500 * (xyz[0] - xyz[1]);
    lab[2] = 200 * (xyz[1] - xyz[2]);
}

/* The smallest CIE76 distance of a and b as normal, protanopic and deuteranopic eyes see
 * them (all_eyes), or as normal eyes do. */
static double delta_e(const char *a, const char *b, int all_eyes)
{
    const double *eyes[3] = {NULL, protan, deutan};
    double least = INFINITY;
    for (int k = 0; k < (all_eyes ? 3 : 1); k++) {
        double x[3], y[3];
        lab_of(a, eyes[k], x);
        lab_of(b, eyes[k], y);
        least = fmin(least, sqrt((x[0] - y[0]) * (x[0] - y[0]) + (x[1] - y[1]) * (x[1] - y[1]) +
                                 (x[2] - y[2]) * (x[2] - y[2])));
    }
    return least;
}

/* Every registered schedule and variant has its own entry: a colour and dash no other
 * has, and a marker no other has but one whose colour is far from it for every eye (gnuplot's
 * cairo terminals draw 15 marker shapes, fewer than the styles); the colours of the schedules (drawn together), of the op kinds and of the
 * memory kinds stay apart within each set for normal, protanopic and deuteranopic eyes,
 * and no schedule's colour is near an op kind's or memory kind's. */
START_TEST(style_table)
{
    int n = 0;
    for (int i = 0; pb_schedules[i]; i++) {
        bool known;
        pb_plot_style_of(pb_schedules[i]->name, NULL, &known);
        ck_assert_msg(known, "schedule %s has no style in plots/plot_style.c",
                      pb_schedules[i]->name);
        n++;
        char v[256];
        snprintf(v, sizeof v, "%s", pb_schedules[i]->variants);
        for (char *tok = strtok(v, ","); tok; tok = strtok(NULL, ","), n++) {
            pb_plot_style_of(pb_schedules[i]->name, tok, &known);
            ck_assert_msg(known, "%s (%s) has no style", pb_schedules[i]->name, tok);
        }
    }
    int styled = 0;
    for (; pb_plot_styles[styled].schedule; styled++)
        for (int b = 0; b < styled; b++) {
            const struct pb_plot_style *x = &pb_plot_styles[styled].style;
            const struct pb_plot_style *y = &pb_plot_styles[b].style;
            double d = delta_e(x->color, y->color, 1);
            ck_assert_msg(strcmp(x->color, y->color) && strcmp(x->dash, y->dash) &&
                          (x->point != y->point || d >= 40), "styles %d and %d share a "
                          "colour or dash, or a marker with colours closer than delta E 40",
                          styled, b);
            ck_assert_msg(d >= 15, "%s and %s: delta E %.1f", x->color, y->color, d);
        }
    ck_assert_int_eq(styled, n);
    for (int a = 0; a < PB_PLOT_NMEMKINDS; a++)
        for (int b = 0; b < a; b++)
            ck_assert_msg(delta_e(pb_plot_mem_colors[a], pb_plot_mem_colors[b], 1) >= 15,
                          "memory kinds %d and %d", a, b);
    for (int a = 0; a < PB_PLOT_NOPKINDS; a++)
        for (int b = 0; b < a; b++)
            ck_assert_msg(delta_e(pb_plot_op_colors[a], pb_plot_op_colors[b], 1) >= 30,
                          "op kinds %d and %d", a, b);
    for (int i = 0; i < styled; i++) {
        const char *c = pb_plot_styles[i].style.color;
        for (int k = 0; k < PB_PLOT_NMEMKINDS; k++)
            ck_assert_msg(delta_e(c, pb_plot_mem_colors[k], 0) >= 15, "%s vs memory %s", c,
                          pb_plot_mem_colors[k]);
        for (int k = 0; k < PB_PLOT_NOPKINDS; k++)
            ck_assert_msg(delta_e(c, pb_plot_op_colors[k], 0) >= 15, "%s vs op %s", c,
                          pb_plot_op_colors[k]);
    }
}
END_TEST

/* The scripts take every colour from the table (variables set by plot): the only colours
 * written in the scripts of plots/ are greys (borders, grid, text). */
START_TEST(scripts_use_the_table)
{
    static const char *const scripts[] = {"style", "legend", "convergence", "throughput",
                                          "memory", "timeline", "staleness"};
    for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/plots/%s.gp", PB_SOURCE_ROOT, scripts[i]);
        char *t = fx_read(path, NULL);
        ck_assert_msg(t != NULL, "cannot read %s", path);
        for (const char *p = strchr(t, '#'); p; p = strchr(p + 1, '#')) {
            unsigned r, g, b;
            int used = 0;
            if (sscanf(p, "#%2x%2x%2x%n", &r, &g, &b, &used) == 3 && used == 7 &&
                strspn(p + 1, "0123456789abcdefABCDEF") == 6)
                ck_assert_msg(r == g && g == b, "%s: the colour %.7s is not from "
                              "plots/plot_style.c", path, p);
        }
        free(t);
    }
}
END_TEST

/* Blocks per schedule (gpipe, pipedream, pipeoptim (code); not the failed run), each a
 * header naming it with its n and two epochs: gpipe is the mean of its two seeds (50 and
 * 55 %, then 60, 64) with the half-width of its 95 % interval, t(0.975, 1) = 12.7062 times
 * the sample std over sqrt 2 (2.5 sqrt 2, then 2 sqrt 2: 31.7655, 25.4124), 10 s an epoch,
 * losses 1 then 0.9 in every run; one seed has no interval ('?'). */
START_TEST(convergence_dat)
{
    plot_ok("convergence", "svg", FX_PIPEDREAM);
    char *t = read_dat("convergence");
    ck_assert_int_eq(data_lines(t), 3 * 3);
    static const char head[] = " acc_ci95 seconds val_loss val_loss_ci95 train_loss "
                               "train_loss_ci95 runs\n";
    char want[512];
    snprintf(want, sizeof want, "epoch \"gpipe (n = 2)\"%s1 52.5 31.7655 10 1 0 1 0 2\n"
             "2 62 25.4124 20 0.9 0 0.9 0 2\n\n\n", head);
    assert_has(t, want);
    snprintf(want, sizeof want, "epoch \"pipedream (n = 1)\"%s1 59 ? 10 1 ? 1 ? 1\n"
             "2 66 ? 20 0.9 ? 0.9 ? 1\n\n\n", head);
    assert_has(t, want);
    snprintf(want, sizeof want, "epoch \"pipeoptim (code) (n = 1)\"%s1 61 ? 10 1 ? 1 ? 1\n",
             head);
    assert_has(t, want);
    ck_assert_msg(!strstr(t, " 90 ") && !strstr(t, "\"pipeoptim\"") && !strstr(t, "target"),
                  "%s", t);
    free(t);
    char *svg = fx_read(path_of("convergence.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    assert_has(svg, "95% confidence interval");
    assert_has(svg, "gpipe (n = 2)");
    free(svg);
}
END_TEST

/* --target 0.6 (a fraction, as report's: the first epoch with val_acc >= 0.6): gpipe's
 * seeds reach it at epoch 2 (0.60 and 0.64), pipedream at 2, pipeoptim (code) at 1: all
 * their seeds, so markers; the figure draws the line at 60 %. At 0.62 only gpipe's second
 * seed does: no marker, "1/2" at its epoch as report's note says. A target the runs never
 * reach has neither and 0 reached. */
START_TEST(convergence_target)
{
    struct pb_err e;
    struct pb_plot_opts o = {.target = 0.6};
    ck_assert_msg(pb_plot_figure_cb(db, "convergence", out, "svg", FX_PIPEDREAM, NULL, &o, NULL,
                                    NULL, &e) == 0, "%s", e.msg);
    char *t = read_dat("convergence");
    ck_assert_int_eq(data_lines(t), 3 * 3 + 4);
    assert_has(t, "\n\n\nschedule all_epochs all_seconds some_epochs some_seconds reached runs\n"
                  "\"gpipe\" 2 20 ? ? 2 2\n\"pipedream\" 2 20 ? ? 1 1\n"
                  "\"pipeoptim (code)\" 1 10 ? ? 1 1\n");
    free(t);
    char *svg = fx_read(path_of("convergence.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    assert_has(svg, "target 60%");
    assert_has(svg, "validation loss per epoch");
    assert_has(svg, "training loss per epoch");
    ck_assert_msg(!strstr(svg, "/2<"), "a fraction drawn where all seeds reached it");
    free(svg);
    o.target = 0.62;
    ck_assert_msg(pb_plot_figure_cb(db, "convergence", out, "svg", FX_PIPEDREAM, NULL, &o, NULL,
                                    NULL, &e) == 0, "%s", e.msg);
    t = read_dat("convergence");
    assert_has(t, "\"gpipe\" ? ? 2 20 1 2\n");
    free(t);
    svg = fx_read(path_of("convergence.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    assert_has(svg, ">1/2<");
    free(svg);
    o.target = 0.7;
    ck_assert_msg(pb_plot_figure_cb(db, "convergence", out, "png", FX_PIPEDREAM, NULL, &o, NULL,
                                    NULL, &e) == 0, "%s", e.msg);
    t = read_dat("convergence");
    assert_has(t, "\"gpipe\" ? ? ? ? 0 2\n");
    free(t);
    o.target = 60;
    ck_assert_int_eq(pb_plot_figure_cb(db, "convergence", out, "png", FX_PIPEDREAM, NULL, &o,
                                       NULL, NULL, &e), -1);
    assert_has(e.msg, "fraction in (0, 1]");
}
END_TEST

/* Without a run, the fixture's two configurations (sgdm and adam on mlp) are two facets:
 * each cell's blocks of all four schedules in turn (adam's first: by model, dataset,
 * optimizer), a schedule the cell lacks a header of n = 0 without rows, the target rows
 * per cell likewise, and the figure titles each facet with its configuration. */
START_TEST(convergence_facets)
{
    struct pb_err e;
    struct pb_plot_opts o = {.target = 0.62};
    ck_assert_msg(pb_plot_figure_cb(db, "convergence", out, "svg", 0, NULL, &o, NULL, NULL, &e) ==
                  0, "%s", e.msg);
    char *t = read_dat("convergence");
    static const char head[] = " acc_ci95 seconds val_loss val_loss_ci95 train_loss "
                               "train_loss_ci95 runs\n";
    char want[1024];
    snprintf(want, sizeof want, "epoch \"gpipe (n = 1)\"%s1 70 ? 10 1 ? 1 ? 1\n2 70 ? 20 0.9 ? "
             "0.9 ? 1\n\n\nepoch \"pipedream (n = 0)\"%s\n\nepoch \"pipeoptim (n = 1)\"%s1 65 ",
             head, head, head);
    assert_has(t, want);
    snprintf(want, sizeof want, "epoch \"pipeoptim (code) (n = 0)\"%s\n\nepoch \"gpipe (n = 2)\""
             "%s1 52.5 31.7655 10 1 0 1 0 2\n", head, head);
    assert_has(t, want);
    assert_has(t, "\"pipeoptim (code)\" ? ? ? ? 0 0\n\"gpipe\" ? ? 2 20 1 2\n");
    ck_assert_int_eq(data_lines(t), 8 + 2 * 5 + 1 + 8);   /* headers, epochs, target */
    free(t);
    char *svg = fx_read(path_of("convergence.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    assert_has(svg, "mlp, fashion-mnist, adam, D=2");
    assert_has(svg, "mlp, fashion-mnist, sgdm, D=4");
    assert_has(svg, "a facet per configuration");
    free(svg);
    /* a run names its configuration: one cell, as before */
    plot_ok("convergence", "png", FX_PIPEDREAM);
    t = read_dat("convergence");
    ck_assert_int_eq(data_lines(t), 3 * 3);
    free(t);
}
END_TEST

/* dir/many.db (added to): one configuration (optimizer, mlp, D = 4) run by each schedule
 * of names, two seeds each, accuracies 0.5 + 0.01 i and 0.6 + 0.01 i over its two epochs. */
static const char *many_schedules_db(const char *optimizer, const char *const *names, int n)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/many.db", dir);
    struct pb_results *r;
    struct pb_err e;
    ck_assert_msg(pb_results_open(&r, path, &e) == 0, "%s", e.msg);
    for (int i = 0; i < n; i++)
        for (uint64_t seed = 1; seed <= 2; seed++) {
            struct pb_run_info info = {
                .model = "mlp", .dataset = "fashion-mnist", .schedule = names[i],
                .optimizer = optimizer, .executor = "seq", .stages = 4, .microbatch_size = 64,
                .microbatches = 4, .epochs = 2, .seed = seed, .lr = 0.01,
            };
            int64_t id = pb_results_run_begin(r, &info, &e);
            ck_assert_msg(id > 0, "%s", e.msg);
            for (int ep = 0; ep < 2; ep++) {
                struct pb_epoch_record rec = {
                    .epoch = ep, .train_loss = 1, .val_loss = 1,
                    .val_acc = 0.5 + 0.1 * ep + 0.01 * i + 0.001 * (double)seed,
                    .samples = 1000, .wall_s = 10, .throughput = 100, .lr = 0.01,
                };
                ck_assert_msg(pb_results_epoch(r, id, &rec, &e) == 0, "%s", e.msg);
            }
            ck_assert_msg(pb_results_run_end(r, id, PB_RUN_DONE, NULL, &e) == 0, "%s", e.msg);
        }
    pb_results_close(r);
    return path;
}

/* Eight schedules of one configuration (three synchronous, five asynchronous) are split
 * into panels by family, at most four a panel: the synchronous three, then the
 * asynchronous in two panels of three and two; their blocks in the panels' order, and
 * the figure titles each panel. Five schedules share one panel, as before; with a second
 * configuration, each gets a row of the panels. */
START_TEST(convergence_panels_by_family)
{
    static const char *const eight[] = {"gpipe",     "1f1b",   "zb-h1", "pipedream",
                                        "pipedream-2bw", "xpipe", "pipeoptim", "pipemare"};
    const char *many = many_schedules_db("sgdm", eight, 8);
    struct pb_err e;
    ck_assert_msg(pb_plot_figure(many, "convergence", out, "svg", 0, &e) == 0, "%s", e.msg);
    char *t = read_dat("convergence");
    assert_has(t, "# panel 1, synchronous: blocks 0 to 2\n"
                  "# panel 2, asynchronous (1 of 2): blocks 3 to 5\n"
                  "# panel 3, asynchronous (2 of 2): blocks 6 to 7\n");
    const char *zb = strstr(t, "epoch \"zb-h1 (n = 2)\""), *pd = strstr(t, "epoch \"pipedream (n = 2)\"");
    const char *pm = strstr(t, "epoch \"pipemare (n = 2)\"");
    ck_assert_msg(zb && pd && pm && zb < pd && pd < pm, "%s", t);
    ck_assert_int_eq(data_lines(t), 8 * 3);
    free(t);
    char *svg = fx_read(path_of("convergence.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    assert_has(svg, "(mlp, fashion-mnist, sgdm, D=4, split by family)");
    assert_has(svg, ">synchronous: accuracy per epoch<");
    assert_has(svg, ">asynchronous (1 of 2): accuracy per training second<");
    assert_has(svg, ">asynchronous (2 of 2): accuracy per epoch<");
    free(svg);
    /* five: one panel */
    ck_assert_int_eq(unlink(many), 0);
    many = many_schedules_db("sgdm", eight, 5);
    ck_assert_msg(pb_plot_figure(many, "convergence", out, "svg", 0, &e) == 0, "%s", e.msg);
    t = read_dat("convergence");
    ck_assert_msg(!strstr(t, "# panel"), "%s", t);
    free(t);
    svg = fx_read(path_of("convergence.svg"), NULL);
    ck_assert_msg(!strstr(svg, "split by family") && strstr(svg, "accuracy per epoch"), "%s",
                  svg);
    free(svg);
    /* two configurations of six schedules in all: a row of panels per configuration, a
     * panel none of its schedules ran marked empty */
    many = many_schedules_db("adam", eight + 5, 1);
    ck_assert_msg(pb_plot_figure(many, "convergence", out, "svg", 0, &e) == 0, "%s", e.msg);
    svg = fx_read(path_of("convergence.svg"), NULL);
    assert_has(svg, "(a facet per configuration, split by family)");
    assert_has(svg, ">mlp, fashion-mnist, adam, D=4: asynchronous<");
    assert_has(svg, ">mlp, fashion-mnist, sgdm, D=4: synchronous<");
    assert_has(svg, ">no run of these schedules<");
    free(svg);
}
END_TEST

/* A row per D with each schedule's mean and std: gpipe's steady-epoch throughputs 1200
 * and 1100 (mean 1150, std 70.7107); bubble 0.25 (k + 1) / 4 averages 15.625 %. */
START_TEST(throughput_dat)
{
    plot_ok("throughput", "svg", FX_PIPEDREAM);
    char *t = read_dat("throughput");
    ck_assert_int_eq(data_lines(t), 3 * 2);   /* and block 2: no simulated epochs, '?' */
    static const char head[] = "D \"gpipe\" std \"pipedream\" std \"pipeoptim (code)\" std\n";
    char want[512];
    snprintf(want, sizeof want, "%s\"D=4\" 1150 70.7107 1500 0 1300 0\n\n\n", head);
    assert_has(t, want);
    snprintf(want, sizeof want, "%s\"D=4\" 15.625 0 15.625 0 15.625 0\n", head);
    assert_has(t, want);
    free(t);
    char *svg = fx_read(path_of("throughput.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    assert_has(svg, "bubble (%)");
    assert_has(svg, "not one device per stage");   /* the fixture's runs are seq's */
    free(svg);
}
END_TEST

static void sql_exec(const char *sql)
{
    sqlite3 *d;
    ck_assert_int_eq(sqlite3_open(db, &d), SQLITE_OK);
    char *msg = NULL;
    ck_assert_msg(sqlite3_exec(d, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", sql, msg);
    sqlite3_close(d);
}

/* The fixture's runs are seq's (†: the stages shared cores): each schedule's simulated
 * throughput (results/results_sim.h: the run's epoch simulated with the medians of its
 * op events; pipedream's run alone has events, so the others have none) stands beside
 * the measured bar as block 2, labelled, the number `simulate --run` prints. Runs on
 * cores of their own (threads, not oversubscribed) draw no simulated bars. */
START_TEST(throughput_sim_beside)
{
    struct pb_results *h;
    struct pb_err e;
    struct pb_run_sim run;
    ck_assert_int_eq(pb_results_open_existing(&h, db, &e), 0);
    ck_assert_msg(pb_results_run_sim(h, FX_PIPEDREAM, &run, &e) == 0, "%s", e.msg);
    double sim = run.samples_per_s;
    pb_results_close(h);
    plot_ok("throughput", "svg", FX_PIPEDREAM);
    char *t = read_dat("throughput");
    ck_assert_int_eq(data_lines(t), 3 * 2);
    char *svg;
    static const char head[] = "D \"gpipe\" std \"pipedream\" std \"pipeoptim (code)\" std\n";
    char want[512];
    snprintf(want, sizeof want, "%s\"D=4\" 15.625 0 15.625 0 15.625 0\n\n\n%s\"D=4\" ? ? %.6g 0 "
             "? ?\n", head, head, sim);
    assert_has(t, want);
    free(t);
    svg = fx_read(path_of("throughput.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    assert_has(svg, "simulated, one device per stage");
    assert_has(svg, "measured");
    ck_assert_msg(!strstr(svg, "op times measured on shared cores"), "no run was contended");
    free(svg);
    sql_exec("UPDATE runs SET cores = 2, load_avg = 3");   /* measured under a load */
    plot_ok("throughput", "svg", FX_PIPEDREAM);
    svg = fx_read(path_of("throughput.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    assert_has(svg, "simulated with op times measured on shared cores");
    free(svg);
    sql_exec("UPDATE runs SET cores = NULL, load_avg = NULL");
    sql_exec("UPDATE runs SET executor = 'threads', oversubscribed = 0");
    plot_ok("throughput", "svg", FX_PIPEDREAM);
    t = read_dat("throughput");
    ck_assert_int_eq(data_lines(t), 2 * 2);
    free(t);
    svg = fx_read(path_of("throughput.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    ck_assert_msg(!strstr(svg, "simulated") && !strstr(svg, "not one device per stage"),
                  "a throughput figure of runs on their own cores speaks of sharing");
    free(svg);
}
END_TEST

/* A bar per stage and schedule: x = stage * 4 + schedule; 1, 1, 2 MiB, weight copies 1 MiB
 * for pipedream only, acts 1 MiB at peak; gpipe averages its 2 runs. */
START_TEST(memory_dat)
{
    plot_ok("memory", "svg", FX_PIPEDREAM);
    char *t = read_dat("memory");
    ck_assert_int_eq(data_lines(t), 1 + 3 * FX_STAGES + 1 + FX_STAGES);
    /* each bar's total and its weights-only total (params + weight copies) */
    assert_has(t, "\n0 0 0 \"gpipe\" 1 1 2 0 1 0.25 0.25 0 0 2 5.5 1\n");
    assert_has(t, "\n1 0 1 \"pipedream\" 1 1 2 1 1 0.25 0.25 0 0 1 6.5 2\n");
    assert_has(t, "\n14 3 2 \"pipeoptim (code)\" 1 1 2 0 1 0.25 0.25 0 0 1 5.5 1\n");
    assert_has(t, "\n\nx label\n1 \"stage 0\"\n5 \"stage 1\"\n9 \"stage 2\"\n13 \"stage 3\"\n");
    free(t);
    char *svg = fx_read(path_of("memory.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    assert_has(svg, "weight copies");
    assert_has(svg, "weights only: params + weight copies");
    assert_has(svg, ">6.50<");   /* pipedream's total, and its weights' */
    assert_has(svg, ">2.00<");
    assert_has(svg, "pipeoptim (code)");
    assert_has(svg, "stage 3");
    free(svg);
}
END_TEST

/* The epoch has 3 micro-batches, fewer than a default window (2D): all FX_NEVENTS ops per
 * device, then a label per device with its bubble in the epoch (stage 0: 6.25 %, stage
 * 3: 25 %). */
START_TEST(timeline_dat)
{
    plot_ok("timeline", "png", FX_PIPEDREAM);
    char *t = read_dat("timeline");
    ck_assert_int_eq(data_lines(t), FX_STAGES * FX_NEVENTS + FX_STAGES);
    assert_has(t, "\n0 0.000000 1.000000 0 0 0 -1 0\n");    /* F0 on stage 0 */
    assert_has(t, "\n3 44.000000 46.000000 1 0 0 -1 3\n");  /* B0 on stage 3 */
    assert_has(t, "\n3 46.000000 46.500000 2 -1 0 -1 3\n"); /* its U */
    assert_has(t, "\n0 \"stage 0 (epoch bubble 6%)\"\n");
    assert_has(t, "\n3 \"stage 3 (epoch bubble 25%)\"\n");
    free(t);
}
END_TEST

/* --window 1:2: from F1 on stage 0 (10 ms) to B1 and its U there (62.5 ms); times from
 * the window's start; F0 (0-7 ms on every device) is left out; --epoch 1 is the first. */
START_TEST(timeline_window)
{
    struct pb_err e;
    struct pb_plot_opts o = {.window_lo = 1, .window_hi = 2, .epoch = 1};
    ck_assert_msg(pb_plot_figure_cb(db, "timeline", out, "svg", FX_PIPEDREAM, NULL, &o, NULL,
                                    NULL, &e) == 0, "%s", e.msg);
    char *t = read_dat("timeline");
    assert_has(t, "# panel 1: run 3, epoch 1, micro-batches 1 to 1:");
    assert_has(t, "\n0 0.000000 1.000000 0 1 0 -1 0\n");     /* F1 on stage 0 */
    assert_has(t, "\n0 50.000000 52.000000 1 1 0 -1 0\n");   /* B1 */
    assert_has(t, "\n0 52.000000 52.500000 2 -1 0 -1 0\n");  /* its U: the window's end */
    assert_has(t, "\n3 34.000000 36.000000 1 0 0 -1 3\n");   /* B0 on stage 3 at 44 ms */
    ck_assert_msg(!strstr(t, "\n0 -") && !strstr(t, " 0 0 0 -1 ") && !strstr(t, "\n1 0.000000 1"),
                  "%s", t);
    free(t);
    char *svg = fx_read(path_of("timeline.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    assert_has(svg, "run 3: pipedream, D=4, mlp; measured, seq executor; epoch 1, "
                    "micro-batches 1 to 1");
    free(svg);
    o = (struct pb_plot_opts){.window_lo = 2, .window_hi = 9};
    ck_assert_int_eq(pb_plot_figure_cb(db, "timeline", out, "png", FX_PIPEDREAM, NULL, &o, NULL,
                                       NULL, &e), -1);
    assert_has(e.msg, "has events for micro-batches 0 to 2 only");
    o = (struct pb_plot_opts){.epoch = 5};
    ck_assert_int_eq(pb_plot_figure_cb(db, "timeline", out, "png", FX_PIPEDREAM, NULL, &o, NULL,
                                       NULL, &e), -1);
    assert_has(e.msg, "has no events in epoch 5; its events cover epochs 1 to 2");
}
END_TEST

/* --runs stacks a panel per run; a simulation (`simulate --record`) is one, said to be
 * simulated; runs without events are left out. A simulation of given costs (simulate
 * --cost) is drawn in those costs' units where every panel is one, in ms beside measured
 * runs. */
START_TEST(timeline_stack_sim)
{
    char args[1024], text[4096];
    /* a selection reads the runs' recorded configurations, which the fixture leaves out */
    sqlite3 *d;
    ck_assert_int_eq(sqlite3_open(db, &d), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(d, "UPDATE runs SET config = '{}'", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(d);
    snprintf(args, sizeof args, "simulate --schedule gpipe --stages 4 --length 8 --cost 1,2,0.5 "
             "--record --db '%s'", db);
    ck_assert_int_eq(fx_cli(NULL, args, text, sizeof text, NULL, 0), 0);
    assert_has(text, "recorded as run 8 ");
    snprintf(args, sizeof args, "plot --db '%s' --figure timeline --format svg --out '%s' "
             "--runs 1,3,8", db, out);
    ck_assert_int_eq(fx_cli(NULL, args, text, sizeof text, NULL, 0), 0);
    char *t = read_dat("timeline");
    assert_has(t, "# panel 1: run 3, epoch 2,");
    assert_has(t, "# panel 2: run 8, epoch 1, micro-batches 0 to 7:");
    ck_assert_msg(!strstr(t, "panel 3"), "%s", t);
    free(t);
    char *svg = fx_read(path_of("timeline.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    assert_has(svg, "run 8: gpipe, D=4; SIMULATED: ideal, one device per stage, given op costs");
    assert_has(svg, "Op timelines, one panel per run");
    assert_has(svg, "(ms)");   /* beside a measured run: the given costs taken as seconds */
    free(svg);
    /* the given costs alone: drawn in their own units (F = 1: the first op from 0 to 1) */
    snprintf(args, sizeof args, "plot --db '%s' --figure timeline --format svg --out '%s' "
             "--runs 8", db, out);
    ck_assert_int_eq(fx_cli(NULL, args, text, sizeof text, NULL, 0), 0);
    t = read_dat("timeline");
    assert_has(t, "(cost units since the window began)");
    assert_has(t, "\n0 0.000000 1.000000 0 0 0 -1 0\n");
    free(t);
    svg = fx_read(path_of("timeline.svg"), NULL);
    ck_assert_ptr_nonnull(svg);
    assert_has(svg, "cost units, as given to simulate --cost");
    free(svg);
}
END_TEST

/* Blocks F lag, B lag, prediction error; a row per stage, a column per schedule named
 * with its runs (gpipe's two seeds, one of the others). */
START_TEST(staleness_dat)
{
    plot_ok("staleness", "png", FX_PIPEDREAM);
    char *t = read_dat("staleness");
    ck_assert_int_eq(data_lines(t), 4 * (1 + FX_STAGES));
    assert_has(t, "stage \"gpipe (n = 2)\" \"pipedream (n = 1)\" \"pipeoptim (code) (n = 1)\"\n"
                  "\"stage 0\" 0 3 0\n"
                  "\"stage 1\" 0 2 0\n");
    assert_has(t, "\"stage 0\" ? ? 0.001\n\"stage 1\" ? ? 0.001\n\"stage 2\" ? ? 0.001\n"
                  "\"stage 3\" ? ? ?\n");
    /* pipeoptim predicts on stages 0-2, not on the last (s = 0 there): "n/a (s = 0)" */
    assert_has(t, "\"stage 0\" 0 0 0\n\"stage 1\" 0 0 0\n\"stage 2\" 0 0 0\n"
                  "\"stage 3\" 0 0 1\n");
    free(t);
    char *svg = NULL;
    plot_ok("staleness", "svg", FX_PIPEDREAM);
    size_t len;
    svg = fx_read(path_of("staleness.svg"), &len);
    ck_assert_ptr_nonnull(svg);
    ck_assert_msg(strstr(svg, "n/a (s = 0)"), "no n/a mark in the figure");
    assert_has(svg, "gpipe (n = 2)");
    free(svg);
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
    snprintf(args, sizeof args, "plot --db '%s' --figure convergence --out '%s' --target 60", db,
             out);
    expect_cli(NULL, args, "fraction in (0, 1]");
    snprintf(args, sizeof args, "plot --db '%s' --figure timeline --out '%s' --window 5", db, out);
    expect_cli(NULL, args, "--window takes A:B");
    snprintf(args, sizeof args, "plot --db '%s' --figure timeline --out '%s' --epoch 0", db, out);
    expect_cli(NULL, args, "--epoch expects an epoch number");
    snprintf(args, sizeof args, "plot --help");
    char help[8192];
    ck_assert_int_eq(fx_cli(NULL, args, help, sizeof help, NULL, 0), 0);
    for (int f = 0; pb_plot_figure_names[f]; f++)
        assert_has(help, pb_plot_figure_names[f]);
    static const char *const opts[] = {"--target ACC", "--window A:B", "--epoch N", "--runs",
                                       "--experiment", "--where", "--run ID", "--format"};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        assert_has(help, opts[i]);
    char stdout_text[4096], err[4096];
    snprintf(args, sizeof args, "plot --db '%s' --figure memory --out '%s' --run 3", db, out);
    ck_assert_int_eq(fx_cli(NULL, args, stdout_text, sizeof stdout_text, err, sizeof err), 0);
    assert_has(stdout_text, "/figs/memory.png\n");
    ck_assert_msg(!strstr(err, "configurations"), "%s", err);
    /* several configurations and no --run: it says which one it drew */
    snprintf(args, sizeof args, "plot --db '%s' --figure memory --out '%s'", db, out);
    ck_assert_int_eq(fx_cli(NULL, args, stdout_text, sizeof stdout_text, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "configurations; these figures show run 7's "
                              "(adam, mlp on fashion-mnist, D = 2)") &&
                  strstr(err, "--run ID"), "%s", err);
    /* convergence draws them all, a facet each: nothing to say */
    snprintf(args, sizeof args, "plot --db '%s' --figure convergence --out '%s'", db, out);
    ck_assert_int_eq(fx_cli(NULL, args, stdout_text, sizeof stdout_text, err, sizeof err), 0);
    ck_assert_msg(!strstr(err, "configurations"), "%s", err);
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
    tcase_add_test(tc, style_table);
    tcase_add_test(tc, scripts_use_the_table);
    tcase_add_test(tc, convergence_dat);
    tcase_add_test(tc, convergence_target);
    tcase_add_test(tc, convergence_facets);
    tcase_add_test(tc, convergence_panels_by_family);
    tcase_add_test(tc, throughput_dat);
    tcase_add_test(tc, memory_dat);
    tcase_add_test(tc, timeline_dat);
    tcase_add_test(tc, timeline_window);
    tcase_add_test(tc, timeline_stack_sim);
    tcase_add_test(tc, staleness_dat);
    tcase_add_test(tc, throughput_sim_beside);
    tcase_add_test(tc, all_skips_missing_data);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, trace_json);
    tcase_add_test(tc, trace_cli);
    tcase_set_tags(tc, "fast");
    suite_add_tcase(s, tc);
    TCase *gnuplot = tcase_create("gnuplot");   /* draws every figure: seconds */
    tcase_add_checked_fixture(gnuplot, setup, teardown);
    tcase_set_timeout(gnuplot, 600);
    tcase_add_test(gnuplot, figures_png_svg);
    tcase_add_test(gnuplot, installed_scripts);
    suite_add_tcase(s, gnuplot);
    return s;
}
