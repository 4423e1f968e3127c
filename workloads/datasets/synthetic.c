/* workloads/datasets/synthetic.c — a learnable generated dataset (design §2.3).
 * Each class has a fixed, spatially blocky Gaussian prototype keyed by (seed, class);
 * sample i of a split is its class prototype plus Gaussian noise keyed by (seed, split, i),
 * scaled to unit variance. The noise level puts the Bayes accuracy of the nearest
 * prototype (a linear rule) near 95%: high, not perfect, whatever the shape and classes.
 * A stand-in of an image dataset (opts->like) stores each value z as the byte
 * round(255·(mean_c + std_c·z)), clamped to 0 … 255, so that its normalised pixels are
 * about z, and goes through that dataset's transforms (semantics §1.6). Its prototypes
 * survive the transforms: blocks of a quarter of the side (wider than CIFAR's 4-pixel
 * shifts), mirror-symmetric left to right (a flip keeps the class), and the noise set as
 * for d / b values instead of d (b the block side), since crops and resizes average and
 * drop pixels. */
#include <math.h>
#include <string.h>

#include "harness/base/rng.h"
#include "workloads/datasets/dataset.h"

/* Target error of the nearest-prototype rule (union bound over the other classes). */
#define SYNTH_ERROR 0.05
#define SYNTH_MAX_ELEMS (1ull << 32)

/* Half the typical distance between two prototypes, in noise standard deviations:
 * the z with (nclasses - 1) * P(N(0, 1) > z) = SYNTH_ERROR, by bisection. */
static double margin(int nclasses)
{
    double lo = 0, hi = 10;
    for (int it = 0; it < 60; it++) {
        double z = 0.5 * (lo + hi);
        if ((nclasses - 1) * 0.5 * erfc(z / sqrt(2.0)) > SYNTH_ERROR)
            lo = z;
        else
            hi = z;
    }
    return 0.5 * (lo + hi);
}

static int opt_or(int v, int dflt)
{
    return v ? v : dflt;
}

/* The sample shape, class count and, for a stand-in, the image kind of the options. */
static int synthetic_shape(const struct pb_dataset_opts *o, const struct pb_image_kind *like_kind,
                           struct pb_image_kind *kind, int *c, int *h, int *w, int *nclasses,
                           struct pb_err *e)
{
    if (o->like) {
        if (!like_kind)
            return pb_err_set(e, "synthetic dataset: '%s' is not an image dataset to stand in for "
                                 "(cifar10, cifar100, tiny-imagenet)", o->like);
        if (o->c || o->h || o->w || o->nclasses)
            return pb_err_set(e, "synthetic dataset: a stand-in of %s takes its shape and class "
                                 "count; drop the explicit shape", o->like);
        *kind = *like_kind;
        *c = kind->c;
        *h = kind->h;
        *w = kind->w;
        *nclasses = kind->nclasses;
        return 0;
    }
    *c = opt_or(o->c, 1);
    *h = opt_or(o->h, 28);
    *w = opt_or(o->w, 28);
    *nclasses = opt_or(o->nclasses, 10);
    return 0;
}

int pb_dataset_synthetic(struct pb_dataset *ds, enum pb_split split, int limit, uint64_t seed,
                         const struct pb_dataset_opts *opts, const struct pb_image_kind *like_kind,
                         struct pb_err *e)
{
    memset(ds, 0, sizeof *ds);
    struct pb_dataset_opts o = opts ? *opts : (struct pb_dataset_opts){0};
    struct pb_image_kind kind = {0};
    int c = 0, h = 0, w = 0, nclasses = 0;
    if (synthetic_shape(&o, like_kind, &kind, &c, &h, &w, &nclasses, e))
        return -1;
    int n = opt_or(o.n, split == PB_SPLIT_TRAIN ? 10000 : 2000);
    if (c < 1 || h < 1 || w < 1 || n < 1)
        return pb_err_set(e, "synthetic dataset: channels, height, width and sample count must "
                          "be positive (got %dx%dx%d, %d samples)", c, h, w, n);
    if (nclasses < 2)
        return pb_err_set(e, "synthetic dataset: it needs at least 2 classes (got %d)", nclasses);
    if (limit > n)
        return pb_err_set(e, "synthetic dataset: the sample limit %d is more than the %d "
                          "samples of the split" PB_LIMIT_ADVICE, limit, n);
    int keep = limit > 0 ? limit : n;
    uint64_t d = (uint64_t)c * (uint64_t)h * (uint64_t)w;
    if (d * (uint64_t)keep > SYNTH_MAX_ELEMS || d * (uint64_t)nclasses > SYNTH_MAX_ELEMS)
        return pb_err_set(e, "synthetic dataset: %d samples of %dx%dx%d (%d classes) is too "
                          "large; reduce the shape or the sample count", keep, c, h, w,
                          nclasses);

    /* Prototypes: one N(0, 1) value per block of b×b pixels, so convolutions and
     * pooling keep the class signal as they do on images; a stand-in's mirrored. */
    bool image = o.like != NULL;
    int b = image ? (h < w ? h : w) / 4 : h < w ? h / 7 : w / 7;
    if (b < 1)
        b = 1;
    int gh = (h + b - 1) / b, gw = (w + b - 1) / b;
    float *proto = pb_malloc_or_err(d * (uint64_t)nclasses * sizeof *proto,
                                    "the synthetic class prototypes", e);
    if (!proto)
        return -1;
    for (int k = 0; k < nclasses; k++) {
        struct pb_rng_key key = pb_rng_key(PB_RNG_DATA, seed, 0, (uint64_t)k, 0);
        float *p = proto + (size_t)k * d;
        for (int ch = 0; ch < c; ch++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    p[((size_t)ch * h + y) * w + x] =
                        pb_rng_normal(key, ((uint64_t)ch * gh + y / b) * gw +
                                               (image && x >= w / 2 ? w - 1 - x : x) / b);
    }

    double dims = image ? (double)d / b : (double)d;
    float sigma = (float)(sqrt(dims / 2.0) / margin(nclasses)) * (o.noise > 0 ? o.noise : 1.0f);
    float scale = (float)(1.0 / sqrt(1.0 + (double)sigma * sigma));
    int parts = o.parts ? o.parts : PB_DATA_ALL;
    bool want_x = parts & PB_DATA_INPUTS;
    if (want_x && image)
        ds->pix_owned = pb_malloc_or_err(d * (uint64_t)keep, "the synthetic images", e);
    else if (want_x)
        ds->x = pb_malloc_or_err(d * (uint64_t)keep * sizeof *ds->x, "the synthetic inputs", e);
    if (parts & PB_DATA_LABELS)
        ds->y = pb_malloc_or_err((size_t)keep * sizeof *ds->y, "the synthetic labels", e);
    if ((want_x && !ds->x && !ds->pix_owned) || ((parts & PB_DATA_LABELS) && !ds->y)) {
        free(proto);
        pb_dataset_finish(ds);
        return pb_err_prefix(e, "synthetic dataset of %d samples (use --limit-train): ", keep);
    }
    size_t plane = (size_t)h * w;
    for (int i = 0; i < keep; i++) {
        struct pb_rng_key key = pb_rng_key(PB_RNG_DATA, seed, 1 + (uint64_t)split, (uint64_t)i, 0);
        int label = (int)pb_rng_below(key, 0, (uint64_t)nclasses);
        const float *p = proto + (size_t)label * d;
        if (ds->x) {
            float *x = ds->x + (size_t)i * d;
            for (uint64_t j = 0; j < d; j++)
                x[j] = (p[j] + sigma * pb_rng_normal(key, 1 + j)) * scale;
        }
        if (ds->pix_owned) {
            uint8_t *x = ds->pix_owned + (size_t)i * d;
            for (uint64_t j = 0; j < d; j++) {
                int ch = (int)(j / plane);
                float z = (p[j] + sigma * pb_rng_normal(key, 1 + j)) * scale;
                long v = lrint(255.0 * (kind.mean[ch] + kind.std[ch] * z));
                x[j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
        if (ds->y)
            ds->y[i] = label;
    }
    free(proto);
    ds->name = pb_xstrdup("synthetic");
    ds->n = keep;
    ds->c = c;
    ds->h = h;
    ds->w = w;
    ds->nclasses = nclasses;
    if (image && pb_dataset_set_image(ds, &kind, &o, e)) {
        pb_dataset_finish(ds);
        return -1;
    }
    return 0;
}
