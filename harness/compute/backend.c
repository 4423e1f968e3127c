/* harness/compute/backend.c — what every backend shares: failure, binding, and the
 * allocator: accounting of device memory by kind with peaks (design
 * §2.8) over a cache of freed blocks, so that a stage's steady state never
 * calls the device allocator. One mutex per instance guards it: a block handed to
 * another stage's instance (pb_backend_take) is freed from that stage's thread. */
#include "harness/compute/backend.h"

#include <pthread.h>
#include <stdarg.h>
#include <string.h>

const char *const pb_mem_kind_names[PB_MEM_NKINDS] = {
    "params", "grads", "optstate", "wcopies", "acts", "comm", "scratch", "bnstats", "host",
};

const char *const pb_backend_op_names[PB_BOP_NOPS] = {
    "gemm", "bias", "conv", "maxpool", "avgpool", "batchnorm", "relu", "add", "dropout",
    "concat", "softmax_xent", "optim_step", "predict", "embedding", "lstm", "seq_mean",
    "seq_gather", "attention",
};

void pb_backend_fail(struct pb_backend *be, const char *fmt, ...)
{
    if (be->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(be->error.msg, sizeof be->error.msg, fmt, ap);
    va_end(ap);
    be->failed = true;
}

int pb_backend_status(struct pb_backend *be, struct pb_err *e)
{
    if (!be->failed)
        return 0;
    if (e)
        *e = be->error;
    return -1;
}

void pb_backend_bind(struct pb_backend *be)
{
    if (be->ops->bind)
        be->ops->bind(be);
}

void pb_backend_destroy(struct pb_backend *be)
{
    if (be)
        be->ops->destroy(be);
}

/* ---- the allocator ---- */

/* A block: a live allocation (kind >= 0) or a free one in the cache (kind -1). home
 * is the instance whose device allocator made it and whose cache it returns to. */
struct block {
    void *p;
    size_t bytes;       /* its size */
    size_t requested;   /* what the caller asked for, what the memory kinds count (a request
                           of 0 bytes gets a block of 4 and counts 0) */
    int kind;
    struct pb_backend *home;
    void *fence;        /* cached: the fence of the other instance that freed it, or NULL */
};

/* Open-addressing map from device pointer to block, and the free lists per size. */
struct pb_allocator {
    pthread_mutex_t mu;
    struct block *slots;      /* live blocks of this instance, by pointer */
    size_t cap, used;         /* used counts tombstones too */
    struct block *cached;     /* free blocks of this instance (home = it) */
    size_t ncached, capcached;
};

static size_t ptr_hash(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static void map_insert(struct pb_allocator *a, struct block b);

static void map_grow(struct pb_allocator *a)
{
    struct block *old = a->slots;
    size_t oldcap = a->cap;
    a->cap = oldcap ? oldcap * 2 : 64;
    a->slots = pb_xcalloc(a->cap, sizeof *a->slots);
    a->used = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].p && old[i].kind >= 0)
            map_insert(a, old[i]);
    free(old);
}

static void map_insert(struct pb_allocator *a, struct block b)
{
    if ((a->used + 1) * 2 > a->cap)
        map_grow(a);
    size_t i = ptr_hash(b.p, a->cap);
    while (a->slots[i].p && a->slots[i].kind >= 0)
        i = (i + 1) & (a->cap - 1);
    if (!a->slots[i].p)
        a->used++;
    a->slots[i] = b;
}

static struct block *map_find(struct pb_allocator *a, const void *p)
{
    if (!a->cap)
        return NULL;
    size_t i = ptr_hash(p, a->cap);
    while (a->slots[i].p) {
        if (a->slots[i].p == p && a->slots[i].kind >= 0)
            return &a->slots[i];
        i = (i + 1) & (a->cap - 1);
    }
    return NULL;
}

/* Removes p from the live map and returns its block. */
static struct block map_remove(struct pb_allocator *a, const void *p)
{
    struct block *b = map_find(a, p);
    PB_CHECK(b != NULL);
    struct block out = *b;
    b->kind = -1;
    return out;
}

static void count(struct pb_backend *be, int kind, size_t bytes, bool add)
{
    if (add) {
        be->mem_cur[kind] += bytes;
        if (be->mem_cur[kind] > be->mem_peak[kind])
            be->mem_peak[kind] = be->mem_cur[kind];
    } else {
        be->mem_cur[kind] -= bytes;
    }
}

void pb_backend_init_common(struct pb_backend *be, const struct pb_backend_ops *ops, void *impl,
                            int device)
{
    memset(be, 0, sizeof *be);
    be->ops = ops;
    be->impl = impl;
    be->device = device;
    be->allocator = pb_xcalloc(1, sizeof *be->allocator);
    pthread_mutex_init(&be->allocator->mu, NULL);
}

void pb_backend_finish_common(struct pb_backend *be)
{
    struct pb_allocator *a = be->allocator;
    if (!a)
        return;
    bool fenced = false;
    for (size_t i = 0; i < a->ncached; i++)
        if (a->cached[i].fence) {
            be->ops->fence_wait(be, a->cached[i].fence);
            fenced = true;
        }
    if (fenced)
        be->ops->sync(be);
    for (size_t i = 0; i < a->ncached; i++)
        be->ops->free(be, a->cached[i].p);
    pthread_mutex_destroy(&a->mu);
    free(a->cached);
    free(a->slots);
    free(a);
    be->allocator = NULL;
}

/* A cached block of exactly this size, or NULL; *fence: the fence it carries. */
static void *cache_take(struct pb_allocator *a, size_t bytes, void **fence)
{
    for (size_t i = a->ncached; i-- > 0;)
        if (a->cached[i].bytes == bytes) {
            void *p = a->cached[i].p;
            *fence = a->cached[i].fence;
            a->cached[i] = a->cached[--a->ncached];
            return p;
        }
    return NULL;
}

/* Out of device memory with free blocks in be's cache (of sizes no request asks for
 * now): they go back to the device allocator, after the fences they carry and be's own
 * ops that may still read them (a sync), so that it can try again. False when the cache
 * held nothing. Called without the mutex (sync accounts staging memory under it). */
static bool cache_release(struct pb_backend *be)
{
    struct pb_allocator *a = be->allocator;
    pthread_mutex_lock(&a->mu);
    struct block *blocks = a->cached;
    size_t n = a->ncached;
    a->cached = NULL;
    a->ncached = a->capcached = 0;
    pthread_mutex_unlock(&a->mu);
    for (size_t i = 0; i < n; i++)
        if (blocks[i].fence)
            be->ops->fence_wait(be, blocks[i].fence);
    if (n)
        be->ops->sync(be);
    for (size_t i = 0; i < n; i++)
        be->ops->free(be, blocks[i].p);
    free(blocks);
    return n > 0;
}

void *pb_backend_alloc(struct pb_backend *be, size_t bytes, enum pb_mem_kind kind, struct pb_err *e)
{
    PB_CHECK(kind >= 0 && kind < PB_MEM_NKINDS);
    struct pb_allocator *a = be->allocator;
    size_t size = bytes ? bytes : 4;
    void *fence = NULL;
    pthread_mutex_lock(&a->mu);
    void *p = cache_take(a, size, &fence);
    if (!p)
        p = be->ops->alloc(be, size);
    pthread_mutex_unlock(&a->mu);
    if (!p && cache_release(be))
        p = be->ops->alloc(be, size);
    pthread_mutex_lock(&a->mu);
    if (p) {
        map_insert(a, (struct block){p, size, bytes, (int)kind, be, NULL});
        count(be, kind, bytes, true);
    }
    size_t in_use = be->mem_cur[kind];
    pthread_mutex_unlock(&a->mu);
    if (fence)
        be->ops->fence_wait(be, fence);  /* the freeing instance's reads come first */
    if (!p)
        pb_err_set(e, "out of %s memory: could not allocate %zu bytes for %s (%zu bytes of that "
                      "kind in use); use a smaller micro-batch, fewer stages per device or a "
                      "smaller model preset",
                   be->ops->name, bytes, pb_mem_kind_names[kind], in_use);
    return p;
}

/* Returns a block to its home instance's cache, with the fence its reuse waits for. */
static void cache_put(struct pb_backend *home, void *p, size_t bytes, void *fence)
{
    struct pb_allocator *a = home->allocator;
    pthread_mutex_lock(&a->mu);
    if (a->ncached == a->capcached) {
        a->capcached = a->capcached ? 2 * a->capcached : 64;
        a->cached = realloc(a->cached, a->capcached * sizeof *a->cached);
        PB_CHECK(a->cached != NULL);
    }
    a->cached[a->ncached++] = (struct block){p, bytes, 0, -1, home, fence};
    pthread_mutex_unlock(&a->mu);
}

/* Frees owner's block p into its home's cache, with reader's fence where ops of reader,
 * an instance other than the home, may still read it (reader NULL: none). */
static void release(struct pb_backend *owner, void *p, struct pb_backend *reader)
{
    struct pb_allocator *a = owner->allocator;
    pthread_mutex_lock(&a->mu);
    struct block b = map_remove(a, p);
    count(owner, b.kind, b.requested, false);
    pthread_mutex_unlock(&a->mu);
    if (reader == b.home)
        reader = NULL;  /* the home's own stream orders its reuse */
    void *fence = reader && reader->ops->fence_record ? reader->ops->fence_record(reader) : NULL;
    cache_put(b.home, p, b.bytes, fence);
}

void pb_backend_free(struct pb_backend *be, void *p)
{
    if (p)
        release(be, p, be);  /* ops of be still enqueued may read the block */
}

enum pb_block_state pb_backend_block_state(struct pb_backend *be, const void *p)
{
    struct pb_allocator *a = be->allocator;
    enum pb_block_state st = PB_BLOCK_NONE;
    pthread_mutex_lock(&a->mu);
    if (map_find(a, p))
        st = PB_BLOCK_LIVE;
    for (size_t i = 0; i < a->ncached && st == PB_BLOCK_NONE; i++)
        if (a->cached[i].p == p)
            st = PB_BLOCK_CACHED;
    pthread_mutex_unlock(&a->mu);
    return st;
}

void pb_backend_free_read(struct pb_backend *owner, void *p, struct pb_backend *reader)
{
    release(owner, p, reader);
}

void pb_backend_account(struct pb_backend *be, enum pb_mem_kind kind, size_t bytes, bool add)
{
    PB_CHECK(kind >= 0 && kind < PB_MEM_NKINDS);
    pthread_mutex_lock(&be->allocator->mu);
    PB_CHECK(add || be->mem_cur[kind] >= bytes);
    count(be, kind, bytes, add);
    pthread_mutex_unlock(&be->allocator->mu);
}

void pb_backend_take(struct pb_backend *to, struct pb_backend *src, void *p, enum pb_mem_kind kind)
{
    PB_CHECK(src->ops->shares_memory(src, to));
    pthread_mutex_lock(&src->allocator->mu);
    struct block b = map_remove(src->allocator, p);
    count(src, b.kind, b.requested, false);
    pthread_mutex_unlock(&src->allocator->mu);
    b.kind = (int)kind;
    pthread_mutex_lock(&to->allocator->mu);
    map_insert(to->allocator, b);
    count(to, b.kind, b.requested, true);
    pthread_mutex_unlock(&to->allocator->mu);
}

int pb_backend_copy_across(struct pb_backend *dst_be, void *dst, struct pb_backend *src_be,
                           const void *src, size_t bytes, struct pb_err *e)
{
    if (dst_be == src_be || src_be->ops->shares_memory(src_be, dst_be)) {
        dst_be->ops->copy(dst_be, dst, src, bytes);
        return 0;
    }
    void *host = malloc(bytes ? bytes : 1);
    if (!host)
        return pb_err_set(e, "out of host memory: %zu bytes to copy from the %s to the %s backend",
                          bytes, src_be->ops->name, dst_be->ops->name);
    src_be->ops->download(src_be, host, src, bytes);
    src_be->ops->sync(src_be);
    dst_be->ops->upload(dst_be, dst, host, bytes);
    dst_be->ops->sync(dst_be);
    free(host);
    return 0;
}

int pb_tensor_alloc(struct pb_backend *be, struct pb_tensor *t, struct pb_shape s,
                    enum pb_layout l, enum pb_mem_kind kind, struct pb_err *e)
{
    t->shape = s;
    t->layout = l;
    t->data = pb_backend_alloc(be, be->ops->layout_floats(be, s, l) * sizeof(float), kind, e);
    return t->data ? 0 : -1;
}

void pb_predict_args_check(const struct pb_predict_args *a)
{
    const struct pb_dw_desc *d = &a->dw;
    switch (d->kind) {
    case PB_DW_ZERO:
        break;
    case PB_DW_LINEAR:
        PB_CHECK(d->x != NULL);
        break;
    case PB_DW_ADAM:
        PB_CHECK(d->m && d->v);
        break;
    case PB_DW_RMS:
        PB_CHECK(d->x && d->sq);
        break;
    default:
        PB_CHECK(!"unknown ΔW formula");
    }
}

size_t pb_tensor_floats(struct pb_backend *be, const struct pb_tensor *t)
{
    return be->ops->layout_floats(be, t->shape, t->layout);
}

void pb_backend_reset_peaks(struct pb_backend *be)
{
    pthread_mutex_lock(&be->allocator->mu);
    memcpy(be->mem_peak, be->mem_cur, sizeof be->mem_peak);
    pthread_mutex_unlock(&be->allocator->mu);
}
