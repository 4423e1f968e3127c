/* tests/driver/test_run_errors.c — bad input to `pipebench run` (through the built binary):
 * each gets a message that says what to do, exit status 2, and leaves no run row in
 * the results database. An unknown name's message lists every registered schedule,
 * variant, model, optimizer and dataset. */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/ir/program.h"
#include "harness/optim/optim.h"
#include "schedules/registry.h"
#include "workloads/datasets/dataset.h"
#include "workloads/models/workload.h"

static char dir[64];

/* Removes the scratch folder when the test's process ends (Check forks one per test). */
static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* A fresh scratch folder in dir (the previous one removed). */
static void make_dir(void)
{
    static bool registered;
    if (dir[0])
        remove_dir();
    snprintf(dir, sizeof dir, "/tmp/pb-err-XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
    if (!registered)
        registered = atexit(remove_dir) == 0;
}

/* Runs `pipebench run ARGS --db dir/runs.db` (unless ARGS has its own --db; and
 * --limit-train 320 --limit-val 64 unless it has its own); returns
 * the exit status and the standard error in err. */
static int run_cli(const char *args, char *err, size_t cap)
{
    const char *bin = getenv("PB_PIPEBENCH");
    ck_assert_msg(bin != NULL, "PB_PIPEBENCH is not set (run through meson test)");
    char cmd[2048], db[128] = "";
    if (!strstr(args, "--db"))
        snprintf(db, sizeof db, "--db %s/runs.db", dir);
    snprintf(cmd, sizeof cmd, "%s run --quiet %s %s %s %s >/dev/null 2>%s/err.txt", bin,
             strstr(args, "--limit-train") ? "" : "--limit-train 320",
             strstr(args, "--limit-val") ? "" : "--limit-val 64", args, db, dir);
    int st = system(cmd);
    char path[128];
    snprintf(path, sizeof path, "%s/err.txt", dir);
    FILE *f = fopen(path, "r");
    ck_assert(f != NULL);
    size_t n = fread(err, 1, cap - 1, f);
    err[n] = 0;
    fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run_rows(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/runs.db", dir);
    if (access(path, F_OK))
        return 0;
    sqlite3 *h;
    sqlite3_stmt *st;
    ck_assert(sqlite3_open(path, &h) == SQLITE_OK);
    int n = -1;
    if (sqlite3_prepare_v2(h, "SELECT count(*) FROM runs", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
}

/* Exit status 2, every expected fragment in the message, no run row. */
static void expect_error(const char *args, const char *const *fragments)
{
    char err[4096];
    make_dir();
    int rc = run_cli(args, err, sizeof err);
    ck_assert_msg(rc == 2, "'%s': exit %d, stderr: %s", args, rc, err);
    for (int i = 0; fragments[i]; i++)
        ck_assert_msg(strstr(err, fragments[i]), "'%s': message lacks '%s': %s", args, fragments[i],
                      err);
    ck_assert_int_eq(run_rows(), 0);
}

#define EXPECT(args, ...) expect_error(args, (const char *const[]){__VA_ARGS__, NULL})

/* A NULL-terminated list of the fragments a message must hold (at most 63). */
struct fragments {
    const char *f[64];
    int n;
};

static void frag_add(struct fragments *fr, const char *s)
{
    ck_assert_int_lt(fr->n, 63);
    fr->f[fr->n++] = s;
    fr->f[fr->n] = NULL;
}

START_TEST(test_unknown_names)
{
    struct fragments fr = {{NULL}, 0};
    frag_add(&fr, "unknown schedule 'pipedreams'");
    for (int i = 0; pb_schedules[i]; i++)
        frag_add(&fr, pb_schedules[i]->name);
    expect_error("--schedule pipedreams", fr.f);
    fr.n = 0;
    frag_add(&fr, "unknown model 'resnet'");
    for (int i = 0; pb_workloads[i]; i++)
        frag_add(&fr, pb_workloads[i]->name);
    expect_error("--model resnet", fr.f);
    fr.n = 0;
    frag_add(&fr, "lamb");
    frag_add(&fr, "sgdm");
    for (int k = 0; k < PB_OPT_NKINDS; k++)
        frag_add(&fr, pb_optim_kind_name((enum pb_optim_kind)k));
    expect_error("--optimizer lamb", fr.f);
    fr.n = 0;
    frag_add(&fr, "cifar");
    for (int i = 0; pb_dataset_names[i]; i++)
        frag_add(&fr, pb_dataset_names[i]);
    expect_error("--dataset cifar", fr.f);
    EXPECT("--executor gpu", "unknown executor 'gpu'", "seq", "threads");
    EXPECT("--frobnicate 3", "--frobnicate");
}
END_TEST

/* An unknown variant names the schedule's variants, or says it has none. */
START_TEST(test_unknown_variant)
{
    for (int i = 0; pb_schedules[i]; i++) {
        const struct pb_schedule *s = pb_schedules[i];
        char args[256], list[256];
        snprintf(args, sizeof args, "--variant fast --schedule %s", s->name);
        snprintf(list, sizeof list, "%s", s->variants ? s->variants : "");
        struct fragments fr = {{NULL}, 0};
        frag_add(&fr, "'fast'");
        if (!*list)
            frag_add(&fr, "no variants");
        for (char *save, *v = strtok_r(list, ", ", &save); v; v = strtok_r(NULL, ", ", &save))
            frag_add(&fr, v);
        expect_error(args, fr.f);
    }
}
END_TEST

START_TEST(test_impossible_numbers)
{
    EXPECT("--stages 0", "--stages", "at least 1");
    EXPECT("--stages 9", "at most 8");
    EXPECT("--schedule pipedream-2bw --stages 4 --microbatches 2", "M", "2");
    EXPECT("--lr -0.1", "--lr", "-0.1");
    EXPECT("--microbatch-size 0", "--microbatch-size");
    EXPECT("--epochs x", "--epochs", "'x'");
    EXPECT("--microbatch-size 1000", "no micro-batch of 1000");
    /* refused before anything of that size is allocated */
    EXPECT("--stages 2147483647", "at most 1024");
    EXPECT("--schedule pipedream --microbatches 1000000000", "between 1 and 1000000");
    EXPECT("--schedule gpipe --microbatches 1000000000", "between 1 and 1000000");
    EXPECT("--init /tmp", "'/tmp' is not a file");
    EXPECT("--threads 100000", "--threads 100000 is more than this machine's");
    /* found out before training, not after */
    EXPECT("--save /proc/nope/w.safetensors", "cannot write /proc/nope/w.safetensors",
           "give --save a path");
    EXPECT("--dataset synthetic --data-dir /tmp", "synthetic dataset is generated");
}
END_TEST

/* --preset and --partition: only where they apply (semantics §5.2, §5.3); a zoo model
 * refuses a sample it cannot take. */
START_TEST(test_presets)
{
    EXPECT("--model lenet --preset paper", "model 'lenet' has no presets", "drop --preset");
    EXPECT("--model alexnet --preset huge", "no preset 'huge'", "paper, small");
    EXPECT("--model resnet101 --preset paper --stages 3 --partition paper", "4-stage cut",
           "--stages 4", "--partition flops");
    EXPECT("--model mlp --partition paper", "no paper partition", "--partition flops");
    EXPECT("--model vgg16 --partition diagonal", "--partition 'diagonal'",
           "flops, cost, params, time, paper");
    EXPECT("--model vgg16 --dataset fashion-mnist", "cannot make inputs of side 32", "28x28");
}
END_TEST

/* --devices: a list that does not parse, or places more devices than stages, or names a
 * device the backend lacks (the cpu backend has device 0 only). */
START_TEST(test_bad_devices)
{
    EXPECT("--stages 2 --devices 0,0,x", "--devices 0,0,x", "'x' is not a device index",
           "--devices 0");
    EXPECT("--stages 2 --devices 0,,1", "an empty entry", "--devices 0");
    EXPECT("--stages 2 --devices ,0", "an empty entry");
    EXPECT("--stages 2 --devices -1", "device -1 is negative", "--devices 0");
    EXPECT("--stages 2 --devices 0,1,2", "more devices than stages", "at most 2");
    EXPECT("--stages 2 --devices 0,1", "the cpu backend has one device, 0", "--devices 0");
    EXPECT("--stages 2 --devices 1", "the cpu backend has one device, 0", "--devices 0");
}
END_TEST

START_TEST(test_schedule_preconditions)
{
    EXPECT("--schedule spectrain --optimizer adam", "spectrain", "SGD");
}
END_TEST

START_TEST(test_missing_dataset)
{
    EXPECT("--data-dir /nonexistent/fmnist", "/nonexistent/fmnist", "dataset-fashion-mnist",
           "--data-dir");
}
END_TEST

START_TEST(test_corrupt_idx_header)
{
    make_dir();
    char cmd[512];
    /* real labels, images whose magic number is wrong */
    snprintf(cmd, sizeof cmd,
             "cp /usr/share/datasets/fashion-mnist/*labels* %s/ && "
             "printf '\\000\\000\\010\\004\\000\\000\\352\\140\\000\\000\\000\\034\\000\\000\\000\\034' "
             "| gzip > %s/train-images-idx3-ubyte.gz && cp %s/train-images-idx3-ubyte.gz "
             "%s/t10k-images-idx3-ubyte.gz",
             dir, dir, dir, dir);
    ck_assert(system(cmd) == 0);
    char args[256];
    snprintf(args, sizeof args, "--data-dir %s", dir);
    char err[4096];
    int rc = run_cli(args, err, sizeof err);
    ck_assert_msg(rc == 2, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(err, "train-images-idx3-ubyte") && strstr(err, "magic"), "%s", err);
    ck_assert_int_eq(run_rows(), 0);
}
END_TEST

/* Runs ARGS on a scratch copy of the fixtures' image data with `damage` (a shell command
 * run in the copy) applied: exit 2, every fragment in the message, no run row. */
static void expect_damaged(const char *damage, const char *args, const char *const *fragments)
{
    make_dir();
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp -r '%s/data/.' '%s/' && cd '%s' && %s", getenv("PB_FIXTURES"),
             dir, dir, damage);
    ck_assert_msg(system(cmd) == 0, "%s", cmd);
    char full[1024], err[4096];
    snprintf(full, sizeof full, "--model lenet --data-dir %s %s", dir, args);
    int rc = run_cli(full, err, sizeof err);
    ck_assert_msg(rc == 2, "'%s': exit %d, stderr: %s", full, rc, err);
    for (int i = 0; fragments[i]; i++)
        ck_assert_msg(strstr(err, fragments[i]), "'%s': message lacks '%s': %s", full, fragments[i],
                      err);
    ck_assert_int_eq(run_rows(), 0);
}

#define EXPECT_DAMAGED(damage, args, ...) \
    expect_damaged(damage, args, (const char *const[]){__VA_ARGS__, NULL})

START_TEST(test_bad_image_data)
{
    EXPECT("--model lenet --dataset cifar10 --data-dir /nonexistent/cifar", "/nonexistent/cifar",
           "cifar-10-binary.tar.gz", "https://www.cs.toronto.edu/~kriz/", "PIPEBENCH_CIFAR10_DIR");
    EXPECT("--model lenet --dataset cifar100 --data-dir /nonexistent/c100", "cifar-100-binary.tar.gz");
    EXPECT("--model lenet --dataset tiny-imagenet --data-dir /nonexistent/tiny",
           "tiny-imagenet-200.zip", "http://cs231n.stanford.edu/", "PIPEBENCH_TINY_IMAGENET_DIR");
    const char *small = "--limit-train 8 --limit-val 4 --microbatch-size 2";
    char args[256];
    snprintf(args, sizeof args, "--dataset cifar10 %s", small);
    EXPECT_DAMAGED("truncate -s -7 cifar-10-batches-bin/data_batch_5.bin", args,
                   "data_batch_5.bin is 12285 bytes, not a whole number of 3073-byte records");
    EXPECT_DAMAGED("printf '\\377' | dd of=cifar-10-batches-bin/test_batch.bin bs=1 seek=3073 "
                   "conv=notrunc status=none", args, "test_batch.bin: record 1", "label 255");
    snprintf(args, sizeof args, "--dataset tiny-imagenet %s", small);
    EXPECT_DAMAGED("head -c 300 tiny-imagenet-200/val/images/val_3.JPEG > cut && "
                   "mv cut tiny-imagenet-200/val/images/val_3.JPEG", args,
                   "val/images/val_3.JPEG is not a readable JPEG");
    EXPECT_DAMAGED("sed -i 's/n02124075/n00000001/' tiny-imagenet-200/val/val_annotations.txt", args,
                   "val_annotations.txt line 2: class n00000001 of val_1.JPEG is not in wnids.txt");
}
END_TEST

/* Cheap checks first: a micro-batch larger than the sample limit is refused before the
 * data and the model are made (ResNet-101's paper preset took 33 s to build first). */
START_TEST(test_cheap_checks_first)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EXPECT("--model resnet101 --preset paper --dataset synthetic --limit-train 64 "
           "--microbatch-size 100000", "64 training samples make no micro-batch of 100000",
           "lower --microbatch-size");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    ck_assert_msg(s < 1.5, "refused after %.1f s: the model was built first", s);
}
END_TEST

START_TEST(test_unwritable_db)
{
    EXPECT("--db /proc/pipebench/runs.db", "/proc/pipebench/runs.db");
}
END_TEST

START_TEST(test_missing_init)
{
    EXPECT("--init /nonexistent/w.safetensors", "/nonexistent/w.safetensors");
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("run_errors");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_unknown_names);
    tcase_add_test(tc, test_unknown_variant);
    tcase_add_test(tc, test_impossible_numbers);
    tcase_add_test(tc, test_presets);
    tcase_add_test(tc, test_bad_devices);
    tcase_add_test(tc, test_schedule_preconditions);
    tcase_add_test(tc, test_missing_dataset);
    tcase_add_test(tc, test_corrupt_idx_header);
    tcase_add_test(tc, test_bad_image_data);
    tcase_add_test(tc, test_unwritable_db);
    tcase_add_test(tc, test_cheap_checks_first);
    tcase_add_test(tc, test_missing_init);
    suite_add_tcase(s, tc);
    return s;
}
