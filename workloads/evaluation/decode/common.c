/* workloads/evaluation/decode/common.c — what greedy and beam search share: the paper's options and
 * their checks, the checks of a decoder and its batch, the output rows, one step with
 * its NaN check, and the best tokens of a row (decode_internal.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/datasets/dataset.h"
#include "workloads/evaluation/decode/decode_internal.h"

void pb_decode_opts_paper(struct pb_decode_opts *o)
{
    *o = (struct pb_decode_opts){.beam = 5, .max_len = 80, .len_norm_factor = 0.6,
                                 .len_norm_const = 5.0, .cov_penalty = 0.1,
                                 .coverage = PB_COVERAGE_SLOT};
}

int pb_decode_check_len(int max_len, struct pb_err *e)
{
    if (max_len < 1)
        return pb_err_set(e, "decoding: the maximum length must be at least 1 (got %d); it "
                             "counts BOS and EOS, the paper's is 80", max_len);
    return 0;
}

int pb_decode_check(const struct pb_decode_opts *o, struct pb_err *e)
{
    if (o->beam < 1)
        return pb_err_set(e, "decoding: the beam size must be at least 1 (got %d); pass "
                             "--beam 5 for the paper's beam search (greedy decoding is the "
                             "default)", o->beam);
    if (pb_decode_check_len(o->max_len, e))
        return -1;
    if (!isfinite(o->len_norm_factor) || !isfinite(o->cov_penalty))
        return pb_err_set(e, "decoding: the length normalisation factor and the coverage "
                             "penalty must be finite (got %g and %g); the paper's are 0.6 "
                             "and 0.1", o->len_norm_factor, o->cov_penalty);
    if (!isfinite(o->len_norm_const) || o->len_norm_const <= -1)
        return pb_err_set(e, "decoding: the length normalisation constant must be above -1 "
                             "(got %g); the paper's is 5.0", o->len_norm_const);
    if (o->coverage != PB_COVERAGE_SLOT && o->coverage != PB_COVERAGE_LINEAGE)
        return pb_err_set(e, "decoding: unknown coverage form %d", (int)o->coverage);
    return 0;
}

int pb_decode_check_batch(const struct pb_decoder *d, int batch, const int32_t *src_len,
                          struct pb_err *e)
{
    if (d->vocab < 1 || d->src_steps < 1 || !d->step || !d->select)
        return pb_err_set(e, "decoding: the decoder needs a vocabulary and source steps of at "
                             "least 1 and both callbacks (got V %d, Tsrc %d)", d->vocab,
                          d->src_steps);
    if (batch < 0)
        return pb_err_set(e, "decoding: a batch of %d sentences", batch);
    for (int s = 0; s < batch; s++)
        if (src_len[s] < 1 || src_len[s] > d->src_steps)
            return pb_err_set(e, "decoding: sentence %d has a source length of %d, outside "
                                 "[1, %d] (the decoder's source steps)", s, (int)src_len[s],
                              d->src_steps);
    return 0;
}

void pb_decoded_alloc(struct pb_decoded *out, int batch, int max_len)
{
    size_t b = batch ? (size_t)batch : 1;
    out->batch = batch;
    out->max_len = max_len;
    out->tokens = pb_xcalloc(b * (size_t)max_len, sizeof *out->tokens);
    out->len = pb_xcalloc(b, sizeof *out->len);
    out->score = pb_xcalloc(b, sizeof *out->score);
    out->steps = pb_xcalloc(b, sizeof *out->steps);
}

void pb_decoded_finish(struct pb_decoded *out)
{
    free(out->tokens);
    free(out->len);
    free(out->score);
    free(out->steps);
    memset(out, 0, sizeof *out);
}

void pb_decoded_row(struct pb_decoded *out, int s, const int32_t *row, int len)
{
    int32_t *dst = out->tokens + (size_t)s * out->max_len;
    memcpy(dst, row, (size_t)len * sizeof *dst);
    for (int t = len; t < out->max_len; t++)
        dst[t] = PB_WMT16_PAD;
    out->len[s] = len;
}

int pb_decode_step(const struct pb_decoder *d, const int32_t *tokens, int n, float *logp,
                   float *attn, struct pb_err *e)
{
    if (d->step(d->ctx, tokens, n, logp, attn, e))
        return pb_err_prefix(e, "decoding: ");
    for (int r = 0; r < n; r++) {
        const float *lp = logp + (size_t)r * d->vocab;
        int bad = 0;
        for (int v = 0; v < d->vocab; v++)  /* an or-reduction, so that it vectorises */
            bad |= lp[v] != lp[v];
        for (int v = 0; bad && v < d->vocab; v++)
            if (isnan(lp[v]))
                return pb_err_set(e, "decoding: the decoder step gave a NaN log-probability "
                                     "(row %d, token %d)", r, v);
    }
    return 0;
}

/* Puts (v, x) into the best m of id, val (at most C, best first, after its equals). */
static void put(int32_t *id, float *val, int *m, int C, int v, float x)
{
    int i = *m < C ? (*m)++ : C - 1;
    while (i > 0 && val[i - 1] < x) {
        val[i] = val[i - 1];
        id[i] = id[i - 1];
        i--;
    }
    val[i] = x;
    id[i] = v;
}

void pb_decode_top(const float *lp, int V, int C, int32_t *id, float *val)
{
    enum { BLOCK = 16 };
    int m = 0, v = 0;
    for (; v < V && m < C; v++)
        put(id, val, &m, C, v, lp[v]);
    float thr = val[C - 1];
    for (; v < V && v % BLOCK; v++)
        if (lp[v] > thr) {
            put(id, val, &m, C, v, lp[v]);
            thr = val[C - 1];
        }
    /* whole blocks: one vectorised test whether any element beats the C-th best */
    for (; v + BLOCK <= V; v += BLOCK) {
        int hit = 0;
        for (int k = 0; k < BLOCK; k++)
            hit |= lp[v + k] > thr;
        if (!hit)
            continue;
        for (int k = 0; k < BLOCK; k++)
            if (lp[v + k] > thr) {
                put(id, val, &m, C, v + k, lp[v + k]);
                thr = val[C - 1];
            }
    }
    for (; v < V; v++)
        if (lp[v] > thr) {
            put(id, val, &m, C, v, lp[v]);
            thr = val[C - 1];
        }
}

int pb_decode_select(const struct pb_decoder *d, const int32_t *rows, int n, int old_n,
                     struct pb_err *e)
{
    bool same = n == old_n;
    for (int i = 0; same && i < n; i++)
        same = rows[i] == i;
    if (same)
        return 0;
    if (d->select(d->ctx, rows, n, e))
        return pb_err_prefix(e, "decoding: ");
    return 0;
}
