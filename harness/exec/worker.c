/* harness/exec/worker.c — one device's execution of F, B and U ops (worker.h), with the
 * weight-version rules of SPEC §4 and the staleness and prediction-error metrics of
 * SPEC §6. */
#include "harness/exec/worker.h"

#include "harness/base/interrupt.h"

#include <math.h>
#include <string.h>
#include <time.h>

/* A prediction is compared with the real weights of its target version at most once
 * per this many updates (it costs a copy and two norms, outside the op timings). */
#define PROBE_EVERY 8

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double pb_worker_clock(const struct pb_worker *w)
{
    return now_s() - ((double)w->epoch_t0.tv_sec + 1e-9 * (double)w->epoch_t0.tv_nsec);
}

static bool is_first(const struct pb_worker *w) { return w->stage->index == 0; }
static bool is_last(const struct pb_worker *w) { return w->stage->index == w->stage->nstages - 1; }

int pb_worker_init(struct pb_worker *w, struct pb_stage *s, const struct pb_optim_cfg *oc,
                   const struct pb_pipe *pipe, uint64_t seed, struct pb_err *e)
{
    memset(w, 0, sizeof *w);
    w->stage = s;
    w->pipe = *pipe;
    w->seed = seed;
    w->update_every = 1;
    w->probe_target = -1;
    pb_wstore_init(&w->ws, s->be, s->nparams);
    w->acts = pb_xcalloc((size_t)pipe->length, sizeof *w->acts);
    w->fwd_version = pb_xcalloc((size_t)pipe->length, sizeof *w->fwd_version);
    if (pb_optim_init(&w->optim, s->be, oc, s->nparams, e))
        return -1;
    int b = s->model->batch;
    if (is_first(w))
        w->host_x = pb_xmalloc(pb_shape_count(s->in_shape) * sizeof(float));
    if (is_last(w)) {
        w->host_y = pb_xmalloc((size_t)b * sizeof(int32_t));
        w->labels = pb_backend_alloc(s->be, (size_t)b * sizeof(int32_t), PB_MEM_COMM, e);
        if (!w->labels)
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
    free(w->acts);
    free(w->fwd_version);
    free(w->host_x);
    free(w->host_y);
    free(w->probe);
    memset(w, 0, sizeof *w);
}

void pb_worker_begin_epoch(struct pb_worker *w, int epoch, const struct pb_program *prog,
                           struct pb_data_view data)
{
    PB_CHECK(w->nacc == 0);
    w->epoch = epoch;
    w->u_epoch = w->u;
    w->data = data;
    w->stashes = w->buffered = false;
    int before_u = 0;
    bool seen_u = false;
    for (int i = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        w->stashes |= op->kind == PB_OP_B && op->wsrc == PB_W_STASHED;
        w->buffered |= op->wsrc == PB_W_BUFFERED;
        seen_u |= op->kind == PB_OP_U;
        before_u += !seen_u && op->kind == PB_OP_B;
    }
    w->update_every = before_u > 0 ? before_u : 1;
    memset(&w->st, 0, sizeof w->st);
    pb_optim_set_epoch(&w->optim, epoch);
    pb_backend_reset_peaks(w->stage->be);
    clock_gettime(CLOCK_MONOTONIC, &w->epoch_t0);
}

static long minibatch_key(const struct pb_worker *w, int mb)
{
    return (long)w->epoch * w->pipe.length + mb / w->pipe.microbatches;
}

/* Keeps a copy of a prediction to compare with the real weights of its target. */
static void probe_start(struct pb_worker *w, const float *pred, long target)
{
    if (w->probe_target >= 0 || w->u % PROBE_EVERY != 0 || target <= w->u)
        return;
    size_t n = w->stage->nparams;
    if (!w->probe)
        w->probe = pb_xmalloc(n * sizeof(float) + 1);
    w->stage->be->ops->download(w->stage->be, w->probe, pred, n * sizeof(float));
    w->probe_target = target;
}

static void probe_finish(struct pb_worker *w)
{
    if (w->probe_target != w->u)
        return;
    size_t n = w->stage->nparams;
    float *cur = pb_xmalloc(n * sizeof(float) + 1);
    w->stage->be->ops->download(w->stage->be, cur, w->stage->params, n * sizeof(float));
    double diff = 0, norm = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)w->probe[i] - cur[i];
        diff += d * d;
        norm += (double)cur[i] * cur[i];
    }
    free(cur);
    double err = norm > 0 ? sqrt(diff / norm) : 0.0;
    w->st.pred_err_sum += err;
    if (err > w->st.pred_err_max)
        w->st.pred_err_max = err;
    w->st.pred_count++;
    w->probe_target = -1;
}

/* The weights an F or B reads: *base is the version, *ahead its look-ahead. */
static const float *resolve(struct pb_worker *w, const struct pb_op *op, long *base, int *ahead,
                            struct pb_err *e)
{
    struct pb_backend *be = w->stage->be;
    float *params = w->stage->params;
    *ahead = 0;
    *base = w->u;
    switch ((enum pb_wsrc)op->wsrc) {
    case PB_W_LATEST:
        return params;
    case PB_W_STASHED:
        *base = w->fwd_version[op->mb];
        return pb_wstore_stashed(&w->ws, *base);
    case PB_W_PREDICTED: {
        float *pred = pb_wstore_pred(&w->ws, e);
        if (!pred)
            return NULL;
        be->ops->predict(be, &w->optim, op->pform, (float)op->s, params, pred);
        *ahead = op->s;
        probe_start(w, pred, w->u + op->s);
        return pred;
    }
    case PB_W_GROUP: {
        long key = minibatch_key(w, op->mb);
        const float *g = pb_wstore_group_get(&w->ws, key, base);
        *ahead = op->s;
        if (g)
            return g;
        PB_CHECK(op->kind == PB_OP_F && op->mb % w->pipe.microbatches == 0);
        float *pred = pb_wstore_group_new(&w->ws, key, w->u, e);
        if (!pred)
            return NULL;
        be->ops->predict(be, &w->optim, op->pform, (float)op->s, params, pred);
        probe_start(w, pred, w->u + op->s);
        return pred;
    }
    case PB_W_BUFFERED: {
        long b = op->mb / w->pipe.microbatches;
        *base = w->u_epoch + (b > 0 ? b - 1 : 0);
        if (*base == w->u)
            return params;
        PB_CHECK(*base == w->ws.older_version);
        return w->ws.older;
    }
    }
    PB_CHECK(!"unknown weight source");
    return NULL;
}

static void note_staleness(struct pb_worker *w, const struct pb_op *op, long base, int ahead)
{
    long sync = w->u_epoch + op->mb / w->update_every;
    double d = (double)(sync - (base + ahead));
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

static void note_event(struct pb_worker *w, const struct pb_op *op, long version, int ahead,
                       double t0, double t1)
{
    if (w->st.nevents >= PB_EVENTS_PER_EPOCH)
        return;
    double origin = (double)w->epoch_t0.tv_sec + 1e-9 * (double)w->epoch_t0.tv_nsec;
    struct pb_event_record *ev = &w->st.events[w->st.nevents];
    *ev = (struct pb_event_record){
        .device = w->stage->index,
        .seq = w->st.nevents,
        .kind = op->kind == PB_OP_F ? 'F' : op->kind == PB_OP_B ? 'B' : 'U',
        .mb = op->kind == PB_OP_U ? -1 : op->mb,
        .version = (int)version,
        .ahead = ahead,
        .start_s = t0 - origin,
        .end_s = t1 - origin,
    };
    w->st.nevents++;
}

float *pb_msg_alloc(size_t count)
{
    void *p = NULL;
    PB_CHECK(posix_memalign(&p, 64, count ? count * sizeof(float) : 64) == 0);
    return p;
}

/* Moves a host message into a tensor of this stage's backend: a host-memory backend
 * adopts the buffer, another gets a copy. */
static int msg_to_tensor(struct pb_worker *w, struct pb_msg *m, enum pb_mem_kind kind,
                         struct pb_tensor *t, struct pb_err *e)
{
    struct pb_backend *be = w->stage->be;
    double t0 = now_s();
    size_t bytes = pb_shape_count(m->shape) * sizeof(float);
    int rc = 0;
    if (be->ops->host_memory) {
        pb_backend_adopt(be, m->data, bytes, kind);
        *t = (struct pb_tensor){m->data, m->shape, PB_LAYOUT_PLAIN};
    } else {
        rc = pb_tensor_alloc(be, t, m->shape, PB_LAYOUT_PLAIN, kind, e);
        if (!rc)
            be->ops->upload(be, t->data, m->data, bytes);
        free(m->data);
    }
    m->data = NULL;
    w->st.comm_s += now_s() - t0;
    return rc;
}

/* The other way: a host-memory backend hands the buffer over, another copies. */
static void tensor_to_msg(struct pb_worker *w, struct pb_tensor *t, struct pb_msg *m)
{
    struct pb_backend *be = w->stage->be;
    double t0 = now_s();
    size_t n = pb_shape_count(t->shape);
    m->shape = t->shape;
    if (be->ops->host_memory) {
        pb_backend_disown(be, t->data);
        m->data = t->data;
    } else {
        m->data = pb_msg_alloc(n);
        be->ops->download(be, m->data, t->data, n * sizeof(float));
        pb_backend_free(be, t->data);
    }
    t->data = NULL;
    w->st.comm_s += now_s() - t0;
}

static int stage_input(struct pb_worker *w, int mb, struct pb_msg *in, struct pb_tensor *x,
                       struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    int b = w->data.batch;
    if (!is_first(w))
        return msg_to_tensor(w, in, PB_MEM_ACTS, x, e);
    if (pb_tensor_alloc(s->be, x, s->in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, e))
        return -1;
    bool direct = s->be->ops->host_memory;  /* gather straight into the tensor */
    pb_dataset_gather(w->data.ds, w->data.order, mb * b, b, direct ? x->data : w->host_x, w->host_y);
    if (!direct)
        s->be->ops->upload(s->be, x->data, w->host_x, pb_shape_count(s->in_shape) * sizeof(float));
    return 0;
}

static int exec_forward(struct pb_worker *w, const struct pb_op *op, struct pb_msg *in,
                        struct pb_msg *out, struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    struct pb_tensor x, y = {0};
    if (stage_input(w, op->mb, in, &x, e))
        return -1;
    double t0 = now_s();
    long base;
    int ahead;
    const float *wts = resolve(w, op, &base, &ahead, e);
    if (!wts || (w->stashes && pb_wstore_stash(&w->ws, wts, base, e))) {
        pb_backend_free(s->be, x.data);
        return -1;
    }
    w->fwd_version[op->mb] = base;
    if (is_last(w)) {
        int b = w->data.batch;
        if (!is_first(w))
            pb_dataset_gather(w->data.ds, w->data.order, op->mb * b, b, NULL, w->host_y);
        s->be->ops->upload(s->be, w->labels, w->host_y, (size_t)b * sizeof(int32_t));
    }
    struct pb_step_ctx c = {true, w->seed, (int64_t)w->epoch * w->pipe.length + op->mb};
    if (pb_stage_forward(s, &c, wts, x, w->labels, &w->acts[op->mb], &y, e))
        return -1;
    pb_wstore_note_versions(&w->ws, w->u, op->wsrc == PB_W_PREDICTED);
    double t1 = now_s();
    w->st.busy_s += t1 - t0;
    note_staleness(w, op, base, ahead);
    note_event(w, op, base, ahead, t0, t1);
    if (is_last(w)) {
        float loss = w->acts[op->mb].loss;
        w->diverged |= !isfinite(loss);
        w->st.loss_sum += loss;
        w->st.loss_count++;
    } else {
        tensor_to_msg(w, &y, out);
    }
    return 0;
}

static int exec_backward(struct pb_worker *w, const struct pb_op *op, struct pb_msg *in,
                         struct pb_msg *out, struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    struct pb_tensor dy = {0}, dx = {0};
    if (!is_last(w) && msg_to_tensor(w, in, PB_MEM_COMM, &dy, e))
        return -1;
    double t0 = now_s();
    long base;
    int ahead;
    const float *wts = resolve(w, op, &base, &ahead, e);
    struct pb_step_ctx c = {true, w->seed, (int64_t)w->epoch * w->pipe.length + op->mb};
    int rc = wts ? pb_stage_backward(s, &c, wts, &w->acts[op->mb], is_last(w) ? NULL : &dy, &dx, e)
                 : -1;
    pb_backend_free(s->be, dy.data);
    if (rc)
        return -1;
    pb_wstore_note_versions(&w->ws, w->u, op->wsrc == PB_W_PREDICTED);
    if (op->wsrc == PB_W_STASHED)
        pb_wstore_unstash(&w->ws, base);
    w->nacc++;
    w->last_b_mb = op->mb;
    double t1 = now_s();
    w->st.busy_s += t1 - t0;
    note_staleness(w, op, base, ahead);
    note_event(w, op, base, ahead, t0, t1);
    if (!is_first(w))
        tensor_to_msg(w, &dx, out);
    return 0;
}

static int exec_update(struct pb_worker *w, const struct pb_op *op, struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    struct pb_backend *be = s->be;
    PB_CHECK(w->nacc > 0);
    double t0 = now_s();
    /* the mean of the accumulated micro-batch gradients (SPEC §1) */
    if (w->nacc > 1)
        be->ops->axpby(be, 0.0f, s->grads, 1.0f / (float)w->nacc, s->grads, s->nparams);
    if (w->buffered && pb_wstore_keep_older(&w->ws, s->params, w->u, e))
        return -1;
    pb_optim_step(&w->optim, be, s->params, s->grads);
    be->ops->fill(be, s->grads, 0.0f, s->nparams);
    w->nacc = 0;
    w->u++;
    pb_wstore_group_drop(&w->ws, minibatch_key(w, w->last_b_mb));
    double t1 = now_s();
    w->st.busy_s += t1 - t0;
    note_event(w, op, w->u, 0, t0, t1);
    probe_finish(w);
    return 0;
}

int pb_worker_exec(struct pb_worker *w, const struct pb_op *op, struct pb_msg *in,
                   struct pb_msg *out, struct pb_err *e)
{
    int rc;
    switch ((enum pb_op_kind)op->kind) {
    case PB_OP_F: rc = exec_forward(w, op, in, out, e); break;
    case PB_OP_B: rc = exec_backward(w, op, in, out, e); break;
    case PB_OP_U: rc = exec_update(w, op, e); break;
    default: PB_CHECK(!"unknown op kind"); rc = -1;
    }
    if (rc)
        pb_err_prefix(e, "stage %d, %c%d: ", w->stage->index, "FBU"[op->kind], op->mb);
    return rc;
}

int pb_worker_should_stop(const struct pb_worker *w, const struct pb_op *op, struct pb_err *e)
{
    if (w->diverged)
        return pb_err_set(e, "the loss is not finite at micro-batch %d: the run diverged (try a "
                             "smaller --lr)", op->mb);
    if (pb_interrupted())
        return pb_err_set(e, "interrupted");
    return 0;
}

void pb_worker_record(const struct pb_worker *w, struct pb_stage_record *r)
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
}
