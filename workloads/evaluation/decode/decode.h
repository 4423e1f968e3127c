/* workloads/evaluation/decode/decode.h — decoding translations for BLEU (semantics §6.9): greedy
 * search and the beam search of the MLPerf GNMT reference's SequenceGenerator (length
 * normalisation ((c + len) / (c + 1))^α, coverage penalty β · Σ log(min(Σ_t attention,
 * 1))), driving any model through the step/select interface below, batched over B
 * sentences of their own source lengths, K hypotheses each; and the decoded ids turned
 * back into BPE-merged text for workloads/evaluation/bleu/. Model-independent: the model keeps its
 * recurrent state and encoder outputs in rows and only reorders them when told. */
#ifndef PB_DECODE_H
#define PB_DECODE_H

#include <stdint.h>

#include "harness/base/err.h"
#include "workloads/datasets/wmt16_vocab.h"

/* The model as the search sees it. Its state is a list of rows, one per hypothesis;
 * before the first call row s holds sentence s (its encoder outputs, no target token
 * read yet). Rows read target tokens one per step, in lockstep. */
struct pb_decoder {
    void *ctx;
    int vocab;      /* V, the log-probabilities per row */
    int src_steps;  /* Tsrc, the attention weights per row: the batch's longest source */
    /* Row i reads tokens[i] (i < n; n is the row count) and writes its log-probabilities
     * over the vocabulary to logp [n, V] and its attention over the source positions to
     * attn [n, Tsrc] (positions at or past its sentence's source length are not read).
     * 0, or -1 with e set. */
    int (*step)(void *ctx, const int32_t *tokens, int n, float *logp, float *attn,
                struct pb_err *e);
    /* The rows become n rows, new row i a copy of old row rows[i] (a row may be copied
     * more than once or dropped): beams pruned and duplicated by their parent, finished
     * sentences removed. Never called when it would keep the rows as they are.
     * 0, or -1 with e set. */
    int (*select)(void *ctx, const int32_t *rows, int n, struct pb_err *e);
};

/* Which attention the coverage penalty adds up. SLOT: the reference's — accu_attn_scores
 * is indexed by beam slot and never reordered with the parent beams, so a hypothesis is
 * penalised for the attention of whatever held its slot. LINEAGE: Wu et al. 2016's —
 * the attention of the hypothesis' own prefixes. */
enum pb_coverage { PB_COVERAGE_SLOT, PB_COVERAGE_LINEAGE };

struct pb_decode_opts {
    int beam;                 /* K >= 1 */
    int max_len;              /* >= 1: tokens of an output row, BOS and EOS included */
    double len_norm_factor;   /* α */
    double len_norm_const;    /* c (> -1) */
    double cov_penalty;       /* β */
    enum pb_coverage coverage;
};

/* The paper's: beam 5, max length 80, α 0.6, c 5.0, β 0.1, the reference's coverage. */
void pb_decode_opts_paper(struct pb_decode_opts *o);

/* -1 with a message saying what to pass for K < 1, a max length < 1, a non-finite α or
 * β, or c <= -1. */
int pb_decode_check(const struct pb_decode_opts *o, struct pb_err *e);

/* What a search returns for B sentences. */
struct pb_decoded {
    int batch, max_len;
    int32_t *tokens;  /* [B, max_len]: BOS, the tokens, EOS when one was chosen, PAD after */
    int32_t *len;     /* [B] tokens before the padding (BOS and EOS included) */
    double *score;    /* [B] the chosen hypothesis' score (below) */
    int32_t *steps;   /* [B] decoder steps that read the sentence */
};
void pb_decoded_finish(struct pb_decoded *out);

/* Greedy search: each row takes its most probable token (ties: the lowest id) until it
 * takes EOS or its row holds max_len tokens. score: the summed log-probabilities of the
 * tokens taken. src_len [B] each in [1, Tsrc]. 0, or -1 with e set (nothing in out). */
int pb_decode_greedy(const struct pb_decoder *d, int batch, const int32_t *src_len, int max_len,
                     struct pb_decoded *out, struct pb_err *e);

/* Beam search with K = o->beam hypotheses per sentence (beam.c states the rules).
 * score: the chosen hypothesis' summed log-probabilities divided by its length
 * normalisation plus its coverage penalty, or the plain sum for a sentence still open at
 * max_len (the reference normalises a sentence only once all its beams have finished).
 * 0, or -1 with e set (nothing in out). */
int pb_decode_beam(const struct pb_decoder *d, int batch, const int32_t *src_len,
                   const struct pb_decode_opts *o, struct pb_decoded *out, struct pb_err *e);

/* The text of one output row as the MLPerf reference's detokenize_bpe gives it, without
 * its Moses step: the tokens after BOS up to EOS (PAD, BOS and EOS ids left out), joined
 * by single spaces, BPE joins undone as pb_bleu_merge_bpe does. -1 with a message for an
 * id outside the vocabulary; else *text is a string to free(). */
int pb_decode_text(const struct pb_wmt16_vocab *v, const int32_t *tokens, int len, char **text,
                   struct pb_err *e);
/* The same, BPE joins kept: the BPE tokens the model produced, as `pipebench bleu
 * --merge-bpe` reads them. */
int pb_decode_bpe(const struct pb_wmt16_vocab *v, const int32_t *tokens, int len, char **text,
                  struct pb_err *e);

#endif
