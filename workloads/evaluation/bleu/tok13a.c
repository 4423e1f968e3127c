/* workloads/evaluation/bleu/tok13a.c — sacreBLEU's "13a" tokeniser and the BPE merge, byte for
 * byte on UTF-8. The four regular-expression passes of sacreBLEU's TokenizerRegexp are
 * each a left-to-right scan of non-overlapping matches of a one- or two-character
 * pattern, as Python's re.sub makes them; [^0-9] there matches one code point, and a
 * scan over bytes gives the same output (a multi-byte character's other bytes never
 * match '.', ',', '-' or a digit). */
#include <stdint.h>
#include <string.h>

#include "harness/base/err.h"
#include "workloads/evaluation/bleu/bleu.h"
#include "workloads/evaluation/bleu/uchar.h"

bool pb_bleu_valid_utf8(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += pb_uchar_decode(s + i, n - i, &cp);
        if (cp == UINT32_MAX)
            return false;
    }
    return true;
}

/* Every occurrence of `from` in s replaced by `to`, left to right (str.replace). */
static char *replace(char *s, const char *from, const char *to)
{
    if (!strstr(s, from))
        return s;
    struct pb_text b = {0};
    size_t fl = strlen(from);
    for (char *p = s, *q; *p; p = q + fl) {
        q = strstr(p, from);
        if (!q) {
            pb_text_put(&b, p, strlen(p));
            break;
        }
        pb_text_put(&b, p, (size_t)(q - p));
        pb_text_put(&b, to, strlen(to));
    }
    free(s);
    return b.p ? b.p : pb_xstrdup("");
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Pass 1: each of the symbols becomes " c ". */
static bool is_symbol(char c)
{
    return c && strchr("{|}~[\\]^_` !\"#$%&()*+:;<=>?@/", c) != NULL;
}

/* A two-character pass: where first(s[i]) and second(s[i + 1]), writes the pair as
 * pre s[i] mid s[i + 1] post and goes on after it. */
enum pair_rule { SPLIT_AFTER_NONDIGIT, SPLIT_BEFORE_NONDIGIT, DASH_AFTER_DIGIT };

static bool pair_matches(enum pair_rule r, char a, char b)
{
    switch (r) {
    case SPLIT_AFTER_NONDIGIT:  /* ([^0-9])([\.,]) -> "\1 \2 " */
        return !is_digit(a) && (b == '.' || b == ',');
    case SPLIT_BEFORE_NONDIGIT:  /* ([\.,])([^0-9]) -> " \1 \2" */
        return (a == '.' || a == ',') && !is_digit(b);
    default:  /* ([0-9])(-) -> "\1 \2 " */
        return is_digit(a) && b == '-';
    }
}

static char *pair_pass(char *s, enum pair_rule r)
{
    struct pb_text b = {0};
    size_t n = strlen(s);
    pb_text_put(&b, "", 0);
    for (size_t i = 0; i < n;) {
        if (i + 1 < n && pair_matches(r, s[i], s[i + 1])) {
            if (r == SPLIT_BEFORE_NONDIGIT)
                pb_text_putc(&b, ' ');
            pb_text_putc(&b, s[i]);
            pb_text_putc(&b, ' ');
            pb_text_putc(&b, s[i + 1]);
            if (r != SPLIT_BEFORE_NONDIGIT)
                pb_text_putc(&b, ' ');
            i += 2;
        } else {
            pb_text_putc(&b, s[i++]);
        }
    }
    free(s);
    return b.p;
}

/* The length of s without its trailing whitespace (str.rstrip()). */
static size_t rstrip_len(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t keep = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += pb_uchar_decode(u + i, n - i, &cp);
        if (!pb_uchar_is_space(cp))
            keep = i;
    }
    return keep;
}

char *pb_bleu_tokenize_13a(const char *line)
{
    struct pb_text b = {0};
    pb_text_put(&b, " ", 1);
    pb_text_put(&b, line, rstrip_len(line, strlen(line)));
    pb_text_put(&b, " ", 1);
    char *s = replace(b.p, "<skipped>", "");
    s = replace(s, "-\n", "");
    s = replace(s, "\n", " ");
    if (strchr(s, '&')) {
        s = replace(s, "&quot;", "\"");
        s = replace(s, "&amp;", "&");
        s = replace(s, "&lt;", "<");
        s = replace(s, "&gt;", ">");
    }
    struct pb_text t = {0};
    pb_text_put(&t, "", 0);
    for (const char *p = s; *p; p++)
        if (is_symbol(*p)) {
            char three[3] = {' ', *p, ' '};
            pb_text_put(&t, three, 3);
        } else {
            pb_text_putc(&t, *p);
        }
    free(s);
    s = pair_pass(t.p, SPLIT_AFTER_NONDIGIT);
    s = pair_pass(s, SPLIT_BEFORE_NONDIGIT);
    s = pair_pass(s, DASH_AFTER_DIGIT);
    char *out = pb_uchar_words(s);
    free(s);
    return out;
}

char *pb_bleu_merge_bpe(const char *line)
{
    return replace(replace(pb_xstrdup(line), "@@ ", ""), "@@", "");
}
