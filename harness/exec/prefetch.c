/* harness/exec/prefetch.c — stage 0's loader thread (prefetch.h): a FIFO of passes, a
 * ring of PB_PREFETCH_DEPTH prepared batches, one mutex and one condition variable. The
 * thread fills batch k into slot k mod depth once the consumer has taken batch k − depth;
 * the consumer copies batch k out of its slot, then frees it. */
#include "harness/exec/prefetch.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

struct pass {
    const struct pb_dataset *ds;
    int32_t *order;            /* the thread's copy, NULL: file order */
    int b;
    struct pb_data_key key;
    int *mbs, n;
    struct pass *next;
};

struct pb_prefetch {
    struct pb_backend *be;
    size_t floats;             /* per batch */
    float *ring[PB_PREFETCH_DEPTH];
    int ring_mb[PB_PREFETCH_DEPTH];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    struct pass *head, *tail;  /* queued passes, oldest (being taken) first */
    struct pass *filling;      /* the pass the thread fills, NULL when all are filled */
    int fill_i, take_i;        /* next batch to fill in `filling`, to take in `head` */
    long produced, consumed;   /* batches, all passes together */
};

static void *loader_main(void *arg)
{
    struct pb_prefetch *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && (!p->filling || p->produced - p->consumed == PB_PREFETCH_DEPTH))
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop)
            break;
        const struct pass *pass = p->filling;
        int mb = pass->mbs[p->fill_i], slot = (int)(p->produced % PB_PREFETCH_DEPTH);
        pthread_mutex_unlock(&p->mu);
        pb_dataset_gather(pass->ds, pass->key, pass->order, mb * pass->b, pass->b, p->ring[slot],
                          NULL);
        pthread_mutex_lock(&p->mu);
        p->ring_mb[slot] = mb;
        p->produced++;
        if (++p->fill_i == pass->n) {
            p->filling = pass->next;
            p->fill_i = 0;
        }
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

struct pb_prefetch *pb_prefetch_create(struct pb_backend *be, size_t batch_floats)
{
    struct pb_prefetch *p = pb_xcalloc(1, sizeof *p);
    p->be = be;
    p->floats = batch_floats;
    for (int i = 0; i < PB_PREFETCH_DEPTH; i++)
        p->ring[i] = pb_xmalloc(batch_floats * sizeof(float) + 1);
    pb_backend_account(be, PB_MEM_HOST, PB_PREFETCH_DEPTH * batch_floats * sizeof(float), true);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    /* signals (SIGINT, SIGTERM) go to the run's own threads, never to the loader */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    PB_CHECK(pthread_create(&p->thread, NULL, loader_main, p) == 0);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return p;
}

void pb_prefetch_queue(struct pb_prefetch *p, const struct pb_dataset *ds, const int32_t *order,
                       int b, struct pb_data_key key, const int *mbs, int n)
{
    if (n == 0)
        return;
    struct pass *pass = pb_xcalloc(1, sizeof *pass);
    *pass = (struct pass){ds, NULL, b, key, pb_xmalloc((size_t)n * sizeof(int)), n, NULL};
    memcpy(pass->mbs, mbs, (size_t)n * sizeof(int));
    if (order) {
        pass->order = pb_xmalloc((size_t)ds->n * sizeof *order);
        memcpy(pass->order, order, (size_t)ds->n * sizeof *order);
    }
    for (int i = 0; i < n; i++)
        PB_CHECK(mbs[i] >= 0 && ((size_t)mbs[i] + 1) * (size_t)b <= (size_t)ds->n);
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = pass;
    else
        p->head = pass;
    p->tail = pass;
    if (!p->filling) {
        p->filling = pass;
        p->fill_i = 0;
    }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void free_pass(struct pass *pass)
{
    free(pass->order);
    free(pass->mbs);
    free(pass);
}

void pb_prefetch_take(struct pb_prefetch *p, int mb, float *x)
{
    pthread_mutex_lock(&p->mu);
    /* a take without a queued batch would wait forever: a broken invariant */
    PB_CHECK(p->head != NULL && p->head->mbs[p->take_i] == mb);
    while (p->produced == p->consumed)
        pthread_cond_wait(&p->cv, &p->mu);
    int slot = (int)(p->consumed % PB_PREFETCH_DEPTH);
    PB_CHECK(p->ring_mb[slot] == mb);
    pthread_mutex_unlock(&p->mu);
    memcpy(x, p->ring[slot], p->floats * sizeof(float));
    pthread_mutex_lock(&p->mu);
    p->consumed++;
    if (++p->take_i == p->head->n) {
        struct pass *done = p->head;
        p->head = done->next;
        if (!p->head)
            p->tail = NULL;
        p->take_i = 0;
        free_pass(done);
    }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void pb_prefetch_destroy(struct pb_prefetch *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    while (p->head) {
        struct pass *next = p->head->next;
        free_pass(p->head);
        p->head = next;
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    for (int i = 0; i < PB_PREFETCH_DEPTH; i++)
        free(p->ring[i]);
    pb_backend_account(p->be, PB_MEM_HOST, PB_PREFETCH_DEPTH * p->floats * sizeof(float), false);
    free(p);
}
