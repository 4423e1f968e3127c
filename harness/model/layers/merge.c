/* harness/model/layers/merge.c — the layers that join branches of a block: the residual
 * add (y = a + b, equal shapes; with cfg.relu y = max(a + b, 0), the ReLU after ResNet's
 * join fused into it: one pass each way instead of the add's and the ReLU's) and the
 * channel concatenation of Inception and DenseNet (y = [x0, x1, ...] along C, equal
 * N, H, W). */
#include "harness/model/layers/layer_util.h"

static int add_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                     struct pb_shape *out, struct pb_err *e)
{
    char a[64], b[64];
    if (nin != 2)
        return pb_err_set(e, "add '%s' takes two inputs (got %d)", l->name, nin);
    if (!pb_shape_eq(in[0], in[1]))
        return pb_err_set(e, "add '%s': the branches' shapes differ: %s and %s", l->name,
                          pb_shape_str(in[0], a, sizeof a), pb_shape_str(in[1], b, sizeof b));
    *out = in[0];
    return 0;
}

static int add_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                       const struct pb_tensor *const *in, const float *params, float *buffers,
                       struct pb_node_act *act, struct pb_err *e)
{
    (void)params;
    (void)buffers;
    struct pb_backend *be = c->be;
    enum pb_layout lay = in[0]->layout;
    if (pb_tensor_alloc(be, &act->out, l->out_shape, lay, PB_MEM_ACTS, e))
        return -1;
    struct pb_tensor tmp = {0};
    const struct pb_tensor *b = in[1];
    if (b->layout != lay) {
        if (pb_tensor_clone_as(be, in[1], lay, PB_MEM_SCRATCH, &tmp, e)) {
            pb_backend_free(be, act->out.data);
            act->out.data = NULL;
            return -1;
        }
        b = &tmp;
    }
    size_t n = pb_tensor_floats(be, &act->out);
    if (l->cfg.relu)
        be->ops->add_relu(be, in[0]->data, b->data, act->out.data, n);
    else
        be->ops->add(be, in[0]->data, b->data, act->out.data, n);
    pb_backend_free(be, tmp.data);
    return 0;
}

/* dx[i] = dy for both inputs (× (y > 0) with the fused ReLU: written once, into the
 * first dx in dy's layout, and copied from there). */
static int add_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                        const struct pb_tensor *const *in, const struct pb_node_act *act,
                        const struct pb_tensor *dy, const float *params, float *grads,
                        struct pb_tensor *const *dx, struct pb_err *e)
{
    (void)in;
    (void)params;
    (void)grads;
    struct pb_backend *be = c->be;
    size_t n = pb_tensor_floats(be, dy);
    struct pb_tensor masked = {0};
    const struct pb_tensor *g = dy;
    if (l->cfg.relu && (dx[0] || dx[1])) {
        int j = dx[0] && dx[0]->layout == dy->layout ? 0 : 1;
        if (dx[j] && dx[j]->layout == dy->layout) {
            be->ops->relu_bwd(be, act->out.data, dy->data, dx[j]->data, n);
            g = dx[j];
        } else if (pb_tensor_alloc(be, &masked, dy->shape, dy->layout, PB_MEM_SCRATCH, e)) {
            return -1;
        } else {
            be->ops->relu_bwd(be, act->out.data, dy->data, masked.data, n);
            g = &masked;
        }
    }
    for (int i = 0; i < 2; i++) {
        if (!dx[i] || dx[i] == g)
            continue;
        if (dx[i]->layout == g->layout)
            be->ops->copy(be, dx[i]->data, g->data, n * sizeof(float));
        else
            be->ops->reorder(be, g, dx[i]);
    }
    pb_backend_free(be, masked.data);
    return 0;
}

static int concat_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                        struct pb_shape *out, struct pb_err *e)
{
    char a[64], b[64];
    if (nin < 2)
        return pb_err_set(e, "concat '%s' takes at least two inputs (got %d)", l->name, nin);
    *out = in[0];
    for (int i = 1; i < nin; i++) {
        if (in[i].n != in[0].n || in[i].h != in[0].h || in[i].w != in[0].w)
            return pb_err_set(e, "concat '%s': input %d is %s but input 0 is %s (N, H, W must match)",
                              l->name, i, pb_shape_str(in[i], a, sizeof a),
                              pb_shape_str(in[0], b, sizeof b));
        out->c += in[i].c;
    }
    return 0;
}

static int concat_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                          const struct pb_tensor *const *in, const float *params, float *buffers,
                          struct pb_node_act *act, struct pb_err *e)
{
    (void)params;
    (void)buffers;
    struct pb_backend *be = c->be;
    if (pb_tensor_alloc(be, &act->out, l->out_shape, be->ops->concat_layout(be, l->nin, in),
                        PB_MEM_ACTS, e))
        return -1;
    be->ops->concat(be, l->nin, in, &act->out);
    return 0;
}

static int concat_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                           const struct pb_tensor *const *in, const struct pb_node_act *act,
                           const struct pb_tensor *dy, const float *params, float *grads,
                           struct pb_tensor *const *dx, struct pb_err *e)
{
    (void)act;
    (void)params;
    (void)grads;
    struct pb_backend *be = c->be;
    struct pb_tensor scratch[PB_LAYER_MAX_INPUTS] = {{0}};
    struct pb_tensor *outs[PB_LAYER_MAX_INPUTS];
    int rc = 0;
    for (int i = 0; i < l->nin && !rc; i++) {
        outs[i] = dx[i];
        if (!dx[i]) {
            rc = pb_tensor_alloc(be, &scratch[i], in[i]->shape, in[i]->layout, PB_MEM_SCRATCH, e);
            outs[i] = &scratch[i];
        }
    }
    if (!rc)
        be->ops->split(be, dy, l->nin, outs);
    for (int i = 0; i < l->nin; i++)
        pb_backend_free(be, scratch[i].data);
    return rc;
}

const struct pb_layer_ops pb_add_ops = {
    .kind = "add",
    .infer = add_infer,
    .param_count = pb_layer_zero_count,
    .buffer_count = pb_layer_zero_count,
    .init = pb_layer_no_init,
    .param_tensors = pb_layer_no_tensors,
    .forward = add_forward,
    .backward = add_backward,
    .flops = pb_layer_out_flops,
};

const struct pb_layer_ops pb_concat_ops = {
    .kind = "concat",
    .infer = concat_infer,
    .param_count = pb_layer_zero_count,
    .buffer_count = pb_layer_zero_count,
    .init = pb_layer_no_init,
    .param_tensors = pb_layer_no_tensors,
    .forward = concat_forward,
    .backward = concat_backward,
    .flops = pb_layer_no_flops,
};
