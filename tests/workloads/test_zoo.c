/* tests/workloads/test_zoo.c — the zoo's models (semantics §5): every image model's `paper` preset
 * has exactly the parameter tensors of its PyTorch definition, by name, shape and order
 * (tests/fixtures/zoo_params.txt: torchvision 0.14's AlexNet, ResNet-101 and Inception-V3,
 * the paper code's CIFAR models, written by fixtures_zoo.py), the CIFAR VGG-16's features
 * are torchvision's vgg16_bn features; the paper partitions are the cuts semantics §5.3
 * lists (the residual LSTM's too) and every preset's cut fits; the partition choice and
 * the preset lookup refuse what does not apply; a run's configuration records the preset
 * and the partition it takes; `pipebench list` shows the presets. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/driver/run.h"
#include "tests/support/cli_util.h"
#include "harness/model/stage.h"
#include "workloads/models/workload.h"

/* ---- the fixture ---- */

#define MAX_TENSORS 1024

struct tensor {
    char name[96];
    char shape[48];   /* "64x3x11x11" */
};

struct record {
    char model[96];
    long long total;
    struct tensor t[MAX_TENSORS];
    int n;
};

/* The fixture's record of `model`; fails when it has none. */
static void read_record(const char *model, struct record *r)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/zoo_params.txt", getenv("PB_FIXTURES"));
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char line[256];
    bool in = false;
    memset(r, 0, sizeof *r);
    while (fgets(line, sizeof line, f)) {
        char a[96], b[48];
        long long total;
        if (line[0] == '#')
            continue;
        if (sscanf(line, "model %95s %lld", a, &total) == 2) {
            in = !strcmp(a, model);
            if (in) {
                snprintf(r->model, sizeof r->model, "%s", a);
                r->total = total;
            }
        } else if (in && sscanf(line, "%95s %47s", a, b) == 2) {
            ck_assert_int_lt(r->n, MAX_TENSORS);
            snprintf(r->t[r->n].name, sizeof r->t[r->n].name, "%s", a);
            snprintf(r->t[r->n].shape, sizeof r->t[r->n].shape, "%s", b);
            r->n++;
        }
    }
    fclose(f);
    ck_assert_msg(r->model[0], "%s has no record of %s", path, model);
}

/* ---- pipebench's tensors ---- */

struct collect {
    struct record *r;
};

/* A tensor's shape as the fixture writes it: "64x3x11x11". */
static void shape_text(const struct pb_stage_tensor *t, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int d = 0; d < t->ndim && len < cap; d++)
        len += (size_t)snprintf(out + len, cap - len, "%s%lld", d ? "x" : "",
                                (long long)t->shape[d]);
}

static void add_param(void *ctx, const struct pb_stage_tensor *t)
{
    struct record *r = ((struct collect *)ctx)->r;
    if (t->is_buffer)
        return;
    ck_assert_int_lt(r->n, MAX_TENSORS);
    snprintf(r->t[r->n].name, sizeof r->t[r->n].name, "%s", t->name);
    shape_text(t, r->t[r->n].shape, sizeof r->t[r->n].shape);
    r->total += (long long)t->count;
    r->n++;
}

static const struct pb_preset *preset_of(const struct pb_workload *w, const char *name)
{
    const struct pb_preset *p;
    struct pb_err e;
    ck_assert_msg(pb_workload_preset(w, name, &p, &e) == 0, "%s", e.msg);
    return p;
}

/* Builds w's preset on its own sample shape and head, finalised for micro-batches of 2. */
static void build(const struct pb_workload *w, const struct pb_preset *p, struct pb_model *m)
{
    struct pb_err e;
    ck_assert_msg(w->build(m, p, pb_preset_sample(p), p->classes, &e) == 0, "%s: %s", w->name,
                  e.msg);
    ck_assert_msg(pb_model_finalize(m, 2, &e) == 0, "%s: %s", w->name, e.msg);
}

/* The parameter tensors of the whole model, as one stage would name them. */
static void pb_record(const struct pb_model *m, struct record *r)
{
    memset(r, 0, sizeof *r);
    struct pb_stage s;
    pb_stage_layout(&s, m, 0, 1, 0, m->nblocks);
    struct collect c = {r};
    pb_stage_tensors(&s, add_param, &c);
    ck_assert_int_eq((long long)s.nparams, r->total);
    pb_stage_finish(&s);
}

static void expect_same(const char *what, const struct record *pb, const struct record *torch)
{
    for (int i = 0; i < pb->n && i < torch->n; i++) {
        ck_assert_msg(!strcmp(pb->t[i].name, torch->t[i].name),
                      "%s: tensor %d is %s in pipebench, %s in PyTorch", what, i, pb->t[i].name,
                      torch->t[i].name);
        ck_assert_msg(!strcmp(pb->t[i].shape, torch->t[i].shape), "%s: %s is %s, PyTorch %s",
                      what, pb->t[i].name, pb->t[i].shape, torch->t[i].shape);
    }
    ck_assert_msg(pb->n == torch->n, "%s: %d tensors, PyTorch %d", what, pb->n, torch->n);
    ck_assert_msg(pb->total == torch->total, "%s: %lld parameters, PyTorch %lld", what, pb->total,
                  torch->total);
}

static const char *const zoo[] = {"alexnet", "resnet101", "inceptionv3", "vgg16", "googlenet",
                                  "densenet121", NULL};

/* Every paper model has its PyTorch definition's tensors: names, shapes, order, total. */
START_TEST(test_paper_parameters)
{
    static struct record torch, pb;
    for (int i = 0; zoo[i]; i++) {
        const struct pb_workload *w = pb_workload_find(zoo[i], NULL);
        ck_assert(w != NULL);
        struct pb_model m;
        build(w, preset_of(w, "paper"), &m);
        read_record(zoo[i], &torch);
        pb_record(&m, &pb);
        expect_same(zoo[i], &pb, &torch);
        pb_model_finish(&m);
    }
}
END_TEST

/* The CIFAR VGG-16's convolutional part is torchvision's vgg16_bn features, tensor for
 * tensor (the same features.<i> names: the same layers in the same order). */
START_TEST(test_vgg16_features)
{
    static struct record torch, pb, conv;
    struct pb_model m;
    const struct pb_workload *w = pb_workload_find("vgg16", NULL);
    build(w, preset_of(w, "paper"), &m);
    pb_record(&m, &pb);
    memset(&conv, 0, sizeof conv);
    long long n = 1;
    for (int i = 0; i < pb.n; i++)
        if (!strncmp(pb.t[i].name, "features.", 9)) {
            conv.t[conv.n++] = pb.t[i];
            n = 1;
            for (const char *s = pb.t[i].shape; *s; s += strcspn(s, "x") + (s[strcspn(s, "x")] != 0))
                n *= atoll(s);
            conv.total += n;
        }
    read_record("vgg16_bn.features", &torch);
    expect_same("vgg16 features", &conv, &torch);
    pb_model_finish(&m);
}
END_TEST

/* ---- the paper partitions (semantics §5.3), spelled out independently of the models ---- */

struct stage_spec {
    const char *blocks[40];   /* the stage's blocks, in order; "prefix[a,b)" is prefix a … b-1 */
};

/* Expands "layer3.[3,13)" into layer3.3 … layer3.12 (other names as they are). */
static int expand(const char *const *spec, char out[][32], int cap)
{
    int n = 0;
    for (int i = 0; spec[i]; i++) {
        const char *br = strchr(spec[i], '[');
        if (!br) {
            ck_assert_int_lt(n, cap);
            snprintf(out[n++], 32, "%s", spec[i]);
            continue;
        }
        int a, b;
        ck_assert(sscanf(br, "[%d,%d)", &a, &b) == 2);
        for (int k = a; k < b; k++) {
            ck_assert_int_lt(n, cap);
            snprintf(out[n++], 32, "%.*s%d", (int)(br - spec[i]), spec[i], k);
        }
    }
    return n;
}

static void expect_cut(const char *model, const struct stage_spec *want)
{
    const struct pb_workload *w = pb_workload_find(model, NULL);
    const struct pb_preset *p = preset_of(w, "paper");
    struct pb_err e;
    bool paper;
    ck_assert(pb_partition_choose(p, model, NULL, 4, &paper, &e) == 0 && paper);
    struct pb_model m;
    build(w, p, &m);
    int bounds[5];
    ck_assert_msg(pb_partition_paper(&m, p, bounds, &e) == 0, "%s", e.msg);
    ck_assert(bounds[0] == 0 && bounds[4] == m.nblocks);
    for (int k = 0; k < 4; k++) {
        char names[64][32];
        int n = expand(want[k].blocks, names, 64);
        ck_assert_msg(bounds[k + 1] - bounds[k] == n, "%s stage %d: %d blocks, the paper's %d", model, k,
                      bounds[k + 1] - bounds[k], n);
        for (int i = 0; i < n; i++)
            ck_assert_msg(!strcmp(m.blocks[bounds[k] + i].name, names[i]),
                          "%s stage %d block %d: %s, the paper's %s", model, k, i,
                          m.blocks[bounds[k] + i].name, names[i]);
    }
    pb_model_finish(&m);
}

START_TEST(test_paper_cuts)
{
    /* conv1 + max-pool / conv2 + max-pool / conv3–5 / max-pool, fc6–8 */
    expect_cut("alexnet", (struct stage_spec[]){{{"conv1", "pool1"}}, {{"conv2", "pool2"}},
                                                {{"conv3", "conv4", "conv5"}},
                                                {{"pool5", "fc6", "fc7", "fc8"}}});
    /* stem + layer1 / layer2 + layer3's first 3 / the next 10 / the last 10 + layer4 + fc */
    expect_cut("resnet101",
               (struct stage_spec[]){{{"stem", "layer1.[0,3)"}},
                                     {{"layer2.[0,4)", "layer3.[0,3)"}},
                                     {{"layer3.[3,13)"}},
                                     {{"layer3.[13,23)", "layer4.[0,3)", "fc"}}});
    expect_cut("inceptionv3",
               (struct stage_spec[]){{{"Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3", "maxpool1",
                                       "Conv2d_3b_1x1", "Conv2d_4a_3x3", "maxpool2"}},
                                     {{"Mixed_5b", "Mixed_5c", "Mixed_5d", "Mixed_6a"}},
                                     {{"Mixed_6b", "Mixed_6c", "Mixed_6d"}},
                                     {{"Mixed_6e", "Mixed_7a", "Mixed_7b", "Mixed_7c", "fc"}}});
    expect_cut("vgg16", (struct stage_spec[]){{{"conv1_1", "conv1_2", "pool1"}},
                                              {{"conv2_1", "conv2_2", "pool2", "conv3_1", "conv3_2",
                                                "conv3_3"}},
                                              {{"pool3", "conv4_1", "conv4_2", "conv4_3"}},
                                              {{"pool4", "conv5_1", "conv5_2", "conv5_3", "pool5",
                                                "fc"}}});
    expect_cut("googlenet",
               (struct stage_spec[]){{{"pre_layers", "a3"}}, {{"b3", "maxpool1"}},
                                     {{"a4", "b4"}},
                                     {{"c4", "d4", "e4", "maxpool2", "a5", "b5", "head"}}});
    expect_cut("densenet121",
               (struct stage_spec[]){{{"conv1", "dense1.[0,6)", "trans1"}},
                                     {{"dense2.[0,12)", "trans2"}},
                                     {{"dense3.[0,24)", "trans3"}},
                                     {{"dense4.[0,16)", "head"}}});
    /* embedding + block 1 / block 2 / block 3 / block 4 + mean + fc */
    expect_cut("residual-lstm", (struct stage_spec[]){{{"embedding", "block1"}}, {{"block2"}},
                                                      {{"block3"}}, {{"block4", "head"}}});
}
END_TEST

/* The blocks' contents where the cut names only the blocks: a ResNet stem is conv1, bn1
 * with its ReLU, max-pool; the heads are the paper's. */
START_TEST(test_stage_edges)
{
    struct pb_model m;
    const struct pb_workload *w = pb_workload_find("resnet101", NULL);
    build(w, preset_of(w, "paper"), &m);
    const struct pb_block *stem = &m.blocks[0];
    ck_assert_int_eq(stem->nnodes, 3);
    ck_assert(stem->nodes[1].cfg.kind == PB_LAYER_BATCHNORM2D && stem->nodes[1].cfg.relu);
    ck_assert_int_eq(stem->nodes[2].cfg.kind, PB_LAYER_MAXPOOL2D);
    ck_assert_int_eq(stem->out_shape.h, 56);
    const struct pb_block *fc = &m.blocks[m.nblocks - 1];
    ck_assert_int_eq(fc->in_shape.c, 2048);
    ck_assert_int_eq(fc->out_shape.c, 1000);
    pb_model_finish(&m);
    w = pb_workload_find("alexnet", NULL);
    build(w, preset_of(w, "paper"), &m);
    ck_assert_int_eq(m.blocks[7].out_shape.h, 6);   /* pool5: 6×6, the adaptive pool's own */
    ck_assert_int_eq(m.blocks[7].nnodes, 1);        /* so the adaptive pool is the identity */
    ck_assert_int_eq(m.blocks[8].nodes[2].cfg.in_features, 9216);
    pb_model_finish(&m);
}
END_TEST

/* Every preset's 4-stage cut (the small ones' too) fits its model: 4 non-empty stages. */
START_TEST(test_every_cut_fits)
{
    static const char *const all[] = {"alexnet", "resnet101", "inceptionv3", "vgg16", "googlenet",
                                      "densenet121", "residual-lstm", "gnmt8", "gnmt16", NULL};
    for (int i = 0; all[i]; i++) {
        const struct pb_workload *w = pb_workload_find(all[i], NULL);
        for (const struct pb_preset *p = w->presets; p->name; p++) {
            struct pb_model m;
            struct pb_err e;
            build(w, p, &m);
            int bounds[5];
            ck_assert_msg(pb_partition_paper(&m, p, bounds, &e) == 0, "%s %s: %s", all[i], p->name,
                          e.msg);
            for (int k = 0; k < 4; k++)
                ck_assert(bounds[k] < bounds[k + 1]);
            pb_model_finish(&m);
        }
    }
}
END_TEST

/* Which partition a run takes, and the refusals. */
START_TEST(test_partition_choice)
{
    const struct pb_workload *w = pb_workload_find("vgg16", NULL);
    const struct pb_preset *paper = preset_of(w, "paper"), *small = preset_of(w, NULL);
    ck_assert_str_eq(small->name, "small");
    bool cut;
    struct pb_err e;
    ck_assert(pb_partition_choose(paper, "vgg16", NULL, 4, &cut, &e) == 0 && cut);
    ck_assert(pb_partition_choose(paper, "vgg16", NULL, 3, &cut, &e) == 0 && !cut);
    ck_assert(pb_partition_choose(paper, "vgg16", "balanced", 4, &cut, &e) == 0 && !cut);
    ck_assert(pb_partition_choose(small, "vgg16", NULL, 4, &cut, &e) == 0 && !cut);
    ck_assert(pb_partition_choose(small, "vgg16", "paper", 4, &cut, &e) == 0 && cut);
    ck_assert_int_eq(pb_partition_choose(paper, "vgg16", "paper", 8, &cut, &e), -1);
    ck_assert_msg(strstr(e.msg, "--stages 4"), "%s", e.msg);
    ck_assert_int_eq(pb_partition_choose(NULL, "mlp", "paper", 4, &cut, &e), -1);
    ck_assert_msg(strstr(e.msg, "no paper partition"), "%s", e.msg);
    ck_assert_int_eq(pb_partition_choose(paper, "vgg16", "even", 4, &cut, &e), -1);
    ck_assert_msg(strstr(e.msg, "flops, cost, params, time, paper"), "%s", e.msg);
    const struct pb_preset *p;
    ck_assert_int_eq(pb_workload_preset(w, "huge", &p, &e), -1);
    ck_assert_msg(strstr(e.msg, "paper, small"), "%s", e.msg);
    ck_assert_int_eq(pb_workload_preset(pb_workload_find("lenet", NULL), "paper", &p, &e), -1);
    ck_assert_msg(strstr(e.msg, "no presets"), "%s", e.msg);
    ck_assert(pb_workload_preset(pb_workload_find("lenet", NULL), NULL, &p, &e) == 0 && !p);
}
END_TEST

/* A model refuses an input it cannot take with a message naming the size. */
START_TEST(test_input_sizes)
{
    struct pb_err e;
    struct pb_model m;
    const struct pb_workload *w = pb_workload_find("vgg16", NULL);
    ck_assert_int_eq(w->build(&m, preset_of(w, "paper"), (struct pb_shape){1, 3, 64, 64}, 100, &e),
                     -1);
    ck_assert_msg(strstr(e.msg, "32x32") && strstr(e.msg, "64x64"), "%s", e.msg);
    w = pb_workload_find("alexnet", NULL);
    ck_assert_int_eq(w->build(&m, preset_of(w, "paper"), (struct pb_shape){1, 3, 64, 64}, 1000, &e),
                     -1);
    ck_assert_msg(strstr(e.msg, "adaptive average pool") && strstr(e.msg, "224x224"), "%s", e.msg);
    /* 12×12 features: the adaptive pool to 6×6 is an average pool 2×2 */
    ck_assert(w->build(&m, preset_of(w, "paper"), (struct pb_shape){1, 3, 416, 416}, 1000, &e) == 0);
    ck_assert_msg(pb_model_finalize(&m, 1, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(m.blocks[7].out_shape.h, 6);
    pb_model_finish(&m);
}
END_TEST

/* The configuration JSON holds the preset and partition a run takes, resolved: leaving
 * the default out and naming it give the same JSON (one run to a sweep). */
static void expect_json(const char *model, const char *preset, const char *partition, int stages,
                        const char *want_preset, const char *want_partition)
{
    struct pb_run_cfg c;
    pb_run_cfg_defaults(&c);
    c.model = model;
    c.preset = preset;
    c.partition = partition;
    c.stages = stages;
    char *j = pb_run_cfg_json(&c), want[128];
    snprintf(want, sizeof want, "\"preset\":\"%s\",\"partition\":\"%s\"", want_preset,
             want_partition);
    ck_assert_msg(strstr(j, want), "%s %s %s D=%d: %s", model, preset, partition, stages, j);
    free(j);
}

START_TEST(test_config_json)
{
    expect_json("resnet101", NULL, NULL, 4, "small", "cost");
    expect_json("resnet101", "small", "cost", 4, "small", "cost");
    expect_json("resnet101", "small", "balanced", 4, "small", "balanced");
    expect_json("resnet101", "small", "flops", 4, "small", "balanced");
    expect_json("resnet101", "paper", NULL, 4, "paper", "paper");
    expect_json("resnet101", "paper", "paper", 4, "paper", "paper");
    expect_json("resnet101", "paper", NULL, 8, "paper", "cost");
    expect_json("resnet101", "small", "paper", 4, "small", "paper");
    expect_json("residual-lstm", NULL, NULL, 4, "small", "cost");
    expect_json("residual-lstm", "paper", NULL, 4, "paper", "paper");
    expect_json("residual-lstm", "small", "paper", 4, "small", "paper");
    expect_json("lenet", NULL, NULL, 4, "", "cost");
    expect_json("lenet", NULL, "0:1:3:5:9", 4, "", "0,1,3,5,9");
}
END_TEST

/* `pipebench list` shows each zoo model with its presets, the default marked, their
 * datasets, input sides or sequence lengths, heads and parameter counts; the former
 * model residual-lstm-small is a preset now. */
START_TEST(test_list)
{
    char dir[64], out[1 << 15];
    cli_scratch(dir, sizeof dir, "zoo");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "list"), 0);
    const char *want[] = {
        "alexnet", "paper  tiny-imagenet, 3x224x224, 1000-way head, 61100840 parameters",
        "resnet101", "44549160 parameters, 35 blocks", "inceptionv3", "3x299x299",
        "23834568 parameters", "vgg16", "cifar100, 3x32x32, 100-way head, 14774436 parameters",
        "googlenet", "6258500 parameters", "densenet121", "7048548 parameters, 63 blocks",
        "small * tiny-imagenet, 3x32x32, 200-way head", "lenet", "(fashion-mnist)",
        "residual-lstm", "paper  imdb, 200 tokens, 10000-word vocabulary, 2-way head, 1874690 "
        "parameters, 6 blocks, a 4-stage cut",
        "small * imdb, 64 tokens, 2000-word vocabulary, 2-way head, 102082 parameters, 6 blocks",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]), "no '%s' in: %s", want[i], out);
    ck_assert_msg(!strstr(out, "residual-lstm-small"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("zoo");
    TCase *tc = tcase_create("models");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_paper_parameters);
    tcase_add_test(tc, test_vgg16_features);
    tcase_add_test(tc, test_paper_cuts);
    tcase_add_test(tc, test_stage_edges);
    tcase_add_test(tc, test_every_cut_fits);
    tcase_add_test(tc, test_partition_choice);
    tcase_add_test(tc, test_input_sizes);
    tcase_add_test(tc, test_config_json);
    tcase_add_test(tc, test_list);
    suite_add_tcase(s, tc);
    return s;
}
