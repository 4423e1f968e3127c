/* workloads/datasets/idx.c — MNIST-format IDX files (gzip or plain) and Fashion-MNIST.
 * Checks every header field (and the exact data length when the whole file is read),
 * then normalises pixels as semantics §1.6 says: x/255, then (x - 0.2860) / 0.3530, in
 * float32 as torchvision does. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "harness/base/in_file.h"
#include "workloads/datasets/dataset.h"

#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u
#define FMNIST_PACKAGE "apt-get install dataset-fashion-mnist"
#define CHUNK (1u << 20)

struct idx_file {
    gzFile f;
    const char *path;
    int ndims;
    uint32_t dims[3];
};

static int gz_failed(struct idx_file *in, const char *what, struct pb_err *e)
{
    int code = Z_OK;
    const char *msg = gzerror(in->f, &code);
    if (code == Z_ERRNO)
        msg = strerror(errno);
    size_t len = strlen(in->path);
    if (!strncmp(msg, in->path, len) && !strncmp(msg + len, ": ", 2))
        msg += len + 2;   /* zlib prefixes the path, which the message already names */
    return pb_err_set(e, "%s: %s: %s (the file is damaged; reinstall or re-download it)",
                      in->path, what, msg);
}

static int open_idx(struct idx_file *in, const char *path, uint32_t magic, int ndims,
                    struct pb_err *e)
{
    in->path = path;
    in->ndims = ndims;
    struct pb_err why;
    FILE *raw = pb_in_file_open(path, 0, &why);   /* a folder or FIFO: refused, not read */
    if (!raw && !errno)
        return pb_err_set(e, "%s; reinstall or re-download the dataset", why.msg);
    if (!raw)
        return pb_err_set(e, "cannot open %s: %s", path, strerror(errno));
    int fd = dup(fileno(raw));
    fclose(raw);
    in->f = fd >= 0 ? gzdopen(fd, "rb") : NULL;
    if (!in->f) {
        if (fd >= 0)
            close(fd);
        return pb_err_set(e, "cannot open %s: %s", path, strerror(errno ? errno : ENOMEM));
    }
    gzbuffer(in->f, CHUNK);
    unsigned char hdr[16];
    size_t len = 4 * (size_t)(ndims + 1);
    int got = gzread(in->f, hdr, (unsigned)len);
    if (got < 0)
        return gz_failed(in, "reading the IDX header", e);
    if ((size_t)got < len)
        return pb_err_set(e, "%s: the file ends inside its %zu-byte IDX header (truncated, or "
                          "not an IDX file)", path, len);
    uint32_t m = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    if (m != magic)
        return pb_err_set(e, "%s: bad magic number 0x%08x, expected 0x%08x (an IDX file of "
                          "unsigned bytes with %d dimension%s); is this the right file?",
                          path, m, magic, ndims, ndims > 1 ? "s" : "");
    for (int d = 0; d < ndims; d++) {
        const unsigned char *p = hdr + 4 + 4 * d;
        in->dims[d] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (in->dims[d] == 0 || in->dims[d] > INT_MAX)
            return pb_err_set(e, "%s: header dimension %d is %u; it must be between 1 and %d "
                              "(corrupt header)", path, d, in->dims[d], INT_MAX);
    }
    return 0;
}

/* The file's length against its header's, for a read of a prefix only (the whole read
 * meets the end and zlib's CRC and length checks): a plain file's size, a gzip file's
 * trailer (ISIZE, the uncompressed length mod 2^32). Damage inside the compressed bytes
 * not read is not seen (run --help says so). */
static int check_length(struct idx_file *in, size_t total, struct pb_err *e)
{
    size_t want = 4 * (size_t)(in->ndims + 1) + total;
    FILE *f = fopen(in->path, "rb");
    if (!f)
        return pb_err_set(e, "cannot open %s: %s", in->path, strerror(errno));
    unsigned char t[4];
    int rc = 0;
    bool plain = gzdirect(in->f);
    long end = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    if (plain && end >= 0 && (unsigned long)end != want)
        rc = pb_err_set(e, "%s: the file is %ld bytes, its header declares %zu (the file is damaged or "
                           "truncated; reinstall or re-download it)", in->path, end, want);
    else if (!plain && (end < 18 || fseek(f, -4, SEEK_END) || fread(t, 1, 4, f) != 4 ||
                        ((uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
                         (uint32_t)t[3] << 24) != (uint32_t)want))
        rc = pb_err_set(e, "%s: the gzip trailer does not give the %zu bytes the header "
                           "declares (the file is damaged or truncated; reinstall or re-download it)",
                        in->path, want);
    fclose(f);
    return rc;
}

/* Reads the first `need` of the `total` bytes the header declares into *out. The whole
 * body (need == total) must be exactly that long; a prefix (a run that keeps fewer
 * samples) stops decoding there, so a tiny run does not gunzip the whole file, but the
 * file's length is checked against its trailer first. The buffer grows with the data
 * read, so a corrupt header cannot demand a huge block. */
static int read_body(struct idx_file *in, size_t total, size_t need, const char *unit,
                     unsigned char **out, struct pb_err *e)
{
    PB_CHECK(need <= total);
    if (need < total && check_length(in, total, e))
        return -1;
    size_t cap = need < CHUNK ? need : CHUNK, done = 0;
    unsigned char *buf = pb_malloc_or_err(cap, unit, e);
    if (!buf)
        return pb_err_prefix(e, "%s: ", in->path);
    int rc = 0;
    while (done < need) {
        if (done == cap) {
            cap = need - cap < cap ? need : 2 * cap;
            unsigned char *b = realloc(buf, cap);
            if (!b) {
                rc = pb_err_set(e, "%s: out of host memory reading %zu bytes of %s; use "
                                   "--limit-train / --limit-val", in->path, cap, unit);
                break;
            }
            buf = b;
        }
        size_t want = cap - done < CHUNK ? cap - done : CHUNK;
        int got = gzread(in->f, buf + done, (unsigned)want);
        if (got < 0) {
            rc = gz_failed(in, "reading the data", e);
            break;
        }
        if (got == 0) {
            int code = Z_OK;
            gzerror(in->f, &code);
            if (code != Z_OK) {
                rc = gz_failed(in, "reading the data", e);
                break;
            }
            rc = pb_err_set(e, "%s: truncated: the header declares %zu bytes of %s but only %zu "
                            "follow; reinstall or re-download the file", in->path, total, unit,
                            done);
            break;
        }
        done += (size_t)got;
    }
    if (rc == 0 && need == total) {
        unsigned char extra;
        int got = gzread(in->f, &extra, 1);
        if (got < 0)
            rc = gz_failed(in, "reading past the data", e);
        else if (got > 0)
            rc = pb_err_set(e, "%s: corrupt: extra bytes after the %zu bytes of %s the header "
                            "declares", in->path, total, unit);
    }
    if (rc)
        free(buf);
    else
        *out = buf;
    return rc;
}

/* An MNIST-format IDX pair (images magic 0x803, labels magic 0x801; gzip or plain),
 * loading only `parts` (PB_DATA_*). expect_h/expect_w > 0 demand that image size, 0
 * accepts any positive size; labels must be < nclasses. Pixels are normalised as semantics §1.6
 * says; ds->name = name. */
static int load_idx_pair(struct pb_dataset *ds, const char *name, const char *images_path,
                         const char *labels_path, int expect_h, int expect_w, int nclasses,
                         int limit, int parts, struct pb_err *e)
{
    bool want_x = parts & PB_DATA_INPUTS, want_y = parts & PB_DATA_LABELS;
    memset(ds, 0, sizeof *ds);
    struct idx_file im = {0}, lb = {0};
    unsigned char *pixels = NULL, *labels = NULL;
    int rc = -1;
    if (open_idx(&im, images_path, IDX_IMAGES_MAGIC, 3, e) ||
        open_idx(&lb, labels_path, IDX_LABELS_MAGIC, 1, e))
        goto out;
    int n = (int)im.dims[0], h = (int)im.dims[1], w = (int)im.dims[2];
    if ((expect_h > 0 && h != expect_h) || (expect_w > 0 && w != expect_w)) {
        pb_err_set(e, "%s: images are %dx%d, but %s images are %dx%d (wrong or corrupt file)",
                   images_path, h, w, name, expect_h, expect_w);
        goto out;
    }
    if ((int)lb.dims[0] != n) {
        pb_err_set(e, "%s holds %d images but %s holds %u labels; the two files must come "
                   "from the same split", images_path, n, labels_path, lb.dims[0]);
        goto out;
    }
    if (limit > n) {
        pb_err_set(e, "%s: the sample limit %d is more than the %d samples the file holds"
                   PB_LIMIT_ADVICE, images_path, limit, n);
        goto out;
    }
    int keep = limit > 0 ? limit : n;
    size_t per = (size_t)h * w;
    if (per > SIZE_MAX / 4 / (size_t)n) {
        pb_err_set(e, "%s: %d images of %dx%d do not fit in memory (corrupt header)",
                   images_path, n, h, w);
        goto out;
    }
    if ((want_x && read_body(&im, (size_t)n * per, (size_t)keep * per, "pixels", &pixels, e)) ||
        (want_y && read_body(&lb, (size_t)n, (size_t)keep, "labels", &labels, e)))
        goto out;
    for (int i = 0; want_y && i < keep; i++)
        if (labels[i] >= nclasses) {
            pb_err_set(e, "%s: label %d of sample %d is not below %d (corrupt file)",
                       labels_path, labels[i], i, nclasses);
            goto out;
        }
    float table[256];
    for (int v = 0; v < 256; v++)
        table[v] = ((float)v / 255.0f - PB_FMNIST_MEAN) / PB_FMNIST_STD;
    if (want_x) {
        ds->x = pb_malloc_or_err((size_t)keep * per * sizeof *ds->x, "the images", e);
        if (!ds->x) {
            pb_err_prefix(e, "%s (use --limit-train / --limit-val): ", name);
            goto out;
        }
        for (size_t i = 0; i < (size_t)keep * per; i++)
            ds->x[i] = table[pixels[i]];
    }
    if (want_y) {
        ds->y = pb_malloc_or_err((size_t)keep * sizeof *ds->y, "the labels", e);
        if (!ds->y) {
            pb_err_prefix(e, "%s (use --limit-train / --limit-val): ", name);
            goto out;
        }
        for (int i = 0; i < keep; i++)
            ds->y[i] = labels[i];
    }
    ds->name = pb_xstrdup(name);
    ds->n = keep;
    ds->c = 1;
    ds->h = h;
    ds->w = w;
    ds->nclasses = nclasses;
    rc = 0;
out:
    free(pixels);
    free(labels);
    if (im.f)
        gzclose(im.f);
    if (lb.f)
        gzclose(lb.f);
    if (rc)
        pb_dataset_finish(ds);
    return rc;
}

/* dir/base.gz, else dir/base; a message naming both and the package when neither exists. */
static int find_file(char *out, size_t cap, const char *dir, const char *base, bool is_default,
                     struct pb_err *e)
{
    struct stat st;
    snprintf(out, cap, "%s/%s.gz", dir, base);
    if (stat(out, &st) == 0)
        return 0;
    snprintf(out, cap, "%s/%s", dir, base);
    if (stat(out, &st) == 0)
        return 0;
    int err = errno;
    if (stat(dir, &st) != 0)
        return pb_err_set(e, "fashion-mnist: the folder %s does not exist (%s); %s, or pass "
                          "--data-dir FOLDER holding %s.gz and its three siblings",
                          dir, strerror(errno),
                          is_default ? "install the dataset with `" FMNIST_PACKAGE "`"
                                     : "check the path (the Debian package `" FMNIST_PACKAGE
                                       "` installs it in " "/usr/share/datasets/fashion-mnist)",
                          base);
    return pb_err_set(e, "fashion-mnist: cannot find %s/%s.gz nor %s/%s (%s); install the "
                      "dataset with `" FMNIST_PACKAGE "`, or pass --data-dir FOLDER holding "
                      "the four IDX files", dir, base, dir, base, strerror(err));
}

int pb_dataset_fashion_mnist_parts(struct pb_dataset *ds, const char *dir, bool default_dir,
                                   enum pb_split split, int limit, int parts, struct pb_err *e)
{
    memset(ds, 0, sizeof *ds);
    const char *prefix = split == PB_SPLIT_TRAIN ? "train" : "t10k";
    char base[64], images[4096], labels[4096];
    snprintf(base, sizeof base, "%s-images-idx3-ubyte", prefix);
    if (find_file(images, sizeof images, dir, base, default_dir, e))
        return -1;
    snprintf(base, sizeof base, "%s-labels-idx1-ubyte", prefix);
    if (find_file(labels, sizeof labels, dir, base, default_dir, e))
        return -1;
    return load_idx_pair(ds, "fashion-mnist", images, labels, 28, 28, 10, limit, parts, e);
}
