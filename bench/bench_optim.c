/* bench/bench_optim.c — how close the CPU backend's optimizer update and weight prediction
 * come to the machine's memory rate: elementwise loops over N floats that should run at
 * about the speed of a plain memcpy moving the same bytes. Measured in one run, with 1
 * and with 2 threads:
 *   - the update as the worker runs it (pb_optim_step, which also zeroes the gradient
 *     for the next accumulation) of sgd, sgdm, sgdm keeping d_last (what PipeOptim's
 *     code form reads), adam, adamw, rmsprop; bytes = (floats read + floats written
 *     per element) × 4 × N: g, W and each state buffer read, W, each state buffer,
 *     each kept copy and g (= 0) written;
 *   - the prediction Ŵ = W − lr·s·ΔW (pb_predict) of the paper form of sgdm (ΔW =
 *     buf), the code form of sgdm (u·buf + (1−τ)·d_last), adam's (m, v) and rmsprop's
 *     code form (g_last / (√sq + ε)); bytes = inputs read + Ŵ written;
 * each as GB/s and as a ratio to memcpy(dst, src, bytes / 2) (bytes / 2 read, bytes / 2
 * written; with 2 threads each copies its half) timed right after it, rep by rep, so
 * that both rates are taken under the same machine load (goal ≥ 0.7). memcpy writes
 * fresh lines while the update writes back the lines it read, so a ratio above 1 is
 * possible. Each figure is the median of REPS timed repetitions after WARMUP untimed
 * ones (clock_gettime(CLOCK_MONOTONIC)); before each, untimed, the gradient gets fresh
 * values again. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "harness/base/rng.h"
#include "harness/compute/backend.h"
#include "harness/compute/registry.h"
#include "harness/optim/optim.h"
#include "predictors/predictor.h"

#define N ((size_t)1 << 22)
#define WARMUP 2
#define REPS 9

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "bench_optim: out of host memory\n");
        exit(2);
    }
    return p;
}

/* The memcpy reference: dst[0, bytes) = src[0, bytes), each of the nthreads threads
 * copying one contiguous share in one call; returns the seconds it took. */
static double memcpy_once(char *dst, const char *src, size_t bytes, int nthreads)
{
    double t0 = bench_now();
#pragma omp parallel num_threads(nthreads)
    {
        size_t k = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        size_t lo = bytes * k / nt, hi = bytes * (k + 1) / nt;
        memcpy(dst + lo, src + lo, hi - lo);
    }
    return bench_now() - t0;
}

struct mcpy {
    char *src, *dst;  /* [bytes / 2 of the largest case] */
    int nthreads;
};

/* One kernel under test: an optimizer configuration and, for a prediction, its form. */
struct bcase {
    const char *name;
    const char *opt;        /* pb_optim_cfg_from_name */
    bool keep_d_last, keep_g_last;
    int form;               /* −1: the update; else the prediction form */
    int floats;             /* floats read + written per element */
};

static const struct bcase cases[] = {
    {"update sgd", "sgd", false, false, -1, 4},
    {"update sgdm", "sgdm", false, false, -1, 6},
    {"update sgdm +d_last", "sgdm", true, false, -1, 7},
    {"update adam", "adam", false, false, -1, 8},
    {"update adamw", "adamw", false, false, -1, 8},
    {"update rmsprop", "rmsprop", false, false, -1, 6},
    {"predict sgdm paper (buf)", "sgdm", false, false, PB_PREDICT_PAPER, 3},
    {"predict sgdm code (buf, d_last)", "sgdm", true, false, PB_PREDICT_CODE, 4},
    {"predict adam paper (m, v)", "adam", false, false, PB_PREDICT_PAPER, 4},
    {"predict rmsprop code (g_last, sq)", "rmsprop", false, true, PB_PREDICT_CODE, 4},
};
#define MAX_FLOATS 8

static float *dev_alloc(struct pb_backend *be, size_t n)
{
    struct pb_err e;
    float *d = pb_backend_alloc(be, n * sizeof *d, PB_MEM_SCRATCH, &e);
    if (!d) {
        fprintf(stderr, "bench_optim: %s\n", e.msg);
        exit(2);
    }
    return d;
}

static void bench_case(struct pb_backend *be, const struct bcase *bc, const float *gh,
                       const float *wh, struct mcpy *mc)
{
    struct pb_err e;
    struct pb_optim_cfg cfg;
    struct pb_optim o;
    if (pb_optim_cfg_from_name(&cfg, bc->opt, &e) != 0) {
        fprintf(stderr, "bench_optim: %s\n", e.msg);
        exit(2);
    }
    cfg.keep_d_last = bc->keep_d_last;
    cfg.keep_g_last = bc->keep_g_last;
    if (pb_optim_init(&o, be, &cfg, N, &e) != 0) {
        fprintf(stderr, "bench_optim: %s\n", e.msg);
        exit(2);
    }
    float *w = dev_alloc(be, N), *g = dev_alloc(be, N), *w_hat = dev_alloc(be, N);
    be->ops->upload(be, w, wh, N * sizeof *w);
    size_t bytes = (size_t)bc->floats * N * sizeof(float);
    double tk[REPS], tm[REPS];
    for (int r = -WARMUP; r < REPS; r++) {
        be->ops->upload(be, g, gh, N * sizeof *g);
        be->ops->sync(be);
        double t0 = bench_now();
        if (bc->form < 0) {
            pb_optim_step(&o, be, w, g);
        } else {
            if (o.t == 0)
                pb_optim_step(&o, be, w, g);
            t0 = bench_now();
            pb_predict(be, &o, (enum pb_predict_variant)bc->form, 2.0f, w, w_hat);
        }
        be->ops->sync(be);
        double t1 = bench_now();
        double tc = memcpy_once(mc->dst, mc->src, bytes / 2, mc->nthreads);
        if (r >= 0) {
            tk[r] = t1 - t0;
            tm[r] = tc;
        }
    }
    double k = (double)bytes / bench_median(tk, REPS) * 1e-9;
    double m = (double)bytes / bench_median(tm, REPS) * 1e-9;
    printf("  %-34s %5d %9.2f %9.2f %7.2f\n", bc->name, bc->floats * 4, k, m, k / m);
    pb_backend_free(be, w);
    pb_backend_free(be, g);
    pb_backend_free(be, w_hat);
    pb_optim_finish(&o, be);
}

int main(void)
{
    printf("pipebench optimizer benchmark: CPU backend, N = %zu floats; median of %d reps "
           "after %d warm-up\n", N, REPS, WARMUP);
    float *gh = xmalloc(N * sizeof *gh), *wh = xmalloc(N * sizeof *wh);
    pb_rng_fill_uniform(pb_rng_key(PB_RNG_DATA, 7, 1, 0, 0), 0, gh, N, -1.0f, 1.0f);
    pb_rng_fill_uniform(pb_rng_key(PB_RNG_DATA, 7, 2, 0, 0), 0, wh, N, -1.0f, 1.0f);
    size_t half = (size_t)MAX_FLOATS * N * sizeof(float) / 2;
    struct mcpy mc = {.src = xmalloc(half), .dst = xmalloc(half)};
    memset(mc.src, 1, half);
    memset(mc.dst, 0, half);
    static const int threads[2] = {1, 2};
    for (int t = 0; t < 2; t++) {
        struct pb_err e;
        struct pb_backend_cfg cfg = {.device = 0, .threads = threads[t]};
        struct pb_backend *be = pb_backend_create("cpu", &cfg, &e);
        if (!be) {
            fprintf(stderr, "bench_optim: %s\n", e.msg);
            return 2;
        }
        mc.nthreads = threads[t];
        printf("\nthreads %d:\n", threads[t]);
        printf("  %-34s %5s %9s %9s %7s\n", "kernel", "B/el", "GB/s", "memcpy", "/memcpy");
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            bench_case(be, &cases[i], gh, wh, &mc);
        pb_backend_destroy(be);
    }
    free(mc.src);
    free(mc.dst);
    free(gh);
    free(wh);
    return 0;
}
