/* workloads/evaluation/decode/gnmt_step_decoder.h — a GNMT model as a pb_decoder doing O(T) work per
 * sentence: the encoder once per batch of sentences, then one token per row per step.
 * Init runs the encoder blocks [0, E + 1) once (a layout-only stage of those blocks lent
 * the full stage's backend, weights and buffers: the same block forward training runs,
 * eval mode, the source lengths given) and keeps its output [rows, T, H] as the
 * attention's keys, and projects them once, pk = keys·W_kᵀ [rows, T, U] (the backend's
 * attn_project_keys: the GEMM the attention op runs inside). A step then runs, for the n
 * rows at once, through the stage's backend ops only (so it stays backend-generic):
 *   e = embedding(token)                                              [n, H]
 *   q = LSTM_1(e) one step from its carried (h, c)                    [n, H]
 *   ctx, a = attention(q over the row's keys and pk, masked by its source length; tq = 1,
 *            attn_fwd_projected)
 *   y_k = LSTM_k([y_{k−1}; ctx]) (+ y_{k−1} where decoder k adds a residual), y_1 = q
 *   logits = y_L · W_cᵀ + b_c, and the log-softmax in double on the host [n, V]
 * exactly as workloads/models/gnmt.c builds the blocks (dropout off), the facts (H, E, L, which
 * layers add a residual) read from the model (gnmt_layout.h). The encoder output and
 * source lengths are those the O(T²) stage decoder (stage_decoder.h) computes; the steps
 * differ from its whole-prefix forward only in GEMM shapes (about 1e-6 in the
 * log-probabilities at the small presets), so it is that decoder's reference to test
 * against. Select gathers the carried states, the keys, pk and the lengths by row (the
 * backend's embedding lookup, a row gather, one op per tensor). So a step does not
 * project the row's T keys again (T·H·U multiply-adds a row, as the MLPerf reference's
 * attention does every step: more than a step's LSTMs at the paper width, T = 50,
 * H = U = 1024); what it does over them is the scores and the context (T·U and T·H a
 * row), everything else is per token. Unlike the stage decoder it
 * can read more than T target tokens (pb_stage_decode_bleu still stops at T, so that
 * both translate alike). */
#ifndef PB_GNMT_STEP_DECODER_H
#define PB_GNMT_STEP_DECODER_H

#include "harness/model/stage.h"
#include "workloads/evaluation/decode/decode.h"
#include "workloads/evaluation/decode/gnmt_layout.h"

struct pb_gnmt_step_decoder {
    struct pb_stage *s;
    struct pb_gnmt_layout g;
    int rows, n;          /* the most rows (the model's batch), the rows in use */
    int32_t *src_len;     /* [rows] host */
    float *host_rows;     /* [rows] host: tokens or row indices as floats */
    float *host_logits;   /* [rows, V] host */
    /* on the stage's backend */
    int32_t *dev_len;     /* [rows] */
    float *keys, *keys2;  /* [rows, T, H] the encoder outputs, and select's target */
    float *pk, *pk2;      /* [rows, T, U] the keys projected (attn_project_keys), likewise */
    float *h[PB_GNMT_MAX_DEC], *c[PB_GNMT_MAX_DEC];    /* [rows, H] the carried states */
    float *h2[PB_GNMT_MAX_DEC], *c2[PB_GNMT_MAX_DEC];  /* [rows, H] the next ones */
    float *idx;           /* [rows] the step's tokens, or select's rows, as floats */
    float *emb, *ctx;     /* [rows, H] */
    float *y[2], *tmp;    /* [rows, H] the layers' outputs, an LSTM's before its residual */
    float *x2;            /* [rows, 2H] [y; ctx] */
    float *logits;        /* [rows, V] */
    float *attn;          /* [rows, T] the step's attention weights */
};

/* The decoder over n <= rows sentences of a GNMT stage s (every block, any index):
 * src [n, T] source ids, src_len [n] each in [1, T]. -1 with e set for a model that is
 * not GNMT-shaped (pb_gnmt_layout_find's message) or a batch that does not fit
 * (nothing to finish then). */
int pb_gnmt_step_decoder_init(struct pb_gnmt_step_decoder *gd, struct pb_stage *s,
                              const int32_t *src, const int32_t *src_len, int n,
                              struct pb_decoder *d, struct pb_err *e);
void pb_gnmt_step_decoder_finish(struct pb_gnmt_step_decoder *gd);

#endif
