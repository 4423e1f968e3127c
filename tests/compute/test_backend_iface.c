/* tests/compute/test_backend_iface.c — the backend interface as the core uses it (harness/compute/
 * backend.h): the registry refuses unknown and unbuilt backends with what to use instead;
 * a stage needing an op its backend lacks is refused naming the op and the backend;
 * the block cache makes a stage's steady state call the device allocator never, and goes
 * back to the device when it is full; a
 * stage's per-node clocks sync the backend and change no bit; a
 * hand-off between instances moves the accounting and the block returns to its home
 * cache; a copy between instances that share no memory goes through host memory. The
 * wrapped backends below reuse the CPU backend's kernels with some ops changed. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/backend.h"
#include "harness/compute/registry.h"
#include "harness/model/stage.h"
#include "workloads/models/workload.h"
#include "pb_config.h"
#include "tests/support/cli_util.h"
#include "tests/support/gpu_sign.h"

static struct pb_backend *cpu(void)
{
    struct pb_err e;
    struct pb_backend_cfg c = {.device = 0, .threads = 1};
    struct pb_backend *be = pb_backend_create("cpu", &c, &e);
    ck_assert_msg(be != NULL, "%s", e.msg);
    return be;
}

START_TEST(test_registry)
{
    struct pb_err e;
    struct pb_backend_cfg c = {0};
    ck_assert_ptr_null(pb_backend_create("tpu", &c, &e));
    ck_assert_msg(strstr(e.msg, "unknown backend 'tpu'") && strstr(e.msg, "cpu, cuda"), "%s", e.msg);
    if (!(PB_HAVE_CUDA && pb_test_gpu_sign())) {  /* unbuilt, or no GPU: refused (test_cuda_probe) */
        ck_assert_ptr_null(pb_backend_create("cuda", &c, &e));
        ck_assert_msg(strstr(e.msg, "--backend cpu"), "%s", e.msg);
    }
    ck_assert_int_eq(pb_backend_check_name("cpu", &e), 0);
    c.device = 1;
    ck_assert_ptr_null(pb_backend_create("cpu", &c, &e));
    ck_assert_msg(strstr(e.msg, "one device"), "%s", e.msg);
}
END_TEST

/* `pipebench run --backend` refuses what it cannot run, before writing anything. */
START_TEST(test_run_backend_flag)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "backend");
    int rc;
    if (!(PB_HAVE_CUDA && pb_test_gpu_sign())) {
        rc = cli_run(dir, out, sizeof out, "run --quiet --backend cuda --db b.db");
        ck_assert_msg(rc == 2 && strstr(out, "--backend cpu"), "exit %d: %s", rc, out);
    }
    rc = cli_run(dir, out, sizeof out, "run --quiet --backend tpu --db b.db");
    ck_assert_msg(rc == 2 && strstr(out, "valid backends: cpu, cuda"), "exit %d: %s", rc, out);
    char path[128];
    snprintf(path, sizeof path, "%s/b.db", dir);
    ck_assert_msg(access(path, F_OK) != 0, "a refused run wrote %s", path);
    rc = cli_run(dir, out, sizeof out, "list");
    ck_assert_msg(rc == 0 && strstr(out, "backends:") && strstr(out, "cuda"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* A copy of the CPU table whose instance lacks convolutions or counts allocations. */
static struct pb_backend_ops wrapped;
static const struct pb_backend_ops *cpu_table;
static int device_allocs;

static bool no_conv(struct pb_backend *be, enum pb_backend_op op)
{
    (void)be;
    return op != PB_BOP_CONV;
}

static void *counting_alloc(struct pb_backend *be, size_t bytes)
{
    device_allocs++;
    return cpu_table->alloc(be, bytes);
}

static struct pb_backend *wrap(struct pb_backend *be)
{
    cpu_table = be->ops;
    wrapped = *be->ops;
    be->ops = &wrapped;
    return be;
}

static void lenet(struct pb_model *m, int batch)
{
    struct pb_err e;
    const struct pb_workload *wl = pb_workload_find("lenet", &e);
    ck_assert(wl != NULL);
    ck_assert_msg(wl->build(m, NULL, (struct pb_shape){1, 1, 28, 28}, 10, &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_model_finalize(m, batch, &e) == 0, "%s", e.msg);
}

/* A stage of all of m on be with initialised weights, and labels 1 … 4 on be for a
 * micro-batch of 4. */
static int32_t *lenet_stage(struct pb_model *m, struct pb_backend *be, struct pb_stage *s)
{
    struct pb_err e;
    ck_assert_msg(pb_stage_init(s, be, m, 0, 1, 0, m->nblocks, &e) == 0, "%s", e.msg);
    ck_assert(pb_stage_init_params(s, 1, &e) == 0);
    int32_t labels_host[4] = {1, 2, 3, 4};
    int32_t *labels = pb_backend_alloc(be, sizeof labels_host, PB_MEM_COMM, &e);
    ck_assert(labels != NULL);
    be->ops->upload(be, labels, labels_host, sizeof labels_host);
    return labels;
}

/* One forward of a micro-batch (0.5 everywhere) on s, global micro-batch mb, and with
 * train its backward. */
static void stage_pass(struct pb_stage *s, const int32_t *labels, bool train, int64_t mb)
{
    struct pb_backend *be = s->be;
    struct pb_err e;
    struct pb_tensor x;
    ck_assert(pb_tensor_alloc(be, &x, s->in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, &e) == 0);
    be->ops->fill(be, x.data, 0.5f, pb_shape_count(s->in_shape));
    struct pb_step_ctx c = {train, 1, mb, NULL, NULL};
    struct pb_stage_act act;
    ck_assert_msg(pb_stage_forward(s, &c, s->params, x, labels, &act, NULL, &e) == 0, "%s",
                  e.msg);
    if (train)
        ck_assert_msg(pb_stage_backward(s, &c, s->params, &act, NULL, NULL, &e) == 0, "%s",
                      e.msg);
}

START_TEST(test_supports_op)
{
    struct pb_model m;
    lenet(&m, 4);
    struct pb_backend *be = wrap(cpu());
    wrapped.supports_op = no_conv;
    struct pb_stage s;
    struct pb_err e;
    ck_assert_int_eq(pb_stage_init(&s, be, &m, 0, 1, 0, m.nblocks, &e), -1);
    ck_assert_msg(strstr(e.msg, "the cpu backend does not implement conv") &&
                  strstr(e.msg, "conv2d"), "%s", e.msg);
    be->ops = cpu_table;
    pb_backend_destroy(be);
    pb_model_finish(&m);
}
END_TEST

/* Forward+backward passes of a micro-batch: once the first two have filled the block
 * cache (the first also creates the primitives, whose persistent buffers interleave
 * with its temporaries), a pass calls the device allocator no more. */
START_TEST(test_steady_state_allocates_nothing)
{
    struct pb_model m;
    lenet(&m, 4);
    struct pb_backend *be = wrap(cpu());
    wrapped.alloc = counting_alloc;
    struct pb_stage s;
    int32_t *labels = lenet_stage(&m, be, &s);
    int calls[4];
    for (int pass = 0; pass < 4; pass++) {
        calls[pass] = device_allocs;
        stage_pass(&s, labels, true, pass);
        calls[pass] = device_allocs - calls[pass];
    }
    ck_assert_msg(calls[0] > 0 && calls[2] == 0 && calls[3] == 0,
                  "device allocator calls per pass: %d, %d, %d, %d", calls[0], calls[1], calls[2],
                  calls[3]);
    for (int k = 0; k < PB_MEM_NKINDS; k++)
        if (k != PB_MEM_PARAMS && k != PB_MEM_GRADS && k != PB_MEM_SCRATCH && k != PB_MEM_COMM &&
            k != PB_MEM_BNSTATS && k != PB_MEM_HOST)
            ck_assert_msg(be->mem_cur[k] == 0, "%s: %zu bytes still counted after the passes",
                          pb_mem_kind_names[k], be->mem_cur[k]);
    pb_backend_free(be, labels);
    pb_stage_finish(&s);
    be->ops = cpu_table;
    pb_backend_destroy(be);
    pb_model_finish(&m);
}
END_TEST

static int syncs;

static void counting_sync(struct pb_backend *be)
{
    syncs++;
    cpu_table->sync(be);
}

/* One training forward and backward of a micro-batch of 4 (0.5 everywhere) on s, from
 * zeroed gradients; the gradients downloaded into g [s->nparams]. */
static void train_pass(struct pb_stage *s, const int32_t *labels, float *g)
{
    struct pb_backend *be = s->be;
    be->ops->fill(be, s->grads, 0.0f, s->nparams);
    stage_pass(s, labels, true, 0);
    be->ops->download(be, g, s->grads, s->nparams * sizeof *g);
    be->ops->sync(be);
}

/* The stage's per-node clocks (stage.h, node_s): with them on, every node's forward and
 * backward gets a time, the backend is synced around each, and the gradients keep their
 * bits; an evaluation forward adds no time. */
START_TEST(test_node_clocks)
{
    struct pb_model m;
    lenet(&m, 4);
    struct pb_backend *be = wrap(cpu());
    wrapped.sync = counting_sync;
    struct pb_stage s;
    int32_t *labels = lenet_stage(&m, be, &s);
    int nodes = 0;
    for (int b = 0; b < m.nblocks; b++)
        nodes += m.blocks[b].nnodes;
    float *g_plain = calloc(s.nparams, sizeof *g_plain);
    float *g_timed = calloc(s.nparams, sizeof *g_timed);
    syncs = 0;
    train_pass(&s, labels, g_plain);
    int plain_syncs = syncs;
    s.node_s = calloc((size_t)nodes * 2, sizeof *s.node_s);
    syncs = 0;
    train_pass(&s, labels, g_timed);
    ck_assert_msg(syncs >= plain_syncs + 4 * nodes, "%d syncs with the clocks on, %d without, "
                  "%d nodes", syncs, plain_syncs, nodes);
    for (int i = 0; i < nodes; i++)
        ck_assert_msg(s.node_s[2 * i] > 0.0 && s.node_s[2 * i + 1] > 0.0,
                      "node %d: forward %g s, backward %g s", i, s.node_s[2 * i],
                      s.node_s[2 * i + 1]);
    ck_assert_msg(memcmp(g_plain, g_timed, s.nparams * sizeof *g_plain) == 0,
                  "the clocks changed the gradients");

    double *before = malloc((size_t)nodes * 2 * sizeof *before);
    memcpy(before, s.node_s, (size_t)nodes * 2 * sizeof *before);
    stage_pass(&s, labels, false, 0);
    ck_assert_msg(memcmp(before, s.node_s, (size_t)nodes * 2 * sizeof *before) == 0,
                  "an evaluation forward added time");

    free(before);
    free(s.node_s);
    s.node_s = NULL;
    free(g_plain);
    free(g_timed);
    pb_backend_free(be, labels);
    pb_stage_finish(&s);
    be->ops = cpu_table;
    pb_backend_destroy(be);
    pb_model_finish(&m);
}
END_TEST

/* A message of stage A taken by stage B: A's communication memory falls, B's
 * activations rise; freed by B, the block returns to A's cache. */
START_TEST(test_take_moves_accounting)
{
    struct pb_backend *a = wrap(cpu()), *b = cpu();
    wrapped.alloc = counting_alloc;
    struct pb_err e;
    float *p = pb_backend_alloc(a, 4096, PB_MEM_COMM, &e);
    ck_assert_uint_eq(a->mem_cur[PB_MEM_COMM], 4096);
    ck_assert(a->ops->shares_memory(a, b));
    pb_backend_take(b, a, p, PB_MEM_ACTS);
    ck_assert_uint_eq(a->mem_cur[PB_MEM_COMM], 0);
    ck_assert_uint_eq(b->mem_cur[PB_MEM_ACTS], 4096);
    ck_assert_uint_eq(a->mem_peak[PB_MEM_COMM], 4096);
    pb_backend_free(b, p);
    ck_assert_uint_eq(b->mem_cur[PB_MEM_ACTS], 0);
    int before = device_allocs;
    float *q = pb_backend_alloc(a, 4096, PB_MEM_COMM, &e);
    ck_assert_ptr_eq(q, p);   /* from a's cache */
    ck_assert_int_eq(device_allocs, before);
    pb_backend_free(a, q);
    a->ops = cpu_table;
    pb_backend_destroy(a);
    pb_backend_destroy(b);
}
END_TEST

/* Out of device memory at every allocation in turn — the stage's buffers, activations
 * and the kernels' workspaces created by their first use — is an error that names
 * the memory, never a crash; with memory enough, the pass succeeds. */
static int alloc_limit;

static void *failing_alloc(struct pb_backend *be, size_t bytes)
{
    if (device_allocs++ >= alloc_limit)
        return NULL;
    return cpu_table->alloc(be, bytes);
}

START_TEST(test_out_of_memory_everywhere)
{
    struct pb_model m;
    lenet(&m, 4);
    int failures = 0;
    for (alloc_limit = 0;; alloc_limit++) {
        struct pb_backend *be = wrap(cpu());
        wrapped.alloc = failing_alloc;
        device_allocs = 0;
        struct pb_stage s;
        struct pb_err e = {{0}};
        int rc = pb_stage_init(&s, be, &m, 0, 1, 0, m.nblocks, &e);
        int32_t *labels = NULL;
        if (!rc)
            rc = pb_stage_init_params(&s, 1, &e);
        if (!rc) {
            labels = pb_backend_alloc(be, 4 * sizeof *labels, PB_MEM_COMM, &e);
            rc = labels ? 0 : -1;
        }
        if (!rc) {
            int32_t host[4] = {0, 1, 2, 3};
            be->ops->upload(be, labels, host, sizeof host);
            struct pb_tensor x;
            rc = pb_tensor_alloc(be, &x, s.in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, &e);
            struct pb_step_ctx c = {true, 1, 0, NULL, NULL};
            struct pb_stage_act act;
            if (!rc) {
                be->ops->fill(be, x.data, 0.25f, pb_shape_count(s.in_shape));
                rc = pb_stage_forward(&s, &c, s.params, x, labels, &act, NULL, &e);
            }
            if (!rc)
                rc = pb_stage_backward(&s, &c, s.params, &act, NULL, NULL, &e);
        }
        bool done = rc == 0;
        if (!done) {
            failures++;
            ck_assert_msg(strstr(e.msg, "out of cpu memory") != NULL,
                          "allocation %d failing: '%s'", alloc_limit, e.msg);
        }
        pb_backend_free(be, labels);
        if (s.be)
            pb_stage_finish(&s);
        be->ops = cpu_table;
        pb_backend_destroy(be);
        if (done)
            break;
        ck_assert_int_lt(alloc_limit, 1000);
    }
    ck_assert_int_gt(failures, 10);
    pb_model_finish(&m);
}
END_TEST

/* A device of BUDGET bytes: the wrapped allocator refuses what would exceed it and
 * counts what it holds (blocks cached by the allocator included). */
#define BUDGET 1000
static size_t device_bytes;
static struct {
    void *p;
    size_t bytes;
} held[8];

static void *budget_alloc(struct pb_backend *be, size_t bytes)
{
    if (device_bytes + bytes > BUDGET)
        return NULL;
    void *p = cpu_table->alloc(be, bytes);
    for (int i = 0; p && i < 8; i++)
        if (!held[i].p) {
            held[i].p = p, held[i].bytes = bytes;
            device_bytes += bytes;
            return p;
        }
    ck_abort_msg("more than 8 blocks held");
    return NULL;
}

static void budget_free(struct pb_backend *be, void *p)
{
    for (int i = 0; i < 8; i++)
        if (held[i].p == p) {
            device_bytes -= held[i].bytes;
            held[i].p = NULL;
        }
    cpu_table->free(be, p);
}

/* Out of device memory while the cache holds free blocks of other sizes: they go back to
 * the device and the allocation is tried again; only a full device is an error. */
START_TEST(test_out_of_memory_releases_the_cache)
{
    struct pb_backend *be = wrap(cpu());
    wrapped.alloc = budget_alloc;
    wrapped.free = budget_free;
    device_bytes = 0;
    struct pb_err e;
    void *a = pb_backend_alloc(be, 600, PB_MEM_ACTS, &e);
    ck_assert_msg(a != NULL, "%s", e.msg);
    pb_backend_free(be, a);
    ck_assert_int_eq(pb_backend_block_state(be, a), PB_BLOCK_CACHED);
    ck_assert_uint_eq(device_bytes, 600);
    void *b = pb_backend_alloc(be, 800, PB_MEM_ACTS, &e);
    ck_assert_msg(b != NULL, "800 bytes with 600 cached on a device of %d: %s", BUDGET, e.msg);
    ck_assert_uint_eq(device_bytes, 800);
    if (a != b)  /* the cached block went back to the device */
        ck_assert_int_eq(pb_backend_block_state(be, a), PB_BLOCK_NONE);
    ck_assert_uint_eq(be->mem_cur[PB_MEM_ACTS], 800);
    ck_assert(pb_backend_alloc(be, 300, PB_MEM_ACTS, &e) == NULL);
    ck_assert_msg(strstr(e.msg, "out of cpu memory") && strstr(e.msg, "300 bytes"), "%s", e.msg);
    ck_assert_int_eq(pb_backend_status(be, &e), 0);
    pb_backend_free(be, b);
    pb_backend_destroy(be);  /* wrapped still: the cache's blocks leave through budget_free */
    ck_assert_uint_eq(device_bytes, 0);
}
END_TEST

static bool shares_nothing(const struct pb_backend *be, const struct pb_backend *other)
{
    (void)be, (void)other;
    return false;
}

START_TEST(test_copy_across_without_shared_memory)
{
    struct pb_backend *a = wrap(cpu()), *b = cpu();
    wrapped.shares_memory = shares_nothing;
    struct pb_err e;
    float host[64], back[64];
    for (int i = 0; i < 64; i++)
        host[i] = (float)i - 3.5f;
    float *pa = pb_backend_alloc(a, sizeof host, PB_MEM_COMM, &e);
    float *pb = pb_backend_alloc(b, sizeof host, PB_MEM_ACTS, &e);
    a->ops->upload(a, pa, host, sizeof host);
    ck_assert_int_eq(pb_backend_copy_across(b, pb, a, pa, sizeof host, &e), 0);
    b->ops->download(b, back, pb, sizeof back);
    b->ops->sync(b);
    ck_assert_int_eq(memcmp(host, back, sizeof host), 0);
    pb_backend_free(a, pa);
    pb_backend_free(b, pb);
    a->ops = cpu_table;
    pb_backend_destroy(a);
    pb_backend_destroy(b);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("backend_iface");
    TCase *tc = tcase_create("iface");
    tcase_add_test(tc, test_registry);
    tcase_add_test(tc, test_run_backend_flag);
    tcase_add_test(tc, test_supports_op);
    tcase_add_test(tc, test_steady_state_allocates_nothing);
    tcase_add_test(tc, test_node_clocks);
    tcase_add_test(tc, test_take_moves_accounting);
    tcase_add_test(tc, test_copy_across_without_shared_memory);
    tcase_add_test(tc, test_out_of_memory_everywhere);
    tcase_add_test(tc, test_out_of_memory_releases_the_cache);
    suite_add_tcase(s, tc);
    return s;
}
