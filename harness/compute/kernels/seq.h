/* harness/compute/kernels/seq.h — the index math and one element (or row) of the sequence
 * ops (backend.h): the embedding's token row, gather and scatter-add row; each sequence's
 * length, its steps in or against time order, and the mean over time masked by length. */
#ifndef PB_KERNELS_SEQ_H
#define PB_KERNELS_SEQ_H

#include "harness/compute/kernels/kernel.h"

/* The token tok as a row of a table of vocab rows, or -1 when it is not a whole number
 * in [0, vocab). */
PB_KERNEL long pb_k_token_row(float tok, int vocab)
{
    long r = (long)tok;
    return tok != (float)r || r < 0 || r >= vocab ? -1 : r;
}

/* out[j] = row[j] for j < dim: the embedding's forward, one token */
PB_KERNEL void pb_k_gather_row(const float *row, float *out, int dim)
{
    for (int j = 0; j < dim; j++)
        out[j] = row[j];
}

/* g[j] += d[j] for j in [j0, j1): the embedding's backward, one token's columns */
PB_KERNEL void pb_k_scatter_add_row(float *g, const float *d, int j0, int j1)
{
    for (int j = j0; j < j1; j++)
        g[j] += d[j];
}

/* the length of sequence b: lengths[b], or steps without lengths */
PB_KERNEL int pb_k_seq_len(const int32_t *lengths, int b, int steps)
{
    return lengths ? lengths[b] : steps;
}

/* the row of step t of sequence b in a [batch, steps, ·] tensor */
PB_KERNEL size_t pb_k_seq_row(int b, int steps, int t)
{
    return (size_t)b * steps + t;
}

/* the step that output step t reads: len − 1 − t reversed (t < len), else t */
PB_KERNEL int pb_k_seq_src_step(int t, int len, bool reverse)
{
    return reverse ? len - 1 - t : t;
}

/* the gathered element j of output step t: src[j] (src the step it reads, not read past
 * the sequence's end), or 0 past the end */
PB_KERNEL float pb_k_seq_gather(const float *src, int j, int t, int len)
{
    return t < len ? src[j] : 0.0f;
}

/* the mean of len steps from their sum in double */
PB_KERNEL float pb_k_seq_mean(double sum, int len)
{
    return (float)(sum / len);
}

/* the mean's backward at step t: dy / len within the sequence, 0 past its end */
PB_KERNEL float pb_k_seq_mean_bwd(float dy, int t, int len)
{
    return t < len ? (float)((double)dy / len) : 0.0f;
}

#endif
