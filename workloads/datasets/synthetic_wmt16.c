/* workloads/datasets/synthetic_wmt16.c — the synthetic stand-in of wmt16-de-en
 * (semantics §1.6), laid out as the loader's samples (wmt16.c): a pure function of
 * (seed, split, sample). A source has m words, m = 1 + ⌊(T − 3)·u^1.3⌋ (mean about
 * 0.43·T, skewed short as the BPE training pairs), each id 4 + ⌊(V − 4)·u³⌋ (a
 * frequency-ranked skew); its target has m' = clamp(round(m·(0.9 + 0.3u)), 1, T − 2)
 * words, word j the image of source word ⌊j·m/m'⌋ under id ↦ 4 + (7919·(id − 4) + 13)
 * mod (V − 4), so a translation exists to learn. Both framed as BOS words EOS. */
#include <math.h>
#include <string.h>

#include "harness/base/rng.h"
#include "workloads/datasets/dataset.h"

int pb_dataset_synthetic_wmt16(struct pb_dataset *ds, enum pb_split split, int limit,
                               uint64_t seed, const struct pb_dataset_opts *opts,
                               struct pb_err *e)
{
    memset(ds, 0, sizeof *ds);
    int vocab = opts->vocab ? opts->vocab : PB_WMT16_VOCAB, steps = opts->steps ? opts->steps : 50;
    int n = opts->n ? opts->n : split == PB_SPLIT_TRAIN ? 10000 : 1000;
    if (opts->c || opts->h || opts->w || opts->nclasses)
        return pb_err_set(e, "synthetic dataset: a stand-in of wmt16-de-en takes its shape; drop "
                             "the explicit shape");
    if (vocab < 16 || steps < 4 || n < 1)
        return pb_err_set(e, "synthetic dataset: the wmt16-de-en stand-in needs a vocabulary of "
                             "at least 16, at least 4 tokens and a sample (got %d, %d, %d)",
                          vocab, steps, n);
    if (limit > n)
        return pb_err_set(e, "synthetic dataset: the sample limit %d is more than the %d "
                             "samples of the split" PB_LIMIT_ADVICE, limit, n);
    int keep = limit > 0 ? limit : n;
    int parts = opts->parts ? opts->parts : PB_DATA_ALL;
    if (parts & PB_DATA_INPUTS)
        ds->x = pb_malloc_or_err((size_t)keep * 2 * steps * sizeof *ds->x, "the sequences", e);
    if (parts & PB_DATA_LABELS)
        ds->tgt = pb_malloc_or_err((size_t)keep * steps * sizeof *ds->tgt, "the targets", e);
    ds->len = pb_malloc_or_err((size_t)keep * sizeof *ds->len, "the lengths", e);
    ds->y = ds->len ? pb_malloc_or_err((size_t)keep * sizeof *ds->y, "the lengths", e) : NULL;
    if (((parts & PB_DATA_INPUTS) && !ds->x) || ((parts & PB_DATA_LABELS) && !ds->tgt) || !ds->y) {
        pb_dataset_finish(ds);
        return pb_err_prefix(e, "synthetic dataset of %d samples (use --limit-train): ", keep);
    }
    int32_t src[4096], tgt[4096];
    int cap = steps < 4096 ? steps : 4096;
    for (int i = 0; i < keep; i++) {
        struct pb_rng_key key = pb_rng_key(PB_RNG_DATA, seed, 11 + (uint64_t)split, (uint64_t)i, 0);
        int m = 1 + (int)((float)(cap - 3) * powf(pb_rng_uniform(key, 0), 1.3f));
        int mt = (int)lrintf((float)m * (0.9f + 0.3f * pb_rng_uniform(key, 1)));
        mt = mt < 1 ? 1 : mt > cap - 2 ? cap - 2 : mt;
        src[0] = tgt[0] = PB_WMT16_BOS;
        for (int t = 0; t < m; t++) {
            float u = pb_rng_uniform(key, 2 + (uint64_t)t);
            int id = 4 + (int)((float)(vocab - 4) * u * u * u);
            src[1 + t] = id < vocab ? id : vocab - 1;
        }
        for (int j = 0; j < mt; j++) {
            long w = src[1 + (int)((long)j * m / mt)] - 4;
            tgt[1 + j] = 4 + (int)((7919 * w + 13) % (vocab - 4));
        }
        src[m + 1] = tgt[mt + 1] = PB_WMT16_EOS;
        ds->len[i] = m + 2;
        ds->y[i] = mt + 2;
        for (int t = 0; t < steps; t++) {
            int32_t s = t < m + 2 ? src[t] : PB_WMT16_PAD, g = t < mt + 2 ? tgt[t] : PB_WMT16_PAD;
            if (ds->x) {
                ds->x[(size_t)i * 2 * steps + t] = (float)s;
                ds->x[(size_t)i * 2 * steps + steps + t] = (float)g;
            }
            if (ds->tgt)
                ds->tgt[(size_t)i * steps + t] = g;
        }
    }
    ds->name = pb_xstrdup("synthetic");
    ds->n = keep;
    ds->c = 2 * steps;
    ds->h = ds->w = 1;
    ds->nclasses = steps + 1;
    ds->vocab = vocab;
    ds->tgt_steps = steps;
    return 0;
}
