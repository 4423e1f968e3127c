/* harness/compute/backend.h — the compute interface a stage runs on (DESIGN principle 5).
 * A backend instance owns device memory and kernels. The CPU backend (harness/compute/cpu/)
 * runs on oneDNN; the CUDA backend (harness/compute/cuda/) implements the same table with
 * cuBLAS/cuDNN. All tensors are float32; every pointer passed to an op is device
 * memory of the same instance. Ops are synchronous in program order; `sync` waits
 * for queued work (a no-op on the CPU) before a timer is read.
 * Gradient outputs named *_acc are accumulated (+=), never overwritten, so a stage's
 * flat gradient buffer collects the gradients of several micro-batches. */
#ifndef PB_BACKEND_H
#define PB_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/base/err.h"
#include "harness/base/rng.h"
#include "harness/compute/memory.h"
#include "harness/compute/tensor.h"

struct pb_optim;

/* 2-D convolution, groups = 1, dilation = 1. Weights [cout, cin, kh, kw] (PyTorch
 * OIHW), bias [cout]. Output size: (in + 2p - k) / s + 1. */
struct pb_conv_desc {
    int cin, cout, kh, kw, sh, sw, ph, pw;
    bool bias;
};

enum pb_pool_kind { PB_POOL_MAX, PB_POOL_AVG };

/* 2-D pooling. Average pooling divides by the window clipped to the padded input
 * (PyTorch's count_include_pad = true) unless exclude_pad; ceil_mode rounds the
 * output size up as PyTorch does (a window must start inside the input or left pad). */
struct pb_pool_desc {
    enum pb_pool_kind kind;
    int kh, kw, sh, sw, ph, pw;
    bool ceil_mode, exclude_pad;
};

struct pb_backend;

struct pb_backend_ops {
    const char *name;
    /* Device memory is host memory from posix_memalign (freed by free()): a tensor can
     * move from one such instance to another, or into a message, without a copy. */
    bool host_memory;
    void (*destroy)(struct pb_backend *be);
    void (*sync)(struct pb_backend *be);

    /* memory: raw device allocations (accounting is done by pb_backend_alloc) */
    void *(*alloc)(struct pb_backend *be, size_t bytes);  /* NULL when out of memory */
    void (*free)(struct pb_backend *be, void *p);
    void (*upload)(struct pb_backend *be, void *dst, const void *src_host, size_t bytes);
    void (*download)(struct pb_backend *be, void *dst_host, const void *src, size_t bytes);
    void (*copy)(struct pb_backend *be, void *dst, const void *src, size_t bytes);
    void (*fill)(struct pb_backend *be, float *dst, float value, size_t n);

    /* layouts: dst->shape == src->shape, dst->layout chosen by the caller */
    void (*reorder)(struct pb_backend *be, const struct pb_tensor *src, struct pb_tensor *dst);

    /* C[M,N] = alpha * op(A) * op(B) + beta * C, row-major; op(A) is [M,K]. */
    void (*gemm)(struct pb_backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                 float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                 float *c, int ldc);
    /* y[N,C] += b[C] per row;  db_acc[C] += sum over rows of dy[N,C] */
    void (*bias_add)(struct pb_backend *be, float *y, const float *b, int n, int c);
    void (*bias_grad)(struct pb_backend *be, const float *dy, float *db_acc, int n, int c);

    /* convolution. conv_layout: the layout the forward writes y in, given x. */
    enum pb_layout (*conv_layout)(struct pb_backend *be, const struct pb_conv_desc *d,
                                  const struct pb_tensor *x);
    void (*conv_fwd)(struct pb_backend *be, const struct pb_conv_desc *d,
                     const struct pb_tensor *x, const float *w, const float *b,
                     struct pb_tensor *y);
    /* dx (shape and layout of x, set by the caller) = conv^T(dy, w) */
    void (*conv_bwd_data)(struct pb_backend *be, const struct pb_conv_desc *d,
                          const struct pb_tensor *dy, const float *w, struct pb_tensor *dx);
    /* dw_acc += dL/dw, db_acc += dL/db (db_acc may be NULL when !d->bias) */
    void (*conv_bwd_weights)(struct pb_backend *be, const struct pb_conv_desc *d,
                             const struct pb_tensor *x, const struct pb_tensor *dy,
                             float *dw_acc, float *db_acc);

    /* pooling: y keeps x's layout; the workspace (max pooling) carries the argmax
     * from a training forward to the backward. */
    size_t (*pool_workspace)(struct pb_backend *be, const struct pb_pool_desc *d,
                             const struct pb_tensor *x, const struct pb_tensor *y);
    void (*pool_fwd)(struct pb_backend *be, const struct pb_pool_desc *d,
                     const struct pb_tensor *x, struct pb_tensor *y, void *workspace);
    void (*pool_bwd)(struct pb_backend *be, const struct pb_pool_desc *d,
                     const struct pb_tensor *dy, const void *workspace, struct pb_tensor *dx);

    /* batch normalisation over N, H, W per channel. Training: writes the batch mean
     * and biased variance [C] to mean/var; inference: reads them (running stats).
     * y and dx keep x's layout. */
    void (*bn_fwd)(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                   const float *beta, float *mean, float *var, float eps, bool train,
                   struct pb_tensor *y);
    void (*bn_bwd)(struct pb_backend *be, const struct pb_tensor *x, const struct pb_tensor *dy,
                   const float *gamma, const float *mean, const float *var, float eps,
                   struct pb_tensor *dx, float *dgamma_acc, float *dbeta_acc);

    /* elementwise over n floats (any layout: padded channels stay zero) */
    void (*relu_fwd)(struct pb_backend *be, const float *x, float *y, size_t n);
    /* dx = dy * (y > 0) */
    void (*relu_bwd)(struct pb_backend *be, const float *y, const float *dy, float *dx, size_t n);
    /* y = a + b */
    void (*add)(struct pb_backend *be, const float *a, const float *b, float *y, size_t n);
    /* y = alpha * x + beta * y */
    void (*axpby)(struct pb_backend *be, float alpha, const float *x, float beta, float *y, size_t n);
    /* y = x * mask / (1 - p), mask[i] = uniform(key, first + i) >= p; plain layout.
     * The same call with dy, dx is the backward. */
    void (*dropout)(struct pb_backend *be, const float *x, float *y, size_t n, float p,
                    struct pb_rng_key key, uint64_t first);

    /* channel concatenation of k tensors of equal n, h, w into out (layout set by
     * the caller), and its backward: slices of dout into douts[i] (layouts set). */
    void (*concat)(struct pb_backend *be, int k, const struct pb_tensor *const *ins,
                   struct pb_tensor *out);
    void (*split)(struct pb_backend *be, const struct pb_tensor *dout, int k,
                  struct pb_tensor *const *douts);

    /* Softmax cross-entropy, mean over the N rows, label smoothing eps_ls as PyTorch:
     * target = (1 - eps_ls) * onehot + eps_ls / C. logits [N,C] plain, labels [N].
     * Writes the mean loss and the count of rows whose argmax equals the label to
     * host memory; dlogits [N,C] = (softmax - target) / N when not NULL. */
    void (*softmax_xent)(struct pb_backend *be, const float *logits, const int32_t *labels,
                         int n, int c, float eps_ls, float *loss_host, int *correct_host,
                         float *dlogits);

    /* optimizers and predictors over a flat buffer (optim.h) */
    void (*optim_step)(struct pb_backend *be, struct pb_optim *o, float *w, const float *g);
    /* w_hat = w - lr * s * ΔW, ΔW from o's state (SPEC §3); reads, never changes, o */
    void (*predict)(struct pb_backend *be, const struct pb_optim *o, int variant, float s,
                    const float *w, float *w_hat);
};

struct pb_alloc_table;

struct pb_backend {
    const struct pb_backend_ops *ops;
    void *impl;
    int nthreads;
    size_t mem_cur[PB_MEM_NKINDS];
    size_t mem_peak[PB_MEM_NKINDS];
    struct pb_alloc_table *allocs;
};

/* Creates a backend by name ("cpu", "cuda"); nthreads <= 0 means all cores. */
struct pb_backend *pb_backend_create(const char *name, int nthreads, struct pb_err *e);
void pb_backend_destroy(struct pb_backend *be);

/* The CPU backend; harness/compute/cpu/. */
struct pb_backend *pb_backend_cpu_create(int nthreads, struct pb_err *e);

/* Accounted allocations: NULL and an error naming the kind and size on failure. */
void *pb_backend_alloc(struct pb_backend *be, size_t bytes, enum pb_mem_kind kind, struct pb_err *e);
void pb_backend_free(struct pb_backend *be, void *p);
/* Allocates a tensor of the given shape and layout. */
int pb_tensor_alloc(struct pb_backend *be, struct pb_tensor *t, struct pb_shape s,
                    enum pb_layout l, enum pb_mem_kind kind, struct pb_err *e);
void pb_backend_reset_peaks(struct pb_backend *be);
/* Hands an allocation of a host-memory backend over: disown removes it from be's
 * accounting (returning its bytes) and leaves it to the caller; adopt accounts a
 * posix_memalign'ed block as be's own. */
size_t pb_backend_disown(struct pb_backend *be, void *p);
void pb_backend_adopt(struct pb_backend *be, void *p, size_t bytes, enum pb_mem_kind kind);

/* Shared helpers of the backend implementations (harness/compute/backend.c). */
void pb_backend_init_common(struct pb_backend *be, const struct pb_backend_ops *ops, void *impl,
                            int nthreads);
void pb_backend_finish_common(struct pb_backend *be);

#endif
