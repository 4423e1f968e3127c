/* harness/compute/backend.c — what every backend shares: creation by name, and the
 * accounting of device memory by kind with peaks (DESIGN principle 8). */
#include "harness/compute/backend.h"

#include <string.h>


const char *const pb_mem_kind_names[PB_MEM_NKINDS] = {
    "params", "grads", "optstate", "wcopies", "acts", "comm", "scratch",
};

/* Open-addressing map from device pointer to (bytes, kind). */
struct pb_alloc_entry {
    void *p;
    size_t bytes;
    int kind;  /* -1: tombstone */
};

struct pb_alloc_table {
    struct pb_alloc_entry *slots;
    size_t cap, used;
};

static size_t ptr_hash(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static void table_insert(struct pb_alloc_table *t, void *p, size_t bytes, int kind);

static void table_grow(struct pb_alloc_table *t)
{
    struct pb_alloc_entry *old = t->slots;
    size_t oldcap = t->cap;
    t->cap = oldcap ? oldcap * 2 : 64;
    t->slots = pb_xcalloc(t->cap, sizeof *t->slots);
    t->used = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].p && old[i].kind >= 0)
            table_insert(t, old[i].p, old[i].bytes, old[i].kind);
    free(old);
}

static void table_insert(struct pb_alloc_table *t, void *p, size_t bytes, int kind)
{
    if ((t->used + 1) * 2 > t->cap)
        table_grow(t);
    size_t i = ptr_hash(p, t->cap);
    while (t->slots[i].p && t->slots[i].kind >= 0)
        i = (i + 1) & (t->cap - 1);
    if (!t->slots[i].p)
        t->used++;
    t->slots[i] = (struct pb_alloc_entry){p, bytes, kind};
}

static struct pb_alloc_entry *table_find(struct pb_alloc_table *t, const void *p)
{
    if (!t->cap)
        return NULL;
    size_t i = ptr_hash(p, t->cap);
    while (t->slots[i].p) {
        if (t->slots[i].p == p && t->slots[i].kind >= 0)
            return &t->slots[i];
        i = (i + 1) & (t->cap - 1);
    }
    return NULL;
}

void pb_backend_init_common(struct pb_backend *be, const struct pb_backend_ops *ops, void *impl,
                            int nthreads)
{
    memset(be, 0, sizeof *be);
    be->ops = ops;
    be->impl = impl;
    be->nthreads = nthreads;
    be->allocs = pb_xcalloc(1, sizeof *be->allocs);
}

void pb_backend_finish_common(struct pb_backend *be)
{
    if (be->allocs) {
        free(be->allocs->slots);
        free(be->allocs);
        be->allocs = NULL;
    }
}

struct pb_backend *pb_backend_create(const char *name, int nthreads, struct pb_err *e)
{
    if (!strcmp(name, "cpu"))
        return pb_backend_cpu_create(nthreads, e);
    pb_err_set(e, "unknown backend '%s'; valid backends: cpu", name);
    return NULL;
}

void pb_backend_destroy(struct pb_backend *be)
{
    if (be)
        be->ops->destroy(be);
}

void *pb_backend_alloc(struct pb_backend *be, size_t bytes, enum pb_mem_kind kind, struct pb_err *e)
{
    PB_CHECK(kind >= 0 && kind < PB_MEM_NKINDS);
    void *p = be->ops->alloc(be, bytes ? bytes : 4);
    if (!p) {
        pb_err_set(e, "out of %s memory: could not allocate %zu bytes for %s (%zu bytes of that "
                      "kind in use); use a smaller micro-batch, fewer stages per device or a "
                      "smaller model preset",
                   be->ops->name, bytes, pb_mem_kind_names[kind], be->mem_cur[kind]);
        return NULL;
    }
    table_insert(be->allocs, p, bytes, (int)kind);
    be->mem_cur[kind] += bytes;
    if (be->mem_cur[kind] > be->mem_peak[kind])
        be->mem_peak[kind] = be->mem_cur[kind];
    return p;
}

void pb_backend_free(struct pb_backend *be, void *p)
{
    if (!p)
        return;
    struct pb_alloc_entry *en = table_find(be->allocs, p);
    PB_CHECK(en != NULL);
    be->mem_cur[en->kind] -= en->bytes;
    en->kind = -1;
    be->ops->free(be, p);
}

int pb_tensor_alloc(struct pb_backend *be, struct pb_tensor *t, struct pb_shape s,
                    enum pb_layout l, enum pb_mem_kind kind, struct pb_err *e)
{
    t->shape = s;
    t->layout = l;
    t->data = pb_backend_alloc(be, pb_layout_count(s, l) * sizeof(float), kind, e);
    return t->data ? 0 : -1;
}

void pb_backend_reset_peaks(struct pb_backend *be)
{
    memcpy(be->mem_peak, be->mem_cur, sizeof be->mem_peak);
}

size_t pb_backend_disown(struct pb_backend *be, void *p)
{
    PB_CHECK(be->ops->host_memory);
    struct pb_alloc_entry *en = table_find(be->allocs, p);
    PB_CHECK(en != NULL);
    size_t bytes = en->bytes;
    be->mem_cur[en->kind] -= bytes;
    en->kind = -1;
    return bytes;
}

void pb_backend_adopt(struct pb_backend *be, void *p, size_t bytes, enum pb_mem_kind kind)
{
    PB_CHECK(be->ops->host_memory);
    table_insert(be->allocs, p, bytes, (int)kind);
    be->mem_cur[kind] += bytes;
    if (be->mem_cur[kind] > be->mem_peak[kind])
        be->mem_peak[kind] = be->mem_cur[kind];
}
