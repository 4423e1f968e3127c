/* workloads/models/blocks/resnet.c — torchvision's ResNet Bottleneck (v1.5: the stride on the
 * 3×3 conv) as one block: x [N, cin, H, W] → [N, 4·width, ⌈H/stride⌉, ⌈W/stride⌉].
 * Layers conv1, bn1, conv2, bn2, conv3, bn3 (and downsample.0, downsample.1) as the
 * module's state_dict; BN eps 1e-5; bn1 and bn2 with their ReLUs fused, and the join
 * add with the block's last ReLU. */
#include "workloads/models/blocks.h"

#include "workloads/models/blocks/nodes.h"

int pb_zoo_bottleneck(struct pb_model *m, const char *name, int cin, int width, int stride)
{
    PB_CHECK(cin >= 1 && width >= 1 && stride >= 1);
    const float eps = 1e-5f;
    int cout = 4 * width;
    struct pb_block *b = pb_model_block(m, name);
    int x = pb_zoo_unit(m, b, "conv1", "bn1", -1, cin, width, 1, 1, 1, 0, 0, false, eps);
    x = pb_zoo_unit(m, b, "conv2", "bn2", x, width, width, 3, 3, stride, 1, 1, false, eps);
    x = pb_zoo_conv(m, b, "conv3", x, width, cout, 1, 1, 1, 0, 0, false);
    x = pb_zoo_bn(m, b, "bn3", x, cout, eps, false);
    int skip = -1;
    if (stride != 1 || cin != cout) {
        skip = pb_zoo_conv(m, b, "downsample.0", -1, cin, cout, 1, 1, stride, 0, 0, false);
        skip = pb_zoo_bn(m, b, "downsample.1", skip, cout, eps, false);
    }
    pb_zoo_add(m, b, "add", x, skip, true);  /* and its ReLU "relu" */
    return cout;
}
