/* bench/bench_lstm.c — the CPU backend's LSTM in training (its own C kernel over sgemm
 * tiles, harness/compute/cpu/cpu_lstm.c, "new") against oneDNN's LSTM primitive in
 * training (bench/lstm_dnnl.c, "old", which the backend ran before), measured in one
 * run (the machine is shared and noisy), on residual-lstm's paper shape (B 256, T 200,
 * I = H = 128) and GNMT's (B 64, T 50, H 1024, I 1024 and 2048; and B 8, the batch of
 * bench_seq's paper-width stack), and the small presets' (residual-lstm B 256, T 64,
 * I = H = 32; GNMT B 64, T 20, I = H = 64), at 1 and 2 threads:
 * the training forward and the backward (dx and the weight gradients), each timed once
 * per round after one warm-up of both, old and new interleaved; the table shows the
 * wall-clock medians over the rounds and the medians of the per-round ratios new / old
 * (< 1: the C kernel is faster) of wall-clock time and of the process's CPU time (all
 * threads, spinning included; at 1 thread it is what the kernel cost, whatever else
 * the machine runs). Then, per shape, how far new is from old (max |new − old| over
 * max |old| for y, dx and the weight gradients) and whether each kernel's bits are the
 * same at 1 and 2 threads. `bench_lstm [SUBSTRING]` runs only the shapes whose name
 * contains SUBSTRING. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "bench/lstm_dnnl.h"
#include "harness/compute/backend.h"
#include "harness/compute/registry.h"

#define MAX_ROUNDS 5

struct shape {
    const char *name;
    struct pb_lstm_desc d;
    int rounds;
};

static const struct shape shapes[] = {
    {"residual-lstm", {256, 200, 128, 128}, 5},
    {"residual-small", {256, 64, 32, 32}, 5},
    {"gnmt-small", {64, 20, 64, 64}, 5},
    {"gnmt-i1024", {64, 50, 1024, 1024}, 3},
    {"gnmt-i2048", {64, 50, 2048, 1024}, 3},
    {"gnmt-b8-i1024", {8, 50, 1024, 1024}, 3},
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0], NTHREADS = 2 };
static const int threads[NTHREADS] = {1, 2};

/* The buffers of one shape on one backend. */
struct run {
    struct pb_lstm_desc d;
    size_t nx, ny, nw;
    float *x, *w, *dy, *y, *dx, *dw;
    void *ws_old, *ws_new;
};

static void *dev_zero(struct pb_backend *be, size_t bytes)
{
    struct pb_err e;
    void *p = pb_backend_alloc(be, bytes, PB_MEM_ACTS, &e);
    if (!p) {
        fprintf(stderr, "bench_lstm: %s\n", e.msg);
        exit(2);
    }
    memset(p, 0, bytes);
    return p;
}

static void run_init(struct pb_backend *be, const struct pb_lstm_desc *d, struct run *r)
{
    r->d = *d;
    size_t bt = (size_t)d->batch * d->steps, g = 4 * (size_t)d->hidden;
    r->nx = bt * d->input;
    r->ny = bt * d->hidden;
    r->nw = g * ((size_t)d->input + d->hidden + 2);
    r->x = bench_dev_rand(be, r->nx, 11, 1, "bench_lstm");
    r->w = bench_dev_rand(be, r->nw, 11, 2, "bench_lstm");
    /* PyTorch's init scale U(−1/√H, 1/√H), so that the gates do not saturate */
    float s = 1.0f / sqrtf((float)d->hidden);
    for (size_t i = 0; i < r->nw; i++)
        r->w[i] *= s;
    r->dy = bench_dev_rand(be, r->ny, 11, 3, "bench_lstm");
    r->y = dev_zero(be, r->ny * sizeof(float));
    r->dx = dev_zero(be, r->nx * sizeof(float));
    r->dw = dev_zero(be, r->nw * sizeof(float));
    r->ws_old = dev_zero(be, bench_lstm_dnnl_workspace(be, d));
    r->ws_new = dev_zero(be, be->ops->lstm_workspace(be, d));
}

static void run_free(struct pb_backend *be, struct run *r)
{
    void *bufs[] = {r->x, r->w, r->dy, r->y, r->dx, r->dw, r->ws_old, r->ws_new};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        pb_backend_free(be, bufs[i]);
}

/* The process's CPU time in seconds, all threads. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One training forward (fwd) or backward of the old or the new kernel: wall seconds,
 * and CPU seconds into *cpu. */
static double op_once(struct pb_backend *be, struct run *r, bool new_kernel, bool fwd, double *cpu)
{
    double t0 = bench_now(), c0 = cpu_now();
    if (new_kernel && fwd)
        be->ops->lstm_fwd(be, &r->d, r->x, r->w, r->y, r->ws_new, NULL);
    else if (new_kernel)
        be->ops->lstm_bwd(be, &r->d, r->x, r->w, r->y, r->dy, r->ws_new, r->dx, r->dw);
    else if (fwd)
        bench_lstm_dnnl_fwd(be, &r->d, r->x, r->w, r->y, r->ws_old, NULL);
    else
        bench_lstm_dnnl_bwd(be, &r->d, r->x, r->w, r->y, r->dy, r->ws_old, r->dx, r->dw);
    *cpu = cpu_now() - c0;
    return bench_now() - t0;
}

/* FNV-1a of n floats' bytes. */
static uint64_t bits_hash(const float *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n * sizeof(float); i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static double max_abs(const float *a, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

/* max |a − b| / max |b| */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double v = fabs((double)a[i] - b[i]);
        m = v > m ? v : m;
    }
    double s = max_abs(b, n);
    return s > 0 ? m / s : m;
}

/* What one kernel gives on a shape: y, dx and the weight gradients from zero. */
struct result {
    float *y, *dx, *dw;
    uint64_t hash;  /* of all three */
};

static void result_take(struct pb_backend *be, struct run *r, bool new_kernel, struct result *o)
{
    memset(r->dw, 0, r->nw * sizeof(float));
    double cpu;
    op_once(be, r, new_kernel, true, &cpu);
    op_once(be, r, new_kernel, false, &cpu);
    o->y = malloc(r->ny * sizeof(float));
    o->dx = malloc(r->nx * sizeof(float));
    o->dw = malloc(r->nw * sizeof(float));
    if (!o->y || !o->dx || !o->dw) {
        fprintf(stderr, "bench_lstm: out of host memory\n");
        exit(2);
    }
    memcpy(o->y, r->y, r->ny * sizeof(float));
    memcpy(o->dx, r->dx, r->nx * sizeof(float));
    memcpy(o->dw, r->dw, r->nw * sizeof(float));
    o->hash = bits_hash(o->y, r->ny) ^ 3 * bits_hash(o->dx, r->nx) ^ 7 * bits_hash(o->dw, r->nw);
}

static void result_free(struct result *o)
{
    free(o->y);
    free(o->dx);
    free(o->dw);
}

/* hash[shape][old/new][threads] for the bits table */
static uint64_t hashes[NSHAPES][2][NTHREADS];
static double diffs[NSHAPES][3];

static void bench_shape(struct pb_backend *be, int ti, int si)
{
    const struct shape *sh = &shapes[si];
    struct run r;
    run_init(be, &sh->d, &r);
    double t[2][2][MAX_ROUNDS], c[2][2][MAX_ROUNDS];  /* [old/new][fwd/bwd][round] */
    for (int k = 0; k < 2; k++) {
        op_once(be, &r, k, true, &c[k][0][0]);
        op_once(be, &r, k, false, &c[k][1][0]);
    }
    for (int round = 0; round < sh->rounds; round++)
        for (int k = 0; k < 2; k++)
            for (int f = 0; f < 2; f++)
                t[k][f][round] = op_once(be, &r, k, f == 0, &c[k][f][round]);
    printf("  %d  %-14s %4d %4d %5d %5d", threads[ti], sh->name, sh->d.batch, sh->d.steps,
           sh->d.input, sh->d.hidden);
    for (int f = 0; f < 2; f++) {
        double ratio[MAX_ROUNDS], cratio[MAX_ROUNDS];
        for (int i = 0; i < sh->rounds; i++) {
            ratio[i] = t[1][f][i] / t[0][f][i];
            cratio[i] = c[1][f][i] / c[0][f][i];
        }
        printf("  %8.1f %8.1f %5.2f %5.2f", 1e3 * bench_median(t[0][f], sh->rounds),
               1e3 * bench_median(t[1][f], sh->rounds), bench_median(ratio, sh->rounds),
               bench_median(cratio, sh->rounds));
    }
    printf("\n");
    fflush(stdout);
    struct result o, n;
    result_take(be, &r, false, &o);
    result_take(be, &r, true, &n);
    hashes[si][0][ti] = o.hash;
    hashes[si][1][ti] = n.hash;
    if (ti == 0) {
        diffs[si][0] = rel_diff(n.y, o.y, r.ny);
        diffs[si][1] = rel_diff(n.dx, o.dx, r.nx);
        diffs[si][2] = rel_diff(n.dw, o.dw, r.nw);
    }
    result_free(&o);
    result_free(&n);
    run_free(be, &r);
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    printf("pipebench LSTM benchmark: the CPU backend's C kernel (new) vs oneDNN's LSTM "
           "primitive (old); training forward and backward, each once per round after a "
           "warm-up, old and new interleaved; medians over 3 rounds (GNMT's paper width) or 5 "
           "(the others)\n");
    printf("                                          forward: wall ms    new/old    "
           "backward: wall ms    new/old\n");
    printf("  th  shape             B    T     I     H      old      new  wall   cpu"
           "       old      new  wall   cpu\n");
    for (int ti = 0; ti < NTHREADS; ti++) {
        struct pb_err e;
        struct pb_backend_cfg bc = {.device = 0, .threads = threads[ti]};
        struct pb_backend *be = pb_backend_create("cpu", &bc, &e);
        if (!be) {
            fprintf(stderr, "bench_lstm: %s\n", e.msg);
            return 2;
        }
        for (int si = 0; si < NSHAPES; si++)
            if (!filter || strstr(shapes[si].name, filter))
                bench_shape(be, ti, si);
        pb_backend_destroy(be);
    }
    printf("  shape           max|new-old|/max|old|: y        dx       dw      bits at 1 and 2 "
           "threads: old   new\n");
    for (int si = 0; si < NSHAPES; si++) {
        if (filter && !strstr(shapes[si].name, filter))
            continue;
        printf("  %-14s %31.1e %8.1e %8.1e %32s %5s\n", shapes[si].name, diffs[si][0],
               diffs[si][1], diffs[si][2], hashes[si][0][0] == hashes[si][0][1] ? "same" : "differ",
               hashes[si][1][0] == hashes[si][1][1] ? "same" : "differ");
    }
    return 0;
}
