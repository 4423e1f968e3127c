/* tests/workloads/test_wmt16.c — the wmt16-de-en loader on the committed MLPerf-format fixture
 * (fixtures_wmt16.py: ids, lengths and targets as the MLPerf reference's tokenizer
 * gives them; the training length filter, the test cut, parts, --limit, a smaller
 * vocabulary), its errors (missing folder or files, line counts that differ, NUL
 * bytes, an empty vocabulary: the message says what to download and where), the
 * synthetic stand-in (deterministic, framed, a translation of its source), and the
 * bucketed epoch order (a permutation of like-length batches, keyed by seed and epoch). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/cli_util.h"
#include "tests/support/test_util.h"
#include "workloads/datasets/dataset.h"

static const char *data_dir(void)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/data/wmt16-de-en",
             getenv("PB_FIXTURES") ? getenv("PB_FIXTURES") : "tests/fixtures");
    return buf;
}

static void read_f32(const struct pb_safetensors *fx, const char *tag, const char *part,
                     float *out, size_t count)
{
    char name[96];
    struct pb_err e;
    snprintf(name, sizeof name, "%s.%s", tag, part);
    ck_assert_msg(pb_st_read_f32(fx, name, out, count, &e) == 0, "%s", e.msg);
}

static void check_split(int steps, enum pb_split split, int n_expected)
{
    struct pb_safetensors fx;
    struct pb_err e;
    pb_load_fixture(&fx, "wmt16.safetensors");
    char tag[32];
    snprintf(tag, sizeof tag, "t%d.%s", steps, split == PB_SPLIT_TRAIN ? "train" : "test");
    struct pb_dataset_opts o = {.steps = steps};
    struct pb_dataset ds, lab, in;
    ck_assert_msg(pb_dataset_load_opts(&ds, "wmt16-de-en", data_dir(), split, 0, 0, &o, &e) == 0,
                  "%s", e.msg);
    int n = ds.n, T = steps;
    ck_assert_msg(n == n_expected, "%s: %d pairs, expected %d", tag, n, n_expected);
    ck_assert(ds.c == 2 * T && ds.h == 1 && ds.w == 1 && ds.vocab == 24 && ds.tgt_steps == T &&
              ds.nclasses == T + 1);
    float *x = malloc((size_t)n * 2 * T * sizeof *x), *tgt = malloc((size_t)n * T * sizeof *tgt);
    float len[16], y[16];
    read_f32(&fx, tag, "x", x, (size_t)n * 2 * T);
    read_f32(&fx, tag, "tgt", tgt, (size_t)n * T);
    read_f32(&fx, tag, "len", len, (size_t)n);
    read_f32(&fx, tag, "y", y, (size_t)n);
    pb_assert_close(tag, ds.x, x, (size_t)n * 2 * T, 0, 1e-6);  /* whole ids: exact */
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(ds.len[i], (int)len[i]);
        ck_assert_int_eq(ds.y[i], (int)y[i]);
        for (int t = 0; t < T; t++)
            ck_assert_int_eq(ds.tgt[(size_t)i * T + t], (int)tgt[(size_t)i * T + t]);
    }
    int32_t g[2 * 50];
    int32_t order[2] = {n - 1, 0};
    pb_dataset_gather_targets(&ds, order, 0, 2, g);
    ck_assert(!memcmp(g, ds.tgt + (size_t)(n - 1) * T, (size_t)T * sizeof *g));
    /* the parts: lengths always, tokens with the inputs, targets with the labels */
    o.parts = PB_DATA_LABELS;
    ck_assert(pb_dataset_load_opts(&lab, "wmt16-de-en", data_dir(), split, 2, 0, &o, &e) == 0);
    ck_assert(lab.x == NULL && lab.n == 2 && lab.len[1] == ds.len[1] && lab.y[1] == ds.y[1] &&
              !memcmp(lab.tgt, ds.tgt, 2 * (size_t)T * sizeof *lab.tgt));
    o.parts = PB_DATA_INPUTS;
    ck_assert(pb_dataset_load_opts(&in, "wmt16-de-en", data_dir(), split, 2, 0, &o, &e) == 0);
    ck_assert(in.tgt == NULL && in.len && in.y &&
              !memcmp(in.x, ds.x, 4 * (size_t)T * sizeof(float)));
    pb_dataset_finish(&ds);
    pb_dataset_finish(&lab);
    pb_dataset_finish(&in);
    free(x);
    free(tgt);
    pb_st_finish(&fx);
}

START_TEST(fixture)
{
    check_split(8, PB_SPLIT_TRAIN, 4);   /* 3 of the 7 pairs have a side over 8 tokens */
    check_split(50, PB_SPLIT_TRAIN, 7);
    check_split(8, PB_SPLIT_TEST, 3);    /* the long test pair is cut, EOS last */
    check_split(50, PB_SPLIT_TEST, 3);
    /* a smaller vocabulary maps the ids above it to UNK; the limit keeps the first pairs */
    struct pb_dataset_opts o = {.steps = 50, .vocab = 10};
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert(pb_dataset_load_opts(&ds, "wmt16-de-en", data_dir(), PB_SPLIT_TRAIN, 1, 0, &o, &e) ==
              0);
    ck_assert(ds.n == 1 && ds.vocab == 10);
    /* "the house is big ." -> <s> the(4) house(17 -> UNK) is(9) big(11) .(16 -> UNK) <\s> */
    const float want[] = {2, 4, 1, 9, 1, 1, 3, 0};
    for (int t = 0; t < 8; t++)
        ck_assert_msg(ds.x[t] == want[t], "token %d: %g", t, ds.x[t]);
    pb_dataset_finish(&ds);
}
END_TEST

/* A copy of the fixture folder in a scratch folder, broken by `cmd` run there; loading
 * it fails with a message holding `expect` and the download advice. */
static void broken(const char *cmd, const char *expect)
{
    char dir[64], sh[8192];
    cli_scratch(dir, sizeof dir, "wmt16");
    snprintf(sh, sizeof sh, "cp '%s'/* '%s' && cd '%s' && %s", data_dir(), dir, dir, cmd);
    ck_assert_int_eq(system(sh), 0);
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert_int_eq(pb_dataset_load(&ds, "wmt16-de-en", dir, PB_SPLIT_TRAIN, 0, 0, &e), -1);
    ck_assert_msg(strstr(e.msg, expect) && strstr(e.msg, "download_dataset.sh") &&
                  strstr(e.msg, "PIPEBENCH_WMT16_DE_EN_DIR"), "%s: %s", cmd, e.msg);
    cli_cleanup(dir);
}

START_TEST(errors)
{
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert_int_eq(pb_dataset_load(&ds, "wmt16-de-en", "/nonexistent", PB_SPLIT_TEST, 0, 0, &e),
                     -1);
    ck_assert_msg(strstr(e.msg, "no vocab.bpe.32000 in /nonexistent (from --data-dir)") &&
                  strstr(e.msg, "download_dataset.sh") &&
                  strstr(e.msg, "/usr/share/datasets/wmt16-de-en"),
                  "%s", e.msg);
    broken("rm train.tok.clean.bpe.32000.de", "no train.tok.clean.bpe.32000.de in");
    broken("sed -i '$d' train.tok.clean.bpe.32000.en", "differ in length");
    broken("printf 'a\\0b\\n' >> train.tok.clean.bpe.32000.en && "
           "echo x >> train.tok.clean.bpe.32000.de", "holds a NUL byte");
    broken(": > vocab.bpe.32000", "vocabulary");
    ck_assert_int_eq(pb_dataset_load(&ds, "wmt16-de-en", data_dir(), PB_SPLIT_TEST, 4, 0, &e), -1);
    ck_assert_msg(strstr(e.msg, "holds 3 pairs") && strstr(e.msg, "--limit-train"), "%s", e.msg);
    /* through the CLI: exit 2, the advice, no database written */
    char dir[64], out[8192], db[128];
    cli_scratch(dir, sizeof dir, "wmt16");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run --quiet --model residual-lstm "
                             "--preset small --dataset wmt16-de-en --data-dir /nonexistent "
                             "--stages 2 --db r.db"),
                     2);
    ck_assert_msg(strstr(out, "download_dataset.sh"), "%s", out);
    snprintf(db, sizeof db, "%s/r.db", dir);
    ck_assert(access(db, F_OK) != 0);
    cli_cleanup(dir);
}
END_TEST

START_TEST(stand_in)
{
    struct pb_dataset a, b;
    struct pb_err e;
    struct pb_dataset_opts o = {.like = "wmt16-de-en", .n = 300};
    ck_assert(pb_dataset_load_opts(&a, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 5, &o, &e) == 0);
    ck_assert(pb_dataset_load_opts(&b, "synthetic", NULL, PB_SPLIT_TRAIN, 50, 5, &o, &e) == 0);
    int T = 50;
    ck_assert(a.vocab == PB_WMT16_VOCAB && a.c == 2 * T && a.tgt_steps == T && b.n == 50);
    ck_assert(!memcmp(a.x, b.x, 50 * 2 * (size_t)T * sizeof(float)));
    double mean = 0;
    for (int i = 0; i < a.n; i++) {
        const float *s = a.x + (size_t)i * 2 * T, *t = s + T;
        int ls = a.len[i], lt = a.y[i];
        ck_assert(ls >= 3 && ls <= T && lt >= 3 && lt <= T);
        ck_assert(s[0] == PB_WMT16_BOS && s[ls - 1] == PB_WMT16_EOS && t[0] == PB_WMT16_BOS &&
                  t[lt - 1] == PB_WMT16_EOS);
        for (int k = 1; k < T; k++) {
            if (k < ls - 1)
                ck_assert(s[k] >= 4 && s[k] < PB_WMT16_VOCAB);
            if (k >= ls)
                ck_assert(s[k] == PB_WMT16_PAD);
            if (k >= lt)
                ck_assert(t[k] == PB_WMT16_PAD);
            ck_assert(a.tgt[(size_t)i * T + k] == (int)t[k]);
        }
        /* the first target word translates the first source word */
        ck_assert((int)t[1] == 4 + (int)((7919L * ((long)s[1] - 4) + 13) % (PB_WMT16_VOCAB - 4)));
        mean += ls;
    }
    mean /= a.n;
    ck_assert_msg(mean > 15 && mean < 30, "mean source length %g", mean);
    pb_dataset_finish(&a);
    pb_dataset_finish(&b);
}
END_TEST

START_TEST(bucket_order)
{
    struct pb_dataset ds;
    struct pb_err e;
    struct pb_dataset_opts o = {.like = "wmt16-de-en", .n = 1000, .parts = PB_DATA_LABELS};
    ck_assert(pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 1, &o, &e) == 0);
    int n = ds.n, batch = 16, width = 10;
    int32_t *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    char *seen = calloc((size_t)n, 1);
    pb_dataset_bucket_order(&ds, 7, 0, batch, width, a);
    for (int i = 0; i < n; i++) {
        ck_assert(a[i] >= 0 && a[i] < n && !seen[a[i]]);
        seen[a[i]] = 1;
    }
    pb_dataset_bucket_order(&ds, 7, 0, batch, width, b);
    ck_assert(!memcmp(a, b, (size_t)n * sizeof *a));
    pb_dataset_bucket_order(&ds, 7, 1, batch, width, b);
    ck_assert(memcmp(a, b, (size_t)n * sizeof *a));
    /* a full batch spans at most two neighbouring buckets; batches are not in bucket order */
    int ascending = 0, prev = -1;
    for (int k = 0; k + batch <= n; k += batch) {
        int lo = 1 << 30, hi = -1;
        for (int i = k; i < k + batch; i++) {
            int l = ds.len[a[i]] > ds.y[a[i]] ? ds.len[a[i]] : ds.y[a[i]];
            lo = l / width < lo ? l / width : lo;
            hi = l / width > hi ? l / width : hi;
        }
        ck_assert_msg(hi - lo <= 1, "batch at %d spans buckets %d..%d", k, lo, hi);
        ascending += lo >= prev;
        prev = lo;
    }
    ck_assert(ascending < n / batch);
    free(a);
    free(b);
    free(seen);
    pb_dataset_finish(&ds);
}
END_TEST

/* The epoch order a run trains in: bucketed for a translation dataset (loaded with
 * either part), the plain permutation for any other, the file order unshuffled. */
START_TEST(epoch_order_by_dataset)
{
    struct pb_err e;
    int batch = 16;
    for (int part = PB_DATA_INPUTS; part <= PB_DATA_LABELS; part++) {
        struct pb_dataset ds;
        struct pb_dataset_opts o = {.like = "wmt16-de-en", .n = 500, .parts = part};
        ck_assert(pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 1, &o, &e) == 0);
        int n = ds.n;
        int32_t *got = malloc((size_t)n * sizeof *got), *want = malloc((size_t)n * sizeof *want);
        pb_dataset_epoch_order(&ds, 3, 2, true, batch, got);
        pb_dataset_bucket_order(&ds, 3, 2, batch, PB_BUCKET_WIDTH, want);
        ck_assert(!memcmp(got, want, (size_t)n * sizeof *got));
        pb_epoch_order(3, 2, n, true, want);
        ck_assert(memcmp(got, want, (size_t)n * sizeof *got));
        pb_dataset_epoch_order(&ds, 3, 2, false, batch, got);
        for (int i = 0; i < n; i++)
            ck_assert_int_eq(got[i], i);
        free(got);
        free(want);
        pb_dataset_finish(&ds);
    }
    struct pb_dataset img;
    struct pb_dataset_opts o = {.n = 300};
    ck_assert(pb_dataset_load_opts(&img, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 1, &o, &e) == 0);
    ck_assert_int_eq(img.n, 300);
    int32_t got[300], want[300];
    pb_dataset_epoch_order(&img, 3, 2, true, batch, got);
    pb_epoch_order(3, 2, img.n, true, want);
    ck_assert(!memcmp(got, want, sizeof got));
    pb_dataset_finish(&img);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("wmt16");
    TCase *t = tcase_create("wmt16");
    tcase_add_test(t, fixture);
    tcase_add_test(t, errors);
    tcase_add_test(t, stand_in);
    tcase_add_test(t, bucket_order);
    tcase_add_test(t, epoch_order_by_dataset);
    suite_add_tcase(s, t);
    return s;
}
