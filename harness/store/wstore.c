/* harness/store/wstore.c — weight copies of a stage (wstore.h). */
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

void pb_wstore_finish(struct pb_wstore *s)
{
    if (!s->be)
        return;
    for (int i = 0; i < s->nstash; i++)
        pb_backend_free(s->be, s->stash[i].data);
    free(s->stash);
    pb_backend_free(s->be, s->pred);
    for (int i = 0; i < s->ngroups; i++)
        pb_backend_free(s->be, s->groups[i].data);
    free(s->groups);
    pb_backend_free(s->be, s->older);
    memset(s, 0, sizeof *s);
}

static struct pb_stash_slot *find_slot(const struct pb_wstore *s, long version)
{
    for (int i = 0; i < s->nstash; i++)
        if (s->stash[i].version == version)
            return &s->stash[i];
    return NULL;
}

int pb_wstore_stash(struct pb_wstore *s, const float *w, long version, struct pb_err *e)
{
    struct pb_stash_slot *slot = find_slot(s, version);
    if (slot) {
        slot->refs++;
        return 0;
    }
    float *copy = pb_backend_alloc(s->be, s->n * sizeof(float), PB_MEM_WCOPIES, e);
    if (!copy)
        return -1;
    s->be->ops->copy(s->be, copy, w, s->n * sizeof(float));
    if (s->nstash == s->capstash) {
        s->capstash = s->capstash ? 2 * s->capstash : 8;
        s->stash = realloc(s->stash, (size_t)s->capstash * sizeof *s->stash);
        PB_CHECK(s->stash != NULL);
    }
    s->stash[s->nstash++] = (struct pb_stash_slot){version, 1, copy};
    return 0;
}

const float *pb_wstore_stashed(const struct pb_wstore *s, long version)
{
    struct pb_stash_slot *slot = find_slot(s, version);
    PB_CHECK(slot != NULL);
    return slot->data;
}

void pb_wstore_unstash(struct pb_wstore *s, long version)
{
    struct pb_stash_slot *slot = find_slot(s, version);
    PB_CHECK(slot != NULL && slot->refs > 0);
    if (--slot->refs)
        return;
    pb_backend_free(s->be, slot->data);
    *slot = s->stash[--s->nstash];
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

float *pb_wstore_group_new(struct pb_wstore *s, long minibatch, long base, struct pb_err *e)
{
    PB_CHECK(pb_wstore_group_get(s, minibatch, NULL) == NULL);
    float *copy = pb_backend_alloc(s->be, s->n * sizeof(float), PB_MEM_WCOPIES, e);
    if (!copy)
        return NULL;
    if (s->ngroups == s->capgroups) {
        s->capgroups = s->capgroups ? 2 * s->capgroups : 4;
        s->groups = realloc(s->groups, (size_t)s->capgroups * sizeof *s->groups);
        PB_CHECK(s->groups != NULL);
    }
    s->groups[s->ngroups++] = (struct pb_group_slot){minibatch, base, copy};
    return copy;
}

const float *pb_wstore_group_get(const struct pb_wstore *s, long minibatch, long *base)
{
    for (int i = 0; i < s->ngroups; i++)
        if (s->groups[i].minibatch == minibatch) {
            if (base)
                *base = s->groups[i].base;
            return s->groups[i].data;
        }
    return NULL;
}

void pb_wstore_group_drop(struct pb_wstore *s, long minibatch)
{
    for (int i = 0; i < s->ngroups; i++)
        if (s->groups[i].minibatch == minibatch) {
            pb_backend_free(s->be, s->groups[i].data);
            s->groups[i] = s->groups[--s->ngroups];
            return;
        }
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
    for (int i = 0; i < s->nstash; i++)
        held += s->stash[i].version != u;
    held += s->ngroups;
    held += s->older_version >= 0 && s->older_version != u;
    if (held > s->versions_peak)
        s->versions_peak = held;
}
