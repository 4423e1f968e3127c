/* harness/compute/cpu/cpu_loss.c — softmax cross-entropy with label smoothing, mean over the
 * rows, as PyTorch's CrossEntropyLoss(label_smoothing = eps) (semantics §1.2), in plain C:
 * numerically stable (max subtracted), accumulated in double, rows summed in order. */
#include <math.h>

#include "harness/compute/cpu/cpu_internal.h"

/* logits [N,C] plain, labels [N] in [0, C); loss and correct to out (device memory);
 * dlogits [N,C] = (softmax - target) / N when not NULL,
 * target = (1 - eps) * onehot + eps / C */
void pb_cpu_softmax_xent(struct pb_backend *be, const float *logits, const int32_t *labels,
                         int n, int c, float eps_ls, struct pb_xent_out *out, float *dlogits)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CHECK(n > 0 && c > 0);
    double *row_loss = pb_xmalloc((size_t)n * sizeof *row_loss);
    int correct = 0;
    double eps = eps_ls, off = eps / c;
#pragma omp parallel for num_threads(pb_cpu_of(be)->nthreads) schedule(static) \
    reduction(+ : correct)
    for (int r = 0; r < n; r++) {
        const float *z = logits + (size_t)r * (size_t)c;
        int y = labels[r];
        PB_CHECK(y >= 0 && y < c);
        int am = 0;
        for (int j = 1; j < c; j++)
            if (z[j] > z[am])
                am = j;
        correct += am == y;
        double m = z[am], sum = 0, zsum = 0;
        for (int j = 0; j < c; j++) {
            sum += exp((double)z[j] - m);
            zsum += z[j];
        }
        double lse = m + log(sum);
        row_loss[r] = lse - (1.0 - eps) * z[y] - off * zsum;
        if (dlogits) {
            float *d = dlogits + (size_t)r * (size_t)c;
            for (int j = 0; j < c; j++) {
                double t = off + (j == y ? 1.0 - eps : 0.0);
                d[j] = (float)((exp((double)z[j] - lse) - t) / n);
            }
        }
    }
    double total = 0;
    for (int r = 0; r < n; r++)
        total += row_loss[r];
    free(row_loss);
    out->loss = (float)(total / n);
    out->correct = correct;
}
