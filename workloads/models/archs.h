/* workloads/models/archs.h — the widths and depths a preset's `arch` points at, for the
 * models whose tests build them at sizes of their own (tests/model/test_torchnames.c: PyTorch
 * round trips at a few KiB of weights). */
#ifndef PB_ARCHS_H
#define PB_ARCHS_H

#include <stdbool.h>

/* resnet101.c: torchvision's ResNet of Bottlenecks */
struct resnet_arch {
    int layers[4];           /* Bottleneck blocks per layer */
    int width;               /* layer1's width; each next layer doubles it */
    int stem_k, stem_s, stem_p;
};

/* residual_lstm.c */
struct rlstm_arch {
    int dim;  /* E = H */
};

/* gnmt.c. per_sentence: the gradient of the loss summed over a sentence's tokens and
 * averaged over the sentences, as the reference trainer back-propagates it (train.py:
 * the criterion summed, divided by the batch); else the mean per token, as the loss is
 * reported */
struct gnmt_arch {
    int hidden, enc_layers, dec_layers;
    bool per_sentence;
};

#endif
