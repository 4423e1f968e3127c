/* bench/bench_cuda_direct.c — the CUDA backend's GEMM and convolution forward against
 * direct cuBLAS (cublasSgemm, FP32 without TF32) and cuDNN calls (cudnnConvolutionForward,
 * FMA math, the fastest algorithm cudnnFindConvolutionForwardAlgorithm reports) on the
 * same shapes, one GPU: each timed as R calls enqueued then one synchronisation, on the
 * host clock, fastest of 5 such batches, so both carry their launch costs alike. Prints
 * the ratio backend / direct per shape (the goal: under 1.10) and exits 1 where one is
 * above --max-ratio R (scripts/gpu-check passes 1.10), 2 when the backend or the GPU
 * cannot be used. Built only with the CUDA backend (-Dcuda). */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/compute/backend.h"
#include "harness/compute/registry.h"

#define REPS 20
#define BATCHES 5

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, long code)
{
    fprintf(stderr, "bench_cuda_direct: %s failed (%ld)\n", what, code);
    exit(2);
}

#define CU(call)                                                                       \
    do {                                                                               \
        cudaError_t st_ = (call);                                                      \
        if (st_ != cudaSuccess)                                                        \
            die(#call, (long)st_);                                                     \
    } while (0)
#define CB(call)                                                                       \
    do {                                                                               \
        cublasStatus_t st_ = (call);                                                   \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                              \
            die(#call, (long)st_);                                                     \
    } while (0)
#define CD(call)                                                                       \
    do {                                                                               \
        cudnnStatus_t st_ = (call);                                                    \
        if (st_ != CUDNN_STATUS_SUCCESS)                                               \
            die(#call, (long)st_);                                                     \
    } while (0)

/* device memory of n floats, uniform in [-1, 1) */
static float *dev_rand_direct(size_t n, unsigned seed)
{
    float *h = malloc(n * sizeof *h), *d;
    srand(seed);
    for (size_t i = 0; i < n; i++)
        h[i] = 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;
    CU(cudaMalloc((void **)&d, n * sizeof *d));
    CU(cudaMemcpy(d, h, n * sizeof *d, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static float *dev_rand_backend(struct pb_backend *be, size_t n, unsigned seed)
{
    struct pb_err e;
    float *h = malloc(n * sizeof *h);
    float *d = pb_backend_alloc(be, n * sizeof *d, PB_MEM_ACTS, &e);
    if (!d) {
        fprintf(stderr, "bench_cuda_direct: %s\n", e.msg);
        exit(2);
    }
    srand(seed);
    for (size_t i = 0; i < n; i++)
        h[i] = 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;
    be->ops->upload(be, d, h, n * sizeof *d);
    be->ops->sync(be);
    free(h);
    return d;
}

static void backend_ok(struct pb_backend *be)
{
    struct pb_err e;
    be->ops->sync(be);
    if (pb_backend_status(be, &e)) {
        fprintf(stderr, "bench_cuda_direct: the backend failed: %s\n", e.msg);
        exit(2);
    }
}

static double worst = 0;
static double max_ratio = 0;

static void report(const char *what, double t_be, double t_direct)
{
    double r = t_be / t_direct;
    if (r > worst)
        worst = r;
    printf("%-48s backend %9.4f ms  direct %9.4f ms  ratio %.3f%s\n", what, t_be * 1e3,
           t_direct * 1e3, r, max_ratio > 0 && r > max_ratio ? "  ABOVE THE GOAL" : "");
}

/* ---- GEMM: row-major C[m, n] = op(A)·op(B), as backend.h ---- */

struct gemm_shape {
    bool ta, tb;
    int m, n, k;
};

static void bench_gemm(struct pb_backend *be, cublasHandle_t h, cudaStream_t s,
                       const struct gemm_shape *g)
{
    int lda = g->ta ? g->m : g->k, ldb = g->tb ? g->k : g->n, ldc = g->n;
    size_t na = (size_t)g->m * g->k, nb = (size_t)g->k * g->n, nc = (size_t)g->m * g->n;
    float *a = dev_rand_backend(be, na, 1), *b = dev_rand_backend(be, nb, 2);
    float *c = dev_rand_backend(be, nc, 3);
    float *da = dev_rand_direct(na, 1), *db = dev_rand_direct(nb, 2), *dc = dev_rand_direct(nc, 3);
    const float one = 1.0f, zero = 0.0f;
    double t_be = 1e30, t_d = 1e30;
    for (int bt = 0; bt <= BATCHES; bt++) {  /* batch 0 warms up */
        be->ops->sync(be);
        double t0 = now();
        for (int r = 0; r < REPS; r++)
            be->ops->gemm(be, g->ta, g->tb, g->m, g->n, g->k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
        be->ops->sync(be);
        double t = (now() - t0) / REPS;
        if (bt && t < t_be)
            t_be = t;
        /* column-major: Cᵀ[n, m] = op(B)ᵀ·op(A)ᵀ */
        CU(cudaStreamSynchronize(s));
        t0 = now();
        for (int r = 0; r < REPS; r++)
            CB(cublasSgemm(h, g->tb ? CUBLAS_OP_T : CUBLAS_OP_N, g->ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                           g->n, g->m, g->k, &one, db, ldb, da, lda, &zero, dc, ldc));
        CU(cudaStreamSynchronize(s));
        t = (now() - t0) / REPS;
        if (bt && t < t_d)
            t_d = t;
    }
    backend_ok(be);
    char what[96];
    snprintf(what, sizeof what, "gemm %c%c m %d n %d k %d", g->ta ? 'T' : 'N', g->tb ? 'T' : 'N',
             g->m, g->n, g->k);
    report(what, t_be, t_d);
    pb_backend_free(be, a), pb_backend_free(be, b), pb_backend_free(be, c);
    CU(cudaFree(da));
    CU(cudaFree(db));
    CU(cudaFree(dc));
}

/* ---- convolution forward, NCHW ---- */

struct conv_shape {
    int n, c, h, w, k, r, s, stride, pad;
};

static void bench_conv(struct pb_backend *be, cudnnHandle_t h, cudaStream_t st,
                       const struct conv_shape *cs)
{
    struct pb_conv_desc d = {cs->c, cs->k, cs->r, cs->s, cs->stride, cs->stride, cs->pad, cs->pad,
                             false};
    struct pb_shape xs = {cs->n, cs->c, cs->h, cs->w};
    struct pb_shape ys = {cs->n, cs->k, (cs->h + 2 * cs->pad - cs->r) / cs->stride + 1,
                          (cs->w + 2 * cs->pad - cs->s) / cs->stride + 1};
    size_t nx = pb_shape_count(xs), ny = pb_shape_count(ys);
    size_t nw = (size_t)cs->k * cs->c * cs->r * cs->s;
    struct pb_tensor x = {dev_rand_backend(be, nx, 4), xs, PB_LAYOUT_PLAIN};
    float *w = dev_rand_backend(be, nw, 5);
    enum pb_layout yl = be->ops->conv_layout(be, &d, &x);
    struct pb_tensor y = {dev_rand_backend(be, be->ops->layout_floats(be, ys, yl), 6), ys, yl};

    float *dx = dev_rand_direct(nx, 4), *dw = dev_rand_direct(nw, 5), *dy = dev_rand_direct(ny, 6);
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    CD(cudnnCreateTensorDescriptor(&xd));
    CD(cudnnCreateTensorDescriptor(&yd));
    CD(cudnnCreateFilterDescriptor(&wd));
    CD(cudnnCreateConvolutionDescriptor(&cd));
    CD(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, xs.n, xs.c, xs.h, xs.w));
    CD(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, ys.n, ys.c, ys.h, ys.w));
    CD(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, cs->k, cs->c, cs->r,
                                  cs->s));
    CD(cudnnSetConvolution2dDescriptor(cd, cs->pad, cs->pad, cs->stride, cs->stride, 1, 1,
                                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CD(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int found = 0;
    CD(cudnnFindConvolutionForwardAlgorithm(h, xd, wd, cd, yd, 8, &found, perf));
    int best = -1;
    for (int i = 0; i < found; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType == CUDNN_FMA_MATH &&
            (best < 0 || perf[i].time < perf[best].time))
            best = i;
    if (best < 0)
        die("cudnnFindConvolutionForwardAlgorithm: no FMA-math algorithm", found);
    void *ws = NULL;
    if (perf[best].memory)
        CU(cudaMalloc(&ws, perf[best].memory));
    const float one = 1.0f, zero = 0.0f;
    double t_be = 1e30, t_d = 1e30;
    for (int bt = 0; bt <= BATCHES; bt++) {
        be->ops->sync(be);
        double t0 = now();
        for (int r = 0; r < REPS; r++)
            be->ops->conv_fwd(be, &d, &x, w, NULL, &y);
        be->ops->sync(be);
        double t = (now() - t0) / REPS;
        if (bt && t < t_be)
            t_be = t;
        CU(cudaStreamSynchronize(st));
        t0 = now();
        for (int r = 0; r < REPS; r++)
            CD(cudnnConvolutionForward(h, &one, xd, dx, wd, dw, cd, perf[best].algo, ws,
                                       perf[best].memory, &zero, yd, dy));
        CU(cudaStreamSynchronize(st));
        t = (now() - t0) / REPS;
        if (bt && t < t_d)
            t_d = t;
    }
    backend_ok(be);
    char what[96];
    snprintf(what, sizeof what, "conv fwd %dx%dx%dx%d -> %d k%dx%d s%d p%d (algo %d)", cs->n,
             cs->c, cs->h, cs->w, cs->k, cs->r, cs->s, cs->stride, cs->pad, (int)perf[best].algo);
    report(what, t_be, t_d);
    if (ws)
        CU(cudaFree(ws));
    CD(cudnnDestroyTensorDescriptor(xd));
    CD(cudnnDestroyTensorDescriptor(yd));
    CD(cudnnDestroyFilterDescriptor(wd));
    CD(cudnnDestroyConvolutionDescriptor(cd));
    pb_backend_free(be, x.data), pb_backend_free(be, w), pb_backend_free(be, y.data);
    CU(cudaFree(dx));
    CU(cudaFree(dw));
    CU(cudaFree(dy));
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-ratio") && i + 1 < argc) {
            max_ratio = atof(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--max-ratio R]\n", argv[0]);
            return 2;
        }
    }
    struct pb_err e;
    struct pb_backend_cfg cfg = {.device = 0, .threads = 0, .tf32 = false, .deterministic = false};
    struct pb_backend *be = pb_backend_create("cuda", &cfg, &e);
    if (!be) {
        fprintf(stderr, "bench_cuda_direct: the cuda backend: %s\n", e.msg);
        return 2;
    }
    pb_backend_bind(be);
    CU(cudaSetDevice(0));
    cudaStream_t s;
    CU(cudaStreamCreate(&s));
    cublasHandle_t cb;
    CB(cublasCreate(&cb));
    CB(cublasSetStream(cb, s));
    CB(cublasSetMathMode(cb, CUBLAS_DEFAULT_MATH));
    cudnnHandle_t cd;
    CD(cudnnCreate(&cd));
    CD(cudnnSetStream(cd, s));

    /* the shapes of the small zoo's layers, and larger ones where launch costs vanish */
    static const struct gemm_shape gemms[] = {
        {false, true, 64, 500, 800},   {true, false, 500, 800, 64},  {false, false, 64, 800, 500},
        {false, true, 256, 1024, 1024}, {false, false, 2048, 512, 512}, {false, true, 1280, 256, 64},
    };
    static const struct conv_shape convs[] = {
        {64, 3, 32, 32, 64, 3, 3, 1, 1},   {32, 64, 56, 56, 64, 3, 3, 1, 1},
        {32, 128, 28, 28, 128, 3, 3, 1, 1}, {32, 256, 14, 14, 256, 1, 1, 1, 0},
        {64, 1, 28, 28, 20, 5, 5, 1, 0},   {32, 64, 32, 32, 128, 3, 3, 2, 1},
    };
    for (size_t i = 0; i < sizeof gemms / sizeof gemms[0]; i++)
        bench_gemm(be, cb, s, &gemms[i]);
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
        bench_conv(be, cd, s, &convs[i]);
    printf("worst ratio backend/direct: %.3f (goal: under 1.10)\n", worst);
    CD(cudnnDestroy(cd));
    CB(cublasDestroy(cb));
    CU(cudaStreamDestroy(s));
    pb_backend_destroy(be);
    return max_ratio > 0 && worst > max_ratio ? 1 : 0;
}
