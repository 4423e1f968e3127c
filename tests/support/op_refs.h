/* tests/support/op_refs.h — naive references of the backend ops (backend.h's contracts) for the
 * op tests (test_backend_ops, test_backend_cpu): straightforward loops in double (float
 * where the op is one rounding per element), written from the contracts, never from a
 * backend's code. Backward passes of the LSTM and the attention are central differences
 * of their double forward (step 1e-6: error ≲ 1e-9 of the loss). */
#ifndef PB_OP_REFS_H
#define PB_OP_REFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/compute/backend.h"

void pb_ref_to_float(float *dst, const double *src, size_t n);

/* y[m, ldc] = alpha·op(a)·op(b) + beta·c0 on the first n of each row, c0 past them */
void pb_ref_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, const float *c0, float *y, int ldc);

/* x plain [xs], w [cout, cin, kh, kw], b [cout] (read when d->bias), dy plain: y = conv(x,
 * w) + b, dx = convᵀ(dy, w), dw and db the gradients (all overwritten). */
void pb_ref_conv(const struct pb_conv_desc *d, struct pb_shape xs, const float *x, const float *w,
                 const float *b, const float *dy, double *y, double *dx, double *dw, double *db);

/* PyTorch's pooling output shape (dilation 1, ceil_mode's rule) and max_pool2d /
 * avg_pool2d with their backwards: y [ys], dx [xs] (overwritten). */
struct pb_shape pb_ref_pool_shape(const struct pb_pool_desc *d, struct pb_shape xs);
void pb_ref_pool(const struct pb_pool_desc *d, struct pb_shape xs, struct pb_shape ys,
                 const float *x, const float *dy, double *y, double *dx);

/* Batch norm over n, h, w per channel (training with the batch statistics, PyTorch's
 * running update, inference with given statistics), the fused ReLU as backend.h says. */
struct pb_ref_bn {
    struct pb_shape x;
    const float *xv, *dy, *gamma, *beta;   /* [x], [x], [c], [c] */
    float *run_mean, *run_var;             /* [c], updated */
    const float *inf_mean, *inf_var;       /* [c]: inference's statistics */
    float momentum, eps;
    bool relu;
    const float *mask_y;  /* relu: the training y whose > 0 masks dy (NULL: the reference's) */
};
/* y, dx [x], dgamma, dbeta [c] (one backward, not accumulated), y_infer [x] */
void pb_ref_bn(struct pb_ref_bn *r, float *y, float *dx, float *dgamma, float *dbeta,
               float *y_infer);

/* Softmax cross-entropy as backend.h: res = {mean loss, correct, counted rows}; dz [n, c]. */
void pb_ref_softmax_xent(const float *z, const int32_t *labels, int n, int c, float eps_ls,
                         int ignore, int grad_rows, float res[3], float *dz);

/* LSTM forward (PyTorch's gates i, f, g, o) from h0, c0 (NULL: zeros): y; h_last, c_last
 * when not NULL. With dy: dx and dw (w's layout) of L = Σ dy·y. */
void pb_ref_lstm(const struct pb_lstm_desc *d, const float *x, const float *w, const float *h0,
                 const float *c0, const float *dy, float *y, float *h_last, float *c_last,
                 float *dx, float *dw);

/* Normalised Bahdanau attention as backend.h: ctx, the weights a, the projected keys pk,
 * and dq, dk, dw (w's layout) of L = Σ dctx·ctx. lengths NULL: all tk. */
void pb_ref_attn(const struct pb_attn_desc *d, const float *q, const float *k,
                 const int32_t *lengths, const float *w, const float *dctx, float *ctx, float *a,
                 float *pk, float *dq, float *dk, float *dw);

/* The optimizer step of optim_kernels.h in double, on host arrays updated in place. */
struct pb_ref_optim {
    enum pb_optk_family family;
    struct pb_optim_coef c;
    bool first, nesterov, zero_grad;
    size_t n;
    float *w, *g, *buf, *m, *v, *sq, *d_last, *g_last;
};
void pb_ref_optim_step(struct pb_ref_optim *r);

/* w_hat[n] = w + scale·ΔW, ΔW of d's formula, in double */
void pb_ref_predict(const struct pb_dw_desc *d, float scale, size_t n, const float *w,
                    float *w_hat);

#endif
