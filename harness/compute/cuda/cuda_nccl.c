/* harness/compute/cuda/cuda_nccl.c — device-to-device messages between processes with
 * NCCL (backend.h's comm_* ops): ncclSend/ncclRecv of whole floats on a stream of each
 * communicator, ordered against the instance's stream by events, so that the instance's
 * later ops never wait for a receiver. No CPU reference: the CPU backend has no such ops
 * (its memory is host memory, which MPI reads directly). Runs only with several GPUs
 * (shared/CUDA.md §7); ncclGetUniqueId alone needs none (tests/compute/cuda/test_cuda_nccl.c). */
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/cuda/cuda_internal.h"

/* A communicator: NCCL's, its stream, and `ready` (the instance's stream so far, for the
 * communicator's stream to wait on) and `done` (the communicator's work so far, for the
 * instance's stream to wait on), recorded anew for each message. */
struct pb_cuda_comm {
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ready, done;
};

/* A failed NCCL call fails the instance with the call, its place and NCCL's messages. */
static bool pb_nccl_ok(struct pb_backend *be, ncclResult_t st, ncclComm_t comm, const char *what,
                       const char *file, int line)
{
    if (st == ncclSuccess)
        return true;
    const char *last = ncclGetLastError(comm);
    pb_backend_fail(be, "cuda backend, device %d: %s failed at %s:%d: %s%s%s", be->device, what,
                    file, line, ncclGetErrorString(st), last && *last ? ": " : "",
                    last ? last : "");
    return false;
}
#define PB_NCCL(be, comm, call) pb_nccl_ok((be), (call), (comm), #call, __FILE__, __LINE__)

size_t pb_cuda_nccl_unique_id(void *buf, size_t cap, struct pb_err *e)
{
    ncclUniqueId id;
    if (cap < sizeof id) {
        pb_err_set(e, "nccl: a unique id takes %zu bytes, %zu given", sizeof id, cap);
        return 0;
    }
    ncclResult_t st = ncclGetUniqueId(&id);
    if (st != ncclSuccess) {
        const char *last = ncclGetLastError(NULL);
        pb_err_set(e, "nccl: ncclGetUniqueId failed: %s%s%s", ncclGetErrorString(st),
                   last && *last ? ": " : "", last ? last : "");
        return 0;
    }
    memcpy(buf, &id, sizeof id);
    return sizeof id;
}

int pb_cuda_comm_unique_id(struct pb_backend *be, void *id, struct pb_err *e)
{
    (void)be;
    return pb_cuda_nccl_unique_id(id, NCCL_UNIQUE_ID_BYTES, e) ? 0 : -1;
}

/* Releases what c holds; abort: the instance failed, so NCCL's work may never finish. */
static void comm_release(struct pb_cuda_comm *c, bool abort)
{
    if (c->comm) {
        if (abort)
            ncclCommAbort(c->comm);
        else
            ncclCommDestroy(c->comm);
    }
    if (c->ready)
        cudaEventDestroy(c->ready);
    if (c->done)
        cudaEventDestroy(c->done);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    free(c);
}

void *pb_cuda_comm_init(struct pb_backend *be, const void *id, int nranks, int rank,
                        struct pb_err *e)
{
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        pb_err_set(e, "nccl: rank %d of %d ranks", rank, nranks);
        return NULL;
    }
    if (!pb_cuda_begin(be)) {
        pb_err_set(e, "%s", be->error.msg);
        return NULL;
    }
    struct pb_cuda_comm *c = calloc(1, sizeof *c);
    if (!c) {
        pb_err_set(e, "nccl: out of host memory for a communicator");
        return NULL;
    }
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    bool ok = PB_CUDA(be, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) &&
              PB_CUDA(be, cudaEventCreateWithFlags(&c->ready, cudaEventDisableTiming)) &&
              PB_CUDA(be, cudaEventCreateWithFlags(&c->done, cudaEventDisableTiming)) &&
              PB_NCCL(be, NULL, ncclCommInitRank(&c->comm, nranks, uid, rank));
    if (!ok) {
        comm_release(c, true);
        pb_err_set(e, "%s", be->error.msg);
        return NULL;
    }
    return c;
}

/* c's stream waits for the instance's ops enqueued so far. */
static bool after_instance(struct pb_backend *be, struct pb_cuda_comm *c)
{
    return PB_CUDA(be, cudaEventRecord(c->ready, pb_cuda_of(be)->stream)) &&
           PB_CUDA(be, cudaStreamWaitEvent(c->stream, c->ready, 0));
}

static bool whole_floats(struct pb_backend *be, const char *what, size_t bytes)
{
    if (bytes % sizeof(float) == 0)
        return true;
    pb_backend_fail(be, "cuda backend, device %d: %s of %zu bytes, not whole floats", be->device,
                    what, bytes);
    return false;
}

void *pb_cuda_comm_send(struct pb_backend *be, void *comm, const void *buf, size_t bytes, int peer)
{
    // buf is (bytes / 4) floats of be's device memory
    struct pb_cuda_comm *c = comm;
    if (!pb_cuda_begin(be) || !whole_floats(be, "nccl send", bytes))
        return NULL;
    cudaEvent_t ticket = NULL;
    if (!PB_CUDA(be, cudaEventCreateWithFlags(&ticket, cudaEventDisableTiming)))
        return NULL;
    if (!after_instance(be, c)) {
        cudaEventDestroy(ticket);
        return NULL;
    }
    bool sent = PB_NCCL(be, c->comm, ncclSend(buf, bytes / sizeof(float), ncclFloat, peer,
                                              c->comm, c->stream));
    if (!sent || !PB_CUDA(be, cudaEventRecord(ticket, c->stream))) {
        /* nothing to poll: buf is free once the stream is */
        cudaStreamSynchronize(c->stream);
        cudaEventDestroy(ticket);
        return NULL;
    }
    return ticket;
}

void pb_cuda_comm_recv(struct pb_backend *be, void *comm, void *buf, size_t bytes, int peer)
{
    // buf is (bytes / 4) floats of be's device memory
    struct pb_cuda_comm *c = comm;
    if (!pb_cuda_begin(be) || !whole_floats(be, "nccl receive", bytes) || !after_instance(be, c))
        return;
    if (PB_NCCL(be, c->comm, ncclRecv(buf, bytes / sizeof(float), ncclFloat, peer, c->comm,
                                      c->stream)) &&
        PB_CUDA(be, cudaEventRecord(c->done, c->stream)))
        PB_CUDA(be, cudaStreamWaitEvent(pb_cuda_of(be)->stream, c->done, 0));
}

bool pb_cuda_comm_test(struct pb_backend *be, void *ticket, bool wait)
{
    if (!ticket)
        return true;
    cudaEvent_t ev = ticket;
    if (!pb_cuda_bind(be)) {
        cudaEventDestroy(ev);
        return true;
    }
    cudaError_t st = wait ? cudaEventSynchronize(ev) : cudaEventQuery(ev);
    if (st == cudaErrorNotReady) {
        (void)cudaGetLastError();   /* not an error: leave nothing for a launch check */
        return false;
    }
    PB_CUDA(be, st);
    cudaEventDestroy(ev);
    return true;
}

void pb_cuda_comm_finish(struct pb_backend *be, void *comm)
{
    struct pb_cuda_comm *c = comm;
    if (!c)
        return;
    bool ok = pb_cuda_bind(be) && !be->failed &&
              PB_CUDA(be, cudaStreamSynchronize(c->stream));
    comm_release(c, !ok);
}
