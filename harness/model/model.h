/* harness/model/model.h — a model is a chain of blocks; a block is a small graph of
 * layers (a plain layer, a residual bottleneck, an Inception module, a DenseNet
 * layer). One tensor flows between blocks, so a chain can be cut into pipeline
 * stages at any block boundary. Shapes are inferred and checked once, when the
 * model is finalised for a micro-batch size: a chain that does not fit is a clear
 * error then, never a crash later. A model whose blocks need several tensors packs them
 * into the one that flows (workloads/models/gnmt.c: slices and feature concatenations). */
#ifndef PB_MODEL_H
#define PB_MODEL_H

#include "harness/model/layer.h"

struct pb_block {
    char name[PB_NAME_MAX];
    /* Its layers are top-level modules of the model's PyTorch definition: checkpoint
     * tensors are named "<layer>.<param>", leaving the block's name out (a ResNet's stem
     * block holds conv1, bn1, relu and maxpool). Else "<block>.<layer>.<param>". */
    bool top_level;
    int nnodes, cap;
    struct pb_layer *nodes;   /* in topological order; the last node is the output */
    struct pb_shape in_shape, out_shape;
    size_t nparams, nbuffers; /* totals of the nodes */
    double flops;             /* forward FLOPs of the block for one micro-batch */
    size_t act_bytes;         /* bytes the forward keeps for the backward */
};

struct pb_model {
    char name[PB_NAME_MAX];
    int nblocks, cap;
    struct pb_block *blocks;
    struct pb_shape input;    /* one sample: n = 1, c, h, w */
    int nclasses;             /* 0: a feature extractor without a loss (tests) */
    float label_smoothing;
    /* 0: a label per sample, the last block gives logits [batch, nclasses]; T > 0: a
     * label per step (a translation model's next tokens), logits [batch, T, nclasses, 1]
     * and the loss the mean over the batch·T labels other than ignore_label (padding;
     * < 0: none), the loss per token */
    int label_steps, ignore_label;
    /* with label_steps: the backward's objective is the loss summed over each sentence's
     * counted tokens and averaged over the sentences (the paper's GNMT trainer, MLPerf's:
     * dlogits / batch), not the mean per token; the loss recorded is per token either way */
    bool grad_per_sentence;
    int nlayers;              /* uids given so far */
    int batch;                /* micro-batch size after pb_model_finalize */
};

void pb_model_init(struct pb_model *m, const char *name, struct pb_shape sample, int nclasses);
void pb_model_finish(struct pb_model *m);
/* Appends an empty block; nodes are added to the returned block. */
struct pb_block *pb_model_block(struct pb_model *m, const char *name);
/* The same, for a block of top-level modules (pb_block.top_level). */
struct pb_block *pb_model_top_block(struct pb_model *m, const char *name);
/* Sets node `node` of b's legacy_name (layer.h; a static string); returns node. */
int pb_block_legacy_name(struct pb_block *b, int node, const char *legacy);

/* Adds a node reading `nin` inputs (node indices in the block, -1 = block input);
 * returns the new node's index. The pb_block_* helpers below read the previous
 * node (or the block input for the first node). */
int pb_block_node(struct pb_model *m, struct pb_block *b, const char *name,
                  const struct pb_layer_cfg *cfg, int nin, const int *in);
int pb_block_linear(struct pb_model *m, struct pb_block *b, const char *name, int in_f, int out_f);
int pb_block_conv(struct pb_model *m, struct pb_block *b, const char *name, int cin, int cout,
                  int kh, int kw, int stride, int ph, int pw, bool bias);
int pb_block_bn(struct pb_model *m, struct pb_block *b, const char *name, int channels);
int pb_block_relu(struct pb_model *m, struct pb_block *b, const char *name);
/* BatchNorm2d then ReLU as one layer (batchnorm2d with relu): torch's BN, ReLU pair */
int pb_block_bn_relu(struct pb_model *m, struct pb_block *b, const char *name, int channels);
int pb_block_maxpool(struct pb_model *m, struct pb_block *b, const char *name, int k, int stride,
                     int pad, bool ceil_mode);
int pb_block_avgpool(struct pb_model *m, struct pb_block *b, const char *name, int k, int stride,
                     int pad);
int pb_block_gap(struct pb_model *m, struct pb_block *b, const char *name);
int pb_block_dropout(struct pb_model *m, struct pb_block *b, const char *name, float p);
int pb_block_flatten(struct pb_model *m, struct pb_block *b, const char *name);
/* Sequence layers (layer.h's form [B, T, F, 1]): an embedding of `vocab` rows of `dim`
 * (padding_idx < 0: none), a one-layer LSTM, a bidirectional one ([B, T, 2·hidden],
 * packed by the sequences' lengths), the length-masked mean over time. An LSTM of more
 * layers, with dropout between them, is a PB_LAYER_LSTM node of cfg.num_layers and cfg.p
 * (pb_block_node). */
int pb_block_embedding(struct pb_model *m, struct pb_block *b, const char *name, int vocab, int dim,
                       int padding_idx);
int pb_block_lstm(struct pb_model *m, struct pb_block *b, const char *name, int in_f, int hidden);
int pb_block_bilstm(struct pb_model *m, struct pb_block *b, const char *name, int in_f, int hidden);
int pb_block_seq_mean(struct pb_model *m, struct pb_block *b, const char *name);
/* The concatenation of nin nodes' sequences over features, [B, T, ΣF_i, 1]; the slice
 * [lo, hi) of node `from`'s axis 1 (time) or 2 (features) (-1: the block input). */
int pb_block_feature_concat(struct pb_model *m, struct pb_block *b, const char *name, int nin,
                            const int *in);
int pb_block_slice(struct pb_model *m, struct pb_block *b, const char *name, int from, int axis,
                   int lo, int hi);
/* GNMT's normalised Bahdanau attention of node `queries` [B, Tq, query_f, 1] over node
 * `keys` [B, Tk, key_f, 1] (-1: the block input), masked by the source lengths:
 * the context [B, Tq, key_f, 1]. */
int pb_block_attention(struct pb_model *m, struct pb_block *b, const char *name, int queries,
                       int keys, int query_f, int key_f, int units);

/* Sets the initialisation of every layer of `kind` (linear, conv2d, batchnorm2d,
 * embedding, lstm) in the model, as a definition's `for m in self.modules(): if
 * isinstance(m, nn.Conv2d): ...` loop does (layer.h); returns how many layers it set.
 * Call once the blocks are built. */
int pb_model_set_init(struct pb_model *m, enum pb_layer_kind kind, struct pb_init_spec spec);

/* Infers and checks every shape for micro-batches of `batch` samples, and lays out
 * each block's parameters (offsets relative to the block). The last block must give
 * [batch, nclasses] logits when nclasses > 0. */
int pb_model_finalize(struct pb_model *m, int batch, struct pb_err *e);

/* Whether a layer of blocks [first, last) reads the sequences' lengths (a bidirectional
 * LSTM, the attention, the masked mean over time): a stage holding them takes them. */
bool pb_model_reads_lengths(const struct pb_model *m, int first, int last);

/* Parameter count of blocks [first, last). */
size_t pb_model_param_count(const struct pb_model *m, int first, int last);

#endif
