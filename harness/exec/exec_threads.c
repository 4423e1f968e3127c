/* harness/exec/exec_threads.c — one thread per device (executor.h): each thread runs its
 * device's program in order, an op on chunk c on the worker of its stage
 * (pb_pipe_stage_of), a U on every chunk's; activations and gradients travel through
 * bounded FIFO channels between neighbouring stages (one per edge, also between two
 * chunks of one device). Time blocked on a channel is the device's
 * wait (bubble) time. A failing device stops every other within one channel wait:
 * the shared stop flag is checked whenever a thread would block. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "harness/base/clock.h"
#include "harness/exec/executor.h"
#include "harness/exec/msgq.h"

struct channel {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct pb_msgq q;
    int capacity;
};

struct shared {
    struct channel *fwd, *bwd;   /* fwd[k]: k → k+1; bwd[k]: k+1 → k */
    pthread_mutex_t stop_mu;
    bool stop;
    struct pb_err err;           /* the first failure */
    int failed_device;
};

struct device {
    struct shared *sh;
    struct pb_worker *workers;     /* [nst] every stage's; this device's are its chunks' */
    const struct pb_program *prog;
    int k, nst;
    int rc;
};

static bool stopped(struct shared *sh)
{
    pthread_mutex_lock(&sh->stop_mu);
    bool s = sh->stop;
    pthread_mutex_unlock(&sh->stop_mu);
    return s;
}

/* Records the first failure and wakes every thread blocked on a channel. */
static void stop_all(struct shared *sh, int nst, int device, const struct pb_err *e)
{
    pthread_mutex_lock(&sh->stop_mu);
    if (!sh->stop) {
        sh->stop = true;
        sh->err = *e;
        sh->failed_device = device;
    }
    pthread_mutex_unlock(&sh->stop_mu);
    for (int k = 0; k < nst; k++) {
        struct channel *cs[2] = {&sh->fwd[k], &sh->bwd[k]};
        for (int i = 0; i < 2; i++) {
            pthread_mutex_lock(&cs[i]->mu);
            pthread_cond_broadcast(&cs[i]->cv);
            pthread_mutex_unlock(&cs[i]->mu);
        }
    }
}

/* Blocking send; false when the run was stopped (the message is freed). */
static bool chan_send(struct shared *sh, struct channel *c, struct pb_msg m, double *wait)
{
    double t0 = pb_now_s();
    pthread_mutex_lock(&c->mu);
    while (c->q.count >= c->capacity && !stopped(sh))
        pthread_cond_wait(&c->cv, &c->mu);
    bool ok = !stopped(sh);
    if (ok) {
        pb_msgq_push(&c->q, m);
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    if (!ok)
        pb_msg_free(&m);
    *wait += pb_now_s() - t0;
    return ok;
}

/* Blocking receive; false when the run was stopped. */
static bool chan_recv(struct shared *sh, struct channel *c, struct pb_msg *m, double *wait)
{
    double t0 = pb_now_s();
    pthread_mutex_lock(&c->mu);
    while (c->q.count == 0 && !stopped(sh))
        pthread_cond_wait(&c->cv, &c->mu);
    bool ok = c->q.count > 0 && !stopped(sh);
    if (ok) {
        *m = pb_msgq_pop(&c->q);
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    *wait += pb_now_s() - t0;
    return ok;
}

/* Runs stage s's next op (the worker's own copy of the device's op): receives, runs,
 * sends; false when the run stops. */
static bool run_op(struct device *d, int s, int *spc)
{
    struct shared *sh = d->sh;
    struct pb_worker *w = &d->workers[s];
    const struct pb_op *op = &w->prog->ops[spc[s]++];
    struct pb_msg in = {0}, out = {0};
    struct pb_err e;
    bool ok = true;
    if (op->kind == PB_OP_F && s > 0)
        ok = chan_recv(sh, &sh->fwd[s - 1], &in, &w->st.wait_s);
    else if (pb_op_carries_grad(op->kind) && s < d->nst - 1)
        ok = chan_recv(sh, &sh->bwd[s], &in, &w->st.wait_s);
    if (!ok)
        return false;
    d->rc = pb_worker_exec(w, op, &in, &out, &e);
    pb_msg_free(&in);
    if (!d->rc)
        d->rc = pb_worker_should_stop(w, op, &e);
    if (d->rc) {
        pb_msg_free(&out);
        stop_all(sh, d->nst, d->k, &e);
        return false;
    }
    if (pb_msg_present(&out)) {
        struct channel *c = op->kind == PB_OP_F ? &sh->fwd[s] : &sh->bwd[s - 1];
        return chan_send(sh, c, out, &w->st.wait_s);
    }
    return true;
}

static void *device_main(void *arg)
{
    struct device *d = arg;
    const struct pb_pipe *pipe = &d->workers[0].pipe;
    int v = pb_pipe_chunks(pipe);
    int *spc = pb_xcalloc((size_t)d->nst, sizeof *spc);
    bool ok = true;
    for (int i = 0; i < d->prog->n && ok; i++) {
        const struct pb_op *op = &d->prog->ops[i];
        for (int c = 0; c < v && ok; c++)
            if (op->kind == PB_OP_U || c == op->chunk)
                ok = run_op(d, pb_pipe_stage_of(pipe, d->k, c), spc);
    }
    free(spc);
    return NULL;
}

int pb_exec_threads(struct pb_worker *workers, int nst, const struct pb_program *progs,
                    int capacity, struct pb_err *e)
{
    PB_CHECK(capacity >= 1);
    pb_workers_link(workers, nst);
    int ndev = pb_pipe_devices(&workers[0].pipe);
    struct shared sh = {0};
    pthread_mutex_init(&sh.stop_mu, NULL);
    sh.fwd = pb_xcalloc((size_t)nst, sizeof *sh.fwd);
    sh.bwd = pb_xcalloc((size_t)nst, sizeof *sh.bwd);
    for (int k = 0; k < nst; k++) {
        struct channel *cs[2] = {&sh.fwd[k], &sh.bwd[k]};
        for (int i = 0; i < 2; i++) {
            pthread_mutex_init(&cs[i]->mu, NULL);
            pthread_cond_init(&cs[i]->cv, NULL);
            cs[i]->capacity = capacity;
        }
    }
    struct device *devs = pb_xcalloc((size_t)ndev, sizeof *devs);
    pthread_t *tids = pb_xcalloc((size_t)ndev, sizeof *tids);
    for (int k = 0; k < ndev; k++) {
        devs[k] = (struct device){&sh, workers, &progs[k], k, nst, 0};
        PB_CHECK(pthread_create(&tids[k], NULL, device_main, &devs[k]) == 0);
    }
    for (int k = 0; k < ndev; k++)
        pthread_join(tids[k], NULL);
    int rc = 0;
    if (sh.stop) {
        *e = sh.err;
        rc = -1;
    }
    for (int k = 0; k < nst; k++) {
        struct channel *cs[2] = {&sh.fwd[k], &sh.bwd[k]};
        for (int i = 0; i < 2; i++) {
            pb_msgq_finish(&cs[i]->q);
            pthread_mutex_destroy(&cs[i]->mu);
            pthread_cond_destroy(&cs[i]->cv);
        }
    }
    pthread_mutex_destroy(&sh.stop_mu);
    free(sh.fwd);
    free(sh.bwd);
    free(devs);
    free(tids);
    return rc;
}
