/* harness/exec/dist_mpi.c — dist.h over MPI (Open MPI), and the mpi executor: messages go
 * by MPI (through host memory where the backend's is not host-visible), or device to
 * device with the backend's comm_* ops (NCCL) on the edges the transport plan marks
 * PB_XFER_DEVICE (harness/exec/transport.h). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/base/clock.h"
#include "harness/exec/dist.h"
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

/* The communicators of this rank's device-to-device directions (transport.h's
 * PB_XFER_DEVICE edges), one per direction of an edge, so that a send never queues behind
 * a receive of the same pair; NULL: MPI carries that direction. In each, rank 0 sends and
 * rank 1 receives. */
struct links {
    void *send_next, *recv_prev;   /* forward: k → k + 1, k − 1 → k */
    void *send_prev, *recv_next;   /* backward: k → k − 1, k + 1 → k */
};

/* What a rank tells the others for the plan. */
struct place_info {
    int device, host_visible, device_comm;
};

/* Plans the edges from every rank's device and backend (the same plan on every rank:
 * one rank per stage, rank k runs stage k) and joins the communicators of this rank's
 * device edges, edge by edge in order on every rank: the sender of a direction makes the
 * id, all ranks take part in its broadcast, its two ranks join. */
static int links_open(const struct pb_dist *d, struct pb_backend *be, struct links *l,
                      struct pb_err *e)
{
    *l = (struct links){0};
    const struct pb_backend_ops *o = be->ops;
    struct place_info mine = {be->device, o->host_visible,
                              o->comm_unique_id && o->comm_init && o->comm_send && o->comm_recv &&
                              o->comm_test && o->comm_finish && o->comm_id_bytes > 0};
    int n = d->size;
    struct place_info *all = pb_xcalloc((size_t)n, sizeof *all);
    pb_dist_gather(d, &mine, sizeof mine, all, 0);
    pb_dist_bcast(d, all, (size_t)n * sizeof *all, 0);
    struct pb_xfer_place *place = pb_xcalloc((size_t)n, sizeof *place);
    enum pb_xfer *edges = pb_xcalloc((size_t)n, sizeof *edges);
    /* one stage per rank: no edge within a process, so no peer copies */
    struct pb_xfer_caps caps = {.host_visible = true, .device_comm = true, .peer_copy = false};
    for (int r = 0; r < n; r++) {
        place[r] = (struct pb_xfer_place){r, all[r].device};
        caps.host_visible = caps.host_visible && all[r].host_visible;
        caps.device_comm = caps.device_comm && all[r].device_comm;
    }
    int rc = pb_transport_plan(place, n, caps, edges, e);
    unsigned char *id = NULL;
    for (int k = 0; !rc && k + 1 < n; k++) {
        if (edges[k] != PB_XFER_DEVICE)
            continue;
        if (!id)
            id = pb_xcalloc(1, o->comm_id_bytes);
        for (int dir = 0; dir < 2 && !rc; dir++) {
            int sender = dir == 0 ? k : k + 1, receiver = dir == 0 ? k + 1 : k;
            if (d->rank == sender && o->comm_unique_id(be, id, e)) {
                rc = -1;   /* the caller aborts every rank, those in the broadcast too */
                break;
            }
            pb_dist_bcast(d, id, o->comm_id_bytes, sender);
            if (d->rank != sender && d->rank != receiver)
                continue;
            void *c = o->comm_init(be, id, 2, d->rank == sender ? 0 : 1, e);
            if (!c)
                rc = -1;
            else if (d->rank == sender)
                *(dir == 0 ? &l->send_next : &l->send_prev) = c;
            else
                *(dir == 0 ? &l->recv_prev : &l->recv_next) = c;
        }
    }
    free(id);
    free(edges);
    free(place);
    free(all);
    return rc;
}

static void links_close(struct pb_backend *be, struct links *l)
{
    void *cs[4] = {l->send_next, l->recv_prev, l->send_prev, l->recv_next};
    for (int i = 0; i < 4; i++)
        if (cs[i])
            be->ops->comm_finish(be, cs[i]);
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

int pb_exec_mpi(const struct pb_dist *d, struct pb_worker *w, const struct pb_program *prog,
                struct pb_err *e)
{
    struct pb_stage *s = w->stage;
    int k = s->index, ndev = s->nstages;
    struct links l;
    if (links_open(d, s->be, &l, e))
        stop_run(d, e);
    bool device = l.send_next || l.recv_prev || l.send_prev || l.recv_next;
    struct pending p = {0};
    for (int i = 0; i < prog->n; i++) {
        const struct pb_op *op = &prog->ops[i];
        struct pb_msg in = {0}, out = {0};
        int from = -1, tag = 0;
        void *rcomm = NULL;
        if (op->kind == PB_OP_F && k > 0) {
            from = k - 1;
            tag = PB_TAG_FWD;
            in.shape = s->in_shape;
            rcomm = l.recv_prev;
        } else if (pb_op_carries_grad(op->kind) && k < ndev - 1) {
            from = k + 1;
            tag = PB_TAG_BWD;
            in.shape = s->out_shape;
            rcomm = l.recv_next;
        }
        int rc = 0;
        if (from >= 0) {
            double t0 = pb_now_s();
            rc = recv_msg(s->be, rcomm, &in, from, tag, e);
            w->st.wait_s += pb_now_s() - t0;
        }
        if (!rc)
            rc = pb_worker_exec(w, op, &in, &out, e);
        pb_msg_free(&in);
        if (!rc && pb_msg_present(&out)) {
            bool fwd = op->kind == PB_OP_F;
            rc = pending_send(&p, out, fwd ? l.send_next : l.send_prev, fwd ? k + 1 : k - 1,
                              fwd ? PB_TAG_FWD : PB_TAG_BWD, e);
        }
        if (rc)
            stop_run(d, e);
        pending_reap(&p, false);
    }
    pending_reap(&p, true);
    free(p.s);
    if (device) {
        /* a device message that failed fails the instance: seen once its stream is done */
        s->be->ops->sync(s->be);
        links_close(s->be, &l);
        if (pb_backend_status(s->be, e))
            stop_run(d, e);
    }
    return 0;
}
