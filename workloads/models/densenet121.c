/* workloads/models/densenet121.c — the CIFAR DenseNet-121 the paper's code trains on CIFAR-100
 * (semantics §5.1; kuangliu/pytorch-cifar's DenseNet121): conv 3×3 pad 1 (3 → 2·growth, no
 * bias); dense blocks [6, 12, 24, 16] of bottleneck layers (BN-ReLU-conv 1×1 to
 * 4·growth-BN-ReLU-conv 3×3 to growth, then concat; workloads/models/blocks.h), growth 32, each
 * of the first three followed by a transition (BN-ReLU-conv 1×1 to ⌊0.5·C⌋-AvgPool 2);
 * head BN-ReLU-AvgPool 4, Linear 1024 → 100. Layer defaults as init. One block for the
 * conv, per dense layer, per transition and the head: 63 blocks; tensors named as the
 * state_dict (conv1, dense1.0.bn1, trans1.conv, ..., bn, linear).
 *
 * 32×32 inputs only: the AvgPool 4 takes the 4×4 three transitions leave.
 * `small`: growth 8 (÷4), dense blocks [2, 4, 6, 4]; the same cut. */
#include <stdio.h>

#include "workloads/models/blocks.h"
#include "workloads/models/workload.h"

struct densenet_arch {
    int growth;
    int blocks[4];   /* bottleneck layers per dense block */
};

static const struct densenet_arch paper = {32, {6, 12, 24, 16}};
static const struct densenet_arch small = {8, {2, 4, 6, 4}};

static int densenet121_build(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                             int nclasses, struct pb_err *e)
{
    const struct densenet_arch *a = p->arch;
    if (sample.h != 32 || sample.w != 32)
        return pb_err_set(e, "densenet121 (the CIFAR DenseNet-121) needs 32x32 inputs: its "
                             "AvgPool 4 takes the 4x4 its three transitions leave (got %dx%d)",
                          sample.h, sample.w);
    pb_model_init(m, "densenet121", sample, nclasses);
    int c = 2 * a->growth;
    pb_block_conv(m, pb_model_top_block(m, "conv1"), "conv1", sample.c, c, 3, 3, 1, 1, 1, false);
    char name[32];
    for (int d = 0; d < 4; d++) {
        for (int i = 0; i < a->blocks[d]; i++) {
            snprintf(name, sizeof name, "dense%d.%d", d + 1, i);
            c = pb_zoo_dense_layer(m, name, c, a->growth);
        }
        if (d < 3) {
            snprintf(name, sizeof name, "trans%d", d + 1);
            c = pb_zoo_transition(m, name, c, c / 2);  /* floor(C · reduction 0.5) */
        }
    }
    struct pb_block *b = pb_model_top_block(m, "head");
    pb_block_bn_relu(m, b, "bn", c);
    pb_block_avgpool(m, b, "avgpool", 4, 4, 0);
    pb_block_flatten(m, b, "flatten");
    pb_block_linear(m, b, "linear", c, nclasses);
    return 0;
}

/* The paper's cut (semantics §5.3): conv + dense1 + trans1 / dense2 + trans2 / dense3 + trans3 / dense4 +
 * BN + ReLU + avgpool + fc. */
static const struct pb_preset presets[] = {
    {"paper", "CIFAR DenseNet-121 (kuangliu), growth 32, 32x32, Linear 1024 -> 100", "cifar100",
     32, false, 100, {"dense2.0", "dense3.0", "dense4.0"}, &paper, PB_SAMPLE_IMAGE, 0, 0, NULL, 0},
    {"small", "growth 8, dense blocks [2, 4, 6, 4]", "cifar100", 32, false, 100,
     {"dense2.0", "dense3.0", "dense4.0"}, &small, PB_SAMPLE_IMAGE, 0, 0, NULL, 0},
    {0},
};

const struct pb_workload pb_workload_densenet121 = {
    .name = "densenet121",
    .summary = "CIFAR DenseNet-121: conv, dense blocks [6, 12, 24, 16] with transitions, fc",
    .dataset = "cifar100",
    .build = densenet121_build,
    .presets = presets,
};
