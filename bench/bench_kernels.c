/* bench/bench_kernels.c — how close the CPU backend's convolutions come to its sgemm
 * (design §2.5: in oneDNN's blocked formats convolutions run at about the
 * sgemm rate). Measured in one run, with 1 thread and with all cores:
 *   - sgemm GFLOP/s at M = N = K = 1024 (2·M·N·K flops);
 *   - conv2d forward + backward data + backward weights GFLOP/s (3 × 2·N·Cout·Hout·
 *     Wout·Cin·kh·kw flops) for VGG 3x3 64→64 at 32x32 (batch 32), ResNet 1x1
 *     256→64 at 28x28 (batch 32), both with the input in the backend's blocked
 *     layout, and AlexNet conv1 11x11/4 pad 2 3→64 at 224x224 (batch 16, input
 *     plain), each with its ratio to the sgemm rate of the same run (goal ≥ 0.9) and the
 *     algorithm the backend runs it with (pb_cpu_conv_algorithm): the flops are the
 *     direct sum's, so under Winograd, which does fewer multiplications, the rate is the
 *     direct-equivalent one and may pass the sgemm rate.
 * Each figure is the median of REPS timed repetitions after WARMUP untimed ones
 * (clock_gettime(CLOCK_MONOTONIC)); the per-pass rates come from the same reps. Each
 * convolution's reps are followed by REPS sgemm reps, and its ratio is to their median,
 * so that both rates are taken under the same machine load. */
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "harness/compute/backend.h"
#include "harness/compute/cpu/cpu_internal.h"
#include "harness/base/rng.h"
#include "harness/compute/registry.h"

#define WARMUP 2
#define REPS 7

/* Random and zeroed device buffers of this benchmark (bench_util.h). */
static float *dev_rand(struct pb_backend *be, size_t n, uint64_t tag)
{
    return bench_dev_rand(be, n, 7, tag, "bench_kernels");
}

static struct pb_tensor tensor(struct pb_backend *be, struct pb_shape s, enum pb_layout l)
{
    return bench_tensor(be, s, l, "bench_kernels");
}

static const char *layout_name(enum pb_layout l)
{
    return l == PB_LAYOUT_NCHW8C ? "nChw8c" : l == PB_LAYOUT_NCHW16C ? "nChw16c" : "nchw";
}

#define GEMM_N 1024
#define GEMM_SAMPLES (REPS * 5)

/* The sgemm operands, and every sgemm time taken in the run. */
struct gemm_bench {
    float *a, *b, *c;
    double t[GEMM_SAMPLES];
    int nt;
};

/* One timed C[N,N] = A[N,N] B[N,N]; returns the seconds and records them. */
static double sgemm_once(struct pb_backend *be, struct gemm_bench *g)
{
    int n = GEMM_N;
    double t0 = bench_now();
    be->ops->gemm(be, false, false, n, n, n, 1.0f, g->a, n, g->b, n, 0.0f, g->c, n);
    be->ops->sync(be);
    double t = bench_now() - t0;
    if (g->nt < GEMM_SAMPLES)
        g->t[g->nt++] = t;
    return t;
}

static double gflops_gemm(double seconds)
{
    return 2.0 * GEMM_N * GEMM_N * GEMM_N / seconds * 1e-9;
}

struct conv_bench {
    const char *name;
    int n, h, w;
    struct pb_conv_desc d;
    bool blocked;  /* input in the backend's blocked layout (else plain) */
};

/* One convolution's fwd + bwd reps, then as many sgemm reps, so that its ratio is to the
 * sgemm rate measured under the same conditions (a shared machine's load varies). */
static void bench_conv(struct pb_backend *be, const struct conv_bench *cb, struct gemm_bench *g)
{
    const struct pb_conv_desc *d = &cb->d;
    struct pb_shape xs = {cb->n, d->cin, cb->h, cb->w};
    struct pb_tensor xp = {dev_rand(be, pb_shape_count(xs), 10), xs, PB_LAYOUT_PLAIN};
    enum pb_layout xl = cb->blocked ? be->ops->conv_layout(be, d, &xp) : PB_LAYOUT_PLAIN;
    struct pb_tensor x = tensor(be, xs, xl);
    be->ops->reorder(be, &xp, &x);
    enum pb_layout yl = be->ops->conv_layout(be, d, &x);
    struct pb_shape ys = {cb->n, d->cout, (cb->h + 2 * d->ph - d->kh) / d->sh + 1,
                          (cb->w + 2 * d->pw - d->kw) / d->sw + 1};
    struct pb_tensor y = tensor(be, ys, yl), dy = tensor(be, ys, yl), dx = tensor(be, xs, xl);
    struct pb_tensor dyp = {dev_rand(be, pb_shape_count(ys), 11), ys, PB_LAYOUT_PLAIN};
    be->ops->reorder(be, &dyp, &dy);
    size_t nw = (size_t)d->cout * d->cin * d->kh * d->kw;
    float *w = dev_rand(be, nw, 12), *b = dev_rand(be, d->cout, 13);
    float *dw = dev_rand(be, nw, 14), *db = dev_rand(be, d->cout, 15);
    double tf[REPS], td[REPS], tw[REPS], tt[REPS], tg[REPS];
    for (int r = 0; r < WARMUP + REPS; r++) {
        double t0 = bench_now();
        be->ops->conv_fwd(be, d, &x, w, d->bias ? b : NULL, &y);
        double t1 = bench_now();
        be->ops->conv_bwd_data(be, d, &dy, w, &dx);
        double t2 = bench_now();
        be->ops->conv_bwd_weights(be, d, &x, &dy, dw, d->bias ? db : NULL);
        be->ops->sync(be);
        double t3 = bench_now();
        if (r >= WARMUP) {
            int i = r - WARMUP;
            tf[i] = t1 - t0, td[i] = t2 - t1, tw[i] = t3 - t2, tt[i] = t3 - t0;
        }
    }
    sgemm_once(be, g);
    for (int r = 0; r < REPS; r++)
        tg[r] = sgemm_once(be, g);
    double flops = 2.0 * cb->n * d->cout * ys.h * ys.w * (double)d->cin * d->kh * d->kw;
    double all = 3 * flops / bench_median(tt, REPS) * 1e-9;
    double sgemm = gflops_gemm(bench_median(tg, REPS));
    static const char *const algo[] = {
        [PB_CPU_CONV_DIRECT] = "direct", [PB_CPU_CONV_WINOGRAD] = "Winograd (direct-equivalent)",
        [PB_CPU_CONV_THIN] = "direct on nChw8c",
        [PB_CPU_CONV_GEMM] = "sgemm products", [PB_CPU_CONV_S2D] = "space to depth"};
    printf("  %-37s %-7s %-7s %7.1f %6.2f   fwd %6.1f  bwd-data %6.1f  bwd-weights %6.1f  %s\n",
           cb->name, layout_name(xl), layout_name(yl), all, all / sgemm,
           flops / bench_median(tf, REPS) * 1e-9, flops / bench_median(td, REPS) * 1e-9,
           flops / bench_median(tw, REPS) * 1e-9, algo[pb_cpu_conv_algorithm(be, d, xs)]);
    pb_backend_free(be, xp.data);
    pb_backend_free(be, dyp.data);
    pb_backend_free(be, x.data);
    pb_backend_free(be, y.data);
    pb_backend_free(be, dy.data);
    pb_backend_free(be, dx.data);
    pb_backend_free(be, w);
    pb_backend_free(be, b);
    pb_backend_free(be, dw);
    pb_backend_free(be, db);
}

static const struct conv_bench convs[] = {
    {"VGG 3x3 64->64 32x32 pad 1, b32", 32, 32, 32, {64, 64, 3, 3, 1, 1, 1, 1, true}, true},
    {"ResNet 1x1 256->64 28x28, b32", 32, 28, 28, {256, 64, 1, 1, 1, 1, 0, 0, false}, true},
    {"AlexNet 11x11/4 pad 2 3->64 224, b16", 16, 224, 224, {3, 64, 11, 11, 4, 4, 2, 2, true},
     false},
};

int main(void)
{
    const dnnl_version_t *v = dnnl_version();
    printf("pipebench kernel benchmark: CPU backend on oneDNN %d.%d.%d; median of %d reps "
           "after %d warm-up\n", v->major, v->minor, v->patch, REPS, WARMUP);
    static const int threads[2] = {1, 0};
    for (int t = 0; t < 2; t++) {
        struct pb_err e;
        struct pb_backend_cfg bc = {.device = 0, .threads = threads[t]};
        struct pb_backend *be = pb_backend_create("cpu", &bc, &e);
        if (!be) {
            fprintf(stderr, "bench_kernels: %s\n", e.msg);
            return 2;
        }
        size_t nn = (size_t)GEMM_N * GEMM_N;
        struct gemm_bench g = {.a = dev_rand(be, nn, 1), .b = dev_rand(be, nn, 2),
                               .c = dev_rand(be, nn, 3)};
        for (int r = 0; r < WARMUP; r++)
            sgemm_once(be, &g);
        g.nt = 0;
        for (int r = 0; r < REPS; r++)
            sgemm_once(be, &g);
        printf("\nthreads %d:\n", pb_cpu_of(be)->nthreads);
        printf("  %-37s %-7s %-7s %7s %6s   (GFLOP/s per pass; algorithm)\n", "conv fwd+bwd", "x", "y",
               "GFLOP/s", "/sgemm");
        for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
            bench_conv(be, &convs[i], &g);
        printf("  %-37s %-7s %-7s %7.1f   (median of all %d sgemm reps of this run)\n",
               "sgemm 1024^3", "", "", gflops_gemm(bench_median(g.t, g.nt)), g.nt);
        pb_backend_free(be, g.a);
        pb_backend_free(be, g.b);
        pb_backend_free(be, g.c);
        pb_backend_destroy(be);
    }
    return 0;
}
