/* workloads/evaluation/decode/gnmt_layout.h — where a GNMT model's decoder lives inside a stage of
 * all its blocks, found by the block and layer names workloads/models/gnmt.c gives them (so
 * that gnmt.c stays the one definition of the architecture): the encoder's blocks
 * (embedding, encoder1 … encoderE) before decoder_embedding, the decoder embedding
 * table, the attention LSTM and the attention of decoder1, the LSTM of each of
 * decoder2 … decoderL and whether that block adds a residual (an "add" node), and the
 * classifier. Offsets are into the stage's flat parameters. */
#ifndef PB_GNMT_LAYOUT_H
#define PB_GNMT_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/model/stage.h"

#define PB_GNMT_MAX_DEC 16  /* decoder layers the layout holds (GNMT-16 has 8) */

struct pb_gnmt_layout {
    int hidden;        /* H: every decoder LSTM's hidden size, the embedding's dimension */
    int vocab;         /* V: the decoder embedding's rows and the classifier's outputs */
    int steps;         /* T: the model's time axis (source positions, target tokens) */
    int enc_blocks;    /* blocks [0, enc_blocks) are the encoder; their output [B, T, H + 1]
                          is [encoder output; decoder ids] */
    int dec_layers;    /* L: decoder1 (the attention LSTM) … decoderL */
    size_t emb_off;    /* the decoder embedding [V, H] */
    size_t lstm_off[PB_GNMT_MAX_DEC];  /* decoder k + 1's LSTM (k = 0: H → H, else 2H → H) */
    bool residual[PB_GNMT_MAX_DEC];    /* decoder k + 1 adds its input's first H features */
    size_t attn_off;   /* decoder1's attention, its pb_attn_desc's flat run */
    int attn_units;    /* U */
    size_t cls_off;    /* the classifier: weight [V, H], then bias [V] */
};

/* Whether m names its blocks as workloads/models/gnmt.c does (it has a "decoder_embedding"
 * block): such a model is decoded with the GNMT step decoder. */
bool pb_gnmt_layout_applies(const struct pb_model *m);

/* The layout of s, a stage of every block of a GNMT model; -1 with a message saying what
 * does not match (another model, a stage of some blocks only, a layer of another kind
 * or size than gnmt.c builds). */
int pb_gnmt_layout_find(const struct pb_stage *s, struct pb_gnmt_layout *g, struct pb_err *e);

#endif
