/* harness/model/layers/relu.c — y = max(x, 0) elementwise in x's layout; dx = dy·(y > 0). */
#include "harness/model/layers/layer_util.h"

static int relu_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                      struct pb_shape *out, struct pb_err *e)
{
    (void)l;
    (void)e;
    PB_CHECK(nin == 1);
    *out = in[0];
    return 0;
}

static int relu_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                        const struct pb_tensor *const *in, const float *params, float *buffers,
                        struct pb_node_act *act, struct pb_err *e)
{
    (void)params;
    (void)buffers;
    struct pb_backend *be = c->be;
    if (pb_tensor_alloc(be, &act->out, l->out_shape, in[0]->layout, PB_MEM_ACTS, e))
        return -1;
    be->ops->relu_fwd(be, in[0]->data, act->out.data, pb_tensor_floats(be, &act->out));
    return 0;
}

static int relu_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                         const struct pb_tensor *const *in, const struct pb_node_act *act,
                         const struct pb_tensor *dy, const float *params, float *grads,
                         struct pb_tensor *const *dx, struct pb_err *e)
{
    (void)l;
    (void)in;
    (void)params;
    (void)grads;
    (void)e;
    if (dx[0])
        c->be->ops->relu_bwd(c->be, act->out.data, dy->data, dx[0]->data,
                             pb_tensor_floats(c->be, &act->out));
    return 0;
}

const struct pb_layer_ops pb_relu_ops = {
    .kind = "relu",
    .infer = relu_infer,
    .param_count = pb_layer_zero_count,
    .buffer_count = pb_layer_zero_count,
    .init = pb_layer_no_init,
    .param_tensors = pb_layer_no_tensors,
    .forward = relu_forward,
    .backward = relu_backward,
    .flops = pb_layer_out_flops,
};
