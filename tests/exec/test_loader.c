/* tests/exec/test_loader.c — stage 0's loader thread (design §6.7) and the data a run feeds
 * (semantics §1.6): prefetched batches equal synchronous gathering, bit for bit, under the
 * seq, threads and mpi executors on the CIFAR-10 fixture; the thread hands batches over
 * in pass order and stops cleanly with passes left, on a diverged run and on SIGINT; the
 * driver's choice of stand-in; a stand-in's accuracy rises. */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/compute/backend.h"
#include "harness/compute/cpu/cpu_backend.h"
#include "harness/driver/plan.h"
#include "harness/exec/prefetch.h"
#include "tests/support/train_util.h"

static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert(d != NULL);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The process is back to `want` threads: a thread that was joined is gone at once, but
 * the OpenMP workers of a joined thread's team exit on their own, a moment later; up to
 * 5 s is given for them (a leaked thread never leaves). */
static void expect_threads(int want)
{
    int n = threads_now();
    for (int i = 0; i < 500 && n != want; i++) {
        usleep(10000);
        n = threads_now();
    }
    ck_assert_int_eq(n, want);
}

static void cifar_cfg(struct pb_run_cfg *c)
{
    small_cfg(c);
    c->model = "lenet";
    c->dataset = "cifar10";
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/data", getenv("PB_FIXTURES"));
    c->data_dir = dir;
    c->stages = 2;
    c->threads = 2;
    c->limit_train = 16;
    c->limit_val = 4;
    c->microbatch_size = 4;
    c->epochs = 2;
}

static void same_file(const char *a, const char *b)
{
    size_t la, lb;
    unsigned char *x = read_file(a, &la), *y = read_file(b, &lb);
    ck_assert_msg(la == lb && memcmp(x, y, la) == 0, "%s and %s differ", a, b);
    free(x);
    free(y);
}

/* The weights after two epochs on augmented CIFAR batches: gathered in the worker
 * (PIPEBENCH_SYNC_LOADER=1, seq) and prefetched (seq, threads, mpi) are the same bytes. */
START_TEST(prefetch_is_bit_identical)
{
    struct pb_run_cfg c;
    cifar_cfg(&c);
    setenv("PIPEBENCH_SYNC_LOADER", "1", 1);
    run_ok(&c, "sync.safetensors");
    unsetenv("PIPEBENCH_SYNC_LOADER");
    run_ok(&c, "seq.safetensors");
    c.executor = "threads";
    run_ok(&c, "threads.safetensors");
    same_file(tmp_path("sync.safetensors"), tmp_path("seq.safetensors"));
    same_file(tmp_path("sync.safetensors"), tmp_path("threads.safetensors"));
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "mpirun --oversubscribe %s -np 2 %s run --executor mpi --quiet --model lenet "
             "--dataset cifar10 --data-dir %s --stages 2 --threads 2 --limit-train 16 "
             "--limit-val 4 --microbatch-size 4 --epochs 2 --db %s --save %s >%s 2>&1",
             geteuid() == 0 ? "--allow-run-as-root" : "", getenv("PB_PIPEBENCH"), c.data_dir,
             tmp_path("mpi.db"), tmp_path("mpi.safetensors"), tmp_path("mpi.log"));
    ck_assert_msg(system(cmd) == 0, "mpirun failed; see %s", tmp_path("mpi.log"));
    same_file(tmp_path("sync.safetensors"), tmp_path("mpi.safetensors"));
}
END_TEST

/* The thread's batches are pb_dataset_gather's, in the order of the passes queued. */
START_TEST(prefetch_order_and_stop)
{
    struct pb_dataset ds;
    struct pb_err e;
    struct pb_dataset_opts o = {.like = "tiny-imagenet", .n = 48, .crop = 32};
    ck_assert(pb_dataset_load_opts(&ds, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 3, &o, &e) == 0);
    struct pb_backend *be = pb_backend_cpu_create(1, &e);
    ck_assert(be != NULL);
    int b = 4;
    size_t floats = (size_t)b * 3 * 32 * 32;
    int before = threads_now();
    struct pb_prefetch *p = pb_prefetch_create(be, floats);
    ck_assert_int_eq(threads_now(), before + 1);
    int32_t order[48];
    pb_epoch_order(3, 1, 48, true, order);
    int train_mbs[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, val_mbs[] = {2, 0, 1};
    struct pb_data_key tk = {3, 1, true}, vk = {3, 1, false};
    pb_prefetch_queue(p, &ds, order, b, tk, train_mbs, 12);
    pb_prefetch_queue(p, &ds, NULL, b, vk, val_mbs, 3);
    float *got = malloc(floats * sizeof *got), *want = malloc(floats * sizeof *want);
    for (int i = 0; i < 12; i++) {
        pb_prefetch_take(p, i, got);
        pb_dataset_gather(&ds, tk, order, i * b, b, want, NULL);
        ck_assert_msg(memcmp(got, want, floats * sizeof *got) == 0, "train batch %d", i);
    }
    for (int i = 0; i < 3; i++) {
        pb_prefetch_take(p, val_mbs[i], got);
        pb_dataset_gather(&ds, vk, NULL, val_mbs[i] * b, b, want, NULL);
        ck_assert_msg(memcmp(got, want, floats * sizeof *got) == 0, "val batch %d", i);
    }
    /* a pass left unconsumed, the ring full: destroy still joins the thread */
    pb_prefetch_queue(p, &ds, order, b, tk, train_mbs, 12);
    pb_prefetch_take(p, 0, got);
    usleep(20000);
    pb_prefetch_destroy(p);
    expect_threads(before);
    free(got);
    free(want);
    pb_backend_destroy(be);
    pb_dataset_finish(&ds);
}
END_TEST

static void raise_sigint(void *ctx, int epoch, int epochs, double acc)
{
    (void)ctx;
    (void)epochs;
    (void)acc;
    if (epoch == 0)
        signal_the_run(SIGINT);
}

/* A run that diverges mid-epoch or is interrupted (at its epoch boundary) leaves no
 * thread behind. */
START_TEST(prefetch_stops_with_the_run)
{
    int before = threads_now();
    struct pb_run_cfg c;
    cifar_cfg(&c);
    c.optim.lr = 1e6f;
    struct pb_run_summary sum;
    struct pb_err e;
    int rc = pb_run(&c, &sum, &e);
    ck_assert_msg(rc == PB_EXIT_RUN && sum.status == PB_RUN_DIVERGED, "rc %d status %d: %s", rc,
                  sum.status, e.msg);
    expect_threads(before);
    cifar_cfg(&c);
    c.epochs = 3;
    c.executor = "threads";
    c.on_epoch = raise_sigint;
    rc = pb_run(&c, &sum, &e);
    ck_assert_msg(rc == PB_EXIT_INTERRUPTED && sum.status == PB_RUN_INTERRUPTED &&
                  sum.epochs_done == 1,
                  "rc %d status %d epochs %d: %s", rc, sum.status, sum.epochs_done, e.msg);
    expect_threads(before);
}
END_TEST

/* --dataset synthetic stands in for the model's image dataset unless the synthetic
 * shape is given; the input side and flip policy reach the load options. */
START_TEST(stand_in_choice)
{
    const struct pb_workload cifar_model = {.name = "vgg-like", .summary = "test",
                                            .dataset = "cifar100"};
    struct pb_run_cfg c;
    pb_run_cfg_defaults(&c);
    c.dataset = "synthetic";
    struct pb_plan r = {.cfg = &c, .workload = &cifar_model, .input_side = 24, .no_flip = true};
    struct pb_dataset_opts o;
    ck_assert_str_eq(pb_plan_data_opts(&r, &o), "synthetic");
    ck_assert(o.like && !strcmp(o.like, "cifar100") && o.crop == 24 && o.no_flip);
    c.synthetic.h = 16;
    pb_plan_data_opts(&r, &o);
    ck_assert(o.like == NULL && o.h == 16);
    c.synthetic.h = 0;
    c.dataset = NULL;
    ck_assert_str_eq(pb_plan_data_opts(&r, &o), "cifar100");
    ck_assert(o.like == NULL);
    struct pb_err e;
    r.workload = pb_workload_find("lenet", &e);
    c.dataset = "synthetic";
    pb_plan_data_opts(&r, &o);
    ck_assert(o.like == NULL);
}
END_TEST

/* A stand-in of CIFAR-10 trains: through random crops and flips, validation accuracy
 * rises from epoch 1 to 3 and ends well above chance (10%). */
static double accs[8];
static void note_acc(void *ctx, int epoch, int epochs, double acc)
{
    (void)ctx;
    (void)epochs;
    accs[epoch] = acc;
}

START_TEST(stand_in_learns)
{
    struct pb_run_cfg c;
    small_cfg(&c);
    c.model = "lenet";
    c.dataset = "synthetic";
    c.synthetic.like = "cifar10";
    c.synthetic.n = 2048;
    c.limit_train = 2048;
    c.limit_val = 512;
    c.stages = 2;
    c.epochs = 3;
    c.on_epoch = note_acc;
    run_ok(&c, NULL);
    ck_assert_msg(accs[2] > accs[0] && accs[2] > 0.5, "accuracy by epoch: %g %g %g", accs[0],
                  accs[1], accs[2]);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("loader");
    TCase *fast = tcase_create("loader");
    tcase_set_tags(fast, "fast");
    tcase_set_timeout(fast, 300);
    tcase_add_test(fast, prefetch_is_bit_identical);
    tcase_add_test(fast, prefetch_order_and_stop);
    tcase_add_test(fast, prefetch_stops_with_the_run);
    tcase_add_test(fast, stand_in_choice);
    suite_add_tcase(s, fast);
    TCase *tc = tcase_create("learning");  /* epochs of training: seconds */
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, stand_in_learns);
    suite_add_tcase(s, tc);
    return s;
}
