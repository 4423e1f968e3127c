/* workloads/models/mlp.c — the multilayer perceptron 784-256-256-256-10 (for Fashion-MNIST:
 * in = C·H·W of the sample). Each linear layer and each ReLU is a block of its own,
 * so the chain can be cut into up to 8 stages. Checkpoint keys: fc1.weight … fc4.bias, the
 * state_dict of a module of Linear layers fc1 … fc4 (older checkpoints named them
 * "stage<k>.fc<i>.linear.*": legacy_name). */
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
        struct pb_block *b = pb_model_top_block(m, name);
        pb_block_legacy_name(b, pb_block_linear(m, b, name, in, hidden[i]), "linear");
        snprintf(name, sizeof name, "relu%d", i + 1);
        pb_block_relu(m, pb_model_block(m, name), "relu");
        in = hidden[i];
    }
    struct pb_block *b = pb_model_top_block(m, "fc4");
    pb_block_legacy_name(b, pb_block_linear(m, b, "fc4", in, nclasses), "linear");
    return 0;
}

const struct pb_workload pb_workload_mlp = {
    .name = "mlp",
    .summary = "multilayer perceptron 784-256-256-256-10, 8 blocks",
    .dataset = "fashion-mnist",
    .build = mlp_build,
};
