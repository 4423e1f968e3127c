/* bench/bench_loader.c — the loader's samples per second on one thread (design §6.7,
 * semantics §1.6) with the training transform (CIFAR's padded random crop and flip,
 * Tiny-ImageNet's RandomResizedCrop and flip) and with the validation one, for CIFAR at
 * S = 32 and Tiny-ImageNet at S = 32, 64 and 224, on micro-batches of 64. The datasets
 * are the synthetic stand-ins, stored as the real ones are (uint8 [n, 3, 32, 32] and
 * [n, 3, 64, 64]), so the figures hold for the real files once loaded; each is the median
 * of REPS timings (bench/bench_loader.h). One line per case: `loader DATASET S train
 * RATE val RATE` (samples/s). */
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench_loader.h"

#define B 64
#define REPS 5

struct bcase {
    const char *like;
    int side, batches;   /* batches per timing: about a tenth of a second each */
};

static const struct bcase cases[] = {
    {"cifar10", 32, 40},
    {"tiny-imagenet", 32, 20},
    {"tiny-imagenet", 64, 10},
    {"tiny-imagenet", 224, 2},
};

int main(void)
{
    printf("loader: samples/s of pb_dataset_gather on one thread, micro-batches of %d, median of "
           "%d timings\n", B, REPS);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct bcase *c = &cases[i];
        struct pb_dataset ds;
        struct pb_err e;
        struct pb_dataset_opts o = {.like = c->like, .n = 1024, .crop = c->side};
        if (pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 1, &o, &e)) {
            fprintf(stderr, "bench_loader: %s\n", e.msg);
            return 2;
        }
        double train = bench_loader_rate(&ds, B, true, c->batches, REPS);
        double val = bench_loader_rate(&ds, B, false, c->batches, REPS);
        printf("loader %-14s %3d train %9.0f val %9.0f\n", c->like, c->side, train, val);
        fflush(stdout);
        pb_dataset_finish(&ds);
    }
    return 0;
}
