/* tests/fuzz/fuzz_dataset.c — the invariants of a loaded dataset (fuzz_dataset.h). */
#include "tests/fuzz/fuzz_dataset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_util.h"

void pb_fuzz_dataset_opts(uint8_t a, uint8_t b, struct pb_dataset_opts *o, int *limit)
{
    static const int sides[8] = {0, 0, 8, 24, 28, 32, 64, 1};
    memset(o, 0, sizeof *o);
    o->parts = a & 3 ? a & 3 : PB_DATA_ALL;
    o->crop = sides[(a >> 2) & 7];
    *limit = b;
}

void pb_fuzz_check_dataset(const struct pb_dataset *ds, int parts, int limit)
{
    PB_FUZZ_ASSERT(ds->n > 0 && (limit == 0 || ds->n == limit), "%d samples for limit %d", ds->n,
                   limit);
    PB_FUZZ_ASSERT(ds->c > 0 && ds->h > 0 && ds->w > 0 && ds->nclasses > 0, "shape %dx%dx%d, %d "
                   "classes", ds->c, ds->h, ds->w, ds->nclasses);
    /* a translation dataset's y holds the target lengths, loaded with either part
     * (dataset.h); its target ids (tgt) come with the labels */
    bool translation = ds->tgt_steps > 0;
    bool want_x = parts & PB_DATA_INPUTS, want_y = (parts & PB_DATA_LABELS) || translation;
    PB_FUZZ_ASSERT(!translation || (ds->tgt != NULL) == !!(parts & PB_DATA_LABELS),
                   "target ids loaded: %d, labels asked: %d", ds->tgt != NULL,
                   !!(parts & PB_DATA_LABELS));
    PB_FUZZ_ASSERT(pb_dataset_has_inputs(ds) == want_x, "inputs loaded: %d, asked: %d",
                   pb_dataset_has_inputs(ds), want_x);
    PB_FUZZ_ASSERT((ds->y != NULL) == want_y, "labels loaded: %d, asked: %d", ds->y != NULL,
                   want_y);
    for (int i = 0; want_y && i < ds->n; i++) {
        PB_FUZZ_ASSERT(ds->y[i] >= 0 && ds->y[i] < ds->nclasses, "label %d of sample %d, %d "
                       "classes", ds->y[i], i, ds->nclasses);
        int steps = translation ? ds->tgt_steps : ds->c;
        PB_FUZZ_ASSERT(!ds->len || (ds->len[i] >= 1 && ds->len[i] <= steps), "length %d of "
                       "sample %d, %d steps", ds->len[i], i, steps);
    }
    if (!want_x)
        return;
    size_t per = (size_t)ds->c * ds->h * ds->w;
    float *x = pb_xmalloc(per * sizeof *x);
    for (int train = 0; train < 2; train++)
        for (int i = 0; i < ds->n; i++) {
            struct pb_data_key key = {.seed = 7, .epoch = i, .train = train};
            pb_dataset_gather(ds, key, NULL, i, 1, x, NULL);
            for (size_t k = 0; k < per; k++)
                PB_FUZZ_ASSERT(isfinite(x[k]), "sample %d value %zu is %g", i, k, (double)x[k]);
            if (ds->vocab)
                for (size_t k = 0; k < per; k++)
                    PB_FUZZ_ASSERT(x[k] >= 0 && x[k] < (float)ds->vocab && x[k] == floorf(x[k]),
                                   "token %zu of sample %d is %g, vocabulary %d", k, i,
                                   (double)x[k], ds->vocab);
        }
    free(x);
}
