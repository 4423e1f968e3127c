/* workloads/datasets/registry.c — the dataset registry (docs/extending.md, "Adding a
 * dataset loader"): one row per dataset, the lookups by name, where a dataset's files
 * are, and loading by name: the checks every load makes, then the row's loader. */
#include <stdlib.h>
#include <string.h>

#include "workloads/datasets/dataset.h"

/* What a row's loader is given besides the dataset it fills. */
struct load_args {
    struct pb_dataset_source src;  /* the folder pb_dataset_dir resolved, the row's kind */
    const struct pb_image_kind *like;  /* synthetic: the kind of opts->like's row, or NULL */
    enum pb_split split;
    int limit;
    uint64_t seed;
    const struct pb_dataset_opts *opts;
};

typedef int load_fn(struct pb_dataset *ds, const struct load_args *a, struct pb_err *e);

static int load_fashion_mnist(struct pb_dataset *ds, const struct load_args *a, struct pb_err *e)
{
    return pb_dataset_fashion_mnist_parts(ds, a->src.dir, a->src.default_dir, a->split, a->limit,
                                          a->opts && a->opts->parts ? a->opts->parts : PB_DATA_ALL,
                                          e);
}

static int load_synthetic(struct pb_dataset *ds, const struct load_args *a, struct pb_err *e)
{
    const struct pb_dataset_opts *o = a->opts;
    if (o && o->like && !strcmp(o->like, "wmt16-de-en"))
        return pb_dataset_synthetic_wmt16(ds, a->split, a->limit, a->seed, o, e);
    if (o && pb_dataset_is_sequence(o->like))
        return pb_dataset_synthetic_seq(ds, a->split, a->limit, a->seed, o, e);
    return pb_dataset_synthetic(ds, a->split, a->limit, a->seed, o, a->like, e);
}

static int load_cifar10(struct pb_dataset *ds, const struct load_args *a, struct pb_err *e)
{
    return pb_dataset_cifar(ds, &a->src, a->split, a->limit, a->opts, e);
}

static int load_cifar100(struct pb_dataset *ds, const struct load_args *a, struct pb_err *e)
{
    return pb_dataset_cifar(ds, &a->src, a->split, a->limit, a->opts, e);
}

static int load_tiny_imagenet(struct pb_dataset *ds, const struct load_args *a, struct pb_err *e)
{
    return pb_dataset_tiny_imagenet(ds, &a->src, a->split, a->limit, a->opts, e);
}

static int load_imdb(struct pb_dataset *ds, const struct load_args *a, struct pb_err *e)
{
    return pb_dataset_imdb(ds, a->src.dir, a->src.origin, a->split, a->limit, a->opts, e);
}

static int load_wmt16(struct pb_dataset *ds, const struct load_args *a, struct pb_err *e)
{
    return pb_dataset_wmt16(ds, a->src.dir, a->src.origin, a->split, a->limit, a->opts, e);
}

/* An image dataset's stored shape, classes, transform family, mean and std. */
#define IMAGE(...) (&(const struct pb_image_kind){__VA_ARGS__})
#define CIFAR_NORM {0.4914f, 0.4822f, 0.4465f}, {0.2023f, 0.1994f, 0.2010f}
#define IMAGENET_NORM {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}

/* The registry, in `pipebench list`'s order: ROW(name, summary, default folder and the
 * environment variable that moves it (NULL for a generated dataset), loader, image kind
 * (NULL but for an image dataset: uint8 samples and transforms, which `synthetic` can
 * stand in for), whether it is a sequence dataset (token ids and lengths)). */
#define DATASETS(ROW)                                                                          \
    ROW("fashion-mnist",                                                                       \
        "Zalando Fashion-MNIST, 1x28x28 grey images, 10 classes, 60000/10000 "                 \
        "(Debian dataset-fashion-mnist)",                                                      \
        "/usr/share/datasets/fashion-mnist", "PIPEBENCH_FASHION_MNIST_DIR", load_fashion_mnist, \
        NULL, false)                                                                           \
    ROW("synthetic",                                                                           \
        "generated class prototypes plus noise, 1x28x28 and 10 classes by default, "           \
        "deterministic from the seed; with an image model, a stand-in of its dataset",         \
        NULL, NULL, load_synthetic, NULL, false)                                               \
    ROW("cifar10",                                                                             \
        "CIFAR-10 binary batches (cifar-10-binary.tar.gz), 3x32x32, 10 classes, "              \
        "50000/10000; RandomCrop 32 padding 4 + flip (semantics §1.6)",                        \
        "/usr/share/datasets/cifar10", "PIPEBENCH_CIFAR10_DIR", load_cifar10,                  \
        IMAGE("cifar10", 3, 32, 32, 10, PB_AUG_CIFAR, CIFAR_NORM), false)                      \
    ROW("cifar100",                                                                            \
        "CIFAR-100 binary (cifar-100-binary.tar.gz), 3x32x32, 100 fine classes, "              \
        "50000/10000; RandomCrop 32 padding 4 + flip (semantics §1.6)",                        \
        "/usr/share/datasets/cifar100", "PIPEBENCH_CIFAR100_DIR", load_cifar100,               \
        IMAGE("cifar100", 3, 32, 32, 100, PB_AUG_CIFAR, CIFAR_NORM), false)                    \
    ROW("tiny-imagenet",                                                                       \
        "Tiny-ImageNet (tiny-imagenet-200.zip), 3x64x64 JPEGs decoded once into a "            \
        "cache, 200 classes, 100000/10000; RandomResizedCrop + flip (semantics §1.6)",         \
        "/usr/share/datasets/tiny-imagenet", "PIPEBENCH_TINY_IMAGENET_DIR", load_tiny_imagenet, \
        IMAGE("tiny-imagenet", 3, 64, 64, 200, PB_AUG_IMAGENET, IMAGENET_NORM), false)         \
    ROW("imdb",                                                                                \
        "IMDb movie reviews (aclImdb_v1.tar.gz, unpacked), 2 classes, 25000/25000, "           \
        "tokenised and ranked as Keras' imdb.npz, padded or truncated to 200 tokens "          \
        "(semantics §1.6)",                                                                    \
        "/usr/share/datasets/imdb", "PIPEBENCH_IMDB_DIR", load_imdb, NULL, true)               \
    ROW("wmt16-de-en",                                                                         \
        "WMT16 English-German from the MLPerf GNMT preprocessing (BPE 32000, "                 \
        "vocabulary 32320 with <pad> <unk> <s> <\\s>), training pairs of at most "             \
        "50 tokens, newstest2014 for test; source and target ids per sample",                  \
        "/usr/share/datasets/wmt16-de-en", "PIPEBENCH_WMT16_DE_EN_DIR", load_wmt16, NULL, true)

struct dataset_row {
    const char *name, *summary;
    const char *default_dir, *env;
    load_fn *load;
    const struct pb_image_kind *image;
    bool sequence;
};

#define AS_ROW(name, summary, dir, env, load, image, sequence) \
    {name, summary, dir, env, load, image, sequence},
#define AS_NAME(name, summary, dir, env, load, image, sequence) name,

static const struct dataset_row rows[] = {DATASETS(AS_ROW)};
#define NROWS (int)(sizeof rows / sizeof rows[0])

const char *const pb_dataset_names[] = {DATASETS(AS_NAME) NULL};

static const struct dataset_row *find_row(const char *name)
{
    for (int i = 0; i < NROWS; i++)
        if (name && !strcmp(rows[i].name, name))
            return &rows[i];
    return NULL;
}

const char *pb_dataset_summary(const char *name)
{
    const struct dataset_row *r = find_row(name);
    return r ? r->summary : NULL;
}

const char *pb_dataset_default_dir(const char *name)
{
    const struct dataset_row *r = find_row(name);
    return r ? r->default_dir : NULL;
}

const char *pb_dataset_env_var(const char *name)
{
    const struct dataset_row *r = find_row(name);
    return r ? r->env : NULL;
}

bool pb_dataset_image_kind(const char *name, struct pb_image_kind *out)
{
    const struct dataset_row *r = find_row(name);
    if (!r || !r->image)
        return false;
    if (out)
        *out = *r->image;
    return true;
}

bool pb_dataset_is_image(const char *name)
{
    return pb_dataset_image_kind(name, NULL);
}

bool pb_dataset_is_sequence(const char *name)
{
    const struct dataset_row *r = find_row(name);
    return r && r->sequence;
}

const char *pb_dataset_dir(const char *name, const char *data_dir, const char **origin)
{
    const struct dataset_row *r = find_row(name);
    const char *env = r && r->env ? getenv(r->env) : NULL;
    const char *dir = NULL, *from = "the default folder";
    if (data_dir) {
        dir = data_dir;
        from = "--data-dir";
    } else if (env && *env) {
        dir = env;
        from = r->env;
    } else if (r) {
        dir = r->default_dir;
    }
    if (origin)
        *origin = from;
    return dir;
}

int pb_dataset_load(struct pb_dataset *ds, const char *name, const char *data_dir,
                    enum pb_split split, int limit, uint64_t seed, struct pb_err *e)
{
    return pb_dataset_load_opts(ds, name, data_dir, split, limit, seed, NULL, e);
}

int pb_dataset_load_opts(struct pb_dataset *ds, const char *name, const char *data_dir,
                         enum pb_split split, int limit, uint64_t seed,
                         const struct pb_dataset_opts *opts, struct pb_err *e)
{
    memset(ds, 0, sizeof *ds);
    if (limit < 0)
        return pb_err_set(e, "dataset %s: the sample limit must be >= 0 (0 keeps all), got %d",
                          name, limit);
    const struct dataset_row *r = find_row(name);
    if (!r) {
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
    struct load_args a = {.split = split, .limit = limit, .seed = seed, .opts = opts};
    a.src.dir = pb_dataset_dir(name, data_dir, &a.src.origin);
    a.src.env = r->env;
    a.src.default_dir = !data_dir && a.src.dir == r->default_dir;
    a.src.image = r->image;
    const struct dataset_row *like = opts ? find_row(opts->like) : NULL;
    a.like = like ? like->image : NULL;
    if (r->load(ds, &a, e))
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
