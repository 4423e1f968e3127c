/* workloads/models/blocks/densenet.c — the CIFAR DenseNet's bottleneck layer and transition
 * (kuangliu/pytorch-cifar), one block each, pre-activation (BN → ReLU → conv, BN eps
 * 1e-5, convs without bias). Layer: x [N, cin, H, W] → [N, growth + cin, H, W] =
 * cat(new features, x); layers bn1, conv1, bn2, conv2. Transition: → [N, cout, H/2,
 * W/2]; layers bn, conv. */
#include "workloads/models/blocks.h"

#include "workloads/models/blocks/nodes.h"

#define EPS 1e-5f

int pb_zoo_dense_layer(struct pb_model *m, const char *name, int cin, int growth)
{
    PB_CHECK(cin >= 1 && growth >= 1);
    struct pb_block *b = pb_model_block(m, name);
    int x = pb_zoo_bn(m, b, "bn1", -1, cin, EPS, true);
    x = pb_zoo_conv(m, b, "conv1", x, cin, 4 * growth, 1, 1, 1, 0, 0, false);
    x = pb_zoo_bn(m, b, "bn2", x, 4 * growth, EPS, true);
    int cat[2] = {pb_zoo_conv(m, b, "conv2", x, 4 * growth, growth, 3, 3, 1, 1, 1, false), -1};
    pb_zoo_concat(m, b, "cat", 2, cat);
    return cin + growth;
}

int pb_zoo_transition(struct pb_model *m, const char *name, int cin, int cout)
{
    PB_CHECK(cin >= 1 && cout >= 1);
    struct pb_block *b = pb_model_block(m, name);
    int x = pb_zoo_bn(m, b, "bn", -1, cin, EPS, true);
    x = pb_zoo_conv(m, b, "conv", x, cin, cout, 1, 1, 1, 0, 0, false);
    pb_zoo_pool(m, b, "avg_pool", x, PB_POOL_AVG, 2, 2, 0);
    return cout;
}
