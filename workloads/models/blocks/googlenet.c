/* workloads/models/blocks/googlenet.c — the CIFAR GoogLeNet's Inception module
 * (kuangliu/pytorch-cifar) as one block: x [N, cin, H, W] → [N, n1 + n3 + n5 +
 * pool_planes, H, W]. Its four branches are nn.Sequential, so the layers are named by
 * index: b1.0 conv, b1.1 BN, b1.2 ReLU; b2.0–b2.5; b3.0–b3.8; b4.0 max-pool 3/1/1,
 * b4.1–b4.3. Every conv has a bias; BN eps 1e-5. */
#include "workloads/models/blocks.h"

#include <stdio.h>

#include "workloads/models/blocks/nodes.h"

/* Layers <seq>.<i>, <seq>.<i+1>: conv k×k (padding k/2, bias) → BN with the ReLU
 * <seq>.<i+2> fused. */
static int seq_unit(struct pb_model *m, struct pb_block *b, const char *seq, int i, int in,
                    int cin, int cout, int k)
{
    char conv[PB_NAME_MAX], bn[PB_NAME_MAX];
    snprintf(conv, sizeof conv, "%s.%d", seq, i);
    snprintf(bn, sizeof bn, "%s.%d", seq, i + 1);
    return pb_zoo_unit(m, b, conv, bn, in, cin, cout, k, k, 1, k / 2, k / 2, true, 1e-5f);
}

int pb_zoo_googlenet_inception(struct pb_model *m, const char *name, int cin, int n1, int n3r,
                               int n3, int n5r, int n5, int pool_planes)
{
    struct pb_block *b = pb_model_block(m, name);
    int br[4];
    br[0] = seq_unit(m, b, "b1", 0, -1, cin, n1, 1);
    br[1] = seq_unit(m, b, "b2", 0, -1, cin, n3r, 1);
    br[1] = seq_unit(m, b, "b2", 3, br[1], n3r, n3, 3);
    br[2] = seq_unit(m, b, "b3", 0, -1, cin, n5r, 1);
    br[2] = seq_unit(m, b, "b3", 3, br[2], n5r, n5, 3);
    br[2] = seq_unit(m, b, "b3", 6, br[2], n5, n5, 3);
    br[3] = pb_zoo_pool(m, b, "b4.0", -1, PB_POOL_MAX, 3, 1, 1);
    br[3] = seq_unit(m, b, "b4", 1, br[3], cin, pool_planes, 1);
    pb_zoo_concat(m, b, "cat", 4, br);
    return n1 + n3 + n5 + pool_planes;
}
