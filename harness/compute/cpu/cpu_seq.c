/* harness/compute/cpu/cpu_seq.c — the sequence ops of the CPU backend in plain C: the
 * embedding lookup and its row-sparse backward, the mean over time masked by each
 * sequence's length, and the strided gather of each sequence's steps in or against
 * time order (the reverse direction of a bidirectional LSTM). The backward sums go over tokens (or steps) in order, each output
 * column owned by one thread, so the bits never depend on the thread count. The index
 * math and each element by harness/compute/kernels/seq.h. */
#include "harness/compute/cpu/cpu_internal.h"
#include "harness/compute/kernels/seq.h"

/* The token tok as a row index, or -1 (and the instance failed) outside [0, vocab). */
static long token_row(struct pb_backend *be, float tok, int vocab)
{
    long r = pb_k_token_row(tok, vocab);
    if (r < 0) {
        pb_backend_fail(be, "embedding: token %g is not a whole number in [0, %d) (the "
                            "dataset's vocabulary is larger than the model's?)", (double)tok, vocab);
        return -1;
    }
    return r;
}

/* y[n, dim] = table[tok[i]] */
void pb_cpu_embedding_fwd(struct pb_backend *be, const float *tok, size_t n, const float *table,
                          int vocab, int dim, float *y)
{
    if (!pb_cpu_begin(be))
        return;
    for (size_t i = 0; i < n; i++)
        if (token_row(be, tok[i], vocab) < 0)
            return;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (size_t i = 0; i < n; i++) {
        pb_k_gather_row(table + (size_t)tok[i] * (size_t)dim, y + i * (size_t)dim, dim);
    }
}

#define EMB_COLS 16

/* dtable_acc[tok[i]] += dy[i] for tok[i] != padding, tokens in order per column block */
void pb_cpu_embedding_bwd(struct pb_backend *be, const float *tok, size_t n, const float *dy,
                          int vocab, int dim, int padding, float *dtable_acc)
{
    if (!pb_cpu_begin(be))
        return;
    for (size_t i = 0; i < n; i++)
        if (token_row(be, tok[i], vocab) < 0)
            return;
    int nblocks = (dim + EMB_COLS - 1) / EMB_COLS;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int blk = 0; blk < nblocks; blk++) {
        int j0 = blk * EMB_COLS, j1 = j0 + EMB_COLS < dim ? j0 + EMB_COLS : dim;
        for (size_t i = 0; i < n; i++) {
            long r = (long)tok[i];
            if (r == padding)
                continue;
            pb_k_scatter_add_row(dtable_acc + (size_t)r * (size_t)dim, dy + i * (size_t)dim,
                                 j0, j1);
        }
    }
}

/* The length of sequence b: lengths[b] (checked to be in [1, steps]), or steps. */
static int seq_len(struct pb_backend *be, const char *op, const int32_t *lengths, int b,
                   int steps)
{
    if (!lengths)
        return steps;
    int len = lengths[b];
    if (len < 1 || len > steps) {
        pb_backend_fail(be, "%s: sequence %d has length %d, outside [1, %d]", op, b, len, steps);
        return -1;
    }
    return len;
}

/* y[b, f] = mean over t < len_b of x[b, t, f], summed in order in double */
void pb_cpu_seq_mean_fwd(struct pb_backend *be, const float *x, const int32_t *lengths, int batch,
                         int steps, int f, float *y)
{
    if (!pb_cpu_begin(be))
        return;
    for (int b = 0; b < batch; b++)
        if (seq_len(be, "seq_mean", lengths, b, steps) < 0)
            return;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int b = 0; b < batch; b++) {
        int len = pb_k_seq_len(lengths, b, steps);
        for (int j = 0; j < f; j++) {
            double s = 0;
            for (int t = 0; t < len; t++)
                s += x[pb_k_seq_row(b, steps, t) * f + j];
            y[(size_t)b * f + j] = pb_k_seq_mean(s, len);
        }
    }
}

/* dx[b, t, f] = dy[b, f] / len_b for t < len_b, else 0 */
void pb_cpu_seq_mean_bwd(struct pb_backend *be, const float *dy, const int32_t *lengths,
                         int batch, int steps, int f, float *dx)
{
    if (!pb_cpu_begin(be))
        return;
    for (int b = 0; b < batch; b++)
        if (seq_len(be, "seq_mean", lengths, b, steps) < 0)
            return;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int b = 0; b < batch; b++) {
        int len = pb_k_seq_len(lengths, b, steps);
        for (int t = 0; t < steps; t++)
            for (int j = 0; j < f; j++)
                dx[pb_k_seq_row(b, steps, t) * f + j] =
                    pb_k_seq_mean_bwd(dy[(size_t)b * f + j], t, len);
    }
}

/* y[b, t, :f] = x[b, reverse ? len_b − 1 − t : t, :f] for t < len_b, else 0; the rows of
 * x and y lie x_stride and y_stride floats apart */
void pb_cpu_seq_gather(struct pb_backend *be, const float *x, int x_stride,
                       const int32_t *lengths, int batch, int steps, int f, bool reverse,
                       float *y, int y_stride)
{
    if (!pb_cpu_begin(be))
        return;
    for (int b = 0; b < batch; b++)
        if (seq_len(be, "seq_gather", lengths, b, steps) < 0)
            return;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static)
    for (int b = 0; b < batch; b++) {
        int len = pb_k_seq_len(lengths, b, steps);
        for (int t = 0; t < steps; t++) {
            float *dst = y + pb_k_seq_row(b, steps, t) * (size_t)y_stride;
            int src_t = pb_k_seq_src_step(t, len, reverse);
            const float *src = x + pb_k_seq_row(b, steps, src_t) * (size_t)x_stride;
            for (int j = 0; j < f; j++)
                dst[j] = pb_k_seq_gather(src, j, t, len);
        }
    }
}
