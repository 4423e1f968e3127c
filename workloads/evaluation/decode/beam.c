/* workloads/evaluation/decode/beam.c — beam search with the rules of the MLPerf GNMT reference's
 * SequenceGenerator.beam_search (semantics §6.9). Each sentence holds K slots, all BOS
 * with score 0 at first. At step idx = 1, 2, …, max_len − 1:
 *  - a sentence whose K slots all end in EOS closes: its slots are re-ranked by one
 *    selection without the model (a finished slot offers only itself), then each score
 *    becomes score / ((c + len) / (c + 1))^α + β · Σ_{p < its source length} (A_p > 0 ?
 *    log(min(A_p, 1)) : 0), len counting BOS and EOS, A the slot's summed attention (the
 *    reference clamps A to [0, 1] and turns log 0 = −inf into 0);
 *  - the other open sentences' slots read their last token (an ended slot reads EOS), and
 *    a slot not ended grows its length by one;
 *  - a slot not ended adds its attention to A (SLOT coverage: A stays with the slot
 *    number, as the reference's accu_attn_scores is never reordered; LINEAGE: A follows
 *    the parent below);
 *  - candidates: a slot not ended offers its C = min(K, V) most probable tokens, score
 *    + log-probability, in that order (equal log-probabilities: the lower id first); an
 *    ended slot offers itself, score + 0 with EOS, then C − 1 of −inf; at idx = 1 only
 *    slot 0 offers (the others' candidates are −inf, as their prefixes are the same);
 *  - the K best of the K·C candidates, best first, fill the slots (equal scores: the
 *    lower slot, then the earlier candidate, i.e. the lower flat index, as a stable
 *    sort); a slot copies its parent's tokens, length and state (the decoder's select)
 *    and appends the candidate's token — EOS for a candidate of score −inf, which only
 *    happens when K > V (the reference needs K <= V): such a slot is dead, it counts as
 *    ended and is never chosen.
 * After the last step each sentence returns its best slot (equal scores: the lower slot);
 * one still open was never normalised and ranks on its plain sums, as in the reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/datasets/dataset.h"
#include "workloads/evaluation/decode/decode_internal.h"

struct cand {
    double score;
    int32_t word;
    int flat;  /* slot · C + rank */
};

/* Inserts c into best [*m] (at most cap kept, best first, stable among equals). */
static void insert(struct cand *best, int *m, int cap, struct cand c)
{
    if (*m == cap && !(c.score > best[cap - 1].score))
        return;
    int i = *m < cap ? (*m)++ : cap - 1;
    while (i > 0 && best[i - 1].score < c.score) {
        best[i] = best[i - 1];
        i--;
    }
    best[i] = c;
}

struct beam {
    int K, C, T, Ts, V;
    struct pb_decode_opts o;
    const int32_t *src_len;
    int32_t *tok, *tok2;      /* [B·K, T] each slot's row, and the rows being built */
    int32_t *len, *len2;      /* [B·K] */
    double *score, *score2;   /* [B·K] */
    double *accu, *accu2;     /* [B·K, Tsrc] summed attention */
    int32_t *word;            /* [B·K] the slot's last token */
    int32_t *prev_row;        /* [B·K] the decoder row its state is to be copied from */
    struct cand *cands, *best;
    int32_t *top_id;          /* [C] a row's best tokens */
    float *top_lp;            /* [C] their log-probabilities */
};

/* Sentence s's candidates from its slots (logp [K, V] of its rows, NULL when every slot
 * has ended) and the selection of the K best into its slots; a = its first decoder row
 * / K in this step. */
static void select_sentence(struct beam *b, int s, int idx, int a, const float *logp)
{
    int K = b->K, C = b->C, T = b->T, Ts = b->Ts, m = 0;
    for (int j = 0; j < K; j++) {
        int slot = s * K + j;
        struct cand *row = b->cands;
        if (b->word[slot] == PB_WMT16_EOS) {
            row[0] = (struct cand){b->score[slot], PB_WMT16_EOS, 0};
            for (int k = 1; k < C; k++)
                row[k] = (struct cand){-INFINITY, PB_WMT16_EOS, 0};
        } else {
            pb_decode_top(logp + (size_t)j * b->V, b->V, C, b->top_id, b->top_lp);
            for (int k = 0; k < C; k++)
                row[k] = (struct cand){idx == 1 && j > 0 ? -INFINITY
                                                        : b->score[slot] + b->top_lp[k],
                                       b->top_id[k], 0};
        }
        for (int k = 0; k < C; k++) {
            row[k].flat = j * C + k;
            insert(b->best, &m, K, row[k]);
        }
    }
    for (int i = 0; i < K; i++) {
        const struct cand *c = &b->best[i];
        int dst = s * K + i, src = s * K + c->flat / C;
        memcpy(b->tok2 + (size_t)dst * T, b->tok + (size_t)src * T, (size_t)idx * sizeof *b->tok);
        b->tok2[(size_t)dst * T + idx] = c->score == -INFINITY ? PB_WMT16_EOS : c->word;
        b->len2[dst] = b->len[src];
        b->score2[dst] = c->score;
        int from = b->o.coverage == PB_COVERAGE_LINEAGE ? src : dst;
        memcpy(b->accu2 + (size_t)dst * Ts, b->accu + (size_t)from * Ts,
               (size_t)Ts * sizeof *b->accu);
        b->prev_row[dst] = a * K + c->flat / C;
    }
    for (int i = 0; i < K; i++) {
        int slot = s * K + i;
        memcpy(b->tok + (size_t)slot * T, b->tok2 + (size_t)slot * T,
               (size_t)(idx + 1) * sizeof *b->tok);
        b->len[slot] = b->len2[slot];
        b->score[slot] = b->score2[slot];
        memcpy(b->accu + (size_t)slot * Ts, b->accu2 + (size_t)slot * Ts,
               (size_t)Ts * sizeof *b->accu);
        b->word[slot] = b->tok[(size_t)slot * T + idx];
    }
}

/* Closes sentence s at step idx: the re-ranking, then normalisation and coverage. */
static void close_sentence(struct beam *b, int s, int idx)
{
    select_sentence(b, s, idx, 0, NULL);
    double c = b->o.len_norm_const;
    for (int j = 0; j < b->K; j++) {
        int slot = s * b->K + j;
        double pen = 0;
        const double *A = b->accu + (size_t)slot * b->Ts;
        for (int p = 0; p < b->src_len[s]; p++)
            if (A[p] > 0)
                pen += log(A[p] < 1 ? A[p] : 1);
        double norm = pow((c + b->len[slot]) / (c + 1), b->o.len_norm_factor);
        b->score[slot] = b->score[slot] / norm + b->o.cov_penalty * pen;
    }
}

int pb_decode_beam(const struct pb_decoder *d, int batch, const int32_t *src_len,
                   const struct pb_decode_opts *o, struct pb_decoded *out, struct pb_err *e)
{
    memset(out, 0, sizeof *out);
    if (pb_decode_check(o, e) || pb_decode_check_batch(d, batch, src_len, e))
        return -1;
    int K = o->beam, V = d->vocab;
    struct beam b = {.K = K, .C = K < V ? K : V, .T = o->max_len, .Ts = d->src_steps, .V = V,
                     .o = *o, .src_len = src_len};
    size_t BK = (size_t)(batch ? batch : 1) * K, T = (size_t)b.T, Ts = (size_t)b.Ts;
    b.tok = pb_xmalloc(BK * T * sizeof *b.tok);
    b.tok2 = pb_xmalloc(BK * T * sizeof *b.tok);
    b.len = pb_xmalloc(BK * sizeof *b.len);
    b.len2 = pb_xmalloc(BK * sizeof *b.len);
    b.score = pb_xcalloc(BK, sizeof *b.score);
    b.score2 = pb_xmalloc(BK * sizeof *b.score);
    b.accu = pb_xcalloc(BK * Ts, sizeof *b.accu);
    b.accu2 = pb_xmalloc(BK * Ts * sizeof *b.accu);
    b.word = pb_xmalloc(BK * sizeof *b.word);
    b.prev_row = pb_xmalloc(BK * sizeof *b.prev_row);
    b.cands = pb_xmalloc((size_t)b.C * sizeof *b.cands);
    b.best = pb_xmalloc((size_t)K * sizeof *b.best);
    b.top_id = pb_xmalloc((size_t)b.C * sizeof *b.top_id);
    b.top_lp = pb_xmalloc((size_t)b.C * sizeof *b.top_lp);
    int32_t *rows = pb_xmalloc(BK * sizeof *rows), *tokens = pb_xmalloc(BK * sizeof *tokens);
    int32_t *act = pb_xmalloc((batch ? (size_t)batch : 1) * sizeof *act);
    int32_t *steps = pb_xcalloc(batch ? (size_t)batch : 1, sizeof *steps);
    bool *open = pb_xmalloc(batch ? (size_t)batch : 1);
    float *logp = pb_malloc_or_err(BK * (size_t)V * sizeof *logp, "beam search's "
                                   "log-probabilities (reduce the batch or the beam)", e);
    float *attn = pb_malloc_or_err(BK * Ts * sizeof *attn, "beam search's attention (reduce "
                                   "the batch or the beam)", e);
    int rc = logp && attn ? 0 : -1;
    for (size_t slot = 0; slot < BK; slot++) {
        b.tok[slot * T] = PB_WMT16_BOS;
        b.len[slot] = 1;
        b.word[slot] = PB_WMT16_BOS;
        b.prev_row[slot] = (int32_t)(slot / K);  /* row s holds sentence s at first */
    }
    for (int s = 0; s < batch; s++)
        open[s] = true;
    int n_rows = batch;
    for (int idx = 1; !rc && idx < b.T; idx++) {
        int nact = 0;
        for (int s = 0; s < batch; s++) {
            if (!open[s])
                continue;
            bool ended = true;
            for (int j = 0; j < K && ended; j++)
                ended = b.word[s * K + j] == PB_WMT16_EOS;
            if (ended) {
                close_sentence(&b, s, idx);
                open[s] = false;
            } else {
                act[nact++] = s;
            }
        }
        if (nact == 0)
            break;
        int n = nact * K;
        for (int a = 0; a < nact; a++)
            for (int j = 0; j < K; j++) {
                int slot = act[a] * K + j;
                rows[a * K + j] = b.prev_row[slot];
                tokens[a * K + j] = b.word[slot];
                if (b.word[slot] != PB_WMT16_EOS)
                    b.len[slot]++;
            }
        if ((rc = pb_decode_select(d, rows, n, n_rows, e)))
            break;
        n_rows = n;
        if ((rc = pb_decode_step(d, tokens, n, logp, attn, e)))
            break;
        for (int a = 0; a < nact; a++) {
            int s = act[a];
            steps[s]++;
            for (int j = 0; j < K; j++) {
                int slot = s * K + j;
                if (b.word[slot] == PB_WMT16_EOS)
                    continue;
                const float *at = attn + (size_t)(a * K + j) * Ts;
                double *A = b.accu + (size_t)slot * Ts;
                for (int p = 0; p < src_len[s]; p++)
                    A[p] += at[p];
            }
            select_sentence(&b, s, idx, a, logp + (size_t)a * K * V);
        }
    }
    if (!rc) {
        pb_decoded_alloc(out, batch, b.T);
        for (int s = 0; s < batch; s++) {
            int best = s * K;
            for (int j = 1; j < K; j++)
                if (b.score[s * K + j] > b.score[best])
                    best = s * K + j;
            pb_decoded_row(out, s, b.tok + (size_t)best * T, b.len[best]);
            out->score[s] = b.score[best];
            out->steps[s] = steps[s];
        }
    }
    free(b.tok);
    free(b.tok2);
    free(b.len);
    free(b.len2);
    free(b.score);
    free(b.score2);
    free(b.accu);
    free(b.accu2);
    free(b.word);
    free(b.prev_row);
    free(b.cands);
    free(b.best);
    free(b.top_id);
    free(b.top_lp);
    free(rows);
    free(tokens);
    free(act);
    free(steps);
    free(open);
    free(logp);
    free(attn);
    return rc;
}
