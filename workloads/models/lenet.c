/* workloads/models/lenet.c — a small LeNet-style CNN with convolution, batch-norm, max-pooling
 * and dropout, for 1×28×28 images: conv5x5(16, pad 2)+BN, ReLU, pool 2, conv5x5(32)+BN,
 * ReLU+pool 2, flatten+fc(128)+ReLU, dropout 0.5, fc(84)+ReLU, fc(classes): 9 blocks.
 * Checkpoint keys: conv1, bn1, conv2, bn2, fc1, fc2, fc3 (.weight, .bias, the BatchNorms'
 * running statistics), the state_dict of tests/fixtures/fixtures_torchnames.py's LeNet
 * (older checkpoints named them "stage<k>.<block>.conv|bn|linear.*": legacy_name). */
#include "workloads/models/workload.h"

static int lenet_build(struct pb_model *m, const struct pb_preset *p, struct pb_shape sample,
                       int nclasses, struct pb_err *e)
{
    (void)p;
    int h = (sample.h / 2 - 4) / 2, w = (sample.w / 2 - 4) / 2;
    if (h < 1 || w < 1)
        return pb_err_set(e, "lenet needs images of at least 12x12 (got %dx%d)", sample.h, sample.w);
    pb_model_init(m, "lenet", sample, nclasses);
    struct pb_block *b = pb_model_top_block(m, "conv1");
    pb_block_legacy_name(b, pb_block_conv(m, b, "conv1", sample.c, 16, 5, 5, 1, 2, 2, true),
                         "conv");
    pb_block_legacy_name(b, pb_block_bn(m, b, "bn1", 16), "bn");
    pb_block_relu(m, pb_model_block(m, "relu1"), "relu");
    pb_block_maxpool(m, pb_model_block(m, "pool1"), "pool", 2, 2, 0, false);
    b = pb_model_top_block(m, "conv2");
    pb_block_legacy_name(b, pb_block_conv(m, b, "conv2", 16, 32, 5, 5, 1, 0, 0, true), "conv");
    pb_block_legacy_name(b, pb_block_bn(m, b, "bn2", 32), "bn");
    b = pb_model_block(m, "pool2");
    pb_block_relu(m, b, "relu");
    pb_block_maxpool(m, b, "pool", 2, 2, 0, false);
    b = pb_model_top_block(m, "fc1");
    pb_block_flatten(m, b, "flatten");
    pb_block_legacy_name(b, pb_block_linear(m, b, "fc1", 32 * h * w, 128), "linear");
    pb_block_relu(m, b, "relu");
    pb_block_dropout(m, pb_model_block(m, "drop"), "dropout", 0.5f);
    b = pb_model_top_block(m, "fc2");
    pb_block_legacy_name(b, pb_block_linear(m, b, "fc2", 128, 84), "linear");
    pb_block_relu(m, b, "relu");
    b = pb_model_top_block(m, "fc3");
    pb_block_legacy_name(b, pb_block_linear(m, b, "fc3", 84, nclasses), "linear");
    return 0;
}

const struct pb_workload pb_workload_lenet = {
    .name = "lenet",
    .summary = "LeNet-style CNN (conv+BN, max-pool, dropout), 9 blocks",
    .dataset = "fashion-mnist",
    .build = lenet_build,
};
