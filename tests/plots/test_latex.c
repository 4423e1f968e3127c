/* tests/plots/test_latex.c — every LaTeX table `pipebench report --format latex` writes compiles
 * with pdflatex (Debian's texlive-latex-base) inside a two-column article, fits its
 * column or the page (no overfull box), carries placement and a \label, and keeps the
 * cells' notes (n = seeds ...) out of the number cells; a table of 16 schedule columns
 * is set across the page and shrunk to fit it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "plots/report.h"
#include "plots/report_grid.h"
#include "tests/support/report_fixture.h"
#include "tests/support/test_util.h"

static const char *dir, *db;

static void setup(void)
{
    dir = fx_mkdtemp("latex");
    db = fx_build_db(dir);
}

static void teardown(void)
{
    fx_rmdir(dir);
}

/* The whole file at path, NUL-terminated; free() it. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    ck_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* Compiles table (a LaTeX float labelled label) inside a two-column article with
 * pdflatex: fails the test on an error or an overfull box, or when the label is not
 * defined (the .aux file names it). */
static void compile(const char *name, const char *table, const char *label)
{
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/%s.tex", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fprintf(f, "\\documentclass[twocolumn]{article}\n\\usepackage{graphicx}\n"
               "\\begin{document}\nThe table.\n%s\n\\end{document}\n", table);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd '%s' && pdflatex -interaction=nonstopmode -halt-on-error "
                              "'%s.tex' </dev/null >/dev/null 2>&1", dir, name);
    int st = system(cmd);
    snprintf(path, sizeof path, "%s/%s.log", dir, name);
    char *log = slurp(path);
    const char *bad = strstr(log, "\n!");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: pdflatex failed (is "
                  "texlive-latex-base installed?): %.600s\n%s", name, bad ? bad : log, table);
    ck_assert_msg(!strstr(log, "Overfull \\hbox"), "%s does not fit: %s\n%s", name,
                  strstr(log, "Overfull \\hbox"), table);
    free(log);
    snprintf(path, sizeof path, "%s/%s.aux", dir, name);
    char *aux = slurp(path), want[128];
    snprintf(want, sizeof want, "\\newlabel{%s}", label);
    ck_assert_msg(strstr(aux, want), "%s: no %s in %s", name, want, aux);
    free(aux);
}

/* The body of the tabular: from \toprule to \bottomrule. */
static void check_cells_hold_no_notes(const char *name, const char *t)
{
    const char *a = strstr(t, "\\toprule\n"), *b = a ? strstr(a, "\\bottomrule") : NULL;
    ck_assert_msg(a && b && a < b, "%s", t);
    for (const char *p = a; p < b; p++)
        ck_assert_msg(strncmp(p, "n = ", 4) && strncmp(p, "(n", 2), "%s: a note in a cell: %s",
                      name, t);
}

START_TEST(every_table_compiles)
{
    for (int tb = 0; tb < PB_REPORT_NTABLES; tb++)
        for (int target = 0; target < 2; target++) {
            if (target && tb != PB_REPORT_ACCURACY)
                continue;
            char *buf = NULL;
            size_t len = 0;
            FILE *out = open_memstream(&buf, &len);
            struct pb_report_opts o = {.table = (enum pb_report_table)tb,
                                       .format = PB_FORMAT_LATEX, .target = target ? 0.5 : 0};
            struct pb_err e;
            ck_assert_msg(pb_report_write(db, &o, out, &e) == 0, "%s", e.msg);
            fclose(out);
            char name[64], label[80], tag[64];
            snprintf(name, sizeof name, "%s%s", pb_report_table_names[tb], target ? "-target" : "");
            snprintf(tag, sizeof tag, "tab:pb-%s", pb_report_table_names[tb]);
            snprintf(label, sizeof label, "\\label{%s}", tag);
            ck_assert_msg(strstr(buf, label) && strstr(buf, "}[tbp]\n"), "%s", buf);
            check_cells_hold_no_notes(name, buf);
            compile(name, buf, tag);
            free(buf);
        }
}
END_TEST

/* 4 label columns and 16 schedule columns of "62.00 ± 2.83": across the page, shrunk to
 * it, and compiled without an overfull box. */
START_TEST(wide_table_fits)
{
    struct pb_grid g;
    pb_grid_init(&g, 20, 4, "Maximum validation accuracy (%): mean \xc2\xb1 std.");
    g.label = "tab:x";
    int h = pb_grid_add_row(&g);
    static const char *const heads[] = {"optimizer", "model", "dataset", "D"};
    for (int c = 0; c < 20; c++) {
        char head[32];
        snprintf(head, sizeof head, "schedule-%d:variant", c - 3);
        pb_grid_set(&g, h, c, c < 4 ? heads[c] : head, false);
    }
    for (int r = 0; r < 3; r++) {
        int row = pb_grid_add_row(&g);
        for (int c = 0; c < 20; c++) {
            pb_grid_set(&g, row, c, c < 4 ? "fashion-mnist" : "62.00 \xc2\xb1 2.83 \xe2\x80\xa0",
                        c == 7);
            if (c >= 4)
                pb_grid_note(&g, row, c, c % 2 ? " (n = 3)" : " (n = 2; epochs 1.0\xe2\x80\x93"
                                                             "2.0)");
        }
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    ck_assert_int_eq(pb_grid_write(&g, PB_FORMAT_LATEX, out), 0);
    fclose(out);
    pb_grid_finish(&g);
    ck_assert_msg(strstr(buf, "\\begin{table*}[tbp]") && strstr(buf, "\\resizebox{"), "%s", buf);
    ck_assert_msg(strstr(buf, "$^{\\mathrm{a}}$\\,n = 2; epochs 1.0--2.0") &&
                  strstr(buf, "$^{\\mathrm{b}}$\\,n = 3"), "%s", buf);
    check_cells_hold_no_notes("wide", buf);
    compile("wide", buf, "tab:x");
    free(buf);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("latex");
    TCase *tc = tcase_create("latex");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, wide_table_fits);
    tcase_set_tags(tc, "fast");
    suite_add_tcase(s, tc);
    TCase *all = tcase_create("every_table");   /* pdflatex on every table: seconds */
    tcase_add_checked_fixture(all, setup, teardown);
    tcase_set_timeout(all, 600);
    tcase_add_test(all, every_table_compiles);
    suite_add_tcase(s, all);
    return s;
}
