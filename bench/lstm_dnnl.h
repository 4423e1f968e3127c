/* bench/lstm_dnnl.h — bench_lstm's baseline LSTM on oneDNN's LSTM primitive
 * (bench/lstm_dnnl.c), with the CPU backend's lstm_workspace, lstm_fwd and lstm_bwd
 * signatures (harness/compute/backend.h). */
#ifndef PB_BENCH_LSTM_DNNL_H
#define PB_BENCH_LSTM_DNNL_H

#include "harness/compute/backend.h"

size_t bench_lstm_dnnl_workspace(struct pb_backend *be, const struct pb_lstm_desc *d);
void bench_lstm_dnnl_fwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                         const float *w, float *y, void *ws, const struct pb_lstm_states *st);
void bench_lstm_dnnl_bwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                         const float *w, const float *y, const float *dy, const void *ws,
                         float *dx, float *dw_acc);

#endif
