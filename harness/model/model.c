/* harness/model/model.c — building a chain of blocks, and inferring and checking its
 * shapes and parameter layout (model.h). */
#include "harness/model/model.h"

#include <stdio.h>
#include <string.h>

#include "harness/model/layers/layer_util.h"

void pb_model_init(struct pb_model *m, const char *name, struct pb_shape sample, int nclasses)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->input = sample;
    m->input.n = 1;
    m->nclasses = nclasses;
    m->ignore_label = -1;
}

void pb_model_finish(struct pb_model *m)
{
    for (int i = 0; i < m->nblocks; i++)
        free(m->blocks[i].nodes);
    free(m->blocks);
    memset(m, 0, sizeof *m);
}

struct pb_block *pb_model_block(struct pb_model *m, const char *name)
{
    if (m->nblocks == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 16;
        m->blocks = realloc(m->blocks, (size_t)m->cap * sizeof *m->blocks);
        PB_CHECK(m->blocks != NULL);
    }
    struct pb_block *b = &m->blocks[m->nblocks++];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    return b;
}

struct pb_block *pb_model_top_block(struct pb_model *m, const char *name)
{
    struct pb_block *b = pb_model_block(m, name);
    b->top_level = true;
    return b;
}

int pb_block_legacy_name(struct pb_block *b, int node, const char *legacy)
{
    PB_CHECK(node >= 0 && node < b->nnodes);
    b->nodes[node].legacy_name = legacy;
    return node;
}

int pb_block_node(struct pb_model *m, struct pb_block *b, const char *name,
                  const struct pb_layer_cfg *cfg, int nin, const int *in)
{
    PB_CHECK(nin >= 1 && nin <= PB_LAYER_MAX_INPUTS);
    if (b->nnodes == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 8;
        b->nodes = realloc(b->nodes, (size_t)b->cap * sizeof *b->nodes);
        PB_CHECK(b->nodes != NULL);
    }
    struct pb_layer *l = &b->nodes[b->nnodes];
    memset(l, 0, sizeof *l);
    l->ops = pb_layer_ops_for(cfg->kind);
    l->cfg = *cfg;
    snprintf(l->name, sizeof l->name, "%s", name);
    l->uid = m->nlayers++;
    /* a ReLU fused into its BN or residual add keeps the uid it had as a layer of its own,
       so that the layers after it draw the same initial weights and dropout masks either way */
    if ((cfg->kind == PB_LAYER_BATCHNORM2D || cfg->kind == PB_LAYER_ADD) && cfg->relu)
        m->nlayers++;
    l->nin = nin;
    for (int i = 0; i < nin; i++) {
        PB_CHECK(in[i] >= -1 && in[i] < b->nnodes);
        l->in[i] = in[i];
    }
    return b->nnodes++;
}

static int chain(struct pb_model *m, struct pb_block *b, const char *name, struct pb_layer_cfg cfg)
{
    int prev = b->nnodes - 1;
    return pb_block_node(m, b, name, &cfg, 1, &prev);
}

int pb_block_linear(struct pb_model *m, struct pb_block *b, const char *name, int in_f, int out_f)
{
    return chain(m, b, name, (struct pb_layer_cfg){.kind = PB_LAYER_LINEAR, .in_features = in_f,
                                                   .out_features = out_f, .bias = true});
}

int pb_block_conv(struct pb_model *m, struct pb_block *b, const char *name, int cin, int cout,
                  int kh, int kw, int stride, int ph, int pw, bool bias)
{
    struct pb_conv_desc d = {cin, cout, kh, kw, stride, stride, ph, pw, bias};
    return chain(m, b, name, (struct pb_layer_cfg){.kind = PB_LAYER_CONV2D, .conv = d});
}

/* torch.nn.BatchNorm2d's defaults: eps 1e-5, momentum 0.1 */
static struct pb_layer_cfg bn_cfg(int channels, bool relu)
{
    return (struct pb_layer_cfg){.kind = PB_LAYER_BATCHNORM2D, .channels = channels,
                                 .eps = 1e-5f, .momentum = 0.1f, .relu = relu};
}

int pb_block_bn(struct pb_model *m, struct pb_block *b, const char *name, int channels)
{
    return chain(m, b, name, bn_cfg(channels, false));
}

int pb_block_bn_relu(struct pb_model *m, struct pb_block *b, const char *name, int channels)
{
    return chain(m, b, name, bn_cfg(channels, true));
}

int pb_block_relu(struct pb_model *m, struct pb_block *b, const char *name)
{
    return chain(m, b, name, (struct pb_layer_cfg){.kind = PB_LAYER_RELU});
}

int pb_block_maxpool(struct pb_model *m, struct pb_block *b, const char *name, int k, int stride,
                     int pad, bool ceil_mode)
{
    struct pb_pool_desc d = {PB_POOL_MAX, k, k, stride, stride, pad, pad, ceil_mode, false};
    return chain(m, b, name, (struct pb_layer_cfg){.kind = PB_LAYER_MAXPOOL2D, .pool = d});
}

int pb_block_avgpool(struct pb_model *m, struct pb_block *b, const char *name, int k, int stride,
                     int pad)
{
    struct pb_pool_desc d = {PB_POOL_AVG, k, k, stride, stride, pad, pad, false, false};
    return chain(m, b, name, (struct pb_layer_cfg){.kind = PB_LAYER_AVGPOOL2D, .pool = d});
}

int pb_block_gap(struct pb_model *m, struct pb_block *b, const char *name)
{
    return chain(m, b, name, (struct pb_layer_cfg){.kind = PB_LAYER_GLOBAL_AVGPOOL});
}

int pb_block_dropout(struct pb_model *m, struct pb_block *b, const char *name, float p)
{
    return chain(m, b, name, (struct pb_layer_cfg){.kind = PB_LAYER_DROPOUT, .p = p});
}

int pb_block_flatten(struct pb_model *m, struct pb_block *b, const char *name)
{
    return chain(m, b, name, (struct pb_layer_cfg){.kind = PB_LAYER_FLATTEN});
}

int pb_model_set_init(struct pb_model *m, enum pb_layer_kind kind, struct pb_init_spec spec)
{
    PB_CHECK(kind == PB_LAYER_LINEAR || kind == PB_LAYER_CONV2D || kind == PB_LAYER_BATCHNORM2D ||
             kind == PB_LAYER_EMBEDDING || kind == PB_LAYER_LSTM);
    PB_CHECK((kind != PB_LAYER_EMBEDDING && kind != PB_LAYER_LSTM) ||
             spec.kind != PB_INIT_KAIMING_NORMAL);
    PB_CHECK(kind != PB_LAYER_BATCHNORM2D || spec.kind != PB_INIT_KAIMING_NORMAL);
    int n = 0;
    for (int i = 0; i < m->nblocks; i++)
        for (int j = 0; j < m->blocks[i].nnodes; j++) {
            struct pb_layer *l = &m->blocks[i].nodes[j];
            if (l->cfg.kind == kind) {
                l->cfg.init = spec;
                n++;
            }
        }
    return n;
}

int pb_block_embedding(struct pb_model *m, struct pb_block *b, const char *name, int vocab, int dim,
                       int padding_idx)
{
    return chain(m, b, name, (struct pb_layer_cfg){.kind = PB_LAYER_EMBEDDING, .in_features = vocab,
                                                   .out_features = dim,
                                                   .padding_idx = padding_idx});
}

int pb_block_lstm(struct pb_model *m, struct pb_block *b, const char *name, int in_f, int hidden)
{
    return chain(m, b, name, (struct pb_layer_cfg){.kind = PB_LAYER_LSTM, .in_features = in_f,
                                                   .out_features = hidden, .num_layers = 1});
}

int pb_block_bilstm(struct pb_model *m, struct pb_block *b, const char *name, int in_f, int hidden)
{
    return chain(m, b, name, (struct pb_layer_cfg){.kind = PB_LAYER_LSTM, .in_features = in_f,
                                                   .out_features = hidden, .bidirectional = true,
                                                   .num_layers = 1});
}

int pb_block_attention(struct pb_model *m, struct pb_block *b, const char *name, int queries,
                       int keys, int query_f, int key_f, int units)
{
    int in[2] = {queries, keys};
    return pb_block_node(m, b, name,
                         &(struct pb_layer_cfg){.kind = PB_LAYER_ATTENTION, .in_features = query_f,
                                                .key_features = key_f, .out_features = units},
                         2, in);
}

int pb_block_seq_mean(struct pb_model *m, struct pb_block *b, const char *name)
{
    return chain(m, b, name, (struct pb_layer_cfg){.kind = PB_LAYER_SEQ_MEAN});
}

int pb_block_feature_concat(struct pb_model *m, struct pb_block *b, const char *name, int nin,
                            const int *in)
{
    return pb_block_node(m, b, name, &(struct pb_layer_cfg){.kind = PB_LAYER_FEATURE_CONCAT}, nin,
                         in);
}

int pb_block_slice(struct pb_model *m, struct pb_block *b, const char *name, int from, int axis,
                   int lo, int hi)
{
    return pb_block_node(m, b, name,
                         &(struct pb_layer_cfg){.kind = PB_LAYER_SLICE, .slice_axis = axis,
                                                .slice_lo = lo, .slice_hi = hi},
                         1, &from);
}

static int block_finalize(struct pb_model *m, struct pb_block *b, struct pb_shape in,
                          struct pb_err *e)
{
    if (b->nnodes == 0)
        return pb_err_set(e, "model '%s': block '%s' is empty", m->name, b->name);
    b->in_shape = in;
    b->nparams = b->nbuffers = 0;
    b->flops = 0;
    b->act_bytes = 0;
    for (int i = 0; i < b->nnodes; i++) {
        struct pb_layer *l = &b->nodes[i];
        for (int j = 0; j < l->nin; j++)
            l->in_shape[j] = l->in[j] < 0 ? in : b->nodes[l->in[j]].out_shape;
        if (l->ops->infer(l, l->in_shape, l->nin, &l->out_shape, e))
            return pb_err_prefix(e, "model '%s', block %d ('%s'): ", m->name, (int)(b - m->blocks),
                                 b->name);
        l->param_off = b->nparams;
        l->buffer_off = b->nbuffers;
        b->nparams += l->ops->param_count(l);
        b->nbuffers += l->ops->buffer_count(l);
        b->flops += l->ops->flops(l);
        b->act_bytes += pb_layer_act_bytes(l);
    }
    b->out_shape = b->nodes[b->nnodes - 1].out_shape;
    return 0;
}

int pb_model_finalize(struct pb_model *m, int batch, struct pb_err *e)
{
    if (batch < 1)
        return pb_err_set(e, "the micro-batch size must be at least 1 (got %d)", batch);
    if (m->nblocks == 0)
        return pb_err_set(e, "model '%s' has no blocks", m->name);
    m->batch = batch;
    struct pb_shape s = m->input;
    s.n = batch;
    for (int i = 0; i < m->nblocks; i++) {
        if (block_finalize(m, &m->blocks[i], s, e))
            return -1;
        s = m->blocks[i].out_shape;
    }
    char buf[64];
    if (m->nclasses > 0 && !m->label_steps && (s.c != m->nclasses || s.h != 1 || s.w != 1))
        return pb_err_set(e, "model '%s' ends in %s but the loss needs [%d, %d] logits", m->name,
                          pb_shape_str(s, buf, sizeof buf), batch, m->nclasses);
    if (m->nclasses > 0 && m->label_steps &&
        (s.c != m->label_steps || s.h != m->nclasses || s.w != 1))
        return pb_err_set(e, "model '%s' ends in %s but the loss per token needs [%d, %d, %d, 1] "
                             "logits", m->name, pb_shape_str(s, buf, sizeof buf), batch,
                          m->label_steps, m->nclasses);
    return 0;
}

size_t pb_model_param_count(const struct pb_model *m, int first, int last)
{
    size_t n = 0;
    for (int i = first; i < last; i++)
        n += m->blocks[i].nparams;
    return n;
}

bool pb_model_reads_lengths(const struct pb_model *m, int first, int last)
{
    for (int i = first; i < last; i++)
        for (int j = 0; j < m->blocks[i].nnodes; j++) {
            const struct pb_layer_cfg *cfg = &m->blocks[i].nodes[j].cfg;
            if ((cfg->kind == PB_LAYER_LSTM && cfg->bidirectional) ||
                cfg->kind == PB_LAYER_ATTENTION || cfg->kind == PB_LAYER_SEQ_MEAN)
                return true;
        }
    return false;
}
