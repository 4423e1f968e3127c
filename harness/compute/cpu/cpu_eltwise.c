/* harness/compute/cpu/cpu_eltwise.c — the elementwise ops of the CPU backend in plain C:
 * ReLU and its backward, add, axpby and dropout with counter-based masks (semantics §1.7),
 * each element by harness/compute/kernels/eltwise.h and dropout.h. Each element is
 * computed alone, so the bits never depend on the thread count. */
#include "harness/compute/cpu/cpu_internal.h"
#include "harness/compute/kernels/dropout.h"
#include "harness/compute/kernels/eltwise.h"

/* y[n] = max(x, 0); NaN propagates as in PyTorch */
void pb_cpu_relu_fwd(struct pb_backend *be, const float *x, float *y, size_t n)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CPU_CHUNKED(be, n, lo, hi, {
        for (size_t i = lo; i < hi; i++)
            y[i] = pb_k_relu(x[i]);
    });
}

/* dx[n] = dy * (y > 0) */
void pb_cpu_relu_bwd(struct pb_backend *be, const float *y, const float *dy, float *dx, size_t n)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CPU_CHUNKED(be, n, lo, hi, {
        for (size_t i = lo; i < hi; i++)
            dx[i] = pb_k_relu_bwd(y[i], dy[i]);
    });
}

/* y[n] = a + b */
void pb_cpu_add(struct pb_backend *be, const float *a, const float *b, float *y, size_t n)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CPU_CHUNKED(be, n, lo, hi, {
        for (size_t i = lo; i < hi; i++)
            y[i] = pb_k_add(a[i], b[i]);
    });
}

/* y[n] = max(a + b, 0), NaN kept (relu_fwd of add's sum, in one pass) */
void pb_cpu_add_relu(struct pb_backend *be, const float *a, const float *b, float *y, size_t n)
{
    if (!pb_cpu_begin(be))
        return;
    PB_CPU_CHUNKED(be, n, lo, hi, {
        for (size_t i = lo; i < hi; i++)
            y[i] = pb_k_add_relu(a[i], b[i]);
    });
}

/* y[n] = alpha * x + beta * y; beta = 0 does not read y (as BLAS) */
void pb_cpu_axpby(struct pb_backend *be, float alpha, const float *x, float beta, float *y,
                  size_t n)
{
    if (!pb_cpu_begin(be))
        return;
    if (beta == 0.0f) {
        PB_CPU_CHUNKED(be, n, lo, hi, {
            for (size_t i = lo; i < hi; i++)
                y[i] = pb_k_scale(alpha, x[i]);
        });
        return;
    }
    PB_CPU_CHUNKED(be, n, lo, hi, {
        for (size_t i = lo; i < hi; i++)
            y[i] = pb_k_axpby(alpha, x[i], beta, y[i]);
    });
}

/* Uniforms drawn per run of elements (on the stack, 1 KiB) before they are applied. */
#define DROPOUT_RUN 256

/* y[k] = u[k] >= p ? x[k]·scale : 0 for k < m; y may be x */
static void dropout_apply(const float *x, float *y, const float *restrict u, size_t m, float p,
                          float scale)
{
#pragma omp simd
    for (size_t k = 0; k < m; k++)
        y[k] = pb_k_dropout(x[k], u[k], p, scale);
}

/* y[n] = x * mask / (1 - p), mask[i] = pb_rng_uniform4(key, first + i) >= p; dropped
 * elements are 0 (p = 1 drops all) and p = 0 is the identity. The uniforms come in runs
 * from rng.c's vector Philox, whose bits are pb_k_dropout_uniform's (tests/compute/test_kernels.c). */
void pb_cpu_dropout(struct pb_backend *be, const float *x, float *y, size_t n, float p,
                    struct pb_rng_key key, uint64_t first)
{
    if (!pb_cpu_begin(be))
        return;
    float scale = pb_k_dropout_scale(p);
    PB_CPU_CHUNKED(be, n, lo, hi, {
        float u[DROPOUT_RUN];  /* the uniforms of elements i0 … i0 + m − 1 */
        for (size_t i0 = lo; i0 < hi; i0 += DROPOUT_RUN) {
            size_t m = hi - i0 < DROPOUT_RUN ? hi - i0 : DROPOUT_RUN;
            pb_rng_uniform4_run(key, first + i0, u, m);
            dropout_apply(x + i0, y + i0, u, m, p, scale);
        }
    });
}
