/* harness/model/layers/seq_join.c — joining and cutting sequences (layer.h's form
 * [B, T, F, 1]): the concatenation over features, y = [x0; x1; ...] per step
 * (torch.cat(xs, dim=2) of batch-first sequences: GNMT's [output; context]), and the
 * slice of a range along time or features, y = x[:, lo:hi] or x[:, :, lo:hi] (how a
 * block takes apart the tensors packed into the one that crosses a stage boundary,
 * workloads/models/gnmt.c). Both are the backend's channel concat and split over a plain
 * view: [B, T, F, 1] read as [B·T, F, 1, 1] puts the features where the channels are,
 * and [B, T, F, 1] as [B, T, F, 1] the steps. Inputs and outputs plain; the slice's
 * backward puts dy in its window and zeros elsewhere. */
#include "harness/model/layers/layer_util.h"

/* A plain tensor read with the cut axis as the channels. */
static struct pb_tensor axis_view(float *data, struct pb_shape s, int axis)
{
    struct pb_shape v = axis == 1 ? (struct pb_shape){s.n, s.c, s.h * s.w, 1}
                                  : (struct pb_shape){s.n * s.c, s.h, s.w, 1};
    return (struct pb_tensor){data, v, PB_LAYOUT_PLAIN};
}

static int cat_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                     struct pb_shape *out, struct pb_err *e)
{
    char a[64], b[64];
    if (nin < 2)
        return pb_err_set(e, "feature_concat '%s' takes at least two inputs (got %d)", l->name, nin);
    *out = in[0];
    for (int i = 0; i < nin; i++) {
        if (in[i].n != in[0].n || in[i].c != in[0].c || in[i].w != 1)
            return pb_err_set(e, "feature_concat '%s': input %d is %s but input 0 is %s (sequences "
                                 "[B, T, F, 1] of the same B and T)", l->name, i,
                              pb_shape_str(in[i], a, sizeof a), pb_shape_str(in[0], b, sizeof b));
        if (i)
            out->h += in[i].h;
    }
    return 0;
}

static int cat_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                       const struct pb_tensor *const *in, const float *params, float *buffers,
                       struct pb_node_act *act, struct pb_err *e)
{
    (void)params;
    (void)buffers;
    struct pb_backend *be = c->be;
    struct pb_tensor tmp[PB_LAYER_MAX_INPUTS] = {{0}}, views[PB_LAYER_MAX_INPUTS];
    const struct pb_tensor *vp[PB_LAYER_MAX_INPUTS];
    int rc = pb_tensor_alloc(be, &act->out, l->out_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e);
    for (int i = 0; i < l->nin && !rc; i++) {
        const struct pb_tensor *x;
        rc = pb_plain_view(be, in[i], &tmp[i], &x, e);
        views[i] = axis_view(x->data, x->shape, 2);
        vp[i] = &views[i];
    }
    if (!rc) {
        struct pb_tensor out = axis_view(act->out.data, l->out_shape, 2);
        be->ops->concat(be, l->nin, vp, &out);
    }
    for (int i = 0; i < l->nin; i++)
        pb_plain_release(be, &tmp[i]);
    return rc;
}

/* dx[i] (plain or not) from the plain dy [B·T, F_i] windows of dy */
static int cat_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                        const struct pb_tensor *const *in, const struct pb_node_act *act,
                        const struct pb_tensor *dy, const float *params, float *grads,
                        struct pb_tensor *const *dx, struct pb_err *e)
{
    (void)act;
    (void)params;
    (void)grads;
    struct pb_backend *be = c->be;
    struct pb_tensor dyp, scratch[PB_LAYER_MAX_INPUTS] = {{0}}, views[PB_LAYER_MAX_INPUTS];
    struct pb_tensor *vp[PB_LAYER_MAX_INPUTS];
    const struct pb_tensor *g;
    int rc = pb_plain_view(be, dy, &dyp, &g, e);
    for (int i = 0; i < l->nin && !rc; i++) {
        float *data = dx[i] && dx[i]->layout == PB_LAYOUT_PLAIN ? dx[i]->data : NULL;
        if (!data) {
            rc = pb_tensor_alloc(be, &scratch[i], in[i]->shape, PB_LAYOUT_PLAIN, PB_MEM_SCRATCH, e);
            data = scratch[i].data;
        }
        views[i] = axis_view(data, in[i]->shape, 2);
        vp[i] = &views[i];
    }
    if (!rc) {
        struct pb_tensor whole = axis_view(g->data, g->shape, 2);
        be->ops->split(be, &whole, l->nin, vp);
        for (int i = 0; i < l->nin; i++)
            if (dx[i] && dx[i]->layout != PB_LAYOUT_PLAIN)
                be->ops->reorder(be, &scratch[i], dx[i]);
    }
    for (int i = 0; i < l->nin; i++)
        pb_backend_free(be, scratch[i].data);
    pb_plain_release(be, &dyp);
    return rc;
}

/* The extent of x along the slice's axis (1: time, 2: features). */
static int axis_len(struct pb_shape s, int axis)
{
    return axis == 1 ? s.c : s.h;
}

static int slice_infer(const struct pb_layer *l, const struct pb_shape *in, int nin,
                       struct pb_shape *out, struct pb_err *e)
{
    char buf[64];
    PB_CHECK(nin == 1);
    int axis = l->cfg.slice_axis, lo = l->cfg.slice_lo, hi = l->cfg.slice_hi;
    if (axis != 1 && axis != 2)
        return pb_err_set(e, "slice '%s': the axis is 1 (time) or 2 (features), not %d", l->name,
                          axis);
    if (in[0].w != 1 || lo < 0 || hi <= lo || hi > axis_len(in[0], axis))
        return pb_err_set(e, "slice '%s' takes [%d, %d) of axis %d, which %s does not have",
                          l->name, lo, hi, axis, pb_shape_str(in[0], buf, sizeof buf));
    *out = in[0];
    if (axis == 1)
        out->c = hi - lo;
    else
        out->h = hi - lo;
    return 0;
}

/* The parts of x along the axis: before the window (if any), the window, after it. */
static int slice_parts(const struct pb_layer *l, int *len)
{
    int n = 0, total = axis_len(l->in_shape[0], l->cfg.slice_axis);
    if (l->cfg.slice_lo > 0)
        len[n++] = l->cfg.slice_lo;
    len[n++] = l->cfg.slice_hi - l->cfg.slice_lo;
    if (l->cfg.slice_hi < total)
        len[n++] = total - l->cfg.slice_hi;
    return n;
}

/* Views of the parts: the window's on `window`, the others on scratch (allocated). */
static int part_views(const struct pb_layer *l, struct pb_backend *be, float *window,
                      struct pb_tensor *views, struct pb_tensor *scratch, struct pb_err *e)
{
    int len[3], n = slice_parts(l, len), axis = l->cfg.slice_axis;
    for (int i = 0; i < n; i++) {
        struct pb_shape s = l->in_shape[0];
        if (axis == 1)
            s.c = len[i];
        else
            s.h = len[i];
        bool is_window = (i == 0 && l->cfg.slice_lo == 0) || (i == 1 && l->cfg.slice_lo > 0);
        float *data = window;
        if (!is_window) {
            if (pb_tensor_alloc(be, &scratch[i], s, PB_LAYOUT_PLAIN, PB_MEM_SCRATCH, e))
                return -1;
            data = scratch[i].data;
        }
        views[i] = axis_view(data, s, axis);
    }
    return n;
}

static int slice_forward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                         const struct pb_tensor *const *in, const float *params, float *buffers,
                         struct pb_node_act *act, struct pb_err *e)
{
    (void)params;
    (void)buffers;
    struct pb_backend *be = c->be;
    struct pb_tensor tmp, views[3], scratch[3] = {{0}}, *vp[3] = {&views[0], &views[1], &views[2]};
    const struct pb_tensor *x;
    if (pb_plain_view(be, in[0], &tmp, &x, e))
        return -1;
    int rc = pb_tensor_alloc(be, &act->out, l->out_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e);
    int n = rc ? -1 : part_views(l, be, act->out.data, views, scratch, e);
    if (n == 1)
        be->ops->copy(be, act->out.data, x->data, pb_shape_count(l->out_shape) * sizeof(float));
    else if (n > 1) {
        struct pb_tensor whole = axis_view(x->data, x->shape, l->cfg.slice_axis);
        be->ops->split(be, &whole, n, vp);
    }
    for (int i = 0; i < 3; i++)
        pb_backend_free(be, scratch[i].data);
    pb_plain_release(be, &tmp);
    return n < 0 ? -1 : 0;
}

static int slice_backward(const struct pb_layer *l, const struct pb_fwd_ctx *c,
                          const struct pb_tensor *const *in, const struct pb_node_act *act,
                          const struct pb_tensor *dy, const float *params, float *grads,
                          struct pb_tensor *const *dx, struct pb_err *e)
{
    (void)act;
    (void)params;
    (void)grads;
    struct pb_backend *be = c->be;
    if (!dx[0])
        return 0;
    struct pb_tensor dyp, plain = {0}, views[3], scratch[3] = {{0}};
    const struct pb_tensor *g, *vp[3] = {&views[0], &views[1], &views[2]};
    if (pb_plain_view(be, dy, &dyp, &g, e))
        return -1;
    int rc = 0;
    struct pb_tensor *target = dx[0];
    if (dx[0]->layout != PB_LAYOUT_PLAIN) {
        rc = pb_tensor_alloc(be, &plain, in[0]->shape, PB_LAYOUT_PLAIN, PB_MEM_SCRATCH, e);
        target = &plain;
    }
    int n = rc ? -1 : part_views(l, be, g->data, views, scratch, e);
    for (int i = 0; i < 3; i++)
        if (scratch[i].data)
            be->ops->fill(be, scratch[i].data, 0.0f, pb_shape_count(scratch[i].shape));
    if (n == 1)
        be->ops->copy(be, target->data, g->data, pb_shape_count(l->out_shape) * sizeof(float));
    else if (n > 1) {
        struct pb_tensor whole = axis_view(target->data, in[0]->shape, l->cfg.slice_axis);
        be->ops->concat(be, n, vp, &whole);
    }
    if (n > 0 && target != dx[0])
        be->ops->reorder(be, &plain, dx[0]);
    for (int i = 0; i < 3; i++)
        pb_backend_free(be, scratch[i].data);
    pb_backend_free(be, plain.data);
    pb_plain_release(be, &dyp);
    return n < 0 ? -1 : 0;
}

const struct pb_layer_ops pb_feature_concat_ops = {
    .kind = "feature_concat",
    .infer = cat_infer,
    .param_count = pb_layer_zero_count,
    .buffer_count = pb_layer_zero_count,
    .init = pb_layer_no_init,
    .param_tensors = pb_layer_no_tensors,
    .forward = cat_forward,
    .backward = cat_backward,
    .flops = pb_layer_no_flops,
};

const struct pb_layer_ops pb_slice_ops = {
    .kind = "slice",
    .infer = slice_infer,
    .param_count = pb_layer_zero_count,
    .buffer_count = pb_layer_zero_count,
    .init = pb_layer_no_init,
    .param_tensors = pb_layer_no_tensors,
    .forward = slice_forward,
    .backward = slice_backward,
    .flops = pb_layer_no_flops,
};
