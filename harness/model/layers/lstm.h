/* harness/model/layers/lstm.h — what the LSTM layer (layers/lstm.c) gives besides a
 * layer's forward and backward: torch.nn.LSTM's final states (h_n, c_n) of an eval
 * forward, for parity with PyTorch and for callers that carry the states on. */
#ifndef PB_LSTM_H
#define PB_LSTM_H

#include "harness/model/layer.h"

/* The final states of l's eval forward (no dropout) of x [B, T, I] (device) with l's
 * parameters params (device, l's slice), into h_n and c_n [L·dirs, B, H] (device) in
 * PyTorch's order: row k·dirs + r for layer k, direction r (0 forward, 1 reverse).
 * lengths [B] (device, each in [1, T]; NULL = all T) are pack_padded_sequence's for a
 * bidirectional layer: the forward direction's state is the one after step len_b − 1,
 * the reverse one's after it has read step 0. A unidirectional layer runs all T steps as
 * its forward does, so its states are those after step T − 1 whatever the lengths; h_n
 * of the last layer equals the forward's output there bit for bit (bidirectional:
 * y[b, len_b − 1, :H] and y[b, 0, H:] to rounding, as each direction runs in segments
 * between the distinct lengths, smaller gemms than the forward's). Returns -1 with e set when l is not an LSTM or a length is out of
 * range (nothing written then), or on a backend failure. */
int pb_lstm_final_states(struct pb_backend *be, const struct pb_layer *l, const float *x,
                         const float *params, const int32_t *lengths, float *h_n, float *c_n,
                         struct pb_err *e);

#endif
