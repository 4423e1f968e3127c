/* workloads/datasets/buckets.c — the epoch order of a translation dataset in length
 * buckets, as the MLPerf GNMT reference's bucketing sampler: the samples permuted by
 * the epoch's permutation (pb_epoch_order, keyed by (seed, epoch)); stably grouped by
 * bucket max(source length, target length) / width (shortest first); the grouped order
 * cut into batches of `batch` consecutive samples (a batch straddles two buckets only at
 * their boundary); the whole batches permuted by the Fisher–Yates draw keyed by
 * pb_rng_key(PB_RNG_SHUFFLE, seed, epoch, 1, 0), a last partial batch left at the end.
 * Each batch so holds sentences of like length. */
#include <stdlib.h>
#include <string.h>

#include "harness/base/rng.h"
#include "workloads/datasets/dataset.h"

void pb_dataset_bucket_order(const struct pb_dataset *ds, uint64_t seed, int epoch, int batch,
                             int width, int32_t *order)
{
    PB_CHECK(ds->len && ds->y && batch > 0 && width > 0);
    int n = ds->n;
    int32_t *perm = pb_xmalloc(((size_t)n + 1) * sizeof *perm);
    pb_epoch_order(seed, epoch, n, true, perm);
    int nb = 0;
    for (int i = 0; i < n; i++) {
        int l = ds->len[i] > ds->y[i] ? ds->len[i] : ds->y[i];
        nb = l / width + 1 > nb ? l / width + 1 : nb;
    }
    int *start = pb_xcalloc((size_t)nb + 1, sizeof *start);
    for (int i = 0; i < n; i++) {
        int l = ds->len[i] > ds->y[i] ? ds->len[i] : ds->y[i];
        start[l / width + 1]++;
    }
    for (int b = 0; b < nb; b++)
        start[b + 1] += start[b];
    int32_t *grouped = pb_xmalloc(((size_t)n + 1) * sizeof *grouped);
    for (int i = 0; i < n; i++) {
        int s = perm[i], l = ds->len[s] > ds->y[s] ? ds->len[s] : ds->y[s];
        grouped[start[l / width]++] = s;
    }
    int full = n / batch;
    int32_t *which = pb_xmalloc(((size_t)full + 1) * sizeof *which);
    pb_epoch_order(0, 0, full, false, which);
    struct pb_rng_key key = pb_rng_key(PB_RNG_SHUFFLE, seed, (uint64_t)epoch, 1, 0);
    for (int i = full - 1; i > 0; i--) {
        int j = (int)pb_rng_below(key, (uint64_t)i, (uint64_t)i + 1);
        int32_t t = which[i];
        which[i] = which[j];
        which[j] = t;
    }
    for (int k = 0; k < full; k++)
        memcpy(order + (size_t)k * batch, grouped + (size_t)which[k] * batch,
               (size_t)batch * sizeof *order);
    memcpy(order + (size_t)full * batch, grouped + (size_t)full * batch,
           (size_t)(n - full * batch) * sizeof *order);
    free(perm);
    free(start);
    free(grouped);
    free(which);
}

void pb_dataset_epoch_order(const struct pb_dataset *ds, uint64_t seed, int epoch, bool shuffle,
                            int batch, int32_t *order)
{
    if (shuffle && ds->tgt_steps > 0 && ds->len && ds->y)
        pb_dataset_bucket_order(ds, seed, epoch, batch, PB_BUCKET_WIDTH, order);
    else
        pb_epoch_order(seed, epoch, ds->n, shuffle, order);
}
