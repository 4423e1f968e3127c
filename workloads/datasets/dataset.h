/* workloads/datasets/dataset.h — in-memory datasets, the epoch order and batch gathering.
 * Implements the data conventions of semantics §1.5, §1.6: Fashion-MNIST (IDX) normalisation, the
 * per-(seed, epoch) permutation, `--limit` keeping the first N samples of the file. */
#ifndef PB_DATASET_H
#define PB_DATASET_H

#include <stdbool.h>
#include <stdint.h>

#include "harness/base/err.h"

/* A whole split held on the host, already normalised. */
struct pb_dataset {
    char *name;      /* registry name, e.g. "fashion-mnist" */
    int n;           /* samples */
    int c, h, w;     /* sample shape */
    int nclasses;
    float *x;        /* [n, c, h, w] */
    int32_t *y;      /* [n], each in [0, nclasses) */
};

enum pb_split { PB_SPLIT_TRAIN, PB_SPLIT_TEST };

/* Shape options of generated datasets; fields left 0 take the defaults
 * (1×28×28, 10 classes, 10000 train / 2000 test samples). Files ignore them. */
struct pb_dataset_opts {
    int c, h, w, nclasses, n;
    int parts;   /* what to load: PB_DATA_INPUTS | PB_DATA_LABELS; 0 = both */
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

/* Loads `split` of dataset `name` into ds (zeroed or finished). data_dir NULL = the
 * dataset's default folder. limit > 0 keeps the first `limit` samples of the file
 * (more than the file holds is an error), 0 keeps all. seed feeds generated datasets.
 * Returns 0, or -1 with a message (unknown name, missing or corrupt file). */
int pb_dataset_load(struct pb_dataset *ds, const char *name, const char *data_dir,
                    enum pb_split split, int limit, uint64_t seed, struct pb_err *e);
/* As pb_dataset_load with shape options for generated datasets (opts NULL = defaults). */
int pb_dataset_load_opts(struct pb_dataset *ds, const char *name, const char *data_dir,
                         enum pb_split split, int limit, uint64_t seed,
                         const struct pb_dataset_opts *opts, struct pb_err *e);

/* Frees ds's memory and zeroes it; safe on a zeroed struct. */
void pb_dataset_finish(struct pb_dataset *ds);

/* The registry's loaders (pb_dataset_load_opts calls them). Fashion-MNIST reads
 * {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] from data_dir (NULL = default),
 * loading only `parts` (PB_DATA_*); the headers of both files are checked. */
int pb_dataset_fashion_mnist_parts(struct pb_dataset *ds, const char *data_dir,
                                   enum pb_split split, int limit, int parts, struct pb_err *e);
/* Class prototypes plus Gaussian noise, a pure function of (seed, split, sample). */
int pb_dataset_synthetic(struct pb_dataset *ds, enum pb_split split, int limit, uint64_t seed,
                         const struct pb_dataset_opts *opts, struct pb_err *e);

/* Pixel normalisation of Fashion-MNIST / MNIST-format data (semantics §1.6). */
#define PB_FMNIST_MEAN 0.2860f
#define PB_FMNIST_STD 0.3530f

/* The sample order of an epoch: order[i] for i < n. Identity when !shuffle, else
 * the Fisher–Yates permutation keyed by (seed, epoch): for i = n-1 … 1, swap i with
 * pb_rng_below(pb_rng_key(PB_RNG_SHUFFLE, seed, epoch, 0, 0), i, i + 1). */
void pb_epoch_order(uint64_t seed, int epoch, int n, bool shuffle, int32_t *order);

/* Copies samples order[first .. first+count) (order NULL = file order) into
 * x [count, c, h, w] and y [count]; x or y may be NULL (a stage that needs only one),
 * and must be when that part was not loaded. */
void pb_dataset_gather(const struct pb_dataset *ds, const int32_t *order, int first, int count,
                       float *x, int32_t *y);

#endif
