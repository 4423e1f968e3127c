/* workloads/decode/common.c — what greedy and beam search share: the paper's options and
 * their checks, the checks of a decoder and its batch, the output rows, and one step
 * with its NaN check (decode_internal.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/datasets/dataset.h"
#include "workloads/decode/decode_internal.h"

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
    size_t count = (size_t)n * d->vocab;
    for (size_t i = 0; i < count; i++)
        if (isnan(logp[i]))
            return pb_err_set(e, "decoding: the decoder step gave a NaN log-probability (row "
                                 "%zu, token %zu)", i / d->vocab, i % d->vocab);
    return 0;
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
