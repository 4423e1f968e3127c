/* tests/base/test_paths.c — the checks of the paths the harness writes and reads
 * (harness/base/out_path.h, in_file.h): an output is never the results database, a
 * folder, a device or a FIFO and its folder must be writable; a rename replaces only a
 * regular file; an input is opened only as a regular file within its size limit, and a
 * FIFO without a writer is refused at once, not waited on. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/base/in_file.h"
#include "harness/base/out_path.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/pb_test_paths_XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *at(const char *name)
{
    static char buf[4][160];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void touch(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void refused(int rc, const struct pb_err *e, const char *a, const char *b)
{
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(e->msg, a) && (!b || strstr(e->msg, b)), "%s", e->msg);
}

START_TEST(outputs)
{
    struct pb_err e;
    touch(at("runs.db"), "x");
    touch(at("w.safetensors"), "x");
    ck_assert_int_eq(mkdir(at("sub"), 0755), 0);
    ck_assert_int_eq(mkfifo(at("fifo"), 0644), 0);
    ck_assert_int_eq(pb_out_path_check("--save", at("w.safetensors"), at("runs.db"), &e), 0);
    ck_assert_int_eq(pb_out_path_check("--save", at("new.safetensors"), at("runs.db"), &e), 0);
    refused(pb_out_path_check("--save", at("runs.db"), at("runs.db"), &e), &e,
            "it is the results database", "give --save another path");
    refused(pb_out_path_check("--save", at("sub/../runs.db"), at("runs.db"), &e), &e,
            "it is the results database", NULL);
    /* neither exists yet: the same path is the same file */
    refused(pb_out_path_check("--save", at("./n.db"), at("n.db"), &e), &e,
            "it is the results database", NULL);
    refused(pb_out_path_check("--save", at("sub"), NULL, &e), &e, "it is a folder", NULL);
    refused(pb_out_path_check("--save", at("fifo"), NULL, &e), &e, "it is a FIFO", NULL);
    refused(pb_out_path_check("--save", "/dev/null", NULL, &e), &e, "it is a device", NULL);
    refused(pb_out_path_check("--save", at("nodir/w"), NULL, &e), &e, "its folder",
            "writable output folder");
    refused(pb_out_path_check("--save", at("w.safetensors/x"), NULL, &e), &e, "is not a folder",
            NULL);
    refused(pb_out_path_replaceable("/dev/null", &e), &e, "it is a device", NULL);
    refused(pb_out_path_replaceable(at("sub"), &e), &e, "it is a folder", NULL);
    refused(pb_out_path_replaceable(at("fifo"), &e), &e, "it is a FIFO", NULL);
    ck_assert_int_eq(pb_out_path_replaceable(at("w.safetensors"), &e), 0);
    ck_assert_int_eq(pb_out_path_replaceable(at("absent"), &e), 0);
}
END_TEST

START_TEST(inputs)
{
    struct pb_err e;
    touch(at("text"), "hello\n");
    ck_assert_int_eq(mkfifo(at("fifo"), 0644), 0);
    FILE *f = pb_in_file_open(at("text"), 100, &e);
    ck_assert(f != NULL);
    fclose(f);
    ck_assert(pb_in_file_open(at("text"), 3, &e) == NULL && errno == 0);
    ck_assert_msg(strstr(e.msg, "is 6 bytes, over the 3-byte limit"), "%s", e.msg);
    ck_assert(pb_in_file_open(at("fifo"), 0, &e) == NULL && errno == 0);
    ck_assert_msg(strstr(e.msg, "is a FIFO, not a file"), "%s", e.msg);
    ck_assert(pb_in_file_open("/dev/zero", 0, &e) == NULL && errno == 0);
    ck_assert_msg(strstr(e.msg, "is a device"), "%s", e.msg);
    ck_assert(pb_in_file_open(dir, 0, &e) == NULL && errno == 0);
    ck_assert_msg(strstr(e.msg, "is a folder"), "%s", e.msg);
    ck_assert(pb_in_file_open(at("absent"), 0, &e) == NULL && errno == ENOENT);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("paths");
    TCase *tc = tcase_create("paths");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, outputs);
    tcase_add_test(tc, inputs);
    suite_add_tcase(s, tc);
    return s;
}
