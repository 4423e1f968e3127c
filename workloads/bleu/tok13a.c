/* workloads/bleu/tok13a.c — sacreBLEU's "13a" tokeniser and the BPE merge, byte for
 * byte on UTF-8. The four regular-expression passes of sacreBLEU's TokenizerRegexp are
 * each a left-to-right scan of non-overlapping matches of a one- or two-character
 * pattern, as Python's re.sub makes them; [^0-9] there matches one code point, and a
 * scan over bytes gives the same output (a multi-byte character's other bytes never
 * match '.', ',', '-' or a digit). */
#include <stdint.h>
#include <string.h>

#include "harness/base/err.h"
#include "workloads/bleu/bleu.h"

struct buf {
    char *p;
    size_t n, cap;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (b->n + n + 1 > cap)
            cap *= 2;
        char *q = pb_xmalloc(cap);
        if (b->n)
            memcpy(q, b->p, b->n);
        free(b->p);
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void putc1(struct buf *b, char c)
{
    put(b, &c, 1);
}

/* The code point at s (n bytes left) into *cp and its length; an invalid sequence is
 * one byte long with *cp = UINT32_MAX. Strict: no overlong forms, no surrogates. */
static size_t decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    *cp = UINT32_MAX;
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t len = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    if (s[0] > 0xF4 || !len || len > n)
        return 1;
    uint32_t c = s[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 1;
        c = c << 6 | (s[i] & 0x3F);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 1;
    *cp = c;
    return len;
}

bool pb_bleu_valid_utf8(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += decode(s + i, n - i, &cp);
        if (cp == UINT32_MAX)
            return false;
    }
    return true;
}

/* Python's str.isspace(). */
static bool is_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Every occurrence of `from` in s replaced by `to`, left to right (str.replace). */
static char *replace(char *s, const char *from, const char *to)
{
    if (!strstr(s, from))
        return s;
    struct buf b = {0};
    size_t fl = strlen(from);
    for (char *p = s, *q; *p; p = q + fl) {
        q = strstr(p, from);
        if (!q) {
            put(&b, p, strlen(p));
            break;
        }
        put(&b, p, (size_t)(q - p));
        put(&b, to, strlen(to));
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
    struct buf b = {0};
    size_t n = strlen(s);
    put(&b, "", 0);
    for (size_t i = 0; i < n;) {
        if (i + 1 < n && pair_matches(r, s[i], s[i + 1])) {
            if (r == SPLIT_BEFORE_NONDIGIT)
                putc1(&b, ' ');
            putc1(&b, s[i]);
            putc1(&b, ' ');
            putc1(&b, s[i + 1]);
            if (r != SPLIT_BEFORE_NONDIGIT)
                putc1(&b, ' ');
            i += 2;
        } else {
            putc1(&b, s[i++]);
        }
    }
    free(s);
    return b.p;
}

/* The words of s (split at Python's whitespace) joined by single spaces. */
static char *squeeze(const char *s, size_t n)
{
    struct buf b = {0};
    put(&b, "", 0);
    const unsigned char *u = (const unsigned char *)s;
    bool gap = false;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = decode(u + i, n - i, &cp);
        if (is_space(cp)) {
            gap = true;
        } else {
            if (gap && b.n)
                putc1(&b, ' ');
            gap = false;
            put(&b, s + i, len);
        }
        i += len;
    }
    return b.p;
}

/* The length of s without its trailing whitespace (str.rstrip()). */
static size_t rstrip_len(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t keep = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += decode(u + i, n - i, &cp);
        if (!is_space(cp))
            keep = i;
    }
    return keep;
}

char *pb_bleu_tokenize_13a(const char *line)
{
    struct buf b = {0};
    put(&b, " ", 1);
    put(&b, line, rstrip_len(line, strlen(line)));
    put(&b, " ", 1);
    char *s = replace(b.p, "<skipped>", "");
    s = replace(s, "-\n", "");
    s = replace(s, "\n", " ");
    if (strchr(s, '&')) {
        s = replace(s, "&quot;", "\"");
        s = replace(s, "&amp;", "&");
        s = replace(s, "&lt;", "<");
        s = replace(s, "&gt;", ">");
    }
    struct buf t = {0};
    put(&t, "", 0);
    for (const char *p = s; *p; p++)
        if (is_symbol(*p)) {
            char three[3] = {' ', *p, ' '};
            put(&t, three, 3);
        } else {
            putc1(&t, *p);
        }
    free(s);
    s = pair_pass(t.p, SPLIT_AFTER_NONDIGIT);
    s = pair_pass(s, SPLIT_BEFORE_NONDIGIT);
    s = pair_pass(s, DASH_AFTER_DIGIT);
    char *out = squeeze(s, strlen(s));
    free(s);
    return out;
}

char *pb_bleu_merge_bpe(const char *line)
{
    return replace(replace(pb_xstrdup(line), "@@ ", ""), "@@", "");
}
