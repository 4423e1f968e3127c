/* tests/fuzz/fuzz_tiny_imagenet.c — libFuzzer target: the Tiny-ImageNet tree's files
 * (pb_dataset_tiny_imagenet, val split): wnids.txt, val/val_annotations.txt and the
 * JPEGs libjpeg-turbo decodes, then the decoded-image cache the load wrote, mapped by a
 * second load that must give the same pixels. Input: two option bytes
 * (pb_fuzz_dataset_opts: parts, crop side, limit), then wnids.txt, PB_FUZZ_SEP, the
 * annotations, and up to 8 JPEGs (val/images/val_<i>.JPEG), each after a PB_FUZZ_SEP. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_dataset.h"
#include "tests/fuzz/fuzz_util.h"

#define MAX_PARTS 10

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* the cache's second place (where the tree cannot be written) stays in the scratch */
    setenv("XDG_CACHE_HOME", pb_fuzz_dir(), 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    struct pb_dataset_opts o;
    int limit;
    pb_fuzz_dataset_opts(data[0], data[1], &o, &limit);
    struct pb_fuzz_part part[MAX_PARTS];
    int n = pb_fuzz_split(data + 2, size - 2, part, MAX_PARTS);
    if (n < 2)
        return 0;
    pb_fuzz_reset();
    pb_fuzz_write("wnids.txt", part[0].p, part[0].n);
    pb_fuzz_write("val/val_annotations.txt", part[1].p, part[1].n);
    pb_fuzz_mkdir("val/images");
    for (int i = 2; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "val/images/val_%d.JPEG", i - 2);
        pb_fuzz_write(name, part[i].p, part[i].n);
    }
    struct pb_image_kind kind;
    pb_dataset_image_kind("tiny-imagenet", &kind);
    struct pb_dataset_source src = {pb_fuzz_dir(), "--data-dir", "PIPEBENCH_TINY_IMAGENET_DIR",
                                    false, &kind};
    struct pb_dataset ds, again;
    struct pb_err e;
    if (pb_dataset_tiny_imagenet(&ds, &src, PB_SPLIT_TEST, limit, &o, &e) != 0) {
        pb_fuzz_refused(e.msg);
        return 0;
    }
    pb_fuzz_check_dataset(&ds, o.parts, limit);
    pb_fuzz_accepted("tiny-imagenet");
    if (ds.pix) {
        PB_FUZZ_ASSERT(ds.cache_path != NULL, "decoded images but wrote no cache");
        int rc = pb_dataset_tiny_imagenet(&again, &src, PB_SPLIT_TEST, limit, &o, &e);
        PB_FUZZ_ASSERT(rc == 0, "the second load failed: %s", e.msg);
        PB_FUZZ_ASSERT(again.decoded == 0 && again.map, "the second load decoded %ld images "
                       "instead of mapping the cache", again.decoded);
        PB_FUZZ_ASSERT(again.n == ds.n && !memcmp(again.pix, ds.pix, (size_t)ds.n * 3 * 64 * 64),
                       "the cache's pixels differ from the decoded ones");
        pb_dataset_finish(&again);
    }
    pb_dataset_finish(&ds);
    return 0;
}
