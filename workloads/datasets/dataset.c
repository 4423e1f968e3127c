/* workloads/datasets/dataset.c — what every dataset shares: its image transforms, its
 * memory, the epoch order and gathering (the registry and loading by name are
 * registry.c's). The epoch order is semantics §1.5's permutation drawn from
 * (seed, epoch); a micro-batch is a contiguous slice of it, gathered here into caller
 * memory, image samples through the transforms of semantics §1.6. */
#include "workloads/datasets/dataset.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness/base/rng.h"

int pb_dataset_set_image(struct pb_dataset *ds, const struct pb_image_kind *k,
                         const struct pb_dataset_opts *opts, struct pb_err *e)
{
    int side = opts && opts->crop ? opts->crop : k->h;
    bool flip = !(opts && opts->no_flip);
    if (pb_aug_init(&ds->aug, k->family, k->c, k->h, k->w, side, flip, k->mean, k->std, e))
        return pb_err_prefix(e, "%s: ", k->name);
    if (ds->pix_owned)
        ds->pix = ds->pix_owned;
    ds->sc = k->c;
    ds->sh = k->h;
    ds->sw = k->w;
    ds->c = k->c;
    ds->h = ds->w = side;
    return 0;
}

void pb_dataset_finish(struct pb_dataset *ds)
{
    free(ds->name);
    free(ds->x);
    free(ds->y);
    free(ds->len);
    free(ds->tgt);
    free(ds->pix_owned);
    free(ds->cache_path);
    if (ds->map)
        munmap(ds->map, ds->map_len);
    memset(ds, 0, sizeof *ds);
}

bool pb_dataset_has_inputs(const struct pb_dataset *ds)
{
    return ds->x || ds->pix;
}

size_t pb_dataset_input_bytes(const struct pb_dataset *ds)
{
    if (ds->x)
        return (size_t)ds->n * ds->c * ds->h * ds->w * sizeof *ds->x;
    if (ds->pix)
        return (size_t)ds->n * ds->sc * ds->sh * ds->sw;
    return 0;
}

size_t pb_dataset_label_bytes(const struct pb_dataset *ds)
{
    return (ds->y ? (size_t)ds->n * sizeof *ds->y : 0) +
           (ds->len ? (size_t)ds->n * sizeof *ds->len : 0) +
           (ds->tgt ? (size_t)ds->n * ds->tgt_steps * sizeof *ds->tgt : 0);
}

void pb_epoch_order(uint64_t seed, int epoch, int n, bool shuffle, int32_t *order)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    if (!shuffle)
        return;
    struct pb_rng_key key = pb_rng_key(PB_RNG_SHUFFLE, seed, (uint64_t)epoch, 0, 0);
    for (int i = n - 1; i > 0; i--) {
        int j = (int)pb_rng_below(key, (uint64_t)i, (uint64_t)i + 1);
        int32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

void pb_dataset_gather(const struct pb_dataset *ds, struct pb_data_key key, const int32_t *order,
                       int first, int count, float *x, int32_t *y)
{
    PB_CHECK(first >= 0 && count >= 0 && first + count <= ds->n);
    PB_CHECK((!x || pb_dataset_has_inputs(ds)) && (!y || ds->y));
    size_t per = (size_t)ds->c * ds->h * ds->w, stored = (size_t)ds->sc * ds->sh * ds->sw;
    void *scratch = x && !ds->x ? pb_xmalloc(pb_aug_scratch_bytes(&ds->aug)) : NULL;
    for (int i = 0; i < count; i++) {
        int s = order ? order[first + i] : first + i;
        PB_CHECK(s >= 0 && s < ds->n);
        if (x && ds->x) {
            memcpy(x + (size_t)i * per, ds->x + (size_t)s * per, per * sizeof *x);
        } else if (x) {
            const uint8_t *src = ds->pix + (size_t)s * stored;
            if (key.train) {
                struct pb_aug_crop p;
                pb_aug_draw(&ds->aug, pb_rng_key(PB_RNG_AUGMENT, key.seed, (uint64_t)key.epoch,
                                                 (uint64_t)s, 0), &p);
                pb_aug_train(&ds->aug, src, &p, scratch, x + (size_t)i * per);
            } else {
                pb_aug_val(&ds->aug, src, scratch, x + (size_t)i * per);
            }
        }
        if (y)
            y[i] = ds->y[s];
    }
    free(scratch);
}

void pb_dataset_gather_lengths(const struct pb_dataset *ds, const int32_t *order, int first,
                               int count, int32_t *len)
{
    PB_CHECK(ds->len && first >= 0 && count >= 0 && first + count <= ds->n);
    for (int i = 0; i < count; i++)
        len[i] = ds->len[order ? order[first + i] : first + i];
}

void pb_dataset_gather_targets(const struct pb_dataset *ds, const int32_t *order, int first,
                               int count, int32_t *tgt)
{
    PB_CHECK(ds->tgt && first >= 0 && count >= 0 && first + count <= ds->n);
    size_t t = (size_t)ds->tgt_steps;
    for (int i = 0; i < count; i++)
        memcpy(tgt + (size_t)i * t, ds->tgt + (size_t)(order ? order[first + i] : first + i) * t,
               t * sizeof *tgt);
}

void pb_dataset_gather_next_tokens(const struct pb_dataset *ds, const int32_t *order, int first,
                                   int count, int32_t *labels)
{
    PB_CHECK(ds->tgt && first >= 0 && count >= 0 && first + count <= ds->n);
    size_t t = (size_t)ds->tgt_steps;
    for (int i = 0; i < count; i++) {
        const int32_t *row = ds->tgt + (size_t)(order ? order[first + i] : first + i) * t;
        memcpy(labels + (size_t)i * t, row + 1, (t - 1) * sizeof *labels);
        labels[(size_t)i * t + t - 1] = PB_WMT16_PAD;
    }
}
