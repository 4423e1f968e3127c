/* tests/compute/test_deferred.c — the core keeps backend.h's device contract (CUDA.md §6): runs on
 * the deferred backend (tests/support/deferred_backend.h: ops run at sync, uploads read then,
 * downloads poisoned until then, binding and fences checked) must report nothing and
 * give the CPU backend's bits — the executors, a checkpoint and a resume, a comparison
 * of schedules (the split backward's among them), zoo models at D = 2 and 4 (and
 * residual-lstm under zb-h1's split backward, gnmt8 with its validation BLEU) with stages
 * spread over devices — and a block freed by one instance and reused by another waits
 * for the first one's reads. */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/interrupt.h"
#include "harness/compute/backend.h"
#include "harness/compute/registry.h"
#include "harness/model/stage.h"
#include "tests/support/deferred_backend.h"
#include "tests/support/test_util.h"
#include "tests/support/train_util.h"
#include "workloads/models/workload.h"

static void expect_no_violations(const char *what)
{
    static char buf[1 << 14];
    int n = pb_deferred_violations(buf, sizeof buf);
    ck_assert_msg(n == 0, "%s: %d violation(s) of the device contract:\n%s", what, n, buf);
}

static void expect_same_file(const char *a, const char *b, const char *what)
{
    size_t la, lb;
    unsigned char *x = read_file(a, &la), *y = read_file(b, &lb);
    ck_assert_msg(la == lb && !memcmp(x, y, la), "%s: %s and %s differ", what, a, b);
    free(x);
    free(y);
}

/* c on the cpu backend, then on the deferred one: the same bits, nothing reported. */
static void same_as_cpu(struct pb_run_cfg *c, const char *what)
{
    char cpu[128], dfr[128];
    snprintf(cpu, sizeof cpu, "%s-cpu.safetensors", what);
    snprintf(dfr, sizeof dfr, "%s-deferred.safetensors", what);
    pb_deferred_register();
    pb_deferred_reset();
    c->backend = "cpu";
    run_ok(c, cpu);
    c->backend = "deferred";
    run_ok(c, dfr);
    expect_no_violations(what);
    expect_same_file(tmp_path(cpu), tmp_path(dfr), what);
}

/* The small mlp run of these tests: D stages under an executor, 256 samples. */
static void mlp_cfg(struct pb_run_cfg *c, int stages, const char *executor)
{
    small_cfg(c);
    c->stages = stages;
    c->limit_train = 256;
    c->limit_val = 64;
    c->executor = executor;
}

START_TEST(test_executors_seq_threads)
{
    const char *executors[] = {"seq", "threads"};
    for (int i = 0; i < 2; i++) {
        struct pb_run_cfg c;
        mlp_cfg(&c, 2, executors[i]);
        same_as_cpu(&c, executors[i]);
    }
}
END_TEST

static void stop_after_first(void *ctx, int epoch, int epochs, double acc)
{
    (void)ctx, (void)epochs, (void)acc;
    if (epoch == 0)
        signal_the_run(SIGINT);
}

START_TEST(test_checkpoint_and_resume)
{
    struct pb_run_cfg c;
    mlp_cfg(&c, 2, "threads");
    c.epochs = 2;
    same_as_cpu(&c, "straight");
    /* interrupted after the first epoch on the deferred backend, then resumed on it */
    c.db = tmp_path_kept("resume.db");
    c.on_epoch = stop_after_first;
    struct pb_run_summary sum;
    struct pb_err e;
    c.save = tmp_path_kept("resumed.safetensors");
    ck_assert_int_eq(pb_run(&c, &sum, &e), PB_EXIT_INTERRUPTED);
    c.on_epoch = NULL;
    c.resume_run = 1;
    int rc = pb_run(&c, &sum, &e);
    ck_assert_msg(rc == PB_EXIT_OK, "resume: %s", e.msg);
    expect_no_violations("checkpoint and resume");
    expect_same_file(tmp_path("straight-cpu.safetensors"), tmp_path("resumed.safetensors"),
                     "resumed on the deferred backend");
}
END_TEST

START_TEST(test_two_schedules)
{
    /* and zb-h1: the split backward holds dY and inputs from I to W */
    const char *schedules[] = {"gpipe", "pipedream", "zb-h1"};
    for (int i = 0; i < 3; i++) {
        struct pb_run_cfg c;
        mlp_cfg(&c, 4, "threads");
        c.schedule = schedules[i];
        same_as_cpu(&c, schedules[i]);
    }
}
END_TEST

/* Stages on two devices (no shared memory: a tensor crosses by a peer copy on the
 * receiver's stream, or through host memory, each thread using only its own instance)
 * give the bits of one device, under both executors of one process. */
START_TEST(test_two_devices)
{
    const char *executors[] = {"seq", "threads", "seq", "threads"};
    for (int i = 0; i < 4; i++) {
        pb_deferred_peer_copies(i < 2);
        struct pb_run_cfg c;
        mlp_cfg(&c, 2, executors[i]);
        pb_deferred_register();
        pb_deferred_reset();
        char one[64], two[64];
        snprintf(one, sizeof one, "%s-%d-one-device.safetensors", executors[i], i);
        snprintf(two, sizeof two, "%s-%d-two-devices.safetensors", executors[i], i);
        c.backend = "deferred";
        c.devices = "0";
        run_ok(&c, one);
        c.devices = "0,1";
        run_ok(&c, two);
        expect_no_violations("two devices");
        expect_same_file(tmp_path(one), tmp_path(two), "stages on devices 0 and 1");
    }
    pb_deferred_peer_copies(true);
}
END_TEST

/* `pipebench run --executor mpi` of prog (the CLI, or the one with the deferred backend)
 * with two ranks, saving to tmp_path(save); the log must hold no violation. */
static void mpi_run(const char *prog, const char *backend, const char *save)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "mpirun --oversubscribe %s -np 2 %s run --executor mpi --backend %s --quiet "
             "--stages 2 --limit-train 256 --limit-val 64 --microbatch-size 32 --epochs 2 "
             "--threads 1 --db %s --save %s >%s 2>&1",
             geteuid() == 0 ? "--allow-run-as-root" : "", prog, backend,
             tmp_path_kept("mpi.db"), tmp_path(save), tmp_path("mpirun.log"));
    int st = system(cmd);
    size_t n;
    unsigned char *log = read_file(tmp_path("mpirun.log"), &n);
    size_t keep = n < 2000 ? n : 2000;
    ck_assert_msg(st == 0, "mpirun %s failed (%d): %.*s", backend, st, (int)keep,
                  (const char *)log + (n - keep));
    ck_assert_msg(!memmem(log, n, "deferred backend:", 17), "%.*s", (int)keep,
                  (const char *)log + (n - keep));
    free(log);
}

START_TEST(test_mpi)
{
    mpi_run(getenv("PB_PIPEBENCH"), "cpu", "mpi-cpu.safetensors");
    mpi_run(getenv("PB_PIPEBENCH_DEFERRED"), "deferred", "mpi-deferred.safetensors");
    expect_same_file(tmp_path("mpi-cpu.safetensors"), tmp_path("mpi-deferred.safetensors"),
                     "the mpi executor on the deferred backend");
}
END_TEST

/* Zoo models on synthetic data of their preset's shape: a convolutional one with
 * batch norm and an LSTM one, at D = 2 and 4, under the schedule named (NULL: the
 * default). */
static void zoo_case_on(const char *model, int stages, const char *schedule)
{
    struct pb_run_cfg c;
    small_cfg(&c);
    c.model = model;
    c.preset = "small";
    c.dataset = "synthetic";
    c.stages = stages;
    c.threads = 1;
    c.limit_train = 64;
    c.limit_val = 32;
    c.microbatch_size = 16;
    c.epochs = 1;
    c.executor = "threads";
    if (schedule)
        c.schedule = schedule;
    char what[64];
    snprintf(what, sizeof what, "%s-d%d%s%s", model, stages, schedule ? "-" : "",
             schedule ? schedule : "");
    same_as_cpu(&c, what);
}

static void zoo_case(const char *model, int stages)
{
    zoo_case_on(model, stages, NULL);
}

START_TEST(test_zoo_resnet) { zoo_case("resnet101", 2); zoo_case("resnet101", 4); }
END_TEST
/* and zb-h1, whose split backward runs the LSTM's data and weight passes apart, the
 * gate gradients held from I to W */
START_TEST(test_zoo_lstm)
{
    zoo_case("residual-lstm", 2);
    zoo_case("residual-lstm", 4);
    zoo_case_on("residual-lstm", 2, "zb-h1");
}
END_TEST

/* GNMT: embeddings, the attention's split passes, and the validation BLEU, whose decoder
 * reads the weights the executor's threads trained from the run's own thread */
START_TEST(test_zoo_gnmt) { zoo_case("gnmt8", 2); }
END_TEST

/* ---- fences: a block stage B reads, freed into stage A's cache, reused by A ---- */

struct reader {
    struct pb_backend *b;
    float *block, *seen;
    size_t n;
};

static void *reader_main(void *arg)
{
    struct reader *r = arg;
    pb_backend_bind(r->b);
    usleep(200 * 1000);  /* A reuses the block meanwhile */
    r->b->ops->sync(r->b);
    return NULL;
}

/* B reads A's block (taken over on one device, or peer-copied from another), releases
 * it before its sync; A, on its own thread, gets the block back and overwrites it: B's
 * queued read must still see the old values. */
static void fenced_block(int b_device)
{
    pb_deferred_register();
    pb_deferred_reset();
    struct pb_err e;
    struct pb_backend_cfg ac = {.device = 0, .threads = 1}, bc = {.device = b_device, .threads = 1};
    struct pb_backend *a = pb_backend_create("deferred", &ac, &e);
    struct pb_backend *b = pb_backend_create("deferred", &bc, &e);
    ck_assert(a && b);
    size_t n = 1024;
    float host[1024], seen[1024];
    for (size_t i = 0; i < n; i++)
        host[i] = (float)i;
    pb_backend_bind(a);
    float *block = pb_backend_alloc(a, n * sizeof(float), PB_MEM_COMM, &e);
    a->ops->upload(a, block, host, n * sizeof(float));
    a->ops->sync(a);
    pb_backend_bind(b);
    float *copy = pb_backend_alloc(b, n * sizeof(float), PB_MEM_ACTS, &e);
    if (b_device == 0) {
        pb_backend_take(b, a, block, PB_MEM_COMM);
        b->ops->copy(b, copy, block, n * sizeof(float));
        pb_backend_free(b, block);
    } else {
        b->ops->copy_peer(b, copy, a, block, n * sizeof(float));
        pb_backend_free_read(a, block, b);
    }
    pthread_t t;
    struct reader r = {b, block, seen, n};
    pthread_create(&t, NULL, reader_main, &r);
    pb_backend_bind(a);
    float *again = pb_backend_alloc(a, n * sizeof(float), PB_MEM_COMM, &e);
    ck_assert_ptr_eq(again, block);
    a->ops->fill(a, again, -1.0f, n);
    a->ops->sync(a);
    pthread_join(t, NULL);
    pb_backend_bind(b);
    b->ops->download(b, seen, copy, n * sizeof(float));
    b->ops->sync(b);
    size_t i = 0;
    while (i < n && seen[i] == (float)i)
        i++;
    ck_assert_msg(i == n, "B read %g at %zu: A reused the block before B's queued read of it "
                  "ran", i < n ? seen[i] : 0.0, i);
    expect_no_violations("fenced block");
    pb_backend_free(b, copy);
    pb_backend_bind(a);
    pb_backend_free(a, again);
    pb_backend_destroy(a);
    pb_backend_destroy(b);
}

START_TEST(test_fenced_block_waits) { fenced_block(0); }
END_TEST
START_TEST(test_fenced_peer_copy_waits) { fenced_block(1); }
END_TEST

/* A token outside the vocabulary, found by the device while the forward runs, fails the
 * forward that read it: the loss's status is read after the sync, not before. */
START_TEST(test_device_error_at_sync)
{
    pb_deferred_register();
    pb_deferred_reset();
    struct pb_err e;
    const struct pb_workload *w = pb_workload_find("gnmt8", &e);
    const struct pb_preset *p;
    ck_assert(w && pb_workload_preset(w, "small", &p, &e) == 0);
    int rows = 4;
    struct pb_model m;
    ck_assert_msg(w->build(&m, p, (struct pb_shape){1, 2 * p->steps, 1, 1}, p->classes, &e) == 0,
                  "%s", e.msg);
    ck_assert_msg(pb_model_finalize(&m, rows, &e) == 0, "%s", e.msg);
    struct pb_backend_cfg bc = {.device = 0, .threads = 1};
    struct pb_backend *be = pb_backend_create("deferred", &bc, &e);
    struct pb_stage s;
    ck_assert_msg(pb_stage_init(&s, be, &m, 0, 1, 0, m.nblocks, &e) == 0, "%s", e.msg);
    ck_assert(pb_stage_init_params(&s, 5, &e) == 0);
    size_t n = pb_shape_count(s.in_shape);
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(i % 7 + 1);
    x[1] = (float)(p->vocab + 3);  /* outside [0, vocab) */
    int32_t *labels = calloc((size_t)s.nlabels, sizeof *labels);
    struct pb_tensor in;
    ck_assert(pb_tensor_alloc(be, &in, s.in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, &e) == 0);
    int32_t *dlabels = pb_backend_alloc(be, (size_t)s.nlabels * sizeof *labels, PB_MEM_COMM, &e);
    be->ops->upload(be, in.data, x, n * sizeof *x);
    be->ops->upload(be, dlabels, labels, (size_t)s.nlabels * sizeof *labels);
    be->ops->sync(be);
    struct pb_step_ctx c = {.train = false};
    struct pb_stage_act act;
    struct pb_tensor out = {0};
    int rc = pb_stage_forward(&s, &c, s.params, in, dlabels, &act, &out, &e);
    ck_assert_msg(rc == -1, "a forward reading a token outside the vocabulary succeeded");
    ck_assert_msg(strstr(e.msg, "vocab") || strstr(e.msg, "token"), "%s", e.msg);
    pb_backend_free(be, dlabels);
    pb_stage_finish(&s);
    pb_backend_destroy(be);
    pb_model_finish(&m);
    free(x);
    free(labels);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("deferred");
    TCase *f = tcase_create("fast");
    tcase_add_test(f, test_fenced_block_waits);
    tcase_add_test(f, test_fenced_peer_copy_waits);
    tcase_add_test(f, test_device_error_at_sync);
    tcase_add_test(f, test_executors_seq_threads);
    tcase_add_test(f, test_checkpoint_and_resume);
    tcase_add_test(f, test_two_devices);
    tcase_add_test(f, test_mpi);
    tcase_set_tags(f, "fast");
    suite_add_tcase(s, f);
    TCase *z = tcase_create("zoo");
    tcase_add_test(z, test_two_schedules);
    tcase_add_test(z, test_zoo_resnet);
    tcase_add_test(z, test_zoo_lstm);
    tcase_add_test(z, test_zoo_gnmt);
    suite_add_tcase(s, z);
    return s;
}
