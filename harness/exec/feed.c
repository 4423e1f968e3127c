/* harness/exec/feed.c — the host data of each micro-batch (feed.h): gathered from the
 * dataset, or taken from stage 0's loader thread, which gathers the same way ahead. */
#include "harness/exec/feed.h"

#include <stdlib.h>

#include "harness/base/err.h"

void pb_feed_start_loader(struct pb_feed *f, struct pb_backend *be, size_t batch_floats)
{
    f->prefetch = pb_prefetch_create(be, batch_floats);
}

void pb_feed_finish(struct pb_feed *f)
{
    pb_prefetch_destroy(f->prefetch);
    f->prefetch = NULL;
}

struct pb_data_view pb_feed_train_view(const struct pb_feed *f, int epoch, const int32_t *order)
{
    return (struct pb_data_view){f->train, order, f->batch, {f->seed, epoch, true}, f->prefetch};
}

struct pb_data_view pb_feed_val_view(const struct pb_feed *f, int epoch)
{
    return (struct pb_data_view){f->val, NULL, f->batch, {f->seed, epoch, false}, f->prefetch};
}

void pb_feed_queue(const struct pb_feed *f, const struct pb_data_view *view,
                   const struct pb_program *prog)
{
    if (!f->prefetch)
        return;
    int *mbs = pb_xmalloc((size_t)prog->n * sizeof *mbs + 1), n = 0;
    for (int i = 0; i < prog->n; i++)
        if (prog->ops[i].kind == PB_OP_F)
            mbs[n++] = prog->ops[i].mb;
    pb_prefetch_queue(f->prefetch, view->ds, view->order, view->batch, view->key, mbs, n);
    free(mbs);
}

void pb_feed_inputs(const struct pb_data_view *v, int mb, float *x, int32_t *y)
{
    int b = v->batch;
    if (v->prefetch) {
        pb_prefetch_take(v->prefetch, mb, x);
        if (y)
            pb_dataset_gather(v->ds, v->key, v->order, mb * b, b, NULL, y);
    } else {
        pb_dataset_gather(v->ds, v->key, v->order, mb * b, b, x, y);
    }
}

void pb_feed_labels(const struct pb_data_view *v, int mb, int label_steps, bool with_inputs,
                    int32_t *y)
{
    int b = v->batch;
    if (label_steps) {
        PB_CHECK(v->ds->tgt_steps == label_steps);
        pb_dataset_gather_next_tokens(v->ds, v->order, mb * b, b, y);
    } else if (!with_inputs) {
        pb_dataset_gather(v->ds, v->key, v->order, mb * b, b, NULL, y);
    }
}

bool pb_feed_lengths(const struct pb_data_view *v, int mb, int32_t *len)
{
    if (!v->ds->len)
        return false;
    pb_dataset_gather_lengths(v->ds, v->order, mb * v->batch, v->batch, len);
    return true;
}
