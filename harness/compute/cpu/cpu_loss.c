/* harness/compute/cpu/cpu_loss.c — softmax cross-entropy with label smoothing, mean over the
 * rows, as PyTorch's CrossEntropyLoss(label_smoothing = eps) (semantics §1.2), in plain C:
 * numerically stable (max subtracted), accumulated in double, rows summed in order. With an
 * ignore index (padding tokens) the rows of that label are left out and the mean is over
 * the others: CrossEntropyLoss(ignore_index, label_smoothing), which is the MLPerf GNMT
 * LabelSmoothing's (1 − eps)·nll + eps·mean(−log p) summed over non-padding tokens, per
 * token. Each row by harness/compute/kernels/xent.h. */
#include "harness/compute/cpu/cpu_internal.h"
#include "harness/compute/kernels/xent.h"

/* logits [N,C] plain, labels [N] in [0, C); loss, correct and count to out (device
 * memory); M = the rows whose label is not `ignore` (< 0: all N); a label outside
 * [0, C) fails the instance (pb_backend_fail), as a device kernel's error flag does;
 * dlogits [N,C] = (softmax - target) / D when not NULL (0 on ignored rows), D = grad_rows
 * when > 0, else M,
 * target = (1 - eps) * onehot + eps / C */
void pb_cpu_softmax_xent(struct pb_backend *be, const float *logits, const int32_t *labels,
                         int n, int c, float eps_ls, int ignore, int grad_rows,
                         struct pb_xent_out *out, float *dlogits)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CHECK(n > 0 && c > 0);
    int counted = 0;
    for (int r = 0; r < n; r++) {
        if (labels[r] < 0 || labels[r] >= c) {   /* data the model cannot score */
            pb_backend_fail(be, "softmax_xent: row %d has label %d, outside the %d classes "
                            "[0, %d)", r, (int)labels[r], c, c);
            return;
        }
        counted += labels[r] != ignore;
    }
    int div = grad_rows > 0 ? grad_rows : counted;
    double *row_loss = pb_xmalloc((size_t)n * sizeof *row_loss);
    int correct = 0;
    double eps = eps_ls, off = eps / c;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static) \
    reduction(+ : correct)
    for (int r = 0; r < n; r++) {
        const float *z = logits + (size_t)r * (size_t)c;
        int y = labels[r];
        row_loss[r] = 0;
        if (y == ignore) {
            for (int j = 0; dlogits && j < c; j++)
                dlogits[(size_t)r * (size_t)c + j] = 0.0f;
            continue;
        }
        int am = pb_k_xent_argmax(z, c);
        correct += am == y;
        double zsum, lse = pb_k_xent_lse(z, c, z[am], &zsum);
        row_loss[r] = pb_k_xent_row_loss(lse, z[y], zsum, eps, off);
        if (dlogits) {
            float *d = dlogits + (size_t)r * (size_t)c;
            for (int j = 0; j < c; j++)
                d[j] = pb_k_xent_dlogit(z[j], lse, j == y, eps, off, div);
        }
    }
    double total = 0;
    for (int r = 0; r < n; r++)
        total += row_loss[r];
    free(row_loss);
    out->loss = counted ? (float)(total / counted) : 0.0f;
    out->correct = correct;
    out->count = counted;
}
