/* workloads/evaluation/bleu/tokintl.c — sacreBLEU's "intl" tokeniser (TokenizerV14International,
 * mteval-v14's international tokenisation) on UTF-8: three regular-expression passes,
 * each a left-to-right scan of non-overlapping matches as Python's re.sub makes them,
 * over code points with ICU's general categories —
 *   (\P{N})(\p{P}) -> "\1 \2 "   punctuation after a non-number split off
 *   (\p{P})(\P{N}) -> " \1 \2"   punctuation before a non-number split off
 *   (\p{S})        -> " \1 "     every symbol split off
 * then the words joined by single spaces. No entity is decoded (sacreBLEU's choice). */
#include <stdlib.h>
#include <string.h>

#include "harness/base/err.h"
#include "workloads/evaluation/bleu/bleu.h"
#include "workloads/evaluation/bleu/uchar.h"

/* A line's code points: where each starts in s and how long it is. */
struct cps {
    const char *s;
    size_t n;
    uint32_t *cp;
    size_t *at, *len;
};

static void cps_read(struct cps *c, const char *s)
{
    size_t bytes = strlen(s);
    c->s = s;
    c->n = 0;
    c->cp = pb_xmalloc((bytes + 1) * sizeof *c->cp);
    c->at = pb_xmalloc((bytes + 1) * sizeof *c->at);
    c->len = pb_xmalloc((bytes + 1) * sizeof *c->len);
    for (size_t i = 0; i < bytes; c->n++) {
        size_t k = pb_uchar_decode((const unsigned char *)s + i, bytes - i, &c->cp[c->n]);
        c->at[c->n] = i;
        c->len[c->n] = k;
        i += k;
    }
}

static void cps_finish(struct cps *c)
{
    free(c->cp);
    free(c->at);
    free(c->len);
}

enum pass { PUNCT_AFTER_NONNUMBER, PUNCT_BEFORE_NONNUMBER, SYMBOL };

static bool pair_matches(enum pass p, uint32_t a, uint32_t b)
{
    if (p == PUNCT_AFTER_NONNUMBER)
        return !pb_uchar_is_number(a) && pb_uchar_is_punct(b);
    return pb_uchar_is_punct(a) && !pb_uchar_is_number(b);
}

static char *run_pass(const char *s, enum pass p)
{
    struct cps c;
    cps_read(&c, s);
    struct pb_text t = {0};
    pb_text_put(&t, "", 0);
    for (size_t i = 0; i < c.n;) {
        if (p == SYMBOL) {
            bool sym = pb_uchar_is_symbol(c.cp[i]);
            if (sym)
                pb_text_putc(&t, ' ');
            pb_text_put(&t, s + c.at[i], c.len[i]);
            if (sym)
                pb_text_putc(&t, ' ');
            i++;
        } else if (i + 1 < c.n && pair_matches(p, c.cp[i], c.cp[i + 1])) {
            if (p == PUNCT_BEFORE_NONNUMBER)
                pb_text_putc(&t, ' ');
            pb_text_put(&t, s + c.at[i], c.len[i]);
            pb_text_putc(&t, ' ');
            pb_text_put(&t, s + c.at[i + 1], c.len[i + 1]);
            if (p == PUNCT_AFTER_NONNUMBER)
                pb_text_putc(&t, ' ');
            i += 2;
        } else {
            pb_text_put(&t, s + c.at[i], c.len[i]);
            i++;
        }
    }
    cps_finish(&c);
    return pb_text_take(&t);
}

char *pb_bleu_tokenize_intl(const char *line)
{
    char *a = run_pass(line, PUNCT_AFTER_NONNUMBER);
    char *b = run_pass(a, PUNCT_BEFORE_NONNUMBER);
    free(a);
    a = run_pass(b, SYMBOL);
    free(b);
    b = pb_uchar_words(a);
    free(a);
    return b;
}
