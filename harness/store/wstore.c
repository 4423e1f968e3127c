/* harness/store/wstore.c — weight copies of a stage (wstore.h): rings of slots sized
 * once from the program's version plan. */
#include "harness/store/wstore.h"

#include <string.h>

void pb_wstore_init(struct pb_wstore *s, struct pb_backend *be, size_t n)
{
    memset(s, 0, sizeof *s);
    s->be = be;
    s->n = n;
    s->older_version = -1;
    s->versions_peak = 1;
}

static void ring_finish(struct pb_wstore *s, struct pb_wring *r)
{
    pb_backend_free(s->be, r->data);
    free(r->slots);
    memset(r, 0, sizeof *r);
}

void pb_wstore_finish(struct pb_wstore *s)
{
    if (!s->be)
        return;
    ring_finish(s, &s->stash);
    ring_finish(s, &s->groups);
    pb_backend_free(s->be, s->pred);
    pb_backend_free(s->be, s->older);
    memset(s, 0, sizeof *s);
}

static int ring_reserve(struct pb_wstore *s, struct pb_wring *r, int nslots, const char *what,
                        struct pb_err *e)
{
    if (nslots > r->nslots) {
        ring_finish(s, r);
        r->data = pb_backend_alloc(s->be, (size_t)nslots * s->n * sizeof(float), PB_MEM_WCOPIES, e);
        if (!r->data)
            return pb_err_prefix(e, "%s of %d weight copies: ", what, nslots);
        r->slots = pb_xmalloc((size_t)nslots * sizeof *r->slots);
        r->nslots = nslots;
    }
    for (int i = 0; i < r->nslots; i++)
        r->slots[i] = (struct pb_wslot){-1, -1, 0};
    return 0;
}

int pb_wstore_reserve(struct pb_wstore *s, int stash_slots, int group_slots, struct pb_err *e)
{
    if (ring_reserve(s, &s->stash, stash_slots, "the stash", e) ||
        ring_reserve(s, &s->groups, group_slots, "the group predictions", e))
        return -1;
    return 0;
}

static int ring_find(const struct pb_wring *r, long key)
{
    for (int i = 0; i < r->nslots; i++)
        if (r->slots[i].key == key)
            return i;
    return -1;
}

static float *slot_data(const struct pb_wstore *s, const struct pb_wring *r, int i)
{
    return r->data + (size_t)i * s->n;
}

void pb_wstore_keep(struct pb_wstore *s, const float *w, long version, int refs)
{
    PB_CHECK(refs > 0);
    int i = ring_find(&s->stash, version);
    if (i >= 0) {
        s->stash.slots[i].refs += refs;
        return;
    }
    i = ring_find(&s->stash, -1);
    PB_CHECK(i >= 0);  /* the plan sized the ring for the most versions held at once */
    s->stash.slots[i] = (struct pb_wslot){version, version, refs};
    s->be->ops->copy(s->be, slot_data(s, &s->stash, i), w, s->n * sizeof(float));
}

void pb_wstore_stash(struct pb_wstore *s, const float *w, long version)
{
    pb_wstore_keep(s, w, version, 1);
}

const float *pb_wstore_stashed(const struct pb_wstore *s, long version)
{
    int i = ring_find(&s->stash, version);
    PB_CHECK(i >= 0);
    return slot_data(s, &s->stash, i);
}

void pb_wstore_unstash(struct pb_wstore *s, long version)
{
    int i = ring_find(&s->stash, version);
    PB_CHECK(i >= 0 && s->stash.slots[i].refs > 0);
    if (--s->stash.slots[i].refs == 0)
        s->stash.slots[i] = (struct pb_wslot){-1, -1, 0};
}

static float *kept_buffer(struct pb_wstore *s, float **buf, struct pb_err *e)
{
    if (!*buf)
        *buf = pb_backend_alloc(s->be, s->n * sizeof(float), PB_MEM_WCOPIES, e);
    return *buf;
}

float *pb_wstore_pred(struct pb_wstore *s, struct pb_err *e)
{
    return kept_buffer(s, &s->pred, e);
}

float *pb_wstore_group_new(struct pb_wstore *s, long minibatch, long base)
{
    PB_CHECK(ring_find(&s->groups, minibatch) < 0);
    int i = ring_find(&s->groups, -1);
    PB_CHECK(i >= 0);  /* sized by the plan */
    s->groups.slots[i] = (struct pb_wslot){minibatch, base, 0};
    return slot_data(s, &s->groups, i);
}

const float *pb_wstore_group_get(const struct pb_wstore *s, long minibatch, long *base)
{
    int i = ring_find(&s->groups, minibatch);
    if (i < 0)
        return NULL;
    if (base)
        *base = s->groups.slots[i].version;
    return slot_data(s, &s->groups, i);
}

void pb_wstore_group_drop(struct pb_wstore *s, long minibatch)
{
    int i = ring_find(&s->groups, minibatch);
    if (i >= 0)
        s->groups.slots[i] = (struct pb_wslot){-1, -1, 0};
}

int pb_wstore_keep_older(struct pb_wstore *s, const float *w, long version, struct pb_err *e)
{
    if (!kept_buffer(s, &s->older, e))
        return -1;
    s->be->ops->copy(s->be, s->older, w, s->n * sizeof(float));
    s->older_version = version;
    return 0;
}

void pb_wstore_note_versions(struct pb_wstore *s, long u, int extra)
{
    int held = 1 + extra;
    for (int i = 0; i < s->stash.nslots; i++)
        held += s->stash.slots[i].key >= 0 && s->stash.slots[i].version != u;
    for (int i = 0; i < s->groups.nslots; i++)
        held += s->groups.slots[i].key >= 0;
    held += s->older_version >= 0 && s->older_version != u;
    if (held > s->versions_peak)
        s->versions_peak = held;
}
