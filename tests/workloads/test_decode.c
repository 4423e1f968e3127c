/* tests/workloads/test_decode.c — greedy and beam search (workloads/evaluation/decode/) against the numpy
 * reimplementation of the MLPerf GNMT reference's SequenceGenerator in
 * fixtures_decode.py, on its toy decoders (the same toy computed here in double): equal
 * tokens, lengths and decoder steps, scores to 1e-5, for greedy, beam 1 (greedy's tokens),
 * beam 3 and 5 with and without the penalties, both coverage forms, six sentences of
 * source lengths 5–10 in one batch (each also decoded alone), a hand-made toy whose best
 * hypothesis ended two steps before the search, sentences that reach the maximum length
 * without EOS, K = 16 > V = 12, and a source position no step attends to (log 0 counts
 * 0 in the coverage penalty); equal log-probabilities go to the lower index (also in the
 * best-tokens scan, against a stable sort, up to V = 32320). Also: bad
 * options and a failing or NaN-giving decoder are refused with a message before or
 * instead of any output, and decoded ids become text through the wmt16 fixture
 * vocabulary, whose BLEU equals `pipebench bleu --merge-bpe`'s on the same text. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/cli_util.h"
#include "tests/support/test_util.h"
#include "workloads/datasets/dataset.h"
#include "workloads/datasets/wmt16_vocab.h"
#include "workloads/evaluation/bleu/bleu.h"
#include "workloads/evaluation/decode/decode.h"
#include "workloads/evaluation/decode/decode_internal.h"

#define D 4
#define S 16
#define TS 10
#define MAXB 8

/* ---- the toy decoder of fixtures_decode.py ---- */

struct toy {
    int V, B;
    float *A, *Q, *W, *E, *Kt, *Es, *P;  /* [V,S,V] [V,S,TS] [D,D] [V,D] [V,D] [V,D] [D,V] */
    int32_t src[MAXB * TS], src_len[MAXB];
    int n, t;          /* rows, tokens read so far */
    double *h;         /* [n, D] */
    int *sent;         /* [n] */
    int steps, selects;
    int fail_at;       /* step call that fails (0: none) */
    bool nan;          /* write a NaN log-probability */
};

static float *read_tensor(const struct pb_safetensors *st, const char *model, const char *name,
                          size_t count)
{
    char key[64];
    struct pb_err e;
    snprintf(key, sizeof key, "%s.%s", model, name);
    float *x = malloc(count * sizeof *x);
    ck_assert_msg(pb_st_read_f32(st, key, x, count, &e) == 0, "%s", e.msg);
    return x;
}

/* Tensor `name` of dtype dt and count elements of 4 or 8 bytes copied into dst (the
 * file's data need not be aligned for it). */
static void copy_tensor(const struct pb_safetensors *st, const char *name, enum pb_st_dtype dt,
                        size_t count, void *dst)
{
    const struct pb_st_tensor *t = pb_st_find(st, name);
    ck_assert_msg(t != NULL, "fixture has no %s", name);
    ck_assert_msg(t->dtype == dt && t->count == count, "%s: dtype %d, %zu elements", name,
                  (int)t->dtype, t->count);
    memcpy(dst, t->data, count * (dt == PB_ST_F64 ? 8 : 4));
}

static void toy_reset(struct toy *m)
{
    free(m->h);
    free(m->sent);
    m->n = m->B;
    m->t = 0;
    m->h = calloc((size_t)m->B * D, sizeof *m->h);
    m->sent = malloc((size_t)m->B * sizeof *m->sent);
    for (int s = 0; s < m->B; s++) {
        m->sent[s] = s;
        for (int j = 0; j < m->src_len[s]; j++)
            for (int k = 0; k < D; k++)
                m->h[s * D + k] += m->Es[m->src[s * TS + j] * D + k] / m->src_len[s];
    }
    m->steps = m->selects = 0;
}

static void toy_load(struct toy *m, const struct pb_safetensors *st, const char *model)
{
    memset(m, 0, sizeof *m);
    char key[64];
    snprintf(key, sizeof key, "%s.src_len", model);
    const struct pb_st_tensor *t = pb_st_find(st, key);
    ck_assert(t != NULL && t->count <= MAXB);
    m->B = (int)t->count;
    memcpy(m->src_len, t->data, (size_t)m->B * sizeof *m->src_len);
    snprintf(key, sizeof key, "%s.src", model);
    copy_tensor(st, key, PB_ST_I32, (size_t)m->B * TS, m->src);
    snprintf(key, sizeof key, "%s.E", model);
    m->V = (int)pb_st_find(st, key)->shape[0];
    int V = m->V;
    m->A = read_tensor(st, model, "A", (size_t)V * S * V);
    m->Q = read_tensor(st, model, "Q", (size_t)V * S * TS);
    m->W = read_tensor(st, model, "W", D * D);
    m->E = read_tensor(st, model, "E", (size_t)V * D);
    m->Kt = read_tensor(st, model, "Kt", (size_t)V * D);
    m->Es = read_tensor(st, model, "Es", (size_t)V * D);
    m->P = read_tensor(st, model, "P", (size_t)D * V);
    toy_reset(m);
}

/* A copy of m holding only its sentence s. */
static void toy_one(struct toy *one, const struct toy *m, int s)
{
    *one = *m;
    one->B = 1;
    one->src_len[0] = m->src_len[s];
    memmove(one->src, m->src + s * TS, TS * sizeof *one->src);
    one->h = NULL;
    one->sent = NULL;
    toy_reset(one);
}

static void toy_free(struct toy *m, bool tables)
{
    if (tables) {
        free(m->A);
        free(m->Q);
        free(m->W);
        free(m->E);
        free(m->Kt);
        free(m->Es);
        free(m->P);
    }
    free(m->h);
    free(m->sent);
}

static int toy_step(void *ctx, const int32_t *tokens, int n, float *logp, float *attn,
                    struct pb_err *e)
{
    struct toy *m = ctx;
    ck_assert_int_eq(n, m->n);
    ck_assert_int_lt(m->t, S);
    if (++m->steps == m->fail_at)
        return pb_err_set(e, "toy step %d fails", m->steps);
    int V = m->V, t = m->t;
    for (int r = 0; r < n; r++) {
        int s = m->sent[r], tok = tokens[r], len = m->src_len[s];
        const int32_t *src = m->src + s * TS;
        ck_assert(tok >= 0 && tok < V);
        double hn[D], q[TS], ctxv[D] = {0}, mx = -INFINITY, sum = 0;
        for (int i = 0; i < D; i++) {
            double a = m->E[tok * D + i];
            for (int k = 0; k < D; k++)
                a += (double)m->W[i * D + k] * m->h[r * D + k];
            hn[i] = tanh(a);
        }
        for (int j = 0; j < len; j++) {
            q[j] = m->Q[((size_t)tok * S + t) * TS + j];
            for (int i = 0; i < D; i++)
                q[j] += hn[i] * m->Kt[src[j] * D + i];
            mx = q[j] > mx ? q[j] : mx;
        }
        for (int j = 0; j < len; j++)
            sum += q[j] = exp(q[j] - mx);
        for (int j = 0; j < TS; j++)
            attn[(size_t)r * TS + j] = j < len ? (float)(q[j] / sum) : 0.0f;
        for (int j = 0; j < len; j++)
            for (int i = 0; i < D; i++)
                ctxv[i] += q[j] / sum * m->Es[src[j] * D + i];
        double logits[64], lmax = -INFINITY, lsum = 0;
        for (int v = 0; v < V; v++) {
            logits[v] = m->A[((size_t)tok * S + t) * V + v];
            for (int i = 0; i < D; i++)
                logits[v] += (hn[i] + ctxv[i]) * m->P[i * V + v];
            lmax = logits[v] > lmax ? logits[v] : lmax;
        }
        for (int v = 0; v < V; v++)
            lsum += exp(logits[v] - lmax);
        for (int v = 0; v < V; v++)
            logp[(size_t)r * V + v] = (float)(logits[v] - (lmax + log(lsum)));
        if (m->nan && r == n - 1)
            logp[(size_t)r * V + V - 1] = NAN;
        memcpy(m->h + r * D, hn, sizeof hn);
    }
    m->t++;
    return 0;
}

static int toy_select(void *ctx, const int32_t *rows, int n, struct pb_err *e)
{
    (void)e;
    struct toy *m = ctx;
    double *h = malloc((size_t)(n ? n : 1) * D * sizeof *h);
    int *sent = malloc((size_t)(n ? n : 1) * sizeof *sent);
    for (int i = 0; i < n; i++) {
        ck_assert(rows[i] >= 0 && rows[i] < m->n);
        memcpy(h + i * D, m->h + rows[i] * D, D * sizeof *h);
        sent[i] = m->sent[rows[i]];
    }
    free(m->h);
    free(m->sent);
    m->h = h;
    m->sent = sent;
    m->n = n;
    m->selects++;
    return 0;
}

static struct pb_decoder toy_decoder(struct toy *m)
{
    return (struct pb_decoder){.ctx = m, .vocab = m->V, .src_steps = TS, .step = toy_step,
                               .select = toy_select};
}

/* ---- the fixture's cases ---- */

struct dcase {
    const char *name, *model;
    int beam;  /* 0: greedy */
    int max_len;
    double alpha, c, beta;
    enum pb_coverage cov;
};

static const struct dcase cases[] = {
    {"greedy", "toy", 0, 12, 0.6, 5, 0.1, PB_COVERAGE_SLOT},
    {"beam1", "toy", 1, 12, 0.6, 5, 0.1, PB_COVERAGE_SLOT},
    {"beam1_plain", "toy", 1, 12, 0, 5, 0, PB_COVERAGE_SLOT},
    {"beam5_plain", "toy", 5, 12, 0, 5, 0, PB_COVERAGE_SLOT},
    {"beam5", "toy", 5, 12, 0.6, 5, 0.1, PB_COVERAGE_SLOT},
    {"beam5_lineage", "toy", 5, 12, 0.6, 5, 0.1, PB_COVERAGE_LINEAGE},
    {"beam5_strong", "toy", 5, 12, 1, 5, 1, PB_COVERAGE_SLOT},
    {"beam5_strong_lineage", "toy", 5, 12, 1, 5, 1, PB_COVERAGE_LINEAGE},
    {"beam3", "toy", 3, 12, 0.6, 5, 0.1, PB_COVERAGE_SLOT},
    {"finished_greedy", "finished", 0, 10, 0, 5, 0, PB_COVERAGE_SLOT},
    {"finished", "finished", 2, 10, 0, 5, 0, PB_COVERAGE_SLOT},
    {"maxlen_greedy", "noeos", 0, 7, 0.6, 5, 0.1, PB_COVERAGE_SLOT},
    {"maxlen_beam", "noeos", 3, 7, 0.6, 5, 0.1, PB_COVERAGE_SLOT},
    {"k_gt_v", "toy", 16, 12, 0.6, 5, 0.1, PB_COVERAGE_SLOT},
    {"zeroattn", "zeroattn", 5, 12, 0.6, 5, 0.1, PB_COVERAGE_SLOT},
};
#define NCASES (int)(sizeof cases / sizeof *cases)

static int run_case(const struct dcase *c, struct toy *m, struct pb_decoded *out,
                    struct pb_err *e)
{
    struct pb_decoder d = toy_decoder(m);
    if (c->beam == 0)
        return pb_decode_greedy(&d, m->B, m->src_len, c->max_len, out, e);
    struct pb_decode_opts o = {.beam = c->beam, .max_len = c->max_len, .len_norm_factor = c->alpha,
                               .len_norm_const = c->c, .cov_penalty = c->beta, .coverage = c->cov};
    return pb_decode_beam(&d, m->B, m->src_len, &o, out, e);
}

__attribute__((noinline)) static const struct dcase *find_case(const char *name)
{
    for (int i = 0; i < NCASES; i++)
        if (!strcmp(cases[i].name, name))
            return &cases[i];
    ck_abort_msg("no case %s", name);
    return NULL;
}

/* out equals the fixture's case c. */
static void check_against_fixture(const struct pb_safetensors *st, const struct dcase *c,
                                  const struct pb_decoded *out)
{
    char key[64];
    int B = out->batch, T = c->max_len;
    snprintf(key, sizeof key, "%s.params", c->name);
    double p[6], score[MAXB];
    int32_t tok[MAXB * 16], len[MAXB], steps[MAXB];
    ck_assert(B <= MAXB && T <= 16);
    copy_tensor(st, key, PB_ST_F64, 6, p);
    ck_assert_msg(p[0] == c->beam && p[1] == c->max_len && p[2] == c->alpha && p[3] == c->c &&
                  p[4] == c->beta && p[5] == (c->cov == PB_COVERAGE_LINEAGE),
                  "%s: the test's table and fixtures_decode.py disagree", c->name);
    snprintf(key, sizeof key, "%s.tokens", c->name);
    copy_tensor(st, key, PB_ST_I32, (size_t)B * T, tok);
    snprintf(key, sizeof key, "%s.len", c->name);
    copy_tensor(st, key, PB_ST_I32, (size_t)B, len);
    snprintf(key, sizeof key, "%s.steps", c->name);
    copy_tensor(st, key, PB_ST_I32, (size_t)B, steps);
    snprintf(key, sizeof key, "%s.score", c->name);
    copy_tensor(st, key, PB_ST_F64, (size_t)B, score);
    ck_assert_int_eq(out->max_len, T);
    for (int s = 0; s < B; s++) {
        for (int t = 0; t < T; t++)
            ck_assert_msg(out->tokens[s * T + t] == tok[s * T + t],
                          "%s: sentence %d token %d: %d, numpy %d", c->name, s, t,
                          (int)out->tokens[s * T + t], (int)tok[s * T + t]);
        ck_assert_msg(out->len[s] == len[s] && out->steps[s] == steps[s],
                      "%s: sentence %d: length %d steps %d, numpy %d %d", c->name, s,
                      (int)out->len[s], (int)out->steps[s], (int)len[s], (int)steps[s]);
        ck_assert_msg(fabs(out->score[s] - score[s]) <= 1e-5, "%s: sentence %d: score %.9g, "
                      "numpy %.9g", c->name, s, out->score[s], score[s]);
    }
}

START_TEST(equals_numpy)
{
    struct pb_safetensors st;
    pb_load_fixture(&st, "decode.safetensors");
    for (int i = 0; i < NCASES; i++) {
        struct toy m;
        struct pb_decoded out;
        struct pb_err e;
        toy_load(&m, &st, cases[i].model);
        ck_assert_msg(run_case(&cases[i], &m, &out, &e) == 0, "%s: %s", cases[i].name, e.msg);
        check_against_fixture(&st, &cases[i], &out);
        int most = 0;  /* sentences step together until each closes */
        for (int b = 0; b < m.B; b++)
            most = out.steps[b] > most ? out.steps[b] : most;
        ck_assert_int_eq(m.steps, most);
        pb_decoded_finish(&out);
        toy_free(&m, true);
    }
    pb_st_finish(&st);
}
END_TEST

/* Each sentence decoded alone is what it is in the batch. */
START_TEST(sentences_independent)
{
    struct pb_safetensors st;
    pb_load_fixture(&st, "decode.safetensors");
    const char *names[] = {"greedy", "beam5", "beam5_lineage", "k_gt_v"};
    for (int i = 0; i < 4; i++) {
        const struct dcase *c = find_case(names[i]);
        struct toy m, one;
        struct pb_decoded all, single;
        struct pb_err e;
        toy_load(&m, &st, c->model);
        ck_assert(run_case(c, &m, &all, &e) == 0);
        int T = c->max_len;
        for (int s = 0; s < m.B; s++) {
            toy_one(&one, &m, s);
            ck_assert(run_case(c, &one, &single, &e) == 0);
            ck_assert_msg(!memcmp(single.tokens, all.tokens + s * T, (size_t)T * sizeof(int32_t)) &&
                          single.len[0] == all.len[s] && single.score[0] == all.score[s] &&
                          single.steps[0] == all.steps[s], "%s: sentence %d alone", c->name, s);
            pb_decoded_finish(&single);
            toy_free(&one, false);
        }
        pb_decoded_finish(&all);
        toy_free(&m, true);
    }
    pb_st_finish(&st);
}
END_TEST

/* Beam 1 takes greedy's tokens; without the penalties it scores as greedy does. */
START_TEST(beam1_is_greedy)
{
    struct pb_safetensors st;
    pb_load_fixture(&st, "decode.safetensors");
    struct toy m;
    struct pb_decoded g, b1, b1p;
    struct pb_err e;
    toy_load(&m, &st, "toy");
    ck_assert(run_case(find_case("greedy"), &m, &g, &e) == 0);
    toy_reset(&m);
    ck_assert(run_case(find_case("beam1"), &m, &b1, &e) == 0);
    toy_reset(&m);
    ck_assert(run_case(find_case("beam1_plain"), &m, &b1p, &e) == 0);
    ck_assert(!memcmp(g.tokens, b1.tokens, (size_t)m.B * 12 * sizeof(int32_t)));
    ck_assert(!memcmp(g.len, b1.len, (size_t)m.B * sizeof(int32_t)));
    for (int s = 0; s < m.B; s++) {
        ck_assert_msg(fabs(g.score[s] - b1p.score[s]) < 1e-12, "sentence %d", s);
        ck_assert(g.score[s] != b1.score[s]);  /* the penalties do change the score */
        ck_assert_int_eq(g.steps[s], b1.steps[s]);
    }
    pb_decoded_finish(&g);
    pb_decoded_finish(&b1);
    pb_decoded_finish(&b1p);
    toy_free(&m, true);
    pb_st_finish(&st);
}
END_TEST

/* The hand-made toy (fixtures_decode.py's finished_model): beam 2 returns [y EOS], which
 * ended at step 2 and was kept while [y x y] went on to end at step 4, worth less. */
START_TEST(finished_beam_kept)
{
    struct pb_safetensors st;
    pb_load_fixture(&st, "decode.safetensors");
    struct toy m;
    struct pb_decoded g, b;
    struct pb_err e;
    toy_load(&m, &st, "finished");
    ck_assert(run_case(find_case("finished_greedy"), &m, &g, &e) == 0);
    toy_reset(&m);
    ck_assert(run_case(find_case("finished"), &m, &b, &e) == 0);
    const int32_t greedy[] = {PB_WMT16_BOS, 5, 4, 5, PB_WMT16_EOS, 0, 0, 0, 0, 0};
    const int32_t best[] = {PB_WMT16_BOS, 5, PB_WMT16_EOS, 0, 0, 0, 0, 0, 0, 0};
    ck_assert(!memcmp(g.tokens, greedy, sizeof greedy) && g.len[0] == 5);
    ck_assert(!memcmp(b.tokens, best, sizeof best) && b.len[0] == 3);
    ck_assert_int_eq(b.steps[0], 4);
    /* p / sum of each step's row: .9 / .905, then .3 / 1.003 */
    ck_assert(fabs(b.score[0] - (log(.9 / .905) + log(.3 / 1.003))) < 1e-5);
    ck_assert(fabs(g.score[0] - (log(.9 / .905) + log(.5 / 1.003) + log(.5 / 1.003) +
                                 log(.9 / .905))) < 1e-5);
    pb_decoded_finish(&g);
    pb_decoded_finish(&b);
    toy_free(&m, true);
    pb_st_finish(&st);
}
END_TEST

/* No EOS: every row fills max_len; max_len 1 is BOS alone without a step. */
START_TEST(max_length)
{
    struct pb_safetensors st;
    pb_load_fixture(&st, "decode.safetensors");
    struct toy m;
    struct pb_decoded out;
    struct pb_err e;
    toy_load(&m, &st, "noeos");
    for (int k = 0; k < 2; k++) {
        toy_reset(&m);
        ck_assert(run_case(find_case(k ? "maxlen_beam" : "maxlen_greedy"), &m, &out, &e) == 0);
        for (int s = 0; s < m.B; s++) {
            ck_assert_int_eq(out.len[s], 7);
            ck_assert_int_eq(out.steps[s], 6);
            for (int t = 1; t < 7; t++)
                ck_assert_int_ne(out.tokens[s * 7 + t], PB_WMT16_EOS);
        }
        ck_assert_int_eq(m.steps, 6);
        pb_decoded_finish(&out);
    }
    struct pb_decode_opts o;
    pb_decode_opts_paper(&o);
    o.max_len = 1;
    struct pb_decoder d = toy_decoder(&m);
    toy_reset(&m);
    ck_assert(pb_decode_beam(&d, m.B, m.src_len, &o, &out, &e) == 0);
    ck_assert(m.steps == 0 && out.len[0] == 1 && out.tokens[0] == PB_WMT16_BOS &&
              out.score[0] == 0);
    pb_decoded_finish(&out);
    ck_assert(pb_decode_greedy(&d, m.B, m.src_len, 1, &out, &e) == 0);
    ck_assert(m.steps == 0 && out.len[2] == 1 && out.tokens[2 * 1] == PB_WMT16_BOS);
    pb_decoded_finish(&out);
    toy_free(&m, true);
    pb_st_finish(&st);
}
END_TEST

/* All log-probabilities equal: greedy takes id 0 each step; beam 3 fills its slots from
 * the lower slot's, then the lower id's candidates, and returns slot 0. */
START_TEST(ties_to_lower_index)
{
    struct pb_safetensors st;
    pb_load_fixture(&st, "decode.safetensors");
    struct toy m;
    struct pb_decoded g, b;
    struct pb_err e;
    toy_load(&m, &st, "finished");
    memset(m.A, 0, (size_t)m.V * S * m.V * sizeof *m.A);
    struct pb_decoder d = toy_decoder(&m);
    struct pb_decode_opts o;
    pb_decode_opts_paper(&o);
    o.beam = 3;
    o.max_len = 4;
    ck_assert(pb_decode_greedy(&d, 1, m.src_len, 4, &g, &e) == 0);
    toy_reset(&m);
    ck_assert(pb_decode_beam(&d, 1, m.src_len, &o, &b, &e) == 0);
    const int32_t want[] = {PB_WMT16_BOS, 0, 0, 0};
    ck_assert(!memcmp(g.tokens, want, sizeof want) && !memcmp(b.tokens, want, sizeof want));
    ck_assert(fabs(b.score[0] - 3 * log(1.0 / 6)) < 1e-5);  /* open at max_len: plain sum */
    pb_decoded_finish(&g);
    pb_decoded_finish(&b);
    toy_free(&m, true);
    pb_st_finish(&st);
}
END_TEST

static const float *sort_vals;

static int by_value_then_id(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    if (sort_vals[a] != sort_vals[b])
        return sort_vals[a] > sort_vals[b] ? -1 : 1;
    return a - b;
}

/* The best-tokens scan (its vectorised blocks of 16 included) is a stable sort's head,
 * for rows with many ties, -inf entries and continuous values. */
START_TEST(top_tokens_as_sort)
{
    const int Vs[] = {1, 5, 16, 17, 100, 1000, 32320}, Cs[] = {1, 2, 5, 16};
    float *x = malloc(32320 * sizeof *x);
    int *order = malloc(32320 * sizeof *order);
    uint64_t r = 12345;
    for (int vi = 0; vi < 7; vi++)
        for (int kind = 0; kind < 3; kind++)
            for (int ci = 0; ci < 4; ci++) {
                int V = Vs[vi], C = Cs[ci] < V ? Cs[ci] : V;
                for (int v = 0; v < V; v++) {
                    r = r * 6364136223846793005ull + 1442695040888963407ull;
                    int u = (int)(r >> 40) % 1000;
                    x[v] = kind == 0 ? (float)(u % 4) : kind == 1 ? (u < 900 ? -INFINITY : 1.0f)
                                                                  : (float)u / 7.0f;
                    order[v] = v;
                }
                sort_vals = x;
                qsort(order, (size_t)V, sizeof *order, by_value_then_id);
                int32_t id[16];
                float val[16];
                pb_decode_top(x, V, C, id, val);
                for (int k = 0; k < C; k++)
                    ck_assert_msg(id[k] == order[k] && val[k] == x[order[k]],
                                  "V %d C %d kind %d: rank %d is id %d, the sort's %d", V, C,
                                  kind, k, (int)id[k], order[k]);
            }
    free(x);
    free(order);
}
END_TEST

static void refused(int rc, const struct pb_err *e, const struct pb_decoded *out,
                    const struct toy *m, const char *expect)
{
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(e->msg, expect) != NULL, "'%s' lacks '%s'", e->msg, expect);
    ck_assert(out->tokens == NULL && out->batch == 0);
    ck_assert_int_eq(m->steps, 0);
}

START_TEST(bad_input)
{
    struct pb_safetensors st;
    pb_load_fixture(&st, "decode.safetensors");
    struct toy m;
    struct pb_decoded out;
    struct pb_err e;
    toy_load(&m, &st, "toy");
    struct pb_decoder d = toy_decoder(&m);
    struct pb_decode_opts o;
    pb_decode_opts_paper(&o);
    ck_assert(pb_decode_check(&o, &e) == 0);
    o.beam = 0;
    refused(pb_decode_beam(&d, m.B, m.src_len, &o, &out, &e), &e, &out, &m,
            "the beam size must be at least 1 (got 0)");
    ck_assert(strstr(e.msg, "--beam 5"));
    o.beam = -3;
    refused(pb_decode_beam(&d, m.B, m.src_len, &o, &out, &e), &e, &out, &m, "(got -3)");
    pb_decode_opts_paper(&o);
    o.max_len = 0;
    refused(pb_decode_beam(&d, m.B, m.src_len, &o, &out, &e), &e, &out, &m,
            "the maximum length must be at least 1 (got 0)");
    refused(pb_decode_greedy(&d, m.B, m.src_len, -1, &out, &e), &e, &out, &m,
            "the maximum length must be at least 1 (got -1)");
    pb_decode_opts_paper(&o);
    o.len_norm_factor = NAN;
    refused(pb_decode_beam(&d, m.B, m.src_len, &o, &out, &e), &e, &out, &m, "must be finite");
    pb_decode_opts_paper(&o);
    o.len_norm_const = -1;
    refused(pb_decode_beam(&d, m.B, m.src_len, &o, &out, &e), &e, &out, &m, "above -1");
    pb_decode_opts_paper(&o);
    int32_t bad_len[MAXB];
    memcpy(bad_len, m.src_len, sizeof bad_len);
    bad_len[2] = TS + 1;
    refused(pb_decode_beam(&d, m.B, bad_len, &o, &out, &e), &e, &out, &m,
            "sentence 2 has a source length of 11, outside [1, 10]");
    bad_len[2] = 0;
    refused(pb_decode_greedy(&d, m.B, bad_len, 12, &out, &e), &e, &out, &m, "length of 0");
    /* a failing step and a NaN log-probability: an error, no output */
    m.fail_at = 3;
    ck_assert_int_eq(pb_decode_beam(&d, m.B, m.src_len, &o, &out, &e), -1);
    ck_assert(strstr(e.msg, "decoding: toy step 3 fails") && out.tokens == NULL);
    toy_reset(&m);
    ck_assert_int_eq(pb_decode_greedy(&d, m.B, m.src_len, 12, &out, &e), -1);
    ck_assert(strstr(e.msg, "toy step 3 fails") && out.tokens == NULL);
    toy_reset(&m);
    m.fail_at = 0;
    m.nan = true;
    ck_assert_int_eq(pb_decode_beam(&d, m.B, m.src_len, &o, &out, &e), -1);
    ck_assert_msg(strstr(e.msg, "NaN log-probability (row 29, token 11)"), "%s", e.msg);
    toy_free(&m, true);
    pb_st_finish(&st);
}
END_TEST

/* ---- ids to text, and BLEU ---- */

static const char *vocab_path(void)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/data/wmt16-de-en/vocab.bpe.32000",
             getenv("PB_FIXTURES") ? getenv("PB_FIXTURES") : "tests/fixtures");
    return buf;
}

/* References in the fixture vocabulary's BPE tokens. */
static const char *const refs[] = {
    "das Haus ist groß .",
    "ein Haus ist ein Haus",
    "das is@@ t ein Haus .",
    "Stadt",
    "the house is big . the house",
    "ein is@@ t das Haus ist big .",
    "groß . groß . Stadt",
    "a big house is a big house .",
};
#define NREFS (int)(sizeof refs / sizeof *refs)
#define RLEN 12

/* An oracle with noise over the wmt16 fixture vocabulary: row of sentence s at step t
 * prefers the reference's next token (EOS past its end) by `lead`, plus a deterministic
 * noise in [0, 2) by (s, t, v, the token read); no attention (uniform). */
struct oracle {
    const struct pb_wmt16_vocab *v;
    int32_t ref[NREFS][RLEN];
    int n, t, *sent;
    double lead;
};

static double noise(int s, int t, int v, int tok)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(((s * 31 + t) * 97 + v) * 131 + tok);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (double)(h >> 11) / (double)(1ull << 53) * 2.0;
}

static int oracle_step(void *ctx, const int32_t *tokens, int n, float *logp, float *attn,
                       struct pb_err *e)
{
    (void)e;
    struct oracle *o = ctx;
    int V = o->v->size;
    for (int r = 0; r < n; r++) {
        int s = o->sent[r], want = o->ref[s][o->t + 1 < RLEN ? o->t + 1 : RLEN - 1];
        double z[64], mx = -INFINITY, sum = 0;
        for (int w = 0; w < V; w++) {
            z[w] = (w == want ? o->lead : 0) + noise(s, o->t, w, tokens[r]);
            mx = z[w] > mx ? z[w] : mx;
        }
        for (int w = 0; w < V; w++)
            sum += exp(z[w] - mx);
        for (int w = 0; w < V; w++)
            logp[(size_t)r * V + w] = (float)(z[w] - mx - log(sum));
        for (int j = 0; j < TS; j++)
            attn[(size_t)r * TS + j] = 1.0f / TS;
    }
    o->t++;
    return 0;
}

static int oracle_select(void *ctx, const int32_t *rows, int n, struct pb_err *e)
{
    (void)e;
    struct oracle *o = ctx;
    int *sent = malloc((size_t)(n ? n : 1) * sizeof *sent);
    for (int i = 0; i < n; i++)
        sent[i] = o->sent[rows[i]];
    free(o->sent);
    o->sent = sent;
    o->n = n;
    return 0;
}

/* Decodes the references through the oracle (K 0: greedy) into BPE lines and merged
 * lines (each [NREFS] strings to free). */
static void decode_corpus(const struct pb_wmt16_vocab *v, double lead, int K, char **bpe,
                          char **text)
{
    struct oracle o = {.v = v, .lead = lead, .n = NREFS, .sent = malloc(NREFS * sizeof(int))};
    int32_t src_len[NREFS];
    for (int s = 0; s < NREFS; s++) {
        o.sent[s] = s;
        src_len[s] = TS;
        int n = 0;
        o.ref[s][n++] = PB_WMT16_BOS;
        char *line = pb_xstrdup(refs[s]);
        for (char *w = strtok(line, " "); w; w = strtok(NULL, " "))
            o.ref[s][n++] = pb_wmt16_vocab_id(v, w, strlen(w));
        free(line);
        while (n < RLEN)
            o.ref[s][n++] = PB_WMT16_EOS;
    }
    struct pb_decoder d = {.ctx = &o, .vocab = v->size, .src_steps = TS, .step = oracle_step,
                           .select = oracle_select};
    struct pb_decoded out;
    struct pb_err e;
    struct pb_decode_opts opts;
    pb_decode_opts_paper(&opts);
    opts.beam = K;
    opts.max_len = RLEN + 2;
    int rc = K ? pb_decode_beam(&d, NREFS, src_len, &opts, &out, &e)
               : pb_decode_greedy(&d, NREFS, src_len, RLEN + 2, &out, &e);
    ck_assert_msg(rc == 0, "%s", e.msg);
    for (int s = 0; s < NREFS; s++) {
        const int32_t *row = out.tokens + s * out.max_len;
        ck_assert(pb_decode_bpe(v, row, out.len[s], &bpe[s], &e) == 0);
        ck_assert(pb_decode_text(v, row, out.len[s], &text[s], &e) == 0);
    }
    pb_decoded_finish(&out);
    free(o.sent);
}

START_TEST(ids_to_text)
{
    struct pb_wmt16_vocab v;
    struct pb_err e;
    ck_assert_msg(pb_wmt16_vocab_load(&v, vocab_path(), &e) == 0, "%s", e.msg);
    ck_assert_int_eq(v.size, 24);
    /* <s> das Haus is@@ t <pad> groß . <\s> Stadt: PAD and BOS left out, EOS ends it */
    const int32_t row[] = {PB_WMT16_BOS, 7, 6, 8, 10, PB_WMT16_PAD, 12, 16, PB_WMT16_EOS, 18};
    char *bpe, *text;
    ck_assert(pb_decode_bpe(&v, row, 10, &bpe, &e) == 0);
    ck_assert(pb_decode_text(&v, row, 10, &text, &e) == 0);
    ck_assert_str_eq(bpe, "das Haus is@@ t groß .");
    ck_assert_str_eq(text, "das Haus ist groß .");
    free(bpe);
    free(text);
    /* the repeated "house" is found at its last id, and both ids print it; UNK prints */
    ck_assert_int_eq(pb_wmt16_vocab_id(&v, "house", 5), 17);
    ck_assert_str_eq(pb_wmt16_vocab_token(&v, 5), "house");
    ck_assert_str_eq(pb_wmt16_vocab_token(&v, 23), "madeupword0004");
    ck_assert_ptr_null(pb_wmt16_vocab_token(&v, 24));
    const int32_t unk[] = {PB_WMT16_BOS, 1, 4};
    ck_assert(pb_decode_text(&v, unk, 3, &text, &e) == 0);
    ck_assert_str_eq(text, "<unk> the");
    free(text);
    const int32_t bad[] = {PB_WMT16_BOS, 4, 24};
    ck_assert_int_eq(pb_decode_text(&v, bad, 3, &text, &e), -1);
    ck_assert(strstr(e.msg, "id 24, outside the vocabulary of 24") && text == NULL);
    pb_wmt16_vocab_finish(&v);
}
END_TEST

/* A decoded toy corpus scores in-process as `pipebench bleu --merge-bpe` scores the same
 * BPE text; the noiseless oracle gives the references back (BLEU 100). */
START_TEST(bleu_equals_cli)
{
    struct pb_wmt16_vocab v;
    struct pb_err e;
    ck_assert_msg(pb_wmt16_vocab_load(&v, vocab_path(), &e) == 0, "%s", e.msg);
    char dir[64], out[4096], hyp[8192] = "", ref[8192] = "";
    cli_scratch(dir, sizeof dir, "decode");
    for (int s = 0; s < NREFS; s++) {
        strcat(ref, refs[s]);
        strcat(ref, "\n");
    }
    cli_write(dir, "ref.txt", ref);
    for (int k = 0; k < 3; k++) {
        double lead = k == 0 ? 100 : 1.2;
        int K = k == 2 ? 5 : 0;
        char *bpe[NREFS], *text[NREFS];
        decode_corpus(&v, lead, K, bpe, text);
        struct pb_bleu b = {0};
        hyp[0] = 0;
        for (int s = 0; s < NREFS; s++) {
            char *r = pb_bleu_merge_bpe(refs[s]);
            pb_bleu_add(&b, text[s], r);
            free(r);
            strcat(hyp, bpe[s]);
            strcat(hyp, "\n");
            free(bpe[s]);
            free(text[s]);
        }
        struct pb_bleu_score sc;
        pb_bleu_score(&b, &sc);
        char line[512];
        pb_bleu_format(&sc, true, line, sizeof line);
        cli_write(dir, "hyp.txt", hyp);
        ck_assert_int_eq(cli_run(dir, out, sizeof out, "bleu --hyp hyp.txt --ref ref.txt "
                                 "--merge-bpe"), 0);
        ck_assert_msg(strstr(out, line) != NULL, "in-process '%s', pipebench bleu '%s'", line,
                      out);
        if (k == 0)
            ck_assert_msg(fabs(sc.bleu - 100) < 1e-9, "the noiseless oracle: %s", line);
        else
            ck_assert_msg(sc.bleu > 5 && sc.bleu < 95, "the noisy oracle: %s", line);
    }
    cli_cleanup(dir);
    pb_wmt16_vocab_finish(&v);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("decode");
    TCase *t = tcase_create("decode");
    tcase_add_test(t, equals_numpy);
    tcase_add_test(t, sentences_independent);
    tcase_add_test(t, beam1_is_greedy);
    tcase_add_test(t, finished_beam_kept);
    tcase_add_test(t, max_length);
    tcase_add_test(t, ties_to_lower_index);
    tcase_add_test(t, top_tokens_as_sort);
    tcase_add_test(t, bad_input);
    tcase_add_test(t, ids_to_text);
    tcase_add_test(t, bleu_equals_cli);
    suite_add_tcase(s, t);
    return s;
}
