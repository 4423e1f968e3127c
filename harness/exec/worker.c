/* harness/exec/worker.c — one device's execution of F, B, I, W and U ops (worker.h), with the
 * weight-version rules of semantics §4 and the staleness and prediction-error metrics
 * of semantics §6.2 and §6.3. */
#include "harness/exec/worker.h"

#include "harness/base/clock.h"
#include "harness/base/interrupt.h"
#include "predictors/predictor.h"

#include <limits.h>
#include <math.h>
#include <string.h>
#include <time.h>

/* A prediction is compared with the real weights of its target version at most once
 * per this many updates: it costs two copies of the stage's weights and two norms,
 * outside the op timings; every 8 updates that was 3.5% of an mlp epoch's wall time
 * (bench_executor), every 32 it is below 1%, with 29 samples a stage in a
 * Fashion-MNIST epoch of micro-batches of 64. */
#define PROBE_EVERY 32

double pb_worker_clock(const struct pb_worker *w)
{
    return pb_now_s() - ((double)w->epoch_t0.tv_sec + 1e-9 * (double)w->epoch_t0.tv_nsec);
}

static bool is_first(const struct pb_worker *w) { return w->stage->index == 0; }
static bool is_last(const struct pb_worker *w) { return w->stage->index == w->stage->nstages - 1; }

int pb_worker_init(struct pb_worker *w, struct pb_stage *s, const struct pb_optim_cfg *oc,
                   const struct pb_pipe *pipe, uint64_t seed, struct pb_err *e)
{
    memset(w, 0, sizeof *w);
    w->stage = s;
    pb_backend_bind(s->be);  /* the thread that sets a worker up binds its instance */
    w->pipe = *pipe;
    w->seed = seed;
    w->probe_target = -1;
    pb_wstore_init(&w->ws, s->be, s->nparams);
    w->acts = pb_xcalloc((size_t)pipe->length, sizeof *w->acts);
    if (pb_optim_init(&w->optim, s->be, oc, s->nparams, e))
        return -1;
    int b = s->model->batch;
    if (is_last(w)) {
        size_t bytes = (size_t)s->nlabels * sizeof(int32_t);
        w->host_y = pb_xmalloc(bytes);
        pb_backend_account(s->be, PB_MEM_HOST, bytes, true);
        w->labels = pb_backend_alloc(s->be, bytes, PB_MEM_COMM, e);
        if (!w->labels)
            return -1;
    }
    if (s->needs_lengths) {
        w->host_len = pb_xmalloc((size_t)b * sizeof(int32_t));
        pb_backend_account(s->be, PB_MEM_HOST, (size_t)b * sizeof(int32_t), true);
        w->lengths = pb_backend_alloc(s->be, (size_t)b * sizeof(int32_t), PB_MEM_COMM, e);
        if (!w->lengths)
            return -1;
    }
    return 0;
}

void pb_worker_finish(struct pb_worker *w)
{
    if (!w->stage)
        return;
    for (int j = 0; j < w->pipe.length; j++)
        if (w->acts[j].nodes)
            pb_stage_act_release(w->stage, &w->acts[j]);
    pb_optim_finish(&w->optim, w->stage->be);
    pb_wstore_finish(&w->ws);
    pb_backend_free(w->stage->be, w->labels);
    pb_backend_free(w->stage->be, w->lengths);
    free(w->acts);
    free(w->events);
    for (int k = 0; k < PB_OP_NKINDS; k++)
        free(w->op_times[k].s);
    pb_version_plan_finish(&w->plan);
    free(w->host_y);
    free(w->host_len);
    free(w->probe);
    memset(w, 0, sizeof *w);
}

int pb_worker_begin_epoch(struct pb_worker *w, int epoch, const struct pb_program *prog,
                          struct pb_data_view data, struct pb_err *e)
{
    PB_CHECK(w->nacc == 0);
    w->epoch = epoch;
    w->u_epoch = w->u;
    w->data = data;
    w->prog = prog;
    w->evaluating = false;
    pb_version_plan_finish(&w->plan);
    pb_version_plan_init(&w->plan, &w->pipe, prog);
    if (pb_wstore_reserve(&w->ws, w->plan.stash_slots, w->plan.group_slots, e))
        return -1;
    memset(&w->st, 0, sizeof w->st);
    for (int k = 0; k < PB_OP_NKINDS; k++)
        w->op_times[k].n = 0;
    pb_optim_set_epoch(&w->optim, epoch);
    pb_backend_reset_peaks(w->stage->be);
    clock_gettime(CLOCK_MONOTONIC, &w->epoch_t0);
    return 0;
}

int pb_worker_begin_eval(struct pb_worker *w, const struct pb_program *prog,
                         struct pb_data_view data, struct pb_err *e)
{
    PB_CHECK(w->nacc == 0);
    (void)e;
    w->u_epoch = w->u;
    w->data = data;
    w->prog = prog;
    w->evaluating = true;
    memset(&w->eval, 0, sizeof w->eval);
    pb_version_plan_finish(&w->plan);
    pb_version_plan_init(&w->plan, &w->pipe, prog);
    return 0;
}

/* The op's entry in the version plan. */
static const struct pb_op_version *version_of(const struct pb_worker *w, const struct pb_op *op)
{
    PB_CHECK(op >= w->prog->ops && op < w->prog->ops + w->prog->n);
    return &w->plan.ops[op - w->prog->ops];
}

/* Marks a prediction to compare with the real weights of its target version, at most
 * one at a time and once per PROBE_EVERY updates; probe_keep copies it after the op's
 * timing. */
static void probe_start(struct pb_worker *w, const float *pred, long target)
{
    if (w->probe_target >= 0 || w->probe_pending || w->u % PROBE_EVERY != 0 || target <= w->u)
        return;
    w->probe_pending = pred;
    w->probe_pending_target = target;
}

static void probe_keep(struct pb_worker *w)
{
    if (!w->probe_pending)
        return;
    struct pb_backend *be = w->stage->be;
    size_t n = w->stage->nparams;
    if (!w->probe) {
        /* the prediction and, for probe_finish, the real weights: kept, not reallocated */
        w->probe = pb_xmalloc(2 * n * sizeof(float) + 1);
        pb_backend_account(be, PB_MEM_HOST, 2 * n * sizeof(float), true);
    }
    be->ops->download(be, w->probe, w->probe_pending, n * sizeof(float));
    be->ops->sync(be);
    w->probe_target = w->probe_pending_target;
    w->probe_pending = NULL;
}

static void probe_finish(struct pb_worker *w)
{
    if (w->probe_target != w->u)
        return;
    size_t n = w->stage->nparams;
    const float *pred = w->probe;
    float *cur = w->probe + n;
    w->stage->be->ops->download(w->stage->be, cur, w->stage->params, n * sizeof(float));
    w->stage->be->ops->sync(w->stage->be);
    /* ‖Ŵ − W‖² and ‖W‖² in double, over 8 interleaved partial sums (vectorised) */
    double diff[8] = {0}, norm[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) {
            double d = (double)pred[i + j] - (double)cur[i + j];
            diff[j] += d * d;
            norm[j] += (double)cur[i + j] * (double)cur[i + j];
        }
    for (; i < n; i++) {
        double d = (double)pred[i] - (double)cur[i];
        diff[0] += d * d;
        norm[0] += (double)cur[i] * (double)cur[i];
    }
    double dsum = 0, nsum = 0;
    for (int j = 0; j < 8; j++) {
        dsum += diff[j];
        nsum += norm[j];
    }
    double err = nsum > 0 ? sqrt(dsum / nsum) : 0.0;
    w->st.pred_err_sum += err;
    if (err > w->st.pred_err_max)
        w->st.pred_err_max = err;
    w->st.pred_count++;
    w->probe_target = -1;
}

/* The weights an F or B reads, the version v of the plan names (epoch-local). The
 * store's own state must agree with the plan: a disagreement is a broken invariant. */
static const float *resolve(struct pb_worker *w, const struct pb_op *op,
                            const struct pb_op_version *v, struct pb_err *e)
{
    struct pb_backend *be = w->stage->be;
    float *params = w->stage->params;
    long base = w->u_epoch + v->base;
    PB_CHECK(v->base >= 0);
    switch ((enum pb_wsrc)op->wsrc) {
    case PB_W_LATEST:
        PB_CHECK(base == w->u);
        return params;
    case PB_W_STASHED:
        if (v->live) {
            PB_CHECK(base == w->u);
            return params;
        }
        return pb_wstore_stashed(&w->ws, base);
    case PB_W_PREDICTED: {
        PB_CHECK(base == w->u);
        if (op->s == 0)
            return params;  /* Ŵ = W − lr·0·ΔW = W: no copy */
        float *pred = pb_wstore_pred(&w->ws, e);
        if (!pred)
            return NULL;
        pb_predict(be, &w->optim, op->pform, (float)op->s, params, pred);
        probe_start(w, pred, w->u + op->s);
        return pred;
    }
    case PB_W_GROUP: {
        if (op->s == 0) {
            /* no update falls between the mini-batch's first forward and its update */
            PB_CHECK(base == w->u);
            return params;
        }
        long key = op->mb / w->pipe.microbatches, made;
        const float *g = pb_wstore_group_get(&w->ws, key, &made);
        if (g) {
            PB_CHECK(made == base);
            return g;
        }
        PB_CHECK(op->kind == PB_OP_F && op->mb % w->pipe.microbatches == 0 && base == w->u);
        float *pred = pb_wstore_group_new(&w->ws, key, base);
        pb_predict(be, &w->optim, op->pform, (float)op->s, params, pred);
        probe_start(w, pred, w->u + op->s);
        return pred;
    }
    case PB_W_BUFFERED:
        if (base == w->u)
            return params;
        PB_CHECK(base == w->ws.older_version);
        return w->ws.older;
    case PB_W_VERTICAL:
        if (v->live) {
            PB_CHECK(base == w->u);
            return params;
        }
        return pb_wstore_stashed(&w->ws, base);
    }
    PB_CHECK(!"unknown weight source");
    return NULL;
}

/* An op's clock: the host's at its start, and the backend's mark where it keeps its
 * own (a GPU's events: the op's time on the device, not the host's around its launch). */
struct op_clock {
    double t0;
    void *mark;
};

static struct op_clock clock_start(struct pb_backend *be)
{
    return (struct op_clock){pb_now_s(), be->ops->timer_mark ? be->ops->timer_mark(be) : NULL};
}

/* Releases the clock's mark of an op that failed. */
static void clock_drop(struct pb_backend *be, struct op_clock *c)
{
    if (c->mark)
        be->ops->timer_elapsed(be, c->mark, c->mark);
    c->mark = NULL;
}

/* Ends the op: syncs the backend and returns the op's seconds (the device's between the
 * marks, else the host's from the start to the end of the sync). */
static double clock_stop(struct pb_backend *be, struct op_clock *c)
{
    void *end = c->mark ? be->ops->timer_mark(be) : NULL;
    be->ops->sync(be);
    double host = pb_now_s() - c->t0;
    if (!c->mark)
        return host;
    if (!end) {
        be->ops->timer_elapsed(be, c->mark, c->mark);
        return host;
    }
    return be->ops->timer_elapsed(be, c->mark, end);
}

/* Staleness of an F or B: the synchronous run's version minus the one read (semantics §6.2). */
static void note_staleness(struct pb_worker *w, const struct pb_op *op, const struct pb_op_version *v)
{
    double d = (double)(v->sync - (v->base + v->ahead));
    if (op->kind == PB_OP_F) {
        w->st.f_stale_sum += d;
        w->st.f_count++;
        if (w->st.f_count == 1 || d > w->st.f_stale_max)
            w->st.f_stale_max = d;
    } else {
        w->st.b_stale_sum += d;
        w->st.b_count++;
        if (w->st.b_count == 1 || d > w->st.b_stale_max)
            w->st.b_stale_max = d;
    }
}

/* Logs the op when the trace window holds it (a U: the backward before it). */
static void note_event(struct pb_worker *w, const struct pb_op *op, const struct pb_op_version *v,
                       double t0, double t1)
{
    w->st.ops++;
    if (w->op_times[op->kind].n == w->op_times[op->kind].cap) {
        int cap = w->op_times[op->kind].cap ? 2 * w->op_times[op->kind].cap : 256;
        w->op_times[op->kind].s = realloc(w->op_times[op->kind].s, (size_t)cap * sizeof(double));
        PB_CHECK(w->op_times[op->kind].s != NULL);
        w->op_times[op->kind].cap = cap;
    }
    w->op_times[op->kind].s[w->op_times[op->kind].n++] = t1 - t0;
    int mb = op->kind == PB_OP_U ? w->last_b_mb : op->mb;
    if (!w->trace.on || mb < w->trace.mb_lo || mb >= w->trace.mb_hi)
        return;
    if (w->st.nevents == w->events_cap) {
        w->events_cap = w->events_cap ? 2 * w->events_cap : 1024;
        w->events = realloc(w->events, (size_t)w->events_cap * sizeof *w->events);
        PB_CHECK(w->events != NULL);
    }
    double origin = (double)w->epoch_t0.tv_sec + 1e-9 * (double)w->epoch_t0.tv_nsec;
    struct pb_event_record *ev = &w->events[w->st.nevents];
    *ev = (struct pb_event_record){
        .device = w->stage->index,
        .seq = (int)(op - w->prog->ops),
        .kind = pb_op_letter(op->kind),
        .mb = op->kind == PB_OP_U ? -1 : op->mb,
        .version = (int)(w->u_epoch + v->base),
        .ahead = v->ahead,
        .sync_version = (int)(w->u_epoch + v->sync),
        .pair = op->pair,
        .start_s = t0 - origin,
        .end_s = t1 - origin,
    };
    w->st.nevents++;
}

void pb_workers_link(struct pb_worker *workers, int n)
{
    for (int k = 0; k < n; k++) {
        workers[k].prev_be = k > 0 ? workers[k - 1].stage->be : NULL;
        workers[k].next_be = k < n - 1 ? workers[k + 1].stage->be : NULL;
    }
}

/* Whether be copies from other's memory itself (a peer copy between two devices). */
static bool peer_copies(const struct pb_backend *be, const struct pb_backend *other)
{
    return be->ops->copy_peer && other->ops == be->ops;
}

int pb_msg_to_tensor(struct pb_backend *be, struct pb_msg *m, enum pb_mem_kind kind,
                     struct pb_tensor *t, struct pb_err *e)
{
    int rc = 0;
    if (m->host) {
        rc = pb_tensor_alloc(be, t, m->shape, PB_LAYOUT_PLAIN, kind, e);
        if (!rc) {
            be->ops->upload(be, t->data, m->host, pb_shape_count(m->shape) * sizeof(float));
            be->ops->sync(be);  /* the upload reads the host copy until here */
        }
        free(m->host);
        m->host = NULL;
    } else if (m->be->ops->shares_memory(m->be, be)) {
        pb_backend_take(be, m->be, m->data, kind);
        *t = (struct pb_tensor){m->data, m->shape, PB_LAYOUT_PLAIN};
    } else if (peer_copies(be, m->be)) {
        rc = pb_tensor_alloc(be, t, m->shape, PB_LAYOUT_PLAIN, kind, e);
        if (!rc)
            be->ops->copy_peer(be, t->data, m->be, m->data,
                               pb_shape_count(m->shape) * sizeof(float));
        pb_backend_free_read(m->be, m->data, be);
    } else {
        rc = pb_tensor_alloc(be, t, m->shape, PB_LAYOUT_PLAIN, kind, e);
        if (!rc)
            rc = pb_backend_copy_across(be, t->data, m->be, m->data,
                                        pb_shape_count(m->shape) * sizeof(float), e);
        pb_backend_free(m->be, m->data);
    }
    m->data = NULL;
    return rc;
}

static int msg_to_tensor(struct pb_worker *w, struct pb_msg *m, enum pb_mem_kind kind,
                         struct pb_tensor *t, struct pb_err *e)
{
    double t0 = pb_now_s();
    int rc = pb_msg_to_tensor(w->stage->be, m, kind, t, e);
    w->st.comm_s += pb_now_s() - t0;
    return rc;
}

double pb_msg_from_tensor(struct pb_backend *be, struct pb_backend *to, struct pb_tensor *t,
                          struct pb_msg *m)
{
    double s = 0;
    *m = (struct pb_msg){be, t->data, t->shape, NULL};
    if (to && !be->ops->shares_memory(be, to) && !peer_copies(to, be)) {
        double t0 = pb_now_s();
        size_t bytes = pb_shape_count(t->shape) * sizeof(float);
        m->host = pb_xmalloc(bytes ? bytes : 1);
        be->ops->download(be, m->host, t->data, bytes);
        be->ops->sync(be);
        pb_backend_free(be, t->data);
        m->data = NULL;
        s = pb_now_s() - t0;
    }
    t->data = NULL;
    return s;
}

/* The other way, to the stage before (up) or after. */
static void tensor_to_msg(struct pb_worker *w, struct pb_tensor *t, bool up, struct pb_msg *m)
{
    w->st.comm_s += pb_msg_from_tensor(w->stage->be, up ? w->prev_be : w->next_be, t, m);
}

/* The input of micro-batch mb: stage 0 asks the feed for the host inputs (and the labels
 * too when it is also the last stage) and uploads them; another stage takes the message. */
static int stage_input(struct pb_worker *w, int mb, struct pb_msg *in, struct pb_tensor *x,
                       struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    if (!is_first(w))
        return msg_to_tensor(w, in, PB_MEM_ACTS, x, e);
    if (pb_tensor_alloc(s->be, x, s->in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e))
        return -1;
    size_t bytes = pb_shape_count(s->in_shape) * sizeof(float);
    float *host = s->be->ops->write_begin(s->be, x->data, bytes);
    pb_feed_inputs(&w->data, mb, host, is_last(w) ? w->host_y : NULL);
    s->be->ops->write_end(s->be, x->data, host, bytes);
    return 0;
}

/* The per-sample data a stage reads beside its input, asked of the feed and uploaded:
 * the last stage's labels of micro-batch mb into the device buffer (stage 0, when it is
 * also the last, had a label per sample with its inputs; a loss per token reads the next
 * target tokens), and a sequence dataset's lengths (a translation dataset's source
 * lengths) on the stages whose layers read them. Returns the device lengths for the
 * forward, NULL where there are none. */
static const int32_t *stage_side(struct pb_worker *w, int mb)
{
    struct pb_stage *s = w->stage;
    int b = w->data.batch;
    if (is_last(w)) {
        pb_feed_labels(&w->data, mb, s->model->label_steps, is_first(w), w->host_y);
        s->be->ops->upload(s->be, w->labels, w->host_y, (size_t)s->nlabels * sizeof(int32_t));
    }
    if (!s->needs_lengths || !pb_feed_lengths(&w->data, mb, w->host_len))
        return NULL;
    s->be->ops->upload(s->be, w->lengths, w->host_len, (size_t)b * sizeof(int32_t));
    return w->lengths;
}

/* A validation forward: the current weights, nothing kept (semantics §1.4). */
static int exec_eval(struct pb_worker *w, const struct pb_op *op, struct pb_msg *in,
                     struct pb_msg *out, struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    struct pb_tensor x, y = {0};
    PB_CHECK(op->kind == PB_OP_F && op->wsrc == PB_W_LATEST);
    if (stage_input(w, op->mb, in, &x, e))
        return -1;
    const int32_t *lengths = stage_side(w, op->mb);
    struct pb_step_ctx c = {false, w->seed, op->mb, lengths, NULL};
    struct pb_stage_act act;
    if (pb_stage_forward(s, &c, s->params, x, w->labels, &act, &y, e))
        return -1;
    if (is_last(w)) {
        w->eval.loss_sum += act.loss;
        w->eval.correct += act.correct;
        w->eval.counted += act.count;
        w->eval.batches++;
    } else {
        s->be->ops->sync(s->be);  /* y is complete before another stage reads it */
        tensor_to_msg(w, &y, false, out);
    }
    return 0;
}

static int exec_forward(struct pb_worker *w, const struct pb_op *op, struct pb_msg *in,
                        struct pb_msg *out, struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    struct pb_tensor x, y = {0};
    if (stage_input(w, op->mb, in, &x, e))
        return -1;
    const int32_t *lengths = stage_side(w, op->mb);
    struct op_clock clk = clock_start(s->be);
    const struct pb_op_version *v = version_of(w, op);
    const float *wts = resolve(w, op, v, e);
    if (!wts) {
        clock_drop(s->be, &clk);
        pb_backend_free(s->be, x.data);
        return -1;
    }
    if (w->plan.stash[op - w->prog->ops])
        pb_wstore_stash(&w->ws, wts, w->u_epoch + v->base);
    struct pb_step_ctx c = {true, w->seed, (int64_t)w->epoch * w->pipe.length + op->mb, lengths,
                            NULL};
    if (pb_stage_forward(s, &c, wts, x, w->labels, &w->acts[op->mb], &y, e)) {
        clock_drop(s->be, &clk);
        return -1;
    }
    pb_wstore_note_versions(&w->ws, w->u, op->wsrc == PB_W_PREDICTED && op->s > 0);
    double dt = clock_stop(s->be, &clk);
    w->st.busy_s += dt;
    note_staleness(w, op, v);
    note_event(w, op, v, clk.t0, clk.t0 + dt);
    probe_keep(w);
    if (is_last(w)) {
        float loss = w->acts[op->mb].loss;
        w->diverged |= !isfinite(loss);
        w->st.loss_sum += loss;
        w->st.loss_count++;
    } else {
        tensor_to_msg(w, &y, false, out);
    }
    return 0;
}

/* B, or the split backward's I: receives dY (but on the last stage), sends dX (but on
 * the first); B adds the micro-batch's gradient, I leaves the weight gradients of the
 * layers that split to W. */
static int exec_backward(struct pb_worker *w, const struct pb_op *op, struct pb_msg *in,
                         struct pb_msg *out, struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    struct pb_tensor dy = {0}, dx = {0};
    if (!is_last(w) && msg_to_tensor(w, in, PB_MEM_COMM, &dy, e))
        return -1;
    struct op_clock clk = clock_start(s->be);
    const struct pb_op_version *v = version_of(w, op);
    const float *wts = resolve(w, op, v, e);
    struct pb_step_ctx c = {true, w->seed, (int64_t)w->epoch * w->pipe.length + op->mb, NULL,
                            NULL};
    const struct pb_tensor *dyp = is_last(w) ? NULL : &dy;
    int rc = !wts                  ? -1
             : op->kind == PB_OP_I ? pb_stage_backward_input(s, &c, wts, &w->acts[op->mb], dyp,
                                                             &dx, e)
                                   : pb_stage_backward(s, &c, wts, &w->acts[op->mb], dyp, &dx, e);
    pb_backend_free(s->be, dy.data);
    if (rc) {
        clock_drop(s->be, &clk);
        return -1;
    }
    pb_wstore_note_versions(&w->ws, w->u, op->wsrc == PB_W_PREDICTED && op->s > 0);
    if ((op->wsrc == PB_W_STASHED || op->wsrc == PB_W_VERTICAL) && !v->live)
        pb_wstore_unstash(&w->ws, w->u_epoch + v->base);
    if (op->kind == PB_OP_B) {
        w->nacc++;
        w->last_b_mb = op->mb;
    }
    double dt = clock_stop(s->be, &clk);
    w->st.busy_s += dt;
    note_staleness(w, op, v);
    note_event(w, op, v, clk.t0, clk.t0 + dt);
    if (!is_first(w))
        tensor_to_msg(w, &dx, true, out);
    return 0;
}

/* The split backward's W: the weight gradients I left, from what F and I kept; adds the
 * micro-batch's gradient, sends nothing. */
static int exec_weights(struct pb_worker *w, const struct pb_op *op, struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    struct op_clock clk = clock_start(s->be);
    const struct pb_op_version *v = version_of(w, op);
    PB_CHECK(op->wsrc == PB_W_LATEST && w->u_epoch + v->base == w->u);
    struct pb_step_ctx c = {true, w->seed, (int64_t)w->epoch * w->pipe.length + op->mb, NULL,
                            NULL};
    if (pb_stage_backward_weights(s, &c, &w->acts[op->mb], e)) {
        clock_drop(s->be, &clk);
        return -1;
    }
    w->nacc++;
    w->last_b_mb = op->mb;
    double dt = clock_stop(s->be, &clk);
    w->st.busy_s += dt;
    note_staleness(w, op, v);
    note_event(w, op, v, clk.t0, clk.t0 + dt);
    return 0;
}

/* --clip-grad: the stage's gradient g scaled by clip / (‖g‖₂ + 1e-6) where that is below 1
 * (torch's clip_grad_norm_ over the stage's parameters), with the backend's own ops:
 * ‖g‖² as the 1×1 product g·gᵀ, the scale in place. */
static int clip_gradient(struct pb_worker *w, struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    struct pb_backend *be = s->be;
    float clip = w->optim.cfg.clip_grad;
    if (!(clip > 0) || s->nparams == 0)
        return 0;
    PB_CHECK(s->nparams <= INT_MAX);
    int n = (int)s->nparams;
    float *sq = pb_backend_alloc(be, sizeof(float), PB_MEM_SCRATCH, e), norm2 = 0;
    if (!sq)
        return -1;
    be->ops->gemm(be, false, true, 1, 1, n, 1.0f, s->grads, n, s->grads, n, 0.0f, sq, 1);
    be->ops->download(be, &norm2, sq, sizeof norm2);
    be->ops->sync(be);
    pb_backend_free(be, sq);
    float coef = clip / (sqrtf(norm2) + 1e-6f);
    if (coef < 1.0f)
        be->ops->axpby(be, 0.0f, s->grads, coef, s->grads, s->nparams);
    return 0;
}

static int exec_update(struct pb_worker *w, const struct pb_op *op, struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    struct pb_backend *be = s->be;
    PB_CHECK(w->nacc > 0);
    struct op_clock clk = clock_start(be);
    /* the mean of the accumulated micro-batch gradients (semantics §1.2) */
    if (w->nacc > 1)
        be->ops->axpby(be, 0.0f, s->grads, 1.0f / (float)w->nacc, s->grads, s->nparams);
    if (clip_gradient(w, e) ||
        (w->plan.buffered && pb_wstore_keep_older(&w->ws, s->params, w->u, e))) {
        clock_drop(be, &clk);
        return -1;
    }
    int keep = w->plan.keep[op - w->prog->ops];
    if (keep > 0)  /* vertical sync: later ops read the version this update replaces */
        pb_wstore_keep(&w->ws, s->params, w->u, keep);
    pb_optim_step(&w->optim, be, s->params, s->grads);
    w->nacc = 0;
    w->u++;
    pb_wstore_group_drop(&w->ws, w->last_b_mb / w->pipe.microbatches);
    double dt = clock_stop(be, &clk);
    if (pb_backend_status(be, e))
        return -1;
    w->st.busy_s += dt;
    const struct pb_op_version *v = version_of(w, op);
    PB_CHECK(w->u_epoch + v->base == w->u);
    note_event(w, op, v, clk.t0, clk.t0 + dt);
    probe_finish(w);
    return 0;
}

int pb_worker_exec(struct pb_worker *w, const struct pb_op *op, struct pb_msg *in,
                   struct pb_msg *out, struct pb_err *e)
{
    int rc;
    pb_backend_bind(w->stage->be);  /* the executor's thread may run several stages */
    if (w->evaluating) {
        rc = exec_eval(w, op, in, out, e);
        if (rc)
            pb_err_prefix(e, "stage %d, validation F%d: ", w->stage->index, op->mb);
        return rc;
    }
    switch ((enum pb_op_kind)op->kind) {
    case PB_OP_F: rc = exec_forward(w, op, in, out, e); break;
    case PB_OP_B: rc = exec_backward(w, op, in, out, e); break;
    case PB_OP_I: rc = exec_backward(w, op, in, out, e); break;
    case PB_OP_W: rc = exec_weights(w, op, e); break;
    case PB_OP_U: rc = exec_update(w, op, e); break;
    default: PB_CHECK(!"unknown op kind"); rc = -1;
    }
    if (rc)
        pb_err_prefix(e, "stage %d, %c%d: ", w->stage->index, pb_op_letter(op->kind), op->mb);
    return rc;
}

int pb_worker_should_stop(const struct pb_worker *w, const struct pb_op *op, struct pb_err *e)
{
    if (w->diverged)
        return pb_err_set(e, "the loss is not finite at micro-batch %d: the run diverged (try a "
                             "smaller --lr)", op->mb);
    if (pb_interrupted_now())
        return pb_err_set(e, "interrupted by a second signal during epoch %d", w->epoch + 1);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the epoch's durations of one op kind (sorted in place), NaN if none. */
static double median_time(double *s, int n)
{
    if (n == 0)
        return NAN;
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

void pb_worker_record(struct pb_worker *w, struct pb_stage_record *r)
{
    const struct pb_worker_stats *st = &w->st;
    memset(r, 0, sizeof *r);
    r->busy_s = st->busy_s;
    r->wait_s = st->wait_s;
    r->comm_s = st->comm_s;
    for (int k = 0; k < PB_MEM_NKINDS; k++)
        r->mem_peak[k] = (int64_t)w->stage->be->mem_peak[k];
    r->versions_kept = w->ws.versions_peak;
    r->f_mean = st->f_count ? st->f_stale_sum / (double)st->f_count : 0;
    r->f_max = st->f_stale_max;
    r->b_mean = st->b_count ? st->b_stale_sum / (double)st->b_count : 0;
    r->b_max = st->b_stale_max;
    r->pred_count = st->pred_count;
    r->pred_err_mean = st->pred_count ? st->pred_err_sum / (double)st->pred_count : 0;
    r->pred_err_max = st->pred_err_max;
    for (int k = 0; k < PB_OP_NKINDS; k++)
        r->op_s[k] = median_time(w->op_times[k].s, w->op_times[k].n);
    r->sim_bubble = NAN;
}
