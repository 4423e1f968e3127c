/* workloads/models/blocks/common.c — the node helpers of the zoo's blocks (nodes.h) and the
 * conv-BN-ReLU unit, torchvision's BasicConv2d (workloads/models/blocks.h). */
#include "workloads/models/blocks.h"

#include <stdio.h>

#include "workloads/models/blocks/nodes.h"

int pb_zoo_conv(struct pb_model *m, struct pb_block *b, const char *name, int in, int cin,
                int cout, int kh, int kw, int stride, int ph, int pw, bool bias)
{
    PB_CHECK(cin >= 1 && cout >= 1 && kh >= 1 && kw >= 1 && stride >= 1 && ph >= 0 && pw >= 0);
    struct pb_layer_cfg cfg = {.kind = PB_LAYER_CONV2D,
                               .conv = {cin, cout, kh, kw, stride, stride, ph, pw, bias}};
    return pb_block_node(m, b, name, &cfg, 1, &in);
}

int pb_zoo_bn(struct pb_model *m, struct pb_block *b, const char *name, int in, int channels,
              float eps, bool relu)
{
    PB_CHECK(channels >= 1 && eps > 0);
    struct pb_layer_cfg cfg = {.kind = PB_LAYER_BATCHNORM2D, .channels = channels, .eps = eps,
                               .momentum = 0.1f, .relu = relu};
    return pb_block_node(m, b, name, &cfg, 1, &in);
}

int pb_zoo_pool(struct pb_model *m, struct pb_block *b, const char *name, int in,
                enum pb_pool_kind kind, int k, int stride, int pad)
{
    PB_CHECK(k >= 1 && stride >= 1 && pad >= 0);
    struct pb_layer_cfg cfg = {
        .kind = kind == PB_POOL_MAX ? PB_LAYER_MAXPOOL2D : PB_LAYER_AVGPOOL2D,
        .pool = {kind, k, k, stride, stride, pad, pad, false, false}};
    return pb_block_node(m, b, name, &cfg, 1, &in);
}

int pb_zoo_concat(struct pb_model *m, struct pb_block *b, const char *name, int n, const int *in)
{
    PB_CHECK(n >= 2);
    struct pb_layer_cfg cfg = {.kind = PB_LAYER_CONCAT};
    return pb_block_node(m, b, name, &cfg, n, in);
}

int pb_zoo_add(struct pb_model *m, struct pb_block *b, const char *name, int a, int c, bool relu)
{
    struct pb_layer_cfg cfg = {.kind = PB_LAYER_ADD, .relu = relu};
    int in[2] = {a, c};
    return pb_block_node(m, b, name, &cfg, 2, in);
}

int pb_zoo_unit(struct pb_model *m, struct pb_block *b, const char *conv, const char *bn, int in,
                int cin, int cout, int kh, int kw, int stride, int ph, int pw, bool bias,
                float bn_eps)
{
    int x = pb_zoo_conv(m, b, conv, in, cin, cout, kh, kw, stride, ph, pw, bias);
    return pb_zoo_bn(m, b, bn, x, cout, bn_eps, true);
}

int pb_zoo_width(int width, int div)
{
    PB_CHECK(width >= 1 && div >= 1);
    return width / div > 1 ? width / div : 1;
}

/* BasicConv2d's attribute path `name`: layers "<name>.conv" and "<name>.bn", its ReLU
 * fused into the BN (without the dot for an empty name). */
int pb_zoo_conv_bn_relu(struct pb_model *m, struct pb_block *b, const char *name, int in, int cin,
                        int cout, int kh, int kw, int stride, int ph, int pw, float bn_eps)
{
    char conv[PB_NAME_MAX], bn[PB_NAME_MAX];
    const char *dot = *name ? "." : "";
    PB_CHECK(snprintf(conv, sizeof conv, "%s%sconv", name, dot) < (int)sizeof conv);
    snprintf(bn, sizeof bn, "%s%sbn", name, dot);
    return pb_zoo_unit(m, b, conv, bn, in, cin, cout, kh, kw, stride, ph, pw, false, bn_eps);
}
