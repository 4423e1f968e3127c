/* workloads/models/vgg16.c — the CIFAR VGG-16 with BatchNorm the paper's code trains on CIFAR-100
 * (semantics §5.1; kuangliu/pytorch-cifar's VGG('VGG16')): 13 conv 3×3 pad 1 + BN + ReLU in five
 * groups (64, 64 | 128, 128 | 256 ×3 | 512 ×3 | 512 ×3), a max-pool 2/2 after each group,
 * AvgPool2d(1, 1), then Linear 512 → 100. Init as the definition's: convs Kaiming
 * normal (fan_out, ReLU) with zero bias, BN weight 1 and bias 0, the linear N(0, 0.01)
 * with zero bias. One block per conv, per pool, and the head: 19 blocks. Tensors are
 * named as the PyTorch state_dict: features.<i> (conv, BN, ReLU, …, pools counted as
 * nn.Sequential counts them) and classifier. Its features are torchvision's vgg16_bn
 * features, layer for layer.
 *
 * 32×32 inputs only: five pools leave 1×1 for the 512 → 100 classifier.
 * `small`: one conv in each of the first two groups and two in the others, channels ÷4
 * (16 | 32 | 64 ×2 | 128 ×2 | 128 ×2); the same cut. */
#include <stdio.h>

#include "workloads/models/workload.h"

#define GROUPS 5

struct vgg_arch {
    int convs[GROUPS];   /* convs per group */
    int width[GROUPS];   /* their channels */
};

static const struct vgg_arch paper = {{2, 2, 3, 3, 3}, {64, 128, 256, 512, 512}};
static const struct vgg_arch small = {{1, 1, 2, 2, 2}, {16, 32, 64, 128, 128}};

static int vgg16_build(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                       int nclasses, struct pb_err *e)
{
    const struct vgg_arch *a = p->arch;
    if (sample.h != 32 || sample.w != 32)
        return pb_err_set(e, "vgg16 (the CIFAR VGG-16) needs 32x32 inputs: its five max-pools "
                             "leave 1x1 for the classifier (got %dx%d)", sample.h, sample.w);
    pb_model_init(m, "vgg16", sample, nclasses);
    int idx = 0, cin = sample.c;
    char block[32], conv[32], bn[32];
    for (int g = 0; g < GROUPS; g++) {
        for (int i = 0; i < a->convs[g]; i++) {
            snprintf(block, sizeof block, "conv%d_%d", g + 1, i + 1);
            snprintf(conv, sizeof conv, "features.%d", idx);
            snprintf(bn, sizeof bn, "features.%d", idx + 1);
            idx += 3;  /* features.idx + 2, the ReLU, fused into the BN */
            struct pb_block *b = pb_model_top_block(m, block);
            pb_block_conv(m, b, conv, cin, a->width[g], 3, 3, 1, 1, 1, true);
            pb_block_bn_relu(m, b, bn, a->width[g]);
            cin = a->width[g];
        }
        snprintf(block, sizeof block, "pool%d", g + 1);
        snprintf(conv, sizeof conv, "features.%d", idx++);
        pb_block_maxpool(m, pb_model_top_block(m, block), conv, 2, 2, 0, false);
    }
    struct pb_block *b = pb_model_top_block(m, "fc");
    snprintf(conv, sizeof conv, "features.%d", idx);
    pb_block_avgpool(m, b, conv, 1, 1, 0);
    pb_block_flatten(m, b, "flatten");
    pb_block_linear(m, b, "classifier", cin, nclasses);
    pb_model_set_init(m, PB_LAYER_CONV2D,
                      (struct pb_init_spec){.kind = PB_INIT_KAIMING_NORMAL, .zero_bias = true});
    pb_model_set_init(m, PB_LAYER_BATCHNORM2D,
                      (struct pb_init_spec){.kind = PB_INIT_CONSTANT, .value = 1.0f,
                                            .zero_bias = true});
    pb_model_set_init(m, PB_LAYER_LINEAR,
                      (struct pb_init_spec){.kind = PB_INIT_NORMAL, .std = 0.01f,
                                            .zero_bias = true});
    return 0;
}

/* The paper's cut (semantics §5.3): conv1_1, conv1_2, pool / conv2_1, conv2_2, pool, conv3_1–3_3 / pool,
 * conv4_1–4_3 / pool, conv5_1–5_3, pool, avgpool, fc. */
static const struct pb_preset presets[] = {
    {"paper", "CIFAR VGG-16-BN, 32x32, Linear 512 -> 100", "cifar100", 32, false, 100,
     {"conv2_1", "pool3", "pool4"}, &paper, PB_SAMPLE_IMAGE, 0, 0, NULL, 0},
    {"small", "convs per group 1,1,2,2,2, channels /4", "cifar100", 32, false, 100,
     {"conv2_1", "pool3", "pool4"}, &small, PB_SAMPLE_IMAGE, 0, 0, NULL, 0},
    {0},
};

const struct pb_workload pb_workload_vgg16 = {
    .name = "vgg16",
    .summary = "CIFAR VGG-16 with BatchNorm: 13 conv 3x3 + BN + ReLU, 5 max-pools, fc",
    .dataset = "cifar100",
    .build = vgg16_build,
    .presets = presets,
};
