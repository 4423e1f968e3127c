/* workloads/datasets/synthetic_seq.c — the synthetic stand-in of IMDb (semantics §1.6):
 * 2 classes of token sequences in Keras' id scheme (0 padding, 1 start, 2 OOV, words
 * from 3, ranked: smaller ids more frequent), a pure function of (seed, split, sample).
 * A sequence is the start id then len − 1 words, len uniform in [T/4, T], padded with 0
 * at the end. Each word is, with probability 0.9, a "neutral" word id 3 + ⌊(V − 3)·u²⌋
 * (a frequency-ranked skew); else a "sentiment" word: one of K ids of its class's set
 * (class 0 the odd ids 3, 5, …, class 1 the even 4, 6, …, K = min(50, (V − 3)/4))
 * with probability 0.75, of the other class's set otherwise. A bag-of-words rule
 * (embedding + mean, as the model's head sees it) separates them well, not perfectly. */
#include <string.h>

#include "harness/base/rng.h"
#include "workloads/datasets/dataset.h"

#define SEQ_SIGNAL 0.1f
#define SEQ_PURITY 0.75f
#define SEQ_WORDS 50

int pb_dataset_synthetic_seq(struct pb_dataset *ds, enum pb_split split, int limit, uint64_t seed,
                             const struct pb_dataset_opts *opts, struct pb_err *e)
{
    memset(ds, 0, sizeof *ds);
    int vocab = opts->vocab ? opts->vocab : 10000, steps = opts->steps ? opts->steps : 200;
    int n = opts->n ? opts->n : split == PB_SPLIT_TRAIN ? 10000 : 2000;
    if (opts->c || opts->h || opts->w || opts->nclasses)
        return pb_err_set(e, "synthetic dataset: a stand-in of imdb takes its shape and class "
                             "count; drop the explicit shape");
    if (vocab < 16 || steps < 4 || n < 1)
        return pb_err_set(e, "synthetic dataset: the imdb stand-in needs a vocabulary of at least "
                             "16, at least 4 tokens and a sample (got %d, %d, %d)", vocab, steps, n);
    if (limit > n)
        return pb_err_set(e, "synthetic dataset: the sample limit %d is more than the %d "
                             "samples of the split" PB_LIMIT_ADVICE, limit, n);
    int keep = limit > 0 ? limit : n;
    int parts = opts->parts ? opts->parts : PB_DATA_ALL;
    if (parts & PB_DATA_INPUTS)
        ds->x = pb_malloc_or_err((size_t)keep * steps * sizeof *ds->x, "the synthetic sequences", e);
    if (parts & PB_DATA_LABELS) {
        ds->y = pb_malloc_or_err((size_t)keep * sizeof *ds->y, "the synthetic labels", e);
        ds->len = ds->y ? pb_malloc_or_err((size_t)keep * sizeof *ds->len, "the lengths", e) : NULL;
    }
    if (((parts & PB_DATA_INPUTS) && !ds->x) || ((parts & PB_DATA_LABELS) && !ds->len)) {
        pb_dataset_finish(ds);
        return pb_err_prefix(e, "synthetic dataset of %d samples (use --limit-train): ", keep);
    }
    int words = (vocab - 3) / 4 < SEQ_WORDS ? (vocab - 3) / 4 : SEQ_WORDS;
    int lo = steps / 4;
    for (int i = 0; i < keep; i++) {
        struct pb_rng_key key = pb_rng_key(PB_RNG_DATA, seed, 1 + (uint64_t)split, (uint64_t)i, 0);
        int label = (int)pb_rng_below(key, 0, 2);
        int len = lo + (int)pb_rng_below(key, 1, (uint64_t)(steps - lo + 1));
        if (ds->y) {
            ds->y[i] = label;
            ds->len[i] = len;
        }
        if (!ds->x)
            continue;
        float *x = ds->x + (size_t)i * steps;
        x[0] = 1.0f;
        for (int t = 1; t < steps; t++) {
            if (t >= len) {
                x[t] = 0.0f;
                continue;
            }
            uint64_t c = 2 + 3 * (uint64_t)t;
            float u = pb_rng_uniform(key, c);
            int id;
            if (u >= SEQ_SIGNAL) {
                float v = pb_rng_uniform(key, c + 1);
                id = 3 + (int)((float)(vocab - 3) * v * v);
                id = id < vocab ? id : vocab - 1;
            } else {
                int cls = pb_rng_uniform(key, c + 1) < SEQ_PURITY ? label : 1 - label;
                id = 3 + cls + 2 * (int)pb_rng_below(key, c + 2, (uint64_t)words);
            }
            x[t] = (float)id;
        }
    }
    ds->name = pb_xstrdup("synthetic");
    ds->n = keep;
    ds->c = steps;
    ds->h = ds->w = 1;
    ds->nclasses = 2;
    ds->vocab = vocab;
    return 0;
}
