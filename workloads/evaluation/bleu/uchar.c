/* workloads/evaluation/bleu/uchar.c — UTF-8 decoding, Unicode properties and lowercasing for BLEU's
 * text steps (uchar.h); the properties and the case mapping are ICU's (libicu-dev). */
#include <stdlib.h>
#include <string.h>
#include <unicode/uchar.h>
#include <unicode/ustring.h>

#include "harness/base/err.h"
#include "workloads/evaluation/bleu/uchar.h"

size_t pb_uchar_decode(const unsigned char *s, size_t n, uint32_t *cp)
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

bool pb_uchar_is_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

bool pb_uchar_is_alpha(uint32_t c)
{
    return c <= 0x10FFFF && u_hasBinaryProperty((UChar32)c, UCHAR_ALPHABETIC);
}

static uint32_t category_mask(uint32_t c)
{
    return c <= 0x10FFFF ? (uint32_t)U_GET_GC_MASK((UChar32)c) : 0;
}

bool pb_uchar_is_currency(uint32_t c)
{
    return category_mask(c) & U_GC_SC_MASK;
}

bool pb_uchar_is_punct(uint32_t c)
{
    return category_mask(c) & U_GC_P_MASK;
}

bool pb_uchar_is_symbol(uint32_t c)
{
    return category_mask(c) & U_GC_S_MASK;
}

bool pb_uchar_is_number(uint32_t c)
{
    return category_mask(c) & U_GC_N_MASK;
}

/* UTF-8 → UTF-16 → lower → UTF-8; each length found by a first preflighting call. An
 * invalid byte sequence (never in checked input) becomes U+FFFD. */
char *pb_uchar_lower(const char *s)
{
    UErrorCode err = U_ZERO_ERROR;
    int32_t n16 = 0, nl = 0, n8 = 0, len = (int32_t)strlen(s);
    u_strFromUTF8WithSub(NULL, 0, &n16, s, len, 0xFFFD, NULL, &err);
    err = U_ZERO_ERROR;
    UChar *w = pb_xmalloc(((size_t)n16 + 1) * sizeof *w);
    u_strFromUTF8WithSub(w, n16 + 1, &n16, s, len, 0xFFFD, NULL, &err);
    PB_CHECK(U_SUCCESS(err));
    nl = u_strToLower(NULL, 0, w, n16, "", &err);
    err = U_ZERO_ERROR;
    UChar *l = pb_xmalloc(((size_t)nl + 1) * sizeof *l);
    u_strToLower(l, nl + 1, w, n16, "", &err);
    PB_CHECK(U_SUCCESS(err));
    u_strToUTF8(NULL, 0, &n8, l, nl, &err);
    err = U_ZERO_ERROR;
    char *out = pb_xmalloc((size_t)n8 + 1);
    u_strToUTF8(out, n8 + 1, &n8, l, nl, &err);
    PB_CHECK(U_SUCCESS(err));
    out[n8] = 0;
    free(w);
    free(l);
    return out;
}

void pb_text_put(struct pb_text *t, const char *s, size_t n)
{
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (t->n + n + 1 > cap)
            cap *= 2;
        char *q = pb_xmalloc(cap);
        if (t->n)
            memcpy(q, t->p, t->n);
        free(t->p);
        t->p = q;
        t->cap = cap;
    }
    if (n)
        memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = 0;
}

void pb_text_putc(struct pb_text *t, char c)
{
    pb_text_put(t, &c, 1);
}

char *pb_text_take(struct pb_text *t)
{
    char *p = t->p ? t->p : pb_xstrdup("");
    memset(t, 0, sizeof *t);
    return p;
}

char *pb_uchar_words(const char *s)
{
    struct pb_text b = {0};
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    bool gap = false;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = pb_uchar_decode(u + i, n - i, &cp);
        if (pb_uchar_is_space(cp)) {
            gap = true;
        } else {
            if (gap && b.n)
                pb_text_putc(&b, ' ');
            gap = false;
            pb_text_put(&b, s + i, len);
        }
        i += len;
    }
    return pb_text_take(&b);
}
