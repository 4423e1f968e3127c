/* harness/exec/dist_mpi.c — dist.h over MPI (Open MPI), and the mpi executor, one rank per
 * device running its chunks' stages: messages between ranks go by MPI (through host memory
 * where the backend's is not host-visible), or device to device with the backend's comm_*
 * ops (NCCL) on the edges the transport plan marks PB_XFER_DEVICE
 * (harness/exec/transport.h); those between two stages of one rank through a local queue. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/base/clock.h"
#include "harness/exec/dist.h"
#include "harness/exec/msgq.h"
#include "harness/exec/transport.h"
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

/* This rank's ends of the device-to-device communicators (transport.h's PB_XFER_DEVICE
 * edges), one per edge and direction, so that a send never queues behind a receive of the
 * same pair; NULL: MPI carries that direction, or the edge is within this rank. An edge
 * between two ranks has one end here at most, so each entry is either this rank's send
 * or its receive. In each communicator rank 0 sends and rank 1 receives. */
struct links {
    void **fwd, **bwd;   /* [nst − 1]: edge k's forward (k → k + 1) and backward (k + 1 → k) */
    int n;
};

/* What a rank tells the others about each stage it holds, for the plan. */
struct place_info {
    int device, host_visible, device_comm;
};

/* Whether be has the device send/recv the DEVICE edges need. */
static int has_device_comm(const struct pb_backend *be)
{
    const struct pb_backend_ops *o = be->ops;
    return o->comm_unique_id && o->comm_init && o->comm_send && o->comm_recv && o->comm_test &&
           o->comm_finish && o->comm_id_bytes > 0;
}

/* Plans every edge from each stage's rank (rank_of[nst]), device and backend (the same plan
 * on every rank) and joins the communicators of this rank's DEVICE edges, edge by edge in
 * order on every rank: the sending stage's rank makes the id, all ranks take part in its
 * broadcast, its two ranks join. */
static int links_open(const struct pb_dist *d, struct pb_worker *workers, int nst,
                      const int *rank_of, struct links *l, struct pb_err *e)
{
    l->n = nst > 1 ? nst - 1 : 0;
    l->fwd = pb_xcalloc((size_t)l->n + 1, sizeof *l->fwd);
    l->bwd = pb_xcalloc((size_t)l->n + 1, sizeof *l->bwd);
    struct place_info *mine = pb_xcalloc((size_t)nst, sizeof *mine);
    const struct pb_backend_ops *ops = NULL;   /* every stage's backend is of one kind */
    for (int k = 0; k < nst; k++)
        if (rank_of[k] == d->rank) {
            struct pb_backend *be = workers[k].stage->be;
            ops = be->ops;
            mine[k] = (struct place_info){be->device, be->ops->host_visible, has_device_comm(be)};
        }
    /* every rank's [nst] at rank 0, which keeps each stage's holder's entry for all */
    struct place_info *all = pb_xcalloc((size_t)d->size * (size_t)nst, sizeof *all);
    pb_dist_gather(d, mine, (size_t)nst * sizeof *mine, all, 0);
    for (int k = 0; k < nst; k++)
        mine[k] = all[(size_t)rank_of[k] * (size_t)nst + (size_t)k];
    pb_dist_bcast(d, mine, (size_t)nst * sizeof *mine, 0);
    struct pb_xfer_caps caps = {.host_visible = true, .device_comm = true, .peer_copy = false};
    for (int k = 0; k < nst; k++) {
        caps.host_visible = caps.host_visible && mine[k].host_visible;
        caps.device_comm = caps.device_comm && mine[k].device_comm;
    }
    int rc = 0;
    unsigned char *id = NULL;
    for (int k = 0; !rc && k + 1 < nst; k++) {
        if (rank_of[k] == rank_of[k + 1])
            continue;   /* within one rank: the workers' local queue (pb_exec_mpi) */
        /* an edge's plan depends on its two ends alone: its two stages as a pipeline */
        struct pb_xfer_place ends[2] = {{rank_of[k], mine[k].device},
                                        {rank_of[k + 1], mine[k + 1].device}};
        enum pb_xfer x;
        rc = pb_transport_plan(ends, 2, caps, &x, e);
        if (rc || x != PB_XFER_DEVICE)
            continue;
        for (int dir = 0; dir < 2 && !rc; dir++) {
            int from = dir == 0 ? k : k + 1, to = dir == 0 ? k + 1 : k;
            int sender = rank_of[from], receiver = rank_of[to];
            struct pb_backend *be = d->rank == sender     ? workers[from].stage->be
                                    : d->rank == receiver ? workers[to].stage->be
                                                          : NULL;
            if (!id)
                id = pb_xcalloc(1, ops->comm_id_bytes);
            if (d->rank == sender && ops->comm_unique_id(be, id, e)) {
                rc = -1;   /* the caller aborts every rank, those in the broadcast too */
                break;
            }
            pb_dist_bcast(d, id, ops->comm_id_bytes, sender);
            if (!be)
                continue;
            void *c = be->ops->comm_init(be, id, 2, d->rank == sender ? 0 : 1, e);
            if (!c)
                rc = -1;
            else
                *(dir == 0 ? &l->fwd[k] : &l->bwd[k]) = c;
        }
    }
    free(id);
    free(all);
    free(mine);
    return rc;
}

static void links_close(struct pb_worker *workers, const int *rank_of, int rank,
                        struct links *l)
{
    for (int k = 0; k < l->n; k++) {
        if (!l->fwd[k] && !l->bwd[k])
            continue;
        /* this rank's end of edge k: the stage it holds */
        struct pb_backend *be = workers[rank_of[k] == rank ? k : k + 1].stage->be;
        if (l->fwd[k])
            be->ops->comm_finish(be, l->fwd[k]);
        if (l->bwd[k])
            be->ops->comm_finish(be, l->bwd[k]);
    }
    free(l->fwd);
    free(l->bwd);
    *l = (struct links){0};
}

/* Sends in flight: their requests (MPI) or tickets (device sends) and messages, freed once
 * complete. A message stays the sending stage's communication memory until then; a
 * backend whose memory MPI cannot read (not host-visible) sends a host copy. */
struct sent {
    MPI_Request req;
    bool device;        /* a device send: ticket instead of req */
    void *ticket;
    struct pb_msg msg;
    void *host;         /* the host copy sent, or NULL */
};
struct pending {
    struct sent *s;
    int n, cap;
};

static void pending_reap(struct pending *p, bool all)
{
    int j = 0;
    for (int i = 0; i < p->n; i++) {
        struct sent *x = &p->s[i];
        int done = 0;
        if (x->device)
            done = x->msg.be->ops->comm_test(x->msg.be, x->ticket, all);
        else if (all)
            MPI_Wait(&x->req, MPI_STATUS_IGNORE), done = 1;
        else
            MPI_Test(&x->req, &done, MPI_STATUS_IGNORE);
        if (done) {
            pb_msg_free(&x->msg);
            free(x->host);
        } else {
            p->s[j++] = *x;
        }
    }
    p->n = j;
}

/* Sends m to rank `to`: device to device through comm where it is not NULL, else MPI. */
static int pending_send(struct pending *p, struct pb_msg m, void *comm, int to, int tag,
                        struct pb_err *e)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->s = realloc(p->s, (size_t)p->cap * sizeof *p->s);
        PB_CHECK(p->s);
    }
    size_t count = pb_shape_count(m.shape);
    struct sent *x = &p->s[p->n];
    *x = (struct sent){.msg = m};
    if (comm) {
        x->device = true;
        x->ticket = m.be->ops->comm_send(m.be, comm, m.data, count * sizeof(float), 1);
        p->n++;
        return 0;
    }
    const void *buf = m.data;
    if (!m.be->ops->host_visible) {
        x->host = malloc(count * sizeof(float) + 1);
        if (!x->host)
            return pb_err_set(e, "out of host memory for a %zu-byte message", count * sizeof(float));
        m.be->ops->download(m.be, x->host, m.data, count * sizeof(float));
        m.be->ops->sync(m.be);
        buf = x->host;
    }
    MPI_Isend(buf, (int)count, MPI_FLOAT, to, tag, MPI_COMM_WORLD, &x->req);
    p->n++;
    return 0;
}

/* Receives a message into this stage's backend memory (PB_MEM_COMM until the worker
 * takes it): device to device through comm where it is not NULL (the backend's later ops
 * wait for it), else by MPI, through a host buffer when MPI cannot write the backend's
 * memory. */
static int recv_msg(struct pb_backend *be, void *comm, struct pb_msg *m, int from, int tag,
                    struct pb_err *e)
{
    size_t count = pb_shape_count(m->shape), bytes = count * sizeof(float);
    m->be = be;
    m->data = pb_backend_alloc(be, bytes, PB_MEM_COMM, e);
    if (!m->data)
        return -1;
    if (comm) {
        be->ops->comm_recv(be, comm, m->data, bytes, 0);
        return 0;
    }
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

/* Prints why this rank stops and ends every rank. */
static _Noreturn void stop_run(const struct pb_dist *d, const struct pb_err *e)
{
    fprintf(stderr, "pipebench: rank %d stops the run: %s\n", d->rank, e->msg);
    pb_dist_abort(d, PB_EXIT_RUN);
}

/* A device's run: its workers, where every stage is, its links to the other ranks, the
 * queues of its edges within the rank and the sends in flight. */
struct device_run {
    const struct pb_dist *d;
    struct pb_worker *workers;     /* [nst], this rank's stages set */
    int nst;
    const int *rank_of;            /* [nst] the rank (device) holding each stage */
    struct links l;
    struct pb_msgq *fwd, *bwd;     /* [nst − 1] edge k's queues when both its ends are here */
    struct pending p;
};

/* The message stage s's op needs from stage `from` over edge k (fwd: an activation):
 * popped from the edge's queue when stage `from` is here (its op ran earlier in the
 * device's order, or the order cannot run), else received from its rank. */
static int take_input(struct device_run *r, int s, int from, int k, bool fwd, struct pb_msg *in,
                      struct pb_err *e)
{
    struct pb_worker *w = &r->workers[s];
    if (r->rank_of[from] == r->d->rank) {
        struct pb_msgq *q = fwd ? &r->fwd[k] : &r->bwd[k];
        if (!q->count)
            return pb_err_set(e, "stage %d waits for stage %d, which its own device runs "
                                 "later: the device program cannot run in this order", s, from);
        *in = pb_msgq_pop(q);
        return 0;
    }
    in->shape = fwd ? w->stage->in_shape : w->stage->out_shape;
    double t0 = pb_now_s();
    int rc = recv_msg(w->stage->be, fwd ? r->l.fwd[k] : r->l.bwd[k], in, r->rank_of[from],
                      PB_TAG_EDGES + 2 * k + !fwd, e);
    w->st.wait_s += pb_now_s() - t0;
    return rc;
}

/* Runs stage s's next op (the worker's own copy of the device's op): receives, runs,
 * sends; the message out goes to the edge's queue when its receiver is here. */
static int run_op(struct device_run *r, int s, int *spc, struct pb_err *e)
{
    struct pb_worker *w = &r->workers[s];
    const struct pb_op *op = &w->prog->ops[spc[s]++];
    struct pb_msg in = {0}, out = {0};
    int rc = 0;
    if (op->kind == PB_OP_F && s > 0)
        rc = take_input(r, s, s - 1, s - 1, true, &in, e);
    else if (pb_op_carries_grad(op->kind) && s < r->nst - 1)
        rc = take_input(r, s, s + 1, s, false, &in, e);
    if (!rc)
        rc = pb_worker_exec(w, op, &in, &out, e);
    pb_msg_free(&in);
    if (rc || !pb_msg_present(&out)) {
        pb_msg_free(&out);
        return rc;
    }
    bool fwd = op->kind == PB_OP_F;
    int to = fwd ? s + 1 : s - 1, k = fwd ? s : s - 1;
    if (r->rank_of[to] == r->d->rank) {
        pb_msgq_push(fwd ? &r->fwd[k] : &r->bwd[k], out);
        return 0;
    }
    return pending_send(&r->p, out, fwd ? r->l.fwd[k] : r->l.bwd[k], r->rank_of[to],
                        PB_TAG_EDGES + 2 * k + !fwd, e);
}

int pb_exec_mpi(const struct pb_dist *d, struct pb_worker *workers, int nst,
                const struct pb_program *prog, struct pb_err *e)
{
    /* chunk 0 of device r is stage r in either placement: a worker of this rank */
    const struct pb_pipe *pipe = &workers[d->rank].pipe;
    int v = pb_pipe_chunks(pipe);
    PB_CHECK(pipe->stages == nst && pb_pipe_devices(pipe) == d->size && prog->device == d->rank);
    int *rank_of = pb_xcalloc((size_t)nst, sizeof *rank_of);
    for (int k = 0; k < nst; k++)
        rank_of[k] = pb_pipe_device_of(pipe, k);
    /* neighbours on this rank share memory or stage through host memory (struct pb_msg) */
    for (int c = 0; c < v; c++) {
        int k = pb_pipe_stage_of(pipe, d->rank, c);
        struct pb_worker *w = &workers[k];
        w->prev_be = k > 0 && rank_of[k - 1] == d->rank ? workers[k - 1].stage->be : NULL;
        w->next_be = k + 1 < nst && rank_of[k + 1] == d->rank ? workers[k + 1].stage->be : NULL;
    }
    struct device_run r = {.d = d, .workers = workers, .nst = nst, .rank_of = rank_of};
    if (links_open(d, workers, nst, rank_of, &r.l, e))
        stop_run(d, e);
    bool device = false;
    for (int k = 0; k < r.l.n; k++)
        device |= r.l.fwd[k] || r.l.bwd[k];
    r.fwd = pb_xcalloc((size_t)nst, sizeof *r.fwd);
    r.bwd = pb_xcalloc((size_t)nst, sizeof *r.bwd);
    int *spc = pb_xcalloc((size_t)nst, sizeof *spc);
    for (int i = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        for (int c = 0; c < v; c++)
            if (op->kind == PB_OP_U || c == op->chunk) {
                if (run_op(&r, pb_pipe_stage_of(pipe, d->rank, c), spc, e))
                    stop_run(d, e);
            }
        pending_reap(&r.p, false);
    }
    pending_reap(&r.p, true);
    free(r.p.s);
    free(spc);
    for (int k = 0; k < nst; k++) {
        pb_msgq_finish(&r.fwd[k]);
        pb_msgq_finish(&r.bwd[k]);
    }
    free(r.fwd);
    free(r.bwd);
    /* a device message that failed fails the instance: seen once its stream is done */
    for (int c = 0; c < v && device; c++) {
        struct pb_backend *be = workers[pb_pipe_stage_of(pipe, d->rank, c)].stage->be;
        be->ops->sync(be);
    }
    links_close(workers, rank_of, d->rank, &r.l);
    for (int c = 0; c < v && device; c++)
        if (pb_backend_status(workers[pb_pipe_stage_of(pipe, d->rank, c)].stage->be, e))
            stop_run(d, e);
    free(rank_of);
    return 0;
}
