/* tests/workloads/test_detok.c — the BLEU text steps against PyPI's sacremoses 0.2.0 and sacrebleu
 * 2.6.0 (tests/fixtures/fixtures_detok.py): the Moses detokeniser's output for English and
 * German equals MosesDetokenizer's line for line (Moses-tokenised sentences with quotes,
 * numbers, URLs, abbreviations, currency, hyphens, apostrophes, ellipses, and hand-made
 * lines for entities, @-@ runs, quote runs, CJK and Unicode spaces); the intl tokeniser
 * and the lowercasing equal sacreBLEU's and str.lower()'s; the MLPerf GNMT reference's
 * whole score (BPE merged, detokenised, lowercased, intl) equals sacreBLEU's on the
 * detokenised text, under every detok/case/tokenise combination; and `pipebench bleu`'s
 * --detok, --tokenize, --lowercase (their bad values: exit 2 with a message). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/bleu_fixtures.h"
#include "tests/support/cli_util.h"
#include "tests/support/test_util.h"
#include "workloads/evaluation/bleu/bleu.h"
#include "workloads/evaluation/bleu/detok.h"
#include "workloads/evaluation/bleu/uchar.h"

/* Every line of `in` through f equals the same line of `out`. */
static void check_lines(const char *in_name, const char *out_name, int least,
                        char *(*f)(const char *, int), int arg)
{
    char *ti, *to;
    int ni, no;
    char **in = read_lines(in_name, &ni, &ti), **out = read_lines(out_name, &no, &to);
    ck_assert_int_eq(ni, no);
    ck_assert_int_ge(ni, least);
    for (int i = 0; i < ni; i++) {
        char *t = f(in[i], arg);
        ck_assert_msg(!strcmp(t, out[i]), "%s line %d '%s': got '%s', want '%s'", out_name,
                      i + 1, in[i], t, out[i]);
        free(t);
    }
    free(in);
    free(out);
    free(ti);
    free(to);
}

static char *detok_line(const char *s, int lang)
{
    return pb_detok(s, (enum pb_detok_lang)lang);
}

static char *intl_line(const char *s, int unused)
{
    (void)unused;
    return pb_bleu_tokenize_intl(s);
}

static char *lower_line(const char *s, int unused)
{
    (void)unused;
    return pb_uchar_lower(s);
}

START_TEST(detok_matches_sacremoses)
{
    check_lines("detok.in", "detok.en", 250, detok_line, PB_DETOK_EN);
    check_lines("detok.in", "detok.de", 250, detok_line, PB_DETOK_DE);
    char *same = pb_detok("a @-@ b &amp;", PB_DETOK_NONE);
    ck_assert_str_eq(same, "a @-@ b &amp;");
    free(same);
}
END_TEST

START_TEST(intl_and_lower_match_sacrebleu)
{
    check_lines("tokintl.in", "tokintl.out", 100, intl_line, 0);
    check_lines("lower.in", "lower.out", 90, lower_line, 0);
    char *bad = pb_uchar_lower("A\xff" "B");
    ck_assert_str_eq(bad, "a\xef\xbf\xbd" "b");
    free(bad);
}
END_TEST

struct expected {
    char name[32], detok[8], tok[8];
    int lc;
    double bleu, p[4], bp, ratio;
    long hyp_len, ref_len, lines;
};

static int read_expected(struct expected *x, int cap)
{
    FILE *f = fopen(fixture_path("expected_opts.txt"), "r");
    ck_assert(f != NULL);
    int n = 0;
    while (n < cap && fscanf(f, "%31s %7s %d %7s %lf %lf %lf %lf %lf %lf %lf %ld %ld %ld",
                             x[n].name, x[n].detok, &x[n].lc, x[n].tok, &x[n].bleu, &x[n].p[0],
                             &x[n].p[1], &x[n].p[2], &x[n].p[3], &x[n].bp, &x[n].ratio,
                             &x[n].hyp_len, &x[n].ref_len, &x[n].lines) == 14)
        n++;
    fclose(f);
    return n;
}

static void opts_of(const struct expected *x, struct pb_bleu_opts *o)
{
    struct pb_err e;
    memset(o, 0, sizeof *o);
    o->merge_bpe = true;
    o->lowercase = x->lc;
    ck_assert(pb_detok_lang_parse(x->detok, &o->detok, &e) == 0);
    ck_assert(pb_bleu_tok_parse(x->tok, &o->tok, &e) == 0);
}

START_TEST(reference_score_matches_sacrebleu)
{
    struct expected x[32];
    int n = read_expected(x, 32);
    ck_assert_int_eq(n, 16);
    for (int i = 0; i < n; i++) {
        char hyp[64], ref[64];
        snprintf(hyp, sizeof hyp, "%.31s.hyp", x[i].name);
        snprintf(ref, sizeof ref, "%.31s.ref", x[i].name);
        struct pb_bleu_opts o;
        opts_of(&x[i], &o);
        struct pb_bleu b;
        struct pb_err e;
        ck_assert_msg(pb_bleu_score_files_opts(fixture_path(hyp), fixture_path(ref), &o, &b, &e)
                      == 0, "%s", e.msg);
        ck_assert_int_eq(b.segments, x[i].lines);
        struct pb_bleu_score s;
        pb_bleu_score(&b, &s);
        ck_assert_msg(fabs(s.bleu - x[i].bleu) < 1e-9 && s.hyp_len == x[i].hyp_len &&
                      s.ref_len == x[i].ref_len,
                      "%s detok %s lc %d %s: BLEU %.12f (%ld/%ld), sacreBLEU %.12f (%ld/%ld)",
                      x[i].name, x[i].detok, x[i].lc, x[i].tok, s.bleu, s.hyp_len, s.ref_len,
                      x[i].bleu, x[i].hyp_len, x[i].ref_len);
        for (int k = 0; k < 4; k++)
            ck_assert(fabs(s.precision[k] - x[i].p[k]) < 1e-9);
        ck_assert(fabs(s.bp - x[i].bp) < 1e-12 && fabs(s.ratio - x[i].ratio) < 1e-12);
    }
    /* the settings matter: the reference's score differs from the defaults' */
    struct pb_bleu_opts mlperf, plain = {.merge_bpe = true};
    pb_bleu_opts_mlperf(&mlperf);
    ck_assert(mlperf.merge_bpe && mlperf.detok == PB_DETOK_EN && mlperf.lowercase &&
              mlperf.tok == PB_BLEU_TOK_INTL);
    struct pb_bleu a, b;
    struct pb_err e;
    ck_assert(pb_bleu_score_files_opts(fixture_path("mlperf_de.hyp"),
                                       fixture_path("mlperf_de.ref"), &mlperf, &a, &e) == 0);
    ck_assert(pb_bleu_score_files_opts(fixture_path("mlperf_de.hyp"),
                                       fixture_path("mlperf_de.ref"), &plain, &b, &e) == 0);
    ck_assert(memcmp(&a, &b, sizeof a));
}
END_TEST

START_TEST(cli_options)
{
    char dir[64], out[4096];
    cli_scratch(dir, sizeof dir, "detok");
    struct expected x[32];
    int n = read_expected(x, 32);
    for (int i = 0; i < n; i++) {
        char want[64], sig[128], hyp[64], ref[64];
        snprintf(hyp, sizeof hyp, "%.31s.hyp", x[i].name);
        snprintf(ref, sizeof ref, "%.31s.ref", x[i].name);
        ck_assert_int_eq(cli_run(dir, out, sizeof out,
                                 "bleu --merge-bpe --detok %s --tokenize %s %s --hyp '%s' "
                                 "--ref '%s'", x[i].detok, x[i].tok,
                                 x[i].lc ? "--lowercase" : "", fixture_path(hyp),
                                 fixture_path(ref)), 0);
        snprintf(want, sizeof want, "= %.2f ", x[i].bleu);
        snprintf(sig, sizeof sig, "BLEU|nrefs:1|case:%s|eff:no|tok:%s|smooth:exp|bpe:merged|"
                 "detok:%s = ", x[i].lc ? "lc" : "mixed", x[i].tok, x[i].detok);
        ck_assert_msg(strstr(out, sig) && strstr(out, want), "got '%s', want '%s' '%s'", out,
                      sig, want);
    }
    cli_write(dir, "a.txt", "a b\n");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --hyp a.txt --ref a.txt --detok fr"), 2);
    ck_assert_msg(strstr(out, "--detok 'fr'") && strstr(out, "'en'") && strstr(out, "'de'"),
                  "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out,
                             "bleu --hyp a.txt --ref a.txt --tokenize zh"), 2);
    ck_assert_msg(strstr(out, "--tokenize 'zh'") && strstr(out, "'intl'"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --hyp a.txt --ref a.txt --tokenize"),
                     2);
    ck_assert_msg(strstr(out, "missing value"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("detok");
    TCase *t = tcase_create("detok");
    tcase_add_test(t, detok_matches_sacremoses);
    tcase_add_test(t, intl_and_lower_match_sacrebleu);
    tcase_add_test(t, reference_score_matches_sacrebleu);
    tcase_add_test(t, cli_options);
    suite_add_tcase(s, t);
    return s;
}
