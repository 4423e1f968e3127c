/* harness/exec/prefetch.h — stage 0's loader thread (design §6.7): it gathers and
 * transforms the inputs of micro-batches ahead of the pipeline into a small ring of host
 * buffers, in the order stage 0 consumes them (an epoch's training micro-batches, then
 * its validation batches), so loading and augmentation overlap the compute. Each batch is
 * pb_dataset_gather of the same view and key the synchronous path would use, so the
 * inputs are bit-identical to gathering in the worker. The ring counts as the stage's
 * PB_MEM_HOST memory. */
#ifndef PB_PREFETCH_H
#define PB_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/compute/backend.h"
#include "workloads/datasets/dataset.h"

/* Batches prepared ahead of the one stage 0 is using. */
#define PB_PREFETCH_DEPTH 3

struct pb_prefetch;

/* Starts the thread with a ring of PB_PREFETCH_DEPTH buffers of batch_floats floats each
 * (b · c · h · w), accounted on be. */
struct pb_prefetch *pb_prefetch_create(struct pb_backend *be, size_t batch_floats);

/* Queues a pass: the inputs of micro-batches mbs[0 … n) in that order, micro-batch j
 * being samples [j·b, (j+1)·b) of order (NULL: file order) gathered from ds with key.
 * The thread keeps its own copy of order and mbs; ds must outlive the pass. */
void pb_prefetch_queue(struct pb_prefetch *p, const struct pb_dataset *ds, const int32_t *order,
                       int b, struct pb_data_key key, const int *mbs, int n);

/* Copies the next prepared batch, which must be micro-batch mb of the oldest queued pass,
 * into x [b, c, h, w], waiting for it when it is not ready yet. */
void pb_prefetch_take(struct pb_prefetch *p, int mb, float *x);

/* Stops the thread (it finishes the batch it is gathering), joins it and frees the ring;
 * passes not consumed are dropped. NULL is a no-op. */
void pb_prefetch_destroy(struct pb_prefetch *p);

#endif
