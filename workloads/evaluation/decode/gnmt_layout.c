/* workloads/evaluation/decode/gnmt_layout.c — a GNMT model's decoder layers and their parameter
 * slices in a stage of all its blocks, by gnmt.c's names (gnmt_layout.h), each checked
 * for the kind and sizes gnmt.c builds it with. */
#include <stdio.h>
#include <string.h>

#include "workloads/evaluation/decode/gnmt_layout.h"

static int block_index(const struct pb_model *m, const char *name)
{
    for (int b = 0; b < m->nblocks; b++)
        if (!strcmp(m->blocks[b].name, name))
            return b;
    return -1;
}

/* Node `name` of block b, or NULL. */
static const struct pb_layer *node(const struct pb_model *m, int b, const char *name)
{
    const struct pb_block *blk = &m->blocks[b];
    for (int i = 0; i < blk->nnodes; i++)
        if (!strcmp(blk->nodes[i].name, name))
            return &blk->nodes[i];
    return NULL;
}

/* Block b's node `name` of kind k, its offset in the stage's parameters into *off. */
static int layer_at(const struct pb_stage *s, int b, const char *name, enum pb_layer_kind k,
                    const struct pb_layer **out, size_t *off, struct pb_err *e)
{
    const struct pb_layer *l = node(s->model, b, name);
    if (!l || l->cfg.kind != k)
        return pb_err_set(e, "block '%s' of model '%s' has no %s layer '%s' as workloads/models/gnmt.c "
                             "builds it", s->model->blocks[b].name, s->model->name,
                          pb_layer_ops_for(k)->kind, name);
    *out = l;
    *off = s->param_off[b - s->first] + l->param_off;
    return 0;
}

/* A one-layer unidirectional LSTM in → hidden. */
static int check_lstm(const struct pb_model *m, int b, const struct pb_layer *l, int in,
                      int hidden, struct pb_err *e)
{
    if (l->cfg.bidirectional || l->cfg.num_layers != 1 || l->cfg.in_features != in ||
        l->cfg.out_features != hidden)
        return pb_err_set(e, "block '%s' of model '%s': its LSTM is %d → %d%s over %d layers, "
                             "not GNMT's one-layer unidirectional %d → %d",
                          m->blocks[b].name, m->name, l->cfg.in_features, l->cfg.out_features,
                          l->cfg.bidirectional ? " bidirectional" : "", l->cfg.num_layers, in,
                          hidden);
    return 0;
}

bool pb_gnmt_layout_applies(const struct pb_model *m)
{
    return block_index(m, "decoder_embedding") >= 0;
}

/* decoder2 … decoderL after decoder1 (block d1), then the classifier. */
static int find_decoder_layers(const struct pb_stage *s, struct pb_gnmt_layout *g, int d1,
                               struct pb_err *e)
{
    const struct pb_model *m = s->model;
    int H = g->hidden, k = 1;
    for (;; k++) {
        char name[24];
        snprintf(name, sizeof name, "decoder%d", k + 1);
        int b = block_index(m, name);
        if (b < 0)
            break;
        if (b != d1 + k)
            return pb_err_set(e, "model '%s': block '%s' is not right after decoder%d", m->name,
                              name, k);
        if (k >= PB_GNMT_MAX_DEC)
            return pb_err_set(e, "model '%s' has more than %d decoder layers", m->name,
                              PB_GNMT_MAX_DEC);
        const struct pb_layer *l;
        char lstm[24];
        snprintf(lstm, sizeof lstm, "dec_layers.%d", k - 1);
        if (layer_at(s, b, lstm, PB_LAYER_LSTM, &l, &g->lstm_off[k], e) ||
            check_lstm(m, b, l, 2 * H, H, e))
            return -1;
        const struct pb_layer *add = node(m, b, "add");
        g->residual[k] = add != NULL;
        if (add) {
            const struct pb_block *blk = &m->blocks[b];
            const struct pb_layer *r = add->nin == 2 && add->in[1] >= 0 ? &blk->nodes[add->in[1]]
                                                                       : NULL;
            if (add->cfg.kind != PB_LAYER_ADD || !r || r->cfg.kind != PB_LAYER_SLICE ||
                r->in[0] != -1 || r->cfg.slice_axis != 2 || r->cfg.slice_lo != 0 ||
                r->cfg.slice_hi != H)
                return pb_err_set(e, "block '%s' of model '%s': its 'add' is not GNMT's residual "
                                     "(the LSTM plus the block input's first %d features)",
                                  name, m->name, H);
        }
    }
    g->dec_layers = k;
    int c = block_index(m, "classifier");
    if (c != d1 + k || c != m->nblocks - 1)
        return pb_err_set(e, "model '%s': the last block is not a 'classifier' right after "
                             "decoder%d", m->name, k);
    const struct pb_layer *l;
    if (layer_at(s, c, "classifier", PB_LAYER_LINEAR, &l, &g->cls_off, e))
        return -1;
    if (l->cfg.in_features != H || l->cfg.out_features != g->vocab || !l->cfg.bias)
        return pb_err_set(e, "model '%s': the classifier is %d → %d%s, not GNMT's %d → %d with "
                             "a bias", m->name, l->cfg.in_features, l->cfg.out_features,
                          l->cfg.bias ? "" : " without a bias", H, g->vocab);
    return 0;
}

int pb_gnmt_layout_find(const struct pb_stage *s, struct pb_gnmt_layout *g, struct pb_err *e)
{
    const struct pb_model *m = s->model;
    memset(g, 0, sizeof *g);
    int de = block_index(m, "decoder_embedding"), d1 = block_index(m, "decoder1");
    if (de < 0 || d1 != de + 1 || de < 2)
        return pb_err_set(e, "model '%s' is not GNMT-shaped: step-by-step decoding needs "
                             "workloads/models/gnmt.c's blocks (embedding, encoder1 …, "
                             "decoder_embedding, decoder1 …, classifier)", m->name);
    if (s->first != 0 || s->last != m->nblocks)
        return pb_err_set(e, "decoding needs a stage of every block of model '%s' (this one "
                             "holds blocks %d to %d of %d)", m->name, s->first, s->last - 1,
                          m->nblocks);
    if (!m->label_steps || s->in_shape.c != 2 * m->label_steps)
        return pb_err_set(e, "model '%s' is not a translation model of pairs of %d-token "
                             "sentences", m->name, m->label_steps);
    g->steps = m->label_steps;
    g->enc_blocks = de;
    const struct pb_layer *emb, *lstm, *attn;
    if (layer_at(s, de, "dec_embedder", PB_LAYER_EMBEDDING, &emb, &g->emb_off, e) ||
        layer_at(s, d1, "att_rnn", PB_LAYER_LSTM, &lstm, &g->lstm_off[0], e) ||
        layer_at(s, d1, "attn", PB_LAYER_ATTENTION, &attn, &g->attn_off, e))
        return -1;
    g->vocab = emb->cfg.in_features;
    g->hidden = emb->cfg.out_features;
    int H = g->hidden;
    struct pb_shape enc = m->blocks[de - 1].out_shape;
    if (enc.c != g->steps || enc.h != H + 1)
        return pb_err_set(e, "model '%s': the encoder's output (block '%s') has %d steps of %d "
                             "features, not GNMT's %d of [encoder output; ids] (%d)", m->name,
                          m->blocks[de - 1].name, enc.c, enc.h, g->steps, H + 1);
    if (check_lstm(m, d1, lstm, H, H, e))
        return -1;
    if (attn->cfg.in_features != H || attn->cfg.key_features != H)
        return pb_err_set(e, "model '%s': the attention takes queries of %d and keys of %d "
                             "features, not GNMT's %d and %d", m->name, attn->cfg.in_features,
                          attn->cfg.key_features, H, H);
    g->attn_units = attn->cfg.out_features;
    return find_decoder_layers(s, g, d1, e);
}
