/* tests/model/test_torchnames.c — checkpoints are PyTorch state_dicts (harness/store/checkpoint.h),
 * one model per family: LeNet (a plain CNN with BatchNorm), a ResNet of Bottlenecks (the
 * composite blocks), the residual LSTM (embedding, LSTMs) and GNMT (two embeddings, a
 * bidirectional LSTM, the attention), each at a few KiB of weights
 * (tests/fixtures/fixtures_torchnames.py). The state_dict PyTorch wrote (its keys in any
 * order, BatchNorm's int64 num_batches_tracked included) loads as --init does, the loss
 * of one batch in eval mode is PyTorch's within 5e-5 (the block parity tests' tolerance),
 * and the checkpoint pipebench then saves holds every key of the state_dict with its
 * shape and bytes, num_batches_tracked aside (pipebench keeps no count: PyTorch's strict
 * load sets a missing one to 0), and nothing else. The state_dict also loads into the
 * model cut into stages. A state_dict with a tensor too many, one too few or one of
 * another shape is refused, naming it. And the whole models `pipebench run` builds (mlp,
 * mlp-deep, lenet, resnet101 small, residual-lstm small, gnmt8 small) have their PyTorch
 * definitions' keys and shapes, in order (tests/fixtures/torchnames_keys.txt). */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/compute/registry.h"
#include "harness/store/checkpoint.h"
#include "tests/support/test_util.h"
#include "workloads/models/archs.h"
#include "workloads/models/workload.h"

#define LOSS_TOL 5e-5f

static const struct resnet_arch resnet_tiny = {{1, 1, 1, 1}, 2, 3, 1, 1};
static const struct rlstm_arch rlstm_tiny = {4};
static const struct gnmt_arch gnmt_tiny = {4, 4, 4, false};

/* One family's model as fixtures_torchnames.py defines it. */
struct family {
    const char *fixture;   /* <fixture>.* in torchnames.safetensors */
    const char *workload;
    struct pb_preset preset;  /* .arch NULL: the workload has no presets */
    struct pb_shape sample;
    int classes, batch;
};

static const struct family families[] = {
    {"lenet", "lenet", {0}, {1, 1, 12, 12}, 3, 2},
    {"resnet", "resnet101", {.name = "tiny", .input_side = 8, .classes = 3,
                             .sample = PB_SAMPLE_IMAGE, .arch = &resnet_tiny},
     {1, 3, 8, 8}, 3, 2},
    {"rlstm", "residual-lstm", {.name = "tiny", .classes = 2, .vocab = 12, .steps = 6,
                                .sample = PB_SAMPLE_TOKENS, .arch = &rlstm_tiny},
     {1, 6, 1, 1}, 2, 2},
    {"gnmt", "gnmt8", {.name = "tiny", .classes = 10, .vocab = 10, .steps = 5,
                       .sample = PB_SAMPLE_PAIR, .arch = &gnmt_tiny},
     {1, 10, 1, 1}, 10, 2},
};
#define NFAMILIES (int)(sizeof families / sizeof families[0])

struct built {
    struct pb_model model;
    struct pb_backend *be;
    struct pb_stage stages[3];
    int d;
};

/* The family's model for micro-batches of f->batch, cut into d stages (balanced),
 * initialised from seed 3. */
static void build(struct built *b, const struct family *f, int d)
{
    struct pb_err e;
    memset(b, 0, sizeof *b);
    b->d = d;
    const struct pb_workload *w = pb_workload_find(f->workload, &e);
    ck_assert_ptr_nonnull(w);
    ck_assert_msg(w->build(&b->model, f->preset.arch ? &f->preset : NULL, f->sample, f->classes,
                           &e) == 0, "%s: %s", f->fixture, e.msg);
    ck_assert_msg(pb_model_finalize(&b->model, f->batch, &e) == 0, "%s: %s", f->fixture, e.msg);
    int bounds[4];
    ck_assert_msg(pb_partition_balanced(&b->model, d, bounds, &e) == 0, "%s", e.msg);
    struct pb_backend_cfg bc = {.device = 0, .threads = 1};
    b->be = pb_backend_create("cpu", &bc, &e);
    ck_assert_ptr_nonnull(b->be);
    for (int k = 0; k < d; k++) {
        ck_assert_msg(pb_stage_init(&b->stages[k], b->be, &b->model, k, d, bounds[k],
                                    bounds[k + 1], &e) == 0, "%s", e.msg);
        ck_assert(pb_stage_init_params(&b->stages[k], 3, &e) == 0);
    }
}

static void finish(struct built *b)
{
    for (int k = 0; k < b->d; k++)
        pb_stage_finish(&b->stages[k]);
    pb_backend_destroy(b->be);
    pb_model_finish(&b->model);
}

static const char *state_dict_path(const struct family *f)
{
    static char path[4096];
    char name[128];
    snprintf(name, sizeof name, "torchnames_%s.safetensors", f->fixture);
    snprintf(path, sizeof path, "%s", pb_fixture_path(name));
    return path;
}

/* A device copy of the fixture's int32 tensor <fixture>.<what> of n values. */
static int32_t *device_ints(struct pb_backend *be, const struct pb_safetensors *fx,
                            const char *fixture, const char *what, size_t n)
{
    char name[128];
    snprintf(name, sizeof name, "%s.%s", fixture, what);
    const struct pb_st_tensor *t = pb_st_find(fx, name);
    ck_assert_msg(t && t->dtype == PB_ST_I32 && t->count == n, "fixture %s: %zu int32 wanted",
                  name, n);
    struct pb_err e;
    int32_t *d = pb_backend_alloc(be, n * sizeof(int32_t), PB_MEM_ACTS, &e);
    ck_assert_ptr_nonnull(d);
    be->ops->upload(be, d, t->data, n * sizeof(int32_t));
    return d;
}

/* The eval-mode loss of the fixture's batch through a one-stage model. */
static float eval_loss(struct built *b, const struct family *f, const struct pb_safetensors *fx)
{
    struct pb_stage *s = &b->stages[0];
    struct pb_backend *be = b->be;
    struct pb_err e;
    size_t nx = pb_shape_count(s->in_shape);
    float *x = pb_fixture_read(fx, f->fixture, "x", nx);
    struct pb_tensor in;
    ck_assert(pb_tensor_alloc(be, &in, s->in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, &e) == 0);
    be->ops->upload(be, in.data, x, nx * sizeof(float));
    int32_t *labels = device_ints(be, fx, f->fixture, "y", (size_t)s->nlabels);
    int32_t *lengths = s->needs_lengths ? device_ints(be, fx, f->fixture, "lengths",
                                                      (size_t)f->batch) : NULL;
    struct pb_step_ctx c = {.train = false, .seed = 7, .lengths = lengths};
    struct pb_stage_act act;
    ck_assert_msg(pb_stage_forward(s, &c, s->params, in, labels, &act, NULL, &e) == 0, "%s",
                  e.msg);
    be->ops->sync(be);
    pb_backend_free(be, labels);
    if (lengths)
        pb_backend_free(be, lengths);
    free(x);
    return act.loss;
}

static bool is_tracked_count(const char *name)
{
    const char *sfx = ".num_batches_tracked";
    size_t n = strlen(name), k = strlen(sfx);
    return n > k && !strcmp(name + n - k, sfx);
}

/* The checkpoint at path holds each tensor of the state_dict sd (its num_batches_tracked
 * aside) under the same key with the same shape and bytes, and nothing else. */
static void expect_state_dict(const char *what, const char *path, const struct pb_safetensors *sd)
{
    struct pb_safetensors ck;
    struct pb_err e;
    ck_assert_msg(pb_st_load(&ck, path, &e) == 0, "%s", e.msg);
    int expected = 0;
    for (int i = 0; i < sd->n; i++) {
        const struct pb_st_tensor *t = &sd->t[i];
        const struct pb_st_tensor *c = pb_st_find(&ck, t->name);
        if (is_tracked_count(t->name)) {
            ck_assert_msg(t->dtype == PB_ST_I64 && t->ndim == 0, "%s: %s", what, t->name);
            ck_assert_msg(c == NULL, "%s: the checkpoint holds %s", what, t->name);
            continue;
        }
        expected++;
        ck_assert_msg(c != NULL, "%s: the checkpoint lacks %s", what, t->name);
        ck_assert_msg(c->dtype == PB_ST_F32 && t->dtype == PB_ST_F32 && c->ndim == t->ndim,
                      "%s: %s has %d dimensions, PyTorch's %d", what, t->name, c->ndim, t->ndim);
        ck_assert_msg(!memcmp(c->shape, t->shape, (size_t)t->ndim * sizeof t->shape[0]),
                      "%s: %s has another shape than PyTorch's", what, t->name);
        ck_assert_msg(!memcmp(c->data, t->data, t->count * sizeof(float)),
                      "%s: %s has other values than PyTorch's", what, t->name);
    }
    ck_assert_msg(ck.n == expected, "%s: the checkpoint holds %d tensors, the state_dict %d "
                  "besides num_batches_tracked", what, ck.n, expected);
    pb_st_finish(&ck);
}

/* PyTorch's state_dict in, PyTorch's loss out, the same state_dict saved back. */
START_TEST(test_round_trip)
{
    const struct family *f = &families[_i];
    struct pb_safetensors fx, sd;
    struct pb_err e;
    pb_load_fixture(&fx, "torchnames.safetensors");
    ck_assert_msg(pb_st_load(&sd, state_dict_path(f), &e) == 0, "%s", e.msg);
    struct built b;
    build(&b, f, 1);
    ck_assert_msg(pb_checkpoint_load(b.stages, 1, state_dict_path(f), &e) == 0, "%s: %s",
                  f->fixture, e.msg);
    float loss = eval_loss(&b, f, &fx);
    double ref_loss;
    char name[64];
    snprintf(name, sizeof name, "%s.loss", f->fixture);
    ck_assert(pb_st_find(&fx, name) && pb_st_find(&fx, name)->dtype == PB_ST_F64);
    memcpy(&ref_loss, pb_st_find(&fx, name)->data, sizeof ref_loss);
    float ref = (float)ref_loss;
    printf("%-7s %3d tensors  loss %.7f  PyTorch %.7f\n", f->fixture, sd.n, loss, ref);
    pb_assert_within(name, &loss, &ref, 1, LOSS_TOL);

    char path[] = "/tmp/pb-torchnames-XXXXXX";
    ck_assert(close(mkstemp(path)) == 0);
    ck_assert_msg(pb_checkpoint_save(b.stages, 1, path, NULL, &e) == 0, "%s", e.msg);
    expect_state_dict(f->fixture, path, &sd);
    finish(&b);

    /* cut into stages: each takes its keys of the same file, and saves them back */
    build(&b, f, 3);
    ck_assert_msg(pb_checkpoint_load(b.stages, 3, state_dict_path(f), &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_checkpoint_save(b.stages, 3, path, NULL, &e) == 0, "%s", e.msg);
    expect_state_dict(f->fixture, path, &sd);
    finish(&b);
    unlink(path);
    pb_st_finish(&sd);
    pb_st_finish(&fx);
}
END_TEST

/* The state_dict rewritten at path: tensor `drop` left out, `reshape` as a vector, and
 * `extra` (if not NULL) added, a copy of the first tensor. */
static void rewrite(const char *path, const struct pb_safetensors *sd, const char *drop,
                    const char *reshape, const char *extra)
{
    struct pb_safetensors w;
    struct pb_err e;
    pb_st_writer_init(&w);
    for (int i = 0; i < sd->n; i++) {
        const struct pb_st_tensor *t = &sd->t[i];
        int64_t flat[1] = {(int64_t)t->count};
        if (drop && !strcmp(t->name, drop))
            continue;
        bool vector = reshape && !strcmp(t->name, reshape);
        pb_st_add(&w, t->name, t->dtype, vector ? 1 : t->ndim, vector ? flat : t->shape, t->data);
    }
    if (extra)
        pb_st_add(&w, extra, sd->t[0].dtype, sd->t[0].ndim, sd->t[0].shape, sd->t[0].data);
    ck_assert_msg(pb_st_save(&w, path, NULL, &e) == 0, "%s", e.msg);
    pb_st_finish(&w);
}

static void expect_refused(struct built *b, const char *path, const char *what,
                           const char *part1, const char *part2)
{
    struct pb_err e;
    ck_assert_int_eq(pb_checkpoint_load(b->stages, b->d, path, &e), -1);
    ck_assert_msg(strstr(e.msg, part1) && strstr(e.msg, part2) && strstr(e.msg, "--init"),
                  "%s: %s", what, e.msg);
}

/* LeNet's state_dict with a tensor too many, too few or of another shape is refused with
 * the tensor's name (and the shapes); nothing of it is loaded then. */
START_TEST(test_refused)
{
    const struct family *f = &families[0];
    struct pb_safetensors sd;
    struct pb_err e;
    ck_assert_msg(pb_st_load(&sd, state_dict_path(f), &e) == 0, "%s", e.msg);
    struct built b;
    build(&b, f, 2);
    float *before = malloc(b.stages[1].nparams * sizeof(float) + 1);
    b.be->ops->download(b.be, before, b.stages[1].params, b.stages[1].nparams * sizeof(float));
    char path[] = "/tmp/pb-torchnames-bad-XXXXXX";
    ck_assert(close(mkstemp(path)) == 0);
    rewrite(path, &sd, NULL, NULL, "fc4.weight");
    expect_refused(&b, path, "an extra tensor", "'fc4.weight' is not one of lenet's",
                   "remove the tensor");
    rewrite(path, &sd, "fc3.bias", NULL, NULL);
    expect_refused(&b, path, "a missing tensor", "'fc3.bias' is missing", "state_dict of its "
                   "PyTorch definition");
    rewrite(path, &sd, NULL, "fc2.weight", NULL);
    expect_refused(&b, path, "another shape", "'fc2.weight' has shape [10752], expected [84, 128]",
                   "--model");
    float *after = malloc(b.stages[1].nparams * sizeof(float) + 1);
    b.be->ops->download(b.be, after, b.stages[1].params, b.stages[1].nparams * sizeof(float));
    pb_assert_same_bits("stage 1 after the refusals", after, before, b.stages[1].nparams);
    free(before);
    free(after);
    finish(&b);
    unlink(path);
    pb_st_finish(&sd);
}
END_TEST

/* One model of torchnames_keys.txt, as a run builds it. */
struct whole {
    const char *model, *preset;  /* preset NULL: the workload has none */
    struct pb_shape sample;      /* {0}: the preset's */
    int classes;                 /* 0: the preset's */
};

static const struct whole wholes[] = {
    {"mlp", NULL, {1, 1, 28, 28}, 10},
    {"mlp-deep", NULL, {1, 1, 28, 28}, 10},
    {"lenet", NULL, {1, 1, 28, 28}, 10},
    {"resnet101", "small", {0}, 0},
    {"residual-lstm", "small", {0}, 0},
    {"gnmt8", "small", {0}, 100},
};

struct key_list {
    int n;
    char line[256][256];  /* "<key> <d0>x<d1>..." */
};

static void add_key(void *ctx, const struct pb_stage_tensor *t)
{
    struct key_list *k = ctx;
    ck_assert_int_lt(k->n, 256);
    int len = snprintf(k->line[k->n], sizeof k->line[0], "%s ", t->name);
    for (int d = 0; d < t->ndim; d++)
        len += snprintf(k->line[k->n] + len, sizeof k->line[0] - (size_t)len, "%s%lld",
                        d ? "x" : "", (long long)t->shape[d]);
    k->n++;
}

/* The fixture's lines of `model`. */
static void read_keys(const char *model, struct key_list *k)
{
    FILE *f = fopen(pb_fixture_path("torchnames_keys.txt"), "r");
    ck_assert_msg(f != NULL, "cannot open torchnames_keys.txt");
    char line[200], want[128];
    snprintf(want, sizeof want, "model %s", model);
    bool in = false;
    k->n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "model ", 6)) {
            in = !strcmp(line, want);
            continue;
        }
        if (in) {
            ck_assert_int_lt(k->n, 256);
            snprintf(k->line[k->n++], sizeof k->line[0], "%s", line);
        }
    }
    fclose(f);
    ck_assert_msg(k->n > 0, "torchnames_keys.txt has no model %s", model);
}

/* Every model a run builds has its PyTorch definition's state_dict keys and shapes. */
START_TEST(test_whole_models)
{
    const struct whole *wm = &wholes[_i];
    static struct key_list torch, pb;
    struct pb_err e;
    const struct pb_workload *w = pb_workload_find(wm->model, &e);
    ck_assert_ptr_nonnull(w);
    const struct pb_preset *p = NULL;
    if (wm->preset)
        ck_assert(pb_workload_preset(w, wm->preset, &p, &e) == 0);
    struct pb_shape sample = p ? pb_preset_sample(p) : wm->sample;
    struct pb_model m;
    ck_assert_msg(w->build(&m, p, sample, wm->classes ? wm->classes : p->classes, &e) == 0,
                  "%s: %s", wm->model, e.msg);
    ck_assert_msg(pb_model_finalize(&m, 2, &e) == 0, "%s", e.msg);
    struct pb_stage s;
    pb_stage_layout(&s, &m, 0, 1, 0, m.nblocks);
    pb.n = 0;
    pb_stage_tensors(&s, add_key, &pb);
    pb_stage_finish(&s);
    read_keys(wm->model, &torch);
    for (int i = 0; i < pb.n && i < torch.n; i++)
        ck_assert_msg(!strcmp(pb.line[i], torch.line[i]), "%s: tensor %d is '%s' in pipebench, "
                      "'%s' in PyTorch", wm->model, i, pb.line[i], torch.line[i]);
    ck_assert_msg(pb.n == torch.n, "%s: %d tensors in pipebench, %d in PyTorch", wm->model, pb.n,
                  torch.n);
    pb_model_finish(&m);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("torchnames");
    TCase *tc = tcase_create("torchnames");
    tcase_add_loop_test(tc, test_round_trip, 0, NFAMILIES);
    tcase_add_test(tc, test_refused);
    tcase_add_loop_test(tc, test_whole_models, 0, (int)(sizeof wholes / sizeof wholes[0]));
    suite_add_tcase(s, tc);
    return s;
}
