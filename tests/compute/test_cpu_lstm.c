/* tests/compute/test_cpu_lstm.c — the CPU backend's LSTM (harness/compute/cpu/cpu_lstm.c behind
 * lstm_workspace, lstm_fwd and lstm_bwd) against a double-precision C LSTM written here
 * (PyTorch's equations and gate order i, f, g, o), on shapes of odd sizes that leave
 * partial product tiles and pointwise chunks (rows ≥ 1024, H > 256): y, dx and the four weight gradients, which accumulate onto what
 * dw_acc held; the bias gradient added to both b_ih's and b_hh's; dx = NULL; the
 * inference forward (no workspace); the final states, and initial states carried from
 * one run into the next (T steps = T1 steps, then T − T1 from their states); the same
 * bits at 1 and 3 threads, twice on one instance and on a fresh one. The PyTorch parity of the LSTM layers is in
 * test_seq_layers and test_gnmt_layers. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/rng.h"
#include "harness/compute/backend.h"
#include "harness/compute/registry.h"
#include "tests/support/test_util.h"

/* float32 against double: sums of at most I + H = 112 products per gate, carried over
 * at most 12 steps, stay far below 1e-4 relative; atol for entries that cancel. */
#define RTOL 1e-4
#define ATOL 1e-6

static struct pb_backend *be_new(int threads)
{
    struct pb_err e;
    struct pb_backend_cfg bc = {.device = 0, .threads = threads};
    struct pb_backend *be = pb_backend_create("cpu", &bc, &e);
    ck_assert_msg(be != NULL, "%s", e.msg);
    return be;
}

/* n uniforms in [-s, s), a pure function of tag */
static float *host_rand(size_t n, uint64_t tag, float s)
{
    float *p = malloc((n + 1) * sizeof *p);
    pb_rng_fill_uniform(pb_rng_key(PB_RNG_DATA, 77, tag, 0, 0), 0, p, n, -s, s);
    return p;
}

/* One case's host data: inputs, and what the backend or the reference gave. */
struct lcase {
    struct pb_lstm_desc d;
    size_t nx, ny, nw;
    float *x, *w, *dy, *dw0;  /* inputs; dw0: what dw_acc holds before the backward */
};

struct lout {
    float *y, *dx, *dw;  /* dw: dw0 + the gradients */
    float *c_last;       /* [B, H] the cell state after the last step (the reference's) */
};

static void lcase_init(struct lcase *c, int B, int T, int I, int H)
{
    c->d = (struct pb_lstm_desc){B, T, I, H};
    size_t g = 4 * (size_t)H;
    c->nx = (size_t)B * T * I;
    c->ny = (size_t)B * T * H;
    c->nw = g * ((size_t)I + H + 2);
    c->x = host_rand(c->nx, 1, 1.0f);
    c->w = host_rand(c->nw, 2, 1.0f / sqrtf((float)H));  /* PyTorch's init range */
    c->dy = host_rand(c->ny, 3, 1.0f);
    c->dw0 = host_rand(c->nw, 4, 1.0f);
    /* the two biases' gradients start equal, so they must stay equal */
    memcpy(c->dw0 + c->nw - g, c->dw0 + c->nw - 2 * g, g * sizeof(float));
}

static void lcase_free(struct lcase *c)
{
    free(c->x);
    free(c->w);
    free(c->dy);
    free(c->dw0);
}

static void lout_alloc(const struct lcase *c, struct lout *o)
{
    o->y = malloc(c->ny * sizeof(float));
    o->dx = malloc(c->nx * sizeof(float));
    o->dw = malloc(c->nw * sizeof(float));
    o->c_last = malloc((size_t)c->d.batch * c->d.hidden * sizeof(float));
}

static void lout_free(struct lout *o)
{
    free(o->y);
    free(o->dx);
    free(o->dw);
    free(o->c_last);
}

static double sigm(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

/* The reference: forward over t, backward through time, in double. */
static void lstm_ref(const struct lcase *c, struct lout *o)
{
    int B = c->d.batch, T = c->d.steps, I = c->d.input, H = c->d.hidden, G = 4 * H;
    const float *wih = c->w, *whh = wih + (size_t)G * I, *bih = whh + (size_t)G * H,
                *bhh = bih + G;
    size_t bt = (size_t)B * T;
    /* per (b, t): gates i, f, g, o [4H], c [H], h [H] */
    double *gate = calloc(bt * G, sizeof *gate), *cs = calloc(bt * H, sizeof *cs);
    double *hs = calloc(bt * H, sizeof *hs);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t r = (size_t)b * T + t;
            const float *xt = c->x + r * I;
            for (int j = 0; j < G; j++) {
                double a = (double)bih[j] + bhh[j];
                for (int k = 0; k < I; k++)
                    a += (double)wih[(size_t)j * I + k] * xt[k];
                for (int k = 0; t > 0 && k < H; k++)
                    a += (double)whh[(size_t)j * H + k] * hs[(r - 1) * H + k];
                gate[r * G + j] = j / H == 2 ? tanh(a) : sigm(a);
            }
            for (int j = 0; j < H; j++) {
                const double *gr = gate + r * G;
                double cp = t > 0 ? cs[(r - 1) * H + j] : 0.0;
                cs[r * H + j] = gr[H + j] * cp + gr[j] * gr[2 * H + j];
                hs[r * H + j] = gr[3 * H + j] * tanh(cs[r * H + j]);
                o->y[r * H + j] = (float)hs[r * H + j];
                if (t == T - 1)
                    o->c_last[(size_t)b * H + j] = (float)cs[r * H + j];
            }
        }
    double *dw = calloc(c->nw, sizeof *dw), *da = calloc(G, sizeof *da);
    double *dh = calloc(H, sizeof *dh), *dc = calloc(H, sizeof *dc), *dhp = calloc(H, sizeof *dhp);
    double *dwih = dw, *dwhh = dw + (size_t)G * I, *dbih = dwhh + (size_t)G * H, *dbhh = dbih + G;
    for (int b = 0; b < B; b++) {
        memset(dh, 0, H * sizeof *dh);
        memset(dc, 0, H * sizeof *dc);
        for (int t = T - 1; t >= 0; t--) {
            size_t r = (size_t)b * T + t;
            const double *gr = gate + r * G;
            for (int j = 0; j < H; j++) {
                double i = gr[j], f = gr[H + j], g = gr[2 * H + j], og = gr[3 * H + j];
                double tc = tanh(cs[r * H + j]), cp = t > 0 ? cs[(r - 1) * H + j] : 0.0;
                double h = dh[j] + c->dy[r * H + j];
                double cc = dc[j] + h * og * (1.0 - tc * tc);
                da[j] = cc * g * i * (1.0 - i);
                da[H + j] = cc * cp * f * (1.0 - f);
                da[2 * H + j] = cc * i * (1.0 - g * g);
                da[3 * H + j] = h * tc * og * (1.0 - og);
                dc[j] = cc * f;
            }
            for (int k = 0; k < I; k++) {
                double s = 0;
                for (int j = 0; j < G; j++)
                    s += da[j] * wih[(size_t)j * I + k];
                o->dx[r * I + k] = (float)s;
            }
            for (int k = 0; k < H; k++) {
                double s = 0;
                for (int j = 0; j < G; j++)
                    s += da[j] * whh[(size_t)j * H + k];
                dhp[k] = s;
            }
            memcpy(dh, dhp, H * sizeof *dh);
            for (int j = 0; j < G; j++) {
                for (int k = 0; k < I; k++)
                    dwih[(size_t)j * I + k] += da[j] * c->x[r * I + k];
                for (int k = 0; t > 0 && k < H; k++)
                    dwhh[(size_t)j * H + k] += da[j] * hs[(r - 1) * H + k];
                dbih[j] += da[j];
                dbhh[j] += da[j];
            }
        }
    }
    for (size_t i = 0; i < c->nw; i++)
        o->dw[i] = (float)(c->dw0[i] + dw[i]);
    free(gate);
    free(cs);
    free(hs);
    free(dw);
    free(da);
    free(dh);
    free(dc);
    free(dhp);
}

/* The backend's training forward and backward (dx NULL: not wanted, o->dx untouched). */
static void lstm_run(struct pb_backend *be, const struct lcase *c, struct lout *o, bool want_dx)
{
    struct pb_err e;
    size_t wsb = be->ops->lstm_workspace(be, &c->d);
    ck_assert(wsb > 0);
    float *x = pb_backend_alloc(be, c->nx * sizeof(float), PB_MEM_ACTS, &e);
    float *w = pb_backend_alloc(be, c->nw * sizeof(float), PB_MEM_ACTS, &e);
    float *dy = pb_backend_alloc(be, c->ny * sizeof(float), PB_MEM_ACTS, &e);
    float *y = pb_backend_alloc(be, c->ny * sizeof(float), PB_MEM_ACTS, &e);
    float *dx = pb_backend_alloc(be, c->nx * sizeof(float), PB_MEM_ACTS, &e);
    float *dw = pb_backend_alloc(be, c->nw * sizeof(float), PB_MEM_ACTS, &e);
    void *ws = pb_backend_alloc(be, wsb, PB_MEM_ACTS, &e);
    ck_assert(x && w && dy && y && dx && dw && ws);
    be->ops->upload(be, x, c->x, c->nx * sizeof(float));
    be->ops->upload(be, w, c->w, c->nw * sizeof(float));
    be->ops->upload(be, dy, c->dy, c->ny * sizeof(float));
    be->ops->upload(be, dw, c->dw0, c->nw * sizeof(float));
    be->ops->lstm_fwd(be, &c->d, x, w, y, ws, NULL);
    be->ops->lstm_bwd(be, &c->d, x, w, y, dy, ws, want_dx ? dx : NULL, dw);
    be->ops->sync(be);
    ck_assert_msg(!be->failed, "the backend failed");
    be->ops->download(be, o->y, y, c->ny * sizeof(float));
    if (want_dx)
        be->ops->download(be, o->dx, dx, c->nx * sizeof(float));
    be->ops->download(be, o->dw, dw, c->nw * sizeof(float));
    void *bufs[] = {x, w, dy, y, dx, dw, ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        pb_backend_free(be, bufs[i]);
}

static void check_against_ref_tol(int B, int T, int I, int H, double rtol, double atol)
{
    struct lcase c;
    lcase_init(&c, B, T, I, H);
    struct lout got, ref;
    lout_alloc(&c, &got);
    lout_alloc(&c, &ref);
    lstm_ref(&c, &ref);
    struct pb_backend *be = be_new(2);
    lstm_run(be, &c, &got, true);
    pb_assert_close("y", got.y, ref.y, c.ny, rtol, atol);
    pb_assert_close("dx", got.dx, ref.dx, c.nx, rtol, atol);
    size_t g = 4 * (size_t)H, nih = g * I, nhh = g * H;
    pb_assert_close("weight_ih grad", got.dw, ref.dw, nih, rtol, atol);
    pb_assert_close("weight_hh grad", got.dw + nih, ref.dw + nih, nhh, rtol, atol);
    pb_assert_close("bias_ih grad", got.dw + nih + nhh, ref.dw + nih + nhh, g, rtol, atol);
    pb_assert_close("bias_hh grad", got.dw + nih + nhh + g, ref.dw + nih + nhh + g, g, rtol, atol);
    /* one bias gradient added to two equal starts */
    ck_assert_msg(!memcmp(got.dw + nih + nhh, got.dw + nih + nhh + g, g * sizeof(float)),
                  "bias_ih and bias_hh gradients differ");
    /* dx not wanted: the same weight gradients, bit for bit */
    struct lout nodx;
    lout_alloc(&c, &nodx);
    lstm_run(be, &c, &nodx, false);
    ck_assert_msg(!memcmp(nodx.y, got.y, c.ny * sizeof(float)), "y differs");
    ck_assert_msg(!memcmp(nodx.dw, got.dw, c.nw * sizeof(float)),
                  "weight gradients differ with dx = NULL");
    pb_backend_destroy(be);
    lout_free(&got);
    lout_free(&ref);
    lout_free(&nodx);
    lcase_free(&c);
}

static void check_against_ref(int B, int T, int I, int H)
{
    check_against_ref_tol(B, T, I, H, RTOL, ATOL);
}

START_TEST(against_ref)
{
    check_against_ref(5, 7, 19, 13);
    check_against_ref(16, 12, 64, 48);
    check_against_ref(3, 1, 8, 8);  /* one step: no recurrence */
    /* 1200 rows: product tiles of 512 rows; two pointwise chunks per row. The weight
     * gradients sum 1200 products in float (about 1200·2⁻²⁴ = 7e-5 of the sum of their
     * magnitudes), the gates 269, over 40 steps: 1e-3 relative, 1e-5 absolute. */
    check_against_ref_tol(30, 40, 9, 260, 1e-3, 1e-5);
}
END_TEST

/* The inference forward (ws = NULL) gives the training forward's y. */
START_TEST(inference_forward)
{
    struct lcase c;
    lcase_init(&c, 6, 9, 21, 17);
    struct lout ref;
    lout_alloc(&c, &ref);
    lstm_ref(&c, &ref);
    struct pb_backend *be = be_new(2);
    struct pb_err e;
    float *x = pb_backend_alloc(be, c.nx * sizeof(float), PB_MEM_ACTS, &e);
    float *w = pb_backend_alloc(be, c.nw * sizeof(float), PB_MEM_ACTS, &e);
    float *y = pb_backend_alloc(be, c.ny * sizeof(float), PB_MEM_ACTS, &e);
    ck_assert(x && w && y);
    be->ops->upload(be, x, c.x, c.nx * sizeof(float));
    be->ops->upload(be, w, c.w, c.nw * sizeof(float));
    be->ops->lstm_fwd(be, &c.d, x, w, y, NULL, NULL);
    float *got = malloc(c.ny * sizeof(float));
    be->ops->download(be, got, y, c.ny * sizeof(float));
    pb_assert_close("inference y", got, ref.y, c.ny, RTOL, ATOL);
    free(got);
    pb_backend_free(be, x);
    pb_backend_free(be, w);
    pb_backend_free(be, y);
    pb_backend_destroy(be);
    lout_free(&ref);
    lcase_free(&c);
}
END_TEST

/* Steps [t0, t0 + n) of each sequence of x [B, T, f]: [B, n, f]. */
static float *steps_of(const float *x, int B, int T, int f, int t0, int n)
{
    float *y = malloc((size_t)B * n * f * sizeof *y);
    for (int b = 0; b < B; b++)
        memcpy(y + (size_t)b * n * f, x + ((size_t)b * T + t0) * f, (size_t)n * f * sizeof *y);
    return y;
}

/* One inference forward of n steps of x's sequences from states st; y [B, n, H] and the
 * final states h, c [B, H] back on the host. */
static void run_states(struct pb_backend *be, const struct lcase *c, const float *x_host, int n,
                       const float *h0_host, const float *c0_host, float *y_host, float *h_host,
                       float *c_host)
{
    struct pb_err e;
    struct pb_lstm_desc d = {c->d.batch, n, c->d.input, c->d.hidden};
    size_t nx = (size_t)d.batch * n * d.input, ny = (size_t)d.batch * n * d.hidden;
    size_t ns = (size_t)d.batch * d.hidden * sizeof(float);
    float *x = pb_backend_alloc(be, nx * sizeof(float), PB_MEM_ACTS, &e);
    float *w = pb_backend_alloc(be, c->nw * sizeof(float), PB_MEM_ACTS, &e);
    float *y = pb_backend_alloc(be, ny * sizeof(float), PB_MEM_ACTS, &e);
    float *st = pb_backend_alloc(be, 4 * ns, PB_MEM_ACTS, &e);  /* h0, c0, h_last, c_last */
    ck_assert(x && w && y && st);
    be->ops->upload(be, x, x_host, nx * sizeof(float));
    be->ops->upload(be, w, c->w, c->nw * sizeof(float));
    struct pb_lstm_states s = {NULL, NULL, st + 2 * ns / sizeof(float), st + 3 * ns / sizeof(float)};
    if (h0_host) {
        be->ops->upload(be, st, h0_host, ns);
        be->ops->upload(be, st + ns / sizeof(float), c0_host, ns);
        s.h0 = st;
        s.c0 = st + ns / sizeof(float);
    }
    be->ops->lstm_fwd(be, &d, x, w, y, NULL, &s);
    be->ops->sync(be);
    ck_assert_msg(!be->failed, "the backend failed");
    be->ops->download(be, y_host, y, ny * sizeof(float));
    be->ops->download(be, h_host, s.h_last, ns);
    be->ops->download(be, c_host, s.c_last, ns);
    pb_backend_free(be, x);
    pb_backend_free(be, w);
    pb_backend_free(be, y);
    pb_backend_free(be, st);
}

/* The final states are the reference's h and c after the last step; a run of T1 steps
 * whose states start a run of the other T − T1 gives the whole run's outputs and states. */
START_TEST(carried_states)
{
    int B = 4, T = 9, T1 = 4, I = 11, H = 13;
    struct lcase c;
    lcase_init(&c, B, T, I, H);
    struct lout ref;
    lout_alloc(&c, &ref);
    lstm_ref(&c, &ref);
    float *h_ref = steps_of(ref.y, B, T, H, T - 1, 1);
    struct pb_backend *be = be_new(2);
    size_t bh = (size_t)B * H;
    float *y = malloc(c.ny * sizeof *y), *h = malloc(bh * sizeof *h), *cs = malloc(bh * sizeof *cs);
    run_states(be, &c, c.x, T, NULL, NULL, y, h, cs);
    pb_assert_close("y with final states", y, ref.y, c.ny, RTOL, ATOL);
    pb_assert_close("h_last", h, h_ref, bh, RTOL, ATOL);
    pb_assert_close("c_last", cs, ref.c_last, bh, RTOL, ATOL);

    float *x1 = steps_of(c.x, B, T, I, 0, T1), *x2 = steps_of(c.x, B, T, I, T1, T - T1);
    float *y1 = malloc((size_t)B * T1 * H * sizeof *y1), *y2 = malloc((size_t)B * (T - T1) * H * sizeof *y2);
    float *h1 = malloc(bh * sizeof *h1), *c1 = malloc(bh * sizeof *c1);
    run_states(be, &c, x1, T1, NULL, NULL, y1, h1, c1);
    run_states(be, &c, x2, T - T1, h1, c1, y2, h, cs);
    float *y_ref1 = steps_of(ref.y, B, T, H, 0, T1), *y_ref2 = steps_of(ref.y, B, T, H, T1, T - T1);
    pb_assert_close("first run's y", y1, y_ref1, (size_t)B * T1 * H, RTOL, ATOL);
    pb_assert_close("carried run's y", y2, y_ref2, (size_t)B * (T - T1) * H, RTOL, ATOL);
    pb_assert_close("carried run's h_last", h, h_ref, bh, RTOL, ATOL);
    pb_assert_close("carried run's c_last", cs, ref.c_last, bh, RTOL, ATOL);
    pb_backend_destroy(be);
    void *bufs[] = {h_ref, y, h, cs, x1, x2, y1, y2, h1, c1, y_ref1, y_ref2};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    lout_free(&ref);
    lcase_free(&c);
}
END_TEST

static void expect_same(const struct lcase *c, const struct lout *a, const struct lout *b,
                        const char *what)
{
    ck_assert_msg(!memcmp(a->y, b->y, c->ny * sizeof(float)), "y differs %s", what);
    ck_assert_msg(!memcmp(a->dx, b->dx, c->nx * sizeof(float)), "dx differs %s", what);
    ck_assert_msg(!memcmp(a->dw, b->dw, c->nw * sizeof(float)), "dw differs %s", what);
}

/* The same bits at 1 and 3 threads, twice on one instance and on a fresh one, on a
 * shape big enough that oneDNN splits its gemms and steps over the threads. */
START_TEST(thread_bits)
{
    struct lcase c;
    lcase_init(&c, 32, 24, 96, 80);
    struct lout r1, r3, again, fresh;
    lout_alloc(&c, &r1);
    lout_alloc(&c, &r3);
    lout_alloc(&c, &again);
    lout_alloc(&c, &fresh);
    struct pb_backend *be1 = be_new(1), *be3 = be_new(3);
    lstm_run(be1, &c, &r1, true);
    lstm_run(be3, &c, &r3, true);
    lstm_run(be3, &c, &again, true);
    pb_backend_destroy(be3);
    be3 = be_new(3);
    lstm_run(be3, &c, &fresh, true);
    expect_same(&c, &r3, &again, "between two calls at 3 threads");
    expect_same(&c, &r3, &fresh, "on a fresh instance at 3 threads");
    expect_same(&c, &r1, &r3, "between 1 and 3 threads");
    pb_backend_destroy(be1);
    pb_backend_destroy(be3);
    lout_free(&r1);
    lout_free(&r3);
    lout_free(&again);
    lout_free(&fresh);
    lcase_free(&c);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("cpu_lstm");
    TCase *tc = tcase_create("cpu_lstm");
    tcase_add_test(tc, against_ref);
    tcase_add_test(tc, inference_forward);
    tcase_add_test(tc, carried_states);
    tcase_add_test(tc, thread_bits);
    suite_add_tcase(s, tc);
    return s;
}
