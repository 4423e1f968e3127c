/* tests/model/test_seq_layers.c — the sequence layers (embedding, LSTM, masked mean over time)
 * and one residual-LSTM block against PyTorch 1.13 (tests/fixtures/seq.safetensors from
 * fixtures_seq.py: forward, dx, dW), finite-difference gradient checks of the same, and
 * the residual-lstm presets: parameter count against the PyTorch definition, shapes,
 * partitions for D = 1 … 4 and the paper's cut at D = 4. Each layer runs as the middle
 * stage of a 3-stage pipeline, so the stage takes dy and returns dx. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/rng.h"
#include "harness/compute/cpu/cpu_backend.h"
#include "harness/model/stage.h"
#include "tests/support/layer_cases.h"
#include "tests/support/test_util.h"
#include "workloads/models/workload.h"

/* float32 with another summation order than PyTorch's; the LSTM's recurrence carries
 * rounding over 6 steps of sums of at most 10 products, far below 1e-4 relative. */
#define RTOL 1e-4
#define ATOL 1e-5
/* Central differences with h = 1e-2 on smooth layers (sigmoid, tanh): truncation
 * h²·L''' ~ 1e-4; float32 rounding of L (~1e-7 relative over O(10) terms) over 2h
 * ~ 1e-5. */
#define FD_H 1e-2
#define FD_RTOL 1e-2
#define FD_ATOL 2e-3

struct seq_case {
    const char *name;
    struct pb_shape x;
    void (*build)(struct pb_model *m, struct pb_block *b);
};

static void b_emb(struct pb_model *m, struct pb_block *b) { pb_block_embedding(m, b, "emb", 20, 6, 0); }
static void b_lstm(struct pb_model *m, struct pb_block *b) { pb_block_lstm(m, b, "lstm", 5, 4); }
static void b_mean(struct pb_model *m, struct pb_block *b) { pb_block_seq_mean(m, b, "mean"); }

static void b_block(struct pb_model *m, struct pb_block *b)
{
    pb_block_lstm(m, b, "lstm", 6, 6);
    int fc = pb_block_linear(m, b, "linear", 6, 6);
    int in[2] = {fc, -1};
    pb_block_node(m, b, "add", &(struct pb_layer_cfg){.kind = PB_LAYER_ADD}, 2, in);
}

static const struct seq_case cases[] = {
    {"emb", {2, 5, 1, 1}, b_emb},
    {"lstm", {2, 6, 5, 1}, b_lstm},
    {"mean", {3, 5, 4, 1}, b_mean},
    {"block", {2, 5, 6, 1}, b_block},
};

static const struct seq_case *find_case(const char *name)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(cases[i].name, name))
            return &cases[i];
    ck_abort_msg("no case %s", name);
    return NULL;
}

struct run {
    struct pb_model model;
    struct pb_backend *be;
    struct pb_stage stage;
    int32_t *lengths;  /* device [batch] or NULL */
};

static void run_init(struct run *r, const struct seq_case *c, const int32_t *host_len)
{
    struct pb_err e;
    pb_model_init(&r->model, c->name, c->x, 0);
    c->build(&r->model, pb_model_block(&r->model, c->name));
    ck_assert_msg(pb_model_finalize(&r->model, c->x.n, &e) == 0, "%s", e.msg);
    r->be = pb_backend_cpu_create(1, &e);
    ck_assert_msg(r->be != NULL, "%s", e.msg);
    ck_assert_msg(pb_stage_init(&r->stage, r->be, &r->model, 1, 3, 0, 1, &e) == 0, "%s", e.msg);
    ck_assert(pb_stage_init_params(&r->stage, 5, &e) == 0);
    r->lengths = NULL;
    if (host_len) {
        r->lengths = pb_backend_alloc(r->be, (size_t)c->x.n * sizeof(int32_t), PB_MEM_COMM, &e);
        r->be->ops->upload(r->be, r->lengths, host_len, (size_t)c->x.n * sizeof(int32_t));
    }
}

static void run_finish(struct run *r)
{
    pb_backend_free(r->be, r->lengths);
    pb_stage_finish(&r->stage);
    pb_backend_destroy(r->be);
    pb_model_finish(&r->model);
}

static float *forward(struct run *r, const float *x, struct pb_stage_act *act)
{
    struct pb_step_ctx c = {.train = true, .seed = 7, .mb = 0, .lengths = r->lengths};
    return stage_forward_host(r->be, &r->stage, &c, x, act);
}

static float *backward(struct run *r, struct pb_stage_act *act, const float *dy)
{
    return stage_backward_host(r->be, &r->stage, act, dy);
}

static struct pb_safetensors fx;

/* The lengths of case `name` (NULL where it has none). */
static int32_t *case_lengths(const char *name, int n)
{
    if (strcmp(name, "mean"))
        return NULL;
    float *f = pb_fixture_read(&fx, name, "len", (size_t)n);
    int32_t *len = malloc((size_t)n * sizeof *len);
    for (int i = 0; i < n; i++)
        len[i] = (int32_t)f[i];
    free(f);
    return len;
}

static void check_parity(const char *name)
{
    const struct seq_case *c = find_case(name);
    pb_load_fixture(&fx, "seq.safetensors");
    int32_t *len = case_lengths(name, c->x.n);
    struct run r;
    run_init(&r, c, len);
    struct pb_stage *s = &r.stage;
    float *w = pb_fixture_params(&fx, name, s->nparams);
    r.be->ops->upload(r.be, s->params, w, s->nparams * sizeof(float));
    size_t nx = pb_shape_count(s->in_shape), ny = pb_shape_count(s->out_shape);
    float *x = pb_fixture_read(&fx, name, "x", nx), *dy = pb_fixture_read(&fx, name, "dy", ny);
    float *y_ref = pb_fixture_read(&fx, name, "y", ny);
    struct pb_stage_act act;
    float *y = forward(&r, x, &act);
    pb_assert_close("y", y, y_ref, ny, RTOL, ATOL);
    float *dx = backward(&r, &act, dy);
    if (strcmp(name, "emb")) {
        float *dx_ref = pb_fixture_read(&fx, name, "dx", nx);
        pb_assert_close("dx", dx, dx_ref, nx, RTOL, ATOL);
        free(dx_ref);
    } else {
        pb_assert_all("token gradient", dx, nx, 0.0f);  /* tokens get no gradient */
    }
    float *g = malloc((s->nparams + 1) * sizeof *g);
    r.be->ops->download(r.be, g, s->grads, s->nparams * sizeof(float));
    size_t off = 0;
    for (int i = 0; off < s->nparams; i++) {
        char gn[16];
        snprintf(gn, sizeof gn, "g%d", i);
        char full[64];
        snprintf(full, sizeof full, "%s.%s", name, gn);
        const struct pb_st_tensor *gt = pb_st_find(&fx, full);
        ck_assert_msg(gt != NULL, "fixture has no %s", full);
        float *g_ref = pb_fixture_read(&fx, name, gn, gt->count);
        pb_assert_close(full, g + off, g_ref, gt->count, RTOL, ATOL);
        off += gt->count;
        free(g_ref);
    }
    free(g);
    free(dx);
    free(y);
    free(x);
    free(dy);
    free(y_ref);
    free(w);
    free(len);
    run_finish(&r);
    pb_st_finish(&fx);
}

#define PARITY(nm) START_TEST(parity_##nm) { check_parity(#nm); } END_TEST
PARITY(emb)
PARITY(lstm)
PARITY(mean)
PARITY(block)

/* The embedding's backward touches only the rows seen, never the padding row. */
START_TEST(embedding_rows)
{
    pb_load_fixture(&fx, "seq.safetensors");
    float *g = pb_fixture_read(&fx, "emb", "g0", 20 * 6);
    struct run r;
    run_init(&r, find_case("emb"), NULL);
    float tok[10] = {1, 7, 7, 19, 0, 1, 3, 0, 0, 0}, dy[60];
    for (int i = 0; i < 60; i++)
        dy[i] = 1.0f;
    struct pb_stage_act act;
    free(forward(&r, tok, &act));
    free(backward(&r, &act, dy));
    float grads[120];
    r.be->ops->download(r.be, grads, r.stage.grads, sizeof grads);
    for (int row = 0; row < 20; row++) {
        float want = row == 1 ? 2.0f : row == 7 ? 2.0f : row == 19 || row == 3 ? 1.0f : 0.0f;
        for (int j = 0; j < 6; j++)
            ck_assert_msg(grads[row * 6 + j] == want, "row %d: %g, want %g", row,
                          (double)grads[row * 6 + j], (double)want);
    }
    /* init: N(0, 1) with the padding row zero */
    float w[120];
    r.be->ops->download(r.be, w, r.stage.params, sizeof w);
    for (int j = 0; j < 6; j++)
        ck_assert(w[j] == 0.0f && w[6 + j] != 0.0f);
    free(g);
    run_finish(&r);
    pb_st_finish(&fx);
}
END_TEST

static void fill_normal(float *v, size_t n, uint64_t which)
{
    struct pb_rng_key k = pb_rng_key(PB_RNG_DATA, 17, which, 0, 0);
    for (size_t i = 0; i < n; i++)
        v[i] = pb_rng_normal(k, i);
}

static double loss_of(struct run *r, const float *x, const float *rr, size_t ny)
{
    struct pb_stage_act act;
    float *y = forward(r, x, &act);
    double l = 0;
    for (size_t i = 0; i < ny; i++)
        l += (double)rr[i] * y[i];
    pb_stage_act_release(&r->stage, &act);
    free(y);
    return l;
}

static void check_fd(const char *what, size_t i, double fd, double an)
{
    ck_assert_msg(fabs(fd - an) <= FD_ATOL + FD_RTOL * fabs(an),
                  "%s[%zu]: finite difference %.6g, backward %.6g", what, i, fd, an);
}

/* L = Σ r ⊙ y: the backward's dx (not for tokens) and dW against central differences. */
static void check_grad(const char *name)
{
    const struct seq_case *c = find_case(name);
    int32_t lens[3] = {5, 2, 1};
    struct run r;
    run_init(&r, c, !strcmp(name, "mean") ? lens : NULL);
    struct pb_stage *s = &r.stage;
    size_t nx = pb_shape_count(s->in_shape), ny = pb_shape_count(s->out_shape), np = s->nparams;
    float *x = malloc(nx * sizeof *x), *rr = malloc(ny * sizeof *rr);
    fill_normal(x, nx, 0);
    fill_normal(rr, ny, 1);
    bool tokens = !strcmp(name, "emb");
    if (tokens)
        for (size_t i = 0; i < nx; i++)
            x[i] = (float)(i * 7 % 20);
    struct pb_stage_act act;
    free(forward(&r, x, &act));
    float *dx = backward(&r, &act, rr);
    float *g = malloc((np + 1) * sizeof *g), *w = malloc((np + 1) * sizeof *w);
    r.be->ops->download(r.be, g, s->grads, np * sizeof(float));
    r.be->ops->download(r.be, w, s->params, np * sizeof(float));
    for (size_t i = 0; !tokens && i < nx; i += nx / 24 + 1) {
        float keep = x[i];
        x[i] = keep + (float)FD_H;
        double lp = loss_of(&r, x, rr, ny);
        x[i] = keep - (float)FD_H;
        double lm = loss_of(&r, x, rr, ny);
        x[i] = keep;
        check_fd("dx", i, (lp - lm) / (2 * FD_H), dx[i]);
    }
    for (size_t i = 0; i < np; i += np / 40 + 1) {
        float keep = w[i];
        w[i] = keep + (float)FD_H;
        r.be->ops->upload(r.be, s->params, w, np * sizeof(float));
        double lp = loss_of(&r, x, rr, ny);
        w[i] = keep - (float)FD_H;
        r.be->ops->upload(r.be, s->params, w, np * sizeof(float));
        double lm = loss_of(&r, x, rr, ny);
        w[i] = keep;
        r.be->ops->upload(r.be, s->params, w, np * sizeof(float));
        double fd = (lp - lm) / (2 * FD_H);
        if (tokens && i / 6 == 0)
            fd = 0;  /* the padding row gets no gradient */
        check_fd("dW", i, fd, g[i]);
    }
    free(x);
    free(rr);
    free(dx);
    free(g);
    free(w);
    run_finish(&r);
}

#define GRAD(nm) START_TEST(grad_##nm) { check_grad(#nm); } END_TEST
GRAD(emb)
GRAD(lstm)
GRAD(mean)
GRAD(block)

/* The paper preset has PyTorch's parameter count; both presets build on their own
 * sequences of token ids (and refuse images), name their LSTM tensors as PyTorch,
 * partition for D = 1 … 4, and the balanced D = 4 cut is the paper's, which the presets'
 * `--partition paper` gives too. */
START_TEST(models)
{
    struct pb_err e;
    pb_load_fixture(&fx, "seq.safetensors");
    float ref;
    ck_assert(pb_st_read_f32(&fx, "rlstm.nparams", &ref, 1, &e) == 0);
    const struct pb_workload *w = pb_workload_find("residual-lstm", &e);
    ck_assert(w != NULL && w->steps == 200 && w->vocab == 10000);
    const char *names[2] = {"paper", "small"};
    const int steps[2] = {200, 64};
    for (int k = 0; k < 2; k++) {
        const struct pb_preset *p;
        ck_assert(pb_workload_preset(w, names[k], &p, &e) == 0);
        ck_assert_int_eq(p->steps, steps[k]);
        ck_assert(pb_shape_eq(pb_preset_sample(p), (struct pb_shape){1, steps[k], 1, 1}));
        struct pb_model m;
        ck_assert_int_eq(w->build(&m, p, (struct pb_shape){1, 1, 28, 28}, 10, &e), -1);
        ck_assert_msg(strstr(e.msg, "sequences") && strstr(e.msg, names[k]), "%s", e.msg);
        ck_assert_msg(w->build(&m, p, pb_preset_sample(p), p->classes, &e) == 0, "%s", e.msg);
        ck_assert_msg(pb_model_finalize(&m, 2, &e) == 0, "%s", e.msg);
        ck_assert_int_eq(m.nblocks, 6);
        if (k == 0)
            ck_assert_uint_eq(pb_model_param_count(&m, 0, m.nblocks), (size_t)ref);
        else  /* 2000·32 + 4·(4·32·(32 + 32 + 2) + 32·32 + 32) + 32·2 + 2 */
            ck_assert_uint_eq(pb_model_param_count(&m, 0, m.nblocks), 2000 * 32 + 4 * (128 * 66 + 1056) + 66);
        const struct pb_layer *lstm = &m.blocks[1].nodes[0];
        struct pb_param_tensor pt[4];
        ck_assert_int_eq(lstm->ops->param_tensors(lstm, pt), 4);
        ck_assert_str_eq(pt[0].name, "weight_ih_l0");
        /* PyTorch's shapes: weight_ih [4H, I], weight_hh [4H, H], bias_hh [4H] */
        ck_assert(pt[0].ndim == 2 && pt[1].ndim == 2 && pt[3].ndim == 1);
        ck_assert(pt[0].shape[0] == 4 * pt[1].shape[1] && pt[1].shape[0] == pt[3].shape[0]);
        ck_assert_str_eq(pt[3].name, "bias_hh_l0");
        ck_assert(pb_shape_eq(m.blocks[5].out_shape, (struct pb_shape){2, 2, 1, 1}));
        int paper[5];
        ck_assert_msg(pb_partition_paper(&m, p, paper, &e) == 0, "%s", e.msg);
        ck_assert(paper[0] == 0 && paper[1] == 2 && paper[2] == 3 && paper[3] == 4 &&
                  paper[4] == 6);
        for (int d = 1; d <= 4; d++) {
            int b[5];
            ck_assert(pb_partition_balanced(&m, d, b, &e) == 0);
            ck_assert(b[0] == 0 && b[d] == 6);
            if (d == 4)
                ck_assert(!memcmp(b, paper, sizeof paper));
        }
        pb_model_finish(&m);
    }
    pb_st_finish(&fx);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("seq_layers");
    TCase *tc = tcase_create("parity");
    tcase_add_test(tc, parity_emb);
    tcase_add_test(tc, parity_lstm);
    tcase_add_test(tc, parity_mean);
    tcase_add_test(tc, parity_block);
    tcase_add_test(tc, embedding_rows);
    suite_add_tcase(s, tc);
    tc = tcase_create("grad");
    tcase_add_test(tc, grad_emb);
    tcase_add_test(tc, grad_lstm);
    tcase_add_test(tc, grad_mean);
    tcase_add_test(tc, grad_block);
    suite_add_tcase(s, tc);
    tc = tcase_create("models");
    tcase_add_test(tc, models);
    suite_add_tcase(s, tc);
    return s;
}
