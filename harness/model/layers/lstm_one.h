/* harness/model/layers/lstm_one.h — one layer of an LSTM stack (layers/lstm.c) on the
 * backend: unidirectional over all T steps, or bidirectional over each sequence's length
 * as pack_padded_sequence runs it (y = forward ‖ reverse per step, both 0 past the
 * length). Shapes: x [B, T, I], y [B, T, dirs·H]; the weights w are the layer's dirs runs
 * of PyTorch's four tensors (weight_ih [4H, I], weight_hh [4H, H], bias_ih, bias_hh [4H]). */
#ifndef PB_LSTM_ONE_H
#define PB_LSTM_ONE_H

#include <stdbool.h>

#include "harness/compute/backend.h"

/* One layer and where its forward keeps what the backward reads. */
struct pb_lstm_one {
    struct pb_lstm_desc d;  /* B, T, this layer's input I, H */
    bool bi;
    void *ws[2];            /* the training forward's workspace per direction; NULL in eval */
    float *yd[2];           /* bi: each direction's output [B, T, H], the reverse one in
                               reversed time (what its primitive wrote) */
    const int32_t *len;     /* bi: the lengths [B] (device) */
    void *keep[2];          /* the split backward: per direction, what the backend's data
                               pass keeps for its weight pass (lstm_bwd_keep bytes) */
};

/* Floats of one direction's four tensors: 4H·(I + H + 2). */
size_t pb_lstm_dir_params(int input, int hidden);

/* y [B, T, dirs·H] of x [B, T, I]; fills o's workspaces (training) and yd (bi). */
int pb_lstm_one_fwd(struct pb_backend *be, const struct pb_lstm_one *o, const float *x,
                    const float *w, float *y, struct pb_err *e);

/* A bidirectional layer's final states as pack_padded_sequence defines them, into h_n and
 * c_n [2, B, H] (forward rows, then reverse rows): the forward direction's after step
 * len_b − 1, the reverse direction's after it has read step 0. oneDNN has no variable
 * lengths, so each direction runs in segments between consecutive distinct lengths over
 * the sequences still running, each segment starting from the states the one before
 * left (as a packed sequence runs: max len steps, Σ len_b step-rows). len is host memory
 * [B], each in [1, T]. An eval computation (no workspaces). */
int pb_lstm_one_states(struct pb_backend *be, const struct pb_lstm_one *o, const float *x,
                       const float *w, const int32_t *len, float *h_n, float *c_n,
                       struct pb_err *e);

/* From dy [B, T, dirs·H]: dx [B, T, I] (NULL: not wanted) and dW accumulated into dw
 * (w's layout). Reads x, w and what the training forward left: y (unidirectional), yd
 * (bidirectional) and the workspaces. */
int pb_lstm_one_bwd(struct pb_backend *be, const struct pb_lstm_one *o, const float *x,
                    const float *w, const float *y, const float *dy, float *dx, float *dw,
                    struct pb_err *e);

/* The split backward's two passes, pb_lstm_one_bwd's bits between them. The data pass:
 * from dy [B, T, dirs·H], dx [B, T, I] (NULL: not wanted), and o's keeps filled; reads
 * w and the workspaces. The weight pass: dW accumulated into dw from x [B, T, I], y
 * (unidirectional: the layer's output [B, T, H]; bidirectional: not read, yd is) and
 * o's keeps (and, bidirectional, the lengths, to gather the reverse input again). */
int pb_lstm_one_bwd_data(struct pb_backend *be, const struct pb_lstm_one *o, const float *w,
                         const float *dy, float *dx, struct pb_err *e);
int pb_lstm_one_bwd_weights(struct pb_backend *be, const struct pb_lstm_one *o, const float *x,
                            const float *y, float *dw, struct pb_err *e);

#endif
