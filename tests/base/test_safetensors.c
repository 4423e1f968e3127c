/* tests/base/test_safetensors.c — the safetensors reader enforces the format's rules
 * (harness/base/safetensors.h): whole-number shapes and offsets, shapes whose products
 * fit, tensors that tile the data section without overlaps or holes, unique names and
 * one __metadata__ of string values; a checkpoint loads only into tensors of the same shape (a
 * transposed weight is refused by `pipebench run --init`, naming both shapes). */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "harness/base/safetensors.h"
#include "tests/support/cli_util.h"

static char dir[64];

/* A file of the given JSON header and `data` zero bytes of tensor data. */
static const char *write_st(const char *name, const char *header, size_t data)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert(f != NULL);
    uint64_t n = strlen(header);
    for (int i = 0; i < 8; i++)
        fputc((int)(n >> (8 * i)) & 0xff, f);
    fputs(header, f);
    for (size_t i = 0; i < data; i++)
        fputc(0, f);
    fclose(f);
    return path;
}

static void expect_refused(const char *header, size_t data, const char *fragment)
{
    struct pb_safetensors st;
    struct pb_err e;
    const char *path = write_st("bad.safetensors", header, data);
    ck_assert_msg(pb_st_load(&st, path, &e) == -1, "accepted: %s", header);
    ck_assert_msg(strstr(e.msg, fragment), "%s: message lacks '%s': %s", header, fragment, e.msg);
}

START_TEST(test_format_rules)
{
    cli_scratch(dir, sizeof dir, "st");
    struct pb_safetensors st;
    struct pb_err e;
    const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[16,32]},"
                     "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    ck_assert_msg(pb_st_load(&st, write_st("ok.safetensors", ok, 32), &e) == 0, "%s", e.msg);
    ck_assert_int_eq(st.n, 2);
    pb_st_finish(&st);
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,10]}}", 10,
                   "whole number");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1e30],\"data_offsets\":[0,16]}}", 16,
                   "whole number");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],"
                   "\"data_offsets\":[0,0]}}", 0, "more elements than memory");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0.5,16.5]}}", 17,
                   "data_offsets");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}", 24,
                   "overlapping or gapped");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[20,36]}}", 36,
                   "overlapping or gapped");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 20,
                   "cover 16 of the 20");
    expect_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                   "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,32]}}", 32,
                   "appears twice");
    expect_refused("{\"__metadata__\":{\"x\":\"1\"},\"__metadata__\":{\"y\":\"2\"},"
                   "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                   "__metadata__ appears twice");
    /* the format's __metadata__ maps names to strings (a number there made pb_st_save,
     * writing the checkpoint again, abort: found by tests/fuzz/fuzz_safetensors) */
    expect_refused("{\"__metadata__\":5,\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                   "\"data_offsets\":[0,4]}}", 4, "not an object of string values");
    expect_refused("{\"__metadata__\":{\"run_id\":3}}", 0, "not an object of string values");
    /* a shaped read names the shapes, a missing name lists what the file holds */
    ck_assert(pb_st_load(&st, write_st("ok.safetensors", ok, 32), &e) == 0);
    float out[4];
    int64_t want[2] = {4, 1};
    ck_assert_int_eq(pb_st_read_f32_shaped(&st, "a", out, 2, want, &e), -1);
    ck_assert_msg(strstr(e.msg, "shape [2, 2], expected [4, 1]"), "%s", e.msg);
    ck_assert_int_eq(pb_st_read_f32_shaped(&st, "c", out, 2, want, &e), -1);
    ck_assert_msg(strstr(e.msg, "'a', 'b'"), "%s", e.msg);
    pb_st_finish(&st);
    cli_cleanup(dir);
}
END_TEST

/* A checkpoint whose first linear weight is stored transposed ([784, 256] instead of
 * [256, 784], the same bytes) is refused by --init. */
START_TEST(test_transposed_weight_refused)
{
    char out[8192];
    cli_scratch(dir, sizeof dir, "st-init");
    const char *run = "run --quiet --model mlp --dataset synthetic --stages 2 --limit-train 64 "
                      "--limit-val 32 --microbatch-size 32 --db r.db";
    ck_assert_msg(cli_run(dir, out, sizeof out, "%s --save w.safetensors", run) == 0, "%s", out);
    char path[128];
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    FILE *f = fopen(path, "r+b");
    ck_assert(f != NULL);
    char head[4096];
    size_t n = fread(head, 1, sizeof head - 1, f);
    head[n] = 0;
    char *s = strstr(head + 8, "[256,784]");  /* past the binary header length */
    ck_assert_msg(s != NULL, "no [256,784] weight in the header: %.300s", head + 8);
    memcpy(s, "[784,256]", 9);
    fseek(f, s - head, SEEK_SET);
    fwrite(s, 1, 9, f);
    fclose(f);
    int rc = cli_run(dir, out, sizeof out, "%s --init w.safetensors", run);
    ck_assert_msg(rc == 2 && strstr(out, "has shape [784, 256], expected [256, 784]"),
                  "exit %d: %s", rc, out);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("format");
    tcase_add_test(tc, test_format_rules);
    tcase_add_test(tc, test_transposed_weight_refused);
    suite_add_tcase(s, tc);
    return s;
}
