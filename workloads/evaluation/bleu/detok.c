/* workloads/evaluation/bleu/detok.c — the Moses detokeniser for English and German (detok.h). The
 * token rules are those of detokenizer.perl as sacremoses 0.2 has them; only the rules of
 * the two languages are here (no French, Czech or Finnish special cases). A token's
 * classes are read off its code points: "all of a set", "starts with", "ends with". */
#include <stdlib.h>
#include <string.h>

#include "harness/base/err.h"
#include "workloads/evaluation/bleu/detok.h"
#include "workloads/evaluation/bleu/uchar.h"

int pb_detok_lang_parse(const char *name, enum pb_detok_lang *out, struct pb_err *e)
{
    if (!strcmp(name, "en"))
        *out = PB_DETOK_EN;
    else if (!strcmp(name, "de"))
        *out = PB_DETOK_DE;
    else
        return pb_err_set(e, "--detok '%s': the Moses detokeniser knows 'en' (the MLPerf "
                             "GNMT reference's: detokenizer.perl without -l) and 'de'", name);
    return 0;
}

const char *pb_detok_lang_name(enum pb_detok_lang lang)
{
    return lang == PB_DETOK_EN ? "en" : lang == PB_DETOK_DE ? "de" : "none";
}

/* s with every occurrence of from replaced by to, left to right (re.sub of a literal). */
static char *replace(char *s, const char *from, const char *to)
{
    if (!strstr(s, from))
        return s;
    struct pb_text b = {0};
    size_t fl = strlen(from);
    for (const char *p = s, *q; *p; p = q + fl) {
        q = strstr(p, from);
        if (!q) {
            pb_text_put(&b, p, strlen(p));
            break;
        }
        pb_text_put(&b, p, (size_t)(q - p));
        pb_text_put(&b, to, strlen(to));
    }
    free(s);
    return pb_text_take(&b);
}

/* sacremoses' CJK ranges (util.is_cjk), closed intervals. */
static bool is_cjk(uint32_t c)
{
    static const uint32_t r[][2] = {
        {0x1100, 0x11FF},   {0x2E80, 0xA4CF},   {0xA840, 0xA87F},   {0xAC00, 0xD7AF},
        {0xF900, 0xFAFF},   {0xFE30, 0xFE4F},   {0xFF65, 0xFFDC},   {0x17000, 0x18AFF},
        {0x1B000, 0x1B12F}, {0x1B170, 0x1B2FF}, {0x20000, 0x2FFFF},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (c <= r[i][1])
            return c >= r[i][0];
    return false;
}

static uint32_t first_cp(const char *t)
{
    uint32_t c;
    pb_uchar_decode((const unsigned char *)t, strlen(t), &c);
    return c;
}

static uint32_t last_cp(const char *t)
{
    size_t n = strlen(t), i = n;
    while (i > 0 && ((unsigned char)t[i - 1] & 0xC0) == 0x80)
        i--;
    if (i > 0)
        i--;
    uint32_t c;
    pb_uchar_decode((const unsigned char *)t + i, n - i, &c);
    return c;
}

enum cls { CURRENCY, PUNCT, QUOTE, CURLY };

static bool in_class(uint32_t c, enum cls k)
{
    switch (k) {
    case CURRENCY:  /* [\p{IsSc}\(\[\{¿¡] */
        return pb_uchar_is_currency(c) || c == '(' || c == '[' || c == '{' || c == 0xBF ||
               c == 0xA1;
    case PUNCT:  /* [,.?!:;\\%}\])] */
        return c < 0x80 && strchr(",.?!:;\\%}])", (int)c) && c;
    case QUOTE:  /* ['"„“`] */
        return c == '\'' || c == '"' || c == 0x201E || c == 0x201C || c == '`';
    default:  /* [„“”] */
        return c == 0x201E || c == 0x201C || c == 0x201D;
    }
}

/* Whether every code point of the (non-empty) token is of class k. */
static bool all_of(const char *t, enum cls k)
{
    size_t n = strlen(t);
    for (size_t i = 0; i < n;) {
        uint32_t c;
        i += pb_uchar_decode((const unsigned char *)t + i, n - i, &c);
        if (!in_class(c, k))
            return false;
    }
    return n > 0;
}

/* The quote counts, one per spelling of a quote token. */
struct quotes {
    char **key;
    int *count;
    int n;
};

static int *quote_count(struct quotes *q, const char *key)
{
    for (int i = 0; i < q->n; i++)
        if (!strcmp(q->key[i], key))
            return &q->count[i];
    char **k = pb_xmalloc((size_t)(q->n + 1) * sizeof *k);
    int *c = pb_xmalloc((size_t)(q->n + 1) * sizeof *c);
    if (q->n) {
        memcpy(k, q->key, (size_t)q->n * sizeof *k);
        memcpy(c, q->count, (size_t)q->n * sizeof *c);
    }
    free(q->key);
    free(q->count);
    q->key = k;
    q->count = c;
    q->key[q->n] = pb_xstrdup(key);
    q->count[q->n] = 0;
    return &q->count[q->n++];
}

static void quotes_finish(struct quotes *q)
{
    for (int i = 0; i < q->n; i++)
        free(q->key[i]);
    free(q->key);
    free(q->count);
}

/* The tokens of s cut at Python's whitespace, in place: *n of them. */
static char **split(char *s, int *n)
{
    size_t len = strlen(s);
    char **tok = pb_xmalloc((len / 2 + 2) * sizeof *tok);
    *n = 0;
    bool in = false;
    for (size_t i = 0; i < len;) {
        uint32_t c;
        size_t k = pb_uchar_decode((const unsigned char *)s + i, len - i, &c);
        if (pb_uchar_is_space(c)) {
            memset(s + i, 0, k);
            in = false;
        } else if (!in) {
            tok[(*n)++] = s + i;
            in = true;
        }
        i += k;
    }
    return tok;
}

/* The token loop: words w[0 .. n-1] into out. */
static void join(char **w, int n, enum pb_detok_lang lang, struct pb_text *out)
{
    bool en = lang == PB_DETOK_EN;
    const char *space = " ";
    struct quotes q = {0};
    for (int i = 0; i < n; i++) {
        const char *t = w[i];
        uint32_t c0 = first_cp(t);
        bool attach = false;
        if (is_cjk(c0)) {
            attach = i > 0 && is_cjk(last_cp(w[i - 1]));
        } else if (all_of(t, CURRENCY)) {
            pb_text_put(out, space, strlen(space));
            pb_text_put(out, t, strlen(t));
            space = "";
            continue;
        } else if (all_of(t, PUNCT)) {
            attach = true;
        } else if (en && i > 0 && t[0] == '\'' && pb_uchar_is_alpha(first_cp(t + 1))) {
            attach = true;
        } else if (all_of(t, QUOTE)) {
            int *count = quote_count(&q, all_of(t, CURLY) ? "\"" : t);
            if (*count % 2 == 0 && en && !strcmp(t, "'") && i > 0 &&
                w[i - 1][strlen(w[i - 1]) - 1] == 's') {
                attach = true;
            } else if (*count % 2 == 0) {
                pb_text_put(out, space, strlen(space));
                pb_text_put(out, t, strlen(t));
                space = "";
                ++*count;
                continue;
            } else {
                attach = true;
                ++*count;
            }
        }
        /* every rule but the two that take the next token's space leaves " " */
        if (!attach)
            pb_text_put(out, space, strlen(space));
        pb_text_put(out, t, strlen(t));
        space = " ";
    }
    quotes_finish(&q);
}

char *pb_detok(const char *line, enum pb_detok_lang lang)
{
    if (lang == PB_DETOK_NONE)
        return pb_xstrdup(line);
    char *words = pb_uchar_words(line);
    struct pb_text b = {0};
    pb_text_put(&b, " ", 1);
    pb_text_put(&b, words, strlen(words));
    pb_text_put(&b, " ", 1);
    free(words);
    char *s = replace(pb_text_take(&b), " @-@ ", "-");
    static const char *const entity[][2] = {
        {"&bar;", "|"}, {"&#124;", "|"}, {"&lt;", "<"},  {"&gt;", ">"},
        {"&bra;", "["}, {"&ket;", "]"},  {"&quot;", "\""}, {"&apos;", "'"},
        {"&#91;", "["}, {"&#93;", "]"},  {"&amp;", "&"},
    };
    for (size_t i = 0; i < sizeof entity / sizeof entity[0]; i++)
        s = replace(s, entity[i][0], entity[i][1]);
    int n;
    char **w = split(s, &n);
    struct pb_text out = {0};
    join(w, n, lang, &out);
    free(w);
    free(s);
    char *joined = pb_text_take(&out);
    char *r = pb_uchar_words(joined);
    free(joined);
    return r;
}
