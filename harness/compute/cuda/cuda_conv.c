/* harness/compute/cuda/cuda_conv.c — 2-D convolution on cuDNN (reference: cpu_conv.c):
 * the forward with its bias, the backward to the data, and the backward to the weights and
 * bias accumulated (beta = 1) into dw_acc and db_acc. Everything stays plain NCHW. Each
 * shape's descriptors (cuda_plan.c) and algorithms are chosen once and cached in struct
 * pb_cuda_algo_cache:
 * - by cuDNN's heuristics (cudnnGet*_v7), as PyTorch does unless cudnn.benchmark: no
 *   execution and no allocation of cuDNN's own while choosing, the same choice on every
 *   run of a shape, and the backward to the weights never runs into dw_acc;
 * - the first algorithm of the heuristics' order that succeeds, needs at most
 *   CONV_WS_MAX bytes of workspace and, with deterministic, is reported deterministic;
 * - math: CUDNN_FMA_MATH (FP32 FMA kernels only) unless tf32, then CUDNN_DEFAULT_MATH,
 *   which lets FP32 convolutions use TF32 tensor cores on sm_80 and later (PyTorch's
 *   allow_tf32 maps to the same): CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION may convert FP32
 *   data down to FP16 as well, more than --tf32 allows, and its algorithms are refused.
 * The workspace is pb_cuda_workspace's (PB_MEM_SCRATCH). */
#include <stdlib.h>
#include <string.h>

#include "harness/compute/cuda/cuda_internal.h"
#include "harness/compute/cuda/cuda_plan.h"

/* the most workspace an algorithm may take; cuDNN always has one that needs none */
#define CONV_WS_MAX ((size_t)256 << 20)

enum pass { PASS_FWD, PASS_BWD_DATA, PASS_BWD_FILTER, NPASS };
static const char *const pass_names[NPASS] = {"forward", "backward data", "backward filter"};

struct conv_algo {
    bool chosen;
    int algo;               /* cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t */
    cudnnMathType_t math;   /* what the convolution runs with */
    size_t ws;              /* its workspace bytes */
};

struct conv_entry {
    struct pb_conv_desc d;
    struct pb_shape x;
    struct pb_cuda_conv_plan p;
    struct conv_algo a[NPASS];
};

struct pb_cuda_algo_cache {
    struct conv_entry *e;
    int n, cap;
};

static const float one = 1.0f, zero = 0.0f;

void pb_cuda_algo_cache_destroy(struct pb_cuda_algo_cache *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        pb_cuda_conv_plan_destroy(&c->e[i].p);
    free(c->e);
    free(c);
}

static bool same_desc(const struct pb_conv_desc *a, const struct pb_conv_desc *b)
{
    return a->cin == b->cin && a->cout == b->cout && a->kh == b->kh && a->kw == b->kw &&
           a->sh == b->sh && a->sw == b->sw && a->ph == b->ph && a->pw == b->pw &&
           a->bias == b->bias;
}

/* The cached entry of d over x with output y (built on first use), or NULL with the
 * instance failed. */
static struct conv_entry *entry(struct pb_backend *be, const struct pb_conv_desc *d,
                                struct pb_shape x, struct pb_shape y)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    if (!cu->algos)
        cu->algos = pb_xcalloc(1, sizeof *cu->algos);
    struct pb_cuda_algo_cache *c = cu->algos;
    struct conv_entry *e = NULL;
    for (int i = 0; i < c->n && !e; i++)
        if (same_desc(&c->e[i].d, d) && pb_shape_eq(c->e[i].x, x))
            e = &c->e[i];
    if (!e) {
        struct pb_cuda_conv_plan p;
        cudnnStatus_t st = pb_cuda_conv_plan(&p, d, x, y);
        if (st == CUDNN_STATUS_BAD_PARAM) {
            pb_backend_fail(be,
                            "cuda backend, device %d: convolution %d to %d %dx%d stride %dx%d pad "
                            "%dx%d of %dx%dx%dx%d: cuDNN's output is %dx%dx%dx%d, the caller's "
                            "%dx%dx%dx%d",
                            be->device, d->cin, d->cout, d->kh, d->kw, d->sh, d->sw, d->ph,
                            d->pw, x.n, x.c, x.h, x.w, p.y_cudnn.n, p.y_cudnn.c, p.y_cudnn.h,
                            p.y_cudnn.w, y.n, y.c, y.h, y.w);
            return NULL;
        }
        if (!PB_CUDNN(be, st))
            return NULL;
        if (c->n == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 16;
            c->e = realloc(c->e, (size_t)c->cap * sizeof *c->e);
            if (!c->e)
                abort();
        }
        e = &c->e[c->n++];
        memset(e, 0, sizeof *e);
        e->d = *d;
        e->x = x;
        e->p = p;
    }
    if (!pb_shape_eq(e->p.y_cudnn, y)) {
        pb_backend_fail(be, "cuda backend, device %d: convolution of %dx%dx%dx%d: output "
                            "%dx%dx%dx%d, cuDNN's %dx%dx%dx%d",
                        be->device, x.n, x.c, x.h, x.w, y.n, y.c, y.h, y.w, e->p.y_cudnn.n,
                        e->p.y_cudnn.c, e->p.y_cudnn.h, e->p.y_cudnn.w);
        return NULL;
    }
    return e;
}

/* Whether a result of the heuristics may run on this instance. */
static bool acceptable(const struct pb_cuda *cu, cudnnStatus_t st, cudnnDeterminism_t det,
                       cudnnMathType_t math, size_t memory)
{
    if (st != CUDNN_STATUS_SUCCESS || memory > CONV_WS_MAX)
        return false;
    if (cu->deterministic && det != CUDNN_DETERMINISTIC)
        return false;
    if (math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
        return false;
    return cu->tf32 || math != CUDNN_TENSOR_OP_MATH;
}

/* The first acceptable result among n (each a perf struct of cuDNN's: status, algo,
 * memory, determinism, mathType) into a, or false. */
#define CHOOSE(cu, perf, n, a)                                                                 \
    do {                                                                                       \
        for (int i_ = 0; i_ < (n) && !(a)->chosen; i_++)                                       \
            if (acceptable((cu), (perf)[i_].status, (perf)[i_].determinism,                    \
                           (perf)[i_].mathType, (perf)[i_].memory)) {                          \
                (a)->chosen = true;                                                            \
                (a)->algo = (int)(perf)[i_].algo;                                              \
                (a)->math = (cu)->tf32 ? (perf)[i_].mathType : CUDNN_FMA_MATH;                 \
            }                                                                                  \
    } while (0)

/* e's algorithm for pass (chosen on first use), or NULL with the instance failed; the
 * convolution descriptor is left at its math type. */
static const struct conv_algo *algo(struct pb_backend *be, struct conv_entry *e, enum pass pass)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    struct conv_algo *a = &e->a[pass];
    const struct pb_cuda_conv_plan *p = &e->p;
    if (a->chosen)
        return PB_CUDNN(be, cudnnSetConvolutionMathType(p->conv, a->math)) ? a : NULL;
    if (!PB_CUDNN(be, cudnnSetConvolutionMathType(p->conv,
                                                  cu->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH)))
        return NULL;
    int n = 0;
    bool ok = false;
    if (pass == PASS_FWD) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        ok = PB_CUDNN(be, cudnnGetConvolutionForwardAlgorithm_v7(
                              cu->dnn, p->x, p->w, p->conv, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                              &n, perf));
        if (ok)
            CHOOSE(cu, perf, n, a);
        ok = ok && a->chosen && PB_CUDNN(be, cudnnSetConvolutionMathType(p->conv, a->math)) &&
             PB_CUDNN(be, cudnnGetConvolutionForwardWorkspaceSize(
                              cu->dnn, p->x, p->w, p->conv, p->y,
                              (cudnnConvolutionFwdAlgo_t)a->algo, &a->ws));
    } else if (pass == PASS_BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        ok = PB_CUDNN(be, cudnnGetConvolutionBackwardDataAlgorithm_v7(
                              cu->dnn, p->w, p->y, p->conv, p->x,
                              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf));
        if (ok)
            CHOOSE(cu, perf, n, a);
        ok = ok && a->chosen && PB_CUDNN(be, cudnnSetConvolutionMathType(p->conv, a->math)) &&
             PB_CUDNN(be, cudnnGetConvolutionBackwardDataWorkspaceSize(
                              cu->dnn, p->w, p->y, p->conv, p->x,
                              (cudnnConvolutionBwdDataAlgo_t)a->algo, &a->ws));
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        ok = PB_CUDNN(be, cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                              cu->dnn, p->x, p->y, p->conv, p->w,
                              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf));
        if (ok)
            CHOOSE(cu, perf, n, a);
        ok = ok && a->chosen && PB_CUDNN(be, cudnnSetConvolutionMathType(p->conv, a->math)) &&
             PB_CUDNN(be, cudnnGetConvolutionBackwardFilterWorkspaceSize(
                              cu->dnn, p->x, p->y, p->conv, p->w,
                              (cudnnConvolutionBwdFilterAlgo_t)a->algo, &a->ws));
    }
    if (ok)
        return a;
    if (!be->failed)
        pb_backend_fail(be,
                        "cuda backend, device %d: no cuDNN %s algorithm for convolution %d to %d "
                        "%dx%d of %dx%dx%dx%d among %d%s%s within %zu MiB of workspace",
                        be->device, pass_names[pass], e->d.cin, e->d.cout, e->d.kh, e->d.kw,
                        e->x.n, e->x.c, e->x.h, e->x.w, n,
                        cu->deterministic ? ", deterministic" : "",
                        cu->tf32 ? "" : ", without tensor-op math", CONV_WS_MAX >> 20);
    a->chosen = false;
    return NULL;
}

enum pb_layout pb_cuda_conv_layout(struct pb_backend *be, const struct pb_conv_desc *d,
                                   const struct pb_tensor *x)
{
    (void)be, (void)d, (void)x;
    return PB_LAYOUT_PLAIN;
}

/* x [n, cin, h, w], w [cout, cin, kh, kw], b [cout] or NULL → y [n, cout, oh, ow] */
void pb_cuda_conv_fwd(struct pb_backend *be, const struct pb_conv_desc *d, const struct pb_tensor *x,
                      const float *w, const float *b, struct pb_tensor *y)
{
    if (!pb_cuda_begin(be))
        return;
    struct pb_cuda *cu = pb_cuda_of(be);
    struct conv_entry *e = entry(be, d, x->shape, y->shape);
    const struct conv_algo *a = e ? algo(be, e, PASS_FWD) : NULL;
    if (!a)
        return;
    void *ws = pb_cuda_workspace(be, a->ws);
    if (a->ws && !ws)
        return;
    if (PB_CUDNN(be, cudnnConvolutionForward(cu->dnn, &one, e->p.x, x->data, e->p.w, w, e->p.conv,
                                             (cudnnConvolutionFwdAlgo_t)a->algo, ws, a->ws, &zero,
                                             e->p.y, y->data)) &&
        d->bias)
        PB_CUDNN(be, cudnnAddTensor(cu->dnn, &one, e->p.bias, b, &one, e->p.y, y->data));
}

/* dy [n, cout, oh, ow], w [cout, cin, kh, kw] → dx [n, cin, h, w] (overwritten) */
void pb_cuda_conv_bwd_data(struct pb_backend *be, const struct pb_conv_desc *d,
                           const struct pb_tensor *dy, const float *w, struct pb_tensor *dx)
{
    if (!pb_cuda_begin(be))
        return;
    struct pb_cuda *cu = pb_cuda_of(be);
    struct conv_entry *e = entry(be, d, dx->shape, dy->shape);
    const struct conv_algo *a = e ? algo(be, e, PASS_BWD_DATA) : NULL;
    if (!a)
        return;
    void *ws = pb_cuda_workspace(be, a->ws);
    if (a->ws && !ws)
        return;
    PB_CUDNN(be, cudnnConvolutionBackwardData(cu->dnn, &one, e->p.w, w, e->p.y, dy->data, e->p.conv,
                                              (cudnnConvolutionBwdDataAlgo_t)a->algo, ws, a->ws,
                                              &zero, e->p.x, dx->data));
}

/* x [n, cin, h, w], dy [n, cout, oh, ow] → dw_acc [cout, cin, kh, kw] +=, db_acc [cout] +=
 * (NULL when !d->bias) */
void pb_cuda_conv_bwd_weights(struct pb_backend *be, const struct pb_conv_desc *d,
                              const struct pb_tensor *x, const struct pb_tensor *dy, float *dw_acc,
                              float *db_acc)
{
    if (!pb_cuda_begin(be))
        return;
    struct pb_cuda *cu = pb_cuda_of(be);
    struct conv_entry *e = entry(be, d, x->shape, dy->shape);
    const struct conv_algo *a = e ? algo(be, e, PASS_BWD_FILTER) : NULL;
    if (!a)
        return;
    void *ws = pb_cuda_workspace(be, a->ws);
    if (a->ws && !ws)
        return;
    if (PB_CUDNN(be, cudnnConvolutionBackwardFilter(cu->dnn, &one, e->p.x, x->data, e->p.y,
                                                    dy->data, e->p.conv,
                                                    (cudnnConvolutionBwdFilterAlgo_t)a->algo, ws,
                                                    a->ws, &one, e->p.w, dw_acc)) &&
        d->bias && db_acc)
        PB_CUDNN(be, cudnnConvolutionBackwardBias(cu->dnn, &one, e->p.y, dy->data, &one, e->p.bias,
                                                  db_acc));
}
