/* tests/fuzz/fuzz_wmt16.c — libFuzzer target: the wmt16-de-en reader (pb_dataset_wmt16):
 * the vocabulary, the BPE token lines of both sides and the length filter. Input: three
 * option bytes (parts and split: bits 0-1 and 2 of the first; the steps T a side: the
 * second, 0 = the default 50; the limit: the third), then up to three files separated by
 * PB_FUZZ_SEP: vocab.bpe.32000, and the split's .en and .de token files. */
#include <stddef.h>
#include <stdint.h>

#include "tests/fuzz/fuzz_dataset.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    int parts = data[0] & 3 ? data[0] & 3 : PB_DATA_ALL;
    enum pb_split split = data[0] & 4 ? PB_SPLIT_TEST : PB_SPLIT_TRAIN;
    struct pb_dataset_opts o = {.parts = parts, .steps = data[1]};
    int limit = data[2];
    const char *stem = split == PB_SPLIT_TRAIN ? "train.tok.clean.bpe.32000"
                                               : "newstest2014.tok.bpe.32000";
    char en[64], de[64];
    snprintf(en, sizeof en, "%s.en", stem);
    snprintf(de, sizeof de, "%s.de", stem);
    const char *names[3] = {"vocab.bpe.32000", en, de};
    struct pb_fuzz_part part[3];
    int n = pb_fuzz_split(data + 3, size - 3, part, 3);
    pb_fuzz_reset();
    for (int i = 0; i < n; i++)
        pb_fuzz_write(names[i], part[i].p, part[i].n);
    struct pb_dataset ds;
    struct pb_err e;
    if (pb_dataset_wmt16(&ds, pb_fuzz_dir(), "--data-dir", split, limit, &o, &e) == 0) {
        pb_fuzz_check_dataset(&ds, parts, limit);
        pb_fuzz_accepted("wmt16");
        int steps = o.steps ? o.steps : 50;
        PB_FUZZ_ASSERT(ds.c == 2 * steps, "%d ids a sample for T = %d", ds.c, steps);
        pb_dataset_finish(&ds);
    } else {
        pb_fuzz_refused(e.msg);
    }
    return 0;
}
