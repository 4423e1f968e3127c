/* tests/fuzz/fuzz_idx.c — libFuzzer target: the Fashion-MNIST IDX loader
 * (pb_dataset_fashion_mnist_parts; gzip or plain files). Input: two option bytes
 * (pb_fuzz_dataset_opts: parts, limit), then the labels file, PB_FUZZ_SEP, the images
 * file; both are written into the scratch folder under the training split's names. */
#include <stddef.h>
#include <stdint.h>

#include "tests/fuzz/fuzz_dataset.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    struct pb_dataset_opts o;
    int limit;
    pb_fuzz_dataset_opts(data[0], data[1], &o, &limit);
    struct pb_fuzz_part part[2];
    if (pb_fuzz_split(data + 2, size - 2, part, 2) != 2)
        return 0;
    pb_fuzz_reset();
    pb_fuzz_write("train-labels-idx1-ubyte", part[0].p, part[0].n);
    pb_fuzz_write("train-images-idx3-ubyte", part[1].p, part[1].n);
    struct pb_dataset ds;
    struct pb_err e;
    if (pb_dataset_fashion_mnist_parts(&ds, pb_fuzz_dir(), false, PB_SPLIT_TRAIN, limit, o.parts,
                                       &e) == 0) {
        pb_fuzz_check_dataset(&ds, o.parts, limit);
        pb_fuzz_accepted("fashion-mnist");
        pb_dataset_finish(&ds);
    } else {
        pb_fuzz_refused(e.msg);
    }
    return 0;
}
