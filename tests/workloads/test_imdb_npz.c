/* tests/workloads/test_imdb_npz.c — IMDb from Keras' imdb.npz: the committed numpy-written
 * fixture (fixtures_imdb_npz.py: object arrays pickled as numpy does, ids, lengths and
 * the alternating order as Keras' load_data and the aclImdb loader give them), a
 * labels-only load, the npz taking precedence over aclImdb/, and its errors (a
 * truncated or non-zip file, a cut pickle, a pickle that calls something else than
 * numpy's array builder: each a message, never a crash; CLI exit 2, nothing recorded),
 * and label arrays whose shape claims more entries than the file holds (2^62 wrapped the
 * allocation and overflowed the heap; 2^61 and 10^12 aborted at the allocation). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "tests/support/cli_util.h"
#include "tests/support/test_util.h"
#include "workloads/datasets/dataset.h"

static const char *fixture_dir(const char *sub)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/data/%s",
             getenv("PB_FIXTURES") ? getenv("PB_FIXTURES") : "tests/fixtures", sub);
    return buf;
}

static void check_split(int vocab, int steps, enum pb_split split, int n)
{
    struct pb_safetensors fx;
    struct pb_err e;
    pb_load_fixture(&fx, "imdb_npz.safetensors");
    char tag[64], name[96];
    snprintf(tag, sizeof tag, "v%dt%d.%s", vocab, steps,
             split == PB_SPLIT_TRAIN ? "train" : "test");
    struct pb_dataset_opts o = {.vocab = vocab, .steps = steps};
    struct pb_dataset ds;
    ck_assert_msg(
        pb_dataset_load_opts(&ds, "imdb", fixture_dir("imdb-npz"), split, 0, 0, &o, &e) == 0, "%s",
        e.msg);
    ck_assert_int_eq(ds.n, n);
    ck_assert(ds.c == steps && ds.nclasses == 2 && ds.vocab == vocab);
    float *x = malloc((size_t)n * steps * sizeof *x), len[8], y[8];
    snprintf(name, sizeof name, "%s.x", tag);
    ck_assert(pb_st_read_f32(&fx, name, x, (size_t)n * steps, &e) == 0);
    snprintf(name, sizeof name, "%s.len", tag);
    ck_assert(pb_st_read_f32(&fx, name, len, (size_t)n, &e) == 0);
    snprintf(name, sizeof name, "%s.y", tag);
    ck_assert(pb_st_read_f32(&fx, name, y, (size_t)n, &e) == 0);
    pb_assert_close(tag, ds.x, x, (size_t)n * steps, 0, 1e-6);
    for (int i = 0; i < n; i++)
        ck_assert(ds.len[i] == (int)len[i] && ds.y[i] == (int)y[i]);
    pb_dataset_finish(&ds);
    o.parts = PB_DATA_LABELS;
    ck_assert(pb_dataset_load_opts(&ds, "imdb", fixture_dir("imdb-npz"), split, 2, 0, &o, &e) ==
              0);
    ck_assert(ds.x == NULL && ds.n == 2 && ds.len[1] == (int)len[1] && ds.y[1] == (int)y[1]);
    pb_dataset_finish(&ds);
    free(x);
    pb_st_finish(&fx);
}

START_TEST(fixture)
{
    check_split(20, 8, PB_SPLIT_TRAIN, 6);
    check_split(20, 8, PB_SPLIT_TEST, 3);
    check_split(10000, 2600, PB_SPLIT_TRAIN, 6);
    check_split(10000, 2600, PB_SPLIT_TEST, 3);
}
END_TEST

/* imdb.npz beside an aclImdb/ tree is the one read */
START_TEST(npz_first)
{
    char dir[64], cmd[16384], tree[4096];
    cli_scratch(dir, sizeof dir, "npz");
    snprintf(tree, sizeof tree, "%s", fixture_dir(""));
    snprintf(cmd, sizeof cmd, "cp -r '%s'/aclImdb '%s' && cp '%s'/imdb.npz '%s'", tree, dir,
             fixture_dir("imdb-npz"), dir);
    ck_assert_int_eq(system(cmd), 0);
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert(pb_dataset_load(&ds, "imdb", dir, PB_SPLIT_TEST, 0, 0, &e) == 0);
    ck_assert_int_eq(ds.n, 3);  /* the npz's 3 test reviews, not the tree's 4 */
    pb_dataset_finish(&ds);
    cli_cleanup(dir);
}
END_TEST

/* dir/imdb.npz holding y_train.npy: a 1-D '<i8' array whose header claims `shape`
 * entries, followed by 16 bytes of zero labels. */
static void write_claiming_npz(const char *dir, const char *shape)
{
    static char npy[256];
    char hdr[128];
    int hl = snprintf(hdr, sizeof hdr, "{'descr': '<i8', 'fortran_order': False, 'shape': (%s,), }",
                      shape);
    while ((hl + 10) % 64 != 63)
        hdr[hl++] = ' ';
    hdr[hl++] = '\n';
    memcpy(npy, "\x93NUMPY\x01\x00", 8);
    npy[8] = (char)hl;
    npy[9] = 0;
    memcpy(npy + 10, hdr, (size_t)hl);
    memset(npy + 10 + hl, 0, 16);
    char path[4096];
    snprintf(path, sizeof path, "%s/imdb.npz", dir);
    int err;
    zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err);
    ck_assert(z != NULL);
    zip_source_t *src = zip_source_buffer(z, npy, (zip_uint64_t)(10 + hl + 16), 0);
    ck_assert(src != NULL);
    ck_assert(zip_file_add(z, "y_train.npy", src, 0) >= 0);
    ck_assert_int_eq(zip_close(z), 0);
}

START_TEST(huge_shape)
{
    const char *shapes[] = {"4611686018427387904", "2305843009213693952", "1000000000000", "3"};
    for (int i = 0; i < 4; i++) {
        char tmp[64];
        cli_scratch(tmp, sizeof tmp, "npzshape");
        write_claiming_npz(tmp, shapes[i]);
        struct pb_dataset ds;
        struct pb_err e;
        ck_assert_int_eq(pb_dataset_load(&ds, "imdb", tmp, PB_SPLIT_TRAIN, 0, 0, &e), -1);
        const char *want = i < 3 ? "claims" : "too few bytes";
        ck_assert_msg(strstr(e.msg, want) && strstr(e.msg, "afresh"), "%s: %s", shapes[i], e.msg);
        cli_cleanup(tmp);
    }
}
END_TEST

START_TEST(errors)
{
    struct pb_dataset ds;
    struct pb_err e;
    const char *bad = fixture_dir("imdb-npz-bad");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", bad);
    ck_assert_int_eq(pb_dataset_load(&ds, "imdb", dir, PB_SPLIT_TRAIN, 0, 0, &e), -1);
    ck_assert_msg(strstr(e.msg, "x_train.npy in imdb.npz is not the pickled object array") &&
                  strstr(e.msg, "truncated"), "%s", e.msg);
    ck_assert_int_eq(pb_dataset_load(&ds, "imdb", dir, PB_SPLIT_TEST, 0, 0, &e), -1);
    ck_assert_msg(strstr(e.msg, "x_test.npy in imdb.npz is not the pickled object array"), "%s",
                  e.msg);
    ck_assert_int_eq(
        pb_dataset_load(&ds, "imdb", fixture_dir("imdb-npz"), PB_SPLIT_TEST, 4, 0, &e), -1);
    ck_assert_msg(strstr(e.msg, "limit 4 is more than the 3"), "%s", e.msg);
    /* cut short or not a zip: libzip's reason, the advice; the CLI exits 2 with no run */
    const char *breaks[] = {"head -c 5000 src.npz > imdb.npz", "echo not a zip > imdb.npz"};
    for (int i = 0; i < 2; i++) {
        char tmp[64], cmd[8192], out[8192];
        cli_scratch(tmp, sizeof tmp, "npz");
        snprintf(cmd, sizeof cmd, "cp '%s'/imdb.npz '%s'/src.npz && cd '%s' && %s",
                 fixture_dir("imdb-npz"), tmp, tmp, breaks[i]);
        ck_assert_int_eq(system(cmd), 0);
        ck_assert_int_eq(pb_dataset_load(&ds, "imdb", tmp, PB_SPLIT_TRAIN, 0, 0, &e), -1);
        ck_assert_msg(strstr(e.msg, "not a readable zip archive") && strstr(e.msg, "afresh"),
                      "%s: %s", breaks[i], e.msg);
        int rc = cli_run(tmp, out, sizeof out, "run --quiet --model residual-lstm --preset small "
                         "--data-dir . --stages 2 --microbatch-size 2 --optimizer adam --db r.db");
        ck_assert_msg(rc == 2 && strstr(out, "imdb.npz"), "exit %d: %s", rc, out);
        snprintf(cmd, sizeof cmd, "%s/r.db", tmp);
        ck_assert(access(cmd, F_OK) != 0 ||
                  cli_db_int(tmp, "r.db", "SELECT count(*) FROM runs") == 0);
        cli_cleanup(tmp);
    }
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("imdb_npz");
    TCase *t = tcase_create("imdb_npz");
    tcase_add_test(t, fixture);
    tcase_add_test(t, npz_first);
    tcase_add_test(t, errors);
    tcase_add_test(t, huge_shape);
    suite_add_tcase(s, t);
    return s;
}
