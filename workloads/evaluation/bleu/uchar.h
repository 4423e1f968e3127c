/* workloads/evaluation/bleu/uchar.h — UTF-8 text and the Unicode properties the BLEU text steps
 * (13a and intl tokenisation, lowercasing, the Moses detokeniser) need: strict UTF-8
 * decoding, Python's whitespace, the general categories and the Alphabetic property from
 * ICU, Python's str.lower() through ICU's root-locale full case mapping, and a growing
 * byte buffer. */
#ifndef PB_BLEU_UCHAR_H
#define PB_BLEU_UCHAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The code point at s (n >= 1 bytes left) into *cp and its length; an invalid sequence is
 * one byte long with *cp = UINT32_MAX. Strict: no overlong forms, no surrogates. */
size_t pb_uchar_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* Python's str.isspace() (and so str.split()'s separators). */
bool pb_uchar_is_space(uint32_t c);
/* The words of s (split at Python's whitespace) joined by single spaces: Python's
 * ' '.join(s.split()). Returns a string to free(). */
char *pb_uchar_words(const char *s);
/* Perl's \p{IsAlpha}: Unicode's Alphabetic property. */
bool pb_uchar_is_alpha(uint32_t c);
/* General categories: Sc (currency symbol), P* (punctuation), S* (symbol), N* (number). */
bool pb_uchar_is_currency(uint32_t c);
bool pb_uchar_is_punct(uint32_t c);
bool pb_uchar_is_symbol(uint32_t c);
bool pb_uchar_is_number(uint32_t c);

/* Python's str.lower() of UTF-8 s: full lowercase mappings (U+0130 becomes two code
 * points) and the final sigma; an invalid byte sequence becomes U+FFFD. Returns a string
 * to free(). */
char *pb_uchar_lower(const char *s);

/* A NUL-terminated byte buffer that grows; zero it to start, free(p) when done. */
struct pb_text {
    char *p;
    size_t n, cap;
};
void pb_text_put(struct pb_text *t, const char *s, size_t n);
void pb_text_putc(struct pb_text *t, char c);
/* t's string (an empty one when nothing was put), handed over to the caller. */
char *pb_text_take(struct pb_text *t);

#endif
