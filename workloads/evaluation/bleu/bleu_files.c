/* workloads/evaluation/bleu/bleu_files.c — text files read as lines (no NUL bytes, valid UTF-8),
 * the BLEU of two line-aligned ones (the same line count; under the text options of
 * bleu.h), and sacreBLEU's report line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/in_file.h"
#include "workloads/evaluation/bleu/bleu.h"

int pb_bleu_read_lines(const char *path, const char *role, struct pb_bleu_lines *l,
                       struct pb_err *e)
{
    memset(l, 0, sizeof *l);
    struct pb_err why;
    FILE *f = pb_in_file_open(path, PB_TEXT_MAX_BYTES, &why);
    if (!f && !errno)
        return pb_err_set(e, "bleu: the %s file %s", role, why.msg);
    if (!f)
        return pb_err_set(e, "bleu: cannot open the %s file %s: %s", role, path, strerror(errno));
    size_t cap = 1 << 16, n = 0, got;
    char *t = pb_xmalloc(cap);
    while ((got = fread(t + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *u = realloc(t, cap *= 2);
            PB_CHECK(u != NULL);
            t = u;
        }
    }
    bool bad = ferror(f);
    fclose(f);
    t[n] = 0;
    if (bad) {
        free(t);
        return pb_err_set(e, "bleu: cannot read the %s file %s", role, path);
    }
    long count = 0;
    for (size_t i = 0; i < n; i++)
        count += t[i] == '\n';
    count += n && t[n - 1] != '\n';
    l->text = t;
    l->line = pb_xmalloc((size_t)(count + 1) * sizeof *l->line);
    for (size_t i = 0, start = 0; i < n; i++) {
        if (t[i] == 0) {
            free(l->line);
            free(t);
            return pb_err_set(e, "bleu: the %s file %s holds a NUL byte on line %ld: it must be "
                                 "text, one segment a line", role, path, l->n + 1);
        }
        if (t[i] == '\n' || i + 1 == n) {
            size_t end = t[i] == '\n' ? i : n;
            if (!pb_bleu_valid_utf8(t + start, end - start)) {
                free(l->line);
                free(t);
                return pb_err_set(e, "bleu: line %ld of the %s file %s is not valid UTF-8; "
                                     "convert the file to UTF-8 (e.g. with iconv)",
                                  l->n + 1, role, path);
            }
            t[end] = 0;
            l->line[l->n++] = t + start;
            start = i + 1;
        }
    }
    if (l->n == 0) {
        free(l->line);
        free(t);
        return pb_err_set(e, "bleu: the %s file %s is empty; it needs one segment a line",
                          role, path);
    }
    return 0;
}

void pb_bleu_lines_finish(struct pb_bleu_lines *l)
{
    free(l->text);
    free(l->line);
    memset(l, 0, sizeof *l);
}

int pb_bleu_score_files(const char *hyp_path, const char *ref_path, bool merge_bpe,
                        struct pb_bleu *b, struct pb_err *e)
{
    struct pb_bleu_opts o = {.merge_bpe = merge_bpe};
    return pb_bleu_score_files_opts(hyp_path, ref_path, &o, b, e);
}

int pb_bleu_score_files_opts(const char *hyp_path, const char *ref_path,
                             const struct pb_bleu_opts *o, struct pb_bleu *b, struct pb_err *e)
{
    memset(b, 0, sizeof *b);
    struct pb_bleu_lines h, r;
    if (pb_bleu_read_lines(hyp_path, "hypothesis", &h, e))
        return -1;
    if (pb_bleu_read_lines(ref_path, "reference", &r, e)) {
        pb_bleu_lines_finish(&h);
        return -1;
    }
    if (h.n != r.n) {
        pb_err_set(e, "bleu: the hypothesis file %s has %ld lines but the reference file %s "
                      "has %ld; they must be line-aligned, one segment a line",
                   hyp_path, h.n, ref_path, r.n);
        pb_bleu_lines_finish(&h);
        pb_bleu_lines_finish(&r);
        return -1;
    }
    for (long i = 0; i < h.n; i++)
        pb_bleu_add_opts(b, h.line[i], r.line[i], o);
    pb_bleu_lines_finish(&h);
    pb_bleu_lines_finish(&r);
    return 0;
}

void pb_bleu_format(const struct pb_bleu_score *s, bool merged, char *buf, size_t cap)
{
    struct pb_bleu_opts o = {.merge_bpe = merged};
    pb_bleu_format_opts(s, &o, buf, cap);
}

void pb_bleu_format_opts(const struct pb_bleu_score *s, const struct pb_bleu_opts *o, char *buf,
                         size_t cap)
{
    char detok[16] = "";
    if (o->detok != PB_DETOK_NONE)
        snprintf(detok, sizeof detok, "|detok:%s", pb_detok_lang_name(o->detok));
    snprintf(buf, cap,
             "BLEU|nrefs:1|case:%s|eff:no|tok:%s|smooth:exp|bpe:%s%s = %.2f "
             "%.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %ld ref_len = %ld)",
             o->lowercase ? "lc" : "mixed", pb_bleu_tok_name(o->tok),
             o->merge_bpe ? "merged" : "none", detok, s->bleu, s->precision[0], s->precision[1],
             s->precision[2], s->precision[3], s->bp, s->ratio, s->hyp_len, s->ref_len);
}
