/* harness/compute/cuda/cuda_memory.c — the CUDA backend's memory: device blocks for the
 * common allocator (backend.c caches them, so a steady state calls cudaMalloc never),
 * uploads, downloads and copies, and write_begin's pool of pinned staging buffers. Its
 * reference is the memory part of harness/compute/cpu/cpu_backend.c.
 * Every copy is enqueued on the instance's one stream, in order with its ops, as backend.h
 * orders them: a second copy stream would need an event each way around every copy (the
 * ops may read what an upload writes and overwrite what a download reads), which would
 * serialise it with the ops and overlap nothing; overlap comes from the other stages'
 * streams. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/cuda/cuda_internal.h"

/* pb_cuda_test_fail_allocs: how many of the next allocations fail */
static atomic_int fail_allocs;

void pb_cuda_test_fail_allocs(int n)
{
    atomic_store(&fail_allocs, n);
}

/* Whether this allocation is one a test asked to fail. */
static bool injected_failure(void)
{
    int n = atomic_load(&fail_allocs);
    while (n > 0)
        if (atomic_compare_exchange_weak(&fail_allocs, &n, n - 1))
            return true;
    return false;
}

/* NULL when the device is out of memory (the error cleared: it is not sticky); any other
 * failure also fails the instance with CUDA's message. */
void *pb_cuda_alloc(struct pb_backend *be, size_t bytes)
{
    if (!pb_cuda_bind(be))
        return NULL;
    if (injected_failure())
        return NULL;
    void *p = NULL;
    cudaError_t st = cudaMalloc(&p, bytes ? bytes : 256);
    if (st == cudaSuccess)
        return p;
    cudaGetLastError();
    if (st != cudaErrorMemoryAllocation)
        PB_CUDA(be, st);
    return NULL;
}

/* Only at destroy (the allocator caches every block until then); cudaFree waits for the
 * device. An error of a device already failed is left to the instance's own message. */
void pb_cuda_free(struct pb_backend *be, void *p)
{
    pb_cuda_bind(be);
    if (cudaFree(p) != cudaSuccess)
        cudaGetLastError();
}

/* Instances of this process on the same device share its memory: a tensor moves between
 * their stages without a copy (their streams are ordered by the allocator's fences and
 * the stages' syncs). Instances on two devices do not yet: peer copies between GPUs
 * (cudaMemcpyPeerAsync, or NCCL) are a later step, so pb_backend_copy_across stages the
 * bytes through host memory. */
bool pb_cuda_shares_memory(const struct pb_backend *be, const struct pb_backend *other)
{
    return be->ops == other->ops && be->device == other->device;
}

/* An upload from pageable memory is staged by the driver; backend.h keeps the source
 * unchanged until the sync anyway. */
void pb_cuda_upload(struct pb_backend *be, void *dst, const void *src_host, size_t bytes)
{
    if (!bytes || !pb_cuda_begin(be))
        return;
    PB_CUDA(be, cudaMemcpyAsync(dst, src_host, bytes, cudaMemcpyHostToDevice,
                                pb_cuda_of(be)->stream));
}

void pb_cuda_download(struct pb_backend *be, void *dst_host, const void *src, size_t bytes)
{
    if (!bytes || !pb_cuda_begin(be))
        return;
    PB_CUDA(be, cudaMemcpyAsync(dst_host, src, bytes, cudaMemcpyDeviceToHost,
                                pb_cuda_of(be)->stream));
}

/* Device to device within the instance (or from a block of an instance sharing its memory). */
void pb_cuda_copy(struct pb_backend *be, void *dst, const void *src, size_t bytes)
{
    if (!bytes || dst == src || !pb_cuda_begin(be))
        return;
    PB_CUDA(be, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, pb_cuda_of(be)->stream));
}

/* From another device's memory, on be's stream (through the host where the two devices
 * have no peer access: the driver's choice, the same bytes). */
void pb_cuda_copy_peer(struct pb_backend *be, void *dst, struct pb_backend *src_be,
                       const void *src, size_t bytes)
{
    if (!bytes || !pb_cuda_begin(be))
        return;
    PB_CUDA(be, cudaMemcpyPeerAsync(dst, be->device, src, src_be->device, bytes,
                                    pb_cuda_of(be)->stream));
}

/* ---- the staging pool ---- */

/* Pinned sizes are rounded up to 64 KiB so that buffers of neighbouring sizes are shared. */
#define STAGING_ROUND ((size_t)64 << 10)

static struct pb_cuda_staging *staging_add(struct pb_cuda *cu)
{
    if (cu->nstaging == cu->capstaging) {
        cu->capstaging = cu->capstaging ? 2 * cu->capstaging : 8;
        cu->staging = realloc(cu->staging, (size_t)cu->capstaging * sizeof *cu->staging);
        PB_CHECK(cu->staging != NULL);
    }
    return &cu->staging[cu->nstaging++];
}

/* Host memory to fill for dst: the smallest free pinned buffer of the pool that holds
 * bytes, else a new one (cudaHostAlloc, accounted as PB_MEM_HOST). Several may be open
 * before one sync; each stays taken until the sync after its write_end. If pinned memory
 * cannot be had, the instance fails with a message and the caller writes into host memory
 * that is then thrown away (the caller cannot take a NULL). */
void *pb_cuda_write_begin(struct pb_backend *be, void *dst, size_t bytes)
{
    (void)dst;
    struct pb_cuda *cu = pb_cuda_of(be);
    int best = -1;
    for (int i = 0; i < cu->nstaging; i++) {
        const struct pb_cuda_staging *s = &cu->staging[i];
        if (!s->busy && s->bytes >= bytes && (best < 0 || s->bytes < cu->staging[best].bytes))
            best = i;
    }
    if (best >= 0) {
        cu->staging[best].busy = true;
        return cu->staging[best].host;
    }
    size_t size = (bytes + STAGING_ROUND - 1) / STAGING_ROUND * STAGING_ROUND;
    if (!size)
        size = STAGING_ROUND;
    void *host = NULL;
    cudaError_t st = cudaErrorInvalidDevice;
    if (pb_cuda_bind(be))
        st = injected_failure() ? cudaErrorMemoryAllocation
                                : cudaHostAlloc(&host, size, cudaHostAllocDefault);
    bool pinned = st == cudaSuccess;
    if (!pinned) {
        cudaGetLastError();
        pb_backend_fail(be, "cuda backend, device %d: could not allocate %zu bytes of pinned host "
                            "memory for a staging buffer (cudaHostAlloc: %s); free host memory or "
                            "use a smaller micro-batch", cu->device, size, cudaGetErrorString(st));
        host = pb_xmalloc(size);
    }
    pb_backend_account(be, PB_MEM_HOST, size, true);
    *staging_add(cu) = (struct pb_cuda_staging){host, size, true, false, pinned};
    return host;
}

/* Enqueues host's copy to dst; host stays taken until the next sync. */
void pb_cuda_write_end(struct pb_backend *be, void *dst, void *host, size_t bytes)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    struct pb_cuda_staging *s = NULL;
    for (int i = 0; i < cu->nstaging && !s; i++)
        if (cu->staging[i].host == host && cu->staging[i].busy && !cu->staging[i].queued)
            s = &cu->staging[i];
    PB_CHECK(s != NULL && bytes <= s->bytes);
    s->queued = true;
    if (bytes && pb_cuda_begin(be))
        PB_CUDA(be, cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, cu->stream));
}

void pb_cuda_staging_release(struct pb_backend *be)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    for (int i = 0; i < cu->nstaging;) {
        struct pb_cuda_staging *s = &cu->staging[i];
        if (!s->queued) {
            i++;
            continue;
        }
        s->busy = s->queued = false;
        if (s->pinned) {
            i++;
            continue;
        }
        free(s->host);
        pb_backend_account(be, PB_MEM_HOST, s->bytes, false);
        *s = cu->staging[--cu->nstaging];
    }
}

void pb_cuda_staging_destroy(struct pb_backend *be)
{
    struct pb_cuda *cu = pb_cuda_of(be);
    for (int i = 0; i < cu->nstaging; i++) {
        if (cu->staging[i].pinned)
            cudaFreeHost(cu->staging[i].host);
        else
            free(cu->staging[i].host);
    }
    free(cu->staging);
    cu->staging = NULL;
    cu->nstaging = cu->capstaging = 0;
}
