/* workloads/models/resnet101.c — ResNet-101 as torchvision 0.14 defines it (semantics §5.1): the stem
 * conv 7×7/2 pad 3 (3→64, no bias) + BN + ReLU + max-pool 3/2 pad 1; four layers of
 * Bottleneck blocks (v1.5, expansion 4; workloads/models/blocks.h) [3, 4, 23, 3] of widths 64,
 * 128, 256, 512, the first block of layers 2–4 with stride 2; adaptive average pool to
 * 1×1, fc 2048 → 1000. Init as the definition's: convs Kaiming normal (fan_out, ReLU),
 * BN weight 1 and bias 0, the fc PyTorch's default (zero_init_residual off). One block
 * for the stem, one per Bottleneck, one for the head: 35 blocks; tensors named as
 * torchvision's state_dict (conv1, bn1, layer3.12.conv2, ..., fc).
 *
 * Quirk kept (paper): the 1000-way head on Tiny-ImageNet's 200 classes.
 * `small`: 32×32 inputs, the stem conv 3×3/1 pad 1 (the max-pool kept), widths ÷4 (16,
 * 32, 64, 128), layers [1, 2, 5, 1]; its cut splits layer3 as the paper's does
 * (stem + layer1 / layer2 + layer3's first / the next 2 / the last 2 + layer4 + head). */
#include <stdio.h>

#include "workloads/models/archs.h"
#include "workloads/models/blocks.h"
#include "workloads/models/workload.h"

static const struct resnet_arch paper = {{3, 4, 23, 3}, 64, 7, 2, 3};
static const struct resnet_arch small = {{1, 2, 5, 1}, 16, 3, 1, 1};

static int resnet101_build(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                           int nclasses, struct pb_err *e)
{
    (void)e;
    const struct resnet_arch *a = p->arch;
    pb_model_init(m, "resnet101", sample, nclasses);
    struct pb_block *b = pb_model_top_block(m, "stem");
    pb_block_conv(m, b, "conv1", sample.c, a->width, a->stem_k, a->stem_k, a->stem_s, a->stem_p,
                  a->stem_p, false);
    pb_block_bn_relu(m, b, "bn1", a->width);
    pb_block_maxpool(m, b, "maxpool", 3, 2, 1, false);
    int cin = a->width;
    char name[32];
    for (int l = 0; l < 4; l++)
        for (int i = 0; i < a->layers[l]; i++) {
            snprintf(name, sizeof name, "layer%d.%d", l + 1, i);
            cin = pb_zoo_bottleneck(m, name, cin, a->width << l, i == 0 && l > 0 ? 2 : 1);
        }
    b = pb_model_top_block(m, "fc");
    pb_block_gap(m, b, "avgpool");
    pb_block_flatten(m, b, "flatten");
    pb_block_linear(m, b, "fc", cin, nclasses);
    pb_model_set_init(m, PB_LAYER_CONV2D, (struct pb_init_spec){.kind = PB_INIT_KAIMING_NORMAL});
    pb_model_set_init(m, PB_LAYER_BATCHNORM2D,
                      (struct pb_init_spec){.kind = PB_INIT_CONSTANT, .value = 1.0f,
                                            .zero_bias = true});
    return 0;
}

/* The paper's cut (semantics §5.3): stem + layer1 / layer2 + the first 3 blocks of layer3 / the next 10 /
 * the last 10 + layer4 + avgpool + fc. */
static const struct pb_preset presets[] = {
    {"paper", "torchvision ResNet-101 at 224x224, 1000-way head (200 classes used)",
     "tiny-imagenet", 224, false, 1000, {"layer2.0", "layer3.3", "layer3.13"}, &paper,
     PB_SAMPLE_IMAGE, 0, 0, NULL, 0},
    {"small", "32x32, stem 3x3/1, widths /4, Bottlenecks [1, 2, 5, 1]", "tiny-imagenet", 32, false,
     200, {"layer2.0", "layer3.1", "layer3.3"}, &small, PB_SAMPLE_IMAGE, 0, 0, NULL, 0},
    {0},
};

const struct pb_workload pb_workload_resnet101 = {
    .name = "resnet101",
    .summary = "ResNet-101 (torchvision): stem, Bottlenecks [3, 4, 23, 3], fc",
    .dataset = "tiny-imagenet",
    .build = resnet101_build,
    .presets = presets,
};
