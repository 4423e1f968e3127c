/* harness/exec/feed.h — the data a run's stages read, in host memory (design §6.7):
 * stage 0 micro-batch mb's inputs (from the loader thread, or gathered here), the last
 * stage's labels, and a sequence dataset's lengths for the stages whose layers read
 * them. A worker asks the feed for micro-batch mb's host data and uploads it; the feed
 * never touches a backend's memory. Every path gathers with the same view and key, so
 * every executor (and the loader thread or not) sees the same bits. */
#ifndef PB_FEED_H
#define PB_FEED_H

#include <stdbool.h>
#include <stdint.h>

#include "harness/exec/prefetch.h"
#include "harness/ir/program.h"
#include "workloads/datasets/dataset.h"

/* One pass over a split: the training micro-batches of an epoch or the validation
 * batches. */
struct pb_data_view {
    const struct pb_dataset *ds;
    const int32_t *order;   /* the epoch's sample order (NULL: file order) */
    int batch;              /* b */
    struct pb_data_key key; /* what the transforms are keyed by (training or validation) */
    struct pb_prefetch *prefetch; /* stage 0: the loader thread holding its inputs (the
                                     pass was queued), NULL: gather them here */
};

/* A run's feed: its two splits, loaded where a local stage is first or last. */
struct pb_feed {
    const struct pb_dataset *train, *val;
    int batch;                    /* b, the micro-batch size */
    uint64_t seed;
    struct pb_prefetch *prefetch; /* stage 0's loader thread, NULL: none */
};

/* Starts stage 0's loader thread, its ring of batch_floats floats a batch accounted on
 * be. Not called: stage 0 gathers its inputs itself (the same bits). */
void pb_feed_start_loader(struct pb_feed *f, struct pb_backend *be, size_t batch_floats);
void pb_feed_finish(struct pb_feed *f);

/* Epoch epoch's training pass in sample order `order` and its validation pass. */
struct pb_data_view pb_feed_train_view(const struct pb_feed *f, int epoch, const int32_t *order);
struct pb_data_view pb_feed_val_view(const struct pb_feed *f, int epoch);

/* Queues on the loader thread (when there is one) the inputs of stage 0's forwards of
 * prog, in program order. */
void pb_feed_queue(const struct pb_feed *f, const struct pb_data_view *view,
                   const struct pb_program *prog);

/* Micro-batch mb's inputs x [b, c, h, w] (host), and its labels y [b] too when y is not
 * NULL (a one-stage pipeline: stage 0 is also the last). */
void pb_feed_inputs(const struct pb_data_view *v, int mb, float *x, int32_t *y);
/* The last stage's labels of micro-batch mb into y (host): the next target tokens
 * [b, label_steps] when label_steps > 0 (a loss per token), else one per sample [b]
 * (skipped when `with_inputs`: pb_feed_inputs gave them). */
void pb_feed_labels(const struct pb_data_view *v, int mb, int label_steps, bool with_inputs,
                    int32_t *y);
/* A sequence dataset's lengths of micro-batch mb into len [b]; false (nothing written)
 * when the dataset has none. */
bool pb_feed_lengths(const struct pb_data_view *v, int mb, int32_t *len);

#endif
