/* harness/store/wstore.h — a stage's weight versions besides the latest W (semantics §4):
 * PipeDream's stash (and the versions vertical sync keeps), the predicted copy Ŵ made at an op (PipeOptim, SpecTrain),
 * XPipe's per-mini-batch Ŵ, and PipeDream-2BW's older buffer. Each kind of copy is
 * one ring of slots sized by the program's version plan (harness/ir/program.h),
 * allocated once and reused: nothing is allocated per op. Every copy is
 * PB_MEM_WCOPIES memory, and the number of distinct versions held is tracked with
 * its peak. */
#ifndef PB_WSTORE_H
#define PB_WSTORE_H

#include <stdbool.h>

#include "harness/compute/backend.h"

/* One slot of a ring of n-float copies; key -1 when free. */
struct pb_wslot {
    long key;        /* stash: the version; group: the mini-batch */
    long version;    /* the version held (group: the one the prediction started from) */
    int refs;        /* stash: pending backwards that read it */
};

struct pb_wring {
    float *data;            /* [nslots × n] */
    struct pb_wslot *slots;
    int nslots;
};

struct pb_wstore {
    struct pb_backend *be;
    size_t n;                 /* floats per copy */
    struct pb_wring stash;    /* PipeDream: one slot per stashed version */
    struct pb_wring groups;   /* XPipe: Ŵ per mini-batch in flight */
    float *pred;              /* Ŵ of the op running now */
    float *older;             /* 2BW: W before the last update */
    long older_version;       /* −1 when none */
    int versions_peak;        /* most distinct versions held at once, W included */
};

void pb_wstore_init(struct pb_wstore *s, struct pb_backend *be, size_t n);
void pb_wstore_finish(struct pb_wstore *s);

/* Sizes the rings for an epoch's plan (grows them when needed; every slot free). */
int pb_wstore_reserve(struct pb_wstore *s, int stash_slots, int group_slots, struct pb_err *e);

/* Stash: F reads W^(version) and a later B will read it again. */
void pb_wstore_stash(struct pb_wstore *s, const float *w, long version);
/* The stashed copy of a version (PB_CHECK: it exists). */
const float *pb_wstore_stashed(const struct pb_wstore *s, long version);
/* Vertical sync: W^(version), about to be replaced by an update, kept for `refs` later
 * backwards (and the forwards before them) that read it; each backward unstashes it. */
void pb_wstore_keep(struct pb_wstore *s, const float *w, long version, int refs);
/* A backward done with a stashed version: frees the slot when nobody reads it. */
void pb_wstore_unstash(struct pb_wstore *s, long version);

/* A buffer for a prediction made at an op (allocated once, kept). */
float *pb_wstore_pred(struct pb_wstore *s, struct pb_err *e);
/* XPipe: the slot for a mini-batch's Ŵ, predicted from version base. */
float *pb_wstore_group_new(struct pb_wstore *s, long minibatch, long base);
/* The mini-batch's Ŵ and its base, or NULL when none was made. */
const float *pb_wstore_group_get(const struct pb_wstore *s, long minibatch, long *base);
/* Frees a mini-batch's slot after its update (nothing when none). */
void pb_wstore_group_drop(struct pb_wstore *s, long minibatch);
/* 2BW: keeps W^(version) (about to be updated) as the older buffer. */
int pb_wstore_keep_older(struct pb_wstore *s, const float *w, long version, struct pb_err *e);

/* Records the distinct versions held now, given the latest version u and `extra`
 * versions in use by the running op (a prediction made for it). */
void pb_wstore_note_versions(struct pb_wstore *s, long u, int extra);

#endif
