/* tests/fuzz/fuzz_imdb.c — libFuzzer target: the IMDb aclImdb reader (pb_dataset_imdb):
 * review file names, the text's tokenising and the vocabulary's ranking. Input: four
 * option bytes (parts and split: bits 0-1 and 2 of the first; the vocabulary: the
 * second, 0 = the default, else 2 + it; the steps: the third, 0 = the default; the
 * limit: the fourth), then reviews separated by PB_FUZZ_SEP, each a first line naming
 * it (train/neg/<id>_<rating>.txt and the like; another line gets a name of its own)
 * and its text. The four folders always exist. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/fuzz/fuzz_dataset.h"
#include "tests/fuzz/fuzz_util.h"

#define MAX_PARTS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const folders[4] = {"train/neg/", "train/pos/", "test/neg/", "test/pos/"};

/* Whether line (len bytes) names a file in one of the four folders. */
static bool good_name(const char *line, size_t len)
{
    for (int k = 0; k < 4; k++) {
        size_t f = strlen(folders[k]);
        if (len > f && len < 200 && !memcmp(line, folders[k], f) &&
            !memchr(line + f, '/', len - f) && !memchr(line, 0, len) && line[f] != '.')
            return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    int parts = data[0] & 3 ? data[0] & 3 : PB_DATA_ALL;
    enum pb_split split = data[0] & 4 ? PB_SPLIT_TEST : PB_SPLIT_TRAIN;
    struct pb_dataset_opts o = {.parts = parts, .vocab = data[1] ? 2 + data[1] : 0,
                                .steps = data[2]};
    int limit = data[3];
    struct pb_fuzz_part part[MAX_PARTS];
    int n = pb_fuzz_split(data + 4, size - 4, part, MAX_PARTS);
    pb_fuzz_reset();
    for (int k = 0; k < 4; k++)
        pb_fuzz_mkdir(folders[k]);
    for (int i = 0; i < n; i++) {
        const char *p = (const char *)part[i].p, *nl = memchr(p, '\n', part[i].n);
        size_t len = nl ? (size_t)(nl - p) : 0;
        char name[256];
        if (nl && good_name(p, len))
            snprintf(name, sizeof name, "%.*s", (int)len, p);
        else
            snprintf(name, sizeof name, "%s%d_%d.txt", folders[i % 4], i, 1 + i % 10);
        size_t skip = nl ? len + 1 : 0;
        pb_fuzz_write(name, part[i].p + skip, part[i].n - skip);
    }
    struct pb_dataset ds;
    struct pb_err e;
    if (pb_dataset_imdb(&ds, pb_fuzz_dir(), "--data-dir", split, limit, &o, &e) == 0) {
        pb_fuzz_check_dataset(&ds, parts, limit);
        pb_fuzz_accepted("imdb");
        PB_FUZZ_ASSERT(ds.nclasses == 2 && ds.c == (o.steps ? o.steps : 200), "%d classes, %d "
                       "steps", ds.nclasses, ds.c);
        pb_dataset_finish(&ds);
    } else {
        pb_fuzz_refused(e.msg);
    }
    return 0;
}
