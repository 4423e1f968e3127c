/* tests/support/deferred_backend.c — the checking backend of deferred_backend.h: every op of
 * backend.h queued with a copy of its arguments (the structs a caller points to are
 * read when the op is called, as a device backend reads them to enqueue) and run on an
 * inner CPU backend at sync. Violations of the contract are kept in a list and fail
 * the instance they were found on. */
#include "tests/support/deferred_backend.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/compute/backend.h"
#include "harness/compute/cpu/cpu_backend.h"
#include "harness/compute/registry.h"

#define MAX_PTRS 8
#define MAX_INSTANCES 64

/* A queued op: what runs it on the inner backend, its copied arguments, and the
 * device pointers it names (checked against the allocator when it runs). */
struct qop {
    const char *name;
    void (*run)(struct pb_backend *be, void *args);
    void *args;
    const void *ptrs[MAX_PTRS];
    int nptrs;
    uint64_t seq;
};

struct staging {
    void *host;
    bool ended;  /* its write_end is queued: released at the next sync */
};

struct dfr {
    struct pb_backend *in;  /* the CPU backend the ops run on */
    int id;                 /* index in the instance table */
    struct qop *q;
    int nq, capq;
    uint64_t enqueued;      /* ops queued so far */
    uint64_t last_fence;    /* `enqueued` when the latest fence was recorded */
    struct staging *stg;
    int nstg, capstg;
};

struct fence {
    int id;
    uint64_t seq;
};

/* ---- the instances of this process, their progress, and the violations ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t progress = PTHREAD_COND_INITIALIZER;
static struct pb_backend *instances[MAX_INSTANCES];
static uint64_t done_seq[MAX_INSTANCES];  /* ops of each instance completed */
static char *violations;
static int nviolations;

static _Thread_local struct pb_backend *bound;

static void violation(struct pb_backend *be, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void violation(struct pb_backend *be, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&mu);
    size_t old = violations ? strlen(violations) : 0;
    violations = realloc(violations, old + strlen(msg) + 2);
    snprintf(violations + old, strlen(msg) + 2, "%s\n", msg);
    nviolations++;
    pthread_mutex_unlock(&mu);
    fprintf(stderr, "deferred backend: %s\n", msg);
    pb_backend_fail(be, "deferred backend: %s", msg);
}

int pb_deferred_violations(char *buf, size_t cap)
{
    pthread_mutex_lock(&mu);
    if (cap)
        snprintf(buf, cap, "%s", violations ? violations : "");
    int n = nviolations;
    pthread_mutex_unlock(&mu);
    return n;
}

void pb_deferred_reset(void)
{
    pthread_mutex_lock(&mu);
    free(violations);
    violations = NULL;
    nviolations = 0;
    pthread_mutex_unlock(&mu);
}

static struct dfr *dfr_of(struct pb_backend *be)
{
    return (struct dfr *)be->impl;
}

/* Every entry point: the calling thread must have bound the instance. */
static void entry(struct pb_backend *be, const char *op)
{
    if (bound != be)
        violation(be, "%s on instance %d (device %d) from a thread that has not bound it "
                      "(backend.h: a thread calls bind before its first op on an instance)",
                  op, dfr_of(be)->id, be->device);
}

static void enqueue(struct pb_backend *be, const char *name, void (*run)(struct pb_backend *, void *),
                    const void *args, size_t bytes, int nptrs, ...)
{
    entry(be, name);
    struct dfr *d = dfr_of(be);
    if (d->nq == d->capq) {
        d->capq = d->capq ? 2 * d->capq : 64;
        d->q = realloc(d->q, (size_t)d->capq * sizeof *d->q);
        PB_CHECK(d->q != NULL);
    }
    struct qop *o = &d->q[d->nq++];
    *o = (struct qop){.name = name, .run = run, .seq = ++d->enqueued};
    o->args = pb_xmalloc(bytes ? bytes : 1);
    memcpy(o->args, args, bytes);
    va_list ap;
    va_start(ap, nptrs);
    for (int i = 0; i < nptrs; i++) {
        const void *p = va_arg(ap, const void *);
        if (p && o->nptrs < MAX_PTRS)
            o->ptrs[o->nptrs++] = p;
    }
    va_end(ap);
}

/* A block an op names must still be this instance's when the op runs, unless a fence
 * was recorded after the op was queued (the allocator's, at pb_backend_free). */
static void check_blocks(struct pb_backend *be, const struct qop *o)
{
    struct dfr *d = dfr_of(be);
    if (d->last_fence >= o->seq)
        return;
    for (int i = 0; i < o->nptrs; i++) {
        const void *p = o->ptrs[i];
        if (pb_backend_block_state(be, p) != PB_BLOCK_NONE)
            continue;
        pthread_mutex_lock(&mu);
        int other = -1;
        enum pb_block_state st = PB_BLOCK_NONE;
        for (int k = 0; k < MAX_INSTANCES && other < 0; k++)
            if (instances[k] && instances[k] != be &&
                (st = pb_backend_block_state(instances[k], p)) != PB_BLOCK_NONE)
                other = k;
        pthread_mutex_unlock(&mu);
        if (other >= 0)
            violation(be, "%s (op %llu of instance %d) names block %p, which was %s instance %d "
                          "before the op ran, with no fence: another stream may reuse it while "
                          "the op reads it",
                      o->name, (unsigned long long)o->seq, d->id, p,
                      st == PB_BLOCK_CACHED ? "freed into the cache of" : "handed over to", other);
    }
}

static void dfr_sync(struct pb_backend *be)
{
    entry(be, "sync");
    struct dfr *d = dfr_of(be);
    for (int i = 0; i < d->nq; i++) {
        struct qop *o = &d->q[i];
        check_blocks(be, o);
        if (!d->in->failed)
            o->run(d->in, o->args);
        free(o->args);
        pthread_mutex_lock(&mu);
        done_seq[d->id] = o->seq;
        pthread_cond_broadcast(&progress);
        pthread_mutex_unlock(&mu);
    }
    d->nq = 0;
    int kept = 0;
    for (int i = 0; i < d->nstg; i++) {
        if (d->stg[i].ended)
            free(d->stg[i].host);
        else
            d->stg[kept++] = d->stg[i];
    }
    d->nstg = kept;
    if (d->in->failed)  /* a device-detected error surfaces now */
        pb_backend_fail(be, "%s", d->in->error.msg);
}

static void dfr_bind(struct pb_backend *be)
{
    bound = be;
}

static void *dfr_fence_record(struct pb_backend *be)
{
    entry(be, "fence_record");
    struct dfr *d = dfr_of(be);
    struct fence *f = pb_xmalloc(sizeof *f);
    *f = (struct fence){d->id, d->enqueued};
    d->last_fence = d->enqueued;
    return f;
}

struct a_wait {
    int id;
    uint64_t seq;
    struct pb_backend *outer;
};

static void run_wait(struct pb_backend *in, void *args)
{
    (void)in;
    const struct a_wait *a = args;
    /* Only a sync runs a queue here, where a device's stream runs by itself: a fence
     * that does not pass means its instance kept queued work unsynced while its thread
     * waited — a hand-off of a tensor still being computed, or a deadlock. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&mu);
    while (instances[a->id] && done_seq[a->id] < a->seq)
        if (pthread_cond_timedwait(&progress, &mu, &until))
            break;
    bool late = instances[a->id] && done_seq[a->id] < a->seq;
    pthread_mutex_unlock(&mu);
    if (late)
        violation(a->outer, "a fence of instance %d did not pass in 30 s: that instance kept "
                            "queued ops unsynced while its thread waited (a tensor handed over "
                            "before the sync that computes it?)", a->id);
}

static void dfr_fence_wait(struct pb_backend *be, void *fence)
{
    struct fence *f = fence;
    struct a_wait a = {f->id, f->seq, be};
    free(f);
    enqueue(be, "fence_wait", run_wait, &a, sizeof a, 0);
}

/* A timer mark: the host's clock when the queue reaches it (at a sync). */
struct mark {
    double t;
    bool ran;
};

static void run_mark(struct pb_backend *in, void *args)
{
    (void)in;
    struct mark *m = *(struct mark **)args;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    m->t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    m->ran = true;
}

static void *dfr_timer_mark(struct pb_backend *be)
{
    struct mark *m = pb_xcalloc(1, sizeof *m);
    enqueue(be, "timer_mark", run_mark, &m, sizeof m, 0);
    return m;
}

static double dfr_timer_elapsed(struct pb_backend *be, void *from, void *to)
{
    struct mark *a = from, *b = to;
    double s = 0.0;
    if (a != b) {
        if (!a->ran || !b->ran)
            violation(be, "timer_elapsed before the sync that passes its marks");
        else
            s = b->t - a->t;
        free(b);
    }
    free(a);
    return s;
}

static bool dfr_supports_op(struct pb_backend *be, enum pb_backend_op op)
{
    struct pb_backend *in = dfr_of(be)->in;
    return in->ops->supports_op(in, op);
}

static void *dfr_alloc(struct pb_backend *be, size_t bytes)
{
    struct pb_backend *in = dfr_of(be)->in;
    return in->ops->alloc(in, bytes);
}

static void dfr_free(struct pb_backend *be, void *p)
{
    struct pb_backend *in = dfr_of(be)->in;
    in->ops->free(in, p);
}

static bool dfr_shares_memory(const struct pb_backend *be, const struct pb_backend *other)
{
    return other->ops == be->ops && other->device == be->device;
}

/* ---- host transfers ---- */

static uint64_t checksum(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void poison(void *p, size_t bytes)
{
    float nan = NAN;
    unsigned char *b = p;
    for (size_t i = 0; i < bytes; i++)
        b[i] = ((const unsigned char *)&nan)[i % sizeof nan];
}

struct a_upload {
    void *dst;
    const void *src;
    size_t bytes;
    uint64_t sum;
    bool staged;
    struct pb_backend *outer;
};

static void run_upload(struct pb_backend *in, void *args)
{
    const struct a_upload *a = args;
    if (!a->staged && checksum(a->src, a->bytes) != a->sum)
        violation(a->outer, "upload of %zu bytes from host %p: the source changed between the "
                            "call and the sync that ran it (read, written or freed too early)",
                  a->bytes, a->src);
    in->ops->upload(in, a->dst, a->src, a->bytes);
}

static void dfr_upload(struct pb_backend *be, void *dst, const void *src, size_t bytes)
{
    struct a_upload a = {dst, src, bytes, checksum(src, bytes), false, be};
    enqueue(be, "upload", run_upload, &a, sizeof a, 1, dst);
}

static void *dfr_write_begin(struct pb_backend *be, void *dst, size_t bytes)
{
    (void)dst;
    entry(be, "write_begin");
    struct dfr *d = dfr_of(be);
    if (d->nstg == d->capstg) {
        d->capstg = d->capstg ? 2 * d->capstg : 8;
        d->stg = realloc(d->stg, (size_t)d->capstg * sizeof *d->stg);
        PB_CHECK(d->stg != NULL);
    }
    void *h = pb_xmalloc(bytes ? bytes : 1);
    poison(h, bytes);
    d->stg[d->nstg++] = (struct staging){h, false};
    return h;
}

static void dfr_write_end(struct pb_backend *be, void *dst, void *host, size_t bytes)
{
    struct dfr *d = dfr_of(be);
    int i = 0;
    while (i < d->nstg && d->stg[i].host != host)
        i++;
    if (i == d->nstg || d->stg[i].ended) {
        violation(be, "write_end of %zu bytes with host buffer %p, not an open write_begin's",
                  bytes, host);
        return;
    }
    d->stg[i].ended = true;
    struct a_upload a = {dst, host, bytes, 0, true, be};
    enqueue(be, "write_end", run_upload, &a, sizeof a, 1, dst);
}

struct a_copy {
    void *dst;
    const void *src;
    size_t bytes;
};

static void run_download(struct pb_backend *in, void *args)
{
    const struct a_copy *a = args;
    in->ops->download(in, a->dst, a->src, a->bytes);
}

static void dfr_download(struct pb_backend *be, void *dst, const void *src, size_t bytes)
{
    poison(dst, bytes);  /* what a host reading before the sync sees */
    struct a_copy a = {dst, src, bytes};
    enqueue(be, "download", run_download, &a, sizeof a, 1, src);
}

static void run_copy(struct pb_backend *in, void *args)
{
    const struct a_copy *a = args;
    in->ops->copy(in, a->dst, a->src, a->bytes);
}

static void dfr_copy(struct pb_backend *be, void *dst, const void *src, size_t bytes)
{
    struct a_copy a = {dst, src, bytes};
    enqueue(be, "copy", run_copy, &a, sizeof a, 2, dst, src);
}

/* a peer copy: the source is another instance's block, guarded by the fence
 * pb_backend_free_read records, so it is not among the pointers checked */
static void dfr_copy_peer(struct pb_backend *be, void *dst, struct pb_backend *src_be,
                          const void *src, size_t bytes)
{
    PB_CHECK(src_be->ops->copy_peer == dfr_copy_peer && src_be->device != be->device);
    struct a_copy a = {dst, src, bytes};
    enqueue(be, "copy_peer", run_copy, &a, sizeof a, 1, dst);
}

struct a_fill {
    float *dst;
    float value;
    size_t n;
};

static void run_fill(struct pb_backend *in, void *args)
{
    const struct a_fill *a = args;
    in->ops->fill(in, a->dst, a->value, a->n);
}

static void dfr_fill(struct pb_backend *be, float *dst, float value, size_t n)
{
    struct a_fill a = {dst, value, n};
    enqueue(be, "fill", run_fill, &a, sizeof a, 1, dst);
}

/* ---- queries that read no device memory: answered at once ---- */

static size_t dfr_layout_floats(struct pb_backend *be, struct pb_shape s, enum pb_layout l)
{
    struct pb_backend *in = dfr_of(be)->in;
    return in->ops->layout_floats(in, s, l);
}

static enum pb_layout dfr_conv_layout(struct pb_backend *be, const struct pb_conv_desc *d,
                                      const struct pb_tensor *x)
{
    struct pb_backend *in = dfr_of(be)->in;
    return in->ops->conv_layout(in, d, x);
}

static size_t dfr_pool_workspace(struct pb_backend *be, const struct pb_pool_desc *d,
                                 const struct pb_tensor *x, const struct pb_tensor *y)
{
    struct pb_backend *in = dfr_of(be)->in;
    return in->ops->pool_workspace(in, d, x, y);
}

static size_t dfr_bn_aux_bytes(struct pb_backend *be, struct pb_shape x, bool relu)
{
    struct pb_backend *in = dfr_of(be)->in;
    return in->ops->bn_aux_bytes(in, x, relu);
}

static enum pb_layout dfr_concat_layout(struct pb_backend *be, int k,
                                        const struct pb_tensor *const *ins)
{
    struct pb_backend *in = dfr_of(be)->in;
    return in->ops->concat_layout(in, k, ins);
}

static size_t dfr_lstm_workspace(struct pb_backend *be, const struct pb_lstm_desc *d)
{
    struct pb_backend *in = dfr_of(be)->in;
    return in->ops->lstm_workspace(in, d);
}

static size_t dfr_attn_workspace(struct pb_backend *be, const struct pb_attn_desc *d)
{
    struct pb_backend *in = dfr_of(be)->in;
    return in->ops->attn_workspace(in, d);
}

static size_t dfr_lstm_bwd_keep(struct pb_backend *be, const struct pb_lstm_desc *d)
{
    struct pb_backend *in = dfr_of(be)->in;
    return in->ops->lstm_bwd_keep(in, d);
}

static size_t dfr_attn_bwd_keep(struct pb_backend *be, const struct pb_attn_desc *d)
{
    struct pb_backend *in = dfr_of(be)->in;
    return in->ops->attn_bwd_keep(in, d);
}

/* ---- the compute ops: arguments copied, run at sync ---- */

struct a_reorder {
    struct pb_tensor src, dst;
};
static void run_reorder(struct pb_backend *in, void *p)
{
    struct a_reorder *a = p;
    in->ops->reorder(in, &a->src, &a->dst);
}
static void dfr_reorder(struct pb_backend *be, const struct pb_tensor *src, struct pb_tensor *dst)
{
    struct a_reorder a = {*src, *dst};
    enqueue(be, "reorder", run_reorder, &a, sizeof a, 2, src->data, dst->data);
}

struct a_gemm {
    bool ta, tb;
    int m, n, k;
    float alpha;
    const float *a;
    int lda;
    const float *b;
    int ldb;
    float beta;
    float *c;
    int ldc;
};
static void run_gemm(struct pb_backend *in, void *p)
{
    struct a_gemm *g = p;
    in->ops->gemm(in, g->ta, g->tb, g->m, g->n, g->k, g->alpha, g->a, g->lda, g->b, g->ldb,
                  g->beta, g->c, g->ldc);
}
static void dfr_gemm(struct pb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb, float beta, float *c,
                     int ldc)
{
    struct a_gemm g = {ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc};
    enqueue(be, "gemm", run_gemm, &g, sizeof g, 3, a, b, c);
}

struct a_bias {
    float *y;
    const float *b;
    int n, c;
};
static void run_bias_add(struct pb_backend *in, void *p)
{
    struct a_bias *a = p;
    in->ops->bias_add(in, a->y, a->b, a->n, a->c);
}
static void dfr_bias_add(struct pb_backend *be, float *y, const float *b, int n, int c)
{
    struct a_bias a = {y, b, n, c};
    enqueue(be, "bias_add", run_bias_add, &a, sizeof a, 2, y, b);
}
static void run_bias_grad(struct pb_backend *in, void *p)
{
    struct a_bias *a = p;
    in->ops->bias_grad(in, a->b, a->y, a->n, a->c);
}
static void dfr_bias_grad(struct pb_backend *be, const float *dy, float *db_acc, int n, int c)
{
    struct a_bias a = {db_acc, dy, n, c};
    enqueue(be, "bias_grad", run_bias_grad, &a, sizeof a, 2, dy, db_acc);
}

struct a_conv {
    struct pb_conv_desc d;
    struct pb_tensor x, y;
    const float *w, *b;
    float *dw, *db;
};
static void run_conv_fwd(struct pb_backend *in, void *p)
{
    struct a_conv *a = p;
    in->ops->conv_fwd(in, &a->d, &a->x, a->w, a->b, &a->y);
}
static void dfr_conv_fwd(struct pb_backend *be, const struct pb_conv_desc *d,
                         const struct pb_tensor *x, const float *w, const float *b,
                         struct pb_tensor *y)
{
    struct a_conv a = {.d = *d, .x = *x, .y = *y, .w = w, .b = b};
    enqueue(be, "conv_fwd", run_conv_fwd, &a, sizeof a, 4, x->data, w, b, y->data);
}
static void run_conv_bwd_data(struct pb_backend *in, void *p)
{
    struct a_conv *a = p;
    in->ops->conv_bwd_data(in, &a->d, &a->y, a->w, &a->x);
}
static void dfr_conv_bwd_data(struct pb_backend *be, const struct pb_conv_desc *d,
                              const struct pb_tensor *dy, const float *w, struct pb_tensor *dx)
{
    struct a_conv a = {.d = *d, .x = *dx, .y = *dy, .w = w};
    enqueue(be, "conv_bwd_data", run_conv_bwd_data, &a, sizeof a, 3, dy->data, w, dx->data);
}
static void run_conv_bwd_weights(struct pb_backend *in, void *p)
{
    struct a_conv *a = p;
    in->ops->conv_bwd_weights(in, &a->d, &a->x, &a->y, a->dw, a->db);
}
static void dfr_conv_bwd_weights(struct pb_backend *be, const struct pb_conv_desc *d,
                                 const struct pb_tensor *x, const struct pb_tensor *dy,
                                 float *dw_acc, float *db_acc)
{
    struct a_conv a = {.d = *d, .x = *x, .y = *dy, .dw = dw_acc, .db = db_acc};
    enqueue(be, "conv_bwd_weights", run_conv_bwd_weights, &a, sizeof a, 4, x->data, dy->data,
            dw_acc, db_acc);
}

struct a_pool {
    struct pb_pool_desc d;
    struct pb_tensor x, y, dy, dx;
    void *ws;
};
static void run_pool_fwd(struct pb_backend *in, void *p)
{
    struct a_pool *a = p;
    in->ops->pool_fwd(in, &a->d, &a->x, &a->y, a->ws);
}
static void dfr_pool_fwd(struct pb_backend *be, const struct pb_pool_desc *d,
                         const struct pb_tensor *x, struct pb_tensor *y, void *workspace)
{
    struct a_pool a = {.d = *d, .x = *x, .y = *y, .ws = workspace};
    enqueue(be, "pool_fwd", run_pool_fwd, &a, sizeof a, 3, x->data, y->data, workspace);
}
static void run_pool_bwd(struct pb_backend *in, void *p)
{
    struct a_pool *a = p;
    in->ops->pool_bwd(in, &a->d, &a->x, &a->y, &a->dy, a->ws, &a->dx);
}
static void dfr_pool_bwd(struct pb_backend *be, const struct pb_pool_desc *d,
                         const struct pb_tensor *x, const struct pb_tensor *y,
                         const struct pb_tensor *dy, const void *workspace, struct pb_tensor *dx)
{
    struct a_pool a = {.d = *d, .x = *x, .y = *y, .dy = *dy, .dx = *dx, .ws = (void *)workspace};
    enqueue(be, "pool_bwd", run_pool_bwd, &a, sizeof a, 5, x->data, y->data, dy->data, workspace,
            dx->data);
}

struct a_bn {
    struct pb_tensor x, y, dy, dx;
    const float *gamma, *beta;
    float *run_mean, *run_var;
    float momentum, eps;
    bool relu;
    void *aux;
    float *dgamma, *dbeta;
};
static void run_bn_train(struct pb_backend *in, void *p)
{
    struct a_bn *a = p;
    in->ops->bn_fwd_train(in, &a->x, a->gamma, a->beta, a->run_mean, a->run_var, a->momentum,
                          a->eps, a->relu, &a->y, a->aux);
}
static void dfr_bn_fwd_train(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                             const float *beta, float *run_mean, float *run_var, float momentum,
                             float eps, bool relu, struct pb_tensor *y, void *aux)
{
    struct a_bn a = {.x = *x, .y = *y, .gamma = gamma, .beta = beta, .run_mean = run_mean,
                     .run_var = run_var, .momentum = momentum, .eps = eps, .relu = relu,
                     .aux = aux};
    enqueue(be, "bn_fwd_train", run_bn_train, &a, sizeof a, 7, x->data, gamma, beta, run_mean,
            run_var, y->data, aux);
}
static void run_bn_infer(struct pb_backend *in, void *p)
{
    struct a_bn *a = p;
    in->ops->bn_fwd_infer(in, &a->x, a->gamma, a->beta, a->run_mean, a->run_var, a->eps, a->relu,
                          &a->y);
}
static void dfr_bn_fwd_infer(struct pb_backend *be, const struct pb_tensor *x, const float *gamma,
                             const float *beta, const float *run_mean, const float *run_var,
                             float eps, bool relu, struct pb_tensor *y)
{
    struct a_bn a = {.x = *x, .y = *y, .gamma = gamma, .beta = beta,
                     .run_mean = (float *)run_mean, .run_var = (float *)run_var, .eps = eps,
                     .relu = relu};
    enqueue(be, "bn_fwd_infer", run_bn_infer, &a, sizeof a, 6, x->data, gamma, beta, run_mean,
            run_var, y->data);
}
static void run_bn_bwd(struct pb_backend *in, void *p)
{
    struct a_bn *a = p;
    in->ops->bn_bwd(in, &a->x, &a->dy, a->gamma, a->aux, a->eps, a->relu, &a->dx, a->dgamma,
                    a->dbeta);
}
static void dfr_bn_bwd(struct pb_backend *be, const struct pb_tensor *x, const struct pb_tensor *dy,
                       const float *gamma, const void *aux, float eps, bool relu,
                       struct pb_tensor *dx, float *dgamma_acc, float *dbeta_acc)
{
    struct a_bn a = {.x = *x, .dy = *dy, .dx = *dx, .gamma = gamma, .aux = (void *)aux,
                     .eps = eps, .relu = relu, .dgamma = dgamma_acc, .dbeta = dbeta_acc};
    enqueue(be, "bn_bwd", run_bn_bwd, &a, sizeof a, 7, x->data, dy->data, gamma, aux, dx->data,
            dgamma_acc, dbeta_acc);
}

struct a_elt {
    const float *a, *b;
    float *y;
    size_t n;
    float alpha, beta;
};
static void run_relu_fwd(struct pb_backend *in, void *p)
{
    struct a_elt *a = p;
    in->ops->relu_fwd(in, a->a, a->y, a->n);
}
static void dfr_relu_fwd(struct pb_backend *be, const float *x, float *y, size_t n)
{
    struct a_elt a = {.a = x, .y = y, .n = n};
    enqueue(be, "relu_fwd", run_relu_fwd, &a, sizeof a, 2, x, y);
}
static void run_relu_bwd(struct pb_backend *in, void *p)
{
    struct a_elt *a = p;
    in->ops->relu_bwd(in, a->a, a->b, a->y, a->n);
}
static void dfr_relu_bwd(struct pb_backend *be, const float *y, const float *dy, float *dx, size_t n)
{
    struct a_elt a = {.a = y, .b = dy, .y = dx, .n = n};
    enqueue(be, "relu_bwd", run_relu_bwd, &a, sizeof a, 3, y, dy, dx);
}
static void run_add(struct pb_backend *in, void *p)
{
    struct a_elt *a = p;
    in->ops->add(in, a->a, a->b, a->y, a->n);
}
static void dfr_add(struct pb_backend *be, const float *a_, const float *b, float *y, size_t n)
{
    struct a_elt a = {.a = a_, .b = b, .y = y, .n = n};
    enqueue(be, "add", run_add, &a, sizeof a, 3, a_, b, y);
}
static void run_add_relu(struct pb_backend *in, void *p)
{
    struct a_elt *a = p;
    in->ops->add_relu(in, a->a, a->b, a->y, a->n);
}
static void dfr_add_relu(struct pb_backend *be, const float *a_, const float *b, float *y, size_t n)
{
    struct a_elt a = {.a = a_, .b = b, .y = y, .n = n};
    enqueue(be, "add_relu", run_add_relu, &a, sizeof a, 3, a_, b, y);
}
static void run_axpby(struct pb_backend *in, void *p)
{
    struct a_elt *a = p;
    in->ops->axpby(in, a->alpha, a->a, a->beta, a->y, a->n);
}
static void dfr_axpby(struct pb_backend *be, float alpha, const float *x, float beta, float *y,
                      size_t n)
{
    struct a_elt a = {.a = x, .y = y, .n = n, .alpha = alpha, .beta = beta};
    enqueue(be, "axpby", run_axpby, &a, sizeof a, 2, x, y);
}

struct a_dropout {
    const float *x;
    float *y;
    size_t n;
    float p;
    struct pb_rng_key key;
    uint64_t first;
};
static void run_dropout(struct pb_backend *in, void *p)
{
    struct a_dropout *a = p;
    in->ops->dropout(in, a->x, a->y, a->n, a->p, a->key, a->first);
}
static void dfr_dropout(struct pb_backend *be, const float *x, float *y, size_t n, float p,
                        struct pb_rng_key key, uint64_t first)
{
    struct a_dropout a = {x, y, n, p, key, first};
    enqueue(be, "dropout", run_dropout, &a, sizeof a, 2, x, y);
}

/* concat and split: the tensors copied after the header, the pointer arrays rebuilt */
struct a_concat {
    int k;
    struct pb_tensor whole;
    struct pb_tensor parts[];
};
static void run_concat(struct pb_backend *in, void *p)
{
    struct a_concat *a = p;
    const struct pb_tensor *ins[a->k];
    for (int i = 0; i < a->k; i++)
        ins[i] = &a->parts[i];
    in->ops->concat(in, a->k, ins, &a->whole);
}
static void run_split(struct pb_backend *in, void *p)
{
    struct a_concat *a = p;
    struct pb_tensor *outs[a->k];
    for (int i = 0; i < a->k; i++)
        outs[i] = &a->parts[i];
    in->ops->split(in, &a->whole, a->k, outs);
}
static void enqueue_concat(struct pb_backend *be, const char *name,
                           void (*run)(struct pb_backend *, void *), int k,
                           const struct pb_tensor *const *parts, const struct pb_tensor *whole)
{
    size_t bytes = sizeof(struct a_concat) + (size_t)k * sizeof(struct pb_tensor);
    struct a_concat *a = pb_xcalloc(1, bytes);
    a->k = k;
    a->whole = *whole;
    for (int i = 0; i < k; i++)
        a->parts[i] = *parts[i];
    enqueue(be, name, run, a, bytes, 5, whole->data, k > 0 ? parts[0]->data : NULL,
            k > 1 ? parts[1]->data : NULL, k > 2 ? parts[2]->data : NULL,
            k > 3 ? parts[3]->data : NULL);
    free(a);
}
static void dfr_concat(struct pb_backend *be, int k, const struct pb_tensor *const *ins,
                       struct pb_tensor *out)
{
    enqueue_concat(be, "concat", run_concat, k, ins, out);
}
static void dfr_split(struct pb_backend *be, const struct pb_tensor *dout, int k,
                      struct pb_tensor *const *douts)
{
    enqueue_concat(be, "split", run_split, k, (const struct pb_tensor *const *)douts, dout);
}

struct a_xent {
    const float *logits;
    const int32_t *labels;
    int n, c;
    float eps;
    int ignore, grad_rows;
    struct pb_xent_out *out;
    float *dlogits;
};
static void run_xent(struct pb_backend *in, void *p)
{
    struct a_xent *a = p;
    in->ops->softmax_xent(in, a->logits, a->labels, a->n, a->c, a->eps, a->ignore,
                          a->grad_rows, a->out, a->dlogits);
}
static void dfr_softmax_xent(struct pb_backend *be, const float *logits, const int32_t *labels,
                             int n, int c, float eps_ls, int ignore, int grad_rows,
                             struct pb_xent_out *out, float *dlogits)
{
    struct a_xent a = {logits, labels, n, c, eps_ls, ignore, grad_rows, out, dlogits};
    enqueue(be, "softmax_xent", run_xent, &a, sizeof a, 4, logits, labels, out, dlogits);
}

struct a_emb {
    const float *tok;
    size_t n;
    const float *table, *dy;
    int vocab, dim, padding;
    float *y;
};
static void run_emb_fwd(struct pb_backend *in, void *p)
{
    struct a_emb *a = p;
    in->ops->embedding_fwd(in, a->tok, a->n, a->table, a->vocab, a->dim, a->y);
}
static void dfr_embedding_fwd(struct pb_backend *be, const float *tok, size_t n,
                              const float *table, int vocab, int dim, float *y)
{
    struct a_emb a = {.tok = tok, .n = n, .table = table, .vocab = vocab, .dim = dim, .y = y};
    enqueue(be, "embedding_fwd", run_emb_fwd, &a, sizeof a, 3, tok, table, y);
}
static void run_emb_bwd(struct pb_backend *in, void *p)
{
    struct a_emb *a = p;
    in->ops->embedding_bwd(in, a->tok, a->n, a->dy, a->vocab, a->dim, a->padding, a->y);
}
static void dfr_embedding_bwd(struct pb_backend *be, const float *tok, size_t n, const float *dy,
                              int vocab, int dim, int padding, float *dtable_acc)
{
    struct a_emb a = {.tok = tok, .n = n, .dy = dy, .vocab = vocab, .dim = dim,
                      .padding = padding, .y = dtable_acc};
    enqueue(be, "embedding_bwd", run_emb_bwd, &a, sizeof a, 3, tok, dy, dtable_acc);
}

struct a_lstm {
    struct pb_lstm_desc d;
    const float *x, *w, *y_in, *dy;
    float *y;
    void *ws;
    struct pb_lstm_states st;
    bool has_st;
    float *dx, *dw;
    void *keep;
};
static void run_lstm_fwd(struct pb_backend *in, void *p)
{
    struct a_lstm *a = p;
    in->ops->lstm_fwd(in, &a->d, a->x, a->w, a->y, a->ws, a->has_st ? &a->st : NULL);
}
static void dfr_lstm_fwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                         const float *w, float *y, void *ws, const struct pb_lstm_states *st)
{
    struct a_lstm a = {.d = *d, .x = x, .w = w, .y = y, .ws = ws, .has_st = st != NULL};
    if (st)
        a.st = *st;
    enqueue(be, "lstm_fwd", run_lstm_fwd, &a, sizeof a, 8, x, w, y, ws, st ? st->h0 : NULL,
            st ? st->c0 : NULL, st ? st->h_last : NULL, st ? st->c_last : NULL);
}
static void run_lstm_bwd(struct pb_backend *in, void *p)
{
    struct a_lstm *a = p;
    in->ops->lstm_bwd(in, &a->d, a->x, a->w, a->y_in, a->dy, a->ws, a->dx, a->dw);
}
static void dfr_lstm_bwd(struct pb_backend *be, const struct pb_lstm_desc *d, const float *x,
                         const float *w, const float *y, const float *dy, const void *ws,
                         float *dx, float *dw_acc)
{
    struct a_lstm a = {.d = *d, .x = x, .w = w, .y_in = y, .dy = dy, .ws = (void *)ws, .dx = dx,
                       .dw = dw_acc};
    enqueue(be, "lstm_bwd", run_lstm_bwd, &a, sizeof a, 7, x, w, y, dy, ws, dx, dw_acc);
}
static void run_lstm_bwd_data(struct pb_backend *in, void *p)
{
    struct a_lstm *a = p;
    in->ops->lstm_bwd_data(in, &a->d, a->w, a->dy, a->ws, a->dx, a->keep);
}
static void dfr_lstm_bwd_data(struct pb_backend *be, const struct pb_lstm_desc *d,
                              const float *w, const float *dy, const void *ws, float *dx,
                              void *keep)
{
    struct a_lstm a = {.d = *d, .w = w, .dy = dy, .ws = (void *)ws, .dx = dx, .keep = keep};
    enqueue(be, "lstm_bwd_data", run_lstm_bwd_data, &a, sizeof a, 5, w, dy, ws, dx, keep);
}
static void run_lstm_bwd_weights(struct pb_backend *in, void *p)
{
    struct a_lstm *a = p;
    in->ops->lstm_bwd_weights(in, &a->d, a->x, a->y_in, a->keep, a->dw);
}
static void dfr_lstm_bwd_weights(struct pb_backend *be, const struct pb_lstm_desc *d,
                                 const float *x, const float *y, const void *keep, float *dw_acc)
{
    struct a_lstm a = {.d = *d, .x = x, .y_in = y, .keep = (void *)keep, .dw = dw_acc};
    enqueue(be, "lstm_bwd_weights", run_lstm_bwd_weights, &a, sizeof a, 4, x, y, keep, dw_acc);
}

struct a_seq {
    const float *x;
    int x_stride;
    const int32_t *lengths;
    int batch, steps, f;
    bool reverse;
    float *y;
    int y_stride;
};
static void run_seq_mean_fwd(struct pb_backend *in, void *p)
{
    struct a_seq *a = p;
    in->ops->seq_mean_fwd(in, a->x, a->lengths, a->batch, a->steps, a->f, a->y);
}
static void dfr_seq_mean_fwd(struct pb_backend *be, const float *x, const int32_t *lengths,
                             int batch, int steps, int f, float *y)
{
    struct a_seq a = {.x = x, .lengths = lengths, .batch = batch, .steps = steps, .f = f, .y = y};
    enqueue(be, "seq_mean_fwd", run_seq_mean_fwd, &a, sizeof a, 3, x, lengths, y);
}
static void run_seq_mean_bwd(struct pb_backend *in, void *p)
{
    struct a_seq *a = p;
    in->ops->seq_mean_bwd(in, a->x, a->lengths, a->batch, a->steps, a->f, a->y);
}
static void dfr_seq_mean_bwd(struct pb_backend *be, const float *dy, const int32_t *lengths,
                             int batch, int steps, int f, float *dx)
{
    struct a_seq a = {.x = dy, .lengths = lengths, .batch = batch, .steps = steps, .f = f, .y = dx};
    enqueue(be, "seq_mean_bwd", run_seq_mean_bwd, &a, sizeof a, 3, dy, lengths, dx);
}
static void run_seq_gather(struct pb_backend *in, void *p)
{
    struct a_seq *a = p;
    in->ops->seq_gather(in, a->x, a->x_stride, a->lengths, a->batch, a->steps, a->f, a->reverse,
                        a->y, a->y_stride);
}
static void dfr_seq_gather(struct pb_backend *be, const float *x, int x_stride,
                           const int32_t *lengths, int batch, int steps, int f, bool reverse,
                           float *y, int y_stride)
{
    struct a_seq a = {x, x_stride, lengths, batch, steps, f, reverse, y, y_stride};
    enqueue(be, "seq_gather", run_seq_gather, &a, sizeof a, 3, x, lengths, y);
}

struct a_attn {
    struct pb_attn_desc d;
    const float *q, *k, *pk, *w, *dctx;
    const int32_t *lengths;
    float *ctx, *dq, *dk, *dw, *a;
    void *ws, *keep;
};
static void run_attn_fwd(struct pb_backend *in, void *p)
{
    struct a_attn *a = p;
    in->ops->attn_fwd(in, &a->d, a->q, a->k, a->lengths, a->w, a->ctx, a->ws);
}
static void dfr_attn_fwd(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                         const float *k, const int32_t *lengths, const float *w, float *ctx,
                         void *ws)
{
    struct a_attn a = {.d = *d, .q = q, .k = k, .lengths = lengths, .w = w, .ctx = ctx, .ws = ws};
    enqueue(be, "attn_fwd", run_attn_fwd, &a, sizeof a, 6, q, k, lengths, w, ctx, ws);
}
static void run_attn_bwd(struct pb_backend *in, void *p)
{
    struct a_attn *a = p;
    in->ops->attn_bwd(in, &a->d, a->q, a->k, a->lengths, a->w, a->ws, a->dctx, a->dq, a->dk,
                      a->dw);
}
static void dfr_attn_bwd(struct pb_backend *be, const struct pb_attn_desc *d, const float *q,
                         const float *k, const int32_t *lengths, const float *w, const void *ws,
                         const float *dctx, float *dq, float *dk, float *dw_acc)
{
    struct a_attn a = {.d = *d, .q = q, .k = k, .lengths = lengths, .w = w, .ws = (void *)ws,
                       .dctx = dctx, .dq = dq, .dk = dk, .dw = dw_acc};
    enqueue(be, "attn_bwd", run_attn_bwd, &a, sizeof a, 8, q, k, w, ws, dctx, dq, dk, dw_acc);
}
static void run_attn_bwd_data(struct pb_backend *in, void *p)
{
    struct a_attn *a = p;
    in->ops->attn_bwd_data(in, &a->d, a->k, a->lengths, a->w, a->ws, a->dctx, a->dq, a->dk,
                           a->keep);
}
static void dfr_attn_bwd_data(struct pb_backend *be, const struct pb_attn_desc *d,
                              const float *k, const int32_t *lengths, const float *w,
                              const void *ws, const float *dctx, float *dq, float *dk,
                              void *keep)
{
    struct a_attn a = {.d = *d, .k = k, .lengths = lengths, .w = w, .ws = (void *)ws,
                       .dctx = dctx, .dq = dq, .dk = dk, .keep = keep};
    enqueue(be, "attn_bwd_data", run_attn_bwd_data, &a, sizeof a, 8, k, lengths, w, ws, dctx, dq,
            dk, keep);
}
static void run_attn_bwd_weights(struct pb_backend *in, void *p)
{
    struct a_attn *a = p;
    in->ops->attn_bwd_weights(in, &a->d, a->q, a->k, a->keep, a->dw);
}
static void dfr_attn_bwd_weights(struct pb_backend *be, const struct pb_attn_desc *d,
                                 const float *q, const float *k, const void *keep, float *dw_acc)
{
    struct a_attn a = {.d = *d, .q = q, .k = k, .keep = (void *)keep, .dw = dw_acc};
    enqueue(be, "attn_bwd_weights", run_attn_bwd_weights, &a, sizeof a, 4, q, k, keep, dw_acc);
}
static void run_attn_weights(struct pb_backend *in, void *p)
{
    struct a_attn *a = p;
    in->ops->attn_weights(in, &a->d, a->ws, a->a);
}
static void dfr_attn_weights(struct pb_backend *be, const struct pb_attn_desc *d, const void *ws,
                             float *out)
{
    struct a_attn a = {.d = *d, .ws = (void *)ws, .a = out};
    enqueue(be, "attn_weights", run_attn_weights, &a, sizeof a, 2, ws, out);
}
static void run_attn_project_keys(struct pb_backend *in, void *p)
{
    struct a_attn *a = p;
    in->ops->attn_project_keys(in, &a->d, a->k, a->w, a->ctx);
}
static void dfr_attn_project_keys(struct pb_backend *be, const struct pb_attn_desc *d,
                                  const float *k, const float *w, float *pk)
{
    struct a_attn a = {.d = *d, .k = k, .w = w, .ctx = pk};
    enqueue(be, "attn_project_keys", run_attn_project_keys, &a, sizeof a, 3, k, w, pk);
}
static void run_attn_fwd_projected(struct pb_backend *in, void *p)
{
    struct a_attn *a = p;
    in->ops->attn_fwd_projected(in, &a->d, a->q, a->k, a->pk, a->lengths, a->w, a->ctx, a->a);
}
static void dfr_attn_fwd_projected(struct pb_backend *be, const struct pb_attn_desc *d,
                                   const float *q, const float *k, const float *pk,
                                   const int32_t *lengths, const float *w, float *ctx, float *out)
{
    struct a_attn a = {.d = *d, .q = q, .k = k, .pk = pk, .lengths = lengths, .w = w, .ctx = ctx,
                       .a = out};
    enqueue(be, "attn_fwd_projected", run_attn_fwd_projected, &a, sizeof a, 7, q, k, pk, lengths,
            w, ctx, out);
}

static void run_optim_step(struct pb_backend *in, void *p)
{
    in->ops->optim_step(in, (const struct pb_optim_step_args *)p);
}
static void dfr_optim_step(struct pb_backend *be, const struct pb_optim_step_args *a)
{
    enqueue(be, "optim_step", run_optim_step, a, sizeof *a, 8, a->w, a->g, a->buf, a->m, a->v,
            a->sq, a->d_last, a->g_last);
}
static void run_predict(struct pb_backend *in, void *p)
{
    in->ops->predict(in, (const struct pb_predict_args *)p);
}
static void dfr_predict(struct pb_backend *be, const struct pb_predict_args *a)
{
    enqueue(be, "predict", run_predict, a, sizeof *a, 7, a->w, a->w_hat, a->dw.x, a->dw.y,
            a->dw.m, a->dw.v, a->dw.sq);
}

/* ---- the instance ---- */

static void dfr_destroy(struct pb_backend *be)
{
    struct dfr *d = dfr_of(be);
    struct pb_backend *prev = bound;
    bound = be;
    dfr_sync(be);
    pb_backend_finish_common(be);
    bound = prev;
    pthread_mutex_lock(&mu);
    instances[d->id] = NULL;
    pthread_cond_broadcast(&progress);
    pthread_mutex_unlock(&mu);
    pb_backend_destroy(d->in);
    free(d->q);
    free(d->stg);
    free(d);
    free(be);
}

static const struct pb_backend_ops dfr_ops = {
    .name = "deferred",
    .destroy = dfr_destroy,
    .sync = dfr_sync,
    .bind = dfr_bind,
    .fence_record = dfr_fence_record,
    .fence_wait = dfr_fence_wait,
    .timer_mark = dfr_timer_mark,
    .timer_elapsed = dfr_timer_elapsed,
    .supports_op = dfr_supports_op,
    .alloc = dfr_alloc,
    .free = dfr_free,
    .shares_memory = dfr_shares_memory,
    .host_visible = false,
    .upload = dfr_upload,
    .write_begin = dfr_write_begin,
    .write_end = dfr_write_end,
    .download = dfr_download,
    .copy = dfr_copy,
    .copy_peer = dfr_copy_peer,
    .fill = dfr_fill,
    .layout_floats = dfr_layout_floats,
    .reorder = dfr_reorder,
    .gemm = dfr_gemm,
    .bias_add = dfr_bias_add,
    .bias_grad = dfr_bias_grad,
    .conv_layout = dfr_conv_layout,
    .conv_fwd = dfr_conv_fwd,
    .conv_bwd_data = dfr_conv_bwd_data,
    .conv_bwd_weights = dfr_conv_bwd_weights,
    .pool_workspace = dfr_pool_workspace,
    .pool_fwd = dfr_pool_fwd,
    .pool_bwd = dfr_pool_bwd,
    .bn_aux_bytes = dfr_bn_aux_bytes,
    .bn_fwd_train = dfr_bn_fwd_train,
    .bn_fwd_infer = dfr_bn_fwd_infer,
    .bn_bwd = dfr_bn_bwd,
    .relu_fwd = dfr_relu_fwd,
    .relu_bwd = dfr_relu_bwd,
    .add = dfr_add,
    .add_relu = dfr_add_relu,
    .axpby = dfr_axpby,
    .dropout = dfr_dropout,
    .concat_layout = dfr_concat_layout,
    .concat = dfr_concat,
    .split = dfr_split,
    .softmax_xent = dfr_softmax_xent,
    .embedding_fwd = dfr_embedding_fwd,
    .embedding_bwd = dfr_embedding_bwd,
    .lstm_workspace = dfr_lstm_workspace,
    .lstm_fwd = dfr_lstm_fwd,
    .lstm_bwd = dfr_lstm_bwd,
    .lstm_bwd_keep = dfr_lstm_bwd_keep,
    .lstm_bwd_data = dfr_lstm_bwd_data,
    .lstm_bwd_weights = dfr_lstm_bwd_weights,
    .seq_mean_fwd = dfr_seq_mean_fwd,
    .seq_mean_bwd = dfr_seq_mean_bwd,
    .seq_gather = dfr_seq_gather,
    .attn_workspace = dfr_attn_workspace,
    .attn_fwd = dfr_attn_fwd,
    .attn_bwd = dfr_attn_bwd,
    .attn_bwd_keep = dfr_attn_bwd_keep,
    .attn_bwd_data = dfr_attn_bwd_data,
    .attn_bwd_weights = dfr_attn_bwd_weights,
    .attn_weights = dfr_attn_weights,
    .attn_project_keys = dfr_attn_project_keys,
    .attn_fwd_projected = dfr_attn_fwd_projected,
    .optim_step = dfr_optim_step,
    .predict = dfr_predict,
};

/* The same without peer copies: tensors between devices then cross through host memory. */
static struct pb_backend_ops dfr_ops_staged;
static bool peer = true;

void pb_deferred_peer_copies(bool on)
{
    peer = on;
}

static struct pb_backend *dfr_create(const struct pb_backend_cfg *c, struct pb_err *e)
{
    if (c->device < 0 || c->device > 3)
        return pb_err_set(e, "the deferred backend has devices 0 to 3 (got %d)", c->device), NULL;
    struct pb_backend *in = pb_backend_cpu_create(c->threads, e);
    if (!in)
        return NULL;
    struct dfr *d = pb_xcalloc(1, sizeof *d);
    d->in = in;
    struct pb_backend *be = pb_xcalloc(1, sizeof *be);
    if (!dfr_ops_staged.name) {
        dfr_ops_staged = dfr_ops;
        dfr_ops_staged.copy_peer = NULL;
    }
    pb_backend_init_common(be, peer ? &dfr_ops : &dfr_ops_staged, d, c->device);
    pthread_mutex_lock(&mu);
    d->id = -1;
    for (int k = 0; k < MAX_INSTANCES && d->id < 0; k++)
        if (!instances[k]) {
            d->id = k;
            instances[k] = be;
            done_seq[k] = 0;
        }
    pthread_mutex_unlock(&mu);
    PB_CHECK(d->id >= 0);
    return be;
}

static const struct pb_backend_reg deferred_reg = {
    "deferred", "the CPU backend behind a queue run at sync (tests: the core's device contract)",
    dfr_create, NULL, pb_backend_cpu_libraries, false,
};

void pb_deferred_register(void)
{
    pb_backend_register(&deferred_reg);
}
