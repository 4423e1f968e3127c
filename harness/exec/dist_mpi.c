/* harness/exec/dist_mpi.c — dist.h over MPI (Open MPI), and the mpi executor. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Sends in flight: their requests and buffers, freed once complete. */
struct pending {
    MPI_Request *req;
    float **buf;
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
            free(p->buf[i]);
        } else {
            p->req[j] = p->req[i];
            p->buf[j++] = p->buf[i];
        }
    }
    p->n = j;
}

static void pending_send(struct pending *p, struct pb_msg m, int to, int tag)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->req = realloc(p->req, (size_t)p->cap * sizeof *p->req);
        p->buf = realloc(p->buf, (size_t)p->cap * sizeof *p->buf);
        PB_CHECK(p->req && p->buf);
    }
    MPI_Isend(m.data, (int)pb_shape_count(m.shape), MPI_FLOAT, to, tag, MPI_COMM_WORLD,
              &p->req[p->n]);
    p->buf[p->n++] = m.data;
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
        if (from >= 0) {
            double t0 = now_s();
            in.data = pb_msg_alloc(pb_shape_count(in.shape));
            MPI_Recv(in.data, (int)pb_shape_count(in.shape), MPI_FLOAT, from, tag, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            w->st.wait_s += now_s() - t0;
        }
        if (pb_worker_exec(w, op, &in, &out, e)) {
            fprintf(stderr, "pipebench: rank %d stops the run: %s\n", d->rank, e->msg);
            pb_dist_abort(d, PB_EXIT_RUN);
        }
        free(in.data);
        if (out.data)
            pending_send(&p, out, op->kind == PB_OP_F ? k + 1 : k - 1,
                         op->kind == PB_OP_F ? PB_TAG_FWD : PB_TAG_BWD);
        pending_reap(&p, false);
    }
    pending_reap(&p, true);
    free(p.req);
    free(p.buf);
    return 0;
}
