/* workloads/models/mlp.c — the multilayer perceptron 784-256-256-256-10 (for Fashion-MNIST:
 * in = C·H·W of the sample). Each linear layer and each ReLU is a block of its own,
 * so the chain can be cut into up to 8 stages. */
#include <stdio.h>

#include "workloads/models/workload.h"

static int mlp_build(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                     int nclasses, struct pb_err *e)
{
    (void)p;
    (void)e;
    pb_model_init(m, "mlp", sample, nclasses);
    pb_block_flatten(m, pb_model_block(m, "flatten"), "flatten");
    int in = sample.c * sample.h * sample.w;
    const int hidden[3] = {256, 256, 256};
    char name[16];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "fc%d", i + 1);
        pb_block_linear(m, pb_model_block(m, name), "linear", in, hidden[i]);
        snprintf(name, sizeof name, "relu%d", i + 1);
        pb_block_relu(m, pb_model_block(m, name), "relu");
        in = hidden[i];
    }
    pb_block_linear(m, pb_model_block(m, "fc4"), "linear", in, nclasses);
    return 0;
}

const struct pb_workload pb_workload_mlp = {
    .name = "mlp",
    .summary = "multilayer perceptron 784-256-256-256-10, 8 blocks",
    .dataset = "fashion-mnist",
    .build = mlp_build,
};
