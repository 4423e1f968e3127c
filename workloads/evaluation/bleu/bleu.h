/* workloads/evaluation/bleu/bleu.h — corpus BLEU as sacreBLEU's corpus_bleu computes it with its
 * defaults: one reference per segment, case kept, both sides tokenised with the "13a"
 * tokeniser (mteval-v13a's), n-grams of order 1 … 4 clipped by the reference's counts,
 * the brevity penalty over the corpus lengths, and the 'exp' smoothing (the k-th order
 * with no match counts as precision 1 / (2^k · total)). The segment statistics add up,
 * so a corpus is scored one segment at a time. Text is UTF-8 bytes; whitespace is
 * Python's (str.split): ASCII's plus U+0085, U+00A0, U+1680, U+2000–U+200A, U+2028,
 * U+2029, U+202F, U+205F, U+3000. */
#ifndef PB_BLEU_H
#define PB_BLEU_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/base/err.h"
#include "workloads/evaluation/bleu/detok.h"

#define PB_BLEU_ORDER 4

/* Sufficient statistics of a corpus (zero it to start). */
struct pb_bleu {
    long segments;
    long hyp_len, ref_len;             /* tokens after tokenisation */
    long correct[PB_BLEU_ORDER];       /* clipped n-gram matches, order n at [n - 1] */
    long total[PB_BLEU_ORDER];         /* hypothesis n-grams */
};

/* The score and its parts, as sacreBLEU's BLEUScore holds them: bleu and the
 * precisions in percent (0 past an order with no hypothesis n-grams, and all 0 when
 * nothing matches), bp the brevity penalty, ratio hyp_len / ref_len (0 for no reference
 * tokens). */
struct pb_bleu_score {
    double bleu;
    double precision[PB_BLEU_ORDER];
    double bp, ratio;
    long hyp_len, ref_len;
};

/* The "13a" tokenisation of line (NUL-terminated): trailing whitespace dropped,
 * "<skipped>" removed, the entities &quot; &amp; &lt; &gt; decoded, the symbols
 * !"#$%&()*+/:;<=>?@[\]^_`{|}~ split off, '.' and ',' split off unless between digits,
 * '-' split off after a digit; the tokens joined by single spaces. Returns a string to
 * free(). */
char *pb_bleu_tokenize_13a(const char *line);

/* sacreBLEU's "intl" tokenisation of line (tokintl.c): punctuation split off unless it
 * sits between a digit and anything (either side a number keeps it), every symbol split
 * off, by Unicode categories; the tokens joined by single spaces. No entity decoded.
 * Returns a string to free(). */
char *pb_bleu_tokenize_intl(const char *line);

/* sacreBLEU's tokenisers pipebench has (--tokenize). */
enum pb_bleu_tok { PB_BLEU_TOK_13A, PB_BLEU_TOK_INTL };
/* "13a" or "intl"; -1 with a message naming them for another. */
int pb_bleu_tok_parse(const char *name, enum pb_bleu_tok *out, struct pb_err *e);
const char *pb_bleu_tok_name(enum pb_bleu_tok tok);

/* What is done to the text before the n-grams are counted (zeroed: sacreBLEU's defaults
 * on the text as given): BPE joins undone on both sides, the hypothesis Moses-detokenised,
 * both sides lowercased as Python's str.lower(), then tokenised. The MLPerf GNMT
 * reference's: merge_bpe, detok en, lowercase, intl (semantics §6.9). */
struct pb_bleu_opts {
    bool merge_bpe;
    enum pb_detok_lang detok;
    bool lowercase;
    enum pb_bleu_tok tok;
};
/* The reference's settings above. */
void pb_bleu_opts_mlperf(struct pb_bleu_opts *o);

/* Adds one segment under o: each side merged, the hypothesis detokenised, each side
 * lowercased and tokenised as o says. */
void pb_bleu_add_opts(struct pb_bleu *b, const char *hyp, const char *ref,
                      const struct pb_bleu_opts *o);

/* Undoes BPE joins as the MLPerf GNMT reference does before detokenising: every "@@ "
 * removed, then every remaining "@@". Returns a string to free(). */
char *pb_bleu_merge_bpe(const char *line);

/* Adds one segment: the hypothesis and its reference as raw text (each tokenised with
 * pb_bleu_tokenize_13a here). */
void pb_bleu_add(struct pb_bleu *b, const char *hyp, const char *ref);

/* Adds one segment already tokenised: tokens separated by single spaces, no leading or
 * trailing space (pb_bleu_tokenize_13a's output). */
void pb_bleu_add_tokens(struct pb_bleu *b, const char *hyp, const char *ref);

/* The corpus score of b's statistics. */
void pb_bleu_score(const struct pb_bleu *b, struct pb_bleu_score *s);

/* Whether the n bytes at p are valid UTF-8 (for messages about input files). */
bool pb_bleu_valid_utf8(const char *p, size_t n);

/* A text file's lines: one buffer, each '\n' replaced by NUL. */
struct pb_bleu_lines {
    char *text;
    char **line;  /* [n] */
    long n;
};
/* Reads the lines of the UTF-8 file at path (lines end at '\n'; a last line needs none);
 * role names it in messages ("hypothesis", "reference"). -1 with a message for a file
 * that cannot be read, holds no lines, a NUL byte or invalid UTF-8 (its line named). */
int pb_bleu_read_lines(const char *path, const char *role, struct pb_bleu_lines *l,
                       struct pb_err *e);
/* Frees l's lines and zeroes it (a zeroed l is a no-op). */
void pb_bleu_lines_finish(struct pb_bleu_lines *l);

/* Scores the corpus of two line-aligned UTF-8 files: line i of hyp_path against line
 * i of ref_path (lines end at '\n'; a last line needs none), each side BPE-merged first
 * when merge_bpe. Zeroes b and adds every segment. -1 with a message for a file that
 * cannot be read, holds no lines, a NUL byte or invalid UTF-8 (its line named), or a
 * line count that differs from the other's. */
int pb_bleu_score_files(const char *hyp_path, const char *ref_path, bool merge_bpe,
                        struct pb_bleu *b, struct pb_err *e);
/* The same under o (pb_bleu_add_opts). */
int pb_bleu_score_files_opts(const char *hyp_path, const char *ref_path,
                             const struct pb_bleu_opts *o, struct pb_bleu *b, struct pb_err *e);

/* sacreBLEU's one-line report of s, with the signature of what was scored:
 * "BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|bpe:none = 26.83 58.3/32.1/20.0/12.5
 * (BP = 1.000 ratio = 1.000 hyp_len = 12 ref_len = 12)"; bpe:merged when merged. */
void pb_bleu_format(const struct pb_bleu_score *s, bool merged, char *buf, size_t cap);
/* The same with o's settings in the signature: case:lc for lowercase, tok:intl, and
 * |detok:en or |detok:de after bpe: when the hypothesis was detokenised. */
void pb_bleu_format_opts(const struct pb_bleu_score *s, const struct pb_bleu_opts *o, char *buf,
                         size_t cap);

#endif
