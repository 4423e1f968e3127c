/* workloads/models/googlenet.c — the CIFAR GoogLeNet the paper's code trains on CIFAR-100
 * (semantics §5.1; kuangliu/pytorch-cifar): pre-layers conv 3×3 pad 1 (3→192, bias) + BN +
 * ReLU; Inception a3, b3 (workloads/models/blocks.h: 1×1; 1×1 → 3×3; 1×1 → 3×3 → 3×3;
 * max-pool 3/1/1 → 1×1; every conv with bias + BN + ReLU); max-pool 3/2 pad 1; a4, b4,
 * c4, d4, e4; max-pool 3/2 pad 1; a5, b5; AvgPool 8; Linear 1024 → 100. Layer defaults
 * as init. One block for the pre-layers, per module, per max-pool and the head: 13
 * blocks; tensors named as the state_dict (pre_layers.0, a3.b1.0, ..., linear).
 *
 * 32×32 inputs only: the AvgPool 8 needs the 8×8 the two pools leave.
 * `small`: every width ÷8 and the modules a3, b3, a4, b4, e4, a5, b5 (c4 and d4 left
 * out); its cut is the paper's with e4 opening the last stage. */
#include <stdio.h>
#include <string.h>

#include "workloads/models/blocks.h"
#include "workloads/models/workload.h"

/* kuangliu's module widths: in order n1, n3r, n3, n5r, n5, pool_planes */
struct module {
    const char *name;
    int w[6];
};

static const struct module modules[] = {
    {"a3", {64, 96, 128, 16, 32, 32}},      {"b3", {128, 128, 192, 32, 96, 64}},
    {"a4", {192, 96, 208, 16, 48, 64}},     {"b4", {160, 112, 224, 24, 64, 64}},
    {"c4", {128, 128, 256, 24, 64, 64}},    {"d4", {112, 144, 288, 32, 64, 64}},
    {"e4", {256, 160, 320, 32, 128, 128}},  {"a5", {256, 160, 320, 32, 128, 128}},
    {"b5", {384, 192, 384, 48, 128, 128}},
};
#define NMODULES (int)(sizeof modules / sizeof modules[0])

struct googlenet_arch {
    int div;                    /* every width ÷ div */
    const char *order[16];      /* modules and "maxpool"s in order, NULL-terminated */
};

static const struct googlenet_arch paper = {
    1, {"a3", "b3", "maxpool", "a4", "b4", "c4", "d4", "e4", "maxpool", "a5", "b5", NULL}};
static const struct googlenet_arch small = {
    8, {"a3", "b3", "maxpool", "a4", "b4", "e4", "maxpool", "a5", "b5", NULL}};

static int width(int w, int div)
{
    return w / div > 1 ? w / div : 1;
}

static const struct module *find_module(const char *name)
{
    for (int i = 0; i < NMODULES; i++)
        if (!strcmp(modules[i].name, name))
            return &modules[i];
    PB_CHECK(!"unknown GoogLeNet module");
    return NULL;
}

static int googlenet_build(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                           int nclasses, struct pb_err *e)
{
    const struct googlenet_arch *a = p->arch;
    if (sample.h != 32 || sample.w != 32)
        return pb_err_set(e, "googlenet (the CIFAR GoogLeNet) needs 32x32 inputs: its AvgPool 8 "
                             "takes the 8x8 its two max-pools leave (got %dx%d)", sample.h,
                          sample.w);
    pb_model_init(m, "googlenet", sample, nclasses);
    int c = width(192, a->div);
    struct pb_block *b = pb_model_block(m, "pre_layers");
    pb_block_conv(m, b, "0", sample.c, c, 3, 3, 1, 1, 1, true);
    pb_block_bn_relu(m, b, "1", c);  /* and ReLU "2" */
    int npool = 0;
    for (int i = 0; a->order[i]; i++) {
        if (!strcmp(a->order[i], "maxpool")) {
            char name[32];
            snprintf(name, sizeof name, "maxpool%d", ++npool);
            pb_block_maxpool(m, pb_model_top_block(m, name), "maxpool", 3, 2, 1, false);
            continue;
        }
        const int *w = find_module(a->order[i])->w;
        int d = a->div;
        c = pb_zoo_googlenet_inception(m, a->order[i], c, width(w[0], d), width(w[1], d),
                                       width(w[2], d), width(w[3], d), width(w[4], d),
                                       width(w[5], d));
    }
    b = pb_model_top_block(m, "head");
    pb_block_avgpool(m, b, "avgpool", 8, 1, 0);
    pb_block_flatten(m, b, "flatten");
    pb_block_linear(m, b, "linear", c, nclasses);
    return 0;
}

/* The paper's cut (semantics §5.3): pre-layers + a3 / b3 + max-pool / a4, b4 / c4, d4, e4, max-pool, a5, b5,
 * avgpool, fc. */
static const struct pb_preset presets[] = {
    {"paper", "CIFAR GoogLeNet (kuangliu), 32x32, Linear 1024 -> 100", "cifar100", 32, false, 100,
     {"b3", "a4", "c4"}, &paper, PB_SAMPLE_IMAGE, 0, 0, NULL, 0},
    {"small", "widths /8, modules a3 b3 a4 b4 e4 a5 b5", "cifar100", 32, false, 100,
     {"b3", "a4", "e4"}, &small, PB_SAMPLE_IMAGE, 0, 0, NULL, 0},
    {0},
};

const struct pb_workload pb_workload_googlenet = {
    .name = "googlenet",
    .summary = "CIFAR GoogLeNet: pre-layers, 9 Inception modules, 2 max-pools, fc",
    .dataset = "cifar100",
    .build = googlenet_build,
    .presets = presets,
};
