/* tests/workloads/test_datasets.c — datasets (workloads/datasets): the real Fashion-MNIST files,
 * corrupt IDX files and their messages, the synthetic dataset, and the per-epoch
 * permutation of semantics §1.5. */
#include <stdint.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tests/support/test_util.h"
#include "workloads/datasets/dataset.h"

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

static void require_fmnist(void)
{
    struct stat st;
    if (stat(FMNIST_DIR "/train-images-idx3-ubyte.gz", &st) != 0)
        ck_abort_msg("Fashion-MNIST is not installed at " FMNIST_DIR "; install it with "
                     "`apt-get install dataset-fashion-mnist` (scripts/test does)");
}

static void assert_msg_has(const struct pb_err *e, const char *part)
{
    ck_assert_msg(strstr(e->msg, part) != NULL, "message \"%s\" lacks \"%s\"", e->msg, part);
}

/* The normalised value of raw pixel byte v (semantics §1.6, float32 as torchvision). */
static float norm_pixel(int v)
{
    return ((float)v / 255.0f - 0.2860f) / 0.3530f;
}

START_TEST(fmnist_train)
{
    require_fmnist();
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert_msg(pb_dataset_load(&ds, "fashion-mnist", NULL, PB_SPLIT_TRAIN, 0, 0, &e) == 0,
                  "%s", e.msg);
    ck_assert_int_eq(ds.n, 60000);
    ck_assert(ds.c == 1 && ds.h == 28 && ds.w == 28 && ds.nclasses == 10);
    ck_assert_str_eq(ds.name, "fashion-mnist");
    int hist[10] = {0};
    for (int i = 0; i < ds.n; i++) {
        ck_assert(ds.y[i] >= 0 && ds.y[i] < 10);
        hist[ds.y[i]]++;
    }
    for (int k = 0; k < 10; k++)
        ck_assert_int_eq(hist[k], 6000);
    ck_assert_int_eq(ds.y[0], 9);
    /* Image 0 (an ankle boot): pixel 0 is 0, pixel 100 is 73, pixel 417 is 255 in the file.
     * Tolerance 0: the loader must compute exactly torchvision's float32 expression. */
    ck_assert_float_eq(ds.x[0], norm_pixel(0));
    ck_assert_float_eq(ds.x[100], norm_pixel(73));
    ck_assert_float_eq(ds.x[417], norm_pixel(255));
    ck_assert_double_eq_tol(ds.x[100], (73.0 / 255.0 - 0.2860) / 0.3530, 1e-6);
    pb_dataset_finish(&ds);
    ck_assert(ds.x == NULL && ds.y == NULL && ds.n == 0);
}
END_TEST

START_TEST(fmnist_test_split_and_limit)
{
    require_fmnist();
    struct pb_dataset ds, lim;
    struct pb_err e;
    ck_assert_msg(pb_dataset_load(&ds, "fashion-mnist", NULL, PB_SPLIT_TEST, 0, 0, &e) == 0,
                  "%s", e.msg);
    ck_assert_int_eq(ds.n, 10000);
    ck_assert_int_eq(ds.y[0], 9);
    int hist[10] = {0};
    for (int i = 0; i < ds.n; i++)
        hist[ds.y[i]]++;
    for (int k = 0; k < 10; k++)
        ck_assert_int_eq(hist[k], 1000);
    ck_assert_msg(pb_dataset_load(&lim, "fashion-mnist", FMNIST_DIR, PB_SPLIT_TEST, 123, 0, &e)
                      == 0, "%s", e.msg);
    ck_assert_int_eq(lim.n, 123);
    ck_assert(memcmp(lim.y, ds.y, 123 * sizeof *ds.y) == 0);
    ck_assert(memcmp(lim.x, ds.x, 123 * 784 * sizeof *ds.x) == 0);
    pb_dataset_finish(&lim);
    ck_assert_int_eq(pb_dataset_load(&lim, "fashion-mnist", NULL, PB_SPLIT_TEST, 10001, 0, &e), -1);
    assert_msg_has(&e, "10001");
    assert_msg_has(&e, "10000 samples");
    pb_dataset_finish(&ds);
}
END_TEST

/* A temporary folder for corrupt copies, and IDX writers. */
static char tmpdir[64];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pb_test_idx_XXXXXX");
    ck_assert(mkdtemp(tmpdir) != NULL);
}

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    if (!d)
        return;
    struct dirent *de;
    char path[512];
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", tmpdir, de->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(tmpdir);
}

static void write_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Writes tmpdir/name (gzip when gz) with magic, dims and `len` payload bytes of `fill`. */
static void write_idx(const char *name, bool gz, uint32_t magic, int ndims, const uint32_t *dims,
                      size_t len, unsigned char fill)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s%s", tmpdir, name, gz ? ".gz" : "");
    unsigned char hdr[16];
    write_be32(hdr, magic);
    for (int d = 0; d < ndims; d++)
        write_be32(hdr + 4 + 4 * d, dims[d]);
    unsigned char *data = malloc(len + 1);
    memset(data, fill, len + 1);
    if (gz) {
        gzFile f = gzopen(path, "wb");
        ck_assert(f != NULL);
        ck_assert(gzwrite(f, hdr, 4 * (unsigned)(ndims + 1)) > 0);
        if (len)
            ck_assert(gzwrite(f, data, (unsigned)len) == (int)len);
        ck_assert(gzclose(f) == Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        ck_assert(f != NULL);
        fwrite(hdr, 1, 4 * (size_t)(ndims + 1), f);
        fwrite(data, 1, len, f);
        ck_assert(fclose(f) == 0);
    }
    free(data);
}

/* A valid pair of n train samples (h×w), then load it; returns the loader's status. */
struct idx_case {
    uint32_t img_magic, lbl_magic;
    uint32_t n, h, w, nlabels;
    long img_extra, lbl_extra;   /* payload bytes added (negative: missing) */
    unsigned char label;
    bool gz;
};

static int load_case(struct idx_case c, struct pb_dataset *ds, struct pb_err *e)
{
    make_tmpdir();
    uint32_t idims[3] = {c.n, c.h, c.w}, ldims[1] = {c.nlabels};
    write_idx("train-images-idx3-ubyte", c.gz, c.img_magic, 3, idims,
              (size_t)((long)c.n * c.h * c.w + c.img_extra), 255);
    write_idx("train-labels-idx1-ubyte", c.gz, c.lbl_magic, 1, ldims,
              (size_t)((long)c.nlabels + c.lbl_extra), c.label);
    int rc = pb_dataset_load(ds, "fashion-mnist", tmpdir, PB_SPLIT_TRAIN, 0, 0, e);
    remove_tmpdir();
    return rc;
}

static const struct idx_case good = {0x803, 0x801, 5, 28, 28, 5, 0, 0, 3, false};

/* A pipeline's first stage loads the inputs only, its last stage the labels only:
 * the same numbers as a full load, the other part absent; synthetic data too. */
START_TEST(parts_only)
{
    struct pb_err e;
    const char *names[] = {"fashion-mnist", "synthetic"};
    for (int k = 0; k < 2; k++) {
        struct pb_dataset all, in, lab;
        struct pb_dataset_opts o_in = {.parts = PB_DATA_INPUTS}, o_lab = {.parts = PB_DATA_LABELS};
        ck_assert_msg(pb_dataset_load_opts(&all, names[k], NULL, PB_SPLIT_TEST, 500, 3, NULL, &e) == 0,
                      "%s", e.msg);
        ck_assert(pb_dataset_load_opts(&in, names[k], NULL, PB_SPLIT_TEST, 500, 3, &o_in, &e) == 0);
        ck_assert(pb_dataset_load_opts(&lab, names[k], NULL, PB_SPLIT_TEST, 500, 3, &o_lab, &e) == 0);
        ck_assert(in.x && !in.y && !lab.x && lab.y);
        ck_assert(in.n == all.n && lab.n == all.n && in.h == all.h && lab.w == all.w);
        size_t per = (size_t)all.c * all.h * all.w;
        ck_assert(memcmp(in.x, all.x, (size_t)all.n * per * sizeof(float)) == 0);
        ck_assert(memcmp(lab.y, all.y, (size_t)all.n * sizeof(int32_t)) == 0);
        pb_dataset_finish(&all);
        pb_dataset_finish(&in);
        pb_dataset_finish(&lab);
    }
}
END_TEST

START_TEST(idx_valid_plain_and_gz)
{
    for (int gz = 0; gz < 2; gz++) {
        struct idx_case c = good;
        c.gz = gz;
        struct pb_dataset ds;
        struct pb_err e;
        ck_assert_msg(load_case(c, &ds, &e) == 0, "%s", e.msg);
        ck_assert_int_eq(ds.n, 5);
        ck_assert_int_eq(ds.y[4], 3);
        ck_assert_float_eq(ds.x[5 * 784 - 1], norm_pixel(255));
        pb_dataset_finish(&ds);
    }
}
END_TEST

static void expect_failure(struct idx_case c, const char *part1, const char *part2)
{
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert_int_eq(load_case(c, &ds, &e), -1);
    ck_assert(ds.x == NULL && ds.y == NULL);
    assert_msg_has(&e, tmpdir);
    assert_msg_has(&e, part1);
    if (part2)
        assert_msg_has(&e, part2);
}

START_TEST(idx_bad_magic)
{
    struct idx_case c = good;
    c.img_magic = 0x804;
    expect_failure(c, "bad magic number 0x00000804", "train-images-idx3-ubyte");
    c = good;
    c.lbl_magic = 0x803;
    c.gz = true;
    expect_failure(c, "bad magic number 0x00000803", "train-labels-idx1-ubyte.gz");
}
END_TEST

START_TEST(idx_truncated)
{
    struct idx_case c = good;
    c.img_extra = -10;
    expect_failure(c, "truncated", "3920 bytes of pixels but only 3910");
    c = good;
    c.lbl_extra = -1;
    c.gz = true;
    expect_failure(c, "truncated", "labels");
    c = good;
    c.n = c.nlabels = 0x01000000;   /* a header far larger than its data */
    c.lbl_extra = -(long)c.n + 10;
    c.img_extra = -(long)c.n * 784 + 10;
    expect_failure(c, "truncated", NULL);
}
END_TEST

START_TEST(idx_extra_bytes)
{
    struct idx_case c = good;
    c.img_extra = 3;
    expect_failure(c, "extra bytes", "train-images-idx3-ubyte");
    c = good;
    c.lbl_extra = 1;
    c.gz = true;
    expect_failure(c, "extra bytes", "train-labels-idx1-ubyte.gz");
}
END_TEST

START_TEST(idx_wrong_dims_and_counts)
{
    struct idx_case c = good;
    c.h = 27;
    expect_failure(c, "27x28", "28x28");
    c = good;
    c.nlabels = 4;
    expect_failure(c, "5 images", "4 labels");
    c = good;
    c.w = 0;
    expect_failure(c, "dimension 2 is 0", NULL);
}
END_TEST

START_TEST(idx_label_out_of_range)
{
    struct idx_case c = good;
    c.label = 10;
    expect_failure(c, "label 10 of sample 0 is not below 10", "train-labels-idx1-ubyte");
}
END_TEST

START_TEST(idx_header_cut)
{
    make_tmpdir();
    uint32_t dims[3] = {5, 28, 28};
    write_idx("train-images-idx3-ubyte", false, 0x803, 1, dims, 0, 0);
    write_idx("train-labels-idx1-ubyte", false, 0x801, 1, dims, 5, 0);
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert_int_eq(pb_dataset_load(&ds, "fashion-mnist", tmpdir, PB_SPLIT_TRAIN, 0, 0, &e), -1);
    remove_tmpdir();
    assert_msg_has(&e, "ends inside its 16-byte IDX header");
}
END_TEST

START_TEST(missing_dataset)
{
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert_int_eq(pb_dataset_load(&ds, "fashion-mnist", "/nonexistent/fmnist", PB_SPLIT_TRAIN,
                                     0, 0, &e), -1);
    assert_msg_has(&e, "/nonexistent/fmnist");
    assert_msg_has(&e, "apt-get install dataset-fashion-mnist");
    assert_msg_has(&e, "--data-dir");
    make_tmpdir();
    ck_assert_int_eq(pb_dataset_load(&ds, "fashion-mnist", tmpdir, PB_SPLIT_TEST, 0, 0, &e), -1);
    remove_tmpdir();
    assert_msg_has(&e, "t10k-images-idx3-ubyte.gz");
    assert_msg_has(&e, tmpdir);
    assert_msg_has(&e, "apt-get install dataset-fashion-mnist");
    assert_msg_has(&e, "--data-dir");
    ck_assert_int_eq(pb_dataset_load(&ds, "cifar-1000", NULL, PB_SPLIT_TEST, 0, 0, &e), -1);
    assert_msg_has(&e, "unknown dataset 'cifar-1000'");
    assert_msg_has(&e, "fashion-mnist, synthetic");
    ck_assert_int_eq(pb_dataset_load(&ds, "synthetic", NULL, PB_SPLIT_TEST, -1, 0, &e), -1);
}
END_TEST

START_TEST(registry)
{
    int n = 0;
    for (; pb_dataset_names[n]; n++)
        ck_assert_msg(pb_dataset_summary(pb_dataset_names[n]) != NULL, "%s", pb_dataset_names[n]);
    ck_assert_int_eq(n, 7);
    ck_assert(pb_dataset_summary("nope") == NULL);
    ck_assert_str_eq(pb_dataset_default_dir("fashion-mnist"), FMNIST_DIR);
}
END_TEST

START_TEST(synthetic_deterministic)
{
    struct pb_dataset a, b, t, s;
    struct pb_err e;
    struct pb_dataset_opts o = {.c = 3, .h = 8, .w = 6, .nclasses = 4, .n = 300};
    ck_assert(pb_dataset_load_opts(&a, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 7, &o, &e) == 0);
    ck_assert(pb_dataset_load_opts(&b, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 7, &o, &e) == 0);
    ck_assert(a.n == 300 && a.c == 3 && a.h == 8 && a.w == 6 && a.nclasses == 4);
    ck_assert(memcmp(a.x, b.x, 300 * 144 * sizeof *a.x) == 0);
    ck_assert(memcmp(a.y, b.y, 300 * sizeof *a.y) == 0);
    for (int i = 0; i < a.n; i++)
        ck_assert(a.y[i] >= 0 && a.y[i] < 4);
    ck_assert(pb_dataset_load_opts(&t, "synthetic", NULL, PB_SPLIT_TEST, 0, 7, &o, &e) == 0);
    ck_assert(memcmp(a.x, t.x, 144 * sizeof *a.x) != 0);
    ck_assert(pb_dataset_load_opts(&s, "synthetic", NULL, PB_SPLIT_TRAIN, 50, 8, &o, &e) == 0);
    ck_assert_int_eq(s.n, 50);
    ck_assert(memcmp(a.x, s.x, 144 * sizeof *a.x) != 0);
    pb_dataset_finish(&s);
    /* limit keeps a prefix of the same samples */
    ck_assert(pb_dataset_load_opts(&s, "synthetic", NULL, PB_SPLIT_TRAIN, 50, 7, &o, &e) == 0);
    ck_assert(memcmp(a.x, s.x, 50 * 144 * sizeof *a.x) == 0);
    pb_dataset_finish(&s);
    ck_assert_int_eq(pb_dataset_load_opts(&s, "synthetic", NULL, PB_SPLIT_TRAIN, 301, 7, &o, &e),
                     -1);
    pb_dataset_finish(&a);
    pb_dataset_finish(&b);
    pb_dataset_finish(&t);
}
END_TEST

static double centroid_accuracy(const struct pb_dataset *tr, const struct pb_dataset *te);

/* --synthetic-noise k scales the noise around the same prototypes: two samples of a
 * class differ by one constant factor below 1 (k times the ratio of the unit-variance
 * scales), the labels are the same, the nearest class mean is right more often, and
 * k = 1 is the default's bytes. */
START_TEST(synthetic_noise_scaled)
{
    struct pb_dataset a, one, h;
    struct pb_err e;
    struct pb_dataset_opts o = {.c = 3, .h = 8, .w = 6, .nclasses = 4, .n = 200};
    struct pb_dataset_opts o1 = o, oh = o;
    o1.noise = 1;
    oh.noise = 0.25f;
    ck_assert(pb_dataset_load_opts(&a, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 5, &o, &e) == 0);
    ck_assert(pb_dataset_load_opts(&one, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 5, &o1, &e) == 0);
    ck_assert(pb_dataset_load_opts(&h, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 5, &oh, &e) == 0);
    const size_t d = 144;
    ck_assert(memcmp(a.x, one.x, 200 * d * sizeof *a.x) == 0);
    ck_assert(memcmp(a.y, h.y, 200 * sizeof *a.y) == 0);
    int i = 0, j = 1;
    while (a.y[j] != a.y[i])
        j++;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t k = 0; k < d; k++) {
        double da = a.x[j * d + k] - a.x[i * d + k], dh = h.x[j * d + k] - h.x[i * d + k];
        if (fabs(da) < 0.05)   /* too small a difference to divide by */
            continue;
        lo = fmin(lo, dh / da);
        hi = fmax(hi, dh / da);
    }
    ck_assert_msg(lo > 0 && hi - lo < 1e-3 * hi, "ratios %g .. %g", lo, hi);
    ck_assert_msg(hi < 1, "noise ×0.25 left the in-class differences at %g of theirs", hi);
    struct pb_dataset at, ht;
    ck_assert(pb_dataset_load_opts(&at, "synthetic", NULL, PB_SPLIT_TEST, 0, 5, &o, &e) == 0);
    ck_assert(pb_dataset_load_opts(&ht, "synthetic", NULL, PB_SPLIT_TEST, 0, 5, &oh, &e) == 0);
    double acc = centroid_accuracy(&a, &at), acc_h = centroid_accuracy(&h, &ht);
    ck_assert_msg(acc < 0.99 && acc_h > acc && acc_h >= 0.99, "nearest class mean: %g at noise "
                  "1, %g at 0.25", acc, acc_h);
    pb_dataset_finish(&at);
    pb_dataset_finish(&ht);
    pb_dataset_finish(&a);
    pb_dataset_finish(&one);
    pb_dataset_finish(&h);
}
END_TEST

/* Nearest class mean (a linear rule) fitted on train, scored on test. */
static double centroid_accuracy(const struct pb_dataset *tr, const struct pb_dataset *te)
{
    int d = tr->c * tr->h * tr->w, k = tr->nclasses;
    double *mu = calloc((size_t)k * d, sizeof *mu);
    int *cnt = calloc((size_t)k, sizeof *cnt);
    for (int i = 0; i < tr->n; i++) {
        cnt[tr->y[i]]++;
        for (int j = 0; j < d; j++)
            mu[(size_t)tr->y[i] * d + j] += tr->x[(size_t)i * d + j];
    }
    for (int c = 0; c < k; c++)
        for (int j = 0; j < d; j++)
            mu[(size_t)c * d + j] /= cnt[c] ? cnt[c] : 1;
    int right = 0;
    for (int i = 0; i < te->n; i++) {
        int best = 0;
        double bestd = INFINITY;
        for (int c = 0; c < k; c++) {
            double dist = 0;
            for (int j = 0; j < d; j++) {
                double v = te->x[(size_t)i * d + j] - mu[(size_t)c * d + j];
                dist += v * v;
            }
            if (dist < bestd) {
                bestd = dist;
                best = c;
            }
        }
        right += best == te->y[i];
    }
    free(mu);
    free(cnt);
    return (double)right / te->n;
}

START_TEST(synthetic_learnable)
{
    struct pb_dataset tr, te;
    struct pb_err e;
    ck_assert(pb_dataset_load(&tr, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 1, &e) == 0);
    ck_assert(pb_dataset_load(&te, "synthetic", NULL, PB_SPLIT_TEST, 0, 1, &e) == 0);
    ck_assert(tr.n == 10000 && te.n == 2000 && tr.c == 1 && tr.h == 28 && tr.w == 28);
    ck_assert_int_eq(tr.nclasses, 10);
    double mean = 0, var = 0;
    size_t m = (size_t)tr.n * 784;
    for (size_t i = 0; i < m; i++)
        mean += tr.x[i];
    mean /= (double)m;
    for (size_t i = 0; i < m; i++)
        var += (tr.x[i] - mean) * (tr.x[i] - mean);
    var /= (double)m;
    /* Unit variance by construction; 0.05 covers the spread of ten random prototypes. */
    ck_assert_msg(fabs(var - 1.0) < 0.05 && fabs(mean) < 0.05, "mean %g var %g", mean, var);
    /* "High, not perfect": the design targets a Bayes accuracy near 95%. */
    double acc = centroid_accuracy(&tr, &te);
    ck_assert_msg(acc > 0.85 && acc < 0.995, "nearest-centroid accuracy %g", acc);
    pb_dataset_finish(&tr);
    pb_dataset_finish(&te);
}
END_TEST

static bool is_permutation(const int32_t *o, int n)
{
    bool *seen = calloc((size_t)n, 1);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        ok = o[i] >= 0 && o[i] < n && !seen[o[i]];
        if (ok)
            seen[o[i]] = true;
    }
    free(seen);
    return ok;
}

START_TEST(epoch_order)
{
    enum { N = 1000 };
    int32_t a[N], b[N], c[N], d[N];
    pb_epoch_order(42, 3, N, true, a);
    pb_epoch_order(42, 3, N, true, b);
    pb_epoch_order(42, 4, N, true, c);
    pb_epoch_order(43, 3, N, true, d);
    ck_assert(is_permutation(a, N));
    ck_assert(is_permutation(c, N));
    ck_assert(memcmp(a, b, sizeof a) == 0);
    ck_assert(memcmp(a, c, sizeof a) != 0);
    ck_assert(memcmp(a, d, sizeof a) != 0);
    int fixed = 0;
    for (int i = 0; i < N; i++)
        fixed += a[i] == i;
    ck_assert_msg(fixed < 10, "%d fixed points", fixed);
    pb_epoch_order(42, 3, N, false, a);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(a[i], i);
    /* Every first element is about equally likely: 2000 epochs of 10, expected 200 each,
     * sd 13.4; bounds at 4.5 sd (the draws are deterministic, so this never flakes). */
    int count[10] = {0};
    for (int ep = 0; ep < 2000; ep++) {
        int32_t o[10];
        pb_epoch_order(5, ep, 10, true, o);
        count[o[0]]++;
    }
    for (int k = 0; k < 10; k++)
        ck_assert_msg(count[k] > 140 && count[k] < 260, "first = %d: %d times", k, count[k]);
    pb_epoch_order(1, 0, 1, true, a);
    ck_assert_int_eq(a[0], 0);
    pb_epoch_order(1, 0, 0, true, a);
}
END_TEST

START_TEST(gather)
{
    struct pb_dataset ds;
    struct pb_err e;
    struct pb_dataset_opts o = {.c = 2, .h = 3, .w = 4, .n = 20};
    ck_assert(pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 3, &o, &e) == 0);
    int32_t order[20];
    pb_epoch_order(3, 1, 20, true, order);
    float x[5 * 24];
    int32_t y[5];
    pb_dataset_gather(&ds, (struct pb_data_key){3, 1, true}, order, 10, 5, x, y);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(y[i], ds.y[order[10 + i]]);
        ck_assert(memcmp(x + i * 24, ds.x + (size_t)order[10 + i] * 24, 24 * sizeof *x) == 0);
    }
    pb_dataset_gather(&ds, (struct pb_data_key){3, 1, false}, NULL, 15, 5, x, y);
    ck_assert(memcmp(x, ds.x + 15 * 24, 5 * 24 * sizeof *x) == 0);
    ck_assert(memcmp(y, ds.y + 15, 5 * sizeof *y) == 0);
    pb_dataset_finish(&ds);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("datasets");
    TCase *real = tcase_create("fashion-mnist");
    tcase_add_test(real, fmnist_train);
    tcase_add_test(real, fmnist_test_split_and_limit);
    tcase_add_test(real, parts_only);
    suite_add_tcase(s, real);
    TCase *idx = tcase_create("idx");
    tcase_add_test(idx, idx_valid_plain_and_gz);
    tcase_add_test(idx, idx_bad_magic);
    tcase_add_test(idx, idx_truncated);
    tcase_add_test(idx, idx_extra_bytes);
    tcase_add_test(idx, idx_wrong_dims_and_counts);
    tcase_add_test(idx, idx_label_out_of_range);
    tcase_add_test(idx, idx_header_cut);
    tcase_add_test(idx, missing_dataset);
    tcase_add_test(idx, registry);
    suite_add_tcase(s, idx);
    TCase *gen = tcase_create("synthetic and order");
    tcase_add_test(gen, synthetic_deterministic);
    tcase_add_test(gen, synthetic_noise_scaled);
    tcase_add_test(gen, synthetic_learnable);
    tcase_add_test(gen, epoch_order);
    tcase_add_test(gen, gather);
    suite_add_tcase(s, gen);
    return s;
}
