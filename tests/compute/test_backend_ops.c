/* tests/compute/test_backend_ops.c — every op of struct pb_backend_ops (harness/compute/backend.h)
 * on every backend this process can create (the registry pb_backends[]), ggml's
 * test-backend-ops in C: each case builds random inputs at a small zoo shape, runs the op
 * (in every layout the backend hands out, for ops on images), and downloads its outputs
 * as plain floats. Checked, per backend:
 *   - the CPU backend against naive references written in tests/support/op_refs.c (double
 *     precision, or the same float expression where the op is per element);
 *   - any other backend against the CPU backend: bit-identical where the CUDA numerics
 *     rules say it can be (per-element ops, optimizer steps, predictions, dropout,
 *     gathers, copies, the embedding and the masked mean: sums in a fixed order, and the
 *     outputs of a case computed exactly: bias_add's y, max pooling's forward),
 *     else within twice the case's tolerance against the exact result (each backend is
 *     within it, so their difference is within twice it), with ggml's normalised MSE
 *     NMSE = Σ(a − b)² / Σb² as the summary;
 *   - determinism: the case run twice on one backend gives the same bits;
 *   - accumulation: every *_acc output starts from random values and its op runs twice
 *     (the references add two gradients), so an op that overwrites fails;
 *   - bad inputs (a token, length or label out of range), each on a fresh instance: the
 *     op fails it, by the sync after at the latest, with the CPU backend's message (on a
 *     GPU this runs the kernels' error flag, cuda_flags.c).
 * Ops a backend's supports_op denies are reported (a failure with --require-all).
 * Usage: test_backend_ops [--backend NAME] [--op NAME,...] [--bench] [--json FILE]
 *        [--require-all] [--list]; prints "N passed, N failed" and exits 1 on a failure.
 * Built with PB_OPS_WITH_DEFERRED (test_backend_ops_deferred), it also knows the deferred
 * backend (tests/support/deferred_backend.h: the CPU backend behind a queue run at sync,
 * not host-visible): `--backend deferred` takes the suite's path for a device backend
 * without a GPU, and every device-contract violation the deferred backend reports fails. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/base/rng.h"
#include "harness/compute/backend.h"
#include "harness/compute/registry.h"
#include "tests/support/op_refs.h"
#ifdef PB_OPS_WITH_DEFERRED
#include "tests/support/deferred_backend.h"
#endif

/* ---- host memory of one case (inputs, references), freed together ---- */

static void **arena;
static size_t narena, carena;

static void *keep(void *p)
{
    if (narena == carena) {
        carena = carena ? 2 * carena : 256;
        arena = realloc(arena, carena * sizeof *arena);
    }
    arena[narena++] = p;
    return p;
}

static void arena_reset(void)
{
    while (narena)
        free(arena[--narena]);
}

static float *hnew(size_t n)
{
    return keep(calloc(n + 1, sizeof(float)));
}

/* n uniforms in [lo, hi), a pure function of tag: run and reference draw the same */
static float *hrand(size_t n, uint64_t tag, float lo, float hi)
{
    float *p = hnew(n);
    pb_rng_fill_uniform(pb_rng_key(PB_RNG_DATA, 4321, tag, 0, 0), 0, p, n, lo, hi);
    return p;
}

static float *hcopy(const float *src, size_t n)
{
    float *p = hnew(n);
    memcpy(p, src, n * sizeof *p);
    return p;
}

/* ---- a case's outputs: named plain float arrays ---- */

#define MAX_OUT 12

struct outs {
    int n;
    const char *name[MAX_OUT];
    float *v[MAX_OUT];
    size_t len[MAX_OUT];
};

static float *outs_add(struct outs *o, const char *name, size_t n)
{
    if (o->n == MAX_OUT) {
        fprintf(stderr, "test_backend_ops: more than %d outputs in a case\n", MAX_OUT);
        exit(2);
    }
    o->name[o->n] = name;
    o->len[o->n] = n;
    o->v[o->n] = calloc(n + 1, sizeof(float));
    return o->v[o->n++];
}

static void outs_free(struct outs *o)
{
    for (int i = 0; i < o->n; i++)
        free(o->v[i]);
    o->n = 0;
}

/* ---- running a case on a backend ---- */

#define MAX_DEV 128

struct ctx {
    struct pb_backend *be;
    enum pb_layout l;       /* the layout image inputs are given in */
    const enum pb_layout *layouts;  /* every layout the backend hands out */
    int nlayouts;
    struct outs *o;
    void *dev[MAX_DEV];
    int ndev;
    double t_op;            /* seconds inside the op calls (synced around them) */
    char err[512];          /* an invariant the run itself checks, broken */
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Times the op calls of stmt on c's backend: synced before and after. */
#define TIMED(c, stmt)                                                                 \
    do {                                                                               \
        (c)->be->ops->sync((c)->be);                                                   \
        double t0_ = now();                                                            \
        stmt;                                                                          \
        (c)->be->ops->sync((c)->be);                                                   \
        (c)->t_op += now() - t0_;                                                      \
    } while (0)

static void fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct ctx *c, const char *fmt, ...)
{
    if (c->err[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
}

static void *dalloc(struct ctx *c, size_t bytes)
{
    struct pb_err e;
    void *p = pb_backend_alloc(c->be, bytes ? bytes : 4, PB_MEM_ACTS, &e);
    if (!p || c->ndev == MAX_DEV) {
        fprintf(stderr, "test_backend_ops: %s: %s\n", c->be->ops->name,
                p ? "too many buffers in a case" : e.msg);
        exit(2);
    }
    return c->dev[c->ndev++] = p;
}

static void dfree_all(struct ctx *c)
{
    while (c->ndev)
        pb_backend_free(c->be, c->dev[--c->ndev]);
}

static float *dup(struct ctx *c, const void *host, size_t n)
{
    float *d = dalloc(c, n * sizeof(float));
    c->be->ops->upload(c->be, d, host, n * sizeof(float));
    return d;
}

static float *dfill(struct ctx *c, size_t n, float v)
{
    float *d = dalloc(c, n * sizeof(float));
    c->be->ops->fill(c->be, d, v, n);
    return d;
}

static struct pb_tensor tnew(struct ctx *c, struct pb_shape s, enum pb_layout l)
{
    size_t n = c->be->ops->layout_floats(c->be, s, l);
    struct pb_tensor t = {dfill(c, n, 0.0f), s, l};
    return t;
}

/* A tensor of layout l holding plain [n, c, h, w] host data (reordered on the device). */
static struct pb_tensor tfrom(struct ctx *c, const float *plain, struct pb_shape s,
                              enum pb_layout l)
{
    struct pb_tensor p = {dup(c, plain, pb_shape_count(s)), s, PB_LAYOUT_PLAIN};
    if (l == PB_LAYOUT_PLAIN)
        return p;
    struct pb_tensor t = tnew(c, s, l);
    c->be->ops->reorder(c->be, &p, &t);
    return t;
}

/* Output `name`: n floats of device memory d. */
static void out_d(struct ctx *c, const char *name, const void *d, size_t n)
{
    float *h = outs_add(c->o, name, n);
    c->be->ops->download(c->be, h, d, n * sizeof(float));
    c->be->ops->sync(c->be);
}

/* Output `name`: tensor t as plain data. */
static void out_t(struct ctx *c, const char *name, const struct pb_tensor *t)
{
    if (t->layout == PB_LAYOUT_PLAIN) {
        out_d(c, name, t->data, pb_shape_count(t->shape));
        return;
    }
    struct pb_tensor p = tnew(c, t->shape, PB_LAYOUT_PLAIN);
    c->be->ops->reorder(c->be, t, &p);
    out_d(c, name, p.data, pb_shape_count(t->shape));
}

/* ---- the cases ---- */

/* How a backend's result is held against the CPU backend's. */
enum parity { EXACT, TOL };

struct ocase {
    const char *op;        /* what --op matches */
    char label[96];
    int bop;               /* enum pb_backend_op for supports_op; -1: a core op (reorder, ...) */
    bool layouts;          /* run once per layout of the backend (image inputs) */
    bool bench_only;       /* a larger shape, run with --bench (no reference) */
    double rtol, atol;     /* against the reference: |got − want| ≤ atol + rtol·|want|;
                            * 0, 0: the same bits */
    enum parity parity;    /* against the CPU backend (TOL: twice rtol, atol) */
    unsigned exact_outs;   /* TOL: outputs (bit o: output o) held bit-identical to the CPU
                            * backend's all the same, computed exactly by construction */
    void (*run)(struct ctx *c, const void *arg);
    void (*ref)(const void *arg, struct outs *want, const struct outs *got);
    const void *arg;
    /* a bad-input case: run on a fresh instance, the op must fail it (by the sync after
     * at the latest: a device finds the bad element in a kernel) with a message holding
     * both texts (the second may be NULL) */
    const char *fails_with[2];
};

#define MAX_CASES 256
static struct ocase cases[MAX_CASES];
static int ncases;

static struct ocase *add_case(const char *op, int bop, double rtol, double atol, enum parity par,
                              void (*run)(struct ctx *, const void *),
                              void (*ref)(const void *, struct outs *, const struct outs *),
                              const void *arg, const char *fmt, ...)
    __attribute__((format(printf, 9, 10)));
static struct ocase *add_case(const char *op, int bop, double rtol, double atol, enum parity par,
                              void (*run)(struct ctx *, const void *),
                              void (*ref)(const void *, struct outs *, const struct outs *),
                              const void *arg, const char *fmt, ...)
{
    if (ncases == MAX_CASES) {
        fprintf(stderr, "test_backend_ops: more than %d cases\n", MAX_CASES);
        exit(2);
    }
    struct ocase *k = &cases[ncases++];
    memset(k, 0, sizeof *k);
    k->op = op, k->bop = bop, k->rtol = rtol, k->atol = atol, k->parity = par;
    k->run = run, k->ref = ref, k->arg = arg;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->label, sizeof k->label, fmt, ap);
    va_end(ap);
    return k;
}

/* ---- gemm, bias ---- */

struct gemm_arg {
    bool ta, tb;
    int m, n, k;
    float alpha, beta;
};

static void gemm_dims(const struct gemm_arg *g, int *lda, int *ldb, int *ldc, size_t *na,
                      size_t *nb, size_t *nc)
{
    *lda = (g->ta ? g->m : g->k) + 3, *ldb = (g->tb ? g->k : g->n) + 2, *ldc = g->n + 5;
    *na = (size_t)(g->ta ? g->k : g->m) * *lda;
    *nb = (size_t)(g->tb ? g->n : g->k) * *ldb;
    *nc = (size_t)g->m * *ldc;
}

static void gemm_run(struct ctx *c, const void *arg)
{
    const struct gemm_arg *g = arg;
    int lda, ldb, ldc;
    size_t na, nb, nc;
    gemm_dims(g, &lda, &ldb, &ldc, &na, &nb, &nc);
    float *a = dup(c, hrand(na, 10, -1, 1), na), *b = dup(c, hrand(nb, 11, -1, 1), nb);
    float *cc = dup(c, hrand(nc, 12, -1, 1), nc);
    TIMED(c, c->be->ops->gemm(c->be, g->ta, g->tb, g->m, g->n, g->k, g->alpha, a, lda, b, ldb,
                              g->beta, cc, ldc));
    out_d(c, "c", cc, nc);
}

static void gemm_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct gemm_arg *g = arg;
    int lda, ldb, ldc;
    size_t na, nb, nc;
    gemm_dims(g, &lda, &ldb, &ldc, &na, &nb, &nc);
    float *y = outs_add(w, "c", nc);
    pb_ref_gemm(g->ta, g->tb, g->m, g->n, g->k, g->alpha, hrand(na, 10, -1, 1), lda,
                hrand(nb, 11, -1, 1), ldb, g->beta, hrand(nc, 12, -1, 1), y, ldc);
}

struct bias_arg {
    int n, c;
};

static void bias_run(struct ctx *c, const void *arg)
{
    const struct bias_arg *a = arg;
    size_t ny = (size_t)a->n * a->c;
    float *y = dup(c, hrand(ny, 20, -1, 1), ny), *b = dup(c, hrand(a->c, 21, -1, 1), a->c);
    float *dy = dup(c, hrand(ny, 22, -1, 1), ny), *acc = dup(c, hrand(a->c, 23, -1, 1), a->c);
    TIMED(c, c->be->ops->bias_add(c->be, y, b, a->n, a->c));
    out_d(c, "y", y, ny);
    TIMED(c, c->be->ops->bias_grad(c->be, dy, acc, a->n, a->c));
    c->be->ops->bias_grad(c->be, dy, acc, a->n, a->c);
    out_d(c, "db_acc", acc, a->c);
}

static void bias_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct bias_arg *a = arg;
    size_t ny = (size_t)a->n * a->c;
    const float *y = hrand(ny, 20, -1, 1), *b = hrand(a->c, 21, -1, 1);
    const float *dy = hrand(ny, 22, -1, 1), *acc = hrand(a->c, 23, -1, 1);
    float *ry = outs_add(w, "y", ny), *rdb = outs_add(w, "db_acc", a->c);
    for (size_t i = 0; i < ny; i++)
        ry[i] = y[i] + b[i % (size_t)a->c];
    for (int j = 0; j < a->c; j++) {
        double s = 0;
        for (int r = 0; r < a->n; r++)
            s += dy[(size_t)r * a->c + j];
        rdb[j] = (float)(acc[j] + 2 * s);
    }
}

/* ---- convolution ---- */

struct conv_arg {
    struct pb_shape x;
    struct pb_conv_desc d;
};

static struct pb_shape conv_y(const struct conv_arg *a)
{
    return (struct pb_shape){a->x.n, a->d.cout, (a->x.h + 2 * a->d.ph - a->d.kh) / a->d.sh + 1,
                             (a->x.w + 2 * a->d.pw - a->d.kw) / a->d.sw + 1};
}

static size_t conv_nw(const struct conv_arg *a)
{
    return (size_t)a->d.cout * a->d.cin * a->d.kh * a->d.kw;
}

static void conv_run(struct ctx *c, const void *arg)
{
    const struct conv_arg *a = arg;
    const struct pb_backend_ops *o = c->be->ops;
    struct pb_shape ys = conv_y(a);
    size_t nx = pb_shape_count(a->x), ny = pb_shape_count(ys), nw = conv_nw(a);
    int nb = a->d.cout;
    struct pb_tensor x = tfrom(c, hrand(nx, 30, -1, 1), a->x, c->l);
    float *w = dup(c, hrand(nw, 31, -1, 1), nw), *b = dup(c, hrand(nb, 32, -1, 1), nb);
    struct pb_tensor y = tnew(c, ys, o->conv_layout(c->be, &a->d, &x));
    TIMED(c, o->conv_fwd(c->be, &a->d, &x, w, a->d.bias ? b : NULL, &y));
    out_t(c, "y", &y);
    struct pb_tensor dy = tfrom(c, hrand(ny, 33, -1, 1), ys, y.layout);
    struct pb_tensor dx = tnew(c, a->x, x.layout);
    TIMED(c, o->conv_bwd_data(c->be, &a->d, &dy, w, &dx));
    out_t(c, "dx", &dx);
    float *dw = dup(c, hrand(nw, 34, -1, 1), nw), *db = dup(c, hrand(nb, 35, -1, 1), nb);
    TIMED(c, o->conv_bwd_weights(c->be, &a->d, &x, &dy, dw, a->d.bias ? db : NULL));
    o->conv_bwd_weights(c->be, &a->d, &x, &dy, dw, a->d.bias ? db : NULL);
    out_d(c, "dw_acc", dw, nw);
    if (a->d.bias)
        out_d(c, "db_acc", db, nb);
}

static void conv_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct conv_arg *a = arg;
    struct pb_shape ys = conv_y(a);
    size_t nx = pb_shape_count(a->x), ny = pb_shape_count(ys), nw = conv_nw(a);
    int nb = a->d.cout;
    double *y = keep(malloc(ny * sizeof *y)), *dx = keep(malloc(nx * sizeof *dx));
    double *dw = keep(malloc(nw * sizeof *dw)), *db = keep(malloc(nb * sizeof *db));
    pb_ref_conv(&a->d, a->x, hrand(nx, 30, -1, 1), hrand(nw, 31, -1, 1), hrand(nb, 32, -1, 1),
                hrand(ny, 33, -1, 1), y, dx, dw, db);
    pb_ref_to_float(outs_add(w, "y", ny), y, ny);
    pb_ref_to_float(outs_add(w, "dx", nx), dx, nx);
    const float *dw0 = hrand(nw, 34, -1, 1), *db0 = hrand(nb, 35, -1, 1);
    float *rdw = outs_add(w, "dw_acc", nw);
    for (size_t i = 0; i < nw; i++)
        rdw[i] = (float)(dw0[i] + 2 * dw[i]);
    if (a->d.bias) {
        float *rdb = outs_add(w, "db_acc", nb);
        for (int i = 0; i < nb; i++)
            rdb[i] = (float)(db0[i] + 2 * db[i]);
    }
}

/* ---- pooling ---- */

struct pool_arg {
    struct pb_shape x;
    struct pb_pool_desc d;
};

static struct pb_shape pool_y(const struct pool_arg *a)
{
    return pb_ref_pool_shape(&a->d, a->x);
}

static void pool_run(struct ctx *c, const void *arg)
{
    const struct pool_arg *a = arg;
    const struct pb_backend_ops *o = c->be->ops;
    struct pb_shape ys = pool_y(a);
    size_t nx = pb_shape_count(a->x), ny = pb_shape_count(ys);
    struct pb_tensor x = tfrom(c, hrand(nx, 50, -1, 1), a->x, c->l);
    struct pb_tensor y = tnew(c, ys, c->l), yi = tnew(c, ys, c->l);
    size_t wsb = o->pool_workspace(c->be, &a->d, &x, &y);
    void *ws = wsb ? dalloc(c, wsb) : NULL;
    TIMED(c, o->pool_fwd(c->be, &a->d, &x, &y, ws));
    out_t(c, "y", &y);
    o->pool_fwd(c->be, &a->d, &x, &yi, NULL);
    out_t(c, "y (inference)", &yi);
    struct pb_tensor dy = tfrom(c, hrand(ny, 51, -1, 1), ys, c->l), dx = tnew(c, a->x, c->l);
    o->fill(c->be, dx.data, NAN, o->layout_floats(c->be, a->x, c->l));  /* all written */
    TIMED(c, o->pool_bwd(c->be, &a->d, &x, &y, &dy, ws, &dx));
    out_t(c, "dx", &dx);
}

static void pool_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct pool_arg *a = arg;
    struct pb_shape ys = pool_y(a);
    size_t nx = pb_shape_count(a->x), ny = pb_shape_count(ys);
    double *y = keep(malloc(ny * sizeof *y)), *dx = keep(malloc(nx * sizeof *dx));
    pb_ref_pool(&a->d, a->x, ys, hrand(nx, 50, -1, 1), hrand(ny, 51, -1, 1), y, dx);
    pb_ref_to_float(outs_add(w, "y", ny), y, ny);
    pb_ref_to_float(outs_add(w, "y (inference)", ny), y, ny);
    pb_ref_to_float(outs_add(w, "dx", nx), dx, nx);
}

/* ---- batch normalisation ---- */

struct bn_arg {
    struct pb_shape x;
    bool relu;
};

#define BN_EPS 1e-5f
#define BN_MOM 0.1f

static void bn_run(struct ctx *c, const void *arg)
{
    const struct bn_arg *a = arg;
    const struct pb_backend_ops *o = c->be->ops;
    struct pb_shape s = a->x;
    size_t nx = pb_shape_count(s), nc = (size_t)s.c;
    struct pb_tensor x = tfrom(c, hrand(nx, 60, -2, 3), s, c->l), y = tnew(c, s, c->l);
    float *g = dup(c, hrand(nc, 62, 0.5f, 1.5f), nc), *b = dup(c, hrand(nc, 63, -1, 1), nc);
    float *rm = dup(c, hrand(nc, 66, -0.5f, 0.5f), nc), *rv = dup(c, hrand(nc, 67, 0.5f, 2), nc);
    void *aux = dalloc(c, o->bn_aux_bytes(c->be, s, a->relu));
    TIMED(c, o->bn_fwd_train(c->be, &x, g, b, rm, rv, BN_MOM, BN_EPS, a->relu, &y, aux));
    out_t(c, "y (train)", &y);
    out_d(c, "running mean", rm, nc);
    out_d(c, "running var", rv, nc);
    struct pb_tensor dy = tfrom(c, hrand(nx, 61, -1, 1), s, c->l), dx = tnew(c, s, c->l);
    float *dg = dup(c, hrand(nc, 64, -1, 1), nc), *db = dup(c, hrand(nc, 65, -1, 1), nc);
    TIMED(c, o->bn_bwd(c->be, &x, &dy, g, aux, BN_EPS, a->relu, &dx, dg, db));
    o->bn_bwd(c->be, &x, &dy, g, aux, BN_EPS, a->relu, &dx, dg, db);
    out_t(c, "dx", &dx);
    out_d(c, "dgamma_acc", dg, nc);
    out_d(c, "dbeta_acc", db, nc);
    float *im = dup(c, hrand(nc, 68, -0.5f, 0.5f), nc), *iv = dup(c, hrand(nc, 69, 0.5f, 2), nc);
    TIMED(c, o->bn_fwd_infer(c->be, &x, g, b, im, iv, BN_EPS, a->relu, &y));
    out_t(c, "y (inference)", &y);
}

static void bn_ref(const void *arg, struct outs *w, const struct outs *got)
{
    const struct bn_arg *a = arg;
    struct pb_shape s = a->x;
    size_t nx = pb_shape_count(s), nc = (size_t)s.c;
    struct pb_ref_bn r = {
        .x = s, .xv = hrand(nx, 60, -2, 3), .dy = hrand(nx, 61, -1, 1),
        .gamma = hrand(nc, 62, 0.5f, 1.5f), .beta = hrand(nc, 63, -1, 1),
        .run_mean = hcopy(hrand(nc, 66, -0.5f, 0.5f), nc), .run_var = hcopy(hrand(nc, 67, 0.5f, 2), nc),
        .inf_mean = hrand(nc, 68, -0.5f, 0.5f), .inf_var = hrand(nc, 69, 0.5f, 2),
        .momentum = BN_MOM, .eps = BN_EPS, .relu = a->relu,
        /* the fused ReLU's backward takes dy where the forward's y > 0: the mask of the
         * backend's own y, so that a y within rounding of 0 cannot flip it */
        .mask_y = got && got->n > 0 ? got->v[0] : NULL,
    };
    float *y = outs_add(w, "y (train)", nx);
    float *rm = outs_add(w, "running mean", nc), *rv = outs_add(w, "running var", nc);
    float *dx = outs_add(w, "dx", nx);
    float *dg = outs_add(w, "dgamma_acc", nc), *db = outs_add(w, "dbeta_acc", nc);
    float *yi = outs_add(w, "y (inference)", nx);
    pb_ref_bn(&r, y, dx, dg, db, yi);
    memcpy(rm, r.run_mean, nc * sizeof *rm);
    memcpy(rv, r.run_var, nc * sizeof *rv);
    const float *dg0 = hrand(nc, 64, -1, 1), *db0 = hrand(nc, 65, -1, 1);
    for (size_t i = 0; i < nc; i++)
        dg[i] = dg0[i] + 2 * dg[i], db[i] = db0[i] + 2 * db[i];
}

/* ---- elementwise, dropout ---- */

enum elt_kind { ELT_RELU, ELT_RELU_BWD, ELT_ADD, ELT_ADD_RELU, ELT_AXPBY, ELT_AXPY0 };

struct elt_arg {
    enum elt_kind kind;
    size_t n;
};

/* inputs: a with a NaN, a −0 and a +0 at the front (NaN passes through relu) */
static float *elt_a(size_t n)
{
    float *a = hrand(n, 90, -1, 1);
    a[0] = NAN, a[1] = -0.0f, a[2] = 0.0f;
    return a;
}

static void elt_run(struct ctx *c, const void *arg)
{
    const struct elt_arg *e = arg;
    const struct pb_backend_ops *o = c->be->ops;
    size_t n = e->n;
    float *a = dup(c, elt_a(n), n), *b = dup(c, hrand(n, 91, -1, 1), n);
    float *y = dup(c, hrand(n, 92, -1, 1), n);
    switch (e->kind) {
    case ELT_RELU:
        TIMED(c, o->relu_fwd(c->be, a, y, n));
        break;
    case ELT_RELU_BWD:
        TIMED(c, o->relu_bwd(c->be, a, b, y, n));
        break;
    case ELT_ADD:
        TIMED(c, o->add(c->be, a, b, y, n));
        break;
    case ELT_ADD_RELU:
        TIMED(c, o->add_relu(c->be, a, b, y, n));
        break;
    case ELT_AXPBY:
        TIMED(c, o->axpby(c->be, 0.75f, b, -1.5f, y, n));
        break;
    case ELT_AXPY0:  /* beta = 0 reads nothing of y: NaN there stays out */
        o->fill(c->be, y, NAN, n);
        TIMED(c, o->axpby(c->be, 0.75f, b, 0.0f, y, n));
        break;
    }
    out_d(c, "y", y, n);
}

static float relu1(float v)
{
    return (v > 0.0f || v != v) ? v : 0.0f;
}

static void elt_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct elt_arg *e = arg;
    size_t n = e->n;
    const float *a = elt_a(n), *b = hrand(n, 91, -1, 1), *y0 = hrand(n, 92, -1, 1);
    float *y = outs_add(w, "y", n);
    for (size_t i = 0; i < n; i++) {
        switch (e->kind) {
        case ELT_RELU:
            y[i] = relu1(a[i]);
            break;
        case ELT_RELU_BWD:
            y[i] = a[i] > 0.0f ? b[i] : 0.0f;
            break;
        case ELT_ADD:
            y[i] = a[i] + b[i];
            break;
        case ELT_ADD_RELU:
            y[i] = relu1(a[i] + b[i]);
            break;
        case ELT_AXPBY:
            y[i] = (float)(0.75 * b[i] + -1.5 * y0[i]);
            break;
        case ELT_AXPY0:
            y[i] = 0.75f * b[i];
            break;
        }
    }
}

struct drop_arg {
    size_t n;
    float p;
    uint64_t first;
};

static void drop_run(struct ctx *c, const void *arg)
{
    const struct drop_arg *d = arg;
    float *x = dup(c, hrand(d->n, 100, -1, 1), d->n), *y = dfill(c, d->n, 0.0f);
    struct pb_rng_key key = pb_rng_key(PB_RNG_DROPOUT, 42, 1, 2, 3);
    TIMED(c, c->be->ops->dropout(c->be, x, y, d->n, d->p, key, d->first));
    out_d(c, "y", y, d->n);
}

static void drop_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct drop_arg *d = arg;
    const float *x = hrand(d->n, 100, -1, 1);
    float *y = outs_add(w, "y", d->n);
    struct pb_rng_key key = pb_rng_key(PB_RNG_DROPOUT, 42, 1, 2, 3);
    float scale = 1.0f / (1.0f - d->p);
    for (size_t i = 0; i < d->n; i++)
        y[i] = pb_rng_uniform4(key, d->first + i) >= d->p ? x[i] * scale : 0.0f;
}

/* ---- concat, split, reorder, fill, copy (copies: exact) ---- */

struct cat_arg {
    int k, n, h, w;
    int cs[4];
};

static void cat_run(struct ctx *c, const void *arg)
{
    const struct cat_arg *a = arg;
    const struct pb_backend_ops *o = c->be->ops;
    struct pb_tensor ins[4], outs[4];
    const struct pb_tensor *inp[4];
    struct pb_tensor *outp[4];
    struct pb_shape os = {a->n, 0, a->h, a->w};
    for (int i = 0; i < a->k; i++) {
        struct pb_shape s = {a->n, a->cs[i], a->h, a->w};
        os.c += a->cs[i];
        ins[i] = tfrom(c, hrand(pb_shape_count(s), 70 + i, -1, 1), s, c->l);
        inp[i] = &ins[i];
        outs[i] = tnew(c, s, c->l);
        o->fill(c->be, outs[i].data, NAN, o->layout_floats(c->be, s, c->l));
        outp[i] = &outs[i];
    }
    struct pb_tensor out = tnew(c, os, o->concat_layout(c->be, a->k, inp));
    TIMED(c, o->concat(c->be, a->k, inp, &out));
    out_t(c, "out", &out);
    TIMED(c, o->split(c->be, &out, a->k, outp));
    static const char *const names[4] = {"split 0", "split 1", "split 2", "split 3"};
    for (int i = 0; i < a->k; i++)
        out_t(c, names[i], &outs[i]);
}

static void cat_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct cat_arg *a = arg;
    size_t plane = (size_t)a->h * a->w, total = 0;
    for (int i = 0; i < a->k; i++)
        total += (size_t)a->n * a->cs[i] * plane;
    float *out = outs_add(w, "out", total);
    static const char *const names[4] = {"split 0", "split 1", "split 2", "split 3"};
    for (int i = 0, c0 = 0; i < a->k; c0 += a->cs[i], i++) {
        size_t part = (size_t)a->cs[i] * plane;
        const float *h = hrand(a->n * part, 70 + i, -1, 1);
        for (int n = 0; n < a->n; n++)
            memcpy(out + (size_t)n * (total / a->n) + (size_t)c0 * plane, h + n * part,
                   part * sizeof *out);
        memcpy(outs_add(w, names[i], a->n * part), h, a->n * part * sizeof(float));
    }
}

/* x (layout c->l) reordered into every layout of the backend and back to plain */
static void reorder_run(struct ctx *c, const void *arg)
{
    const struct pb_shape *s = arg;
    const float *h = hrand(pb_shape_count(*s), 80, -1, 1);
    struct pb_tensor x = tfrom(c, h, *s, c->l);
    for (int i = 0; i < c->nlayouts; i++) {
        struct pb_tensor t = tnew(c, *s, c->layouts[i]);
        c->be->ops->fill(c->be, t.data, 7.0f, c->be->ops->layout_floats(c->be, *s, t.layout));
        TIMED(c, c->be->ops->reorder(c->be, &x, &t));
        out_t(c, "reordered", &t);
    }
}

static void reorder_ref(const void *arg, struct outs *w, const struct outs *got)
{
    const struct pb_shape *s = arg;
    size_t n = pb_shape_count(*s);
    const float *h = hrand(n, 80, -1, 1);
    for (int i = 0; i < (got ? got->n : 1); i++)
        memcpy(outs_add(w, "reordered", n), h, n * sizeof(float));
}

static void fill_run(struct ctx *c, const void *arg)
{
    (void)arg;
    size_t n = 40000;
    float *y = dfill(c, n + 10, 1.0f);
    TIMED(c, c->be->ops->fill(c->be, y + 3, -2.5f, n));
    c->be->ops->fill(c->be, y + 3 + n, -0.0f, 2);
    out_d(c, "y", y, n + 10);
}

static void fill_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)arg, (void)got;
    size_t n = 40000;
    float *y = outs_add(w, "y", n + 10);
    for (size_t i = 0; i < n + 10; i++)
        y[i] = i < 3 || i >= n + 5 ? 1.0f : i < n + 3 ? -2.5f : -0.0f;
}

static void copy_run(struct ctx *c, const void *arg)
{
    (void)arg;
    size_t n = 40000;
    float *x = dup(c, hrand(n, 81, -1, 1), n), *y = dfill(c, n, 3.0f);
    TIMED(c, c->be->ops->copy(c->be, y + 5, x + 1, (n - 9) * sizeof(float)));
    out_d(c, "y", y, n);
}

static void copy_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)arg, (void)got;
    size_t n = 40000;
    const float *x = hrand(n, 81, -1, 1);
    float *y = outs_add(w, "y", n);
    for (size_t i = 0; i < n; i++)
        y[i] = i >= 5 && i < n - 4 ? x[i - 4] : 3.0f;
}

/* ---- softmax cross-entropy ---- */

struct xent_arg {
    int n, c;
    float eps_ls;
    int ignore, grad_rows;
};

/* labels: pseudo-random classes, every 4th row the ignored one where there is one */
static int32_t *xent_labels(const struct xent_arg *a)
{
    int32_t *l = keep(malloc((size_t)a->n * sizeof *l));
    struct pb_rng_key k = pb_rng_key(PB_RNG_DATA, 4321, 111, 0, 0);
    for (int r = 0; r < a->n; r++)
        l[r] = a->ignore >= 0 && r % 4 == 1 ? a->ignore : (int32_t)pb_rng_below(k, r, a->c);
    return l;
}

static void xent_run(struct ctx *c, const void *arg)
{
    const struct xent_arg *a = arg;
    size_t nz = (size_t)a->n * a->c;
    float *z = dup(c, hrand(nz, 110, -4, 4), nz), *dz = dfill(c, nz, NAN);
    int32_t *lab = (int32_t *)dup(c, xent_labels(a), a->n);
    struct pb_xent_out *res = dalloc(c, sizeof *res), host;
    TIMED(c, c->be->ops->softmax_xent(c->be, z, lab, a->n, a->c, a->eps_ls, a->ignore,
                                      a->grad_rows, res, dz));
    c->be->ops->download(c->be, &host, res, sizeof host);
    c->be->ops->sync(c->be);
    float *v = outs_add(c->o, "loss, correct, count", 3);
    v[0] = host.loss, v[1] = (float)host.correct, v[2] = (float)host.count;
    out_d(c, "dlogits", dz, nz);
    /* without dlogits: the same three results */
    c->be->ops->fill(c->be, (float *)res, 0.0f, sizeof host / sizeof(float));
    c->be->ops->softmax_xent(c->be, z, lab, a->n, a->c, a->eps_ls, a->ignore,
                                a->grad_rows, res, NULL);
    struct pb_xent_out h2;
    c->be->ops->download(c->be, &h2, res, sizeof h2);
    c->be->ops->sync(c->be);
    if (memcmp(&h2, &host, sizeof h2))
        fail(c, "softmax_xent without dlogits: loss %.9g correct %d count %d, with: %.9g %d %d",
             h2.loss, h2.correct, h2.count, host.loss, host.correct, host.count);
}

static void xent_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct xent_arg *a = arg;
    size_t nz = (size_t)a->n * a->c;
    float *v = outs_add(w, "loss, correct, count", 3);
    float *dz = outs_add(w, "dlogits", nz);
    pb_ref_softmax_xent(hrand(nz, 110, -4, 4), xent_labels(a), a->n, a->c, a->eps_ls, a->ignore,
                        a->grad_rows, v, dz);
}

/* ---- embedding ---- */

struct emb_arg {
    int n, vocab, dim, padding;
};

static float *emb_tokens(const struct emb_arg *a)
{
    float *t = hnew(a->n);
    struct pb_rng_key k = pb_rng_key(PB_RNG_DATA, 4321, 120, 0, 0);
    for (int i = 0; i < a->n; i++)  /* repeats (n > vocab / 2) and the padding token */
        t[i] = (float)pb_rng_below(k, i, (uint64_t)a->vocab / 2);
    return t;
}

static void emb_run(struct ctx *c, const void *arg)
{
    const struct emb_arg *a = arg;
    size_t nt = (size_t)a->vocab * a->dim, ny = (size_t)a->n * a->dim;
    float *tok = dup(c, emb_tokens(a), a->n), *table = dup(c, hrand(nt, 121, -1, 1), nt);
    float *y = dfill(c, ny, NAN);
    TIMED(c, c->be->ops->embedding_fwd(c->be, tok, a->n, table, a->vocab, a->dim, y));
    out_d(c, "y", y, ny);
    float *dy = dup(c, hrand(ny, 122, -1, 1), ny), *dt = dup(c, hrand(nt, 123, -1, 1), nt);
    TIMED(c, c->be->ops->embedding_bwd(c->be, tok, a->n, dy, a->vocab, a->dim, a->padding, dt));
    c->be->ops->embedding_bwd(c->be, tok, a->n, dy, a->vocab, a->dim, a->padding, dt);
    out_d(c, "dtable_acc", dt, nt);
}

static void emb_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct emb_arg *a = arg;
    size_t nt = (size_t)a->vocab * a->dim, ny = (size_t)a->n * a->dim;
    const float *tok = emb_tokens(a), *table = hrand(nt, 121, -1, 1), *dy = hrand(ny, 122, -1, 1);
    const float *dt0 = hrand(nt, 123, -1, 1);
    float *y = outs_add(w, "y", ny), *dt = outs_add(w, "dtable_acc", nt);
    double *acc = keep(calloc(nt, sizeof *acc));
    for (int i = 0; i < a->n; i++) {
        int t = (int)tok[i];
        memcpy(y + (size_t)i * a->dim, table + (size_t)t * a->dim, a->dim * sizeof *y);
        if (t != a->padding)
            for (int j = 0; j < a->dim; j++)
                acc[(size_t)t * a->dim + j] += dy[(size_t)i * a->dim + j];
    }
    for (size_t i = 0; i < nt; i++)
        dt[i] = (float)(dt0[i] + 2 * acc[i]);
}

/* ---- sequences: masked mean, gather ---- */

struct seq_arg {
    int batch, steps, f;
    bool lengths, reverse;
    int x_stride, y_stride;  /* seq_gather */
};

static int32_t *seq_lengths(const struct seq_arg *a)
{
    int32_t *l = keep(malloc((size_t)a->batch * sizeof *l));
    for (int b = 0; b < a->batch; b++)
        l[b] = a->lengths ? 1 + (b * 3 + 2) % a->steps : a->steps;
    if (a->lengths)
        l[0] = a->steps;
    return l;
}

static void seq_mean_run(struct ctx *c, const void *arg)
{
    const struct seq_arg *a = arg;
    size_t nx = (size_t)a->batch * a->steps * a->f, ny = (size_t)a->batch * a->f;
    float *x = dup(c, hrand(nx, 130, -1, 1), nx), *y = dfill(c, ny, NAN);
    int32_t *len = a->lengths ? (int32_t *)dup(c, seq_lengths(a), a->batch) : NULL;
    TIMED(c, c->be->ops->seq_mean_fwd(c->be, x, len, a->batch, a->steps, a->f, y));
    out_d(c, "y", y, ny);
    float *dy = dup(c, hrand(ny, 131, -1, 1), ny), *dx = dfill(c, nx, NAN);
    TIMED(c, c->be->ops->seq_mean_bwd(c->be, dy, len, a->batch, a->steps, a->f, dx));
    out_d(c, "dx", dx, nx);
}

static void seq_mean_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct seq_arg *a = arg;
    size_t nx = (size_t)a->batch * a->steps * a->f, ny = (size_t)a->batch * a->f;
    const float *x = hrand(nx, 130, -1, 1), *dy = hrand(ny, 131, -1, 1);
    const int32_t *len = seq_lengths(a);
    float *y = outs_add(w, "y", ny), *dx = outs_add(w, "dx", nx);
    for (int b = 0; b < a->batch; b++)
        for (int j = 0; j < a->f; j++) {
            double s = 0;
            for (int t = 0; t < len[b]; t++)
                s += x[((size_t)b * a->steps + t) * a->f + j];
            y[(size_t)b * a->f + j] = (float)(s / len[b]);
            for (int t = 0; t < a->steps; t++)
                dx[((size_t)b * a->steps + t) * a->f + j] =
                    t < len[b] ? (float)((double)dy[(size_t)b * a->f + j] / len[b]) : 0.0f;
        }
}

static void gather_run(struct ctx *c, const void *arg)
{
    const struct seq_arg *a = arg;
    size_t rows = (size_t)a->batch * a->steps;
    size_t nx = rows * a->x_stride, ny = rows * a->y_stride;
    float *x = dup(c, hrand(nx, 140, -1, 1), nx), *y = dfill(c, ny, 5.0f);
    int32_t *len = a->lengths ? (int32_t *)dup(c, seq_lengths(a), a->batch) : NULL;
    TIMED(c, c->be->ops->seq_gather(c->be, x, a->x_stride, len, a->batch, a->steps, a->f,
                                    a->reverse, y, a->y_stride));
    out_d(c, "y", y, ny);
}

static void gather_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct seq_arg *a = arg;
    size_t rows = (size_t)a->batch * a->steps;
    const float *x = hrand(rows * a->x_stride, 140, -1, 1);
    const int32_t *len = seq_lengths(a);
    float *y = outs_add(w, "y", rows * a->y_stride);
    for (size_t i = 0; i < rows * a->y_stride; i++)
        y[i] = 5.0f;  /* features past f untouched */
    for (int b = 0; b < a->batch; b++)
        for (int t = 0; t < a->steps; t++) {
            int src = a->reverse ? len[b] - 1 - t : t;
            float *yr = y + ((size_t)b * a->steps + t) * a->y_stride;
            for (int j = 0; j < a->f; j++)
                yr[j] = t < len[b] ? x[((size_t)b * a->steps + src) * a->x_stride + j] : 0.0f;
        }
}

/* ---- bad inputs: each fails the instance with the CPU backend's message ---- */

enum bad_kind {
    BAD_TOKEN_FWD, BAD_TOKEN_BWD, BAD_SEQ_MEAN, BAD_SEQ_GATHER, BAD_LABEL, BAD_ATTN_LEN
};

static void bad_run(struct ctx *c, const void *arg)
{
    const enum bad_kind *kind = arg;
    const struct pb_backend_ops *o = c->be->ops;
    static const float tok_fwd[6] = {1, 4, 0, 50, 2, 7}, tok_bwd[6] = {1, 2.5f, 0, 3, 49, 7};
    static const int32_t seq_len[3] = {3, 0, 2}, gather_len[2] = {3, 4}, attn_len[2] = {5, 6};
    static const int32_t labels[3] = {0, 11, 2};
    switch (*kind) {
    case BAD_TOKEN_FWD:  /* token 50 of vocab 50, dim 3 */
        o->embedding_fwd(c->be, dup(c, tok_fwd, 6), 6, dfill(c, 150, 1.0f), 50, 3, dfill(c, 18, 0));
        break;
    case BAD_TOKEN_BWD:  /* token 2.5 */
        o->embedding_bwd(c->be, dup(c, tok_bwd, 6), 6, dfill(c, 18, 1.0f), 50, 3, -1,
                         dfill(c, 150, 0.0f));
        break;
    case BAD_SEQ_MEAN:  /* length 0: batch 3, steps 3, f 4 */
        o->seq_mean_fwd(c->be, dfill(c, 36, 1.0f), (int32_t *)dup(c, seq_len, 3), 3, 3, 4,
                        dfill(c, 12, 0.0f));
        break;
    case BAD_SEQ_GATHER:  /* length 4 of steps 3: batch 2, f 4 */
        o->seq_gather(c->be, dfill(c, 24, 1.0f), 4, (int32_t *)dup(c, gather_len, 2), 2, 3, 4,
                      true, dfill(c, 24, 0.0f), 4);
        break;
    case BAD_LABEL:  /* label 11 of 11 classes, rows 3 */
        o->softmax_xent(c->be, dfill(c, 33, 0.5f), (int32_t *)dup(c, labels, 3), 3, 11, 0.1f, -1,
                        0, dalloc(c, sizeof(struct pb_xent_out)), dfill(c, 33, 0.0f));
        break;
    case BAD_ATTN_LEN: {  /* length 6 of tk 5 */
        static const struct pb_attn_desc d = {2, 3, 5, 4, 6, 7};
        o->attn_fwd(c->be, &d, dfill(c, 24, 0.5f), dfill(c, 60, 0.5f),
                    (int32_t *)dup(c, attn_len, 2), dfill(c, 85, 0.5f), dfill(c, 36, 0.0f), NULL);
        break;
    }
    }
}

/* ---- LSTM ---- */

static size_t lstm_nw(const struct pb_lstm_desc *d)
{
    return 4 * (size_t)d->hidden * (d->input + d->hidden + 2);
}

static void lstm_run(struct ctx *c, const void *arg)
{
    const struct pb_lstm_desc *d = arg;
    const struct pb_backend_ops *o = c->be->ops;
    size_t nx = (size_t)d->batch * d->steps * d->input, ny = (size_t)d->batch * d->steps * d->hidden;
    size_t nw = lstm_nw(d), ns = (size_t)d->batch * d->hidden;
    float *x = dup(c, hrand(nx, 150, -1, 1), nx), *w = dup(c, hrand(nw, 151, -0.5f, 0.5f), nw);
    float *y = dfill(c, ny, NAN);
    void *ws = dalloc(c, o->lstm_workspace(c->be, d));
    TIMED(c, o->lstm_fwd(c->be, d, x, w, y, ws, NULL));
    out_d(c, "y (train)", y, ny);
    float *dy = dup(c, hrand(ny, 152, -1, 1), ny), *dx = dfill(c, nx, NAN);
    float *dw = dup(c, hrand(nw, 153, -1, 1), nw);
    TIMED(c, o->lstm_bwd(c->be, d, x, w, y, dy, ws, dx, dw));
    o->lstm_bwd(c->be, d, x, w, y, dy, ws, NULL, dw);
    out_d(c, "dx", dx, nx);
    out_d(c, "dw_acc", dw, nw);
    /* the split backward: data then weights, twice as above, gives the fused bits */
    float *dx2 = dfill(c, nx, NAN), *dw2 = dup(c, hrand(nw, 153, -1, 1), nw);
    void *keep = dalloc(c, o->lstm_bwd_keep(c->be, d));
    o->lstm_bwd_data(c->be, d, w, dy, ws, dx2, keep);
    o->lstm_bwd_weights(c->be, d, x, y, keep, dw2);
    o->lstm_bwd_data(c->be, d, w, dy, ws, NULL, keep);
    o->lstm_bwd_weights(c->be, d, x, y, keep, dw2);
    out_d(c, "dx (split)", dx2, nx);
    out_d(c, "dw_acc (split)", dw2, nw);
    const struct outs *r = c->o;
    if (memcmp(r->v[r->n - 4], r->v[r->n - 2], nx * sizeof(float)) ||
        memcmp(r->v[r->n - 3], r->v[r->n - 1], nw * sizeof(float)))
        fail(c, "lstm_bwd_data then lstm_bwd_weights: other bits than lstm_bwd's");
    /* inference from given states, to the final ones */
    float *h0 = dup(c, hrand(ns, 154, -1, 1), ns), *c0 = dup(c, hrand(ns, 155, -1, 1), ns);
    float *hl = dfill(c, ns, NAN), *cl = dfill(c, ns, NAN);
    struct pb_lstm_states st = {h0, c0, hl, cl};
    TIMED(c, o->lstm_fwd(c->be, d, x, w, y, NULL, &st));
    out_d(c, "y (inference, states)", y, ny);
    out_d(c, "h_last", hl, ns);
    out_d(c, "c_last", cl, ns);
}

static void lstm_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct pb_lstm_desc *d = arg;
    size_t nx = (size_t)d->batch * d->steps * d->input, ny = (size_t)d->batch * d->steps * d->hidden;
    size_t nw = lstm_nw(d), ns = (size_t)d->batch * d->hidden;
    const float *x = hrand(nx, 150, -1, 1), *wt = hrand(nw, 151, -0.5f, 0.5f);
    const float *dy = hrand(ny, 152, -1, 1), *dw0 = hrand(nw, 153, -1, 1);
    float *y = outs_add(w, "y (train)", ny), *dx = outs_add(w, "dx", nx);
    float *dw = outs_add(w, "dw_acc", nw);
    pb_ref_lstm(d, x, wt, NULL, NULL, dy, y, NULL, NULL, dx, dw);
    for (size_t i = 0; i < nw; i++)
        dw[i] = dw0[i] + 2 * dw[i];
    memcpy(outs_add(w, "dx (split)", nx), dx, nx * sizeof *dx);
    memcpy(outs_add(w, "dw_acc (split)", nw), dw, nw * sizeof *dw);
    float *yi = outs_add(w, "y (inference, states)", ny);
    float *hl = outs_add(w, "h_last", ns), *cl = outs_add(w, "c_last", ns);
    pb_ref_lstm(d, x, wt, hrand(ns, 154, -1, 1), hrand(ns, 155, -1, 1), NULL, yi, hl, cl, NULL,
                NULL);
}

/* ---- attention ---- */

struct attn_arg {
    struct pb_attn_desc d;
    bool lengths;
};

static size_t attn_nw(const struct pb_attn_desc *d)
{
    return (size_t)d->units * (2 + d->query + d->key) + 1;
}

static int32_t *attn_lengths(const struct attn_arg *a)
{
    int32_t *l = keep(malloc((size_t)a->d.batch * sizeof *l));
    for (int b = 0; b < a->d.batch; b++)
        l[b] = !a->lengths || b == 0 ? a->d.tk : 1 + (b * 5 + 1) % a->d.tk;
    return l;
}

static void attn_run(struct ctx *c, const void *arg)
{
    const struct attn_arg *a = arg;
    const struct pb_attn_desc *d = &a->d;
    const struct pb_backend_ops *o = c->be->ops;
    size_t nq = (size_t)d->batch * d->tq * d->query, nk = (size_t)d->batch * d->tk * d->key;
    size_t nctx = (size_t)d->batch * d->tq * d->key, na = (size_t)d->batch * d->tq * d->tk;
    size_t nw = attn_nw(d), npk = (size_t)d->batch * d->tk * d->units;
    float *q = dup(c, hrand(nq, 160, -1, 1), nq), *k = dup(c, hrand(nk, 161, -1, 1), nk);
    float *w = dup(c, hrand(nw, 162, -1, 1), nw);
    int32_t *len = a->lengths ? (int32_t *)dup(c, attn_lengths(a), d->batch) : NULL;
    float *ctx = dfill(c, nctx, NAN), *aw = dfill(c, na, NAN);
    void *ws = dalloc(c, o->attn_workspace(c->be, d));
    TIMED(c, o->attn_fwd(c->be, d, q, k, len, w, ctx, ws));
    out_d(c, "ctx (train)", ctx, nctx);
    TIMED(c, o->attn_weights(c->be, d, ws, aw));
    out_d(c, "weights", aw, na);
    float *dctx = dup(c, hrand(nctx, 163, -1, 1), nctx);
    float *dq = dfill(c, nq, NAN), *dk = dfill(c, nk, NAN), *dw = dup(c, hrand(nw, 164, -1, 1), nw);
    TIMED(c, o->attn_bwd(c->be, d, q, k, len, w, ws, dctx, dq, dk, dw));
    o->attn_bwd(c->be, d, q, k, len, w, ws, dctx, NULL, NULL, dw);
    out_d(c, "dq", dq, nq);
    out_d(c, "dk", dk, nk);
    out_d(c, "dw_acc", dw, nw);
    /* the split backward: data then weights, twice as above, gives the fused bits */
    float *dq2 = dfill(c, nq, NAN), *dk2 = dfill(c, nk, NAN);
    float *dw2 = dup(c, hrand(nw, 164, -1, 1), nw);
    void *keep = dalloc(c, o->attn_bwd_keep(c->be, d));
    o->attn_bwd_data(c->be, d, k, len, w, ws, dctx, dq2, dk2, keep);
    o->attn_bwd_weights(c->be, d, q, k, keep, dw2);
    o->attn_bwd_data(c->be, d, k, len, w, ws, dctx, NULL, NULL, keep);
    o->attn_bwd_weights(c->be, d, q, k, keep, dw2);
    out_d(c, "dq (split)", dq2, nq);
    out_d(c, "dk (split)", dk2, nk);
    out_d(c, "dw_acc (split)", dw2, nw);
    const struct outs *rs = c->o;
    if (memcmp(rs->v[rs->n - 6], rs->v[rs->n - 3], nq * sizeof(float)) ||
        memcmp(rs->v[rs->n - 5], rs->v[rs->n - 2], nk * sizeof(float)) ||
        memcmp(rs->v[rs->n - 4], rs->v[rs->n - 1], nw * sizeof(float)))
        fail(c, "attn_bwd_data then attn_bwd_weights: other bits than attn_bwd's");
    /* a decoder's: keys projected once, then the forward on them; the same bits as
     * attn_fwd's ctx and weights (backend.h) */
    float *pk = dfill(c, npk, NAN), *ctx2 = dfill(c, nctx, NAN), *a2 = dfill(c, na, NAN);
    TIMED(c, o->attn_project_keys(c->be, d, k, w, pk));
    out_d(c, "projected keys", pk, npk);
    TIMED(c, o->attn_fwd_projected(c->be, d, q, k, pk, len, w, ctx2, a2));
    out_d(c, "ctx (projected)", ctx2, nctx);
    out_d(c, "weights (projected)", a2, na);
    float *ctx3 = dfill(c, nctx, NAN);
    o->attn_fwd(c->be, d, q, k, len, w, ctx3, NULL);
    out_d(c, "ctx (inference)", ctx3, nctx);
    /* the last twelve outputs: ctx (train), weights, dq, dk, dw_acc, their split three,
     * pk, ctx2, a2, ctx3 */
    const struct outs *r = c->o;
    const float *c1 = r->v[r->n - 12], *w1 = r->v[r->n - 11];
    const float *c2 = r->v[r->n - 3], *w2 = r->v[r->n - 2], *c3 = r->v[r->n - 1];
    if (memcmp(c1, c2, nctx * sizeof *c1) || memcmp(w1, w2, na * sizeof *w1))
        fail(c, "attn_fwd_projected: other bits than attn_fwd's ctx or weights");
    if (memcmp(c1, c3, nctx * sizeof *c1))
        fail(c, "attn_fwd: the inference forward (ws NULL) gives other bits than training");
}

static void attn_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct attn_arg *a = arg;
    const struct pb_attn_desc *d = &a->d;
    size_t nq = (size_t)d->batch * d->tq * d->query, nk = (size_t)d->batch * d->tk * d->key;
    size_t nctx = (size_t)d->batch * d->tq * d->key, na = (size_t)d->batch * d->tq * d->tk;
    size_t nw = attn_nw(d), npk = (size_t)d->batch * d->tk * d->units;
    const float *q = hrand(nq, 160, -1, 1), *k = hrand(nk, 161, -1, 1), *wt = hrand(nw, 162, -1, 1);
    const float *dctx = hrand(nctx, 163, -1, 1), *dw0 = hrand(nw, 164, -1, 1);
    const int32_t *len = attn_lengths(a);
    float *ctx = outs_add(w, "ctx (train)", nctx), *aw = outs_add(w, "weights", na);
    float *dq = outs_add(w, "dq", nq), *dk = outs_add(w, "dk", nk), *dw = outs_add(w, "dw_acc", nw);
    float *pk = malloc((npk + 1) * sizeof *pk);
    pb_ref_attn(d, q, k, len, wt, dctx, ctx, aw, pk, dq, dk, dw);
    for (size_t i = 0; i < nw; i++)
        dw[i] = dw0[i] + 2 * dw[i];
    memcpy(outs_add(w, "dq (split)", nq), dq, nq * sizeof *dq);
    memcpy(outs_add(w, "dk (split)", nk), dk, nk * sizeof *dk);
    memcpy(outs_add(w, "dw_acc (split)", nw), dw, nw * sizeof *dw);
    memcpy(outs_add(w, "projected keys", npk), pk, npk * sizeof *pk);
    free(pk);
    memcpy(outs_add(w, "ctx (projected)", nctx), ctx, nctx * sizeof *ctx);
    memcpy(outs_add(w, "weights (projected)", na), aw, na * sizeof *aw);
    memcpy(outs_add(w, "ctx (inference)", nctx), ctx, nctx * sizeof *ctx);
}

/* ---- optimizer step, prediction ---- */

struct optim_arg {
    enum pb_optk_family family;
    bool wd, buf, first, nesterov, zero_grad, d_last, g_last;
};

#define OPT_N 40000

static struct pb_optim_coef optim_coef(const struct optim_arg *a)
{
    struct pb_optim_coef k = {
        .neg_lr = -0.01f, .wd = a->wd ? 5e-4f : 0.0f, .mom = 0.9f, .one_minus_damp = 0.9f,
        .beta1 = 0.9f, .beta2 = 0.999f, .one_minus_beta1 = 0.1f, .one_minus_beta2 = 0.001f,
        .eps = 1e-8f, .neg_step_size = -0.01f / 0.271f, .bc2_sqrt = 0.05473f, .bc1 = 0.271f,
        .decay = a->family == PB_OPTK_ADAMW ? 1.0f - 0.01f * 0.01f : 1.0f, .alpha = 0.99f,
        .one_minus_alpha = 0.01f, .bc2 = 0.002f, .nadam_g = -0.0531f, .nadam_m = -0.0817f,
    };
    if (a->family == PB_OPTK_ADAMW || (a->family == PB_OPTK_NADAM && a->wd))
        k.wd = 0.01f, k.decay = 1.0f - 0.01f * 0.01f;
    return k;
}

static void optim_run(struct ctx *c, const void *arg)
{
    const struct optim_arg *a = arg;
    size_t n = OPT_N;
    bool adam = a->family == PB_OPTK_ADAM || a->family == PB_OPTK_ADAMW ||
                a->family == PB_OPTK_NADAM;
    struct pb_optim_step_args s = {
        .family = a->family, .c = optim_coef(a), .first = a->first, .nesterov = a->nesterov,
        .zero_grad = a->zero_grad, .n = n, .w = dup(c, hrand(n, 170, -1, 1), n),
        .g = dup(c, hrand(n, 171, -1, 1), n),
        .buf = a->buf ? dup(c, hrand(n, 172, -1, 1), n) : NULL,
        .m = adam ? dup(c, hrand(n, 173, -1, 1), n) : NULL,
        .v = adam ? dup(c, hrand(n, 174, 0, 1), n) : NULL,
        .sq = a->family == PB_OPTK_RMSPROP ? dup(c, hrand(n, 175, 0, 1), n) : NULL,
        .d_last = a->d_last ? dfill(c, n, NAN) : NULL,
        .g_last = a->g_last ? dfill(c, n, NAN) : NULL,
    };
    TIMED(c, c->be->ops->optim_step(c->be, &s));
    out_d(c, "w", s.w, n);
    out_d(c, "g", s.g, n);
    if (s.buf)
        out_d(c, "buf", s.buf, n);
    if (s.m)
        out_d(c, "m", s.m, n), out_d(c, "v", s.v, n);
    if (s.sq)
        out_d(c, "sq", s.sq, n);
    if (s.d_last)
        out_d(c, "d_last", s.d_last, n);
    if (s.g_last)
        out_d(c, "g_last", s.g_last, n);
}

static void optim_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct optim_arg *a = arg;
    size_t n = OPT_N;
    bool adam = a->family == PB_OPTK_ADAM || a->family == PB_OPTK_ADAMW ||
                a->family == PB_OPTK_NADAM;
    struct pb_ref_optim r = {
        .family = a->family, .c = optim_coef(a), .first = a->first, .nesterov = a->nesterov,
        .zero_grad = a->zero_grad, .n = n, .w = hcopy(hrand(n, 170, -1, 1), n),
        .g = hcopy(hrand(n, 171, -1, 1), n),
        .buf = a->buf ? hcopy(hrand(n, 172, -1, 1), n) : NULL,
        .m = adam ? hcopy(hrand(n, 173, -1, 1), n) : NULL,
        .v = adam ? hcopy(hrand(n, 174, 0, 1), n) : NULL,
        .sq = a->family == PB_OPTK_RMSPROP ? hcopy(hrand(n, 175, 0, 1), n) : NULL,
        .d_last = a->d_last ? hnew(n) : NULL, .g_last = a->g_last ? hnew(n) : NULL,
    };
    pb_ref_optim_step(&r);
    memcpy(outs_add(w, "w", n), r.w, n * sizeof(float));
    memcpy(outs_add(w, "g", n), r.g, n * sizeof(float));
    if (r.buf)
        memcpy(outs_add(w, "buf", n), r.buf, n * sizeof(float));
    if (r.m) {
        memcpy(outs_add(w, "m", n), r.m, n * sizeof(float));
        memcpy(outs_add(w, "v", n), r.v, n * sizeof(float));
    }
    if (r.sq)
        memcpy(outs_add(w, "sq", n), r.sq, n * sizeof(float));
    if (r.d_last)
        memcpy(outs_add(w, "d_last", n), r.d_last, n * sizeof(float));
    if (r.g_last)
        memcpy(outs_add(w, "g_last", n), r.g_last, n * sizeof(float));
}

struct pred_arg {
    enum pb_dw_kind kind;
    bool has_y, inplace;
};

static struct pb_dw_desc pred_desc(const struct pred_arg *a, const float *x, const float *y,
                                   const float *m, const float *v, const float *sq)
{
    struct pb_dw_desc d = {.kind = a->kind, .x = x, .y = a->has_y ? y : NULL, .a = 0.9f,
                           .b = -0.35f, .m = m, .v = v, .sq = sq, .bc1 = 0.271f,
                           .bc2_sqrt = 0.05473f, .eps = 1e-8f};
    return d;
}

static void pred_run(struct ctx *c, const void *arg)
{
    const struct pred_arg *a = arg;
    size_t n = OPT_N;
    float *w = dup(c, hrand(n, 180, -1, 1), n);
    float *wh = a->inplace ? w : dfill(c, n, NAN);
    struct pb_predict_args p = {
        .dw = pred_desc(a, dup(c, hrand(n, 181, -1, 1), n), dup(c, hrand(n, 182, -1, 1), n),
                        dup(c, hrand(n, 183, -1, 1), n), dup(c, hrand(n, 184, 0, 1), n),
                        dup(c, hrand(n, 185, 0, 1), n)),
        .scale = -0.037f, .n = n, .w = w, .w_hat = wh,
    };
    TIMED(c, c->be->ops->predict(c->be, &p));
    out_d(c, "w_hat", wh, n);
    if (!a->inplace)
        out_d(c, "w", w, n);
}

static void pred_ref(const void *arg, struct outs *w, const struct outs *got)
{
    (void)got;
    const struct pred_arg *a = arg;
    size_t n = OPT_N;
    const float *wv = hrand(n, 180, -1, 1);
    struct pb_dw_desc d = pred_desc(a, hrand(n, 181, -1, 1), hrand(n, 182, -1, 1),
                                    hrand(n, 183, -1, 1), hrand(n, 184, 0, 1), hrand(n, 185, 0, 1));
    float *wh = outs_add(w, "w_hat", n);
    pb_ref_predict(&d, -0.037f, n, wv, wh);
    if (!a->inplace)
        memcpy(outs_add(w, "w", n), wv, n * sizeof(float));
}

/* ---- the case list: small zoo shapes ---- */

static void build_cases(void)
{
    /* GEMM over K products of magnitude ≤ 1 with random signs: the float32 sum's error
     * grows like √K·2^-24 of √K terms of size 1, K·6e-8; atol 2e-7·K covers it 3-fold,
     * rtol 1e-5 the larger entries. (A TF32 GEMM, 2^-11 per product, fails this.) */
    static const struct gemm_arg gemms[] = {
        {false, false, 13, 17, 29, 0.7f, 0.3f}, {true, false, 13, 17, 29, 0.7f, 0.3f},
        {false, true, 13, 17, 29, 0.7f, 0.3f},  {true, true, 13, 17, 29, 1.0f, 0.0f},
        {false, true, 32, 10, 500, 1.0f, 0.0f},  /* lenet's last linear layer */
        {true, false, 500, 10, 32, 1.0f, 1.0f},  /* its weight gradient, accumulated */
    };
    for (size_t i = 0; i < sizeof gemms / sizeof gemms[0]; i++) {
        const struct gemm_arg *g = &gemms[i];
        add_case("gemm", PB_BOP_GEMM, 1e-5, 2e-7 * g->k, TOL, gemm_run, gemm_ref, g,
                 "%c%c m%d n%d k%d alpha %g beta %g", g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', g->m,
                 g->n, g->k, (double)g->alpha, (double)g->beta);
    }
    static const struct gemm_arg big_gemms[] = {
        {false, true, 256, 1024, 1024, 1.0f, 0.0f}, {false, false, 2048, 512, 512, 1.0f, 0.0f},
    };
    for (size_t i = 0; i < sizeof big_gemms / sizeof big_gemms[0]; i++) {
        const struct gemm_arg *g = &big_gemms[i];
        add_case("gemm", PB_BOP_GEMM, 1e-5, 2e-7 * g->k, TOL, gemm_run, NULL, g,
                 "%c%c m%d n%d k%d (bench)", g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', g->m, g->n,
                 g->k)->bench_only = true;
    }
    /* bias_add: one rounding, the same bits on every backend (its output y); bias_grad: 37
     * rows in float, rtol 1e-6 */
    static const struct bias_arg bias = {37, 70};
    add_case("bias", PB_BOP_BIAS, 1e-6, 1e-6, TOL, bias_run, bias_ref, &bias, "n%d c%d", bias.n,
             bias.c)
        ->exact_outs = 1u;

    /* Convolutions of K = cin·kh·kw ≤ 400 products of magnitude ≤ 1 (weight gradients
     * over n·oh·ow ≤ 512): float32 sums carry ≲ K·2^-24·Σ|terms| ≈ 2e-5: rtol 1e-4,
     * atol 1e-4 (tests/compute/test_backend_cpu.c's bound); a TF32 convolution fails it. */
    static const struct conv_arg convs[] = {
        {{2, 1, 16, 16}, {1, 6, 5, 5, 1, 1, 0, 0, true}},        /* lenet conv1 */
        {{2, 6, 6, 6}, {6, 16, 5, 5, 1, 1, 0, 0, true}},         /* lenet conv2 */
        {{1, 3, 23, 23}, {3, 8, 11, 11, 4, 4, 2, 2, true}},      /* alexnet conv1 */
        {{2, 16, 8, 8}, {16, 32, 3, 3, 1, 1, 1, 1, false}},      /* resnet 3×3 */
        {{2, 13, 9, 9}, {13, 16, 3, 3, 2, 2, 1, 1, false}},      /* strided, odd channels */
        {{2, 24, 7, 7}, {24, 8, 1, 1, 1, 1, 0, 0, true}},        /* 1×1 */
        {{2, 16, 16, 16}, {16, 32, 3, 3, 1, 1, 1, 1, true}},     /* Winograd's shape */
        {{1, 64, 2, 2}, {64, 40, 3, 3, 1, 1, 1, 1, true}},       /* few pixels: products */
        {{2, 16, 16, 16}, {16, 8, 3, 3, 1, 1, 1, 1, true}},      /* thin output */
        {{2, 13, 9, 10}, {13, 9, 7, 1, 1, 1, 3, 0, false}},      /* inception's 7×1 */
    };
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
        const struct conv_arg *a = &convs[i];
        add_case("conv", PB_BOP_CONV, 1e-4, 1e-4, TOL, conv_run, conv_ref, a,
                 "x %dx%dx%dx%d cout %d k%dx%d s%d p%d%s", a->x.n, a->x.c, a->x.h, a->x.w,
                 a->d.cout, a->d.kh, a->d.kw, a->d.sh, a->d.ph, a->d.bias ? " bias" : "")
            ->layouts = true;
    }
    static const struct conv_arg big_convs[] = {
        {{32, 64, 56, 56}, {64, 64, 3, 3, 1, 1, 1, 1, false}},
        {{32, 128, 28, 28}, {128, 128, 3, 3, 1, 1, 1, 1, false}},
    };
    for (size_t i = 0; i < sizeof big_convs / sizeof big_convs[0]; i++) {
        const struct conv_arg *a = &big_convs[i];
        struct ocase *k = add_case("conv", PB_BOP_CONV, 1e-3, 1e-3, TOL, conv_run, NULL, a,
                                   "x %dx%dx%dx%d cout %d k3x3 (bench)", a->x.n, a->x.c, a->x.h,
                                   a->x.w, a->d.cout);
        k->bench_only = true;
    }

    /* pooling: max selects (an exact forward: its y and y (inference) the same bits on every
     * backend); backwards add ≤ 4 overlapping contributions, averages ≤ 9 terms then a
     * division: rtol 1e-5, atol 1e-6 */
    static const struct pool_arg pools[] = {
        {{2, 13, 10, 11}, {PB_POOL_MAX, 3, 3, 2, 2, 1, 1, true, false}},
        {{2, 5, 7, 7}, {PB_POOL_MAX, 2, 2, 2, 2, 0, 0, true, false}},
        {{2, 6, 9, 9}, {PB_POOL_MAX, 3, 3, 2, 2, 0, 0, false, false}},
        {{3, 20, 28, 28}, {PB_POOL_MAX, 2, 2, 2, 2, 0, 0, false, false}},  /* lenet */
        {{2, 13, 6, 6}, {PB_POOL_AVG, 3, 3, 2, 2, 1, 1, true, false}},
        {{2, 13, 6, 7}, {PB_POOL_AVG, 3, 3, 2, 2, 1, 1, true, true}},
        {{2, 5, 8, 8}, {PB_POOL_AVG, 3, 3, 2, 2, 1, 1, false, false}},
        {{2, 5, 8, 8}, {PB_POOL_AVG, 3, 3, 2, 2, 1, 1, false, true}},
        {{2, 32, 7, 7}, {PB_POOL_AVG, 7, 7, 1, 1, 0, 0, false, false}},    /* global */
    };
    for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++) {
        const struct pool_arg *a = &pools[i];
        struct ocase *k = add_case(
            a->d.kind == PB_POOL_MAX ? "pool_max" : "pool_avg",
            a->d.kind == PB_POOL_MAX ? PB_BOP_POOL_MAX : PB_BOP_POOL_AVG, 1e-5, 1e-6, TOL,
            pool_run, pool_ref, a, "x %dx%dx%dx%d k%d s%d p%d%s%s", a->x.n, a->x.c, a->x.h,
            a->x.w, a->d.kh, a->d.sh, a->d.ph, a->d.ceil_mode ? " ceil" : "",
            a->d.exclude_pad ? " exclude_pad" : "");
        k->layouts = true;
        k->exact_outs = a->d.kind == PB_POOL_MAX ? 3u : 0u;  /* y, y (inference) */
    }

    /* batch norm: means and variances over M = n·h·w ≤ 120, a square root and the
     * backward's two reductions: float32 rounding ≲ 1e-5: rtol 1e-4, atol 1e-5 */
    static const struct bn_arg bns[] = {
        {{4, 13, 5, 6}, false}, {{4, 13, 5, 6}, true}, {{2, 32, 4, 4}, false}, {{2, 32, 4, 4}, true},
    };
    for (size_t i = 0; i < sizeof bns / sizeof bns[0]; i++)
        add_case("batchnorm", PB_BOP_BATCHNORM, 1e-4, 1e-5, TOL, bn_run, bn_ref, &bns[i],
                 "x %dx%dx%dx%d%s", bns[i].x.n, bns[i].x.c, bns[i].x.h, bns[i].x.w,
                 bns[i].relu ? " relu" : "")
            ->layouts = true;

    /* per element: one rounding each, the same expression as here (axpby's two products
     * and sum in double, rounded once: within 1 ulp) */
    static const struct elt_arg elts[] = {
        {ELT_RELU, 40000}, {ELT_RELU_BWD, 40000}, {ELT_ADD, 40000}, {ELT_ADD_RELU, 40000},
        {ELT_AXPBY, 40000}, {ELT_AXPY0, 40000},
    };
    static const char *const elt_ops[] = {"relu", "relu_bwd", "add", "add_relu", "axpby", "axpby"};
    /* axpby has no supports_op kind: every backend has it (a core op, as reorder) */
    static const int elt_bops[] = {PB_BOP_RELU, PB_BOP_RELU, PB_BOP_ADD, PB_BOP_ADD, -1, -1};
    for (size_t i = 0; i < sizeof elts / sizeof elts[0]; i++) {
        bool ax = elts[i].kind == ELT_AXPBY;
        add_case(elt_ops[i], elt_bops[i], ax ? 1.2e-7 : 0, ax ? 1e-7 : 0, EXACT, elt_run, elt_ref,
                 &elts[i], "n %zu%s", elts[i].n, elts[i].kind == ELT_AXPY0 ? " beta 0" : "");
    }
    static const struct drop_arg drops[] = {{41000, 0.3f, 0}, {40000, 0.3f, 1000}, {1000, 0.0f, 7}};
    for (size_t i = 0; i < sizeof drops / sizeof drops[0]; i++)
        add_case("dropout", PB_BOP_DROPOUT, 0, 0, EXACT, drop_run, drop_ref, &drops[i],
                 "n %zu p %g first %llu", drops[i].n, (double)drops[i].p,
                 (unsigned long long)drops[i].first);

    static const struct cat_arg cats[] = {
        {3, 2, 3, 4, {8, 5, 16, 0}}, {4, 3, 3, 5, {8, 5, 16, 27}}, {2, 2, 8, 8, {32, 32, 0, 0}},
    };
    for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++)
        add_case("concat", PB_BOP_CONCAT, 0, 0, EXACT, cat_run, cat_ref, &cats[i],
                 "%d parts of %d,%d,%d,%d channels, %dx%d", cats[i].k, cats[i].cs[0],
                 cats[i].cs[1], cats[i].cs[2], cats[i].cs[3], cats[i].h, cats[i].w)
            ->layouts = true;
    static const struct pb_shape reorders[] = {{3, 13, 4, 5}, {2, 32, 3, 3}};
    for (size_t i = 0; i < sizeof reorders / sizeof reorders[0]; i++)
        add_case("reorder", -1, 0, 0, EXACT, reorder_run, reorder_ref, &reorders[i],
                 "%dx%dx%dx%d into every layout", reorders[i].n, reorders[i].c, reorders[i].h,
                 reorders[i].w)
            ->layouts = true;
    add_case("fill", -1, 0, 0, EXACT, fill_run, fill_ref, NULL, "n 40000 at an offset");
    add_case("copy", -1, 0, 0, EXACT, copy_run, copy_ref, NULL, "n 39991 at offsets");

    /* softmax-xent: expf/logf and row sums of ≤ 1000 terms in float: rtol 1e-5 against
     * double (the CPU sums in double); the correct count exact. c 1000: more classes than a
     * CUDA row block has threads (cuda_loss.cu: each thread's run, then the trees). */
    static const struct xent_arg xents[] = {
        {7, 11, 0.0f, -1, 0}, {7, 11, 0.1f, -1, 0}, {16, 100, 0.1f, 3, 0}, {64, 10, 0.0f, 0, 0},
        {16, 100, 0.1f, 3, 4}, {8, 1000, 0.1f, 3, 0},
    };
    for (size_t i = 0; i < sizeof xents / sizeof xents[0]; i++)
        add_case("softmax_xent", PB_BOP_SOFTMAX_XENT, 1e-5, 1e-7, TOL, xent_run, xent_ref,
                 &xents[i], "n %d c %d eps %g ignore %d grad_rows %d", xents[i].n, xents[i].c,
                 (double)xents[i].eps_ls, xents[i].ignore, xents[i].grad_rows);

    /* embedding: the forward copies rows (exact), the backward sums ≤ n rows in float:
     * rtol 1e-5, atol 1e-6; across backends the same bits (each element's sum in token
     * order, kernels/seq.h's row add). n 1500, dim 130, vocab 300: on CUDA two token tiles, two
     * column blocks (the second mostly idle) and fewer row groups than rows (cuda_seq.cu). */
    static const struct emb_arg embs[] = {{40, 50, 12, 0}, {64, 200, 32, -1}, {1500, 300, 130, 5}};
    for (size_t i = 0; i < sizeof embs / sizeof embs[0]; i++)
        add_case("embedding", PB_BOP_EMBEDDING, 1e-5, 1e-6, EXACT, emb_run, emb_ref, &embs[i],
                 "n %d vocab %d dim %d padding %d", embs[i].n, embs[i].vocab, embs[i].dim,
                 embs[i].padding);

    /* seq_mean: a sum of ≤ 6 floats then a division: rtol 1e-6; across backends the same
     * bits (the sum in step order in double, kernels/seq.h's division) */
    static const struct seq_arg seqs[] = {
        {3, 5, 7, true, false, 0, 0}, {4, 6, 33, false, false, 0, 0},
    };
    for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++)
        add_case("seq_mean", PB_BOP_SEQ_MEAN, 1e-6, 1e-7, EXACT, seq_mean_run, seq_mean_ref,
                 &seqs[i], "batch %d steps %d f %d%s", seqs[i].batch, seqs[i].steps, seqs[i].f,
                 seqs[i].lengths ? " lengths" : "");
    static const struct seq_arg gathers[] = {
        {3, 5, 7, true, true, 10, 8}, {3, 5, 7, true, false, 7, 7}, {4, 6, 16, false, true, 16, 32},
        {2, 4, 5, true, true, 5, 5},
    };
    for (size_t i = 0; i < sizeof gathers / sizeof gathers[0]; i++)
        add_case("seq_gather", PB_BOP_SEQ_GATHER, 0, 0, EXACT, gather_run, gather_ref, &gathers[i],
                 "batch %d steps %d f %d%s%s strides %d, %d", gathers[i].batch, gathers[i].steps,
                 gathers[i].f, gathers[i].lengths ? " lengths" : "",
                 gathers[i].reverse ? " reverse" : "", gathers[i].x_stride, gathers[i].y_stride);

    /* LSTM: float32 against double over sums of ≤ I + H products per gate carried over
     * ≤ 6 steps: rtol 1e-4, atol 1e-5 (tests/compute/test_cpu_lstm.c's bound, atol for the
     * gradients' cancellations); batch 20 × hidden 16: more cells than a CUDA block has
     * threads (cuda_lstm.cu) */
    static const struct pb_lstm_desc lstms[] = {{2, 4, 5, 6}, {3, 6, 8, 16}, {20, 2, 3, 16}};
    for (size_t i = 0; i < sizeof lstms / sizeof lstms[0]; i++)
        add_case("lstm", PB_BOP_LSTM, 1e-4, 1e-5, TOL, lstm_run, lstm_ref, &lstms[i],
                 "batch %d steps %d input %d hidden %d", lstms[i].batch, lstms[i].steps,
                 lstms[i].input, lstms[i].hidden);

    /* attention: projections of ≤ 24 products, the CPU's tanh within 3 ulp, a softmax
     * over ≤ 40 keys, the backward through all of them: rtol 1e-4, atol 1e-5. The last
     * case is for CUDA's grids (cuda_attention.cu): score tiles past tk and tq, a tile
     * wholly past a length, unit chunks with a partial last one, softmax rows over more
     * keys than a warp has lanes and in a partial block (the references differentiate
     * numerically: the case stays small). */
    static const struct attn_arg attns[] = {
        {{3, 4, 5, 4, 6, 7}, true}, {{3, 1, 5, 4, 6, 37}, true}, {{2, 3, 9, 16, 24, 48}, false},
        {{2, 10, 40, 2, 3, 35}, true},
    };
    for (size_t i = 0; i < sizeof attns / sizeof attns[0]; i++) {
        const struct pb_attn_desc *d = &attns[i].d;
        add_case("attention", PB_BOP_ATTENTION, 1e-4, 1e-5, TOL, attn_run, attn_ref, &attns[i],
                 "batch %d tq %d tk %d query %d key %d units %d%s", d->batch, d->tq, d->tk,
                 d->query, d->key, d->units, attns[i].lengths ? " lengths" : "");
    }

    /* bad inputs: a token outside the vocabulary (forward and backward), a length outside
     * [1, steps] (the masked mean, the gather) or [1, tk] (attention), a label outside the
     * classes; a device reports them at the sync after the op */
    static const enum bad_kind bads[] = {BAD_TOKEN_FWD, BAD_TOKEN_BWD, BAD_SEQ_MEAN,
                                         BAD_SEQ_GATHER, BAD_LABEL, BAD_ATTN_LEN};
    static const char *const bad_ops[] = {"embedding", "embedding", "seq_mean", "seq_gather",
                                          "softmax_xent", "attention"};
    static const int bad_bops[] = {PB_BOP_EMBEDDING, PB_BOP_EMBEDDING, PB_BOP_SEQ_MEAN,
                                   PB_BOP_SEQ_GATHER, PB_BOP_SOFTMAX_XENT, PB_BOP_ATTENTION};
    static const char *const bad_msgs[][2] = {
        {"embedding: token 50", "is not a whole number in [0, 50)"},
        {"embedding: token 2.5", "is not a whole number in [0, 50)"},
        {"seq_mean: sequence 1 has length 0, outside [1, 3]", NULL},
        {"seq_gather: sequence 1 has length 4, outside [1, 3]", NULL},
        {"softmax_xent: row 1 has label 11, outside the 11 classes [0, 11)", NULL},
        {"attention: source 1 has length 6, outside [1, 5]", NULL},
    };
    static const char *const bad_labels[] = {"token 50 of 50 (forward)", "token 2.5 (backward)",
                                             "length 0", "length 4 of 3 steps",
                                             "label 11 of 11 classes", "length 6 of tk 5"};
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        struct ocase *k = add_case(bad_ops[i], bad_bops[i], 0, 0, EXACT, bad_run, NULL, &bads[i],
                                   "bad input: %s", bad_labels[i]);
        k->fails_with[0] = bad_msgs[i][0], k->fails_with[1] = bad_msgs[i][1];
    }

    /* optimizer steps and predictions against double: rtol 1e-5 (a few roundings and a
     * square root per element), atol 1e-6 (sums of terms near 1 that cancel keep their
     * absolute error of a few 2^-24); across backends the same bits */
    static const struct optim_arg optims[] = {
        {PB_OPTK_SGD, false, false, false, false, true, false, false},
        {PB_OPTK_SGD, true, true, true, false, true, true, false},
        {PB_OPTK_SGD, true, true, false, true, true, false, false},
        {PB_OPTK_SGD, false, true, false, false, false, true, true},
        {PB_OPTK_ADAM, false, false, false, false, true, false, false},
        {PB_OPTK_ADAM, true, false, false, false, false, true, true},
        {PB_OPTK_ADAMW, false, false, false, false, true, false, false},
        {PB_OPTK_RMSPROP, true, false, false, false, true, true, true},
        {PB_OPTK_RMSPROP, false, true, false, false, true, false, false},
        {PB_OPTK_NADAM, true, false, false, false, true, false, false},
        {PB_OPTK_NADAM, false, false, false, false, false, true, true},
    };
    static const char *const fam[] = {"sgd", "adam", "adamw", "rmsprop", "nadam"};
    for (size_t i = 0; i < sizeof optims / sizeof optims[0]; i++) {
        const struct optim_arg *a = &optims[i];
        add_case("optim_step", PB_BOP_OPTIM_STEP, 1e-5, 1e-6, EXACT, optim_run, optim_ref, a,
                 "%s%s%s%s%s%s%s%s", fam[a->family], a->wd ? " wd" : "", a->buf ? " buf" : "",
                 a->first ? " first" : "", a->nesterov ? " nesterov" : "",
                 a->zero_grad ? " zero_grad" : "", a->d_last ? " d_last" : "",
                 a->g_last ? " g_last" : "");
    }
    static const struct pred_arg preds[] = {
        {PB_DW_ZERO, false, false}, {PB_DW_LINEAR, true, false}, {PB_DW_LINEAR, false, true},
        {PB_DW_ADAM, false, false}, {PB_DW_ADAM, false, true}, {PB_DW_RMS, false, false},
        {PB_DW_ZERO, false, true},
    };
    static const char *const kinds[] = {"zero", "linear", "adam", "rms"};
    for (size_t i = 0; i < sizeof preds / sizeof preds[0]; i++)
        add_case("predict", PB_BOP_PREDICT, 1e-5, 1e-6, EXACT, pred_run, pred_ref, &preds[i],
                 "%s%s%s", kinds[preds[i].kind], preds[i].has_y ? " with y" : "",
                 preds[i].inplace ? " in place" : "");
}

/* ---- comparing ---- */

struct cmp {
    double max_abs, max_rel, worst;  /* worst: max |a − b| / (atol + rtol·|b|) */
    double se, sb;                   /* Σ(a − b)², Σb² */
    bool bits_equal, shapes_ok;
    char where[160];
};

/* exact: outputs (bit o: output o) compared without tolerance whatever rtol and atol */
static void compare(const struct outs *got, const struct outs *want, double rtol, double atol,
                    unsigned exact, struct cmp *r)
{
    memset(r, 0, sizeof *r);
    r->bits_equal = r->shapes_ok = true;
    if (got->n != want->n) {
        r->shapes_ok = r->bits_equal = false;
        snprintf(r->where, sizeof r->where, "%d outputs, expected %d", got->n, want->n);
        return;
    }
    for (int o = 0; o < got->n; o++) {
        bool bits = (exact >> o & 1u) || (rtol == 0 && atol == 0);
        if (got->len[o] != want->len[o]) {
            r->shapes_ok = r->bits_equal = false;
            snprintf(r->where, sizeof r->where, "%s: %zu floats, expected %zu", want->name[o],
                     got->len[o], want->len[o]);
            return;
        }
        for (size_t i = 0; i < got->len[o]; i++) {
            float a = got->v[o][i], b = want->v[o][i];
            bool same = memcmp(&a, &b, sizeof a) == 0;
            double err = 0, rel = 0, ratio = 0;
            if (!same) {
                r->bits_equal = false;
                if (isnan(a) || isnan(b)) {
                    err = rel = ratio = INFINITY;
                } else {
                    err = fabs((double)a - (double)b);
                    rel = err / fmax(fabs((double)b), 1e-30);
                    ratio = bits ? INFINITY : err / (atol + rtol * fabs((double)b));
                }
            }
            if (isfinite(a) && isfinite(b)) {
                r->se += ((double)a - b) * ((double)a - b);
                r->sb += (double)b * b;
            }
            if (err > r->max_abs)
                r->max_abs = err;
            if (rel > r->max_rel)
                r->max_rel = rel;
            if (ratio > r->worst) {
                r->worst = ratio;
                snprintf(r->where, sizeof r->where, "%s[%zu]: %.9g, expected %.9g", want->name[o],
                         i, (double)a, (double)b);
            }
        }
    }
}

static double nmse(const struct cmp *r)
{
    return r->sb > 0 ? r->se / r->sb : r->se;
}

/* ---- the driver ---- */

struct opts {
    const char *backend, *op, *json;
    bool bench, require_all, list;
};

static struct {
    int passed, failed, unsupported;
} tally;

static FILE *json;
static bool json_first = true;

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

/* One result line and its JSON record; status "pass", "FAIL" or "unsupported". */
static void record(const char *be, const struct ocase *k, int layout, const char *against,
                   const char *status, const struct cmp *r, double t, double t_cpu,
                   const char *why)
{
    char lay[16] = "";
    if (k->layouts)
        snprintf(lay, sizeof lay, " L%d", layout);
    printf("  %-5s %-13s %-52s%-4s %-11s", be, k->op, k->label, lay, status);
    if (r && r->shapes_ok)
        printf(" vs %-4s max_abs %.2e max_rel %.2e nmse %.2e%s", against, r->max_abs, r->max_rel,
               nmse(r), r->bits_equal ? " bits=" : "");
    if (t > 0)
        printf(" %.3f ms", t * 1e3);
    if (t > 0 && t_cpu > 0)
        printf(" (cpu/%s %.2f)", be, t_cpu / t);
    if (why && *why)
        printf("\n        %s", why);
    printf("\n");
    if (!json)
        return;
    fprintf(json, "%s\n  {\"backend\": ", json_first ? "" : ",");
    json_first = false;
    json_str(json, be);
    fprintf(json, ", \"op\": ");
    json_str(json, k->op);
    fprintf(json, ", \"case\": ");
    json_str(json, k->label);
    fprintf(json, ", \"layout\": %d, \"against\": ", k->layouts ? layout : 0);
    json_str(json, against);
    fprintf(json, ", \"status\": ");
    json_str(json, status);
    fprintf(json, ", \"parity\": \"%s\"", k->parity == EXACT ? "exact" : "tolerance");
    if (r && r->shapes_ok) {
        fprintf(json, ", \"max_abs\": ");
        json_num(json, r->max_abs);
        fprintf(json, ", \"max_rel\": ");
        json_num(json, r->max_rel);
        fprintf(json, ", \"nmse\": ");
        json_num(json, nmse(r));
        fprintf(json, ", \"bits_equal\": %s", r->bits_equal ? "true" : "false");
    }
    fprintf(json, ", \"time_ms\": ");
    json_num(json, t > 0 ? t * 1e3 : NAN);
    fprintf(json, ", \"cpu_time_ms\": ");
    json_num(json, t_cpu > 0 ? t_cpu * 1e3 : NAN);
    if (why && *why) {
        fprintf(json, ", \"why\": ");
        json_str(json, why);
    }
    fputc('}', json);
}

/* Runs case k once on be in layout l: its outputs into o, its op time returned; an
 * error (the instance failed, an invariant the run checks) into err. */
static double run_once(struct pb_backend *be, const struct ocase *k, enum pb_layout l,
                       const enum pb_layout *layouts, int nlayouts, struct outs *o, char *err,
                       size_t cap)
{
    struct ctx c = {.be = be, .l = l, .layouts = layouts, .nlayouts = nlayouts, .o = o};
    k->run(&c, k->arg);
    be->ops->sync(be);
    struct pb_err e;
    if (pb_backend_status(be, &e))
        snprintf(err, cap, "the instance failed: %.400s", e.msg);
    else
        snprintf(err, cap, "%s", c.err);
    dfree_all(&c);
    return c.t_op;
}

/* Times case k on be: the fastest of several runs (at least 3, about 0.2 s). */
static double bench_case(struct pb_backend *be, const struct ocase *k, enum pb_layout l,
                         const enum pb_layout *layouts, int nlayouts)
{
    double best = INFINITY, spent = 0;
    for (int rep = 0; rep < 50 && (rep < 3 || spent < 0.2); rep++) {
        struct outs o = {0};
        char err[512];
        double t = run_once(be, k, l, layouts, nlayouts, &o, err, sizeof err);
        outs_free(&o);
        spent += t;
        if (t < best)
            best = t;
    }
    return best;
}

/* The layouts be hands out: plain, and what conv_layout and concat_layout answer for
 * convolutions of zoo shapes on plain inputs and on the layouts found. */
static int find_layouts(struct pb_backend *be, enum pb_layout *out, int cap)
{
    static const struct conv_arg probes[] = {
        {{2, 3, 16, 16}, {3, 16, 3, 3, 1, 1, 1, 1, false}},
        {{2, 16, 8, 8}, {16, 32, 3, 3, 1, 1, 1, 1, false}},
        {{2, 32, 8, 8}, {32, 64, 1, 1, 1, 1, 0, 0, false}},
        {{2, 16, 16, 16}, {16, 8, 3, 3, 1, 1, 1, 1, false}},
        {{1, 64, 2, 2}, {64, 40, 3, 3, 1, 1, 1, 1, false}},
    };
    int n = 0;
    out[n++] = PB_LAYOUT_PLAIN;
    for (int i = 0; i < n && i < cap; i++) {
        for (size_t p = 0; p < sizeof probes / sizeof probes[0]; p++) {
            struct pb_tensor x = {NULL, probes[p].x, out[i]};
            struct pb_err e;
            x.data = pb_backend_alloc(be, be->ops->layout_floats(be, x.shape, x.layout) * 4,
                                      PB_MEM_ACTS, &e);
            if (!x.data)
                continue;
            const struct pb_tensor *two[2] = {&x, &x};
            enum pb_layout cand[2] = {be->ops->conv_layout(be, &probes[p].d, &x),
                                      be->ops->concat_layout(be, 2, two)};
            pb_backend_free(be, x.data);
            for (int j = 0; j < 2; j++) {
                bool seen = false;
                for (int m = 0; m < n; m++)
                    seen |= out[m] == cand[j];
                if (!seen && n < cap)
                    out[n++] = cand[j];
            }
        }
    }
    return n;
}

/* Whether the table has every entry of op kind bop (supports_op says yes only then). */
static bool table_has(const struct pb_backend_ops *o, int bop)
{
    switch (bop) {
    case PB_BOP_GEMM:
        return o->gemm;
    case PB_BOP_BIAS:
        return o->bias_add && o->bias_grad;
    case PB_BOP_CONV:
        return o->conv_layout && o->conv_fwd && o->conv_bwd_data && o->conv_bwd_weights;
    case PB_BOP_POOL_MAX:
    case PB_BOP_POOL_AVG:
        return o->pool_workspace && o->pool_fwd && o->pool_bwd;
    case PB_BOP_BATCHNORM:
        return o->bn_aux_bytes && o->bn_fwd_train && o->bn_fwd_infer && o->bn_bwd;
    case PB_BOP_RELU:
        return o->relu_fwd && o->relu_bwd;
    case PB_BOP_ADD:
        return o->add && o->add_relu;
    case PB_BOP_DROPOUT:
        return o->dropout;
    case PB_BOP_CONCAT:
        return o->concat_layout && o->concat && o->split;
    case PB_BOP_SOFTMAX_XENT:
        return o->softmax_xent;
    case PB_BOP_OPTIM_STEP:
        return o->optim_step;
    case PB_BOP_PREDICT:
        return o->predict;
    case PB_BOP_EMBEDDING:
        return o->embedding_fwd && o->embedding_bwd;
    case PB_BOP_LSTM:
        return o->lstm_workspace && o->lstm_fwd && o->lstm_bwd;
    case PB_BOP_SEQ_MEAN:
        return o->seq_mean_fwd && o->seq_mean_bwd;
    case PB_BOP_SEQ_GATHER:
        return o->seq_gather;
    case PB_BOP_ATTENTION:
        return o->attn_workspace && o->attn_fwd && o->attn_bwd && o->attn_weights &&
               o->attn_project_keys && o->attn_fwd_projected;
    default:
        return true;
    }
}

static bool op_has(const struct pb_backend_ops *o, const struct ocase *k)
{
    if (!strcmp(k->op, "reorder"))
        return o->reorder != NULL;
    if (!strcmp(k->op, "fill"))
        return o->fill != NULL;
    if (!strcmp(k->op, "copy"))
        return o->copy != NULL;
    if (!strcmp(k->op, "axpby"))
        return o->axpby != NULL;
    return true;
}

static bool selected(const struct ocase *k, const struct opts *op)
{
    if (k->bench_only && !op->bench)
        return false;
    if (!op->op)
        return true;
    /* a comma-separated list of names; an op is selected when its name contains one */
    for (const char *p = op->op; *p;) {
        size_t len = strcspn(p, ",");
        for (const char *q = k->op; len && *q; q++)
            if (!strncmp(q, p, len))
                return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* Every instance's configuration: the CPU's threads, FP32 (no TF32), deterministic. */
static const struct pb_backend_cfg backend_cfg = {
    .device = 0, .threads = 0, .tf32 = false, .deterministic = true};

/* A bad-input case on a fresh instance of backend `name` (the failure ends that instance),
 * be bound again after. */
static void run_bad_input(const char *name, struct pb_backend *be, const struct ocase *k)
{
    struct pb_err e;
    struct pb_backend *fresh = pb_backend_create(name, &backend_cfg, &e);
    char err[512] = "", why[768] = "";
    if (fresh) {
        pb_backend_bind(fresh);
        run_once(fresh, k, PB_LAYOUT_PLAIN, NULL, 0, &(struct outs){0}, err, sizeof err);
        pb_backend_destroy(fresh);
        pb_backend_bind(be);
    } else {
        snprintf(err, sizeof err, "a fresh instance: %.400s", e.msg);
    }
    bool ok = fresh && strstr(err, "the instance failed: ") && strstr(err, k->fails_with[0]) &&
              (!k->fails_with[1] || strstr(err, k->fails_with[1]));
    if (!ok)
        snprintf(why, sizeof why, "wanted the instance failed with \"%s%s%s\", got: %s",
                 k->fails_with[0], k->fails_with[1] ? " … " : "",
                 k->fails_with[1] ? k->fails_with[1] : "", err[0] ? err : "no failure");
    record(name, k, 0, "", ok ? "pass" : "FAIL", NULL, 0, 0, why);
    ok ? tally.passed++ : tally.failed++;
}

/* The CPU backend's outputs and times of every selected case, in plain layout: what
 * the other backends are held against. */
struct cpu_result {
    struct outs o;
    double t;
    bool ok;
};

static void run_backend(const char *name, struct pb_backend *be, struct pb_backend *cpu,
                        struct cpu_result *cres, const struct opts *op)
{
    bool is_cpu = be == cpu;
    enum pb_layout layouts[8];
    int nl = find_layouts(be, layouts, 8);
    printf("%s: %d layout%s (", name, nl, nl > 1 ? "s" : "");
    for (int i = 0; i < nl; i++)
        printf("%sL%d = %d", i ? ", " : "", i, (int)layouts[i]);
    printf("); against %s\n", is_cpu ? "the references of tests/support/op_refs.c" : "the cpu backend");
    for (int ci = 0; ci < ncases; ci++) {
        const struct ocase *k = &cases[ci];
        if (!selected(k, op))
            continue;
        bool sup = op_has(be->ops, k) && (k->bop < 0 || be->ops->supports_op(be, k->bop));
        if (sup && k->bop >= 0 && !table_has(be->ops, k->bop)) {
            record(name, k, 0, "", "FAIL", NULL, 0, 0,
                   "supports_op says yes, but the ops table lacks an entry of this op");
            tally.failed++;
            continue;
        }
        if (!sup) {
            bool fatal = op->require_all;
            record(name, k, 0, "", fatal ? "FAIL" : "unsupported", NULL, 0, 0,
                   fatal ? "unsupported (--require-all)" : "");
            fatal ? tally.failed++ : tally.unsupported++;
            continue;
        }
        if (k->fails_with[0]) {
            run_bad_input(name, be, k);
            continue;
        }
        for (int li = 0; li < (k->layouts ? nl : 1); li++) {
            enum pb_layout l = layouts[li];
            struct outs got = {0}, again = {0}, want = {0};
            char err[512] = "", err2[512] = "", why[768] = "";
            double t = run_once(be, k, l, layouts, nl, &got, err, sizeof err);
            struct cmp r;
            bool have = false, ok = !err[0];
            const char *against = is_cpu ? "ref" : "cpu";
            if (ok) {
                run_once(be, k, l, layouts, nl, &again, err2, sizeof err2);
                struct cmp d;
                compare(&again, &got, 0, 0, 0, &d);
                if (err2[0] || !d.bits_equal) {
                    ok = false;
                    snprintf(why, sizeof why, "not deterministic: a second run %s %s",
                             err2[0] ? "failed:" : "differs at", err2[0] ? err2 : d.where);
                }
            } else {
                snprintf(why, sizeof why, "%s", err);
            }
            if (ok && is_cpu && k->ref) {
                k->ref(k->arg, &want, &got);
                compare(&got, &want, k->rtol, k->atol, 0, &r);
                have = true;
                if (!r.shapes_ok || r.worst > 1.0) {
                    ok = false;
                    snprintf(why, sizeof why, "%s (rtol %g, atol %g)", r.where, k->rtol, k->atol);
                }
            } else if (ok && !is_cpu && cres[ci].ok) {
                bool exact = k->parity == EXACT;
                compare(&got, &cres[ci].o, exact ? 0 : 2 * k->rtol, exact ? 0 : 2 * k->atol,
                        k->exact_outs, &r);
                have = true;
                if (!r.shapes_ok || r.worst > 1.0) {
                    ok = false;
                    snprintf(why, sizeof why, "%s (%s)", r.where,
                             exact ? "bit-identical wanted"
                             : k->exact_outs ? "beyond twice the tolerance, or not bit-identical "
                                               "where wanted"
                                             : "beyond twice the tolerance");
                }
            } else if (ok && !is_cpu) {
                ok = false;
                snprintf(why, sizeof why, "no cpu result to compare with");
            }
            if (op->bench)
                t = bench_case(be, k, l, layouts, nl);
            double t_cpu = is_cpu ? 0 : cres[ci].t;
            record(name, k, li, have ? against : "", ok ? "pass" : "FAIL", have ? &r : NULL, t,
                   t_cpu, why);
            ok ? tally.passed++ : tally.failed++;
            if (is_cpu && li == 0 && ok) {
                cres[ci].o = got, cres[ci].t = t, cres[ci].ok = true;
                got.n = 0;
            }
            outs_free(&got);
            outs_free(&again);
            outs_free(&want);
            arena_reset();
        }
    }
}

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--backend NAME] [--op NAME] [--bench] [--json FILE] [--require-all] "
            "[--list]\n"
            "  --backend NAME  only this backend (the cpu backend runs as the reference too)\n"
            "  --op NAMES      only the ops whose name contains one of NAMES (comma-separated)\n"
            "  --bench         time each op (fastest of several runs), with larger shapes\n"
            "  --json FILE     a per-case summary: status, max abs/rel error, bits equal, NMSE, time\n"
            "  --require-all   an op a backend does not support is a failure\n"
            "  --list          the cases, without running them\n",
            argv0);
    return 2;
}

int main(int argc, char **argv)
{
    struct opts op = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            op.backend = argv[++i];
        else if (!strcmp(argv[i], "--op") && i + 1 < argc)
            op.op = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            op.json = argv[++i];
        else if (!strcmp(argv[i], "--bench"))
            op.bench = true;
        else if (!strcmp(argv[i], "--require-all"))
            op.require_all = true;
        else if (!strcmp(argv[i], "--list"))
            op.list = true;
        else
            return usage(argv[0]);
    }
    build_cases();
    if (op.list) {
        for (int i = 0; i < ncases; i++)
            if (selected(&cases[i], &op))
                printf("%-13s %s%s\n", cases[i].op, cases[i].label,
                       cases[i].layouts ? " (every layout)" : "");
        return 0;
    }
#ifdef PB_OPS_WITH_DEFERRED
    pb_deferred_register();
#endif
    /* the backends to run: the registry's table, and one registered at run time by name */
    const char *names[16];
    int nnames = 0;
    bool known = !op.backend;
    for (const struct pb_backend_reg *r = pb_backends; r->name && nnames < 15; r++) {
        names[nnames++] = r->name;
        known |= op.backend && !strcmp(op.backend, r->name);
    }
    struct pb_err e;
    if (!known && pb_backend_find(op.backend, &e)) {
        names[nnames++] = op.backend;
        known = true;
    }
    if (!known) {
        fprintf(stderr, "test_backend_ops: unknown backend '%s'\n", op.backend);
        return 2;
    }
    if (op.json && !(json = fopen(op.json, "w"))) {
        fprintf(stderr, "test_backend_ops: cannot write %s\n", op.json);
        return 2;
    }
    if (json)
        fprintf(json, "{\"cases\": [");

    struct pb_backend *cpu = pb_backend_create("cpu", &backend_cfg, &e);
    if (!cpu) {
        fprintf(stderr, "test_backend_ops: the cpu backend: %s\n", e.msg);
        return 1;
    }
    struct cpu_result *cres = calloc(ncases, sizeof *cres);
    run_backend("cpu", cpu, cpu, cres, &op);
    int not_available = 0;
    for (int ni = 0; ni < nnames; ni++) {
        const char *name = names[ni];
        if (!strcmp(name, "cpu") || (op.backend && strcmp(op.backend, name)))
            continue;
        struct pb_backend *be = pb_backend_create(name, &backend_cfg, &e);
        if (!be) {
            printf("%s: not available here: %s\n", name, e.msg);
            if (json) {
                fprintf(json, "%s\n  {\"backend\": ", json_first ? "" : ",");
                json_first = false;
                json_str(json, name);
                fprintf(json, ", \"status\": \"not available\", \"why\": ");
                json_str(json, e.msg);
                fputc('}', json);
            }
            /* asked for by name, its absence is a failure */
            if (op.backend)
                tally.failed++;
            not_available++;
            continue;
        }
        pb_backend_bind(be);
        run_backend(name, be, cpu, cres, &op);
        pb_backend_destroy(be);
        pb_backend_bind(cpu);
    }
#ifdef PB_OPS_WITH_DEFERRED
    char violations[4096];
    int nviolations = pb_deferred_violations(violations, sizeof violations);
    if (nviolations) {
        printf("FAIL: %d device-contract violations on the deferred backend:\n%s\n", nviolations,
               violations);
        tally.failed += nviolations;
    }
#endif
    for (int i = 0; i < ncases; i++)
        outs_free(&cres[i].o);
    free(cres);
    pb_backend_destroy(cpu);
    arena_reset();
    free(arena);
    if (json) {
        fprintf(json, "\n], \"passed\": %d, \"failed\": %d, \"unsupported\": %d, "
                      "\"not_available\": %d}\n",
                tally.passed, tally.failed, tally.unsupported, not_available);
        fclose(json);
    }
    if (tally.unsupported)
        printf("%d unsupported (a failure with --require-all)\n", tally.unsupported);
    printf("%d passed, %d failed\n", tally.passed, tally.failed);
    return tally.failed ? 1 : 0;
}
