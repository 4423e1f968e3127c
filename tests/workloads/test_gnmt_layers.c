/* tests/workloads/test_gnmt_layers.c — GNMT's layers against PyTorch 1.13 (tests/fixtures/
 * gnmt.safetensors from fixtures_gnmt.py: forward, input gradients, weight gradients)
 * and by central differences on the same tiny instances: the bidirectional LSTM packed
 * by lengths and over full sequences, the normalised Bahdanau attention with and without
 * a source mask (also 40 units and a batch of 33: the CPU kernel's vector lanes with a
 * tail, several and one query block per source in its backward), and the token loss (label-smoothed cross-entropy ignoring padding, per
 * token). Each layer runs alone on a 1-thread CPU backend (the attention takes two
 * inputs, which a stage's single input cannot feed); one block holding both layers
 * checks that a model finalizes them, names their tensors as PyTorch and counts their
 * parameters. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/rng.h"
#include "harness/compute/cpu/cpu_backend.h"
#include "harness/model/stage.h"
#include "tests/support/layer_cases.h"
#include "tests/support/layer_run.h"
#include "tests/support/test_util.h"

/* Parity: float32 with another summation order than PyTorch's; the LSTM's recurrence
 * carries rounding over 6 steps of sums of at most 10 products and the attention's
 * scores sums of at most 40 tanh products and a 5-way softmax: 1e-4 relative, 1e-5
 * absolute. */
#define RTOL 1e-4
#define ATOL 1e-5
/* Central differences with h = 1e-2 on smooth layers (sigmoid, tanh, softmax):
 * truncation h²·L''' ~ 1e-4; float32 rounding of L (~1e-7 relative over O(10) terms)
 * over 2h ~ 1e-5: atol 2e-3 + rtol 1e-2. */
#define FD_H 1e-2
#define FD_RTOL 1e-2
#define FD_ATOL 2e-3

static struct pb_safetensors fx;

/* A fixture case: its layer, input names and shapes. */
struct gcase {
    const char *name;
    struct pb_layer_cfg cfg;
    int nin;
    const char *in_names[2], *dx_names[2];
    struct pb_shape in[2];
    bool lengths;
};

static const struct gcase gcases[] = {
    {"bilstm",
     {.kind = PB_LAYER_LSTM, .in_features = 5, .out_features = 4, .bidirectional = true,
      .num_layers = 1},
     1, {"x"}, {"dx"}, {{3, 6, 5, 1}}, true},
    {"bilstm_full",
     {.kind = PB_LAYER_LSTM, .in_features = 3, .out_features = 4, .bidirectional = true,
      .num_layers = 1},
     1, {"x"}, {"dx"}, {{2, 4, 3, 1}}, false},
    {"attn", {.kind = PB_LAYER_ATTENTION, .in_features = 4, .key_features = 6, .out_features = 7},
     2, {"q", "k"}, {"dq", "dk"}, {{2, 3, 4, 1}, {2, 5, 6, 1}}, true},
    {"attn_full",
     {.kind = PB_LAYER_ATTENTION, .in_features = 3, .key_features = 3, .out_features = 5},
     2, {"q", "k"}, {"dq", "dk"}, {{2, 2, 3, 1}, {2, 4, 3, 1}}, false},
    {"attn_wide",
     {.kind = PB_LAYER_ATTENTION, .in_features = 8, .key_features = 6, .out_features = 40},
     2, {"q", "k"}, {"dq", "dk"}, {{3, 4, 8, 1}, {3, 5, 6, 1}}, true},
    {"attn_batch",
     {.kind = PB_LAYER_ATTENTION, .in_features = 5, .key_features = 4, .out_features = 20},
     2, {"q", "k"}, {"dq", "dk"}, {{33, 2, 5, 1}, {33, 3, 4, 1}}, false},
};

static const struct gcase *gcase_find(const char *name)
{
    for (size_t i = 0; i < sizeof gcases / sizeof gcases[0]; i++)
        if (!strcmp(gcases[i].name, name))
            return &gcases[i];
    ck_abort_msg("no case %s", name);
    return NULL;
}

/* The fixture's lengths of a case (NULL where it has none). */
static int32_t *case_lengths(const struct gcase *c)
{
    if (!c->lengths)
        return NULL;
    float *f = pb_fixture_read(&fx, c->name, "len", (size_t)c->in[0].n);
    int32_t *len = malloc((size_t)c->in[0].n * sizeof *len);
    for (int i = 0; i < c->in[0].n; i++)
        len[i] = (int32_t)f[i];
    free(f);
    return len;
}

static void check_parity(const char *name)
{
    const struct gcase *c = gcase_find(name);
    pb_load_fixture(&fx, "gnmt.safetensors");
    int32_t *len = case_lengths(c);
    struct lrun r;
    lrun_init(&r, c->cfg, c->nin, c->in, len);
    float *w = pb_fixture_params(&fx, name, r.np);
    r.be->ops->upload(r.be, r.params, w, r.np * sizeof(float));
    float *x[2] = {NULL, NULL}, *dx[2] = {NULL, NULL};
    for (int i = 0; i < c->nin; i++)
        x[i] = pb_fixture_read(&fx, name, c->in_names[i], pb_shape_count(c->in[i]));
    set_inputs(&r, x);
    size_t ny = pb_shape_count(r.l.out_shape);
    float *dy = pb_fixture_read(&fx, name, "dy", ny), *y_ref = pb_fixture_read(&fx, name, "y", ny);
    struct pb_node_act act;
    float *ye = lforward(&r, false, &act);
    pb_assert_close("y (eval)", ye, y_ref, ny, RTOL, ATOL);
    float *y = lforward(&r, true, &act);
    pb_assert_close("y", y, y_ref, ny, RTOL, ATOL);
    lbackward(&r, &act, dy, dx);
    for (int i = 0; i < c->nin; i++) {
        size_t n = pb_shape_count(c->in[i]);
        float *ref = pb_fixture_read(&fx, name, c->dx_names[i], n);
        pb_assert_close(c->dx_names[i], dx[i], ref, n, RTOL, ATOL);
        free(ref);
        free(dx[i]);
        free(x[i]);
    }
    float *g = malloc((r.np + 1) * sizeof *g);
    r.be->ops->download(r.be, g, r.grads, r.np * sizeof(float));
    size_t off = 0;
    for (int i = 0; off < r.np; i++) {
        char gn[16], full[64];
        snprintf(gn, sizeof gn, "g%d", i);
        snprintf(full, sizeof full, "%s.%s", name, gn);
        const struct pb_st_tensor *gt = pb_st_find(&fx, full);
        ck_assert_msg(gt != NULL, "fixture has no %s", full);
        float *g_ref = pb_fixture_read(&fx, name, gn, gt->count);
        pb_assert_close(full, g + off, g_ref, gt->count, RTOL, ATOL);
        off += gt->count;
        free(g_ref);
    }
    free(g);
    free(y);
    free(ye);
    free(dy);
    free(y_ref);
    free(w);
    free(len);
    lrun_finish(&r);
    pb_st_finish(&fx);
}

#define PARITY(nm) START_TEST(parity_##nm) { check_parity(#nm); } END_TEST
PARITY(bilstm)
PARITY(bilstm_full)
PARITY(attn)
PARITY(attn_full)
PARITY(attn_wide)
PARITY(attn_batch)

static void fill_normal(float *v, size_t n, uint64_t which)
{
    struct pb_rng_key k = pb_rng_key(PB_RNG_DATA, 23, which, 0, 0);
    for (size_t i = 0; i < n; i++)
        v[i] = pb_rng_normal(k, i);
}

static double loss_of(struct lrun *r, float *const *x, const float *rr)
{
    struct pb_node_act act;
    set_inputs(r, x);
    float *y = lforward(r, false, &act);
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

/* L = Σ r ⊙ y with the layer's own init and lengths (3, 5, 1) / (2, 5): every input's
 * gradient and dW against central differences, padded steps included (their gradient
 * is 0 on both sides). */
static void check_grad(const char *name)
{
    const struct gcase *c = gcase_find(name);
    int32_t lens[3] = {c->in[0].n == 3 ? 3 : 2, 5, 1};
    if (c->cfg.kind == PB_LAYER_LSTM && c->lengths)
        lens[1] = 6;
    struct lrun r;
    lrun_init(&r, c->cfg, c->nin, c->in, c->lengths ? lens : NULL);
    size_t ny = pb_shape_count(r.l.out_shape), np = r.np;
    float *x[2] = {NULL, NULL}, *dx[2] = {NULL, NULL}, *rr = malloc(ny * sizeof *rr);
    for (int i = 0; i < c->nin; i++) {
        x[i] = malloc(pb_shape_count(c->in[i]) * sizeof(float));
        fill_normal(x[i], pb_shape_count(c->in[i]), (uint64_t)i);
    }
    fill_normal(rr, ny, 9);
    float *w = malloc((np + 1) * sizeof *w), *g = malloc((np + 1) * sizeof *g);
    r.be->ops->download(r.be, w, r.params, np * sizeof(float));
    if (c->cfg.kind == PB_LAYER_ATTENTION)  /* move the bias off its 0 init */
        for (int n = 0; n < c->cfg.out_features; n++)
            w[c->cfg.out_features + 1 + n] = 0.3f * (float)((n % 3) - 1);
    r.be->ops->upload(r.be, r.params, w, np * sizeof(float));
    set_inputs(&r, x);
    struct pb_node_act act;
    free(lforward(&r, true, &act));
    lbackward(&r, &act, rr, dx);
    r.be->ops->download(r.be, g, r.grads, np * sizeof(float));
    for (int k = 0; k < c->nin; k++) {
        size_t nx = pb_shape_count(c->in[k]);
        for (size_t i = 0; i < nx; i += nx / 24 + 1) {
            float keep = x[k][i];
            x[k][i] = keep + (float)FD_H;
            double lp = loss_of(&r, x, rr);
            x[k][i] = keep - (float)FD_H;
            double lm = loss_of(&r, x, rr);
            x[k][i] = keep;
            check_fd(c->dx_names[k], i, (lp - lm) / (2 * FD_H), dx[k][i]);
        }
    }
    for (size_t i = 0; i < np; i += np / 40 + 1) {
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
    for (int k = 0; k < c->nin; k++) {
        free(x[k]);
        free(dx[k]);
    }
    free(rr);
    free(w);
    free(g);
    lrun_finish(&r);
}

#define GRAD(nm) START_TEST(grad_##nm) { check_grad(#nm); } END_TEST
GRAD(bilstm)
GRAD(bilstm_full)
GRAD(attn)
GRAD(attn_full)
GRAD(attn_wide)

/* Packed outputs: past each sequence's length both directions' outputs are exactly 0,
 * and the reverse direction of a sequence does not depend on its padding tokens. */
START_TEST(bilstm_padding)
{
    const struct gcase *c = gcase_find("bilstm");
    int32_t lens[3] = {6, 3, 1};
    struct lrun r;
    lrun_init(&r, c->cfg, 1, c->in, lens);
    size_t nx = pb_shape_count(c->in[0]), ny = pb_shape_count(r.l.out_shape);
    float *x[1] = {malloc(nx * sizeof(float))};
    fill_normal(x[0], nx, 4);
    set_inputs(&r, x);
    struct pb_node_act act;
    float *y0 = lforward(&r, false, &act);
    for (int b = 0; b < 3; b++)
        for (int t = lens[b]; t < 6; t++)
            for (int j = 0; j < 5; j++)
                x[0][((size_t)b * 6 + t) * 5 + j] = 100.0f;
    set_inputs(&r, x);
    float *y1 = lforward(&r, false, &act);
    for (int b = 0; b < 3; b++)
        for (int t = 0; t < 6; t++)
            for (int j = 0; j < 8; j++) {
                size_t i = ((size_t)b * 6 + t) * 8 + j;
                if (t >= lens[b])
                    ck_assert_msg(y0[i] == 0.0f && y1[i] == 0.0f, "y[%d, %d, %d] = %g", b, t, j,
                                  (double)y1[i]);
                else
                    ck_assert_msg(y0[i] == y1[i], "y[%d, %d, %d] moved with the padding", b, t, j);
            }
    ck_assert_uint_eq(ny, 3 * 6 * 8);
    free(x[0]);
    free(y0);
    free(y1);
    lrun_finish(&r);
}
END_TEST

/* The attention's weights: the keys past a source's length get no weight and no
 * gradient, and its init is the reference's. */
START_TEST(attn_mask_init)
{
    const struct gcase *c = gcase_find("attn");
    int32_t lens[2] = {5, 2};
    struct lrun r;
    lrun_init(&r, c->cfg, 2, c->in, lens);
    float w[7 * (2 + 4 + 6) + 1];
    ck_assert_uint_eq(r.np, sizeof w / sizeof w[0]);
    r.be->ops->download(r.be, w, r.params, sizeof w);
    ck_assert(fabsf(w[7] - 1.0f / sqrtf(7.0f)) < 1e-7f);
    int nonzero = 0;
    for (size_t i = 0; i < r.np; i++) {
        if (i >= 8 && i < 15)
            ck_assert(w[i] == 0.0f);  /* normalize_bias */
        else if (i != 7)
            ck_assert(fabsf(w[i]) <= 0.1f), nonzero += w[i] != 0.0f;
    }
    ck_assert_int_gt(nonzero, (int)r.np - 10);
    float *x[2] = {malloc(24 * sizeof(float)), malloc(60 * sizeof(float))}, dy[36], *dx[2];
    fill_normal(x[0], 24, 0);
    fill_normal(x[1], 60, 1);
    fill_normal(dy, 36, 2);
    set_inputs(&r, x);
    struct pb_node_act act;
    float *y0 = lforward(&r, true, &act);
    lbackward(&r, &act, dy, dx);
    for (int t = 2; t < 5; t++)
        for (int j = 0; j < 6; j++) {
            ck_assert(dx[1][(5 + t) * 6 + j] == 0.0f);
            x[1][(5 + t) * 6 + j] = 50.0f;
        }
    set_inputs(&r, x);
    float *y1 = lforward(&r, false, &act);
    for (int i = 0; i < 36; i++)
        ck_assert_msg(y0[i] == y1[i], "context %d moved with masked keys", i);
    for (int k = 0; k < 2; k++) {
        free(x[k]);
        free(dx[k]);
    }
    free(y0);
    free(y1);
    lrun_finish(&r);
}
END_TEST

/* The token loss: label-smoothed cross-entropy (ε = 0.1) ignoring the padding label 0,
 * per token, against the MLPerf GNMT LabelSmoothing sum over non-padding tokens divided
 * by their count (= PyTorch's cross_entropy(ignore_index = 0, label_smoothing = 0.1)).
 * Tolerances as test_layers_parity's xent: loss 1e-6 relative (an 11-term log-sum-exp in
 * double), dlogits 1e-5 relative + 1e-7. With no label ignored it is the plain mean; with
 * every label ignored the loss and gradient are 0. */
START_TEST(token_loss)
{
    struct pb_err e;
    pb_load_fixture(&fx, "gnmt.safetensors");
    enum { N = 9, C = 11 };
    float *logits = pb_fixture_read(&fx, "tokloss", "logits", N * C);
    float *dl_ref = pb_fixture_read(&fx, "tokloss", "dlogits", N * C);
    float *lf = pb_fixture_read(&fx, "tokloss", "labels", N), loss_ref, correct_ref;
    ck_assert(pb_st_read_f32(&fx, "tokloss.loss", &loss_ref, 1, &e) == 0);
    ck_assert(pb_st_read_f32(&fx, "tokloss.correct", &correct_ref, 1, &e) == 0);
    int32_t labels[N], zeros[N] = {0};
    for (int i = 0; i < N; i++)
        labels[i] = (int32_t)lf[i];
    struct pb_backend *be = pb_backend_cpu_create(1, &e);
    float *d_logits = pb_backend_alloc(be, N * C * sizeof(float), PB_MEM_SCRATCH, &e);
    float *d_dl = pb_backend_alloc(be, N * C * sizeof(float), PB_MEM_SCRATCH, &e);
    int32_t *d_labels = pb_backend_alloc(be, sizeof labels, PB_MEM_SCRATCH, &e);
    struct pb_xent_out *d_res = pb_backend_alloc(be, sizeof *d_res, PB_MEM_SCRATCH, &e), res, all;
    be->ops->upload(be, d_logits, logits, N * C * sizeof(float));
    be->ops->upload(be, d_labels, labels, sizeof labels);
    be->ops->softmax_xent(be, d_logits, d_labels, N, C, 0.1f, 0, 0, d_res, d_dl);
    float dl[N * C];
    be->ops->download(be, dl, d_dl, sizeof dl);
    be->ops->download(be, &res, d_res, sizeof res);
    be->ops->sync(be);
    pb_assert_close("loss", &res.loss, &loss_ref, 1, 1e-6, 1e-7);
    pb_assert_close("dlogits", dl, dl_ref, N * C, 1e-5, 1e-7);
    ck_assert_int_eq(res.correct, (int)correct_ref);
    ck_assert_int_eq(res.count, 6);
    for (int j = 0; j < C; j++)
        ck_assert(dl[1 * C + j] == 0.0f && dl[5 * C + j] == 0.0f && dl[7 * C + j] == 0.0f);
    /* no padding label: the mean over all rows, the same as ignore < 0 */
    be->ops->softmax_xent(be, d_logits, d_labels, N, C, 0.1f, 4, 0, d_res, NULL);
    be->ops->download(be, &res, d_res, sizeof res);
    be->ops->softmax_xent(be, d_logits, d_labels, N, C, 0.1f, -1, 0, d_res, NULL);
    be->ops->download(be, &all, d_res, sizeof all);
    be->ops->sync(be);
    ck_assert(res.loss == all.loss && res.count == N && all.count == N);
    be->ops->upload(be, d_labels, zeros, sizeof zeros);
    be->ops->softmax_xent(be, d_logits, d_labels, N, C, 0.1f, 0, 0, d_res, d_dl);
    be->ops->download(be, &res, d_res, sizeof res);
    be->ops->download(be, dl, d_dl, sizeof dl);
    be->ops->sync(be);
    ck_assert(res.loss == 0.0f && res.count == 0 && res.correct == 0);
    pb_assert_all("masked logits' gradient", dl, (size_t)N * C, 0.0f);
    pb_backend_free(be, d_logits);
    pb_backend_free(be, d_dl);
    pb_backend_free(be, d_labels);
    pb_backend_free(be, d_res);
    pb_backend_destroy(be);
    free(logits);
    free(dl_ref);
    free(lf);
    pb_st_finish(&fx);
}
END_TEST

/* The paper's objective (model.h grad_per_sentence, semantics §1.2), hand-worked: a stage
 * whose logits are its input (a linear layer 3 → 3 with weight I, bias 0) over B = 2
 * sentences of T = 2 steps, labels {1, 2 | pad, 2}, ε = 0.1. Rows z = (2, 0, 0), (0, 0, 0),
 * (1, 1, 1) (padding), (0, 0, 2); p − t with t = 0.9·onehot + 1/30 divided by the
 * sentences B = 2, not by the M = 3 counted tokens; the loss recorded stays per token:
 * (2·ln(e² + 2) + ln 3 − 0.9·2 − 2·(0.1/3)·2) / 3. */
START_TEST(sentence_objective)
{
    struct pb_err e;
    struct pb_model m;
    pb_model_init(&m, "classifier", (struct pb_shape){1, 2, 3, 1}, 3);
    m.label_steps = 2;
    m.ignore_label = 0;
    m.label_smoothing = 0.1f;
    struct pb_block *b = pb_model_block(&m, "classifier");
    pb_block_linear(&m, b, "linear", 3, 3);
    ck_assert_msg(pb_model_finalize(&m, 2, &e) == 0, "%s", e.msg);
    struct pb_backend *be = pb_backend_cpu_create(1, &e);
    for (int per_sentence = 0; per_sentence < 2; per_sentence++) {
        m.grad_per_sentence = per_sentence;
        struct pb_stage s;
        ck_assert_msg(pb_stage_init(&s, be, &m, 0, 1, 0, 1, &e) == 0, "%s", e.msg);
        const float w[12] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};   /* weight [3, 3], bias */
        be->ops->upload(be, s.params, w, sizeof w);
        const float x[12] = {2, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 2};
        const int32_t labels[4] = {1, 2, 0, 2};
        struct pb_tensor in;
        ck_assert(pb_tensor_alloc(be, &in, s.in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, &e) == 0);
        int32_t *dlabels = pb_backend_alloc(be, sizeof labels, PB_MEM_COMM, &e);
        be->ops->upload(be, in.data, x, sizeof x);
        be->ops->upload(be, dlabels, labels, sizeof labels);
        struct pb_step_ctx c = {.train = true, .seed = 1};
        struct pb_stage_act act;
        ck_assert_msg(pb_stage_forward(&s, &c, s.params, in, dlabels, &act, NULL, &e) == 0,
                      "%s", e.msg);
        float dl[12];
        be->ops->download(be, dl, act.dlogits, sizeof dl);
        be->ops->sync(be);
        double e2 = exp(2.0), z = e2 + 2, lo = 1.0 / 30, hi = 0.9 + lo;
        double want[12] = {e2 / z - lo, 1 / z - hi, 1 / z - lo,
                           1.0 / 3 - lo, 1.0 / 3 - lo, 1.0 / 3 - hi,
                           0, 0, 0,
                           1 / z - lo, 1 / z - lo, e2 / z - hi};
        double div = per_sentence ? 2 : 3;
        for (int i = 0; i < 12; i++)
            ck_assert_msg(fabs(dl[i] - want[i] / div) <= 1e-7, "dlogits[%d] %.9g, want %.9g "
                          "(per sentence %d)", i, (double)dl[i], want[i] / div, per_sentence);
        double loss = (2 * log(z) + log(3.0) - 0.9 * 2 - 2 * (0.1 / 3) * 2) / 3;
        ck_assert_msg(fabs(act.loss - loss) <= 1e-6, "loss %.9g, want %.9g", (double)act.loss,
                      loss);
        ck_assert_int_eq(act.count, 3);
        pb_stage_act_release(&s, &act);
        pb_backend_free(be, dlabels);
        pb_stage_finish(&s);
    }
    pb_backend_destroy(be);
    pb_model_finish(&m);
}
END_TEST

/* The bidirectional LSTM's and the attention's outputs and gradients have the same bits
 * on 1 and 3 threads (every sum in a fixed order, each output owned by one thread). */
static void threads_case(const char *name, const int32_t *lens)
{
    const struct gcase *c = gcase_find(name);
    float *out[2][5];
    size_t nout[5];
    for (int k = 0; k < 2; k++) {
        struct lrun r;
        lrun_init_threads(&r, c->cfg, c->nin, c->in, lens, k ? 3 : 1);
        float *x[2] = {NULL, NULL}, *dx[2] = {NULL, NULL};
        for (int i = 0; i < c->nin; i++) {
            x[i] = malloc(pb_shape_count(c->in[i]) * sizeof(float));
            fill_normal(x[i], pb_shape_count(c->in[i]), 30 + (uint64_t)i);
        }
        set_inputs(&r, x);
        size_t ny = pb_shape_count(r.l.out_shape);
        float *dy = malloc(ny * sizeof *dy);
        fill_normal(dy, ny, 40);
        struct pb_node_act act;
        out[k][0] = lforward(&r, true, &act);
        lbackward(&r, &act, dy, dx);
        out[k][1] = dx[0];
        out[k][2] = dx[1];
        out[k][3] = malloc(r.np * sizeof(float));
        r.be->ops->download(r.be, out[k][3], r.grads, r.np * sizeof(float));
        nout[0] = ny;
        nout[1] = pb_shape_count(c->in[0]);
        nout[2] = c->nin > 1 ? pb_shape_count(c->in[1]) : 0;
        nout[3] = r.np;
        for (int i = 0; i < c->nin; i++)
            free(x[i]);
        free(dy);
        lrun_finish(&r);
    }
    for (int j = 0; j < 4; j++) {
        ck_assert_msg(nout[j] == 0 || !memcmp(out[0][j], out[1][j], nout[j] * sizeof(float)),
                      "%s: output %d differs between 1 and 3 threads", name, j);
        free(out[0][j]);
        free(out[1][j]);
    }
}

START_TEST(thread_bits)
{
    int32_t lstm_len[3] = {6, 3, 1}, attn_len[2] = {5, 2}, wide_len[3] = {5, 3, 1};
    threads_case("bilstm", lstm_len);
    threads_case("attn", attn_len);
    threads_case("attn_wide", wide_len);
    threads_case("attn_batch", NULL);
}
END_TEST

static void name_of(void *ctx, const struct pb_stage_tensor *t)
{
    char *all = ctx;
    strcat(all, t->name);
    strcat(all, " ");
}

/* A block as GNMT's stages hold them: a bidirectional LSTM over the block input, an LSTM
 * 2H → H over it (the queries) and the attention of those over the bidirectional
 * outputs (the keys). It finalizes, counts PyTorch's parameters, names its tensors as
 * PyTorch, and runs as a stage with lengths: the keys' gradient adds both paths, which
 * central differences of the stage input check. */
START_TEST(gnmt_block)
{
    struct pb_err e;
    struct pb_model m;
    struct pb_shape x = {2, 5, 3, 1};
    pb_model_init(&m, "gnmt_block", x, 0);
    struct pb_block *b = pb_model_block(&m, "enc");
    int bi = pb_block_bilstm(&m, b, "bi", 3, 4);
    int q = pb_block_lstm(&m, b, "dec", 8, 4);
    pb_block_attention(&m, b, "attn", q, bi, 4, 8, 6);
    ck_assert_msg(pb_model_finalize(&m, 2, &e) == 0, "%s", e.msg);
    /* 2·4·4·(3 + 4 + 2) + 4·4·(8 + 4 + 2) + 6·(2 + 4 + 8) + 1 */
    ck_assert_uint_eq(pb_model_param_count(&m, 0, 1), 288 + 224 + 85);
    ck_assert(pb_shape_eq(b->out_shape, (struct pb_shape){2, 5, 8, 1}));
    ck_assert_uint_eq(pb_layer_act_bytes(&b->nodes[0]), (2 * 5 * 8) * 7 * 4 + 2 * 4);
    struct pb_backend *be = pb_backend_cpu_create(1, &e);
    struct pb_stage s;
    ck_assert_msg(pb_stage_init(&s, be, &m, 1, 3, 0, 1, &e) == 0, "%s", e.msg);
    ck_assert(pb_stage_init_params(&s, 5, &e) == 0);
    char all[2048] = "";
    pb_stage_tensors(&s, name_of, all);
    ck_assert_str_eq(all,
                     "enc.bi.weight_ih_l0 enc.bi.weight_hh_l0 enc.bi.bias_ih_l0 "
                     "enc.bi.bias_hh_l0 enc.bi.weight_ih_l0_reverse "
                     "enc.bi.weight_hh_l0_reverse enc.bi.bias_ih_l0_reverse "
                     "enc.bi.bias_hh_l0_reverse enc.dec.weight_ih_l0 "
                     "enc.dec.weight_hh_l0 enc.dec.bias_ih_l0 "
                     "enc.dec.bias_hh_l0 enc.attn.linear_att "
                     "enc.attn.normalize_scalar enc.attn.normalize_bias "
                     "enc.attn.linear_q.weight enc.attn.linear_k.weight ");
    int32_t lens[2] = {3, 5};
    int32_t *dlen = pb_backend_alloc(be, sizeof lens, PB_MEM_COMM, &e);
    be->ops->upload(be, dlen, lens, sizeof lens);
    struct pb_step_ctx c = {.train = true, .seed = 7, .mb = 0, .lengths = dlen};
    float xs[30], rr[80];
    fill_normal(xs, 30, 5);
    fill_normal(rr, 80, 6);
    struct pb_stage_act act;
    free(stage_forward_host(be, &s, &c, xs, &act));
    float *dx = stage_backward_host(be, &s, &act, rr);
    for (int i = 0; i < 30; i += 2) {
        double l[2];
        for (int k = 0; k < 2; k++) {
            float keep = xs[i];
            xs[i] = keep + (k ? -1.0f : 1.0f) * (float)FD_H;
            float *y = stage_forward_host(be, &s, &c, xs, &act);
            pb_stage_act_release(&s, &act);
            l[k] = 0;
            for (int j = 0; j < 80; j++)
                l[k] += (double)rr[j] * y[j];
            free(y);
            xs[i] = keep;
        }
        check_fd("dx", (size_t)i, (l[0] - l[1]) / (2 * FD_H), dx[i]);
        if (i / 3 >= 3 && i / 3 < 5)  /* sequence 0's padding steps 3, 4 */
            ck_assert(dx[i] == 0.0f);
    }
    free(dx);
    pb_backend_free(be, dlen);
    pb_stage_finish(&s);
    pb_backend_destroy(be);
    pb_model_finish(&m);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("gnmt_layers");
    TCase *tc = tcase_create("parity");
    tcase_add_test(tc, parity_bilstm);
    tcase_add_test(tc, parity_bilstm_full);
    tcase_add_test(tc, parity_attn);
    tcase_add_test(tc, parity_attn_full);
    tcase_add_test(tc, parity_attn_wide);
    tcase_add_test(tc, parity_attn_batch);
    tcase_add_test(tc, token_loss);
    tcase_add_test(tc, sentence_objective);
    suite_add_tcase(s, tc);
    tc = tcase_create("grad");
    tcase_add_test(tc, grad_bilstm);
    tcase_add_test(tc, grad_bilstm_full);
    tcase_add_test(tc, grad_attn);
    tcase_add_test(tc, grad_attn_full);
    tcase_add_test(tc, grad_attn_wide);
    suite_add_tcase(s, tc);
    tc = tcase_create("properties");
    tcase_add_test(tc, bilstm_padding);
    tcase_add_test(tc, attn_mask_init);
    tcase_add_test(tc, gnmt_block);
    tcase_add_test(tc, thread_bits);
    suite_add_tcase(s, tc);
    return s;
}
