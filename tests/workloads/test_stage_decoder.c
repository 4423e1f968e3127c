/* tests/workloads/test_stage_decoder.c — the decoder over a one-stage GNMT (workloads/evaluation/decode/
 * stage_decoder.h) on gnmt8 small with its initial weights: each step's log-probabilities
 * are the log-softmax of a full teacher-forced eval forward's logits at that position
 * whatever follows it (the model is causal, so prefix decoding is exact), the attention
 * weights of a row sum to 1 over its source and are 0 past it, select reorders the rows,
 * and a search may not run past the model's T positions. Fast. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/backend.h"
#include "harness/compute/cpu/cpu_backend.h"
#include "workloads/evaluation/decode/stage_decoder.h"
#include "workloads/models/workload.h"

#define ROWS 4

struct fixture {
    struct pb_model m;
    struct pb_backend *be;
    struct pb_stage s;
    struct pb_dataset ds;
    int T, V;
};

static void setup(struct fixture *f)
{
    struct pb_err e;
    const struct pb_workload *w = pb_workload_find("gnmt8", &e);
    const struct pb_preset *p;
    ck_assert(w && pb_workload_preset(w, "small", &p, &e) == 0);
    struct pb_dataset_opts opts = {.vocab = p->vocab, .steps = p->steps};
    ck_assert_msg(pb_dataset_synthetic_wmt16(&f->ds, PB_SPLIT_TEST, ROWS, 3, &opts, &e) == 0,
                  "%s", e.msg);
    ck_assert_msg(w->build(&f->m, p, (struct pb_shape){1, f->ds.c, 1, 1}, p->classes, &e) == 0,
                  "%s", e.msg);
    ck_assert_msg(pb_model_finalize(&f->m, ROWS, &e) == 0, "%s", e.msg);
    f->be = pb_backend_cpu_create(1, &e);
    ck_assert(f->be);
    ck_assert_msg(pb_stage_init(&f->s, f->be, &f->m, 0, 2, 0, f->m.nblocks, &e) == 0, "%s",
                  e.msg);
    ck_assert(pb_stage_init_params(&f->s, 5, &e) == 0);
    f->T = p->steps;
    f->V = p->classes;
}

static void teardown(struct fixture *f)
{
    pb_stage_finish(&f->s);
    pb_backend_destroy(f->be);
    pb_model_finish(&f->m);
    pb_dataset_finish(&f->ds);
}

/* The eval forward's logits [ROWS, T, V] of samples x [ROWS, 2T]. */
static float *forward(struct fixture *f, const float *x, const int32_t *len)
{
    struct pb_err e;
    struct pb_backend *be = f->be;
    struct pb_tensor in, out;
    ck_assert(pb_tensor_alloc(be, &in, f->s.in_shape, PB_LAYOUT_PLAIN, PB_MEM_COMM, &e) == 0);
    be->ops->upload(be, in.data, x, pb_shape_count(f->s.in_shape) * sizeof(float));
    int32_t *dl = pb_backend_alloc(be, ROWS * sizeof(int32_t), PB_MEM_SCRATCH, &e);
    be->ops->upload(be, dl, len, ROWS * sizeof(int32_t));
    struct pb_step_ctx c = {.train = false, .lengths = dl};
    struct pb_stage_act act;
    ck_assert_msg(pb_stage_forward(&f->s, &c, f->s.params, in, NULL, &act, &out, &e) == 0, "%s",
                  e.msg);
    size_t n = pb_shape_count(f->s.out_shape);
    float *y = malloc(n * sizeof *y);
    be->ops->download(be, y, out.data, n * sizeof *y);
    be->ops->sync(be);
    pb_backend_free(be, out.data);
    pb_backend_free(be, dl);
    return y;
}

/* Steps of the decoder reading each sample's own target tokens equal the full forward's
 * log-softmax at every position, bit for bit; the
 * attention of each row is a distribution over its source. */
START_TEST(prefix_equals_full_forward)
{
    struct fixture f;
    setup(&f);
    int T = f.T, V = f.V;
    float *x = malloc((size_t)ROWS * 2 * T * sizeof *x);
    int32_t *src = malloc((size_t)ROWS * T * sizeof *src), len[ROWS];
    int32_t *tgt = malloc((size_t)ROWS * T * sizeof *tgt);
    pb_dataset_gather(&f.ds, (struct pb_data_key){0}, NULL, 0, ROWS, x, NULL);
    pb_dataset_gather_lengths(&f.ds, NULL, 0, ROWS, len);
    pb_dataset_gather_targets(&f.ds, NULL, 0, ROWS, tgt);
    for (int i = 0; i < ROWS * T; i++)
        src[i] = (int32_t)x[(i / T) * 2 * T + i % T];
    float *full = forward(&f, x, len);
    struct pb_stage_decoder sd;
    struct pb_decoder d;
    struct pb_err e;
    ck_assert_msg(pb_stage_decoder_init(&sd, &f.s, src, len, ROWS, &d, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(d.vocab, V);
    float *logp = malloc((size_t)ROWS * V * sizeof *logp), *attn = malloc(ROWS * T * sizeof *attn);
    int32_t tok[ROWS];
    double worst = 0;
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < ROWS; i++)
            tok[i] = tgt[i * T + t];
        ck_assert_msg(d.step(d.ctx, tok, ROWS, logp, attn, &e) == 0, "%s", e.msg);
        for (int i = 0; i < ROWS; i++) {
            const float *z = full + ((size_t)i * T + t) * V;
            double mx = -INFINITY, sum = 0;
            for (int v = 0; v < V; v++)
                mx = z[v] > mx ? z[v] : mx;
            for (int v = 0; v < V; v++)
                sum += exp(z[v] - mx);
            double lse = mx + log(sum);  /* as the decoder forms it */
            for (int v = 0; v < V; v++) {
                double want = (float)((double)z[v] - lse), got = logp[(size_t)i * V + v];
                worst = fabs(got - want) > worst ? fabs(got - want) : worst;
            }
            double a = 0;
            for (int j = 0; j < T; j++) {
                float w = attn[i * T + j];
                ck_assert_msg(j < len[i] ? w >= 0 : w == 0, "row %d step %d: attention %g at "
                              "%d (source length %d)", i, t, w, j, len[i]);
                a += w;
            }
            ck_assert_msg(fabs(a - 1) < 1e-5, "row %d step %d: attention sums to %g", i, t, a);
        }
    }
    ck_assert_msg(worst == 0, "prefix decoding differs from the full forward by %g", worst);
    /* past the model's T positions: refused */
    ck_assert_int_eq(d.step(d.ctx, tok, ROWS, logp, attn, &e), -1);
    ck_assert_msg(strstr(e.msg, "at most 20 target tokens"), "%s", e.msg);
    pb_stage_decoder_finish(&sd);
    free(full);
    free(x);
    free(src);
    free(tgt);
    free(logp);
    free(attn);
    teardown(&f);
}
END_TEST

/* After select {2, 0} the two rows step as sentences 2 and 0 did. */
START_TEST(select_reorders)
{
    struct fixture f;
    setup(&f);
    int T = f.T, V = f.V;
    float *x = malloc((size_t)ROWS * 2 * T * sizeof *x);
    int32_t *src = malloc((size_t)ROWS * T * sizeof *src), len[ROWS];
    pb_dataset_gather(&f.ds, (struct pb_data_key){0}, NULL, 0, ROWS, x, NULL);
    pb_dataset_gather_lengths(&f.ds, NULL, 0, ROWS, len);
    for (int i = 0; i < ROWS * T; i++)
        src[i] = (int32_t)x[(i / T) * 2 * T + i % T];
    struct pb_stage_decoder sd;
    struct pb_decoder d;
    struct pb_err e;
    float *a = malloc((size_t)ROWS * V * sizeof *a), *b = malloc((size_t)ROWS * V * sizeof *b);
    float *attn = malloc(ROWS * T * sizeof *attn);
    int32_t bos[ROWS] = {PB_WMT16_BOS, PB_WMT16_BOS, PB_WMT16_BOS, PB_WMT16_BOS};
    int32_t next[ROWS] = {7, 8, 9, 10}, rows[2] = {2, 0};
    ck_assert(pb_stage_decoder_init(&sd, &f.s, src, len, ROWS, &d, &e) == 0);
    ck_assert(d.step(d.ctx, bos, ROWS, a, attn, &e) == 0);
    ck_assert(d.step(d.ctx, next, ROWS, a, attn, &e) == 0);
    pb_stage_decoder_finish(&sd);
    ck_assert(pb_stage_decoder_init(&sd, &f.s, src, len, ROWS, &d, &e) == 0);
    ck_assert(d.step(d.ctx, bos, ROWS, b, attn, &e) == 0);
    ck_assert(d.select(d.ctx, rows, 2, &e) == 0);
    int32_t next2[2] = {9, 7};
    ck_assert(d.step(d.ctx, next2, 2, b, attn, &e) == 0);
    ck_assert(!memcmp(b, a + 2 * V, V * sizeof *a));
    ck_assert(!memcmp(b + V, a, V * sizeof *a));
    ck_assert(memcmp(a, a + 2 * V, V * sizeof *a));
    pb_stage_decoder_finish(&sd);
    free(x);
    free(src);
    free(a);
    free(b);
    free(attn);
    teardown(&f);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("stage_decoder");
    TCase *t = tcase_create("stage_decoder");
    tcase_add_test(t, prefix_equals_full_forward);
    tcase_add_test(t, select_reorders);
    suite_add_tcase(s, t);
    return s;
}
