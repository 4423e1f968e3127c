/* workloads/datasets/dataset.c — the dataset registry, the epoch order and gathering.
 * The epoch order is semantics §1.5's permutation drawn from (seed, epoch); a micro-batch is
 * a contiguous slice of it, gathered here into caller memory. */
#include "workloads/datasets/dataset.h"

#include <string.h>

#include "harness/base/rng.h"

struct dataset_kind {
    const char *name, *summary;
    const char *default_dir;
};

static const struct dataset_kind kinds[] = {
    {"fashion-mnist", "Zalando Fashion-MNIST, 1x28x28 grey images, 10 classes, 60000/10000 "
                      "(Debian dataset-fashion-mnist)",
     "/usr/share/datasets/fashion-mnist"},
    {"synthetic", "generated class prototypes plus noise, 1x28x28 and 10 classes by default, "
                  "deterministic from the seed", NULL},
};
#define NKINDS (int)(sizeof kinds / sizeof kinds[0])

const char *const pb_dataset_names[] = {"fashion-mnist", "synthetic", NULL};

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
    if (name && !strcmp(name, "fashion-mnist"))
        return pb_dataset_fashion_mnist_parts(ds, data_dir, split, limit,
                                              opts && opts->parts ? opts->parts : PB_DATA_ALL, e);
    if (name && !strcmp(name, "synthetic"))
        return pb_dataset_synthetic(ds, split, limit, seed, opts, e);
    char list[256] = "";
    for (int i = 0; pb_dataset_names[i]; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", pb_dataset_names[i]);
    }
    return pb_err_set(e, "unknown dataset '%s'; valid datasets: %s", name ? name : "(none)",
                      list);
}

void pb_dataset_finish(struct pb_dataset *ds)
{
    free(ds->name);
    free(ds->x);
    free(ds->y);
    memset(ds, 0, sizeof *ds);
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

void pb_dataset_gather(const struct pb_dataset *ds, const int32_t *order, int first, int count,
                       float *x, int32_t *y)
{
    PB_CHECK(first >= 0 && count >= 0 && first + count <= ds->n);
    size_t per = (size_t)ds->c * ds->h * ds->w;
    for (int i = 0; i < count; i++) {
        int s = order ? order[first + i] : first + i;
        PB_CHECK(s >= 0 && s < ds->n);
        PB_CHECK((!x || ds->x) && (!y || ds->y));
        if (x)
            memcpy(x + (size_t)i * per, ds->x + (size_t)s * per, per * sizeof *x);
        if (y)
            y[i] = ds->y[s];
    }
}
