/* workloads/models/mlp_deep.c — a deep uniform perceptron: 784-512×8-10, each linear layer
 * with its ReLU one block. A stack of equal layers partitions evenly at any D, like
 * the repeated layers of large models; the pipeline benchmark uses it for stages of
 * equal cost. Checkpoint keys: fc1.weight … fc8.bias, out.weight, out.bias (a module of
 * Linear layers fc1 … fc8 and out; older checkpoints named them "stage<k>.<block>.linear.*":
 * legacy_name). */
#include <stdio.h>

#include "workloads/models/workload.h"

#define MLP_DEEP_LAYERS 8
#define MLP_DEEP_WIDTH 512

static int mlp_deep_build(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                          int nclasses, struct pb_err *e)
{
    (void)p;
    (void)e;
    pb_model_init(m, "mlp-deep", sample, nclasses);
    pb_block_flatten(m, pb_model_block(m, "flatten"), "flatten");
    int in = sample.c * sample.h * sample.w;
    char name[16];
    for (int i = 0; i < MLP_DEEP_LAYERS; i++) {
        snprintf(name, sizeof name, "fc%d", i + 1);
        struct pb_block *b = pb_model_top_block(m, name);
        pb_block_legacy_name(b, pb_block_linear(m, b, name, in, MLP_DEEP_WIDTH), "linear");
        pb_block_relu(m, b, "relu");
        in = MLP_DEEP_WIDTH;
    }
    struct pb_block *b = pb_model_top_block(m, "out");
    pb_block_legacy_name(b, pb_block_linear(m, b, "out", in, nclasses), "linear");
    return 0;
}

const struct pb_workload pb_workload_mlp_deep = {
    .name = "mlp-deep",
    .summary = "deep uniform perceptron 784-512x8-10 (stages of equal cost), 10 blocks",
    .dataset = "fashion-mnist",
    .build = mlp_deep_build,
};
