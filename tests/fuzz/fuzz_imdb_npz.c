/* tests/fuzz/fuzz_imdb_npz.c — libFuzzer target: Keras' imdb.npz reader
 * (pb_dataset_imdb_npz): the zip archive (libzip), the .npy headers and the pickled
 * object arrays of word ranks. Input: three option bytes (parts and split: bits 0-1 and
 * 2 of the first; the vocabulary: the second, 0 = the default, else 2 + it; the limit:
 * the third), then the file's bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tests/fuzz/fuzz_dataset.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    int parts = data[0] & 3 ? data[0] & 3 : PB_DATA_ALL;
    enum pb_split split = data[0] & 4 ? PB_SPLIT_TEST : PB_SPLIT_TRAIN;
    struct pb_dataset_opts o = {.parts = parts, .vocab = data[1] ? 2 + data[1] : 0};
    int limit = data[2];
    pb_fuzz_reset();
    pb_fuzz_write("imdb.npz", data + 3, size - 3);
    char path[4096];
    snprintf(path, sizeof path, "%s/imdb.npz", pb_fuzz_dir());
    struct pb_dataset ds;
    struct pb_err e;
    if (pb_dataset_imdb_npz(&ds, path, split, limit, &o, &e) == 0) {
        pb_fuzz_check_dataset(&ds, parts, limit);
        pb_fuzz_accepted("imdb_npz");
        PB_FUZZ_ASSERT(ds.nclasses == 2, "%d classes", ds.nclasses);
        pb_dataset_finish(&ds);
    } else {
        pb_fuzz_refused(e.msg);
    }
    return 0;
}
