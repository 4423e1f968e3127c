/* workloads/models/blocks.h — the zoo's composite blocks as block graphs (design §3.1): the
 * ResNet bottleneck, Inception-V3's modules A–E, the CIFAR GoogLeNet Inception module,
 * the DenseNet bottleneck layer and transition. Each builder appends ONE block to the
 * model (so a pipeline may cut before or after it, never inside) and returns the
 * block's output channel count; spatial sizes are inferred at pb_model_finalize.
 * Layer names inside a block follow the PyTorch definition's attribute paths
 * (e.g. "conv1", "bn1", "downsample.0", "branch7x7_2.conv"), so checkpoints read
 * like the PyTorch state_dict. Widths inside the Inception-V3 modules are divided by
 * `div` (1 = torchvision's exact module; the small presets pass 4–8), each at least 1:
 * torchvision's constants and the pool_features / c7 arguments alike (pass
 * torchvision's values; cin is the real input channel count, never divided). */
#ifndef PB_ZOO_BLOCKS_H
#define PB_ZOO_BLOCKS_H

#include "harness/model/model.h"

/* Nodes inside block b: conv (no bias) → BatchNorm(eps) → ReLU, reading node `in`
 * (-1 = the block's input); returns the ReLU's node index. torchvision's BasicConv2d
 * (eps 1e-3) and the conv-BN-ReLU units of the other blocks (eps 1e-5). The layers are
 * named as BasicConv2d's attributes under `name`: "<name>.conv", "<name>.bn",
 * "<name>.relu" ("conv", "bn", "relu" when name is ""). */
int pb_zoo_conv_bn_relu(struct pb_model *m, struct pb_block *b, const char *name, int in, int cin,
                        int cout, int kh, int kw, int stride, int ph, int pw, float bn_eps);

/* torchvision's Bottleneck (ResNet v1.5: the stride on the 3×3 conv), expansion 4:
 * 1×1 (width) → 3×3 stride (width) → 1×1 (4·width), each + BN, ReLU after the add;
 * the projection shortcut (1×1 conv stride + BN, "downsample.0/1") when stride != 1
 * or cin != 4·width, else the identity. Returns 4·width. */
int pb_zoo_bottleneck(struct pb_model *m, const char *name, int cin, int width, int stride);

/* torchvision 0.14's Inception-V3 modules (BasicConv2d everywhere, eps 1e-3; branch
 * outputs concatenated in torchvision's order). A: branches 1×1 64, 5×5 (48 → 64),
 * double 3×3 (64 → 96 → 96), avg-pool 3/1/1 → 1×1 pool_features. B (Mixed_6a):
 * 3×3/2 384, double 3×3 (64 → 96 → 96/2), max-pool 3/2. C: 1×1 192, 7×7 factorised
 * (c7: 1×7, 7×1 → 192), double 7×7 (c7: 7×1, 1×7, 7×1, 1×7 → 192), avg-pool → 1×1 192.
 * D (Mixed_7a): 1×1 192 → 3×3/2 320, 1×1 192 → 1×7 → 7×1 → 3×3/2 192, max-pool 3/2.
 * E: 1×1 320, 1×1 384 → [1×3, 3×1], 1×1 448 → 3×3 384 → [1×3, 3×1], avg-pool → 1×1 192. */
int pb_zoo_inception_a(struct pb_model *m, const char *name, int cin, int pool_features, int div);
int pb_zoo_inception_b(struct pb_model *m, const char *name, int cin, int div);
int pb_zoo_inception_c(struct pb_model *m, const char *name, int cin, int c7, int div);
int pb_zoo_inception_d(struct pb_model *m, const char *name, int cin, int div);
int pb_zoo_inception_e(struct pb_model *m, const char *name, int cin, int div);

/* The CIFAR GoogLeNet's Inception module (kuangliu/pytorch-cifar, which the paper's code
 * uses): branches 1×1 n1; 1×1 n3r → 3×3 n3; 1×1 n5r → 3×3 n5 → 3×3 n5 (the 5×5 as two
 * 3×3); max-pool 3/1/1 → 1×1 pool_planes; every conv with bias and followed by BN
 * (eps 1e-5) + ReLU. Returns n1 + n3 + n5 + pool_planes. */
int pb_zoo_googlenet_inception(struct pb_model *m, const char *name, int cin, int n1, int n3r,
                               int n3, int n5r, int n5, int pool_planes);

/* The CIFAR DenseNet's bottleneck layer (kuangliu/pytorch-cifar): BN-ReLU-conv 1×1
 * (4·growth, no bias)-BN-ReLU-conv 3×3 pad 1 (growth, no bias), then the channel concat
 * [new features, input] (kuangliu's order). Returns cin + growth. */
int pb_zoo_dense_layer(struct pb_model *m, const char *name, int cin, int growth);
/* The DenseNet transition: BN-ReLU-conv 1×1 (cout, no bias)-avg-pool 2/2. Returns cout. */
int pb_zoo_transition(struct pb_model *m, const char *name, int cin, int cout);

#endif
