/* workloads/models/blocks/inception_v3.c — torchvision 0.14's Inception-V3 modules A–E, one
 * block each: BasicConv2d units (conv without bias, BN eps 1e-3, ReLU) named by the
 * module's attribute paths ("branch7x7_2.conv", ...), the branches concatenated in
 * torchvision's order. Every width of the module — torchvision's constants and the
 * pool_features / channels_7x7 arguments alike — is divided by div (at least 1);
 * div = 1 is torchvision's module exactly. x [N, cin, H, W]: A, C, E keep H×W; B, D
 * give ⌊(H − 3)/2⌋ + 1. */
#include "workloads/models/blocks.h"

#include "workloads/models/blocks/nodes.h"

#define EPS 1e-3f

/* A BasicConv2d, square kernel k, padding p. */
static int unit(struct pb_model *m, struct pb_block *b, const char *name, int in, int cin,
                int cout, int k, int stride, int p)
{
    return pb_zoo_conv_bn_relu(m, b, name, in, cin, cout, k, k, stride, p, p, EPS);
}

/* 3×3 average pool, stride 1, padding 1 counted (F.avg_pool2d's defaults) → 1×1. */
static int pool_branch(struct pb_model *m, struct pb_block *b, int cin, int cout)
{
    int x = pb_zoo_pool(m, b, "avg_pool", -1, PB_POOL_AVG, 3, 1, 1);
    return unit(m, b, "branch_pool", x, cin, cout, 1, 1, 0);
}

int pb_zoo_inception_a(struct pb_model *m, const char *name, int cin, int pool_features, int div)
{
    int w64 = pb_zoo_width(64, div), w48 = pb_zoo_width(48, div), w96 = pb_zoo_width(96, div);
    int wp = pb_zoo_width(pool_features, div);
    struct pb_block *b = pb_model_block(m, name);
    int br[4];
    br[0] = unit(m, b, "branch1x1", -1, cin, w64, 1, 1, 0);
    br[1] = unit(m, b, "branch5x5_1", -1, cin, w48, 1, 1, 0);
    br[1] = unit(m, b, "branch5x5_2", br[1], w48, w64, 5, 1, 2);
    br[2] = unit(m, b, "branch3x3dbl_1", -1, cin, w64, 1, 1, 0);
    br[2] = unit(m, b, "branch3x3dbl_2", br[2], w64, w96, 3, 1, 1);
    br[2] = unit(m, b, "branch3x3dbl_3", br[2], w96, w96, 3, 1, 1);
    br[3] = pool_branch(m, b, cin, wp);
    pb_zoo_concat(m, b, "cat", 4, br);
    return w64 + w64 + w96 + wp;
}

int pb_zoo_inception_b(struct pb_model *m, const char *name, int cin, int div)
{
    int w384 = pb_zoo_width(384, div), w64 = pb_zoo_width(64, div), w96 = pb_zoo_width(96, div);
    struct pb_block *b = pb_model_block(m, name);
    int br[3];
    br[0] = unit(m, b, "branch3x3", -1, cin, w384, 3, 2, 0);
    br[1] = unit(m, b, "branch3x3dbl_1", -1, cin, w64, 1, 1, 0);
    br[1] = unit(m, b, "branch3x3dbl_2", br[1], w64, w96, 3, 1, 1);
    br[1] = unit(m, b, "branch3x3dbl_3", br[1], w96, w96, 3, 2, 0);
    br[2] = pb_zoo_pool(m, b, "max_pool", -1, PB_POOL_MAX, 3, 2, 0);
    pb_zoo_concat(m, b, "cat", 3, br);
    return w384 + w96 + cin;
}

int pb_zoo_inception_c(struct pb_model *m, const char *name, int cin, int c7, int div)
{
    int w192 = pb_zoo_width(192, div), w7 = pb_zoo_width(c7, div);
    struct pb_block *b = pb_model_block(m, name);
    int br[4];
    br[0] = unit(m, b, "branch1x1", -1, cin, w192, 1, 1, 0);
    br[1] = unit(m, b, "branch7x7_1", -1, cin, w7, 1, 1, 0);
    br[1] = pb_zoo_conv_bn_relu(m, b, "branch7x7_2", br[1], w7, w7, 1, 7, 1, 0, 3, EPS);
    br[1] = pb_zoo_conv_bn_relu(m, b, "branch7x7_3", br[1], w7, w192, 7, 1, 1, 3, 0, EPS);
    br[2] = unit(m, b, "branch7x7dbl_1", -1, cin, w7, 1, 1, 0);
    br[2] = pb_zoo_conv_bn_relu(m, b, "branch7x7dbl_2", br[2], w7, w7, 7, 1, 1, 3, 0, EPS);
    br[2] = pb_zoo_conv_bn_relu(m, b, "branch7x7dbl_3", br[2], w7, w7, 1, 7, 1, 0, 3, EPS);
    br[2] = pb_zoo_conv_bn_relu(m, b, "branch7x7dbl_4", br[2], w7, w7, 7, 1, 1, 3, 0, EPS);
    br[2] = pb_zoo_conv_bn_relu(m, b, "branch7x7dbl_5", br[2], w7, w192, 1, 7, 1, 0, 3, EPS);
    br[3] = pool_branch(m, b, cin, w192);
    pb_zoo_concat(m, b, "cat", 4, br);
    return 4 * w192;
}

int pb_zoo_inception_d(struct pb_model *m, const char *name, int cin, int div)
{
    int w192 = pb_zoo_width(192, div), w320 = pb_zoo_width(320, div);
    struct pb_block *b = pb_model_block(m, name);
    int br[3];
    br[0] = unit(m, b, "branch3x3_1", -1, cin, w192, 1, 1, 0);
    br[0] = unit(m, b, "branch3x3_2", br[0], w192, w320, 3, 2, 0);
    br[1] = unit(m, b, "branch7x7x3_1", -1, cin, w192, 1, 1, 0);
    br[1] = pb_zoo_conv_bn_relu(m, b, "branch7x7x3_2", br[1], w192, w192, 1, 7, 1, 0, 3, EPS);
    br[1] = pb_zoo_conv_bn_relu(m, b, "branch7x7x3_3", br[1], w192, w192, 7, 1, 1, 3, 0, EPS);
    br[1] = unit(m, b, "branch7x7x3_4", br[1], w192, w192, 3, 2, 0);
    br[2] = pb_zoo_pool(m, b, "max_pool", -1, PB_POOL_MAX, 3, 2, 0);
    pb_zoo_concat(m, b, "cat", 3, br);
    return w320 + w192 + cin;
}

/* torchvision concatenates [1×1, cat(3×3 a, b), cat(dbl a, b), pool]: one concat of the
 * six tensors in that order is the same tensor. */
int pb_zoo_inception_e(struct pb_model *m, const char *name, int cin, int div)
{
    int w320 = pb_zoo_width(320, div), w384 = pb_zoo_width(384, div);
    int w448 = pb_zoo_width(448, div), w192 = pb_zoo_width(192, div);
    struct pb_block *b = pb_model_block(m, name);
    int br[6];
    br[0] = unit(m, b, "branch1x1", -1, cin, w320, 1, 1, 0);
    int x = unit(m, b, "branch3x3_1", -1, cin, w384, 1, 1, 0);
    br[1] = pb_zoo_conv_bn_relu(m, b, "branch3x3_2a", x, w384, w384, 1, 3, 1, 0, 1, EPS);
    br[2] = pb_zoo_conv_bn_relu(m, b, "branch3x3_2b", x, w384, w384, 3, 1, 1, 1, 0, EPS);
    x = unit(m, b, "branch3x3dbl_1", -1, cin, w448, 1, 1, 0);
    x = unit(m, b, "branch3x3dbl_2", x, w448, w384, 3, 1, 1);
    br[3] = pb_zoo_conv_bn_relu(m, b, "branch3x3dbl_3a", x, w384, w384, 1, 3, 1, 0, 1, EPS);
    br[4] = pb_zoo_conv_bn_relu(m, b, "branch3x3dbl_3b", x, w384, w384, 3, 1, 1, 1, 0, EPS);
    br[5] = pool_branch(m, b, cin, w192);
    pb_zoo_concat(m, b, "cat", 6, br);
    return w320 + 4 * w384 + w192;
}
