/* tests/fuzz/fuzz_cifar.c — libFuzzer target: the CIFAR-10 / CIFAR-100 binary batches
 * (pb_dataset_cifar, test split). Input: an option byte (bit 7: CIFAR-100; the rest
 * and the next byte as pb_fuzz_dataset_opts: parts, crop side, limit), then the batch
 * file, written as test_batch.bin or test.bin in the scratch folder. */
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
    int classes = data[0] & 0x80 ? 100 : 10;
    pb_fuzz_reset();
    pb_fuzz_write(classes == 10 ? "test_batch.bin" : "test.bin", data + 2, size - 2);
    struct pb_image_kind kind;
    pb_dataset_image_kind(classes == 10 ? "cifar10" : "cifar100", &kind);
    struct pb_dataset_source src = {pb_fuzz_dir(), "--data-dir", "PIPEBENCH_CIFAR_DIR", false,
                                    &kind};
    struct pb_dataset ds;
    struct pb_err e;
    if (pb_dataset_cifar(&ds, &src, PB_SPLIT_TEST, limit, &o, &e) == 0) {
        pb_fuzz_check_dataset(&ds, o.parts, limit);
        pb_fuzz_accepted(ds.name);
        PB_FUZZ_ASSERT(ds.nclasses == classes, "%d classes, expected %d", ds.nclasses, classes);
        pb_dataset_finish(&ds);
    } else {
        pb_fuzz_refused(e.msg);
    }
    return 0;
}
