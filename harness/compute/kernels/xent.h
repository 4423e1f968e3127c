/* harness/compute/kernels/xent.h — one row of softmax cross-entropy with label smoothing
 * (semantics §1.2, backend.h's softmax_xent): z [c] the row's logits, y its label, eps the
 * smoothing, off = eps / c; max subtracted, sums in order in double, as the CPU runs them. */
#ifndef PB_KERNELS_XENT_H
#define PB_KERNELS_XENT_H

#include "harness/compute/kernels/kernel.h"

/* the first index of the largest of z [c] (NaN never wins) */
PB_KERNEL int pb_k_xent_argmax(const float *z, int c)
{
    int am = 0;
    for (int j = 1; j < c; j++)
        if (z[j] > z[am])
            am = j;
    return am;
}

/* log Σ_j exp(z_j − m) + m over z [c], m the row's largest logit, summed in order in
 * double; *zsum = Σ_j z_j, in the same pass */
PB_KERNEL double pb_k_xent_lse(const float *z, int c, double m, double *zsum)
{
    double sum = 0, zs = 0;
    for (int j = 0; j < c; j++) {
        sum += exp((double)z[j] - m);
        zs += z[j];
    }
    *zsum = zs;
    return m + log(sum);
}

/* the row's loss −Σ_j t_j·log p_j with t = (1 − eps)·onehot(y) + off: lse − (1 − eps)·z_y
 * − off·Σ z */
PB_KERNEL double pb_k_xent_row_loss(double lse, float zy, double zsum, double eps, double off)
{
    return lse - (1.0 - eps) * zy - off * zsum;
}

/* ∂(loss sum / div)/∂z_j = (p_j − t_j) / div (div: the counted rows for the mean, or the
 * sentences for the paper's GNMT objective); label: j = y */
PB_KERNEL float pb_k_xent_dlogit(float zj, double lse, bool label, double eps, double off,
                                 int div)
{
    double t = off + (label ? 1.0 - eps : 0.0);
    return (float)((exp((double)zj - lse) - t) / div);
}

#endif
