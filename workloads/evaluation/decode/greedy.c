/* workloads/evaluation/decode/greedy.c — greedy search (semantics §6.9), as the MLPerf GNMT
 * reference's greedy_search: every open sentence's row reads its last token (BOS first)
 * and takes the most probable next one, the lowest id among equals; a sentence closes
 * when it takes EOS (its row is dropped from the decoder's state) or when its output row
 * holds max_len tokens, BOS included, i.e. after max_len − 1 steps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/datasets/dataset.h"
#include "workloads/evaluation/decode/decode_internal.h"

int pb_decode_greedy(const struct pb_decoder *d, int batch, const int32_t *src_len, int max_len,
                     struct pb_decoded *out, struct pb_err *e)
{
    memset(out, 0, sizeof *out);
    if (pb_decode_check_len(max_len, e) || pb_decode_check_batch(d, batch, src_len, e))
        return -1;
    int V = d->vocab, n = batch;
    size_t b = batch ? (size_t)batch : 1;
    int32_t *rows = pb_xmalloc(b * (size_t)max_len * sizeof *rows);  /* [B, max_len] */
    int32_t *len = pb_xmalloc(b * sizeof *len);
    double *score = pb_xcalloc(b, sizeof *score);
    int32_t *steps = pb_xcalloc(b, sizeof *steps);
    int32_t *active = pb_xmalloc(b * sizeof *active);  /* sentence of each decoder row */
    int32_t *tokens = pb_xmalloc(b * sizeof *tokens), *keep = pb_xmalloc(b * sizeof *keep);
    float *logp = pb_malloc_or_err(b * (size_t)V * sizeof *logp, "greedy decoding's "
                                   "log-probabilities (reduce the batch)", e);
    float *attn = pb_malloc_or_err(b * (size_t)d->src_steps * sizeof *attn, "greedy decoding's "
                                   "attention (reduce the batch)", e);
    int rc = logp && attn ? 0 : -1;
    for (int s = 0; s < batch; s++) {
        rows[(size_t)s * max_len] = PB_WMT16_BOS;
        len[s] = 1;
        active[s] = s;
        tokens[s] = PB_WMT16_BOS;
    }
    for (int idx = 1; !rc && idx < max_len && n > 0; idx++) {
        if ((rc = pb_decode_step(d, tokens, n, logp, attn, e)))
            break;
        int kept = 0;
        for (int i = 0; i < n; i++) {
            int32_t best;
            float lp;
            pb_decode_top(logp + (size_t)i * V, V, 1, &best, &lp);
            int s = active[i];
            rows[(size_t)s * max_len + idx] = best;
            len[s]++;
            score[s] += lp;
            steps[s]++;
            if (best != PB_WMT16_EOS) {
                keep[kept] = i;
                active[kept] = s;
                tokens[kept] = best;
                kept++;
            }
        }
        if (kept < n && kept > 0)
            rc = pb_decode_select(d, keep, kept, n, e);
        n = kept;
    }
    if (!rc) {
        pb_decoded_alloc(out, batch, max_len);
        for (int s = 0; s < batch; s++) {
            pb_decoded_row(out, s, rows + (size_t)s * max_len, len[s]);
            out->score[s] = score[s];
            out->steps[s] = steps[s];
        }
    }
    free(rows);
    free(len);
    free(score);
    free(steps);
    free(active);
    free(tokens);
    free(keep);
    free(logp);
    free(attn);
    return rc;
}
