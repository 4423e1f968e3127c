/* workloads/evaluation/bleu/detok.h — the Moses detokeniser (detokenizer.perl, as sacremoses 0.2's
 * MosesDetokenizer ports it) for English and German, on UTF-8: what the MLPerf GNMT
 * reference runs on its BPE-merged output before sacreBLEU scores it against the raw
 * newstest2014.de (semantics §6.9). */
#ifndef PB_BLEU_DETOK_H
#define PB_BLEU_DETOK_H

#include "harness/base/err.h"

enum pb_detok_lang { PB_DETOK_NONE, PB_DETOK_EN, PB_DETOK_DE };

/* "en" or "de" (the flag --detok's values); -1 with a message naming them for another. */
int pb_detok_lang_parse(const char *name, enum pb_detok_lang *out, struct pb_err *e);
/* "en", "de" or "none". */
const char *pb_detok_lang_name(enum pb_detok_lang lang);

/* The detokenised text of one Moses-tokenised line (valid UTF-8, NUL-terminated): the
 * tokens (split at Python's whitespace) joined with one space; " @-@ " becomes "-"; the
 * entities &bar; &#124; &lt; &gt; &bra; &ket; &quot; &apos; &#91; &#93; &amp; decoded,
 * in that order; then, token by token: a CJK token after one ending in CJK attaches; a
 * token all of currency signs or ( [ { ¿ ¡ keeps its space and takes the next token's;
 * one all of , . ? ! : ; \ % } ] ) loses its space; in English a token "'" + letter
 * after the first ('s, 're) loses its space; a token all of ' " „ “ ` alternates
 * (counted per spelling, „ and “ runs counted as "): the first of a pair takes the next
 * token's space, the second loses its own (in English a "'" after a word ending in s
 * is a possessive and loses its space, uncounted); leading and trailing whitespace
 * dropped. lang PB_DETOK_NONE returns a copy. Returns a string to free(). */
char *pb_detok(const char *line, enum pb_detok_lang lang);

#endif
