/* workloads/datasets/cifar.c — CIFAR-10 and CIFAR-100 in their binary distributions
 * (semantics §1.6). A record is the label byte (CIFAR-100: the coarse, then the fine
 * label, which is the class) and 3072 pixel bytes: the R, G and B planes of 32×32. Every
 * file must hold whole records; a run keeping N samples reads the first N records of the
 * split's files in order and no more. Pixels stay uint8 [n, 3, 32, 32]. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/base/in_file.h"
#include "workloads/datasets/dataset.h"

#define PIXELS 3072
#define CHUNK_RECORDS 1024
#define KRIZ_URL "https://www.cs.toronto.edu/~kriz/"

struct cifar_format {
    const char *name, *folder, *archive;
    int classes, label_bytes;      /* CIFAR-100: coarse and fine */
    const char *train[5];
    int ntrain;
    const char *test;
};

static const struct cifar_format formats[] = {
    {"cifar10", "cifar-10-batches-bin", "cifar-10-binary.tar.gz", 10, 1,
     {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
      "data_batch_5.bin"}, 5, "test_batch.bin"},
    {"cifar100", "cifar-100-binary", "cifar-100-binary.tar.gz", 100, 2, {"train.bin"}, 1,
     "test.bin"},
};

/* The folder holding the split's files: dir itself or dir/<archive folder>. */
static int find_folder(const struct cifar_format *f, const struct pb_dataset_source *src,
                       const char *first, char *out, size_t cap, struct pb_err *e)
{
    struct stat st;
    const char *dir = src->dir, *origin = src->origin, *env = src->env;
    snprintf(out, cap, "%s/%s", dir, first);
    if (stat(out, &st) == 0) {
        snprintf(out, cap, "%s", dir);
        return 0;
    }
    snprintf(out, cap, "%s/%s/%s", dir, f->folder, first);
    if (stat(out, &st) == 0) {
        snprintf(out, cap, "%s/%s", dir, f->folder);
        return 0;
    }
    return pb_err_set(e, "%s: cannot find %s in %s nor in %s/%s (the folder of %s); download %s "
                         "from " KRIZ_URL " and unpack it there (tar xzf %s -C %s), or name the "
                         "folder holding %s/ or its files with --data-dir or %s",
                      f->name, first, dir, dir, f->folder, origin, f->archive, f->archive, dir,
                      f->folder, env);
}

/* Records in each of the split's files: the sizes must be whole numbers of records. */
static int count_records(const struct cifar_format *f, const char *folder, const char *const *files,
                         int nfiles, long long *counts, long long *total, struct pb_err *e)
{
    long long rec = f->label_bytes + PIXELS;
    *total = 0;
    for (int i = 0; i < nfiles; i++) {
        char path[4096 + 64];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", folder, files[i]);
        if (stat(path, &st) != 0)
            return pb_err_set(e, "%s: %s is missing (%s); the folder holds %s: unpack %s again",
                              f->name, path, strerror(errno), files[0], f->archive);
        if (!S_ISREG(st.st_mode))
            return pb_err_set(e, "%s: %s is %s, not a batch file; move it away and unpack %s "
                                 "again", f->name, path, S_ISDIR(st.st_mode) ? "a folder"
                                                         : "not a regular file", f->archive);
        long long size = (long long)st.st_size;
        if (size == 0 || size % rec != 0)
            return pb_err_set(e, "%s: %s is %lld bytes, not a whole number of %lld-byte records: "
                                 "it is truncated (record %lld has %lld of its bytes) or not a %s "
                                 "file; download %s again", f->name, path, size, rec, size / rec,
                              size % rec, f->name, f->archive);
        counts[i] = size / rec;
        *total += counts[i];
    }
    return 0;
}

/* Reads `want` records of path into pix (NULL: not kept) and y (NULL: not kept), from
 * record `base` of the split on; labels are checked. */
static int read_records(const struct cifar_format *f, const char *path, long long want,
                        long long base, uint8_t *pix, int32_t *y, unsigned char *buf,
                        struct pb_err *e)
{
    size_t rec = (size_t)f->label_bytes + PIXELS;
    struct pb_err why;
    FILE *in = pb_in_file_open(path, 0, &why);
    if (!in && !errno)
        return pb_err_set(e, "%s: %s", f->name, why.msg);
    if (!in)
        return pb_err_set(e, "%s: cannot open %s: %s", f->name, path, strerror(errno));
    int rc = 0;
    for (long long done = 0; done < want && !rc;) {
        size_t n = want - done < CHUNK_RECORDS ? (size_t)(want - done) : CHUNK_RECORDS;
        if (fread(buf, rec, n, in) != n) {
            rc = pb_err_set(e, "%s: %s: reading record %lld failed (%s); the file changed while "
                               "it was read, or the disk failed", f->name, path, done,
                            ferror(in) ? strerror(errno) : "end of file");
            break;
        }
        for (size_t r = 0; r < n && !rc; r++) {
            const unsigned char *p = buf + r * rec;
            long long at = done + (long long)r;
            int label = p[f->label_bytes - 1];
            if (f->label_bytes == 2 && p[0] >= 20)
                rc = pb_err_set(e, "%s: %s: record %lld (byte %lld): coarse label %d is not below "
                                   "20; the file is corrupt or not a CIFAR-100 file: download %s "
                                   "again", f->name, path, at, at * (long long)rec, p[0],
                                f->archive);
            else if (label >= f->classes)
                rc = pb_err_set(e, "%s: %s: record %lld (byte %lld): label %d is not below %d; the "
                                   "file is corrupt or not a %s file: download %s again", f->name,
                                path, at, at * (long long)rec, label, f->classes, f->name,
                                f->archive);
            if (pix)
                memcpy(pix + (size_t)(base + at) * PIXELS, p + f->label_bytes, PIXELS);
            if (y)
                y[base + at] = label;
        }
        done += (long long)n;
    }
    fclose(in);
    return rc;
}

int pb_dataset_cifar(struct pb_dataset *ds, const struct pb_dataset_source *src,
                     enum pb_split split, int limit, const struct pb_dataset_opts *opts,
                     struct pb_err *e)
{
    memset(ds, 0, sizeof *ds);
    int classes = src->image->nclasses;
    const struct cifar_format *f = &formats[classes == 10 ? 0 : 1];
    const char *const *files = split == PB_SPLIT_TRAIN ? f->train : &f->test;
    int nfiles = split == PB_SPLIT_TRAIN ? f->ntrain : 1;
    int parts = opts && opts->parts ? opts->parts : PB_DATA_ALL;
    char folder[4096];
    long long counts[5], total;
    if (find_folder(f, src, files[0], folder, sizeof folder, e) ||
        count_records(f, folder, files, nfiles, counts, &total, e))
        return -1;
    if (limit > total)
        return pb_err_set(e, "%s: the sample limit %d is more than the %lld samples of the %s "
                             "split in %s" PB_LIMIT_ADVICE, f->name, limit, total,
                          split == PB_SPLIT_TRAIN ? "training" : "test", folder);
    long long keep = limit > 0 ? limit : total;
    if (parts & PB_DATA_INPUTS) {
        ds->pix_owned = pb_malloc_or_err((size_t)keep * PIXELS, "the CIFAR images", e);
        if (!ds->pix_owned)
            return pb_err_prefix(e, "%s (use --limit-train / --limit-val): ", f->name);
    }
    if (parts & PB_DATA_LABELS)
        ds->y = pb_xmalloc((size_t)keep * sizeof *ds->y + 1);
    unsigned char *buf = pb_xmalloc(CHUNK_RECORDS * ((size_t)f->label_bytes + PIXELS));
    int rc = 0;
    long long base = 0;
    for (int i = 0; i < nfiles && base < keep && !rc; i++) {
        char path[4096 + 64];
        snprintf(path, sizeof path, "%s/%s", folder, files[i]);
        long long want = keep - base < counts[i] ? keep - base : counts[i];
        rc = read_records(f, path, want, base, ds->pix_owned, ds->y, buf, e);
        base += want;
    }
    free(buf);
    ds->name = pb_xstrdup(f->name);
    ds->n = (int)keep;
    ds->nclasses = classes;
    if (rc || pb_dataset_set_image(ds, src->image, opts, e)) {
        pb_dataset_finish(ds);
        return -1;
    }
    return 0;
}
