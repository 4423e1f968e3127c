/* harness/model/stage.c — forward and backward of a stage's blocks for one micro-batch
 * (stage.h). Node outputs stay in the layouts the backend chose; gradients take the
 * layout of the tensor they belong to, and fan-out (residual skips) sums them. */
#include "harness/model/stage.h"

#include <stdio.h>
#include <string.h>

#include "harness/base/clock.h"
#include "harness/model/layers/layer_util.h"

static int stage_nodes(const struct pb_stage *s)
{
    int n = 0;
    for (int b = s->first; b < s->last; b++)
        n += s->model->blocks[b].nnodes;
    return n;
}

void pb_stage_layout(struct pb_stage *s, const struct pb_model *m, int index, int nstages,
                     int first, int last)
{
    PB_CHECK(m->batch > 0 && first >= 0 && first < last && last <= m->nblocks);
    memset(s, 0, sizeof *s);
    s->model = m;
    s->index = index;
    s->nstages = nstages;
    s->first = first;
    s->last = last;
    int nb = last - first;
    s->param_off = pb_xcalloc((size_t)nb, sizeof *s->param_off);
    s->buffer_off = pb_xcalloc((size_t)nb, sizeof *s->buffer_off);
    for (int b = first; b < last; b++) {
        s->param_off[b - first] = s->nparams;
        s->buffer_off[b - first] = s->nbuffers;
        s->nparams += m->blocks[b].nparams;
        s->nbuffers += m->blocks[b].nbuffers;
    }
    s->in_shape = m->blocks[first].in_shape;
    s->out_shape = m->blocks[last - 1].out_shape;
    s->needs_lengths = pb_model_reads_lengths(m, first, last);
    if (index == nstages - 1)
        s->nlabels = m->batch * (m->label_steps ? m->label_steps : 1);
    /* a node's output needs a gradient when its layer has parameters or its inputs need
     * one; the stage input needs one except on the first stage (nothing is upstream) */
    s->needs_grad = pb_xcalloc((size_t)stage_nodes(s), sizeof *s->needs_grad);
    bool in_needed = index > 0;
    int idx = 0;
    for (int b = first; b < last; b++) {
        const struct pb_block *blk = &m->blocks[b];
        int base = idx;
        for (int i = 0; i < blk->nnodes; i++, idx++) {
            const struct pb_layer *l = &blk->nodes[i];
            bool need = l->ops->param_count(l) > 0;
            for (int j = 0; j < l->nin; j++)
                need |= l->in[j] < 0 ? in_needed : s->needs_grad[base + l->in[j]];
            s->needs_grad[idx] = need;
        }
        in_needed = s->needs_grad[idx - 1];
    }
}

/* Every op the stage's layers (and the last stage's loss) run is one the backend
 * implements: else an error naming the op, the layer and the backend. */
static int check_support(const struct pb_stage *s, struct pb_backend *be, struct pb_err *e)
{
    for (int b = s->first; b < s->last; b++) {
        const struct pb_block *blk = &s->model->blocks[b];
        for (int i = 0; i < blk->nnodes; i++) {
            enum pb_backend_op need[PB_BOP_NOPS];
            int n = pb_layer_backend_ops(&blk->nodes[i], need);
            for (int j = 0; j < n; j++)
                if (!be->ops->supports_op(be, need[j]))
                    return pb_err_set(e, "the %s backend does not implement %s, which layer '%s' "
                                         "(%s) of stage %d needs; run that stage on another "
                                         "backend", be->ops->name, pb_backend_op_names[need[j]],
                                      blk->nodes[i].name, blk->nodes[i].ops->kind, s->index);
        }
    }
    if (s->index == s->nstages - 1 && !be->ops->supports_op(be, PB_BOP_SOFTMAX_XENT))
        return pb_err_set(e, "the %s backend does not implement %s, which the loss of the last "
                             "stage needs", be->ops->name, pb_backend_op_names[PB_BOP_SOFTMAX_XENT]);
    return 0;
}

int pb_stage_init(struct pb_stage *s, struct pb_backend *be, const struct pb_model *m, int index,
                  int nstages, int first, int last, struct pb_err *e)
{
    pb_stage_layout(s, m, index, nstages, first, last);
    if (check_support(s, be, e)) {
        pb_stage_finish(s);
        return -1;
    }
    s->be = be;
    pb_backend_bind(be);  /* the thread that builds a stage binds its instance */
    s->params = pb_backend_alloc(be, s->nparams * sizeof(float), PB_MEM_PARAMS, e);
    s->grads = s->params ? pb_backend_alloc(be, s->nparams * sizeof(float), PB_MEM_GRADS, e) : NULL;
    s->buffers = s->grads ? pb_backend_alloc(be, s->nbuffers * sizeof(float), PB_MEM_BNSTATS, e)
                          : NULL;
    bool last_stage = index == nstages - 1;
    s->xent = s->buffers && last_stage
                  ? pb_backend_alloc(be, sizeof *s->xent, PB_MEM_SCRATCH, e) : NULL;
    if (!s->buffers || (last_stage && !s->xent)) {
        pb_stage_finish(s);
        return -1;
    }
    be->ops->fill(be, s->grads, 0.0f, s->nparams);
    return 0;
}

void pb_stage_finish(struct pb_stage *s)
{
    if (s->be) {
        pb_backend_free(s->be, s->params);
        pb_backend_free(s->be, s->grads);
        pb_backend_free(s->be, s->buffers);
        pb_backend_free(s->be, s->xent);
    }
    free(s->param_off);
    free(s->buffer_off);
    free(s->needs_grad);
    memset(s, 0, sizeof *s);
}

int pb_stage_init_params(struct pb_stage *s, uint64_t seed, struct pb_err *e)
{
    float *p = pb_xcalloc(s->nparams, sizeof *p), *buf = pb_xcalloc(s->nbuffers, sizeof *buf);
    for (int b = s->first; b < s->last; b++) {
        const struct pb_block *blk = &s->model->blocks[b];
        for (int i = 0; i < blk->nnodes; i++) {
            const struct pb_layer *l = &blk->nodes[i];
            l->ops->init(l, p + s->param_off[b - s->first] + l->param_off,
                         buf + s->buffer_off[b - s->first] + l->buffer_off, seed);
        }
    }
    pb_backend_bind(s->be);
    s->be->ops->upload(s->be, s->params, p, s->nparams * sizeof(float));
    s->be->ops->upload(s->be, s->buffers, buf, s->nbuffers * sizeof(float));
    s->be->ops->sync(s->be);  /* the uploads read p and buf until here */
    free(p);
    free(buf);
    return pb_backend_status(s->be, e);   /* a device that failed the uploads */
}

void pb_stage_act_release(struct pb_stage *s, struct pb_stage_act *act)
{
    if (act->nodes) {
        int n = stage_nodes(s);
        for (int i = 0; i < n; i++) {
            pb_backend_free(s->be, act->nodes[i].out.data);
            pb_backend_free(s->be, act->nodes[i].aux);
            pb_backend_free(s->be, act->nodes[i].kept);
        }
        free(act->nodes);
    }
    if (act->wdy) {
        int n = stage_nodes(s);
        for (int i = 0; i < n; i++)
            pb_backend_free(s->be, act->wdy[i].data);
        free(act->wdy);
    }
    pb_backend_free(s->be, act->input.data);
    pb_backend_free(s->be, act->dlogits);
    memset(act, 0, sizeof *act);
}

static int stage_loss(struct pb_stage *s, const struct pb_step_ctx *c, const struct pb_tensor *y,
                      const int32_t *labels, struct pb_stage_act *act, struct pb_err *e)
{
    struct pb_backend *be = s->be;
    /* logits [n, k]: a row per sample, or per step of a loss per token */
    bool per_step = s->model->label_steps > 0;
    int n = per_step ? y->shape.n * y->shape.c : y->shape.n, k = per_step ? y->shape.h : y->shape.c;
    struct pb_tensor tmp;
    const struct pb_tensor *logits;
    if (pb_plain_view(be, y, &tmp, &logits, e))
        return -1;
    if (c->train) {
        act->dlogits = pb_backend_alloc(be, (size_t)n * k * sizeof(float), PB_MEM_ACTS, e);
        if (!act->dlogits) {
            pb_plain_release(be, &tmp);
            return -1;
        }
    }
    int grad_rows = per_step && s->model->grad_per_sentence ? y->shape.n : 0;
    be->ops->softmax_xent(be, logits->data, labels, n, k, s->model->label_smoothing,
                          s->model->ignore_label, grad_rows, s->xent, act->dlogits);
    struct pb_xent_out res;
    be->ops->download(be, &res, s->xent, sizeof res);
    be->ops->sync(be);
    /* errors the device found in this pass (a token out of range) surface at the sync */
    if (pb_backend_status(be, e)) {
        pb_plain_release(be, &tmp);
        return -1;
    }
    act->loss = res.loss;
    act->correct = res.correct;
    act->count = res.count;
    pb_plain_release(be, &tmp);
    return 0;
}

/* The clock of a node's time (stage.h, node_s): after the backend's queued work. */
static double node_clock(struct pb_backend *be)
{
    be->ops->sync(be);
    return pb_now_s();
}

int pb_stage_forward(struct pb_stage *s, const struct pb_step_ctx *c, const float *w,
                     struct pb_tensor input, const int32_t *labels, struct pb_stage_act *act,
                     struct pb_tensor *out, struct pb_err *e)
{
    struct pb_backend *be = s->be;
    PB_CHECK(pb_shape_eq(input.shape, s->in_shape) && input.layout == PB_LAYOUT_PLAIN);
    memset(act, 0, sizeof *act);
    act->mb = c->mb;
    act->input = input;
    act->nodes = pb_xcalloc((size_t)stage_nodes(s), sizeof *act->nodes);
    struct pb_fwd_ctx fc = {be, c->train, c->seed, s->index, c->mb, c->lengths,
                            c->train ? NULL : c->attn_out, false, NULL};
    const struct pb_tensor *bin = &act->input;
    int idx = 0;
    for (int b = s->first; b < s->last; b++) {
        const struct pb_block *blk = &s->model->blocks[b];
        int base = idx;
        for (int i = 0; i < blk->nnodes; i++, idx++) {
            const struct pb_layer *l = &blk->nodes[i];
            const struct pb_tensor *ins[PB_LAYER_MAX_INPUTS];
            for (int j = 0; j < l->nin; j++)
                ins[j] = l->in[j] < 0 ? bin : &act->nodes[base + l->in[j]].out;
            const float *p = w + s->param_off[b - s->first] + l->param_off;
            float *buf = s->buffers + s->buffer_off[b - s->first] + l->buffer_off;
            bool timed = s->node_s && c->train;
            double t0 = timed ? node_clock(be) : 0.0;
            int rc = l->ops->forward(l, &fc, ins, p, buf, &act->nodes[idx], e);
            if (timed)
                s->node_s[2 * idx] += node_clock(be) - t0;
            if (rc || pb_backend_status(be, e)) {
                pb_stage_act_release(s, act);
                return -1;
            }
        }
        bin = &act->nodes[idx - 1].out;
    }
    int rc = 0;
    if (s->index == s->nstages - 1) {
        rc = stage_loss(s, c, bin, labels, act, e);
    } else {
        rc = pb_tensor_alloc(be, out, s->out_shape, PB_LAYOUT_PLAIN, PB_MEM_COMM, e);
        if (!rc && bin->layout == PB_LAYOUT_PLAIN)
            be->ops->copy(be, out->data, bin->data, pb_shape_count(s->out_shape) * sizeof(float));
        else if (!rc)
            be->ops->reorder(be, bin, out);
        if (!rc && pb_backend_status(be, e)) {
            pb_backend_free(be, out->data);
            out->data = NULL;
            rc = -1;
        }
    }
    if (rc || !c->train) {
        float loss = act->loss;
        int correct = act->correct, count = act->count;
        pb_stage_act_release(s, act);
        act->loss = loss;
        act->correct = correct;
        act->count = count;
    }
    return rc;
}

/* Gradient buffers of one backward: g[i] for node i's output, gin for a block's input. */
struct grad_state {
    struct pb_tensor *g;
    struct pb_tensor gin;
};

/* The tensor a node's input j gradient goes to, allocating it on first use. */
static int grad_target(struct pb_stage *s, struct pb_tensor *target,
                       const struct pb_tensor *producer, enum pb_mem_kind kind,
                       struct pb_tensor **dx, struct pb_tensor *temp, struct pb_err *e)
{
    if (!target->data) {
        if (pb_tensor_alloc(s->be, target, producer->shape, producer->layout, kind, e))
            return -1;
        *dx = target;
        return 0;
    }
    if (pb_tensor_alloc(s->be, temp, producer->shape, producer->layout, PB_MEM_SCRATCH, e))
        return -1;
    *dx = temp;
    return 0;
}

static int node_backward(struct pb_stage *s, const struct pb_fwd_ctx *fc, struct pb_stage_act *act,
                         struct grad_state *gs, int b, int base, int i, const float *w,
                         struct pb_err *e)
{
    struct pb_backend *be = s->be;
    const struct pb_block *blk = &s->model->blocks[b];
    const struct pb_layer *l = &blk->nodes[i];
    const struct pb_tensor *bin = b == s->first ? &act->input : &act->nodes[base - 1].out;
    /* the block input needs a gradient: the stage's own input except on the first stage,
     * else the previous block's output when something upstream of it trains */
    bool bin_needed = b == s->first ? s->index > 0 : s->needs_grad[base - 1];
    const struct pb_tensor *ins[PB_LAYER_MAX_INPUTS];
    struct pb_tensor *dx[PB_LAYER_MAX_INPUTS] = {0}, *targets[PB_LAYER_MAX_INPUTS] = {0};
    struct pb_tensor temps[PB_LAYER_MAX_INPUTS] = {{0}};
    int rc = 0;
    for (int j = 0; j < l->nin && !rc; j++) {
        ins[j] = l->in[j] < 0 ? bin : &act->nodes[base + l->in[j]].out;
        if (!(l->in[j] < 0 ? bin_needed : s->needs_grad[base + l->in[j]]))
            continue;  /* no parameter upstream of it on the first stage */
        targets[j] = l->in[j] < 0 ? &gs->gin : &gs->g[base + l->in[j]];
        enum pb_mem_kind kind = l->in[j] < 0 && b == s->first ? PB_MEM_COMM : PB_MEM_SCRATCH;
        rc = grad_target(s, targets[j], ins[j], kind, &dx[j], &temps[j], e);
    }
    const float *p = w + s->param_off[b - s->first] + l->param_off;
    float *gr = s->grads + s->param_off[b - s->first] + l->param_off;
    if (!rc)
        rc = l->ops->backward(l, fc, ins, &act->nodes[base + i], &gs->g[base + i], p, gr, dx, e);
    if (!rc)
        rc = pb_backend_status(be, e);
    for (int j = 0; j < l->nin; j++) {
        if (!temps[j].data)
            continue;
        if (!rc)
            be->ops->add(be, targets[j]->data, temps[j].data, targets[j]->data,
                         pb_tensor_floats(s->be, &temps[j]));
        pb_backend_free(be, temps[j].data);
    }
    return rc;
}

/* Whether the W pass computes layer l's weight gradient: it has weights and a
 * separate weight-gradient pass (else its whole backward runs in I). */
static bool splits(const struct pb_layer *l)
{
    return l->ops->backward_weights && l->ops->param_count(l) > 0;
}

/* keep[i]: node i's output is an input of a layer whose weight gradient W computes;
 * returns whether the stage input is. */
static bool w_inputs(const struct pb_stage *s, bool *keep)
{
    bool input = false;
    int base = 0;
    for (int b = s->first; b < s->last; b++) {
        const struct pb_block *blk = &s->model->blocks[b];
        for (int i = 0; i < blk->nnodes; i++) {
            const struct pb_layer *l = &blk->nodes[i];
            for (int j = 0; j < l->nin && splits(l); j++) {
                if (l->in[j] >= 0)
                    keep[base + l->in[j]] = true;
                else if (b == s->first)
                    input = true;
                else
                    keep[base - 1] = true;
            }
        }
        base += blk->nnodes;
    }
    return input;
}

/* The fused backward (pass B) or the split backward's input-gradient pass (I): I skips
 * the weight gradients of the layers that split and keeps in act what their W needs
 * (their inputs, and dY or what the layer kept itself, pb_node_act.kept); everything
 * else is released as B releases it. */
static int backward(struct pb_stage *s, const struct pb_step_ctx *c, const float *w,
                    struct pb_stage_act *act, const struct pb_tensor *dy, struct pb_tensor *dx,
                    bool input_only, struct pb_err *e)
{
    struct pb_backend *be = s->be;
    int n = stage_nodes(s);
    struct grad_state gs = {.g = pb_xcalloc((size_t)n, sizeof *gs.g)};
    struct pb_fwd_ctx fc = {be, true, c->seed, s->index, act->mb, NULL, NULL, input_only, NULL};
    bool *keep = pb_xcalloc((size_t)n, sizeof *keep), keep_input = false;
    if (input_only) {
        keep_input = w_inputs(s, keep);
        act->wdy = pb_xcalloc((size_t)n, sizeof *act->wdy);
    }
    const struct pb_tensor *y = &act->nodes[n - 1].out;
    struct pb_tensor src = {act->dlogits, y->shape, PB_LAYOUT_PLAIN};
    if (s->index != s->nstages - 1) {
        PB_CHECK(dy && pb_shape_eq(dy->shape, s->out_shape) && dy->layout == PB_LAYOUT_PLAIN);
        src.data = dy->data;
    }
    int rc = pb_tensor_clone_as(be, &src, y->layout, PB_MEM_SCRATCH, &gs.g[n - 1], e);
    int idx = n;
    for (int b = s->last - 1; b >= s->first && !rc; b--) {
        const struct pb_block *blk = &s->model->blocks[b];
        int base = idx - blk->nnodes;
        for (int i = blk->nnodes - 1; i >= 0 && !rc; i--) {
            if (gs.g[base + i].data) {
                double t0 = s->node_s ? node_clock(be) : 0.0;
                fc.kept = input_only ? &act->nodes[base + i].kept : NULL;
                rc = node_backward(s, &fc, act, &gs, b, base, i, w, e);
                if (s->node_s)
                    s->node_s[2 * (base + i) + 1] += node_clock(be) - t0;
            }
            if (input_only && splits(&blk->nodes[i]) && !act->nodes[base + i].kept) {
                /* held for W: counted with the activations from now on */
                act->wdy[base + i] = gs.g[base + i];
                if (gs.g[base + i].data)
                    pb_backend_take(be, be, gs.g[base + i].data, PB_MEM_ACTS);
            } else {  /* a layer that kept its own (act->nodes[].kept) reads that in W */
                pb_backend_free(be, gs.g[base + i].data);
            }
            gs.g[base + i].data = NULL;
            if (!keep[base + i]) {
                pb_backend_free(be, act->nodes[base + i].out.data);
                act->nodes[base + i].out.data = NULL;
            }
            pb_backend_free(be, act->nodes[base + i].aux);
            act->nodes[base + i].aux = NULL;
        }
        if (b > s->first) {
            gs.g[base - 1] = gs.gin;
            gs.gin.data = NULL;
        }
        idx = base;
    }
    for (int i = 0; i < n; i++)
        pb_backend_free(be, gs.g[i].data);
    free(gs.g);
    free(keep);
    if (!rc)
        rc = pb_backend_status(be, e);
    if (!rc && s->index > 0) {
        PB_CHECK(gs.gin.data && gs.gin.layout == PB_LAYOUT_PLAIN);
        *dx = gs.gin;
    } else {
        pb_backend_free(be, gs.gin.data);
    }
    if (rc || !input_only) {
        pb_stage_act_release(s, act);
        return rc;
    }
    pb_backend_free(be, act->dlogits);
    act->dlogits = NULL;
    if (!keep_input) {
        pb_backend_free(be, act->input.data);
        act->input.data = NULL;
    }
    return 0;
}

int pb_stage_backward(struct pb_stage *s, const struct pb_step_ctx *c, const float *w,
                      struct pb_stage_act *act, const struct pb_tensor *dy, struct pb_tensor *dx,
                      struct pb_err *e)
{
    return backward(s, c, w, act, dy, dx, false, e);
}

int pb_stage_backward_input(struct pb_stage *s, const struct pb_step_ctx *c, const float *w,
                            struct pb_stage_act *act, const struct pb_tensor *dy,
                            struct pb_tensor *dx, struct pb_err *e)
{
    return backward(s, c, w, act, dy, dx, true, e);
}

int pb_stage_backward_weights(struct pb_stage *s, const struct pb_step_ctx *c,
                              struct pb_stage_act *act, struct pb_err *e)
{
    PB_CHECK(act->wdy);
    struct pb_backend *be = s->be;
    struct pb_fwd_ctx fc = {be, true, c->seed, s->index, act->mb, NULL, NULL, false, NULL};
    int rc = 0, idx = stage_nodes(s);
    for (int b = s->last - 1; b >= s->first && !rc; b--) {
        const struct pb_block *blk = &s->model->blocks[b];
        int base = idx - blk->nnodes;
        const struct pb_tensor *bin = b == s->first ? &act->input : &act->nodes[base - 1].out;
        for (int i = blk->nnodes - 1; i >= 0 && !rc; i--) {
            const struct pb_layer *l = &blk->nodes[i];
            if (!act->wdy[base + i].data && !act->nodes[base + i].kept)
                continue;  /* no gradient reached it */
            const struct pb_tensor *ins[PB_LAYER_MAX_INPUTS];
            for (int j = 0; j < l->nin; j++)
                ins[j] = l->in[j] < 0 ? bin : &act->nodes[base + l->in[j]].out;
            float *gr = s->grads + s->param_off[b - s->first] + l->param_off;
            /* a layer that kept its own reads that, not dY */
            struct pb_tensor no_dy = {.shape = l->out_shape, .layout = PB_LAYOUT_PLAIN};
            const struct pb_tensor *dy = act->wdy[base + i].data ? &act->wdy[base + i] : &no_dy;
            rc = l->ops->backward_weights(l, &fc, ins, &act->nodes[base + i], dy, gr, e);
        }
        idx = base;
    }
    if (!rc)
        rc = pb_backend_status(be, e);
    pb_stage_act_release(s, act);
    return rc;
}

void pb_stage_tensors(const struct pb_stage *s,
                      void (*fn)(void *ctx, const struct pb_stage_tensor *t), void *ctx)
{
    char name[256], legacy[256];
    for (int b = s->first; b < s->last; b++) {
        const struct pb_block *blk = &s->model->blocks[b];
        for (int i = 0; i < blk->nnodes; i++) {
            const struct pb_layer *l = &blk->nodes[i];
            struct pb_param_tensor pt[PB_LAYER_MAX_TENSORS];
            size_t off = s->param_off[b - s->first] + l->param_off;
            int k = l->ops->param_tensors(l, pt);
            char prefix[160];
            if (blk->top_level)
                snprintf(prefix, sizeof prefix, "%s", l->name);
            else
                snprintf(prefix, sizeof prefix, "%s.%s", blk->name, l->name);
            for (int j = 0; j < k; j++) {
                snprintf(name, sizeof name, "%s.%s", prefix, pt[j].name);
                if (l->legacy_name)
                    snprintf(legacy, sizeof legacy, "%s.%s.%s", blk->name, l->legacy_name,
                             pt[j].name);
                struct pb_stage_tensor t = {name, false, off, pb_param_tensor_count(&pt[j]),
                                            pt[j].ndim, {0}, l,
                                            l->legacy_name ? legacy : NULL};
                memcpy(t.shape, pt[j].shape, sizeof t.shape);
                fn(ctx, &t);
                off += t.count;
            }
            size_t nbuf = l->ops->buffer_count(l);
            if (nbuf) {
                size_t boff = s->buffer_off[b - s->first] + l->buffer_off;
                static const char *const stats[] = {"running_mean", "running_var"};
                for (int j = 0; j < 2; j++) {
                    snprintf(name, sizeof name, "%s.%s", prefix, stats[j]);
                    if (l->legacy_name)
                        snprintf(legacy, sizeof legacy, "%s.%s.%s", blk->name, l->legacy_name,
                                 stats[j]);
                    struct pb_stage_tensor t = {name, true, boff + j * (nbuf / 2), nbuf / 2, 1,
                                                {(int64_t)(nbuf / 2)}, l,
                                                l->legacy_name ? legacy : NULL};
                    fn(ctx, &t);
                }
            }
        }
    }
}
