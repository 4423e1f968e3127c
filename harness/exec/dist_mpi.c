/* harness/exec/dist_mpi.c — dist.h over MPI (Open MPI), and the mpi executor. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/base/clock.h"
#include "harness/exec/dist.h"
#include "harness/base/err.h"
#include "harness/exec/worker.h"

bool pb_dist_available(void)
{
    return true;
}

int pb_dist_init(struct pb_dist *d, struct pb_err *e)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
            return pb_err_set(e, "MPI could not start; run under mpirun -np D");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    return 0;
}

void pb_dist_finish(struct pb_dist *d)
{
    (void)d;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Finalize();
}

void pb_dist_sum(const struct pb_dist *d, double *x)
{
    if (!d)
        return;
    double in = *x;
    MPI_Allreduce(&in, x, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

bool pb_dist_any(const struct pb_dist *d, bool local)
{
    if (!d)
        return local;
    int in = local, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return out != 0;
}

void pb_dist_bcast(const struct pb_dist *d, void *buf, size_t bytes, int root)
{
    if (d)
        MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
}

void pb_dist_send(const struct pb_dist *d, const void *buf, size_t bytes, int to, int tag)
{
    PB_CHECK(d != NULL);
    MPI_Send(buf, (int)bytes, MPI_BYTE, to, tag, MPI_COMM_WORLD);
}

void pb_dist_recv(const struct pb_dist *d, void *buf, size_t bytes, int from, int tag)
{
    PB_CHECK(d != NULL);
    MPI_Recv(buf, (int)bytes, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

void pb_dist_gather(const struct pb_dist *d, const void *mine, size_t bytes, void *all, int root)
{
    if (!d) {
        memcpy(all, mine, bytes);
        return;
    }
    MPI_Gather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
}

void pb_dist_gatherv(const struct pb_dist *d, const void *mine, size_t bytes, void **all,
                     size_t *total, int root)
{
    PB_CHECK(d != NULL);
    int n = (int)bytes;
    int *counts = NULL, *displs = NULL;
    if (d->rank == root) {
        counts = pb_xcalloc((size_t)d->size, sizeof *counts);
        displs = pb_xcalloc((size_t)d->size, sizeof *displs);
    }
    MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, root, MPI_COMM_WORLD);
    size_t sum = 0;
    if (d->rank == root)
        for (int i = 0; i < d->size; i++) {
            displs[i] = (int)sum;
            sum += (size_t)counts[i];
        }
    char *buf = d->rank == root ? pb_xmalloc(sum + 1) : NULL;
    MPI_Gatherv(mine, n, MPI_BYTE, buf, counts, displs, MPI_BYTE, root, MPI_COMM_WORLD);
    if (d->rank == root) {
        *all = buf;
        *total = sum;
    }
    free(counts);
    free(displs);
}

void pb_dist_barrier(const struct pb_dist *d)
{
    if (d)
        MPI_Barrier(MPI_COMM_WORLD);
}

void pb_dist_abort(const struct pb_dist *d, int status)
{
    (void)d;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
    exit(status);
}

/* Sends in flight: their requests and messages, freed once complete. A message stays
 * the sending stage's communication memory until then; a backend whose memory MPI
 * cannot read (not host-visible) sends a host copy. */
struct pending {
    MPI_Request *req;
    struct pb_msg *msg;
    void **host;        /* the host copy sent, or NULL */
    int n, cap;
};

static void pending_reap(struct pending *p, bool all)
{
    int j = 0;
    for (int i = 0; i < p->n; i++) {
        int done = 0;
        if (all)
            MPI_Wait(&p->req[i], MPI_STATUS_IGNORE), done = 1;
        else
            MPI_Test(&p->req[i], &done, MPI_STATUS_IGNORE);
        if (done) {
            pb_msg_free(&p->msg[i]);
            free(p->host[i]);
        } else {
            p->req[j] = p->req[i];
            p->msg[j] = p->msg[i];
            p->host[j++] = p->host[i];
        }
    }
    p->n = j;
}

static int pending_send(struct pending *p, struct pb_msg m, int to, int tag, struct pb_err *e)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->req = realloc(p->req, (size_t)p->cap * sizeof *p->req);
        p->msg = realloc(p->msg, (size_t)p->cap * sizeof *p->msg);
        p->host = realloc(p->host, (size_t)p->cap * sizeof *p->host);
        PB_CHECK(p->req && p->msg && p->host);
    }
    size_t count = pb_shape_count(m.shape);
    void *host = NULL;
    const void *buf = m.data;
    if (!m.be->ops->host_visible) {
        host = malloc(count * sizeof(float) + 1);
        if (!host)
            return pb_err_set(e, "out of host memory for a %zu-byte message", count * sizeof(float));
        m.be->ops->download(m.be, host, m.data, count * sizeof(float));
        m.be->ops->sync(m.be);
        buf = host;
    }
    MPI_Isend(buf, (int)count, MPI_FLOAT, to, tag, MPI_COMM_WORLD, &p->req[p->n]);
    p->msg[p->n] = m;
    p->host[p->n++] = host;
    return 0;
}

/* Receives a message into this stage's backend memory (PB_MEM_COMM until the worker
 * takes it), through a host buffer when MPI cannot write the backend's memory. */
static int recv_msg(struct pb_backend *be, struct pb_msg *m, int from, int tag, struct pb_err *e)
{
    size_t count = pb_shape_count(m->shape), bytes = count * sizeof(float);
    m->be = be;
    m->data = pb_backend_alloc(be, bytes, PB_MEM_COMM, e);
    if (!m->data)
        return -1;
    if (be->ops->host_visible) {
        MPI_Recv(m->data, (int)count, MPI_FLOAT, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return 0;
    }
    void *host = malloc(bytes + 1);
    if (!host) {
        pb_msg_free(m);
        return pb_err_set(e, "out of host memory for a %zu-byte message", bytes);
    }
    MPI_Recv(host, (int)count, MPI_FLOAT, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    be->ops->upload(be, m->data, host, bytes);
    be->ops->sync(be);
    free(host);
    return 0;
}

int pb_exec_mpi(const struct pb_dist *d, struct pb_worker *w, const struct pb_program *prog,
                struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    int k = s->index, ndev = s->nstages;
    struct pending p = {0};
    for (int i = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        struct pb_msg in = {0}, out = {0};
        int from = -1, tag = 0;
        if (op->kind == PB_OP_F && k > 0) {
            from = k - 1;
            tag = PB_TAG_FWD;
            in.shape = s->in_shape;
        } else if (op->kind == PB_OP_B && k < ndev - 1) {
            from = k + 1;
            tag = PB_TAG_BWD;
            in.shape = s->out_shape;
        }
        int rc = 0;
        if (from >= 0) {
            double t0 = pb_now_s();
            rc = recv_msg(s->be, &in, from, tag, e);
            w->st.wait_s += pb_now_s() - t0;
        }
        if (!rc)
            rc = pb_worker_exec(w, op, &in, &out, e);
        pb_msg_free(&in);
        if (!rc && pb_msg_present(&out))
            rc = pending_send(&p, out, op->kind == PB_OP_F ? k + 1 : k - 1,
                              op->kind == PB_OP_F ? PB_TAG_FWD : PB_TAG_BWD, e);
        if (rc) {
            fprintf(stderr, "pipebench: rank %d stops the run: %s\n", d->rank, e->msg);
            pb_dist_abort(d, PB_EXIT_RUN);
        }
        pending_reap(&p, false);
    }
    pending_reap(&p, true);
    free(p.req);
    free(p.msg);
    free(p.host);
    return 0;
}
