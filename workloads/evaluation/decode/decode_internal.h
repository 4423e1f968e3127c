/* workloads/evaluation/decode/decode_internal.h — the helpers greedy.c and beam.c share (common.c);
 * private to workloads/evaluation/decode/. */
#ifndef PB_DECODE_INTERNAL_H
#define PB_DECODE_INTERNAL_H

#include <stdbool.h>

#include "workloads/evaluation/decode/decode.h"

int pb_decode_check_len(int max_len, struct pb_err *e);
/* The decoder's sizes and callbacks, batch >= 0, every src_len in [1, Tsrc]. */
int pb_decode_check_batch(const struct pb_decoder *d, int batch, const int32_t *src_len,
                          struct pb_err *e);
/* out's arrays for batch sentences of max_len tokens, zeroed. */
void pb_decoded_alloc(struct pb_decoded *out, int batch, int max_len);
/* Sentence s's output row: row [len] then PAD. */
void pb_decoded_row(struct pb_decoded *out, int s, const int32_t *row, int len);
/* d's step on n rows, refusing NaN log-probabilities. */
int pb_decode_step(const struct pb_decoder *d, const int32_t *tokens, int n, float *logp,
                   float *attn, struct pb_err *e);
/* The C <= V best tokens of lp [V], best first (equal values: the lower id first):
 * ids into id [C], values into val [C]. */
void pb_decode_top(const float *lp, int V, int C, int32_t *id, float *val);
/* d's select of rows [n] out of old_n rows, skipped when it is the identity. */
int pb_decode_select(const struct pb_decoder *d, const int32_t *rows, int n, int old_n,
                     struct pb_err *e);

#endif
