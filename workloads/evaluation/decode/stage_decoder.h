/* workloads/evaluation/decode/stage_decoder.h — a translation model as a pb_decoder, with no
 * recurrent-state API: each step runs the forward of one stage holding all its blocks
 * (eval mode, dropout off) on every row's whole prefix with teacher forcing, the sample
 * [source ids; BOS y1 … yt, PAD …], and takes the log-softmax of the logits at position
 * t. The LSTMs are causal and the attention is per query position, so this equals
 * stepwise decoding exactly, at a cost of O(T²) steps of work per sentence. The
 * attention weights at position t come from the same forward (pb_step_ctx.attn_out),
 * for the beam search's coverage penalty. Model-independent and exact by construction:
 * the decoder of any translation model that is not GNMT, and the reference the tests
 * hold GNMT's O(T) step decoder (gnmt_step_decoder.h) to. And the BLEU of a translation
 * dataset's first sentences decoded with the step decoder for a GNMT model, else with
 * this one. */
#ifndef PB_STAGE_DECODER_H
#define PB_STAGE_DECODER_H

#include <stdio.h>

#include "harness/model/stage.h"
#include "workloads/datasets/dataset.h"
#include "workloads/evaluation/bleu/bleu.h"
#include "workloads/evaluation/decode/decode.h"

/* s: a stage of every block of a translation model (label_steps T, samples of 2T ids)
 * that is not the last of its pipeline (index < nstages - 1), so that its forward
 * writes the logits [rows, T, V, 1]; rows = the model's batch, the most rows a search
 * may hold (B·K for beam search over B sentences). */
struct pb_stage_decoder {
    struct pb_stage *s;
    int rows, T, V;
    int n, t;           /* rows in use, tokens each has read */
    int32_t *src;       /* [rows, T] source ids */
    int32_t *src_len;   /* [rows] */
    int32_t *prefix;    /* [rows, T] the target tokens read */
    int32_t *scratch;   /* [rows, T] for select */
    float *host_in;     /* [rows, 2T] */
    float *row;         /* [V] */
    int32_t *dev_len;   /* [rows] on the stage's backend */
    float *dev_attn;    /* [rows, T, T] the attention weights, on the stage's backend */
};

/* The decoder over n <= rows sentences: src [n, T] source ids, src_len [n]. -1 with e
 * set for a stage that does not fit (nothing to finish then). */
int pb_stage_decoder_init(struct pb_stage_decoder *sd, struct pb_stage *s, const int32_t *src,
                          const int32_t *src_len, int n, struct pb_decoder *d, struct pb_err *e);
void pb_stage_decoder_finish(struct pb_stage_decoder *sd);

/* Decodes the first `count` sentences of translation dataset ds (inputs and labels
 * loaded), with the GNMT step decoder when pb_gnmt_layout_applies to s's model (else
 * with the stage decoder), in batches of rows / K (K = o->beam; beam 0 = greedy search, else beam search
 * with o) and adds each to b: the hypothesis' pb_decode_text against the reference's,
 * the dataset's target ids of the same sample turned into text the same way (BPE-merged
 * tokens, not detokenised text). A row holds at most min(o->max_len, T) tokens, BOS and
 * EOS included (the stage has T positions). hyp and ref, when not NULL, receive the
 * texts a line each. 0, or -1 with e set. */
int pb_stage_decode_bleu(struct pb_stage *s, const struct pb_dataset *ds, int count,
                         const struct pb_decode_opts *o, const struct pb_wmt16_vocab *v,
                         struct pb_bleu *b, FILE *hyp, FILE *ref, struct pb_err *e);

/* The same scored the MLPerf GNMT reference's way (semantics §6.9): each hypothesis'
 * pb_decode_text detokenised with bo->detok, against raw[i], the i-th line of the raw
 * reference (newstest2014.de), lowercased and tokenised as bo says (bo->merge_bpe is
 * not read: the hypothesis is merged already, the reference raw). raw holds at least
 * count lines. hyp receives the detokenised hypotheses, ref the raw lines, so that
 * `pipebench bleu` with bo's --tokenize and --lowercase scores the files the same. */
int pb_stage_decode_bleu_raw(struct pb_stage *s, const struct pb_dataset *ds, int count,
                             const struct pb_decode_opts *o, const struct pb_wmt16_vocab *v,
                             const struct pb_bleu_opts *bo, char *const *raw, struct pb_bleu *b,
                             FILE *hyp, FILE *ref, struct pb_err *e);

/* The names the synthetic stand-in's ids get as text: the 4 special tokens, then "w<id>"
 * (a vocabulary of size ids). */
void pb_stage_decoder_synthetic_vocab(struct pb_wmt16_vocab *v, int size);

#endif
