/* harness/compute/cpu/cpu_primcache.c — the per-instance cache of created primitives, keyed
 * by the op and its shapes, layouts and parameters, so that the repeated calls of a
 * training loop reuse primitives, reorders and scratch buffers. */
#include <string.h>

#include "harness/compute/cpu/cpu_internal.h"

struct pb_cpu_entry {
    struct pb_cpu_key key;
    void *val;
    pb_cpu_drop_fn drop;
    struct pb_cpu_entry *next;
};

static uint64_t key_hash(const struct pb_cpu_key *k)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint32_t)k->op;  /* FNV-1a over the ints */
    h *= 0x100000001b3ull;
    for (int i = 0; i < PB_CPU_KEY_INTS; i++) {
        h ^= (uint32_t)k->v[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

void pb_cpu_cache_init(struct pb_cpu_cache *c)
{
    c->nbuckets = 64;
    c->count = 0;
    c->buckets = pb_xcalloc(c->nbuckets, sizeof *c->buckets);
}

void *pb_cpu_cache_get(struct pb_backend *be, const struct pb_cpu_key *k)
{
    struct pb_cpu_cache *c = &pb_cpu_of(be)->cache;
    for (struct pb_cpu_entry *en = c->buckets[key_hash(k) & (c->nbuckets - 1)]; en; en = en->next)
        if (!memcmp(&en->key, k, sizeof *k))
            return en->val;
    return NULL;
}

static void cache_grow(struct pb_cpu_cache *c)
{
    size_t nb = c->nbuckets * 2;
    struct pb_cpu_entry **b = pb_xcalloc(nb, sizeof *b);
    for (size_t i = 0; i < c->nbuckets; i++) {
        struct pb_cpu_entry *en = c->buckets[i];
        while (en) {
            struct pb_cpu_entry *next = en->next;
            size_t j = key_hash(&en->key) & (nb - 1);
            en->next = b[j];
            b[j] = en;
            en = next;
        }
    }
    free(c->buckets);
    c->buckets = b;
    c->nbuckets = nb;
}

void pb_cpu_cache_put(struct pb_backend *be, const struct pb_cpu_key *k, void *val,
                      pb_cpu_drop_fn drop)
{
    struct pb_cpu_cache *c = &pb_cpu_of(be)->cache;
    PB_CHECK(pb_cpu_cache_get(be, k) == NULL);
    if (c->count + 1 > c->nbuckets)
        cache_grow(c);
    struct pb_cpu_entry *en = pb_xmalloc(sizeof *en);
    en->key = *k;
    en->val = val;
    en->drop = drop;
    size_t j = key_hash(k) & (c->nbuckets - 1);
    en->next = c->buckets[j];
    c->buckets[j] = en;
    c->count++;
}

void pb_cpu_cache_finish(struct pb_backend *be)
{
    struct pb_cpu_cache *c = &pb_cpu_of(be)->cache;
    for (size_t i = 0; i < c->nbuckets; i++) {
        struct pb_cpu_entry *en = c->buckets[i];
        while (en) {
            struct pb_cpu_entry *next = en->next;
            en->drop(be, en->val);
            free(en);
            en = next;
        }
    }
    free(c->buckets);
    c->buckets = NULL;
    c->nbuckets = c->count = 0;
}
