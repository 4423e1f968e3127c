/* tests/workloads/test_image_data.c — the image datasets (semantics §1.6) on the committed fixtures
 * of tests/fixtures/fixtures_data.py: CIFAR-10/100 records and Tiny-ImageNet's JPEGs read
 * as their files say (the pixels exactly as PIL decodes them), truncated, corrupt and
 * mislabelled files refused with a message naming the file, the decoded-image cache
 * reused, extended and rebuilt when stale, the folder options, the transforms equal to
 * torchvision's for the same parameters, and the random parameters keyed and in range. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/base/rng.h"
#include "tests/support/test_util.h"
#include "workloads/datasets/dataset.h"

static void assert_msg_has(const struct pb_err *e, const char *part)
{
    ck_assert_msg(strstr(e->msg, part) != NULL, "message \"%s\" lacks \"%s\"", e->msg, part);
}

/* The fixtures' data folder. */
static const char *data_dir(void)
{
    static char buf[2048];
    const char *p = pb_fixture_path("data");
    ck_assert(strlen(p) < sizeof buf);
    memcpy(buf, p, strlen(p) + 1);
    return buf;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len + 1);
    ck_assert(fread(b, 1, *len, f) == *len);
    fclose(f);
    return b;
}

static void spill(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert(fwrite(data, 1, len, f) == len);
    ck_assert(fclose(f) == 0);
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

/* A scratch copy of the fixtures' data folder (Check forks each test: removed at exit). */
static char scratch[64];

static void remove_scratch(void)
{
    if (scratch[0]) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", scratch, scratch);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", scratch);
    }
}

static const char *copy_data(void)
{
    static bool registered;
    remove_scratch();
    snprintf(scratch, sizeof scratch, "/tmp/pb-imgdata-XXXXXX");
    ck_assert(mkdtemp(scratch) != NULL);
    if (!registered)
        registered = atexit(remove_scratch) == 0;
    sh("cp -r '%s'/. '%s'", data_dir(), scratch);
    /* the cache folder of these tests, not the user's */
    char xdg[128];
    snprintf(xdg, sizeof xdg, "%s/xdg", scratch);
    setenv("XDG_CACHE_HOME", xdg, 1);
    return scratch;
}

/* ---- CIFAR ---- */

/* Records [first, first + n) of the concatenated files, as the test reads them. */
static void read_cifar(const char *folder, const char *const *files, int nfiles, int label_bytes,
                       int n, uint8_t *pix, int32_t *y)
{
    int rec = label_bytes + 3072, got = 0;
    for (int f = 0; f < nfiles && got < n; f++) {
        char path[4096 + 64];
        size_t len;
        snprintf(path, sizeof path, "%s/%s", folder, files[f]);
        unsigned char *b = slurp(path, &len);
        ck_assert_int_eq(len % (size_t)rec, 0);
        for (size_t r = 0; r < len / (size_t)rec && got < n; r++, got++) {
            y[got] = b[r * rec + (size_t)label_bytes - 1];
            memcpy(pix + (size_t)got * 3072, b + r * rec + label_bytes, 3072);
        }
        free(b);
    }
    ck_assert_int_eq(got, n);
}

static const char *const c10_train[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                        "data_batch_4.bin", "data_batch_5.bin"};
static const char *const c10_test[] = {"test_batch.bin"};

START_TEST(cifar10_reads_records)
{
    char folder[4096];
    snprintf(folder, sizeof folder, "%s/cifar-10-batches-bin", data_dir());
    uint8_t pix[20 * 3072];
    int32_t y[20];
    read_cifar(folder, c10_train, 5, 1, 20, pix, y);
    /* the folder's parent and the folder itself are both accepted */
    const char *dirs[2] = {data_dir(), folder};
    for (int k = 0; k < 2; k++) {
        struct pb_dataset ds;
        struct pb_err e;
        ck_assert_msg(pb_dataset_load(&ds, "cifar10", dirs[k], PB_SPLIT_TRAIN, 0, 0, &e) == 0,
                      "%s", e.msg);
        ck_assert_int_eq(ds.n, 20);
        ck_assert(ds.nclasses == 10 && ds.c == 3 && ds.h == 32 && ds.w == 32 && ds.sh == 32);
        ck_assert(ds.x == NULL && ds.pix != NULL && ds.aug.family == PB_AUG_CIFAR);
        ck_assert(memcmp(ds.pix, pix, sizeof pix) == 0);
        ck_assert(memcmp(ds.y, y, sizeof y) == 0);
        pb_dataset_finish(&ds);
    }
    /* a limit reads the first records of the files in order: 7 spans two batches */
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert(pb_dataset_load(&ds, "cifar10", data_dir(), PB_SPLIT_TRAIN, 7, 0, &e) == 0);
    ck_assert_int_eq(ds.n, 7);
    ck_assert(memcmp(ds.pix, pix, 7 * 3072) == 0 && memcmp(ds.y, y, 7 * sizeof *y) == 0);
    pb_dataset_finish(&ds);
    ck_assert_int_eq(pb_dataset_load(&ds, "cifar10", data_dir(), PB_SPLIT_TRAIN, 21, 0, &e), -1);
    assert_msg_has(&e, "limit 21 is more than the 20 samples");
    read_cifar(folder, c10_test, 1, 1, 6, pix, y);
    ck_assert(pb_dataset_load(&ds, "cifar10", data_dir(), PB_SPLIT_TEST, 0, 0, &e) == 0);
    ck_assert_int_eq(ds.n, 6);
    ck_assert(memcmp(ds.pix, pix, 6 * 3072) == 0 && memcmp(ds.y, y, 6 * sizeof *y) == 0);
    pb_dataset_finish(&ds);
}
END_TEST

START_TEST(cifar100_fine_labels)
{
    char folder[4096];
    snprintf(folder, sizeof folder, "%s/cifar-100-binary", data_dir());
    const char *const train[] = {"train.bin"};
    uint8_t pix[10 * 3072];
    int32_t y[10];
    read_cifar(folder, train, 1, 2, 10, pix, y);
    struct pb_dataset ds, lab;
    struct pb_err e;
    ck_assert_msg(pb_dataset_load(&ds, "cifar100", data_dir(), PB_SPLIT_TRAIN, 0, 0, &e) == 0,
                  "%s", e.msg);
    ck_assert(ds.n == 10 && ds.nclasses == 100);
    ck_assert(memcmp(ds.pix, pix, sizeof pix) == 0 && memcmp(ds.y, y, sizeof y) == 0);
    /* a labels-only load (the last stage) holds the same labels and no pixels */
    struct pb_dataset_opts o = {.parts = PB_DATA_LABELS};
    ck_assert(pb_dataset_load_opts(&lab, "cifar100", folder, PB_SPLIT_TRAIN, 0, 0, &o, &e) == 0);
    ck_assert(lab.pix == NULL && !pb_dataset_has_inputs(&lab) && lab.c == 3 && lab.h == 32);
    ck_assert(memcmp(lab.y, y, sizeof y) == 0);
    pb_dataset_finish(&lab);
    pb_dataset_finish(&ds);
    ck_assert(pb_dataset_load(&ds, "cifar100", data_dir(), PB_SPLIT_TEST, 0, 0, &e) == 0);
    ck_assert_int_eq(ds.n, 6);
    pb_dataset_finish(&ds);
}
END_TEST

/* A copy of the CIFAR-10 folder with `file` replaced by `len` bytes of data. */
static const char *broken_cifar(const char *file, const unsigned char *data, size_t len)
{
    const char *root = copy_data();
    char path[512];
    snprintf(path, sizeof path, "%s/cifar-10-batches-bin/%s", root, file);
    spill(path, data, len);
    return root;
}

static void expect_cifar_error(const char *root, const char *name, const char *a, const char *b)
{
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert_int_eq(pb_dataset_load(&ds, name, root, PB_SPLIT_TRAIN, 0, 0, &e), -1);
    ck_assert(ds.pix == NULL && ds.y == NULL);
    assert_msg_has(&e, a);
    if (b)
        assert_msg_has(&e, b);
}

START_TEST(cifar_truncated)
{
    char path[4096];
    size_t len;
    snprintf(path, sizeof path, "%s/cifar-10-batches-bin/data_batch_3.bin", data_dir());
    unsigned char *b = slurp(path, &len);
    const char *root = broken_cifar("data_batch_3.bin", b, len - 5);
    expect_cifar_error(root, "cifar10", "data_batch_3.bin is 12287 bytes, not a whole number of "
                       "3073-byte records", "record 3 has 3068 of its bytes");
    free(b);
}
END_TEST

START_TEST(cifar_bad_labels)
{
    char path[4096];
    size_t len;
    snprintf(path, sizeof path, "%s/cifar-10-batches-bin/data_batch_2.bin", data_dir());
    unsigned char *b = slurp(path, &len);
    b[2 * 3073] = 10;  /* record 2's label */
    const char *root = broken_cifar("data_batch_2.bin", b, len);
    expect_cifar_error(root, "cifar10", "data_batch_2.bin: record 2 (byte 6146): label 10 is not "
                       "below 10", "cifar-10-binary.tar.gz");
    free(b);
    /* CIFAR-100: a coarse label of 20, then a fine one of 100 */
    snprintf(path, sizeof path, "%s/cifar-100-binary/train.bin", data_dir());
    b = slurp(path, &len);
    b[3 * 3074] = 20;
    char p2[512];
    snprintf(p2, sizeof p2, "%s/cifar-100-binary/train.bin", root);
    spill(p2, b, len);
    expect_cifar_error(root, "cifar100", "train.bin: record 3 (byte 9222): coarse label 20", NULL);
    b[3 * 3074] = 5;
    b[4 * 3074 + 1] = 100;
    spill(p2, b, len);
    expect_cifar_error(root, "cifar100", "record 4 (byte 12296): label 100 is not below 100", NULL);
    free(b);
}
END_TEST

START_TEST(cifar_missing)
{
    const char *root = copy_data();
    char path[512];
    snprintf(path, sizeof path, "%s/cifar-10-batches-bin/data_batch_4.bin", root);
    ck_assert(unlink(path) == 0);
    expect_cifar_error(root, "cifar10", "data_batch_4.bin is missing", "unpack cifar-10-binary");
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert_int_eq(pb_dataset_load(&ds, "cifar100", "/nonexistent/c100", PB_SPLIT_TEST, 0, 0,
                                     &e), -1);
    assert_msg_has(&e, "cannot find test.bin in /nonexistent/c100 nor in "
                   "/nonexistent/c100/cifar-100-binary (the folder of --data-dir)");
    assert_msg_has(&e, "cifar-100-binary.tar.gz");
    assert_msg_has(&e, "https://www.cs.toronto.edu/~kriz/");
    assert_msg_has(&e, "PIPEBENCH_CIFAR100_DIR");
}
END_TEST

/* The folder comes from --data-dir, else the dataset's variable, else the default. */
START_TEST(folder_options)
{
    const char *origin;
    unsetenv("PIPEBENCH_CIFAR10_DIR");
    ck_assert_str_eq(pb_dataset_dir("cifar10", NULL, &origin), "/usr/share/datasets/cifar10");
    ck_assert_str_eq(origin, "the default folder");
    setenv("PIPEBENCH_CIFAR10_DIR", data_dir(), 1);
    ck_assert_str_eq(pb_dataset_dir("cifar10", NULL, &origin), data_dir());
    ck_assert_str_eq(origin, "PIPEBENCH_CIFAR10_DIR");
    ck_assert_str_eq(pb_dataset_dir("cifar10", "/x", &origin), "/x");
    ck_assert_str_eq(origin, "--data-dir");
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert_msg(pb_dataset_load(&ds, "cifar10", NULL, PB_SPLIT_TEST, 0, 0, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(ds.n, 6);
    pb_dataset_finish(&ds);
    setenv("PIPEBENCH_CIFAR10_DIR", "/nonexistent/env", 1);
    ck_assert_int_eq(pb_dataset_load(&ds, "cifar10", NULL, PB_SPLIT_TEST, 0, 0, &e), -1);
    assert_msg_has(&e, "/nonexistent/env/cifar-10-batches-bin (the folder of PIPEBENCH_CIFAR10_DIR)");
    setenv("PIPEBENCH_TINY_IMAGENET_DIR", "/nonexistent/tiny", 1);
    ck_assert_int_eq(pb_dataset_load(&ds, "tiny-imagenet", NULL, PB_SPLIT_TEST, 0, 0, &e), -1);
    assert_msg_has(&e, "tiny-imagenet-200.zip");
    assert_msg_has(&e, "http://cs231n.stanford.edu/");
    assert_msg_has(&e, "(the folder of PIPEBENCH_TINY_IMAGENET_DIR)");
    ck_assert_str_eq(pb_dataset_env_var("fashion-mnist"), "PIPEBENCH_FASHION_MNIST_DIR");
    setenv("PIPEBENCH_FASHION_MNIST_DIR", "/nonexistent/fm", 1);
    ck_assert_int_eq(pb_dataset_load(&ds, "fashion-mnist", NULL, PB_SPLIT_TEST, 0, 0, &e), -1);
    assert_msg_has(&e, "/nonexistent/fm");
    ck_assert(pb_dataset_env_var("synthetic") == NULL);
    ck_assert(pb_dataset_is_image("tiny-imagenet") && !pb_dataset_is_image("fashion-mnist"));
}
END_TEST

/* ---- Tiny-ImageNet ---- */

/* The fixture's train split: classes interleaved (3, 4 and 3 images), wnids.txt order. */
static const int32_t tiny_train_labels[10] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 1};
static const int32_t tiny_val_labels[5] = {2, 0, 1, 0, 2};

/* PIL's decode of the split's JPEGs in sample order (fixtures_data.py). */
static uint8_t *pil_pixels(const char *split, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tiny_pil_%s.u8", data_dir(), split);
    size_t len;
    uint8_t *b = slurp(path, &len);
    ck_assert_int_eq(len, n * 12288);
    return b;
}

static void load_tiny(struct pb_dataset *ds, const char *dir, enum pb_split split, int limit)
{
    struct pb_err e;
    ck_assert_msg(pb_dataset_load(ds, "tiny-imagenet", dir, split, limit, 0, &e) == 0, "%s", e.msg);
}

START_TEST(tiny_reads_tree)
{
    const char *root = copy_data();
    uint8_t *train = pil_pixels("train", 10), *val = pil_pixels("val", 5);
    struct pb_dataset ds;
    load_tiny(&ds, root, PB_SPLIT_TRAIN, 0);
    ck_assert(ds.n == 10 && ds.nclasses == 3 && ds.sc == 3 && ds.sh == 64 && ds.h == 64);
    ck_assert(ds.aug.family == PB_AUG_IMAGENET && ds.decoded == 10);
    ck_assert(memcmp(ds.y, tiny_train_labels, sizeof tiny_train_labels) == 0);
    /* libjpeg-turbo (ISLOW IDCT, fancy upsampling) decodes exactly as PIL on the same
     * library: tolerance 0, grayscale images included */
    ck_assert(memcmp(ds.pix, train, 10 * 12288) == 0);
    pb_dataset_finish(&ds);
    char tree[256];
    snprintf(tree, sizeof tree, "%s/tiny-imagenet-200", root);
    load_tiny(&ds, tree, PB_SPLIT_TEST, 0);
    ck_assert_int_eq(ds.n, 5);
    ck_assert(memcmp(ds.y, tiny_val_labels, sizeof tiny_val_labels) == 0);
    ck_assert(memcmp(ds.pix, val, 5 * 12288) == 0);
    pb_dataset_finish(&ds);
    free(train);
    free(val);
}
END_TEST

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

START_TEST(tiny_cache)
{
    const char *root = copy_data();
    uint8_t *train = pil_pixels("train", 10), *val = pil_pixels("val", 5);
    char cache[512];
    snprintf(cache, sizeof cache, "%s/tiny-imagenet-200/pipebench-train.u8cache", root);
    struct pb_dataset ds;
    /* a limit decodes that many images only, and caches them beside the data */
    load_tiny(&ds, root, PB_SPLIT_TRAIN, 3);
    ck_assert_int_eq(ds.decoded, 3);
    ck_assert_str_eq(ds.cache_path, cache);
    ck_assert(exists(cache));
    pb_dataset_finish(&ds);
    load_tiny(&ds, root, PB_SPLIT_TRAIN, 2);
    ck_assert(ds.decoded == 0 && ds.map != NULL);
    ck_assert(memcmp(ds.pix, train, 2 * 12288) == 0);
    pb_dataset_finish(&ds);
    /* more samples: the cached 3 and 7 decoded */
    load_tiny(&ds, root, PB_SPLIT_TRAIN, 0);
    ck_assert_int_eq(ds.decoded, 7);
    ck_assert(memcmp(ds.pix, train, 10 * 12288) == 0);
    pb_dataset_finish(&ds);
    load_tiny(&ds, root, PB_SPLIT_TRAIN, 0);
    ck_assert(ds.decoded == 0 && ds.map != NULL && memcmp(ds.pix, train, 10 * 12288) == 0);
    pb_dataset_finish(&ds);
    /* stale: an image replaced (another size and time) → everything decoded again */
    char img[512], other[512];
    snprintf(img, sizeof img, "%s/tiny-imagenet-200/train/n02124075/images/n02124075_0.JPEG", root);
    snprintf(other, sizeof other, "%s/tiny-imagenet-200/val/images/val_0.JPEG", root);
    sh("cp '%s' '%s'", other, img);
    load_tiny(&ds, root, PB_SPLIT_TRAIN, 0);
    ck_assert_int_eq(ds.decoded, 10);
    ck_assert(memcmp(ds.pix, val, 12288) == 0);   /* sample 0 is now val_0's picture */
    ck_assert(memcmp(ds.pix + 12288, train + 12288, 9 * 12288) == 0);
    pb_dataset_finish(&ds);
    /* stale: a header of another version */
    size_t len;
    unsigned char *b = slurp(cache, &len);
    b[8] ^= 0xff;
    spill(cache, b, len);
    free(b);
    load_tiny(&ds, root, PB_SPLIT_TRAIN, 0);
    ck_assert_int_eq(ds.decoded, 10);
    pb_dataset_finish(&ds);
    /* stale: wnids.txt reordered (the labels and the sample order change) */
    char wnids[512];
    snprintf(wnids, sizeof wnids, "%s/tiny-imagenet-200/wnids.txt", root);
    spill(wnids, "n01443537\nn02124075\nn01629819\n", 30);
    load_tiny(&ds, root, PB_SPLIT_TRAIN, 0);
    ck_assert_int_eq(ds.decoded, 10);
    ck_assert_int_eq(ds.y[0], 0);
    ck_assert(memcmp(ds.pix, train + 12288, 12288) == 0);   /* n01443537_0 comes first */
    pb_dataset_finish(&ds);
    /* damaged: one pixel's bit flipped, the header intact → refused with what to do */
    b = slurp(cache, &len);
    b[len - 1] ^= 1;
    spill(cache, b, len);
    free(b);
    struct pb_err e;
    ck_assert_int_eq(pb_dataset_load(&ds, "tiny-imagenet", root, PB_SPLIT_TRAIN, 0, 0, &e), -1);
    assert_msg_has(&e, "pipebench-train.u8cache is damaged");
    assert_msg_has(&e, "delete it and run again to rebuild it");
    /* deleted: rebuilt; the temporary file a build killed by kill -9 left is removed by
       this build of the same cache (its process is gone), a live writer's stays */
    ck_assert_int_eq(unlink(cache), 0);
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    ck_assert(dead > 0 && waitpid(dead, NULL, 0) == dead);
    char stale[600], live[600];
    snprintf(stale, sizeof stale, "%s/tiny-imagenet-200/.pipebench-train.u8cache.tmp-%d-0", root,
             (int)dead);
    snprintf(live, sizeof live, "%s/tiny-imagenet-200/.pipebench-train.u8cache.tmp-%d-0", root,
             (int)getpid());
    spill(stale, "half", 4);
    spill(live, "half", 4);
    load_tiny(&ds, root, PB_SPLIT_TRAIN, 0);
    ck_assert_int_eq(ds.decoded, 10);
    pb_dataset_finish(&ds);
    ck_assert_msg(!exists(stale) && exists(live), "the stale temporary file is left");
    unlink(live);
    free(train);
    free(val);
}
END_TEST

/* Where the dataset's folder cannot take the cache, it goes to $XDG_CACHE_HOME/pipebench. */
START_TEST(tiny_cache_folder)
{
    const char *root = copy_data();
    char tree[256], beside[512];
    snprintf(tree, sizeof tree, "%s/tiny-imagenet-200", root);
    snprintf(beside, sizeof beside, "%s/pipebench-val.u8cache", tree);
    /* as root every folder is writable: a folder in the cache file's place fails the write
     * there as a read-only folder would; otherwise the tree is made read-only */
    bool as_root = geteuid() == 0;
    if (as_root)
        ck_assert(mkdir(beside, 0755) == 0);
    else
        sh("chmod -R a-w '%s'", tree);
    struct pb_dataset ds;
    load_tiny(&ds, tree, PB_SPLIT_TEST, 0);
    ck_assert_int_eq(ds.decoded, 5);
    char want[256];
    snprintf(want, sizeof want, "%s/xdg/pipebench/tiny-imagenet-", root);
    ck_assert_msg(ds.cache_path && !strncmp(ds.cache_path, want, strlen(want)), "cache at %s",
                  ds.cache_path ? ds.cache_path : "(none)");
    ck_assert(exists(ds.cache_path));
    pb_dataset_finish(&ds);
    load_tiny(&ds, tree, PB_SPLIT_TEST, 0);
    ck_assert(ds.decoded == 0 && ds.map != NULL);
    pb_dataset_finish(&ds);
}
END_TEST

static void expect_tiny_error(const char *dir, enum pb_split split, const char *a, const char *b)
{
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert_int_eq(pb_dataset_load(&ds, "tiny-imagenet", dir, split, 0, 0, &e), -1);
    ck_assert(ds.pix == NULL && ds.y == NULL);
    assert_msg_has(&e, a);
    if (b)
        assert_msg_has(&e, b);
}

START_TEST(tiny_bad_jpegs)
{
    const char *root = copy_data();
    char img[512], msg[600];
    snprintf(img, sizeof img, "%s/tiny-imagenet-200/train/n01629819/images/n01629819_1.JPEG", root);
    size_t len;
    unsigned char *b = slurp(img, &len);
    /* cut in half: libjpeg-turbo's "Premature end of JPEG file" */
    spill(img, b, len / 2);
    snprintf(msg, sizeof msg, "%s: cannot decode the JPEG", img);
    expect_tiny_error(root, PB_SPLIT_TRAIN, msg, "unzip tiny-imagenet-200.zip again");
    /* not a JPEG at all */
    spill(img, "garbage, not a JPEG file at all", 31);
    snprintf(msg, sizeof msg, "%s is not a readable JPEG", img);
    expect_tiny_error(root, PB_SPLIT_TRAIN, msg, NULL);
    spill(img, b, len);
    free(b);
    /* a train class folder missing */
    sh("rm -r '%s/tiny-imagenet-200/train/n01443537'", root);
    expect_tiny_error(root, PB_SPLIT_TRAIN, "train/n01443537/images: No such file",
                      "the tree is incomplete");
}
END_TEST

START_TEST(tiny_bad_annotations)
{
    const char *root = copy_data();
    char notes[512];
    snprintf(notes, sizeof notes, "%s/tiny-imagenet-200/val/val_annotations.txt", root);
    size_t len;
    char *text = (char *)slurp(notes, &len);
    text[len] = 0;
    /* an unknown class on line 3 */
    char *bad = strdup(text), *at = strstr(bad, "val_2.JPEG\tn01443537");
    ck_assert(at != NULL);
    memcpy(at + 11, "n09999999", 9);
    spill(notes, bad, len);
    expect_tiny_error(root, PB_SPLIT_TEST, "val_annotations.txt line 3: class n09999999 of "
                      "val_2.JPEG is not in wnids.txt", NULL);
    /* the last image without its line */
    char *last = strstr(text, "val_4.JPEG");
    spill(notes, text, (size_t)(last - text));
    expect_tiny_error(root, PB_SPLIT_TEST, "val/images/val_4.JPEG has no line in", NULL);
    /* a line naming an image that is not there */
    char extra[4096];
    snprintf(extra, sizeof extra, "%sval_9.JPEG\tn01443537\t0\t0\t1\t1\n", text);
    spill(notes, extra, strlen(extra));
    expect_tiny_error(root, PB_SPLIT_TEST, "line 6 names val_9.JPEG, which is not in", NULL);
    /* a line without a class */
    snprintf(extra, sizeof extra, "%sval_0.JPEG\n", text);
    spill(notes, extra, strlen(extra));
    expect_tiny_error(root, PB_SPLIT_TEST, "line 6: expected 'FILE<TAB>WNID<TAB>box'", NULL);
    /* a class listed twice */
    char wnids[512];
    snprintf(wnids, sizeof wnids, "%s/tiny-imagenet-200/wnids.txt", root);
    spill(wnids, "n02124075\nn01443537\nn02124075\n", 30);
    expect_tiny_error(root, PB_SPLIT_TRAIN, "lists n02124075 twice", NULL);
    free(bad);
    free(text);
}
END_TEST

/* ---- transforms ---- */

static struct pb_safetensors aug_fx;

static void source(const char *name, uint8_t *out, size_t n)
{
    const struct pb_st_tensor *t = pb_st_find(&aug_fx, name);
    ck_assert_msg(t && t->dtype == PB_ST_I32 && t->count == n, "fixture %s", name);
    for (size_t i = 0; i < n; i++) {
        int32_t v;
        memcpy(&v, t->data + 4 * i, 4);
        out[i] = (uint8_t)v;
    }
}

/* Every case of data_aug.safetensors: pipebench's transform with the case's parameters
 * gives torchvision's floats exactly (tolerance 0: the same float32 operations in the same
 * order, see workloads/datasets/augment.c). */
START_TEST(transforms_match_torchvision)
{
    pb_load_fixture(&aug_fx, "data_aug.safetensors");
    static const float cm[3] = {0.4914f, 0.4822f, 0.4465f}, cs[3] = {0.2023f, 0.1994f, 0.2010f};
    static const float im[3] = {0.485f, 0.456f, 0.406f}, is[3] = {0.229f, 0.224f, 0.225f};
    uint8_t cifar[3 * 32 * 32], tiny[3 * 64 * 64];
    source("src.cifar", cifar, sizeof cifar);
    source("src.tiny", tiny, sizeof tiny);
    int ncases = 0;
    for (int k = 0;; k++) {
        char name[64];
        snprintf(name, sizeof name, "case%d.params", k);
        const struct pb_st_tensor *pt = pb_st_find(&aug_fx, name);
        if (!pt)
            break;
        int32_t p[8];
        ck_assert(pt->count == 8);
        memcpy(p, pt->data, sizeof p);
        int kind = p[0], side = p[6], step = p[7];
        bool is_cifar = kind < 2;
        struct pb_aug a;
        struct pb_err e;
        ck_assert(pb_aug_init(&a, is_cifar ? PB_AUG_CIFAR : PB_AUG_IMAGENET, 3, is_cifar ? 32 : 64,
                              is_cifar ? 32 : 64, side, true, is_cifar ? cm : im,
                              is_cifar ? cs : is, &e) == 0);
        size_t n = (size_t)3 * side * side;
        float *out = malloc(n * sizeof *out), *ref = malloc(n * sizeof *ref);
        void *scr = malloc(pb_aug_scratch_bytes(&a));
        struct pb_aug_crop c = {p[1], p[2], p[3], p[4], p[5] != 0};
        if (kind == 0 || kind == 2)
            pb_aug_train(&a, is_cifar ? cifar : tiny, &c, scr, out);
        else
            pb_aug_val(&a, is_cifar ? cifar : tiny, scr, out);
        int rows = (side + step - 1) / step;
        snprintf(name, sizeof name, "case%d.out", k);
        int64_t shape[3] = {3, rows, side};
        ck_assert(pb_st_read_f32_shaped(&aug_fx, name, ref, 3, shape, &e) == 0);
        for (int ch = 0; ch < 3; ch++)
            for (int r = 0; r < rows; r++)
                for (int x = 0; x < side; x++) {
                    float got = out[((size_t)ch * side + (size_t)r * step) * side + x];
                    float want = ref[((size_t)ch * rows + r) * side + x];
                    ck_assert_msg(got == want, "case %d (kind %d, side %d): [%d, %d, %d] = %.9g, "
                                  "torchvision %.9g", k, kind, side, ch, r * step, x, got, want);
                }
        free(out);
        free(ref);
        free(scr);
        ncases++;
    }
    ck_assert_int_ge(ncases, 18);
    pb_st_finish(&aug_fx);
}
END_TEST

/* A stand-in image dataset and a gather of n samples with key. */
static float *gather(const struct pb_dataset *ds, struct pb_data_key key, int n)
{
    float *x = malloc((size_t)n * ds->c * ds->h * ds->w * sizeof *x);
    pb_dataset_gather(ds, key, NULL, 0, n, x, NULL);
    return x;
}

START_TEST(keyed_draws)
{
    const char *likes[2] = {"cifar10", "tiny-imagenet"};
    for (int k = 0; k < 2; k++) {
        struct pb_dataset ds;
        struct pb_err e;
        struct pb_dataset_opts o = {.like = likes[k], .n = 40};
        ck_assert_msg(pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 5, &o, &e)
                      == 0, "%s", e.msg);
        size_t bytes = (size_t)40 * ds.c * ds.h * ds.w * sizeof(float);
        float *a = gather(&ds, (struct pb_data_key){5, 0, true}, 40);
        float *b = gather(&ds, (struct pb_data_key){5, 0, true}, 40);
        float *c = gather(&ds, (struct pb_data_key){5, 1, true}, 40);
        float *v0 = gather(&ds, (struct pb_data_key){5, 0, false}, 40);
        float *v1 = gather(&ds, (struct pb_data_key){5, 3, false}, 40);
        ck_assert(memcmp(a, b, bytes) == 0);
        ck_assert(memcmp(a, c, bytes) != 0);
        ck_assert(memcmp(v0, v1, bytes) == 0);
        /* a sample's pixels depend on its index in the file, not on its place in the batch */
        int32_t order[2] = {17, 3};
        float *pair = malloc(2 * bytes / 40);
        pb_dataset_gather(&ds, (struct pb_data_key){5, 0, true}, order, 0, 2, pair, NULL);
        size_t per = bytes / 40 / sizeof(float);
        ck_assert(memcmp(pair, a + 17 * per, per * sizeof(float)) == 0);
        ck_assert(memcmp(pair + per, a + 3 * per, per * sizeof(float)) == 0);
        free(pair);
        free(a);
        free(b);
        free(c);
        free(v0);
        free(v1);
        pb_dataset_finish(&ds);
    }
}
END_TEST

START_TEST(draws_in_range)
{
    struct pb_aug cifar, tiny, noflip;
    struct pb_err e;
    const float m[3] = {0.5f, 0.5f, 0.5f}, s[3] = {0.25f, 0.25f, 0.25f};
    ck_assert(pb_aug_init(&cifar, PB_AUG_CIFAR, 3, 32, 32, 32, true, m, s, &e) == 0);
    ck_assert(pb_aug_init(&tiny, PB_AUG_IMAGENET, 3, 64, 64, 224, true, m, s, &e) == 0);
    ck_assert(pb_aug_init(&noflip, PB_AUG_IMAGENET, 3, 64, 64, 299, false, m, s, &e) == 0);
    enum { N = 4000 };
    int hit[9][9] = {{0}}, flips = 0, tflips = 0;
    double amin = 1, amax = 0, rmin = 10, rmax = 0;
    for (int i = 0; i < N; i++) {
        struct pb_rng_key key = pb_rng_key(PB_RNG_AUGMENT, 11, 2, (uint64_t)i, 0);
        struct pb_aug_crop p, q;
        pb_aug_draw(&cifar, key, &p);
        ck_assert(p.top >= 0 && p.top <= 8 && p.left >= 0 && p.left <= 8);
        ck_assert(p.height == 32 && p.width == 32);
        hit[p.top][p.left]++;
        flips += p.flip;
        pb_aug_draw(&tiny, key, &q);
        ck_assert(q.top >= 0 && q.left >= 0 && q.height >= 1 && q.width >= 1);
        ck_assert(q.top + q.height <= 64 && q.left + q.width <= 64);
        double area = (double)q.height * q.width / 4096.0, ratio = (double)q.width / q.height;
        /* scale (0.08, 1) and ratio (3/4, 4/3) before the sides are rounded: a side of at
         * least 17 pixels moves the area by under 6% and the ratio by under 7% */
        ck_assert_msg(area >= 0.08 * 0.94 && area <= 1.0, "area %g", area);
        ck_assert_msg(ratio >= 0.75 / 1.07 && ratio <= 4.0 / 3.0 * 1.07, "ratio %g", ratio);
        amin = fmin(amin, area);
        amax = fmax(amax, area);
        rmin = fmin(rmin, ratio);
        rmax = fmax(rmax, ratio);
        tflips += q.flip;
        pb_aug_draw(&noflip, key, &q);
        ck_assert(!q.flip);
    }
    /* every CIFAR offset occurs (81 cells, about 49 draws each) */
    for (int y = 0; y < 9; y++)
        for (int x = 0; x < 9; x++)
            ck_assert_msg(hit[y][x] > 20, "offset (%d, %d) drawn %d times", y, x, hit[y][x]);
    /* flips: binomial(4000, 0.5), sd 31.6; 4.5 sd (deterministic draws, never flaky) */
    ck_assert_msg(abs(flips - N / 2) < 143 && abs(tflips - N / 2) < 143, "%d, %d flips", flips,
                  tflips);
    ck_assert_msg(amin < 0.1 && amax > 0.9 && rmin < 0.8 && rmax > 1.25,
                  "area %g..%g ratio %g..%g", amin, amax, rmin, rmax);
    /* torchvision's fallback after 10 failed attempts: no 1-pixel-wide crop can reach
     * 8% of a 64x1 image's area at a ratio above 3/4, so every draw falls back to the
     * central crop of ratio 3/4 (h = round(1 / 0.75) = 1), and likewise for 1x64 */
    for (int i = 0; i < 50; i++) {
        struct pb_rng_key key = pb_rng_key(PB_RNG_AUGMENT, 1, 0, (uint64_t)i, 0);
        struct pb_aug_crop p;
        pb_aug_resized_crop_params(64, 1, key, &p);
        ck_assert(p.top == 31 && p.left == 0 && p.height == 1 && p.width == 1);
        pb_aug_resized_crop_params(1, 64, key, &p);
        ck_assert(p.top == 0 && p.left == 31 && p.height == 1 && p.width == 1);
    }
    /* CenterCrop after Resize(round(S·256/224)) */
    ck_assert_int_eq(pb_aug_val_resize(224), 256);
    ck_assert_int_eq(pb_aug_val_resize(64), 73);
    ck_assert_int_eq(pb_aug_val_resize(299), 342);
}
END_TEST

/* Stand-ins: the dataset's stored shape, classes, normalisation and transforms; options
 * the data cannot take are refused. */
START_TEST(stand_ins_and_options)
{
    struct pb_dataset ds;
    struct pb_err e;
    struct pb_dataset_opts o = {.like = "cifar100", .n = 64, .crop = 24, .no_flip = true};
    ck_assert_msg(pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 1, &o, &e) == 0,
                  "%s", e.msg);
    ck_assert(ds.nclasses == 100 && ds.sc == 3 && ds.sh == 32 && ds.c == 3 && ds.h == 24);
    ck_assert(ds.aug.family == PB_AUG_CIFAR && !ds.aug.flip && ds.pix && !ds.x);
    ck_assert_float_eq(ds.aug.mean[0], 0.4914f);
    pb_dataset_finish(&ds);
    /* at the native side, the normalised pixels of a stand-in are near N(0, 1): mean ≈ 0,
     * variance ≈ 1 (the clamp to 0..255 at about ±2.4 sd trims the variance to ~0.95) */
    o = (struct pb_dataset_opts){.like = "cifar100", .n = 64};
    ck_assert(pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 1, &o, &e) == 0);
    float *x = gather(&ds, (struct pb_data_key){1, 0, false}, 64);
    double mean = 0, var = 0;
    size_t n = (size_t)64 * 3 * 32 * 32;
    for (size_t i = 0; i < n; i++)
        mean += x[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        var += (x[i] - mean) * (x[i] - mean);
    var /= (double)n;
    ck_assert_msg(fabs(mean) < 0.1 && var > 0.85 && var < 1.1, "mean %g var %g", mean, var);
    free(x);
    pb_dataset_finish(&ds);
    o = (struct pb_dataset_opts){.like = "tiny-imagenet", .n = 8, .crop = 32};
    ck_assert(pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TEST, 0, 1, &o, &e) == 0);
    ck_assert(ds.nclasses == 200 && ds.sh == 64 && ds.h == 32 && ds.aug.flip);
    pb_dataset_finish(&ds);
    o = (struct pb_dataset_opts){.like = "fashion-mnist"};
    ck_assert_int_eq(pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TEST, 0, 1, &o, &e), -1);
    assert_msg_has(&e, "'fashion-mnist' is not an image dataset");
    o = (struct pb_dataset_opts){.like = "cifar10", .h = 16};
    ck_assert_int_eq(pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TEST, 0, 1, &o, &e), -1);
    assert_msg_has(&e, "drop the explicit shape");
    o = (struct pb_dataset_opts){.crop = 32};
    ck_assert_int_eq(pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TEST, 0, 1, &o, &e), -1);
    assert_msg_has(&e, "no resize or crop transform");
    o = (struct pb_dataset_opts){.crop = 28};
    ck_assert(pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TEST, 0, 1, &o, &e) == 0);
    pb_dataset_finish(&ds);
    o = (struct pb_dataset_opts){.crop = 5000};
    ck_assert_int_eq(pb_dataset_load_opts(&ds, "cifar10", data_dir(), PB_SPLIT_TEST, 0, 1, &o, &e),
                     -1);
    assert_msg_has(&e, "input side must be between 1 and 1024");
    o = (struct pb_dataset_opts){.like = "cifar10"};
    ck_assert_int_eq(pb_dataset_load_opts(&ds, "cifar10", data_dir(), PB_SPLIT_TEST, 0, 1, &o, &e),
                     -1);
    assert_msg_has(&e, "synthetic dataset's option");
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("image_data");
    TCase *cifar = tcase_create("cifar");
    tcase_add_test(cifar, cifar10_reads_records);
    tcase_add_test(cifar, cifar100_fine_labels);
    tcase_add_test(cifar, cifar_truncated);
    tcase_add_test(cifar, cifar_bad_labels);
    tcase_add_test(cifar, cifar_missing);
    tcase_add_test(cifar, folder_options);
    suite_add_tcase(s, cifar);
    TCase *tiny = tcase_create("tiny-imagenet");
    tcase_add_test(tiny, tiny_reads_tree);
    tcase_add_test(tiny, tiny_cache);
    tcase_add_test(tiny, tiny_cache_folder);
    tcase_add_test(tiny, tiny_bad_jpegs);
    tcase_add_test(tiny, tiny_bad_annotations);
    suite_add_tcase(s, tiny);
    TCase *aug = tcase_create("transforms");
    tcase_add_test(aug, transforms_match_torchvision);
    tcase_add_test(aug, keyed_draws);
    tcase_add_test(aug, draws_in_range);
    tcase_add_test(aug, stand_ins_and_options);
    suite_add_tcase(s, aug);
    return s;
}
