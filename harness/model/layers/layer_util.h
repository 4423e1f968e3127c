/* harness/model/layers/layer_util.h — what the layer implementations share: shape
 * errors, plain-layout views of blocked tensors, and the ops tables. */
#ifndef PB_LAYER_UTIL_H
#define PB_LAYER_UTIL_H

#include "harness/model/layer.h"

extern const struct pb_layer_ops pb_linear_ops, pb_conv2d_ops, pb_batchnorm2d_ops, pb_relu_ops,
    pb_maxpool2d_ops, pb_avgpool2d_ops, pb_global_avgpool_ops, pb_dropout_ops, pb_flatten_ops,
    pb_add_ops, pb_concat_ops, pb_embedding_ops, pb_lstm_ops, pb_seq_mean_ops,
    pb_attention_ops, pb_feature_concat_ops, pb_slice_ops;

/* Defaults for layers without parameters or buffers. */
size_t pb_layer_zero_count(const struct pb_layer *l);
void pb_layer_no_init(const struct pb_layer *l, float *params, float *buffers, uint64_t seed);
int pb_layer_no_tensors(const struct pb_layer *l, struct pb_param_tensor *t);
double pb_layer_no_flops(const struct pb_layer *l);
/* One FLOP per output element (elementwise layers, pooling windows excluded). */
double pb_layer_out_flops(const struct pb_layer *l);

/* A linear or conv2d layer's weight w [nw] and bias b [nb] (NULL: none) as spec says:
 * PyTorch's default U(±1/√fan_in) where the spec leaves them to it (init.c). */
void pb_init_weight_bias(const struct pb_init_spec *spec, float *w, size_t nw, float *b, size_t nb,
                         int fan_in, int fan_out, uint64_t seed, int uid);

/* Formats "[n, c, h, w]" into buf. */
const char *pb_shape_str(struct pb_shape s, char *buf, size_t len);

/* A plain copy of t in *tmp (allocated, PB_MEM_SCRATCH) unless t is plain already;
 * returns the plain tensor to read. Free with pb_plain_release. */
int pb_plain_view(struct pb_backend *be, const struct pb_tensor *t, struct pb_tensor *tmp,
                  const struct pb_tensor **out, struct pb_err *e);
void pb_plain_release(struct pb_backend *be, struct pb_tensor *tmp);

/* Allocates dst with src's shape in `layout` and reorders src into it. */
int pb_tensor_clone_as(struct pb_backend *be, const struct pb_tensor *src, enum pb_layout layout,
                       enum pb_mem_kind kind, struct pb_tensor *dst, struct pb_err *e);

/* Output of a window of k with stride s and padding p over n, PyTorch's rule. */
int pb_pool_out_size(int n, int k, int s, int p, bool ceil_mode);

#endif
