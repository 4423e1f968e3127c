/* harness/model/layers/flatten.c — [N, C, H, W] → [N, C·H·W] in row-major order
 * (torch.flatten(x, 1)); the output is plain, so it is where blocked layouts end. */
#include "harness/model/layers/layer_util.h"

static int flatten_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                         struct pb_shape *out, struct pb_err *e)
{
    (void)l;
    (void)e;
    PB_CHECK(nin == 1);
    *out = (struct pb_shape){in[0].n, in[0].c * in[0].h * in[0].w, 1, 1};
    return 0;
}

static int flatten_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                           const struct pb_tensor *const *in, const float *params, float *buffers,
                           struct pb_node_act *act, struct pb_err *e)
{
    (void)params;
    (void)buffers;
    struct pb_backend *be = c->be;
    if (pb_tensor_alloc(be, &act->out, l->out_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e))
        return -1;
    /* the plain bytes of x are those of y: reorder into a view of y with x's shape */
    struct pb_tensor view = {act->out.data, in[0]->shape, PB_LAYOUT_PLAIN};
    if (in[0]->layout == PB_LAYOUT_PLAIN)
        be->ops->copy(be, view.data, in[0]->data, pb_shape_count(view.shape) * sizeof(float));
    else
        be->ops->reorder(be, in[0], &view);
    return 0;
}

static int flatten_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                            const struct pb_tensor *const *in, const struct pb_node_act *act,
                            const struct pb_tensor *dy, const float *params, float *grads,
                            struct pb_tensor *const *dx, struct pb_err *e)
{
    (void)l;
    (void)act;
    (void)params;
    (void)grads;
    (void)e;
    struct pb_backend *be = c->be;
    if (!dx[0])
        return 0;
    struct pb_tensor view = {dy->data, in[0]->shape, PB_LAYOUT_PLAIN};
    if (dx[0]->layout == PB_LAYOUT_PLAIN)
        be->ops->copy(be, dx[0]->data, view.data, pb_shape_count(view.shape) * sizeof(float));
    else
        be->ops->reorder(be, &view, dx[0]);
    return 0;
}

const struct pb_layer_ops pb_flatten_ops = {
    .kind = "flatten",
    .infer = flatten_infer,
    .param_count = pb_layer_zero_count,
    .buffer_count = pb_layer_zero_count,
    .init = pb_layer_no_init,
    .param_tensors = pb_layer_no_tensors,
    .forward = flatten_forward,
    .backward = flatten_backward,
    .flops = pb_layer_no_flops,
};
