/* bench/lstm_c.h — bench_lstm's baseline, the CPU backend's former C LSTM (bench/lstm_c.c):
 * the calls of backend.h's lstm_workspace, lstm_fwd and lstm_bwd on a CPU backend. Its
 * workspace holds the activated gates [B, T, 4H] and the cell states [B, T, H]. */
#ifndef PB_BENCH_LSTM_C_H
#define PB_BENCH_LSTM_C_H

#include "harness/compute/backend.h"

size_t bench_lstm_c_workspace(const struct pb_lstm_desc *d);
void bench_lstm_c_fwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                      const float *w, float *y, void *ws);
void bench_lstm_c_bwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                      const float *w, const float *y, const float *dy, const void *ws, float *dx,
                      float *dw_acc);

#endif
