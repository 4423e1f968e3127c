/* workloads/datasets/dataset.h — datasets on the host, the epoch order and batch gathering.
 * Implements the data conventions of semantics §1.5, §1.6: Fashion-MNIST (IDX) and the
 * generic synthetic data held as normalised floats; CIFAR-10/100 and Tiny-ImageNet held
 * as uint8 images (Tiny-ImageNet mapped from a decoded cache), normalised and augmented
 * when a batch is gathered; the per-(seed, epoch) permutation; `--limit` keeping the
 * first N samples of the file. */
#ifndef PB_DATASET_H
#define PB_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/base/err.h"
#include "workloads/datasets/augment.h"

/* One split on the host. c, h, w are the shape of the samples pb_dataset_gather
 * produces; an image dataset stores another ([sc, sh, sw]) and transforms on the way. */
struct pb_dataset {
    char *name;      /* registry name, e.g. "fashion-mnist" */
    int n;           /* samples */
    int c, h, w;     /* gathered sample shape */
    int nclasses;
    float *x;        /* float datasets: [n, c, h, w], normalised; NULL for image datasets */
    int32_t *y;      /* [n], each in [0, nclasses) */
    /* sequence datasets (imdb, the synthetic stand-in of one): samples [c = T, 1, 1] of
     * token ids as floats, padded with 0 at the end; len [n] the tokens before the
     * padding, in [1, T] (loaded with the labels: the last stage's masked mean reads
     * it); vocab the ids' bound. NULL and 0 elsewhere. */
    int32_t *len;
    int vocab;
    /* translation datasets (wmt16-de-en, its stand-in; wmt16.c): samples [c = 2T, 1, 1],
     * the source ids then the target ids, each side framed BOS … EOS and padded with
     * PB_WMT16_PAD; len [n] the source lengths, y [n] the target lengths (nclasses
     * T + 1), both loaded with either part; tgt [n, T] the target ids, loaded with the
     * labels; tgt_steps T. NULL and 0 elsewhere. */
    int32_t *tgt;
    int tgt_steps;
    /* image datasets (semantics §1.6) */
    const uint8_t *pix;  /* [n, sc, sh, sw] stored pixels; NULL for float datasets */
    int sc, sh, sw;      /* stored sample shape */
    struct pb_aug aug;   /* transforms and normalisation; family PB_AUG_NONE for floats */
    uint8_t *pix_owned;  /* pix when it was allocated here */
    void *map;           /* pix's mapped cache file, else NULL */
    size_t map_len;
    long decoded;        /* images this load decoded from their files (0: all from a cache) */
    char *cache_path;    /* the cache file read or written, NULL when none */
};

enum pb_split { PB_SPLIT_TRAIN, PB_SPLIT_TEST };

/* Options of a load; fields left 0 take the defaults. c, h, w, nclasses, n shape the
 * generic synthetic data (1×28×28, 10 classes, 10000 train / 2000 test samples); files
 * ignore them. */
struct pb_dataset_opts {
    int c, h, w, nclasses, n;
    int parts;         /* what to load: PB_DATA_INPUTS | PB_DATA_LABELS; 0 = both */
    int crop;          /* S, the side of the gathered samples; 0 = the dataset's native side
                          (32 CIFAR, 64 Tiny-ImageNet); float datasets take only 0 or their own */
    bool no_flip;      /* no horizontal flip in training (inceptionv3) */
    const char *like;  /* synthetic: a stand-in with this image dataset's stored shape,
                          class count, normalisation and transforms, or of the sequence
                          dataset imdb (NULL: generic) */
    float noise;       /* synthetic: the noise as a multiple of its calibrated level (the
                          nearest prototype right about 95% of the time); 0 = 1 */
    int vocab, steps;  /* sequence datasets: token ids kept below vocab (others become the
                          OOV id 2), sequences padded or truncated at the end to steps
                          tokens; 0 = 10 000 and 200 (the paper's) */
};

/* Parts of a dataset: a pipeline's first stage needs the inputs only, its last stage
 * the labels only (the part not loaded stays NULL; counts and shapes are always set). */
enum { PB_DATA_INPUTS = 1, PB_DATA_LABELS = 2, PB_DATA_ALL = 3 };

/* Registered dataset names (NULL-terminated) for `pipebench list`. */
extern const char *const pb_dataset_names[];
/* One-line summary of a registered dataset, NULL for an unknown name. */
const char *pb_dataset_summary(const char *name);

/* Default folder of the file-based dataset `name` (NULL for generated ones). */
const char *pb_dataset_default_dir(const char *name);
/* The environment variable naming its folder (PIPEBENCH_CIFAR10_DIR, ...), NULL for
 * generated ones. */
const char *pb_dataset_env_var(const char *name);
/* Whether `name` is an image dataset (uint8 samples, transforms; `like` accepts it). */
bool pb_dataset_is_image(const char *name);

/* The folder a load of `name` reads: data_dir, else $PIPEBENCH_<NAME>_DIR when set and
 * not empty, else the default folder. *origin (when not NULL) says which, for
 * messages: "--data-dir", the variable's name or "the default folder". */
const char *pb_dataset_dir(const char *name, const char *data_dir, const char **origin);

/* Loads `split` of dataset `name` into ds (zeroed or finished). data_dir NULL = the
 * folder pb_dataset_dir names. limit > 0 keeps the first `limit` samples of the file
 * (more than the file holds is an error) and reads or decodes no more than that where
 * the format allows; 0 keeps all. seed feeds generated datasets.
 * Returns 0, or -1 with a message (unknown name, missing or corrupt file). */
int pb_dataset_load(struct pb_dataset *ds, const char *name, const char *data_dir,
                    enum pb_split split, int limit, uint64_t seed, struct pb_err *e);
/* As pb_dataset_load with options (opts NULL = defaults). */
int pb_dataset_load_opts(struct pb_dataset *ds, const char *name, const char *data_dir,
                         enum pb_split split, int limit, uint64_t seed,
                         const struct pb_dataset_opts *opts, struct pb_err *e);

/* Frees ds's memory and unmaps its cache; zeroes it; safe on a zeroed struct. */
void pb_dataset_finish(struct pb_dataset *ds);

/* Whether ds holds its inputs (floats or pixels). */
bool pb_dataset_has_inputs(const struct pb_dataset *ds);
/* Host bytes of the inputs and of the labels ds holds (mapped pixels count too). */
size_t pb_dataset_input_bytes(const struct pb_dataset *ds);
size_t pb_dataset_label_bytes(const struct pb_dataset *ds);

struct pb_image_kind;

/* Where a loader reads its files and what it loads, as the registry resolved them: the
 * loaders look nothing up in the registry (registry.c calls them, never the reverse). */
struct pb_dataset_source {
    const char *dir;                    /* the folder */
    const char *origin;                 /* where dir came from, for messages: "--data-dir",
                                           the variable's name or "the default folder" */
    const char *env;                    /* the variable that moves the folder (messages) */
    bool default_dir;                   /* dir is the row's default (no flag, no variable) */
    const struct pb_image_kind *image;  /* an image dataset's kind, else NULL */
};

/* The registry's loaders (pb_dataset_load_opts calls them with the resolved source).
 * Fashion-MNIST reads {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] from dir (whose
 * messages name the Debian package when it is the default folder), loading only
 * `parts` (PB_DATA_*); the headers of both files are checked. */
int pb_dataset_fashion_mnist_parts(struct pb_dataset *ds, const char *dir, bool default_dir,
                                   enum pb_split split, int limit, int parts, struct pb_err *e);
/* Class prototypes plus Gaussian noise, a pure function of (seed, split, sample); with
 * opts->like an image stand-in stored as uint8 (semantics §1.6) of like_kind, the kind
 * of the dataset opts->like names (NULL: it names none, which is refused). */
int pb_dataset_synthetic(struct pb_dataset *ds, enum pb_split split, int limit, uint64_t seed,
                         const struct pb_dataset_opts *opts, const struct pb_image_kind *like_kind,
                         struct pb_err *e);
/* CIFAR-10 or CIFAR-100 (src->image's class count: 10 or 100) binary batches in src->dir
 * or in its cifar-10-batches-bin/ or cifar-100-binary/ folder. */
int pb_dataset_cifar(struct pb_dataset *ds, const struct pb_dataset_source *src,
                     enum pb_split split, int limit, const struct pb_dataset_opts *opts,
                     struct pb_err *e);
/* Tiny-ImageNet's tiny-imagenet-200/ tree (src->dir itself or src->dir/tiny-imagenet-200),
 * its JPEGs decoded once into a uint8 cache file and mapped after. */
int pb_dataset_tiny_imagenet(struct pb_dataset *ds, const struct pb_dataset_source *src,
                             enum pb_split split, int limit, const struct pb_dataset_opts *opts,
                             struct pb_err *e);

/* Whether `name` is a sequence dataset (token ids and lengths; `like` accepts it):
 * imdb and wmt16-de-en. */
bool pb_dataset_is_sequence(const char *name);
/* The synthetic stand-in of imdb: 2 classes, sequences of opts' steps tokens below
 * opts' vocab (semantics §1.6). */
int pb_dataset_synthetic_seq(struct pb_dataset *ds, enum pb_split split, int limit, uint64_t seed,
                             const struct pb_dataset_opts *opts, struct pb_err *e);
/* IMDb from dir: its imdb.npz when there is one, else (dir or its aclImdb/ folder) the raw
 * aclImdb tree, tokenised and ranked as
 * Keras' imdb.npz (semantics §1.6); origin as pb_dataset_dir's. */
int pb_dataset_imdb(struct pb_dataset *ds, const char *dir, const char *origin,
                    enum pb_split split, int limit, const struct pb_dataset_opts *opts,
                    struct pb_err *e);
/* IMDb from Keras' imdb.npz at path (pb_dataset_imdb's choice when dir holds one): the
 * same ids, lengths and sample order as the aclImdb tree gives (imdb_npz.c). */
int pb_dataset_imdb_npz(struct pb_dataset *ds, const char *path, enum pb_split split, int limit,
                        const struct pb_dataset_opts *opts, struct pb_err *e);

/* The special ids of wmt16-de-en's vocabulary (the MLPerf GNMT reference's order) and
 * its size: vocab.bpe.32000's 32316 tokens after them, padded to a multiple of 8. */
enum { PB_WMT16_PAD = 0, PB_WMT16_UNK = 1, PB_WMT16_BOS = 2, PB_WMT16_EOS = 3 };
#define PB_WMT16_VOCAB 32320
/* WMT16 En→De from the MLPerf GNMT preprocessing files in dir (or its wmt16_de_en/
 * folder): training pairs of at most opts' steps tokens a side (50 by default), all
 * test pairs (newstest2014) cut to it; the layout above (wmt16.c). */
int pb_dataset_wmt16(struct pb_dataset *ds, const char *dir, const char *origin,
                     enum pb_split split, int limit, const struct pb_dataset_opts *opts,
                     struct pb_err *e);
/* The synthetic stand-in of wmt16-de-en: its layout, opts' vocab (32320 by default) and
 * steps, a like length distribution, a learnable translation (synthetic_wmt16.c). */
int pb_dataset_synthetic_wmt16(struct pb_dataset *ds, enum pb_split split, int limit,
                               uint64_t seed, const struct pb_dataset_opts *opts,
                               struct pb_err *e);
/* A translation dataset's epoch order in length buckets of `width` tokens, batches of
 * `batch` samples shuffled whole (buckets.c); ds->len and ds->y must be loaded. */
void pb_dataset_bucket_order(const struct pb_dataset *ds, uint64_t seed, int epoch, int batch,
                             int width, int32_t *order);
/* Writes the target ids of samples order[first .. first+count) (order NULL = file
 * order) into tgt [count, tgt_steps]; ds->tgt must be loaded. Thread-safe. */
void pb_dataset_gather_targets(const struct pb_dataset *ds, const int32_t *order, int first,
                               int count, int32_t *tgt);

/* Teacher forcing's labels of samples order[first .. first+count) into labels
 * [count, tgt_steps]: step t's label is target id t + 1 (the decoder reads id t:
 * BOS w1 … predicts w1 … EOS), PB_WMT16_PAD at the last step; ds->tgt must be loaded.
 * Thread-safe. */
void pb_dataset_gather_next_tokens(const struct pb_dataset *ds, const int32_t *order, int first,
                                   int count, int32_t *labels);

/* The stored shape, class count, normalisation and transform family of image dataset
 * `name` (false for another name). */
struct pb_image_kind {
    const char *name;
    int c, h, w, nclasses;
    enum pb_aug_family family;
    float mean[3], std[3];
};
bool pb_dataset_image_kind(const char *name, struct pb_image_kind *out);
/* For the loaders: ds holds n stored images of `k`'s shape (pix or pix_owned set, or
 * neither when only the labels were loaded); sets the transforms for opts' crop and
 * flip and the gathered shape. -1 with a message for a side it cannot take. */
int pb_dataset_set_image(struct pb_dataset *ds, const struct pb_image_kind *k,
                         const struct pb_dataset_opts *opts, struct pb_err *e);

/* The advice every loader gives when a sample limit exceeds its split. */
#define PB_LIMIT_ADVICE "; lower --limit-train or --limit-val (0 keeps all)"

/* Pixel normalisation of Fashion-MNIST / MNIST-format data (semantics §1.6). */
#define PB_FMNIST_MEAN 0.2860f
#define PB_FMNIST_STD 0.3530f

/* The sample order of an epoch: order[i] for i < n. Identity when !shuffle, else
 * the Fisher–Yates permutation keyed by (seed, epoch): for i = n-1 … 1, swap i with
 * pb_rng_below(pb_rng_key(PB_RNG_SHUFFLE, seed, epoch, 0, 0), i, i + 1). */
void pb_epoch_order(uint64_t seed, int epoch, int n, bool shuffle, int32_t *order);
/* The training order of an epoch of ds: a translation dataset's (tgt_steps > 0) in length
 * buckets of PB_BUCKET_WIDTH tokens cut into batches of `batch` samples (the samples of
 * one update, so every schedule of a comparison sees the same batches), as the GNMT
 * reference's bucketing sampler; any other dataset's pb_epoch_order. With shuffle off,
 * the file order for every dataset. */
#define PB_BUCKET_WIDTH 10   /* 5 buckets over the 50-token training limit */
void pb_dataset_epoch_order(const struct pb_dataset *ds, uint64_t seed, int epoch, bool shuffle,
                            int batch, int32_t *order);

/* What a gather's random transforms are keyed by: sample s of a training gather takes
 * the parameters drawn from pb_rng_key(PB_RNG_AUGMENT, seed, epoch, s, 0); a
 * validation gather (train false) takes the deterministic transform. Float datasets
 * ignore it. */
struct pb_data_key {
    uint64_t seed;
    int epoch;
    bool train;
};

/* Writes samples order[first .. first+count) (order NULL = file order) into
 * x [count, c, h, w] (transformed as key says) and y [count]; x or y may be NULL (a
 * stage that needs only one), and must be when that part was not loaded. Thread-safe:
 * it reads ds only. */
void pb_dataset_gather(const struct pb_dataset *ds, struct pb_data_key key, const int32_t *order,
                       int first, int count, float *x, int32_t *y);

/* Writes the lengths of samples order[first .. first+count) (order NULL = file order)
 * into len [count]; ds->len must be loaded. Thread-safe. */
void pb_dataset_gather_lengths(const struct pb_dataset *ds, const int32_t *order, int first,
                               int count, int32_t *len);

#endif
