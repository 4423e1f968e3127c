/* bench/bench_loader.h — the loader's rate (design §6.7): how many samples per second
 * pb_dataset_gather prepares on one thread, reading stored samples, drawing and applying
 * the training transform (or the validation one) and normalising, over micro-batches of
 * an epoch's shuffled order. The step benchmarks compare it with a training step's
 * samples per second: the loader thread keeps up while its rate is the higher. */
#ifndef PB_BENCH_LOADER_H
#define PB_BENCH_LOADER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "bench/bench_util.h"
#include "workloads/datasets/dataset.h"

/* Samples per second: the median over `reps` timings of `batches` batches of b each
 * (after one untimed batch), consecutive micro-batches of epochs 0, 1, ... of seed 1. */
static inline double bench_loader_rate(const struct pb_dataset *ds, int b, bool train, int batches,
                                       int reps)
{
    size_t per = (size_t)ds->c * ds->h * ds->w;
    float *x = malloc((size_t)b * per * sizeof *x);
    int32_t *order = malloc((size_t)ds->n * sizeof *order);
    if (!x || !order || ds->n < b || reps < 1 || reps > 64) {
        fprintf(stderr, "bench_loader: out of host memory, or fewer samples than a batch\n");
        exit(2);
    }
    int nb = ds->n / b, j = 0, epoch = 0;
    pb_epoch_order(1, epoch, ds->n, true, order);
    double rates[64];
    for (int r = -1; r < reps; r++) {
        int count = r < 0 ? 1 : batches;
        double t0 = bench_now();
        for (int k = 0; k < count; k++) {
            pb_dataset_gather(ds, (struct pb_data_key){1, epoch, train}, order, j * b, b, x, NULL);
            if (++j == nb) {
                j = 0;
                pb_epoch_order(1, ++epoch, ds->n, true, order);
            }
        }
        if (r >= 0)
            rates[r] = (double)count * b / (bench_now() - t0);
    }
    free(x);
    free(order);
    return bench_median(rates, reps);
}

#endif
