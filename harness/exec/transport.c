/* harness/exec/transport.c — the transport plan (transport.h): for each edge between
 * neighbouring stages, zero-copy, host staging, device send/recv or MPI, from the stages'
 * processes and devices and the backend's capabilities. */
#include "harness/exec/transport.h"

#include <stddef.h>

const char *pb_xfer_name(enum pb_xfer x)
{
    switch (x) {
    case PB_XFER_TAKE: return "take";
    case PB_XFER_PEER: return "peer";
    case PB_XFER_HOST: return "host";
    case PB_XFER_DEVICE: return "device";
    case PB_XFER_MPI_HOST: return "mpi-host";
    }
    return "?";
}

static enum pb_xfer edge_of(struct pb_xfer_place a, struct pb_xfer_place b, struct pb_xfer_caps c)
{
    if (a.rank == b.rank)
        return a.device == b.device || c.host_visible ? PB_XFER_TAKE
               : c.peer_copy                          ? PB_XFER_PEER
                                                      : PB_XFER_HOST;
    if (c.device_comm && !c.host_visible && a.device != b.device)
        return PB_XFER_DEVICE;
    return PB_XFER_MPI_HOST;
}

int pb_transport_plan(const struct pb_xfer_place *place, int n, struct pb_xfer_caps caps,
                      enum pb_xfer *edges, struct pb_err *e)
{
    if (!place || n < 1 || (n > 1 && !edges))
        return pb_err_set(e, "transport plan: %d stages%s", n,
                          n < 1 ? " (need at least 1)" : ", no placement or no edges to fill");
    for (int k = 0; k < n; k++) {
        if (place[k].rank < 0 || place[k].device < 0)
            return pb_err_set(e, "transport plan: stage %d has rank %d and device %d (both must "
                              "be >= 0)", k, place[k].rank, place[k].device);
        for (int j = 0; j + 1 < k; j++)
            if (place[j].rank == place[k].rank && place[k - 1].rank != place[k].rank)
                return pb_err_set(e, "transport plan: rank %d runs stages %d and %d but not "
                                  "stage %d between them (a process runs neighbouring stages)",
                                  place[k].rank, j, k, k - 1);
    }
    for (int k = 0; k + 1 < n; k++)
        edges[k] = edge_of(place[k], place[k + 1], caps);
    return 0;
}
