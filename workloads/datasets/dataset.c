/* workloads/datasets/dataset.c — the dataset registry, where a dataset's files are, the
 * epoch order and gathering. The epoch order is semantics §1.5's permutation drawn from
 * (seed, epoch); a micro-batch is a contiguous slice of it, gathered here into caller
 * memory, image samples through the transforms of semantics §1.6. */
#include "workloads/datasets/dataset.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness/base/rng.h"

struct dataset_kind {
    const char *name, *summary;
    const char *default_dir, *env;
};

static const struct dataset_kind kinds[] = {
    {"fashion-mnist", "Zalando Fashion-MNIST, 1x28x28 grey images, 10 classes, 60000/10000 "
                      "(Debian dataset-fashion-mnist)",
     "/usr/share/datasets/fashion-mnist", "PIPEBENCH_FASHION_MNIST_DIR"},
    {"synthetic", "generated class prototypes plus noise, 1x28x28 and 10 classes by default, "
                  "deterministic from the seed; with an image model, a stand-in of its dataset",
     NULL, NULL},
    {"cifar10", "CIFAR-10 binary batches (cifar-10-binary.tar.gz), 3x32x32, 10 classes, "
                "50000/10000; RandomCrop 32 padding 4 + flip (semantics §1.6)",
     "/usr/share/datasets/cifar10", "PIPEBENCH_CIFAR10_DIR"},
    {"cifar100", "CIFAR-100 binary (cifar-100-binary.tar.gz), 3x32x32, 100 fine classes, "
                 "50000/10000; RandomCrop 32 padding 4 + flip (semantics §1.6)",
     "/usr/share/datasets/cifar100", "PIPEBENCH_CIFAR100_DIR"},
    {"tiny-imagenet", "Tiny-ImageNet (tiny-imagenet-200.zip), 3x64x64 JPEGs decoded once into a "
                      "cache, 200 classes, 100000/10000; RandomResizedCrop + flip (semantics §1.6)",
     "/usr/share/datasets/tiny-imagenet", "PIPEBENCH_TINY_IMAGENET_DIR"},
    {"imdb", "IMDb movie reviews (aclImdb_v1.tar.gz, unpacked), 2 classes, 25000/25000, "
             "tokenised and ranked as Keras' imdb.npz, padded or truncated to 200 tokens "
             "(semantics §1.6)",
     "/usr/share/datasets/imdb", "PIPEBENCH_IMDB_DIR"},
    {"wmt16-de-en", "WMT16 English-German from the MLPerf GNMT preprocessing (BPE 32000, "
                    "vocabulary 32320 with <pad> <unk> <s> <\\s>), training pairs of at most "
                    "50 tokens, newstest2014 for test; source and target ids per sample",
     "/usr/share/datasets/wmt16-de-en", "PIPEBENCH_WMT16_DE_EN_DIR"},
};
#define NKINDS (int)(sizeof kinds / sizeof kinds[0])

const char *const pb_dataset_names[] = {"fashion-mnist", "synthetic", "cifar10", "cifar100",
                                        "tiny-imagenet", "imdb", "wmt16-de-en", NULL};

static const struct pb_image_kind image_kinds[] = {
    {"cifar10", 3, 32, 32, 10, PB_AUG_CIFAR, {0.4914f, 0.4822f, 0.4465f}, {0.2023f, 0.1994f, 0.2010f}},
    {"cifar100", 3, 32, 32, 100, PB_AUG_CIFAR, {0.4914f, 0.4822f, 0.4465f}, {0.2023f, 0.1994f, 0.2010f}},
    {"tiny-imagenet", 3, 64, 64, 200, PB_AUG_IMAGENET, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}},
};

static const struct dataset_kind *find_kind(const char *name)
{
    for (int i = 0; i < NKINDS; i++)
        if (name && !strcmp(kinds[i].name, name))
            return &kinds[i];
    return NULL;
}

const char *pb_dataset_summary(const char *name)
{
    const struct dataset_kind *k = find_kind(name);
    return k ? k->summary : NULL;
}

const char *pb_dataset_default_dir(const char *name)
{
    const struct dataset_kind *k = find_kind(name);
    return k ? k->default_dir : NULL;
}

const char *pb_dataset_env_var(const char *name)
{
    const struct dataset_kind *k = find_kind(name);
    return k ? k->env : NULL;
}

bool pb_dataset_image_kind(const char *name, struct pb_image_kind *out)
{
    for (size_t i = 0; i < sizeof image_kinds / sizeof image_kinds[0]; i++)
        if (name && !strcmp(image_kinds[i].name, name)) {
            if (out)
                *out = image_kinds[i];
            return true;
        }
    return false;
}

bool pb_dataset_is_image(const char *name)
{
    return pb_dataset_image_kind(name, NULL);
}

bool pb_dataset_is_sequence(const char *name)
{
    return name && (!strcmp(name, "imdb") || !strcmp(name, "wmt16-de-en"));
}

const char *pb_dataset_dir(const char *name, const char *data_dir, const char **origin)
{
    const struct dataset_kind *k = find_kind(name);
    const char *env = k && k->env ? getenv(k->env) : NULL;
    const char *dir = NULL, *from = "the default folder";
    if (data_dir) {
        dir = data_dir;
        from = "--data-dir";
    } else if (env && *env) {
        dir = env;
        from = k->env;
    } else if (k) {
        dir = k->default_dir;
    }
    if (origin)
        *origin = from;
    return dir;
}

int pb_dataset_set_image(struct pb_dataset *ds, const struct pb_image_kind *k,
                         const struct pb_dataset_opts *opts, struct pb_err *e)
{
    int side = opts && opts->crop ? opts->crop : k->h;
    bool flip = !(opts && opts->no_flip);
    if (pb_aug_init(&ds->aug, k->family, k->c, k->h, k->w, side, flip, k->mean, k->std, e))
        return pb_err_prefix(e, "%s: ", k->name);
    if (ds->pix_owned)
        ds->pix = ds->pix_owned;
    ds->sc = k->c;
    ds->sh = k->h;
    ds->sw = k->w;
    ds->c = k->c;
    ds->h = ds->w = side;
    return 0;
}

int pb_dataset_load(struct pb_dataset *ds, const char *name, const char *data_dir,
                    enum pb_split split, int limit, uint64_t seed, struct pb_err *e)
{
    return pb_dataset_load_opts(ds, name, data_dir, split, limit, seed, NULL, e);
}

static int load_kind(struct pb_dataset *ds, const char *name, const char *data_dir,
                     enum pb_split split, int limit, uint64_t seed,
                     const struct pb_dataset_opts *opts, struct pb_err *e)
{
    const char *origin;
    const char *dir = pb_dataset_dir(name, data_dir, &origin);
    if (!strcmp(name, "fashion-mnist")) {
        /* NULL: the default folder, whose messages name the Debian package */
        const char *given = !data_dir && dir == kinds[0].default_dir ? NULL : dir;
        return pb_dataset_fashion_mnist_parts(ds, given, split, limit,
                                              opts && opts->parts ? opts->parts : PB_DATA_ALL, e);
    }
    if (!strcmp(name, "synthetic") && opts && opts->like && !strcmp(opts->like, "wmt16-de-en"))
        return pb_dataset_synthetic_wmt16(ds, split, limit, seed, opts, e);
    if (!strcmp(name, "synthetic") && opts && pb_dataset_is_sequence(opts->like))
        return pb_dataset_synthetic_seq(ds, split, limit, seed, opts, e);
    if (!strcmp(name, "synthetic"))
        return pb_dataset_synthetic(ds, split, limit, seed, opts, e);
    if (!strcmp(name, "imdb"))
        return pb_dataset_imdb(ds, dir, origin, split, limit, opts, e);
    if (!strcmp(name, "wmt16-de-en"))
        return pb_dataset_wmt16(ds, dir, origin, split, limit, opts, e);
    if (!strcmp(name, "cifar10") || !strcmp(name, "cifar100"))
        return pb_dataset_cifar(ds, !strcmp(name, "cifar10") ? 10 : 100, dir, origin, split,
                                limit, opts, e);
    return pb_dataset_tiny_imagenet(ds, dir, origin, split, limit, opts, e);
}

int pb_dataset_load_opts(struct pb_dataset *ds, const char *name, const char *data_dir,
                         enum pb_split split, int limit, uint64_t seed,
                         const struct pb_dataset_opts *opts, struct pb_err *e)
{
    memset(ds, 0, sizeof *ds);
    if (limit < 0)
        return pb_err_set(e, "dataset %s: the sample limit must be >= 0 (0 keeps all), got %d",
                          name, limit);
    if (!find_kind(name)) {
        char list[256] = "";
        for (int i = 0; pb_dataset_names[i]; i++) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", pb_dataset_names[i]);
        }
        return pb_err_set(e, "unknown dataset '%s'; valid datasets: %s", name ? name : "(none)",
                          list);
    }
    if (opts && opts->like && strcmp(name, "synthetic"))
        return pb_err_set(e, "dataset %s: a stand-in ('like %s') is a synthetic dataset's option",
                          name, opts->like);
    if (opts && opts->crop < 0)
        return pb_err_set(e, "dataset %s: the input side must be positive (got %d)", name,
                          opts->crop);
    if (load_kind(ds, name, data_dir, split, limit, seed, opts, e))
        return -1;
    if (ds->aug.family == PB_AUG_NONE && opts && opts->crop &&
        (opts->crop != ds->h || opts->crop != ds->w)) {
        pb_err_set(e, "dataset %s: its samples are %dx%d and it has no resize or crop transform, "
                      "so it cannot make inputs of side %d", name, ds->h, ds->w, opts->crop);
        pb_dataset_finish(ds);
        return -1;
    }
    return 0;
}

void pb_dataset_finish(struct pb_dataset *ds)
{
    free(ds->name);
    free(ds->x);
    free(ds->y);
    free(ds->len);
    free(ds->tgt);
    free(ds->pix_owned);
    free(ds->cache_path);
    if (ds->map)
        munmap(ds->map, ds->map_len);
    memset(ds, 0, sizeof *ds);
}

bool pb_dataset_has_inputs(const struct pb_dataset *ds)
{
    return ds->x || ds->pix;
}

size_t pb_dataset_input_bytes(const struct pb_dataset *ds)
{
    if (ds->x)
        return (size_t)ds->n * ds->c * ds->h * ds->w * sizeof *ds->x;
    if (ds->pix)
        return (size_t)ds->n * ds->sc * ds->sh * ds->sw;
    return 0;
}

size_t pb_dataset_label_bytes(const struct pb_dataset *ds)
{
    return (ds->y ? (size_t)ds->n * sizeof *ds->y : 0) +
           (ds->len ? (size_t)ds->n * sizeof *ds->len : 0) +
           (ds->tgt ? (size_t)ds->n * ds->tgt_steps * sizeof *ds->tgt : 0);
}

void pb_epoch_order(uint64_t seed, int epoch, int n, bool shuffle, int32_t *order)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    if (!shuffle)
        return;
    struct pb_rng_key key = pb_rng_key(PB_RNG_SHUFFLE, seed, (uint64_t)epoch, 0, 0);
    for (int i = n - 1; i > 0; i--) {
        int j = (int)pb_rng_below(key, (uint64_t)i, (uint64_t)i + 1);
        int32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

void pb_dataset_gather(const struct pb_dataset *ds, struct pb_data_key key, const int32_t *order,
                       int first, int count, float *x, int32_t *y)
{
    PB_CHECK(first >= 0 && count >= 0 && first + count <= ds->n);
    PB_CHECK((!x || pb_dataset_has_inputs(ds)) && (!y || ds->y));
    size_t per = (size_t)ds->c * ds->h * ds->w, stored = (size_t)ds->sc * ds->sh * ds->sw;
    void *scratch = x && !ds->x ? pb_xmalloc(pb_aug_scratch_bytes(&ds->aug)) : NULL;
    for (int i = 0; i < count; i++) {
        int s = order ? order[first + i] : first + i;
        PB_CHECK(s >= 0 && s < ds->n);
        if (x && ds->x) {
            memcpy(x + (size_t)i * per, ds->x + (size_t)s * per, per * sizeof *x);
        } else if (x) {
            const uint8_t *src = ds->pix + (size_t)s * stored;
            if (key.train) {
                struct pb_aug_crop p;
                pb_aug_draw(&ds->aug, pb_rng_key(PB_RNG_AUGMENT, key.seed, (uint64_t)key.epoch,
                                                 (uint64_t)s, 0), &p);
                pb_aug_train(&ds->aug, src, &p, scratch, x + (size_t)i * per);
            } else {
                pb_aug_val(&ds->aug, src, scratch, x + (size_t)i * per);
            }
        }
        if (y)
            y[i] = ds->y[s];
    }
    free(scratch);
}

void pb_dataset_gather_lengths(const struct pb_dataset *ds, const int32_t *order, int first,
                               int count, int32_t *len)
{
    PB_CHECK(ds->len && first >= 0 && count >= 0 && first + count <= ds->n);
    for (int i = 0; i < count; i++)
        len[i] = ds->len[order ? order[first + i] : first + i];
}

void pb_dataset_gather_targets(const struct pb_dataset *ds, const int32_t *order, int first,
                               int count, int32_t *tgt)
{
    PB_CHECK(ds->tgt && first >= 0 && count >= 0 && first + count <= ds->n);
    size_t t = (size_t)ds->tgt_steps;
    for (int i = 0; i < count; i++)
        memcpy(tgt + (size_t)i * t, ds->tgt + (size_t)(order ? order[first + i] : first + i) * t,
               t * sizeof *tgt);
}

void pb_dataset_gather_next_tokens(const struct pb_dataset *ds, const int32_t *order, int first,
                                   int count, int32_t *labels)
{
    PB_CHECK(ds->tgt && first >= 0 && count >= 0 && first + count <= ds->n);
    size_t t = (size_t)ds->tgt_steps;
    for (int i = 0; i < count; i++) {
        const int32_t *row = ds->tgt + (size_t)(order ? order[first + i] : first + i) * t;
        memcpy(labels + (size_t)i * t, row + 1, (t - 1) * sizeof *labels);
        labels[(size_t)i * t + t - 1] = PB_WMT16_PAD;
    }
}
