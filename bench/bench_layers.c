/* bench/bench_layers.c — the CPU backend's first-layer convolutions and max pooling against
 * PyTorch on the same shapes, measured in one run (the machine is shared and noisy):
 *   - conv fwd, bwd-data and bwd-weights (+ bias) of lenet's conv1, 1→16 5x5 pad 2 on
 *     28x28, and of a CIFAR-like stem, 3→64 3x3 pad 1 on 32x32, input plain (as the data
 *     arrives), dy in the layout the backend gives y;
 *   - max pooling fwd and bwd (from the workspace) of 2x2/2 on lenet's conv1 output shape
 *     [16, 28, 28] and of 3x3/2 pad 1 on the stem's [64, 32, 32], in the layout the
 *     backend gives y, on uniform random values as PyTorch's side (the argmax pattern,
 *     which the values decide, decides where the backward writes);
 * at 1 and 2 threads and micro-batch 32, 64 and 128;
 *   - GNMT's normalised Bahdanau attention (struct pb_attn_desc) fwd (a training forward,
 *     its workspace kept) and bwd at GNMT's size: batch 64, Tq = Tk = 50, query = key =
 *     units = 1024, every source at full length, against the module of
 *     tests/fixtures/fixtures_gnmt.py (its forward with autograd on, its backward by
 *     torch.autograd.grad of the context), at 1 and 2 threads, in ATTN_ROUNDS rounds of
 *     one rep each (PyTorch takes seconds), the first after a warm-up; the fwd+bwd row
 *     adds each round's two times.
 * PyTorch runs in a child process per peer (bench_peers.h: Debian's /usr/bin/python3 and,
 * where $PB_TORCH2_PYTHON names it, PyPI's 2.x; bench/torch_layers.py, torch.set_num_threads
 * to match). Over ROUNDS rounds each op is timed by pipebench and then by each peer (each the
 * median of REPS reps after WARMUP), and the table shows the medians over the rounds and,
 * per peer, the median and range of the per-round time ratios pipebench / PyTorch (≤ 1: at
 * least as fast). All processes run with OMP_WAIT_POLICY=passive (unless set otherwise).
 * `bench_layers [SUBSTRING]` runs only the ops whose name contains SUBSTRING; with
 * PB_TORCH2_PYTHON=PYTHON in the environment, pb/pt2.x beside pb/pt1.13. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_peers.h"
#include "bench/bench_util.h"
#include "harness/base/rng.h"
#include "harness/compute/backend.h"
#include "harness/compute/cpu/cpu_internal.h"
#include "harness/compute/registry.h"

#define WARMUP 1
#define REPS 5
#define ROUNDS 5

/* ---- the PyTorch child: requests on its stdin, median seconds on its stdout ---- */

/* Random and zeroed device buffers of this benchmark (bench_util.h). */
static float *dev_rand(struct pb_backend *be, size_t n, uint64_t tag)
{
    return bench_dev_rand(be, n, 9, tag, "bench_layers");
}

static struct pb_tensor tensor(struct pb_backend *be, struct pb_shape s, enum pb_layout l)
{
    return bench_tensor(be, s, l, "bench_layers");
}

/* Sends one request line (without threads, warm-up and reps) and reads the seconds. */
static double torch_time(struct bench_torch *t, const char *req, int threads)
{
    fprintf(t->req, "%s %d %d %d\n", req, threads, WARMUP, REPS);
    fflush(t->req);
    char line[64];
    if (!fgets(line, sizeof line, t->ans)) {
        fprintf(stderr, "bench_layers: the PyTorch child stopped answering\n");
        exit(2);
    }
    return strtod(line, NULL);
}

/* ---- pipebench's side ---- */

/* x plain with random values → the same values in layout l. */
static struct pb_tensor tensor_rand(struct pb_backend *be, struct pb_shape s, enum pb_layout l,
                                    uint64_t tag)
{
    struct pb_tensor p = {dev_rand(be, pb_shape_count(s), tag), s, PB_LAYOUT_PLAIN};
    if (l == PB_LAYOUT_PLAIN)
        return p;
    struct pb_tensor t = tensor(be, s, l);
    be->ops->reorder(be, &p, &t);
    pb_backend_free(be, p.data);
    return t;
}

/* A convolution (lenet's conv1 or the stem) and the max pooling on its output. */
struct layer {
    const char *name;
    int h, w;
    struct pb_conv_desc conv;
    struct pb_pool_desc pool;
};

static const struct layer layers[] = {
    {"lenet conv1 1->16 5x5 p2 28x28", 28, 28, {1, 16, 5, 5, 1, 1, 2, 2, true},
     {PB_POOL_MAX, 2, 2, 2, 2, 0, 0, false, false}},
    {"stem 3->64 3x3 p1 32x32", 32, 32, {3, 64, 3, 3, 1, 1, 1, 1, true},
     {PB_POOL_MAX, 3, 3, 2, 2, 1, 1, false, false}},
};

enum op_kind { CONV_FWD, CONV_BWD_DATA, CONV_BWD_W, POOL_FWD, POOL_BWD, NOPS };

static const char *const op_names[NOPS] = {"conv fwd", "conv bwd-data", "conv bwd-weights",
                                           "maxpool fwd", "maxpool bwd"};
static const char *const torch_ops[NOPS] = {"conv fwd", "conv bwd_data", "conv bwd_weights",
                                            "pool fwd", "pool bwd"};

/* The tensors of one layer at one micro-batch. */
struct layer_run {
    const struct layer *l;
    struct pb_tensor x, y, dy, dx, pin, p, dp, dpx;
    float *w, *b, *dw, *db;
    void *ws;
    char conv_req[96], pool_req[96], pool_shape[48];
};

static void run_init(struct pb_backend *be, const struct layer *l, int n, struct layer_run *r)
{
    const struct pb_conv_desc *d = &l->conv;
    const struct pb_pool_desc *pd = &l->pool;
    struct pb_err e;
    r->l = l;
    struct pb_shape xs = {n, d->cin, l->h, l->w};
    struct pb_shape ys = {n, d->cout, (l->h + 2 * d->ph - d->kh) / d->sh + 1,
                          (l->w + 2 * d->pw - d->kw) / d->sw + 1};
    struct pb_shape ps = {n, d->cout, (ys.h + 2 * pd->ph - pd->kh) / pd->sh + 1,
                          (ys.w + 2 * pd->pw - pd->kw) / pd->sw + 1};
    r->x = tensor_rand(be, xs, PB_LAYOUT_PLAIN, 1);
    enum pb_layout yl = be->ops->conv_layout(be, d, &r->x);
    r->y = tensor(be, ys, yl);
    r->dy = tensor_rand(be, ys, yl, 2);
    r->dx = tensor(be, xs, PB_LAYOUT_PLAIN);
    size_t nw = (size_t)d->cout * d->cin * d->kh * d->kw;
    r->w = dev_rand(be, nw, 3), r->b = dev_rand(be, (size_t)d->cout, 4);
    r->dw = dev_rand(be, nw, 5), r->db = dev_rand(be, (size_t)d->cout, 6);
    be->ops->conv_fwd(be, d, &r->x, r->w, r->b, &r->y);
    r->pin = tensor_rand(be, ys, yl, 8);
    r->p = tensor(be, ps, yl);
    r->dp = tensor_rand(be, ps, yl, 7);
    r->dpx = tensor(be, ys, yl);
    size_t wsb = be->ops->pool_workspace(be, pd, &r->pin, &r->p);
    r->ws = pb_backend_alloc(be, wsb, PB_MEM_ACTS, &e);
    if (!r->ws) {
        fprintf(stderr, "bench_layers: %s\n", e.msg);
        exit(2);
    }
    be->ops->pool_fwd(be, pd, &r->pin, &r->p, r->ws);
    snprintf(r->conv_req, sizeof r->conv_req, "%d %d %d %d %d %d %d %d", n, d->cin, l->h, l->w,
             d->cout, d->kh, d->sh, d->ph);
    snprintf(r->pool_req, sizeof r->pool_req, "%d %d %d %d %d %d %d", n, ys.c, ys.h, ys.w,
             pd->kh, pd->sh, pd->ph);
    snprintf(r->pool_shape, sizeof r->pool_shape, "maxpool %dx%d/%d p%d on %dx%dx%d", pd->kh,
             pd->kw, pd->sh, pd->ph, ys.c, ys.h, ys.w);
}

static void run_free(struct pb_backend *be, struct layer_run *r)
{
    void *bufs[] = {r->x.data, r->y.data, r->dy.data, r->dx.data, r->pin.data, r->p.data, r->dp.data,
                    r->dpx.data, r->w, r->b, r->dw, r->db, r->ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        pb_backend_free(be, bufs[i]);
}

static void op_once(struct pb_backend *be, struct layer_run *r, enum op_kind op)
{
    const struct pb_conv_desc *d = &r->l->conv;
    const struct pb_pool_desc *pd = &r->l->pool;
    switch (op) {
    case CONV_FWD:
        be->ops->conv_fwd(be, d, &r->x, r->w, r->b, &r->y);
        break;
    case CONV_BWD_DATA:
        be->ops->conv_bwd_data(be, d, &r->dy, r->w, &r->dx);
        break;
    case CONV_BWD_W:
        be->ops->conv_bwd_weights(be, d, &r->x, &r->dy, r->dw, r->db);
        break;
    case POOL_FWD:
        be->ops->pool_fwd(be, pd, &r->pin, &r->p, r->ws);
        break;
    case POOL_BWD:
        be->ops->pool_bwd(be, pd, &r->pin, &r->p, &r->dp, r->ws, &r->dpx);
        break;
    case NOPS:
        break;
    }
    be->ops->sync(be);
}

static double pb_time(struct pb_backend *be, struct layer_run *r, enum op_kind op)
{
    double t[REPS];
    for (int i = 0; i < WARMUP; i++)
        op_once(be, r, op);
    for (int i = 0; i < REPS; i++) {
        double t0 = bench_now();
        op_once(be, r, op);
        t[i] = bench_now() - t0;
    }
    return bench_median(t, REPS);
}

static const char *layout_name(enum pb_layout l)
{
    return l == PB_LAYOUT_NCHW8C ? "nChw8c" : l == PB_LAYOUT_NCHW16C ? "nChw16c" : "nchw";
}

/* One row: pipebench's median over the rounds, then each peer's and the median [range] of
 * the per-round ratios pipebench / that peer. */
static void print_row(int threads, int n, const char *op, const char *shape, const char *layout,
                      const double *pb, const double (*th)[ROUNDS], int npeers, int rounds)
{
    char r[32];
    printf("  %d  %3d  %-17s %-33s %-7s %9.3f", threads, n, op, shape, layout,
           1e3 * bench_median(pb, rounds));
    for (int p = 0; p < npeers; p++)
        printf("  %9.3f  %-18s", 1e3 * bench_median(th[p], rounds),
               bench_ratio_str(pb, th[p], rounds, r, sizeof r));
    printf("\n");
}

static void bench_batch(struct pb_backend *be, struct bench_peers *ps, int threads, int n,
                        const char *filter)
{
    enum { NL = sizeof layers / sizeof layers[0] };
    struct layer_run runs[NL];
    double tpb[NL][NOPS][ROUNDS], tth[NL][NOPS][BENCH_PEERS_MAX][ROUNDS];
    for (int li = 0; li < NL; li++)
        run_init(be, &layers[li], n, &runs[li]);
    int nsides = 1 + ps->n;
    for (int round = 0; round < ROUNDS; round++)
        for (int li = 0; li < NL; li++)
            for (int op = 0; op < NOPS; op++) {
                if (filter && !strstr(op_names[op], filter))
                    continue;
                struct layer_run *r = &runs[li];
                char req[160];
                snprintf(req, sizeof req, "%s %s", torch_ops[op],
                         op < POOL_FWD ? r->conv_req : r->pool_req);
                for (int j = 0; j < nsides; j++) {
                    int side = bench_side_order(round, j, nsides);
                    if (side == 0)
                        tpb[li][op][round] = pb_time(be, r, (enum op_kind)op);
                    else
                        tth[li][op][side - 1][round] = torch_time(&ps->p[side - 1], req, threads);
                }
            }
    for (int li = 0; li < NL; li++)
        for (int op = 0; op < NOPS; op++) {
            if (filter && !strstr(op_names[op], filter))
                continue;
            print_row(threads, n, op_names[op],
                      op < POOL_FWD ? layers[li].name : runs[li].pool_shape,
                      layout_name(runs[li].y.layout), tpb[li][op],
                      (const double (*)[ROUNDS])tth[li][op], ps->n, ROUNDS);
        }
    for (int li = 0; li < NL; li++)
        run_free(be, &runs[li]);
}

/* ---- GNMT's attention ---- */

/* PyTorch takes seconds per op at this size: one rep per round, a warm-up in the first */
#define ATTN_REPS 1
#define ATTN_ROUNDS 3
_Static_assert(ATTN_ROUNDS <= ROUNDS, "the attention's rows are ROUNDS wide");

/* GNMT's size: batch 64, Tq = Tk = 50, query = key = units = 1024 */
static const struct pb_attn_desc attn_gnmt = {64, 50, 50, 1024, 1024, 1024};

/* The attention's buffers: q [B, Tq, Hq], k [B, Tk, Hk], lengths [B] (all Tk), the weights
 * w (v, g, bias, Wq, Wk) as the reference initialises them (uniform ±0.1, g = 1/√U), the
 * context and its gradient [B, Tq, Hk], dq, dk, dw and the forward's workspace. */
struct attn_run {
    float *q, *k, *w, *ctx, *dctx, *dq, *dk, *dw;
    int32_t *len;
    void *ws;
};

static void *attn_alloc(struct pb_backend *be, size_t bytes)
{
    struct pb_err e;
    void *p = pb_backend_alloc(be, bytes, PB_MEM_ACTS, &e);
    if (!p) {
        fprintf(stderr, "bench_layers: %s\n", e.msg);
        exit(2);
    }
    return p;
}

static void attn_init(struct pb_backend *be, const struct pb_attn_desc *d, struct attn_run *r)
{
    size_t nq = (size_t)d->batch * d->tq, nk = (size_t)d->batch * d->tk, U = (size_t)d->units;
    size_t nw = 2 * U + 1 + U * d->query + U * d->key;
    r->q = dev_rand(be, nq * d->query, 20);
    r->k = dev_rand(be, nk * d->key, 21);
    r->dctx = dev_rand(be, nq * d->key, 22);
    float *h = malloc(nw * sizeof *h);
    int32_t *hl = malloc((size_t)d->batch * sizeof *hl);
    if (!h || !hl) {
        fprintf(stderr, "bench_layers: out of host memory\n");
        exit(2);
    }
    pb_rng_fill_uniform(pb_rng_key(PB_RNG_DATA, 9, 23, 0, 0), 0, h, nw, -0.1f, 0.1f);
    h[U] = 1.0f / sqrtf((float)U);
    for (size_t i = U + 1; i < 2 * U + 1; i++)
        h[i] = 0.0f;
    for (int b = 0; b < d->batch; b++)
        hl[b] = d->tk;
    r->w = attn_alloc(be, nw * sizeof(float));
    r->dw = attn_alloc(be, nw * sizeof(float));
    r->len = attn_alloc(be, (size_t)d->batch * sizeof(int32_t));
    be->ops->upload(be, r->w, h, nw * sizeof(float));
    be->ops->upload(be, r->len, hl, (size_t)d->batch * sizeof(int32_t));
    be->ops->fill(be, r->dw, 0.0f, nw);
    free(h);
    free(hl);
    r->ctx = attn_alloc(be, nq * d->key * sizeof(float));
    r->dq = attn_alloc(be, nq * d->query * sizeof(float));
    r->dk = attn_alloc(be, nk * d->key * sizeof(float));
    r->ws = attn_alloc(be, be->ops->attn_workspace(be, d));
    be->ops->attn_fwd(be, d, r->q, r->k, r->len, r->w, r->ctx, r->ws);
    be->ops->sync(be);
}

static void attn_free(struct pb_backend *be, struct attn_run *r)
{
    void *bufs[] = {r->q, r->k, r->w, r->ctx, r->dctx, r->dq, r->dk, r->dw, r->len, r->ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        pb_backend_free(be, bufs[i]);
}

/* The median seconds of ATTN_REPS forwards (bwd false) or backwards after warmup. */
static double attn_time(struct pb_backend *be, const struct pb_attn_desc *d, struct attn_run *r,
                        bool bwd, int warmup)
{
    double t[ATTN_REPS];
    for (int i = 0; i < warmup + ATTN_REPS; i++) {
        double t0 = bench_now();
        if (bwd)
            be->ops->attn_bwd(be, d, r->q, r->k, r->len, r->w, r->ws, r->dctx, r->dq, r->dk,
                              r->dw);
        else
            be->ops->attn_fwd(be, d, r->q, r->k, r->len, r->w, r->ctx, r->ws);
        be->ops->sync(be);
        if (i >= warmup)
            t[i - warmup] = bench_now() - t0;
    }
    if (be->failed) {
        fprintf(stderr, "bench_layers: the attention failed\n");
        exit(2);
    }
    return bench_median(t, ATTN_REPS);
}

/* Times the torch side of one attention request (ATTN_REPS reps after warmup). */
static double torch_attn_time(struct bench_torch *t, const char *req, int threads, int warmup)
{
    fprintf(t->req, "%s %d %d %d\n", req, threads, warmup, ATTN_REPS);
    fflush(t->req);
    char line[64];
    if (!fgets(line, sizeof line, t->ans)) {
        fprintf(stderr, "bench_layers: the PyTorch child stopped answering\n");
        exit(2);
    }
    return strtod(line, NULL);
}

/* GNMT's attention fwd, bwd and their sum, pipebench and PyTorch in interleaved rounds. */
static void bench_attention(struct pb_backend *be, struct bench_peers *ps, int threads,
                            const char *filter)
{
    static const char *const ops[3] = {"attention fwd", "attention bwd", "attention fwd+bwd"};
    if (filter && !strstr(ops[0], filter) && !strstr(ops[1], filter) && !strstr(ops[2], filter))
        return;
    const struct pb_attn_desc *d = &attn_gnmt;
    struct attn_run r;
    attn_init(be, d, &r);
    char req[2][96];
    for (int i = 0; i < 2; i++)
        snprintf(req[i], sizeof req[i], "attn %s %d %d %d %d %d %d", i ? "bwd" : "fwd", d->batch,
                 d->tq, d->tk, d->query, d->key, d->units);
    /* [op][round] and [op][peer][round], ROUNDS wide as print_row reads them, the first
     * ATTN_ROUNDS measured */
    double tpb[3][ROUNDS] = {{0}}, tth[3][BENCH_PEERS_MAX][ROUNDS] = {{{0}}};
    int nsides = 1 + ps->n;
    for (int round = 0; round < ATTN_ROUNDS; round++) {
        int warmup = round ? 0 : WARMUP;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < nsides; j++) {
                int side = bench_side_order(round, j, nsides);
                if (side == 0)
                    tpb[i][round] = attn_time(be, d, &r, i == 1, warmup);
                else
                    tth[i][side - 1][round] = torch_attn_time(&ps->p[side - 1], req[i], threads,
                                                              warmup);
            }
        tpb[2][round] = tpb[0][round] + tpb[1][round];
        for (int p = 0; p < ps->n; p++)
            tth[2][p][round] = tth[0][p][round] + tth[1][p][round];
    }
    char shape[48];
    snprintf(shape, sizeof shape, "gnmt Tq=%d Tk=%d %d->%d", d->tq, d->tk, d->query, d->units);
    for (int i = 0; i < 3; i++)
        print_row(threads, d->batch, ops[i], shape, "plain", tpb[i],
                  (const double (*)[ROUNDS])tth[i], ps->n, ATTN_ROUNDS);
    attn_free(be, &r);
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    /* Idle OpenMP workers sleep at once, so that the waiting side (this process or the
     * child) does not spin on a core the measured one needs: 2 cores are shared. */
    setenv("OMP_WAIT_POLICY", "passive", 0);
    struct bench_peers ps;
    /* before any OpenMP team */
    bench_peers_start(&ps, PB_BENCH_TORCH_SCRIPT, NULL, "bench_layers");
    printf("pipebench layer benchmark: CPU backend vs PyTorch; per op the median of %d reps after "
           "%d warm-up, %d interleaved rounds, the sides' order rotating (the attention: %d rep, "
           "%d rounds)\n", REPS, WARMUP, ROUNDS, ATTN_REPS, ATTN_ROUNDS);
    bench_peers_print(&ps, "  ");
    printf("  th  mb   op                shape                             y/dy    pb ms");
    for (int p = 0; p < ps.n; p++) {
        char head[2][48];
        snprintf(head[0], sizeof head[0], "%s ms", ps.p[p].label);
        snprintf(head[1], sizeof head[1], "pb/%s [range]", ps.p[p].label);
        printf("  %9s  %-18s", head[0], head[1]);
    }
    printf("\n");
    static const int threads[2] = {1, 2}, batches[3] = {32, 64, 128};
    for (int t = 0; t < 2; t++) {
        struct pb_err e;
        struct pb_backend_cfg bc = {.device = 0, .threads = threads[t]};
        struct pb_backend *be = pb_backend_create("cpu", &bc, &e);
        if (!be) {
            fprintf(stderr, "bench_layers: %s\n", e.msg);
            return 2;
        }
        for (int b = 0; b < 3; b++)
            bench_batch(be, &ps, threads[t], batches[b], filter);
        bench_attention(be, &ps, threads[t], filter);
        pb_backend_destroy(be);
    }
    bench_peers_stop(&ps);
    return 0;
}
