/* tests/model/test_lstm_layers.c — the LSTM of several layers (harness/model/layers/lstm.c):
 * two layers, unidirectional and bidirectional packed by lengths, against PyTorch 1.13
 * (tests/fixtures/seq.safetensors from fixtures_seq.py, dropout 0): outputs, the last
 * layer's h_n read off them (step T − 1, or the forward half at step len − 1 and the
 * reverse half at step 0), input and weight gradients; the final states (h_n, c_n) of
 * pb_lstm_final_states for one and two layers, unidirectional and bidirectional packed by
 * (unsorted) lengths, against PyTorch's and against the layer's own outputs,
 * and its refusals of lengths outside [1, T] and of a layer that is not an LSTM; central
 * differences on the same tiny instances with dropout 0 and 0.3; the dropout between
 * layers (the same mask under 1 and 3 threads and in two runs, another for another
 * micro-batch, the layer equal to its layers run one by one with the mask keyed as
 * documented, the expected fraction dropped, none in evaluation); PyTorch's tensor names
 * and counts through a stage, FLOPs and activation bytes summed over the layers; and the
 * refusals of num_layers outside 1 … 8 and dropout outside [0, 1). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/rng.h"
#include "harness/model/layers/lstm.h"
#include "harness/model/stage.h"
#include "tests/support/layer_run.h"
#include "tests/support/test_util.h"

/* Parity: the tolerances of the one-layer LSTM's parity tests (test_seq_layers,
 * test_gnmt_layers): float32 against PyTorch's summation order, the recurrence carrying
 * rounding over 6 steps of sums of at most 10 products per layer, two layers deep. */
#define RTOL 1e-4
#define ATOL 1e-5
/* A bidirectional layer's h_n against its own outputs: the segments of the packed run
 * are smaller gemms than the forward's, so the sums may round otherwise (measured: at
 * most 4e-7 at B 64, T 50, I = H = 1024; equal on this test's tiny instances). */
#define SAME_TOL 1e-6
/* Central differences as theirs: h = 1e-2 on sigmoid and tanh, truncation h²·L''' ~
 * 1e-4, float32 rounding of L over 2h ~ 1e-5 (the dropout's 1/(1 − p) scale included). */
#define FD_H 1e-2
#define FD_RTOL 1e-2
#define FD_ATOL 2e-3

static struct pb_safetensors fx;

static struct pb_layer_cfg lstm_cfg(int in_f, int hidden, int layers, bool bi, float p)
{
    return (struct pb_layer_cfg){.kind = PB_LAYER_LSTM, .in_features = in_f,
                                 .out_features = hidden, .num_layers = layers,
                                 .bidirectional = bi, .p = p};
}

/* The fixture cases: nn.LSTM(5, 4, num_layers=2), x [2, 6, 5]; bidirectional, x [3, 6, 5]
 * packed by (6, 3, 1). */
struct lcase {
    const char *name;
    bool bi;
    struct pb_shape x;
};

static const struct lcase lstm2 = {"lstm2", false, {2, 6, 5, 1}};
static const struct lcase bilstm2 = {"bilstm2", true, {3, 6, 5, 1}};
static const int32_t bi_len[3] = {6, 3, 1};

static void fill_normal(float *v, size_t n, uint64_t which)
{
    struct pb_rng_key k = pb_rng_key(PB_RNG_DATA, 29, which, 0, 0);
    for (size_t i = 0; i < n; i++)
        v[i] = pb_rng_normal(k, i);
}

/* The fixture case's parameters p0, p1, ... uploaded as r's (all of them). */
static void load_params(struct lrun *r, const char *name)
{
    float *w = pb_fixture_params(&fx, name, r->np);
    r->be->ops->upload(r->be, r->params, w, r->np * sizeof(float));
    free(w);
}

static void check_parity(const struct lcase *c)
{
    pb_load_fixture(&fx, "seq.safetensors");
    struct lrun r;
    lrun_init(&r, lstm_cfg(5, 4, 2, c->bi, 0.0f), 1, &c->x, c->bi ? bi_len : NULL);
    ck_assert_int_eq(r.l.ops->param_tensors(&r.l, (struct pb_param_tensor[64]){0}),
                     c->bi ? 16 : 8);
    load_params(&r, c->name);
    size_t nx = pb_shape_count(c->x), ny = pb_shape_count(r.l.out_shape);
    float *x[1] = {pb_fixture_read(&fx, c->name, "x", nx)}, *dx[1];
    float *dy = pb_fixture_read(&fx, c->name, "dy", ny);
    float *y_ref = pb_fixture_read(&fx, c->name, "y", ny);
    set_inputs(&r, x);
    struct pb_node_act act;
    float *ye = lforward(&r, false, &act);
    pb_assert_close("y (eval)", ye, y_ref, ny, RTOL, ATOL);
    float *y = lforward(&r, true, &act);
    pb_assert_close("y", y, y_ref, ny, RTOL, ATOL);
    /* the last layer's h_n: [layers·dirs, B, H], its rows 2 (bi: 2 and 3) */
    int B = c->x.n, T = c->x.c, H = 4, dirs = c->bi ? 2 : 1;
    float *h_n = pb_fixture_read(&fx, c->name, "h_n", (size_t)2 * dirs * B * H);
    for (int d = 0; d < dirs; d++)
        for (int b = 0; b < B; b++) {
            int t = d ? 0 : c->bi ? bi_len[b] - 1 : T - 1;
            const float *ours = y + ((size_t)b * T + t) * dirs * H + d * H;
            pb_assert_close("h_n", ours, h_n + ((size_t)(dirs + d) * B + b) * H, H, RTOL, ATOL);
        }
    lbackward(&r, &act, dy, dx);
    float *dx_ref = pb_fixture_read(&fx, c->name, "dx", nx);
    pb_assert_close("dx", dx[0], dx_ref, nx, RTOL, ATOL);
    float *g = malloc((r.np + 1) * sizeof *g);
    r.be->ops->download(r.be, g, r.grads, r.np * sizeof(float));
    size_t off = 0;
    for (int i = 0; off < r.np; i++) {
        char gn[16], full[64];
        snprintf(gn, sizeof gn, "g%d", i);
        snprintf(full, sizeof full, "%s.%s", c->name, gn);
        const struct pb_st_tensor *gt = pb_st_find(&fx, full);
        ck_assert_msg(gt != NULL, "fixture has no %s", full);
        float *g_ref = pb_fixture_read(&fx, c->name, gn, gt->count);
        pb_assert_close(full, g + off, g_ref, gt->count, RTOL, ATOL);
        off += gt->count;
        free(g_ref);
    }
    free(g);
    free(dx_ref);
    free(dx[0]);
    free(h_n);
    free(y);
    free(ye);
    free(dy);
    free(y_ref);
    free(x[0]);
    lrun_finish(&r);
    pb_st_finish(&fx);
}

START_TEST(parity_lstm2) { check_parity(&lstm2); }
END_TEST
START_TEST(parity_bilstm2) { check_parity(&bilstm2); }
END_TEST

/* The final-state cases: one and two layers, unidirectional on x [2, 6, 5] and
 * bidirectional packed by lengths (one layer: x [4, 6, 5] by the unsorted (3, 6, 1, 3),
 * two sequences of one length; two layers: x [3, 6, 5] by (6, 3, 1)); H = 4. */
struct scase {
    const char *name;
    int layers;
    bool bi;
    struct pb_shape x;
    const int32_t *len;
};

static const int32_t bi1_len[4] = {3, 6, 1, 3};
static const struct scase s_lstm = {"lstm", 1, false, {2, 6, 5, 1}, NULL};
static const struct scase s_bilstm1 = {"bilstm1", 1, true, {4, 6, 5, 1}, bi1_len};
static const struct scase s_lstm2 = {"lstm2", 2, false, {2, 6, 5, 1}, NULL};
static const struct scase s_bilstm2 = {"bilstm2", 2, true, {3, 6, 5, 1}, bi_len};

/* h_n and c_n [L·dirs, B, H] of r's uploaded input (host, malloc'ed); lengths as given. */
static void final_states(struct lrun *r, const int32_t *lengths, float **h_n, float **c_n)
{
    struct pb_err e;
    size_t n = (size_t)r->l.cfg.num_layers * (r->l.cfg.bidirectional ? 2 : 1) * r->l.in_shape[0].n *
               r->l.cfg.out_features;
    float *d = pb_backend_alloc(r->be, 2 * n * sizeof(float), PB_MEM_SCRATCH, &e);
    ck_assert(d != NULL);
    ck_assert_msg(pb_lstm_final_states(r->be, &r->l, r->in[0].data, r->params, lengths, d, d + n,
                                       &e) == 0, "%s", e.msg);
    *h_n = malloc(n * sizeof(float));
    *c_n = malloc(n * sizeof(float));
    r->be->ops->download(r->be, *h_n, d, n * sizeof(float));
    r->be->ops->download(r->be, *c_n, d + n, n * sizeof(float));
    r->be->ops->sync(r->be);
    pb_backend_free(r->be, d);
}

/* h_n and c_n against PyTorch's; the last layer's h_n against the layer's own eval
 * output where it must be that: y[b, T − 1] bit for bit (unidirectional: the same run),
 * y[b, len_b − 1, :H] and y[b, 0, H:] (bidirectional) to SAME_TOL, and without lengths
 * y[b, T − 1, :H] and y[b, 0, H:] of the forward without them; a unidirectional layer
 * given lengths has the same states (it runs all T steps, as its forward). */
static void check_states(const struct scase *c)
{
    pb_load_fixture(&fx, "seq.safetensors");
    struct lrun r;
    lrun_init(&r, lstm_cfg(5, 4, c->layers, c->bi, 0.0f), 1, &c->x, c->len);
    load_params(&r, c->name);
    int B = c->x.n, T = c->x.c, H = 4, dirs = c->bi ? 2 : 1, L = c->layers;
    size_t nx = pb_shape_count(c->x), ny = pb_shape_count(r.l.out_shape);
    size_t ns = (size_t)L * dirs * B * H;
    float *x[1] = {pb_fixture_read(&fx, c->name, "x", nx)};
    float *y_ref = pb_fixture_read(&fx, c->name, "y", ny);
    float *h_ref = pb_fixture_read(&fx, c->name, "h_n", ns);
    float *c_ref = pb_fixture_read(&fx, c->name, "c_n", ns);
    set_inputs(&r, x);
    struct pb_node_act act;
    float *y = lforward(&r, false, &act);
    pb_assert_close("y", y, y_ref, ny, RTOL, ATOL);
    float *h_n, *c_n;
    final_states(&r, r.lengths, &h_n, &c_n);
    pb_assert_close("h_n", h_n, h_ref, ns, RTOL, ATOL);
    pb_assert_close("c_n", c_n, c_ref, ns, RTOL, ATOL);
    for (int d = 0; d < dirs; d++)
        for (int b = 0; b < B; b++) {
            int t = d ? 0 : c->bi ? c->len[b] - 1 : T - 1;
            const float *ours = y + ((size_t)b * T + t) * dirs * H + d * H;
            const float *hn = h_n + ((size_t)((L - 1) * dirs + d) * B + b) * H;
            if (c->bi)
                pb_assert_close("h_n = y", hn, ours, H, SAME_TOL, SAME_TOL);
            else
                ck_assert_msg(!memcmp(ours, hn, H * sizeof(float)),
                              "%s: h_n of sequence %d is not y[%d, %d]", c->name, b, b, t);
        }
    if (c->bi) {
        /* no lengths: all T, the forward direction's state after step T − 1 */
        int32_t *keep = r.lengths;
        r.lengths = NULL;
        float *yt = lforward(&r, false, &act), *ht, *ct;
        final_states(&r, NULL, &ht, &ct);
        for (int d = 0; d < 2; d++)
            for (int b = 0; b < B; b++)
                pb_assert_close("h_n = y (no lengths)",
                                ht + ((size_t)((L - 1) * 2 + d) * B + b) * H,
                                yt + ((size_t)b * T + (d ? 0 : T - 1)) * 2 * H + d * H, H,
                                SAME_TOL, SAME_TOL);
        ck_assert(memcmp(ct, c_n, ns * sizeof(float)));
        r.lengths = keep;
        free(yt);
        free(ht);
        free(ct);
    } else {
        struct pb_err e;
        int32_t lens[2] = {2, 5}, *dl = pb_backend_alloc(r.be, sizeof lens, PB_MEM_SCRATCH, &e);
        r.be->ops->upload(r.be, dl, lens, sizeof lens);
        float *h2, *c2;
        final_states(&r, dl, &h2, &c2);
        ck_assert(!memcmp(h2, h_n, ns * sizeof(float)) && !memcmp(c2, c_n, ns * sizeof(float)));
        pb_backend_free(r.be, dl);
        free(h2);
        free(c2);
    }
    free(h_n);
    free(c_n);
    free(h_ref);
    free(c_ref);
    free(y);
    free(y_ref);
    free(x[0]);
    lrun_finish(&r);
    pb_st_finish(&fx);
}

START_TEST(states_lstm) { check_states(&s_lstm); }
END_TEST
START_TEST(states_bilstm1) { check_states(&s_bilstm1); }
END_TEST
START_TEST(states_lstm2) { check_states(&s_lstm2); }
END_TEST
START_TEST(states_bilstm2) { check_states(&s_bilstm2); }
END_TEST

/* Lengths outside [1, T] and a layer that is not an LSTM are refused with what is wrong,
 * nothing written to h_n and c_n. */
START_TEST(states_bad_input)
{
    struct pb_shape xs = {3, 6, 5, 1};
    const int32_t bad[][3] = {{6, 0, 1}, {6, 3, 7}, {-1, 3, 1}};
    const char *want[] = {"sequence 1 has length 0, outside [1, 6]",
                          "sequence 2 has length 7, outside [1, 6]",
                          "sequence 0 has length -1, outside [1, 6]"};
    for (int bi = 0; bi < 2; bi++)
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            struct pb_err e;
            struct lrun r;
            lrun_init(&r, lstm_cfg(5, 4, 2, bi, 0.0f), 1, &xs, bad[i]);
            size_t n = (size_t)2 * (bi ? 2 : 1) * 3 * 4;
            float *d = pb_backend_alloc(r.be, 2 * n * sizeof(float), PB_MEM_SCRATCH, &e);
            r.be->ops->fill(r.be, d, 42.0f, 2 * n);
            ck_assert_int_eq(pb_lstm_final_states(r.be, &r.l, r.in[0].data, r.params, r.lengths,
                                                  d, d + n, &e), -1);
            ck_assert_msg(strstr(e.msg, "lstm 'layer'") && strstr(e.msg, want[i]), "%s", e.msg);
            float *h = malloc(2 * n * sizeof *h);
            r.be->ops->download(r.be, h, d, 2 * n * sizeof(float));
            r.be->ops->sync(r.be);
            for (size_t j = 0; j < 2 * n; j++)
                ck_assert(h[j] == 42.0f);
            free(h);
            pb_backend_free(r.be, d);
            lrun_finish(&r);
        }
    struct pb_err e;
    struct lrun r;
    lrun_init(&r, lstm_cfg(5, 4, 1, false, 0.0f), 1, &xs, NULL);
    struct pb_layer lin = {.ops = pb_layer_ops_for(PB_LAYER_LINEAR), .name = "fc"};
    float h[4];
    ck_assert_int_eq(pb_lstm_final_states(r.be, &lin, r.in[0].data, r.params, NULL, h, h, &e), -1);
    ck_assert_msg(strstr(e.msg, "layer 'fc': it is a linear, not an lstm"), "%s", e.msg);
    lrun_finish(&r);
}
END_TEST

/* L = Σ rr ⊙ y of a training forward (the dropout's mask is a function of the key, so
 * L is a smooth function of x and W for a fixed micro-batch). */
static double loss_of(struct lrun *r, float *const *x, const float *rr)
{
    struct pb_node_act act;
    set_inputs(r, x);
    float *y = lforward(r, true, &act);
    act_release(r, &act);
    double l = 0;
    for (size_t i = 0; i < pb_shape_count(r->l.out_shape); i++)
        l += (double)rr[i] * y[i];
    free(y);
    return l;
}

static void check_fd(const char *what, size_t i, double fd, double an)
{
    ck_assert_msg(fabs(fd - an) <= FD_ATOL + FD_RTOL * fabs(an),
                  "%s[%zu]: finite difference %.6g, backward %.6g", what, i, fd, an);
}

/* dx and dW of L against central differences, the layer's own init; with lengths
 * (3, 6, 1) for the bidirectional case, padded steps included (0 on both sides). */
static void check_grad(const struct lcase *c, float p)
{
    int32_t lens[3] = {3, 6, 1};
    struct lrun r;
    lrun_init(&r, lstm_cfg(5, 4, 2, c->bi, p), 1, &c->x, c->bi ? lens : NULL);
    r.mb = 11;
    size_t nx = pb_shape_count(c->x), ny = pb_shape_count(r.l.out_shape), np = r.np;
    float *x[1] = {malloc(nx * sizeof(float))}, *dx[1], *rr = malloc(ny * sizeof *rr);
    fill_normal(x[0], nx, 1);
    fill_normal(rr, ny, 2);
    float *w = malloc((np + 1) * sizeof *w), *g = malloc((np + 1) * sizeof *g);
    r.be->ops->download(r.be, w, r.params, np * sizeof(float));
    set_inputs(&r, x);
    struct pb_node_act act;
    free(lforward(&r, true, &act));
    lbackward(&r, &act, rr, dx);
    r.be->ops->download(r.be, g, r.grads, np * sizeof(float));
    for (size_t i = 0; i < nx; i += nx / 30 + 1) {
        float keep = x[0][i];
        x[0][i] = keep + (float)FD_H;
        double lp = loss_of(&r, x, rr);
        x[0][i] = keep - (float)FD_H;
        double lm = loss_of(&r, x, rr);
        x[0][i] = keep;
        check_fd("dx", i, (lp - lm) / (2 * FD_H), dx[0][i]);
    }
    for (size_t i = 0; i < np; i += np / 60 + 1) {
        float keep = w[i];
        w[i] = keep + (float)FD_H;
        r.be->ops->upload(r.be, r.params, w, np * sizeof(float));
        double lp = loss_of(&r, x, rr);
        w[i] = keep - (float)FD_H;
        r.be->ops->upload(r.be, r.params, w, np * sizeof(float));
        double lm = loss_of(&r, x, rr);
        w[i] = keep;
        r.be->ops->upload(r.be, r.params, w, np * sizeof(float));
        check_fd("dW", i, (lp - lm) / (2 * FD_H), g[i]);
    }
    free(x[0]);
    free(dx[0]);
    free(rr);
    free(w);
    free(g);
    lrun_finish(&r);
}

START_TEST(grad_lstm2) { check_grad(&lstm2, 0.0f); }
END_TEST
START_TEST(grad_bilstm2) { check_grad(&bilstm2, 0.0f); }
END_TEST
START_TEST(grad_lstm2_dropout) { check_grad(&lstm2, 0.3f); }
END_TEST
START_TEST(grad_bilstm2_dropout) { check_grad(&bilstm2, 0.3f); }
END_TEST

/* One training forward and backward of a case's layer at `threads`, micro-batch mb:
 * out[0] = y, out[1] = dx, out[2] = dW (malloc'ed); sizes in n. */
static void run_once(struct pb_layer_cfg cfg, struct pb_shape xs, const int32_t *len, int threads,
                     int64_t mb, float **out, size_t *n)
{
    struct lrun r;
    lrun_init_threads(&r, cfg, 1, &xs, len, threads);
    r.mb = mb;
    n[0] = pb_shape_count(r.l.out_shape);
    n[1] = pb_shape_count(xs);
    n[2] = r.np;
    float *x[1] = {malloc(n[1] * sizeof(float))}, *dy = malloc(n[0] * sizeof *dy);
    fill_normal(x[0], n[1], 3);
    fill_normal(dy, n[0], 4);
    set_inputs(&r, x);
    struct pb_node_act act;
    out[0] = lforward(&r, true, &act);
    lbackward(&r, &act, dy, &out[1]);
    out[2] = malloc(r.np * sizeof(float));
    r.be->ops->download(r.be, out[2], r.grads, r.np * sizeof(float));
    free(x[0]);
    free(dy);
    lrun_finish(&r);
}

static bool same(float *const *a, float *const *b, const size_t *n)
{
    for (int i = 0; i < 3; i++)
        if (memcmp(a[i], b[i], n[i] * sizeof(float)))
            return false;
    return true;
}

static void free3(float **a)
{
    for (int i = 0; i < 3; i++)
        free(a[i]);
}

/* With dropout 0.5 between three layers: the same bits under 1 and 3 threads and in a
 * second run, other bits for another micro-batch (another mask). */
START_TEST(dropout_bits)
{
    struct pb_shape xs = {3, 7, 6, 1};
    int32_t len[3] = {7, 4, 2};
    for (int bi = 0; bi < 2; bi++) {
        struct pb_layer_cfg cfg = lstm_cfg(6, 5, 3, bi, 0.5f);
        float *a[3], *b[3], *t[3], *o[3];
        size_t n[3];
        run_once(cfg, xs, bi ? len : NULL, 1, 4, a, n);
        run_once(cfg, xs, bi ? len : NULL, 1, 4, b, n);
        run_once(cfg, xs, bi ? len : NULL, 3, 4, t, n);
        run_once(cfg, xs, bi ? len : NULL, 1, 5, o, n);
        ck_assert_msg(same(a, b, n), "bi %d: two runs differ", bi);
        ck_assert_msg(same(a, t, n), "bi %d: 1 and 3 threads differ", bi);
        ck_assert_msg(memcmp(a[0], o[0], n[0] * sizeof(float)), "bi %d: the mask does not depend "
                      "on the micro-batch", bi);
        free3(a);
        free3(b);
        free3(t);
        free3(o);
    }
}
END_TEST

/* The two-layer LSTM is its layers run one by one with dropout(y0) between them, the mask
 * keyed (seed, micro-batch, layer uid, 0), bit for bit; about p of y0 is dropped; in
 * evaluation nothing is, and the output equals dropout 0's. */
START_TEST(dropout_is_between_layers)
{
    struct pb_err e;
    enum { B = 4, T = 16, I = 6, H = 16 };
    const float p = 0.3f;
    struct pb_shape xs = {B, T, I, 1}, ys = {B, T, H, 1};
    struct lrun st, l0, l1;
    lrun_init(&st, lstm_cfg(I, H, 2, false, p), 1, &xs, NULL);
    lrun_init(&l0, lstm_cfg(I, H, 1, false, 0.0f), 1, &xs, NULL);
    lrun_init(&l1, lstm_cfg(H, H, 1, false, 0.0f), 1, &ys, NULL);
    st.mb = l0.mb = l1.mb = 9;
    float *w = malloc(st.np * sizeof *w);
    st.be->ops->download(st.be, w, st.params, st.np * sizeof(float));
    ck_assert_uint_eq(st.np, l0.np + l1.np);
    l0.be->ops->upload(l0.be, l0.params, w, l0.np * sizeof(float));
    l1.be->ops->upload(l1.be, l1.params, w + l0.np, l1.np * sizeof(float));
    size_t nx = (size_t)B * T * I, ny = (size_t)B * T * H;
    float *x[1] = {malloc(nx * sizeof(float))};
    fill_normal(x[0], nx, 5);
    set_inputs(&st, x);
    set_inputs(&l0, x);
    struct pb_node_act act;
    float *y = lforward(&st, true, &act);
    act_release(&st, &act);
    float *y0 = lforward(&l0, true, &act);
    act_release(&l0, &act);
    /* the mask keyed as lstm.c documents it, drawn by the backend's dropout */
    struct pb_rng_key key = pb_rng_key(PB_RNG_DROPOUT, 7, 9, 3, 0);
    float *x1[1] = {malloc(ny * sizeof(float))};
    float *d_y0 = pb_backend_alloc(l1.be, ny * sizeof(float), PB_MEM_SCRATCH, &e);
    l1.be->ops->upload(l1.be, d_y0, y0, ny * sizeof(float));
    l1.be->ops->dropout(l1.be, d_y0, l1.in[0].data, ny, p, key, 0);
    l1.be->ops->download(l1.be, x1[0], l1.in[0].data, ny * sizeof(float));
    pb_backend_free(l1.be, d_y0);
    size_t dropped = 0;
    for (size_t i = 0; i < ny; i++) {
        ck_assert(y0[i] != 0.0f);
        dropped += x1[0][i] == 0.0f;
        ck_assert(x1[0][i] == 0.0f || x1[0][i] == y0[i] * (1.0f / (1.0f - p)));
    }
    /* binomial(1024, 0.3): mean 307, sd 14.7; 5 sd either way */
    ck_assert_msg(fabs((double)dropped - p * ny) < 5 * sqrt(p * (1 - p) * ny), "%zu of %zu dropped",
                  dropped, ny);
    float *y1 = lforward(&l1, true, &act);
    act_release(&l1, &act);
    ck_assert_msg(!memcmp(y, y1, ny * sizeof(float)), "the stack is not its layers one by one");
    /* evaluation: no dropout, the output of the layers one by one without a mask */
    float *ye = lforward(&st, false, &act);
    set_inputs(&l1, (float *[]){y0});
    float *y1e = lforward(&l1, false, &act);
    ck_assert(!memcmp(ye, y1e, ny * sizeof(float)));
    ck_assert(memcmp(ye, y, ny * sizeof(float)));
    free(w);
    free(x[0]);
    free(x1[0]);
    free(y);
    free(y0);
    free(y1);
    free(ye);
    free(y1e);
    lrun_finish(&st);
    lrun_finish(&l0);
    lrun_finish(&l1);
}
END_TEST

static void name_of(void *ctx, const struct pb_stage_tensor *t)
{
    char *all = ctx;
    snprintf(all + strlen(all), 4096 - strlen(all), "%s:%zu ", t->name, t->count);
}

/* A two-layer bidirectional LSTM in a model: PyTorch's tensor names and sizes in a
 * stage (so in checkpoints), its FLOPs and activation bytes the sum over its layers
 * (plus the kept output of layer 0), the dropout op among the backend ops it needs. */
START_TEST(stack_in_a_stage)
{
    struct pb_err e;
    struct pb_model m;
    pb_model_init(&m, "stack", (struct pb_shape){1, 5, 3, 1}, 0);
    struct pb_block *b = pb_model_block(&m, "enc");
    int in = -1;
    struct pb_layer_cfg cfg = lstm_cfg(3, 4, 2, true, 0.2f);
    pb_block_node(&m, b, "lstm", &cfg, 1, &in);
    ck_assert_msg(pb_model_finalize(&m, 2, &e) == 0, "%s", e.msg);
    ck_assert(pb_shape_eq(b->out_shape, (struct pb_shape){2, 5, 8, 1}));
    /* 2·16·(3 + 4 + 2) + 2·16·(8 + 4 + 2) */
    ck_assert_uint_eq(pb_model_param_count(&m, 0, 1), 288 + 448);
    struct pb_stage s;
    pb_stage_layout(&s, &m, 0, 1, 0, 1);
    char all[4096] = "";
    pb_stage_tensors(&s, name_of, all);
    ck_assert_str_eq(all,
                     "enc.lstm.weight_ih_l0:48 enc.lstm.weight_hh_l0:64 "
                     "enc.lstm.bias_ih_l0:16 enc.lstm.bias_hh_l0:16 "
                     "enc.lstm.weight_ih_l0_reverse:48 "
                     "enc.lstm.weight_hh_l0_reverse:64 "
                     "enc.lstm.bias_ih_l0_reverse:16 enc.lstm.bias_hh_l0_reverse:16 "
                     "enc.lstm.weight_ih_l1:128 enc.lstm.weight_hh_l1:64 "
                     "enc.lstm.bias_ih_l1:16 enc.lstm.bias_hh_l1:16 "
                     "enc.lstm.weight_ih_l1_reverse:128 "
                     "enc.lstm.weight_hh_l1_reverse:64 "
                     "enc.lstm.bias_ih_l1_reverse:16 "
                     "enc.lstm.bias_hh_l1_reverse:16 ");
    pb_stage_finish(&s);
    const struct pb_layer *l = &b->nodes[0];
    struct pb_layer one = *l;
    one.cfg.num_layers = 1;
    one.cfg.p = 0.0f;
    struct pb_layer top = one;
    top.cfg.in_features = 8;
    top.in_shape[0].h = 8;
    size_t y = 2 * 5 * 8 * sizeof(float);
    /* layer 0 and layer 1 as one-layer LSTMs, the dropout's one FLOP per element of y0 */
    ck_assert(fabs(l->ops->flops(l) - (one.ops->flops(&one) + top.ops->flops(&top) + 80)) < 1e-6);
    /* each layer's workspace estimate, y_f and y_r, and the lengths; y0 kept once */
    ck_assert_uint_eq(pb_layer_act_bytes(l), 2 * (pb_layer_act_bytes(&one) - 2 * sizeof(int32_t) -
                                                  y) + y + y + 2 * sizeof(int32_t));
    enum pb_backend_op ops[PB_BOP_NOPS];
    int nops = pb_layer_backend_ops(l, ops);
    bool has_dropout = false;
    for (int i = 0; i < nops; i++)
        has_dropout |= ops[i] == PB_BOP_DROPOUT;
    ck_assert(has_dropout);
    pb_model_finish(&m);
}
END_TEST

/* num_layers outside 1 … 8 and dropout outside [0, 1) are refused with the layer's
 * name, the bound and the value, at a model's finalize too. */
START_TEST(bad_config)
{
    struct {
        int layers;
        float p;
        const char *want;
    } bad[] = {
        {0, 0.0f, "num_layers must be 1 to 8 (got 0)"},
        {-2, 0.0f, "num_layers must be 1 to 8 (got -2)"},
        {9, 0.0f, "num_layers must be 1 to 8 (got 9)"},
        {2, -0.1f, "dropout between its layers must be in [0, 1) (got -0.1)"},
        {2, 1.0f, "dropout between its layers must be in [0, 1) (got 1)"},
        {2, NAN, "dropout between its layers must be in [0, 1) (got nan)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct pb_err e;
        struct pb_model m;
        pb_model_init(&m, "bad", (struct pb_shape){1, 5, 3, 1}, 0);
        struct pb_block *b = pb_model_block(&m, "b");
        int in = -1;
        struct pb_layer_cfg cfg = lstm_cfg(3, 4, bad[i].layers, false, bad[i].p);
        pb_block_node(&m, b, "rnn", &cfg, 1, &in);
        ck_assert_int_eq(pb_model_finalize(&m, 2, &e), -1);
        ck_assert_msg(strstr(e.msg, "lstm 'rnn'") && strstr(e.msg, bad[i].want), "%s", e.msg);
        pb_model_finish(&m);
    }
    /* eight layers with dropout just below 1 are fine */
    struct pb_layer l = {.ops = pb_layer_ops_for(PB_LAYER_LSTM),
                         .cfg = lstm_cfg(3, 4, 8, true, 0.99f)};
    struct pb_shape in = {1, 5, 3, 1}, out;
    struct pb_err e;
    ck_assert_msg(l.ops->infer(&l, &in, 1, &out, &e) == 0, "%s", e.msg);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("lstm_layers");
    TCase *tc = tcase_create("parity");
    tcase_add_test(tc, parity_lstm2);
    tcase_add_test(tc, parity_bilstm2);
    suite_add_tcase(s, tc);
    tc = tcase_create("final_states");
    tcase_add_test(tc, states_lstm);
    tcase_add_test(tc, states_bilstm1);
    tcase_add_test(tc, states_lstm2);
    tcase_add_test(tc, states_bilstm2);
    tcase_add_test(tc, states_bad_input);
    suite_add_tcase(s, tc);
    tc = tcase_create("grad");
    tcase_add_test(tc, grad_lstm2);
    tcase_add_test(tc, grad_bilstm2);
    tcase_add_test(tc, grad_lstm2_dropout);
    tcase_add_test(tc, grad_bilstm2_dropout);
    suite_add_tcase(s, tc);
    tc = tcase_create("properties");
    tcase_add_test(tc, dropout_bits);
    tcase_add_test(tc, dropout_is_between_layers);
    tcase_add_test(tc, stack_in_a_stage);
    tcase_add_test(tc, bad_config);
    suite_add_tcase(s, tc);
    return s;
}
