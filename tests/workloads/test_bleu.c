/* tests/workloads/test_bleu.c — corpus BLEU against sacreBLEU: the 13a tokenisation of the
 * committed lines equals sacreBLEU's (tok13a.in/.out), every fixture corpus scores as
 * sacreBLEU scored it (fixtures_bleu.py: score, precisions, BP, ratio, lengths), the
 * statistics add up segment by segment, the BPE merge, `pipebench bleu` printing
 * sacreBLEU's numbers, and its bad inputs (missing file, line counts that differ, empty
 * file, invalid UTF-8, missing flags: exit 2 with a message). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/bleu_fixtures.h"
#include "tests/support/cli_util.h"
#include "tests/support/test_util.h"
#include "workloads/evaluation/bleu/bleu.h"

START_TEST(tokenize_13a)
{
    char *ti, *to;
    int ni, no;
    char **in = read_lines("tok13a.in", &ni, &ti), **out = read_lines("tok13a.out", &no, &to);
    ck_assert_int_eq(ni, no);
    ck_assert_int_gt(ni, 50);
    for (int i = 0; i < ni; i++) {
        char *t = pb_bleu_tokenize_13a(in[i]);
        ck_assert_msg(!strcmp(t, out[i]), "line %d '%s': got '%s', sacreBLEU '%s'", i + 1, in[i],
                      t, out[i]);
        free(t);
    }
    free(in);
    free(out);
    free(ti);
    free(to);
}
END_TEST

struct expected {
    char name[32];
    int merge;
    double bleu, p[4], bp, ratio;
    long hyp_len, ref_len, lines;
};

static int read_expected(struct expected *x, int cap)
{
    FILE *f = fopen(fixture_path("expected.txt"), "r");
    ck_assert(f != NULL);
    int n = 0;
    while (n < cap && fscanf(f, "%31s %d %lf %lf %lf %lf %lf %lf %lf %ld %ld %ld", x[n].name,
                             &x[n].merge, &x[n].bleu, &x[n].p[0], &x[n].p[1], &x[n].p[2],
                             &x[n].p[3], &x[n].bp, &x[n].ratio, &x[n].hyp_len, &x[n].ref_len,
                             &x[n].lines) == 12)
        n++;
    fclose(f);
    return n;
}

static void check_score(const char *what, const struct pb_bleu_score *s, const struct expected *x)
{
    ck_assert_msg(fabs(s->bleu - x->bleu) < 1e-9, "%s: BLEU %.12f, sacreBLEU %.12f", what,
                  s->bleu, x->bleu);
    for (int k = 0; k < 4; k++)
        ck_assert_msg(fabs(s->precision[k] - x->p[k]) < 1e-9, "%s: p%d %.12f, sacreBLEU %.12f",
                      what, k + 1, s->precision[k], x->p[k]);
    ck_assert_msg(fabs(s->bp - x->bp) < 1e-12 && fabs(s->ratio - x->ratio) < 1e-12,
                  "%s: BP %.12f ratio %.12f, sacreBLEU %.12f %.12f", what, s->bp, s->ratio, x->bp,
                  x->ratio);
    ck_assert_msg(s->hyp_len == x->hyp_len && s->ref_len == x->ref_len,
                  "%s: lengths %ld/%ld, sacreBLEU %ld/%ld", what, s->hyp_len, s->ref_len,
                  x->hyp_len, x->ref_len);
}

START_TEST(corpora_match_sacrebleu)
{
    struct expected x[32];
    int n = read_expected(x, 32);
    ck_assert_int_ge(n, 10);
    for (int i = 0; i < n; i++) {
        char hyp[96], ref[96];
        snprintf(hyp, sizeof hyp, "%.31s.hyp", x[i].name);
        snprintf(ref, sizeof ref, "%.31s.ref", x[i].name);
        struct pb_bleu b;
        struct pb_err e;
        ck_assert_msg(pb_bleu_score_files(fixture_path(hyp), fixture_path(ref), x[i].merge, &b,
                                          &e) == 0, "%s: %s", x[i].name, e.msg);
        ck_assert_int_eq(b.segments, x[i].lines);
        struct pb_bleu_score s;
        pb_bleu_score(&b, &s);
        check_score(x[i].name, &s, &x[i]);
    }
}
END_TEST

/* Segment by segment, through pb_bleu_add, gives the file's statistics; scoring the
 * BPE corpus without the merge does not give the merged score. */
START_TEST(statistics_add_up)
{
    char *th, *tr;
    int nh, nr;
    char **h = read_lines("random.hyp", &nh, &th), **r = read_lines("random.ref", &nr, &tr);
    ck_assert_int_eq(nh, nr);
    struct pb_bleu one = {0}, all;
    for (int i = 0; i < nh; i++)
        pb_bleu_add(&one, h[i], r[i]);
    struct pb_err e;
    ck_assert(pb_bleu_score_files(fixture_path("random.hyp"), fixture_path("random.ref"), false,
                                  &all, &e) == 0);
    ck_assert(!memcmp(&one, &all, sizeof one));
    free(h);
    free(r);
    free(th);
    free(tr);
    struct pb_bleu raw, merged;
    ck_assert(pb_bleu_score_files(fixture_path("bpe.hyp"), fixture_path("bpe.ref"), false, &raw,
                                  &e) == 0);
    ck_assert(pb_bleu_score_files(fixture_path("bpe.hyp"), fixture_path("bpe.ref"), true,
                                  &merged, &e) == 0);
    ck_assert(raw.hyp_len > merged.hyp_len && raw.ref_len > merged.ref_len);
}
END_TEST

START_TEST(merge_bpe)
{
    const char *cases[][2] = {
        {"Die Stra@@ ße in Mün@@ chen", "Die Straße in München"},
        {"no joins here", "no joins here"},
        {"trailing@@", "trailing"},
        {"a@@ @@ b", "ab"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *m = pb_bleu_merge_bpe(cases[i][0]);
        ck_assert_msg(!strcmp(m, cases[i][1]), "'%s' -> '%s'", cases[i][0], m);
        free(m);
    }
}
END_TEST

/* sacreBLEU's report of case `name` (expected_text.txt) after its "BLEU". */
static void sacrebleu_text(const char *name, char *out, size_t cap)
{
    FILE *f = fopen(fixture_path("expected_text.txt"), "r");
    ck_assert(f != NULL);
    char line[512];
    out[0] = 0;
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        size_t len = tab ? (size_t)(tab - line) : 0;
        if (!tab || strlen(name) != len || strncmp(line, name, len))
            continue;
        line[strcspn(line, "\n")] = 0;
        ck_assert(!strncmp(tab + 1, "BLEU = ", 7));
        snprintf(out, cap, "%s", tab + 1 + 4);
    }
    fclose(f);
    ck_assert_msg(out[0], "no sacreBLEU text for %s", name);
}

START_TEST(cli_prints_sacrebleu_numbers)
{
    char dir[64], out[4096], want[512];
    cli_scratch(dir, sizeof dir, "bleu");
    const char *names[] = {"main", "zero34", "allempty", "shorter"};
    for (int i = 0; i < 4; i++) {
        char hyp[64], ref[64];
        snprintf(hyp, sizeof hyp, "%s.hyp", names[i]);
        snprintf(ref, sizeof ref, "%s.ref", names[i]);
        ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --hyp '%s' --ref '%s'",
                                 fixture_path(hyp), fixture_path(ref)), 0);
        sacrebleu_text(names[i], want, sizeof want);
        ck_assert_msg(strstr(out, "BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|bpe:none") &&
                      strstr(out, want), "%s: got '%s', sacreBLEU '%s'", names[i], out, want);
    }
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --merge-bpe --hyp '%s' --ref '%s'",
                             fixture_path("bpe.hyp"), fixture_path("bpe.ref")), 0);
    sacrebleu_text("bpe", want, sizeof want);
    ck_assert_msg(strstr(out, "bpe:merged") && strstr(out, want), "got '%s'", out);
    cli_cleanup(dir);
}
END_TEST

START_TEST(cli_bad_inputs)
{
    char dir[64], out[4096];
    cli_scratch(dir, sizeof dir, "bleu");
    cli_write(dir, "two.txt", "a b\nc d\n");
    cli_write(dir, "three.txt", "a b\nc d\ne\n");
    cli_write(dir, "empty.txt", "");
    cli_write(dir, "latin1.txt", "a b\nStra\xdf" "e\n");
    cli_write(dir, "nolf.txt", "a b\nc d");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --hyp missing.txt --ref two.txt"), 2);
    ck_assert_msg(strstr(out, "cannot open the hypothesis file missing.txt"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --hyp two.txt --ref missing.txt"), 2);
    ck_assert_msg(strstr(out, "cannot open the reference file missing.txt"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --hyp two.txt --ref three.txt"), 2);
    ck_assert_msg(strstr(out, "has 2 lines but the reference file three.txt has 3"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --hyp empty.txt --ref two.txt"), 2);
    ck_assert_msg(strstr(out, "empty.txt is empty"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --hyp two.txt --ref latin1.txt"), 2);
    ck_assert_msg(strstr(out, "line 2 of the reference file latin1.txt is not valid UTF-8"), "%s",
                  out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --hyp two.txt"), 2);
    ck_assert_msg(strstr(out, "needs both --hyp FILE and --ref FILE"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --hyp two.txt --ref two.txt --beam 5"), 2);
    ck_assert_msg(strstr(out, "unexpected argument '--beam'"), "%s", out);
    /* a last line without its newline is a line (2-token lines: no 3-grams, BLEU 0) */
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --hyp nolf.txt --ref two.txt"), 0);
    ck_assert_msg(strstr(out, "= 0.00 100.0/100.0/0.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 4 "),
                  "%s", out);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("bleu");
    TCase *t = tcase_create("bleu");
    tcase_add_test(t, tokenize_13a);
    tcase_add_test(t, corpora_match_sacrebleu);
    tcase_add_test(t, statistics_add_up);
    tcase_add_test(t, merge_bpe);
    tcase_add_test(t, cli_prints_sacrebleu_numbers);
    tcase_add_test(t, cli_bad_inputs);
    suite_add_tcase(s, t);
    return s;
}
