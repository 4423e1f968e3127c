/* tests/workloads/test_gnmt_model.c — GNMT-8 and GNMT-16 (workloads/models/gnmt.c). Fast: the paper
 * models' parameter tensors have the counts, in order, of the PyTorch definition in
 * tests/fixtures/fixtures_zoo.py (the MLPerf GNMT reference, zoo_params.txt); each model
 * and preset builds and partitions for D = 1 … 8; the paper cut at D = 4 is the one
 * docs/reproducing.md lists; the slice and feature-concat layers pack and unpack exactly
 * and pass gradients back to the right features; the LSTMs, embeddings and classifier
 * start U(−0.1, 0.1) with bias_hh 0. Slow: gnmt8 small trains an epoch on the
 * synthetic stand-in at D = 4 with the same bits under the seq and threads executors
 * (gpipe and pipedream), and its validation loss per token falls over 3 epochs at D = 1. */
#include <check.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/cpu/cpu_backend.h"
#include "harness/model/stage.h"
#include "tests/support/layer_cases.h"
#include "tests/support/test_util.h"
#include "tests/support/train_util.h"
#include "workloads/models/workload.h"

#define MAX_TENSORS 256

struct counts {
    long long total;
    long long n[MAX_TENSORS];
    char shape[MAX_TENSORS][64];  /* "4096x1024"; "" for a 0-d tensor */
    int k;
};

/* The fixture's tensor shapes and sizes of `model` (products of the recorded shapes). */
static void read_fixture(const char *model, struct counts *c)
{
    char path[1024], line[256];
    snprintf(path, sizeof path, "%s/zoo_params.txt", getenv("PB_FIXTURES"));
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    memset(c, 0, sizeof *c);
    bool in = false, found = false;
    while (fgets(line, sizeof line, f)) {
        char a[96], shape[64];
        long long total;
        if (line[0] == '#')
            continue;
        if (sscanf(line, "model %95s %lld", a, &total) == 2) {
            in = !strcmp(a, model);
            if (in) {
                c->total = total;
                found = true;
            }
        } else if (in && sscanf(line, "%95s", a) == 1) {
            long long n = 1;  /* a 0-dimensional tensor's shape is empty: 1 value */
            if (sscanf(line, "%95s %63s", a, shape) < 2)
                shape[0] = 0;
            for (char *s = shape; *s;) {
                n *= strtoll(s, &s, 10);
                if (*s == 'x')
                    s++;
            }
            ck_assert_int_lt(c->k, MAX_TENSORS);
            snprintf(c->shape[c->k], sizeof c->shape[c->k], "%s", shape);
            c->n[c->k++] = n;
        }
    }
    fclose(f);
    ck_assert_msg(found, "%s has no record of %s", path, model);
}

static void add_count(void *ctx, const struct pb_stage_tensor *t)
{
    struct counts *c = ctx;
    if (t->is_buffer)
        return;
    ck_assert_int_lt(c->k, MAX_TENSORS);
    size_t len = 0;
    c->shape[c->k][0] = 0;
    for (int d = 0; d < t->ndim; d++)
        len += (size_t)snprintf(c->shape[c->k] + len, sizeof c->shape[c->k] - len, "%s%lld",
                                d ? "x" : "", (long long)t->shape[d]);
    c->n[c->k++] = (long long)t->count;
    c->total += (long long)t->count;
}

static void build(const char *model, const char *preset, struct pb_model *m, int batch)
{
    struct pb_err e;
    const struct pb_workload *w = pb_workload_find(model, &e);
    ck_assert_msg(w != NULL, "%s", e.msg);
    const struct pb_preset *p;
    ck_assert_msg(pb_workload_preset(w, preset, &p, &e) == 0, "%s", e.msg);
    ck_assert_msg(w->build(m, p, pb_preset_sample(p), p->classes, &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_model_finalize(m, batch, &e) == 0, "%s %s: %s", model, preset, e.msg);
}

static const char *const models[] = {"gnmt8", "gnmt16"};

START_TEST(paper_parameters)
{
    static struct counts torch, pb;
    struct pb_model m;
    build(models[_i], "paper", &m, 2);
    read_fixture(models[_i], &torch);
    memset(&pb, 0, sizeof pb);
    struct pb_stage s;
    pb_stage_layout(&s, &m, 0, 1, 0, m.nblocks);
    pb_stage_tensors(&s, add_count, &pb);
    ck_assert_int_eq((long long)s.nparams, pb.total);
    pb_stage_finish(&s);
    ck_assert_msg(pb.total == torch.total, "%s: %lld parameters, PyTorch %lld", models[_i],
                  pb.total, torch.total);
    ck_assert_int_eq(pb.k, torch.k);
    for (int i = 0; i < pb.k; i++)
        ck_assert_msg(pb.n[i] == torch.n[i] && !strcmp(pb.shape[i], torch.shape[i]),
                      "%s: tensor %d has shape [%s] (%lld values), PyTorch [%s] (%lld)",
                      models[_i], i, pb.shape[i], pb.n[i], torch.shape[i], torch.n[i]);
    pb_model_finish(&m);
}
END_TEST

/* Every model × preset finalizes, its logits [B, T, V, 1], and partitions by FLOPs for
 * D = 1 … 8 into stages of at least one block, the bounds covering the chain. */
START_TEST(builds_and_partitions)
{
    static const char *const presets[] = {"paper", "small"};
    for (int pi = 0; pi < 2; pi++) {
        struct pb_model m;
        build(models[_i], presets[pi], &m, 2);
        const struct pb_preset *p;
        ck_assert(pb_workload_preset(pb_workload_find(models[_i], NULL), presets[pi], &p, NULL) == 0);
        struct pb_shape out = m.blocks[m.nblocks - 1].out_shape;
        ck_assert(pb_shape_eq(out, (struct pb_shape){2, p->steps, p->vocab, 1}));
        ck_assert_int_eq(m.label_steps, p->steps);
        ck_assert_int_eq(m.ignore_label, 0);
        for (int d = 1; d <= 8; d++) {
            int bounds[9];
            struct pb_err e;
            ck_assert_msg(pb_partition_balanced(&m, d, bounds, &e) == 0, "%s %s D=%d: %s",
                          models[_i], presets[pi], d, e.msg);
            ck_assert_int_eq(bounds[0], 0);
            ck_assert_int_eq(bounds[d], m.nblocks);
            for (int k = 0; k < d; k++)
                ck_assert_int_lt(bounds[k], bounds[k + 1]);
            ck_assert(pb_partition_check_bounds(&m, bounds, d, &e) == 0);
        }
        pb_model_finish(&m);
    }
}
END_TEST

/* The paper cut at D = 4: gnmt8 embedding + encoder 1, 2 / encoder 3, 4 + decoder
 * embedding + recurrent attention / decoder 2, 3 / decoder 4 + classifier; gnmt16
 * embedding + encoder 1–5 / encoder 6–8 + decoder embedding + attention + decoder 2 /
 * decoder 3–6 / decoder 7, 8 + classifier. Both presets cut the same. */
START_TEST(paper_cut)
{
    static const char *const first[2][4] = {{"embedding", "encoder3", "decoder2", "decoder4"},
                                            {"embedding", "encoder6", "decoder3", "decoder7"}};
    static const char *const last[2][4] = {{"encoder2", "decoder1", "decoder3", "classifier"},
                                           {"encoder5", "decoder2", "decoder6", "classifier"}};
    static const char *const presets[] = {"paper", "small"};
    for (int pi = 0; pi < 2; pi++) {
        struct pb_model m;
        build(models[_i], presets[pi], &m, 2);
        const struct pb_preset *p;
        ck_assert(pb_workload_preset(pb_workload_find(models[_i], NULL), presets[pi], &p, NULL) == 0);
        int bounds[5];
        struct pb_err e;
        ck_assert_msg(pb_partition_paper(&m, p, bounds, &e) == 0, "%s", e.msg);
        for (int k = 0; k < 4; k++) {
            ck_assert_str_eq(m.blocks[bounds[k]].name, first[_i][k]);
            ck_assert_str_eq(m.blocks[bounds[k + 1] - 1].name, last[_i][k]);
        }
        bool paper;
        ck_assert(pb_partition_choose(p, models[_i], "paper", 4, &paper, &e) == 0 && paper);
        /* the encoder's stage and the attention's read the source lengths, the others not */
        bool reads[4] = {true, true, false, false};
        for (int k = 0; k < 4; k++)
            ck_assert(pb_model_reads_lengths(&m, bounds[k], bounds[k + 1]) == reads[k]);
        pb_model_finish(&m);
    }
}
END_TEST

/* U(−0.1, 0.1) for the embeddings, LSTMs (bias_hh exactly 0) and the classifier's weight
 * and bias (GNMT's init), the padding row too. */
START_TEST(gnmt_init)
{
    struct pb_model m;
    build("gnmt8", "small", &m, 2);
    int seen[3] = {0, 0, 0};
    for (int b = 0; b < m.nblocks; b++)
        for (int i = 0; i < m.blocks[b].nnodes; i++) {
            const struct pb_layer *l = &m.blocks[b].nodes[i];
            size_t n = l->ops->param_count(l);
            if (!n || l->cfg.kind == PB_LAYER_ATTENTION)
                continue;
            float *p = calloc(n, sizeof *p);
            l->ops->init(l, p, NULL, 3);
            struct pb_param_tensor pt[PB_LAYER_MAX_TENSORS];
            size_t off = 0;
            int k = l->ops->param_tensors(l, pt);
            for (int t = 0; t < k; t++) {
                bool hh_bias = !strncmp(pt[t].name, "bias_hh", 7);
                size_t count = pb_param_tensor_count(&pt[t]);
                double lo = 1, hi = -1;
                for (size_t j = 0; j < count; j++) {
                    float v = p[off + j];
                    if (hh_bias)
                        ck_assert(v == 0.0f);
                    lo = v < lo ? v : lo;
                    hi = v > hi ? v : hi;
                }
                if (!hh_bias)  /* spread over the interval, inside it */
                    ck_assert_msg(lo >= -0.1 && hi <= 0.1 && lo < -0.09 && hi > 0.09,
                                  "%s.%s in [%g, %g]", l->name, pt[t].name, lo, hi);
                off += count;
            }
            seen[l->cfg.kind == PB_LAYER_LSTM ? 0 : l->cfg.kind == PB_LAYER_EMBEDDING ? 1 : 2]++;
            free(p);
        }
    ck_assert_int_eq(seen[0], 8);  /* bidirectional + 3 encoder, 4 decoder LSTMs */
    ck_assert_int_eq(seen[1], 2);
    ck_assert_int_eq(seen[2], 1);
    pb_model_finish(&m);
}
END_TEST

/* A block packing as gnmt.c's do: slice features [0, 3) and [3, 4) of x [2, 3, 4, 1],
 * concat them back the other way round, then slice time [1, 3): the output is exactly
 * the moved values, and the backward brings dy back to the positions each came from
 * (zero where the slice dropped them). */
START_TEST(slice_concat)
{
    struct pb_err e;
    struct pb_model m;
    pb_model_init(&m, "pack", (struct pb_shape){1, 3, 4, 1}, 0);
    struct pb_block *b = pb_model_block(&m, "pack");
    int a = pb_block_slice(&m, b, "a", -1, 2, 0, 3);
    int c = pb_block_slice(&m, b, "c", -1, 2, 3, 4);
    int in[2] = {c, a};
    int cat = pb_block_feature_concat(&m, b, "cat", 2, in);
    pb_block_slice(&m, b, "time", cat, 1, 1, 3);
    ck_assert_msg(pb_model_finalize(&m, 2, &e) == 0, "%s", e.msg);
    ck_assert(pb_shape_eq(b->out_shape, (struct pb_shape){2, 2, 4, 1}));
    struct pb_backend *be = pb_backend_cpu_create(1, &e);
    struct pb_stage s;
    ck_assert_msg(pb_stage_init(&s, be, &m, 1, 3, 0, 1, &e) == 0, "%s", e.msg);
    float x[24], dy[16];
    for (int i = 0; i < 24; i++)
        x[i] = (float)i;
    for (int i = 0; i < 16; i++)
        dy[i] = 100.0f + (float)i;
    struct pb_step_ctx ctx = {.train = true, .seed = 1};
    struct pb_stage_act act;
    float *y = stage_forward_host(be, &s, &ctx, x, &act);
    float *dx = stage_backward_host(be, &s, &act, dy);
    float want_dx[24] = {0};
    for (int n = 0; n < 2; n++)
        for (int t = 0; t < 2; t++)
            for (int f = 0; f < 4; f++) {
                int src = f == 0 ? 3 : f - 1;  /* [c; a]: feature 0 is x's 3, then 0, 1, 2 */
                int xi = (n * 3 + t + 1) * 4 + src;
                ck_assert_msg(y[(n * 2 + t) * 4 + f] == x[xi], "y[%d,%d,%d]", n, t, f);
                want_dx[xi] = dy[(n * 2 + t) * 4 + f];
            }
    for (int i = 0; i < 24; i++)
        ck_assert_msg(dx[i] == want_dx[i], "dx[%d] = %g, want %g", i, dx[i], want_dx[i]);
    free(y);
    free(dx);
    pb_stage_finish(&s);
    pb_backend_destroy(be);
    pb_model_finish(&m);
}
END_TEST

/* ---- training (slow) ---- */

static void gnmt_cfg(struct pb_run_cfg *c, int stages, const char *db)
{
    small_cfg(c);
    c->model = "gnmt8";
    c->preset = "small";
    c->dataset = "synthetic";
    c->synthetic = (struct pb_dataset_opts){0};
    c->stages = stages;
    c->microbatch_size = 32;
    c->optimizer = "adam";
    struct pb_err e;
    ck_assert(pb_optim_cfg_from_name(&c->optim, "adam", &e) == 0);
    c->optim.lr = 1e-3f;
    c->epochs = 1;
    c->threads = 2;
    c->db = tmp_path_kept(db);
}

/* One epoch of 256 pairs at D = 4 under the paper cut: the seq and threads executors
 * give the same training loss, accuracy and saved weights, bit for bit. */
static void same_bits(const char *schedule)
{
    size_t n[2];
    float *w[2];
    double loss[2], acc[2];
    for (int k = 0; k < 2; k++) {
        struct pb_run_cfg c;
        gnmt_cfg(&c, 4, "executors.db");
        c.schedule = schedule;
        c.partition = "paper";
        c.limit_train = 256;
        c.limit_val = 64;
        c.executor = k ? "threads" : "seq";
        struct pb_run_summary sum;
        struct pb_err e;
        c.save = tmp_path_kept(k ? "threads.safetensors" : "seq.safetensors");
        ck_assert_msg(pb_run(&c, &sum, &e) == PB_EXIT_OK, "%s %s: %s", schedule, c.executor,
                      e.msg);
        loss[k] = sum.final_train_loss;
        acc[k] = sum.final_acc;
        w[k] = load_weights(c.save, &n[k]);
    }
    ck_assert_msg(isfinite(loss[0]) && loss[0] > 0, "%s: loss %g", schedule, loss[0]);
    ck_assert_msg(loss[0] == loss[1] && acc[0] == acc[1], "%s: seq %.9g %.9g, threads %.9g %.9g",
                  schedule, loss[0], acc[0], loss[1], acc[1]);
    ck_assert_uint_eq(n[0], n[1]);
    ck_assert_msg(!memcmp(w[0], w[1], n[0] * sizeof(float)), "%s: the weights differ", schedule);
    free(w[0]);
    free(w[1]);
}

START_TEST(executors_gpipe) { same_bits("gpipe"); }
END_TEST

START_TEST(executors_pipedream) { same_bits("pipedream"); }
END_TEST

/* 3 epochs of 1024 pairs at D = 1: the validation loss per token falls every epoch and
 * ends well below the uniform guess ln 256. */
START_TEST(val_loss_falls)
{
    struct pb_run_cfg c;
    gnmt_cfg(&c, 1, "falls.db");
    c.schedule = "gpipe";
    c.epochs = 3;
    c.limit_train = 1024;
    c.limit_val = 256;
    struct pb_run_summary sum;
    struct pb_err e;
    ck_assert_msg(pb_run(&c, &sum, &e) == PB_EXIT_OK, "%s", e.msg);
    sqlite3 *h;
    ck_assert(sqlite3_open(c.db, &h) == SQLITE_OK);
    sqlite3_stmt *q;
    ck_assert(sqlite3_prepare_v2(h, "SELECT val_loss FROM epochs WHERE run_id = ? ORDER BY epoch",
                                 -1, &q, NULL) == SQLITE_OK);
    sqlite3_bind_int64(q, 1, sum.run_id);
    double v[3];
    int k = 0;
    while (sqlite3_step(q) == SQLITE_ROW && k < 3)
        v[k++] = sqlite3_column_double(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(h);
    ck_assert_int_eq(k, 3);
    ck_assert_msg(v[1] < v[0] && v[2] < v[1], "val loss %g %g %g", v[0], v[1], v[2]);
    ck_assert_msg(v[2] < log(256.0) - 0.5, "val loss %g after 3 epochs", v[2]);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("gnmt_model");
    TCase *tc = tcase_create("model");
    tcase_set_tags(tc, "fast");
    tcase_add_loop_test(tc, paper_parameters, 0, 2);
    tcase_add_loop_test(tc, builds_and_partitions, 0, 2);
    tcase_add_loop_test(tc, paper_cut, 0, 2);
    tcase_add_test(tc, gnmt_init);
    tcase_add_test(tc, slice_concat);
    suite_add_tcase(s, tc);
    tc = tcase_create("train");
    tcase_add_test(tc, executors_gpipe);
    tcase_add_test(tc, executors_pipedream);
    tcase_add_test(tc, val_loss_falls);
    suite_add_tcase(s, tc);
    return s;
}
