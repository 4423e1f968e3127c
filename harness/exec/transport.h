/* harness/exec/transport.h — how a tensor crosses each edge between neighbouring stages,
 * decided once from where the stages are placed (their process and device) and what the
 * backend offers: a plan, pure and unit-tested (tests/exec/test_transport.c); the executors
 * carry the messages the way it says. Never two ranks of one NCCL communicator on one GPU
 * (NCCL refuses it, shared/CUDA.md §7): two processes on one device go through MPI. */
#ifndef PB_TRANSPORT_H
#define PB_TRANSPORT_H

#include <stdbool.h>

#include "harness/base/err.h"

enum pb_xfer {
    PB_XFER_TAKE,      /* one process, one address space: the receiver takes the buffer */
    PB_XFER_PEER,      /* one process, different devices, a backend with copy_peer: the
                        * receiver copies from the sender's device on its own stream */
    PB_XFER_HOST,      /* one process, different devices otherwise: staged through host
                        * memory by the sender */
    PB_XFER_DEVICE,    /* different processes on different devices: the backend's device
                        * send/recv (comm_send/comm_recv, NCCL on a GPU), never the host */
    PB_XFER_MPI_HOST,  /* different processes otherwise: MPI, reading host-visible memory
                        * directly, else a host copy */
};

/* "take", "peer", "host", "device", "mpi-host" */
const char *pb_xfer_name(enum pb_xfer x);

/* Where a stage runs: its process (MPI rank; 0 for every stage of one process) and the
 * index of its device among the backend's devices on that process's machine. */
struct pb_xfer_place {
    int rank, device;
};

/* What the backend offers (the same on every stage). */
struct pb_xfer_caps {
    bool host_visible;  /* ops->host_visible: device memory is host memory */
    bool device_comm;   /* ops->comm_send and comm_recv exist */
    bool peer_copy;     /* ops->copy_peer exists */
};

/* The plan of n stages placed at place [n]: edges[k] (k < n − 1) for the tensors between
 * stages k and k + 1, both ways (activations forward, gradients back). Rules, in order:
 * - one rank, and the same device or host-visible memory: TAKE;
 * - one rank, different devices: PEER where the backend has copy_peer, else HOST;
 * - different ranks, device_comm, not host-visible, different devices: DEVICE;
 * - different ranks otherwise (the same device, or no device send/recv): MPI_HOST.
 * Two ranks on the same device index count as one GPU even where they may sit on two
 * machines: MPI then carries it, slower but never refused. A process's stages must be
 * one run of neighbours (no rank again after another), ranks and devices >= 0.
 * Returns 0, or -1 with e naming the bad input. */
int pb_transport_plan(const struct pb_xfer_place *place, int n, struct pb_xfer_caps caps,
                      enum pb_xfer *edges, struct pb_err *e);

#endif
