/* workloads/models/blocks/nodes.h — the node helpers the zoo's block builders share
 * (workloads/models/blocks.h): each adds one layer to block b reading the given node
 * (-1 = the block's input) and returns its node index, so a block's graph is
 * written with explicit inputs (branches, skips, concatenations). */
#ifndef PB_ZOO_BLOCKS_NODES_H
#define PB_ZOO_BLOCKS_NODES_H

#include "harness/model/model.h"

/* conv2d x [N, cin, H, W] → [N, cout, Ho, Wo], kernel kh×kw, stride, padding ph, pw */
int pb_zoo_conv(struct pb_model *m, struct pb_block *b, const char *name, int in, int cin,
                int cout, int kh, int kw, int stride, int ph, int pw, bool bias);
/* BatchNorm2d over `channels`, momentum 0.1 (PyTorch's default); relu: a ReLU fused onto
 * its output (torch's BN, ReLU pair as one layer) */
int pb_zoo_bn(struct pb_model *m, struct pb_block *b, const char *name, int in, int channels,
              float eps, bool relu);
/* max or average pooling k×k, stride, padding pad; average pooling counts the padding
 * (PyTorch's count_include_pad = True, F.avg_pool2d's default) */
int pb_zoo_pool(struct pb_model *m, struct pb_block *b, const char *name, int in,
                enum pb_pool_kind kind, int k, int stride, int pad);
/* channel concatenation [in[0], in[1], ...] of n ≥ 2 nodes */
int pb_zoo_concat(struct pb_model *m, struct pb_block *b, const char *name, int n, const int *in);
/* y = a + c (equal shapes); with relu, max(a + c, 0): the add and its ReLU as one layer */
int pb_zoo_add(struct pb_model *m, struct pb_block *b, const char *name, int a, int c, bool relu);

/* conv → BN(eps) with the ReLU fused, the two layers named as given; returns the BN's
 * node. */
int pb_zoo_unit(struct pb_model *m, struct pb_block *b, const char *conv, const char *bn, int in,
                int cin, int cout, int kh, int kw, int stride, int ph, int pw, bool bias,
                float bn_eps);

/* A width of torchvision's Inception-V3 divided by div, at least 1. */
int pb_zoo_width(int width, int div);

#endif
