/* harness/compute/kernels/eltwise.h — one element of the elementwise ops (backend.h:
 * relu_fwd, relu_bwd, add, add_relu, axpby): ReLU with NaN kept as PyTorch's, its
 * backward masked by the output, sums and the BLAS axpby, each product rounded alone. */
#ifndef PB_KERNELS_ELTWISE_H
#define PB_KERNELS_ELTWISE_H

#include "harness/compute/kernels/kernel.h"

/* max(x, 0); NaN propagates */
PB_KERNEL float pb_k_relu(float x)
{
    return (x > 0.0f || x != x) ? x : 0.0f;
}

/* dx = dy where the forward's output y > 0, else 0 */
PB_KERNEL float pb_k_relu_bwd(float y, float dy)
{
    return y > 0.0f ? dy : 0.0f;
}

PB_KERNEL float pb_k_add(float a, float b)
{
    return a + b;
}

/* relu(a + b), the sum rounded first */
PB_KERNEL float pb_k_add_relu(float a, float b)
{
    return pb_k_relu(a + b);
}

/* alpha·x + beta·y, two rounded products and a rounded sum (no fused multiply-add) */
PB_KERNEL float pb_k_axpby(float alpha, float x, float beta, float y)
{
    return alpha * x + beta * y;
}

/* alpha·x: axpby with beta = 0, which does not read y (as BLAS) */
PB_KERNEL float pb_k_scale(float alpha, float x)
{
    return alpha * x;
}

#endif
