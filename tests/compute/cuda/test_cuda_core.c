/* tests/compute/cuda/test_cuda_core.c — the CUDA backend's core on a GPU (exit 77 where there is no sign
 * of one; a GPU present but unusable fails): uploads, downloads, copies and reorders; the
 * staging pool (several writes open before one sync, buffers reused after it); fences
 * between two instances of one device; GEMM against the CPU backend within FP32 rounding
 * bounds for all four transposes, deterministic; bias_add bit for bit the CPU's, bias_grad
 * accumulating within a bound; and every allocating path failing cleanly under
 * pb_cuda_test_fail_allocs: pb_backend_alloc returns NULL with a message, the others fail
 * the instance with one, creation is refused. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/backend.h"
#include "harness/compute/cuda/cuda_internal.h"
#include "harness/compute/registry.h"
#include "tests/support/gpu_sign.h"

static struct pb_backend *make(const char *name, bool tf32)
{
    struct pb_err e;
    struct pb_backend_cfg c = {.device = 0, .threads = 1, .tf32 = tf32};
    struct pb_backend *be = pb_backend_create(name, &c, &e);
    ck_assert_msg(be != NULL, "%s: %s", name, e.msg);
    return be;
}

static void *dalloc(struct pb_backend *be, size_t bytes)
{
    struct pb_err e;
    void *p = pb_backend_alloc(be, bytes, PB_MEM_ACTS, &e);
    ck_assert_msg(p != NULL, "%s", e.msg);
    return p;
}

static void ok(struct pb_backend *be)
{
    struct pb_err e;
    be->ops->sync(be);
    ck_assert_msg(pb_backend_status(be, &e) == 0, "%s", e.msg);
}

static void randomize(float *x, size_t n, unsigned seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
    }
}

/* Uploads n floats of host to a new block of be. */
static float *put(struct pb_backend *be, const float *host, size_t n)
{
    float *d = dalloc(be, n * sizeof(float));
    be->ops->upload(be, d, host, n * sizeof(float));
    return d;
}

static float *get(struct pb_backend *be, const float *d, size_t n)
{
    float *h = malloc(n * sizeof(float));
    be->ops->download(be, h, d, n * sizeof(float));
    ok(be);
    return h;
}

START_TEST(test_copies)
{
    struct pb_backend *be = make("cuda", false);
    enum { N = 3 * 5 * 7 * 11 };
    float host[N];
    randomize(host, N, 1);
    float *a = put(be, host, N);
    float *b = dalloc(be, N * sizeof(float));
    be->ops->copy(be, b, a, N * sizeof(float));
    struct pb_tensor src = {.shape = {3, 5, 7, 11}, .layout = PB_LAYOUT_PLAIN, .data = b};
    struct pb_tensor dst;
    struct pb_err e;
    ck_assert_msg(pb_tensor_alloc(be, &dst, src.shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, &e) == 0, "%s",
                  e.msg);
    ck_assert_uint_eq(pb_tensor_floats(be, &dst), N);
    be->ops->reorder(be, &src, &dst);
    float *back = get(be, dst.data, N);
    ck_assert_mem_eq(back, host, sizeof host);
    ck_assert(be->ops->shares_memory(be, be));
    ck_assert(!be->ops->host_visible);
    free(back);
    pb_backend_free(be, a);
    pb_backend_free(be, b);
    pb_backend_free(be, dst.data);
    pb_backend_destroy(be);
}
END_TEST

/* Three writes open before one sync land in three buffers; after the sync the same sizes
 * take the pool's buffers again; a buffer whose copy is queued is not handed out. */
START_TEST(test_staging)
{
    struct pb_backend *be = make("cuda", false);
    struct pb_cuda *cu = pb_cuda_of(be);
    const size_t sizes[3] = {1, 100000, 1 << 20};
    float *dev[3], *host[3];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3; i++) {
            if (!round)
                dev[i] = dalloc(be, sizes[i] * sizeof(float));
            float *h = be->ops->write_begin(be, dev[i], sizes[i] * sizeof(float));
            ck_assert_ptr_nonnull(h);
            for (int j = 0; j < i; j++)
                ck_assert_ptr_ne(h, host[j]);
            if (round)
                ck_assert_msg(h == host[0] || h == host[1] || h == host[2],
                              "the pool did not hand its buffer out again");
            host[i] = h;
            for (size_t k = 0; k < sizes[i]; k++)
                h[k] = (float)(k * 3 + (size_t)i + (size_t)round);
        }
        for (int i = 0; i < 3; i++)
            be->ops->write_end(be, dev[i], host[i], sizes[i] * sizeof(float));
        ok(be);
        ck_assert_int_eq(cu->nstaging, 3);
        for (int i = 0; i < 3; i++) {
            float *back = get(be, dev[i], sizes[i]);
            for (size_t k = 0; k < sizes[i]; k++)
                ck_assert_float_eq(back[k], (float)(k * 3 + (size_t)i + (size_t)round));
            free(back);
        }
    }
    float *h1 = be->ops->write_begin(be, dev[0], sizeof(float));
    be->ops->write_end(be, dev[0], h1, sizeof(float));
    float *h2 = be->ops->write_begin(be, dev[0], sizeof(float));
    ck_assert_ptr_ne(h1, h2);
    be->ops->write_end(be, dev[0], h2, sizeof(float));
    ok(be);
    for (int i = 0; i < 3; i++)
        pb_backend_free(be, dev[i]);
    pb_backend_destroy(be);
}
END_TEST

/* A block of a moved to b, read by b and freed there returns to a's cache with b's fence;
 * a's next allocation of that size reuses it after the fence, so b's copy read the old
 * bytes. Then a fence recorded on a orders b's read of a's upload. */
START_TEST(test_fences)
{
    struct pb_backend *a = make("cuda", false), *b = make("cuda", false);
    ck_assert(a->ops->shares_memory(a, b));
    enum { N = 1 << 22 };
    float *old = malloc(N * sizeof(float)), *fresh = malloc(N * sizeof(float));
    randomize(old, N, 2);
    randomize(fresh, N, 3);
    float *p = put(a, old, N);
    ok(a);
    pb_backend_take(b, a, p, PB_MEM_ACTS);
    float *q = dalloc(b, N * sizeof(float));
    b->ops->copy(b, q, p, N * sizeof(float));
    pb_backend_free(b, p);
    float *p2 = dalloc(a, N * sizeof(float));
    ck_assert_ptr_eq(p2, p);
    a->ops->upload(a, p2, fresh, N * sizeof(float));
    ok(a);
    float *back = get(b, q, N);
    ck_assert_mem_eq(back, old, N * sizeof(float));
    free(back);

    a->ops->upload(a, p2, old, N * sizeof(float));
    void *fence = a->ops->fence_record(a);
    ck_assert_ptr_nonnull(fence);
    b->ops->fence_wait(b, fence);
    b->ops->copy(b, q, p2, N * sizeof(float));
    back = get(b, q, N);
    ck_assert_mem_eq(back, old, N * sizeof(float));
    ok(a);
    free(back);
    pb_backend_free(a, p2);
    pb_backend_free(b, q);
    free(old);
    free(fresh);
    pb_backend_destroy(b);
    pb_backend_destroy(a);
}
END_TEST

/* C = alpha op(A) op(B) + beta C against the CPU backend, each element within FP32
 * rounding of its terms: |gpu − cpu| ≤ 2 (k + 2) ε (|alpha| Σ|a||b| + |beta c|) (both sums
 * are FP32 sums of k products in some order; TF32 inputs round to 2^-11 each). */
static void check_gemm(bool tf32)
{
    struct pb_backend *cu = make("cuda", tf32), *cpu = make("cpu", false);
    const int m = 37, n = 53, k = 61;
    const float alpha = 0.7f, beta = 0.3f;
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
        int lda = ac + 3, ldb = bc + 1, ldc = n + 2;
        size_t na = (size_t)ar * lda, nb = (size_t)br * ldb, nc = (size_t)m * ldc;
        float *ha = malloc(na * 4), *hb = malloc(nb * 4), *hc = malloc(nc * 4);
        float *ref = malloc(nc * 4);
        randomize(ha, na, 10 + t);
        randomize(hb, nb, 20 + t);
        randomize(hc, nc, 30 + t);
        memcpy(ref, hc, nc * 4);
        float *da = put(cu, ha, na), *db = put(cu, hb, nb), *dc = put(cu, hc, nc);
        cpu->ops->gemm(cpu, ta, tb, m, n, k, alpha, ha, lda, hb, ldb, beta, ref, ldc);
        cu->ops->gemm(cu, ta, tb, m, n, k, alpha, da, lda, db, ldb, beta, dc, ldc);
        float *got = get(cu, dc, nc);
        cu->ops->upload(cu, dc, hc, nc * 4);
        cu->ops->gemm(cu, ta, tb, m, n, k, alpha, da, lda, db, ldb, beta, dc, ldc);
        float *again = get(cu, dc, nc);
        ck_assert_msg(!memcmp(got, again, nc * 4), "gemm %d: two runs differ", t);
        double eps = tf32 ? ldexp(1.0, -10) : FLT_EPSILON;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < ldc; j++) {
                size_t at = (size_t)i * ldc + j;
                if (j >= n) {
                    ck_assert_msg(got[at] == hc[at], "gemm %d wrote past n at (%d, %d)", t, i, j);
                    continue;
                }
                double mag = fabs(beta * hc[at]);
                for (int l = 0; l < k; l++) {
                    float x = ta ? ha[(size_t)l * lda + i] : ha[(size_t)i * lda + l];
                    float y = tb ? hb[(size_t)j * ldb + l] : hb[(size_t)l * ldb + j];
                    mag += fabs((double)alpha * x * y);
                }
                double tol = 2.0 * (k + 2) * eps * mag;
                ck_assert_msg(fabs((double)got[at] - ref[at]) <= tol,
                              "gemm %d (tf32 %d) at (%d, %d): %.9g vs cpu %.9g, bound %.3g", t,
                              tf32, i, j, got[at], ref[at], tol);
            }
        free(ha), free(hb), free(hc), free(ref), free(got), free(again);
        pb_backend_free(cu, da);
        pb_backend_free(cu, db);
        pb_backend_free(cu, dc);
    }
    pb_backend_destroy(cpu);
    pb_backend_destroy(cu);
}

START_TEST(test_gemm_fp32)
{
    check_gemm(false);
}
END_TEST

START_TEST(test_gemm_tf32)
{
    check_gemm(true);
}
END_TEST

/* bias_add: the CPU's bits; bias_grad twice (it accumulates) within n ε Σ|dy| a column. */
START_TEST(test_bias)
{
    struct pb_backend *cu = make("cuda", false), *cpu = make("cpu", false);
    const int n = 1500, c = 77;  /* n past the first ones vector's 1024: it grows */
    size_t ny = (size_t)n * c;
    float *y = malloc(ny * 4), *b = malloc(c * 4), *db = malloc(c * 4);
    randomize(y, ny, 40);
    randomize(b, c, 41);
    randomize(db, c, 42);
    float *dy = put(cu, y, ny), *dbias = put(cu, b, c), *ddb = put(cu, db, c);
    cu->ops->bias_grad(cu, dy, ddb, n, c);
    cu->ops->bias_grad(cu, dy, ddb, n, c);
    float *gotdb = get(cu, ddb, c);
    cu->ops->bias_add(cu, dy, dbias, n, c);
    float *goty = get(cu, dy, ny);
    float *refdb = malloc(c * 4);
    memcpy(refdb, db, c * 4);
    cpu->ops->bias_grad(cpu, y, refdb, n, c);
    cpu->ops->bias_grad(cpu, y, refdb, n, c);
    for (int j = 0; j < c; j++) {
        double mag = fabs(db[j]);
        for (int r = 0; r < n; r++)
            mag += 2.0 * fabs(y[(size_t)r * c + j]);
        double tol = 2.0 * (n + 2) * FLT_EPSILON * mag;
        ck_assert_msg(fabs((double)gotdb[j] - refdb[j]) <= tol, "bias_grad[%d]: %.9g vs cpu %.9g",
                      j, gotdb[j], refdb[j]);
    }
    cpu->ops->bias_add(cpu, y, b, n, c);
    ck_assert_msg(!memcmp(goty, y, ny * 4), "bias_add differs from the CPU's bits");
    ck_assert(cu->ops->supports_op(cu, PB_BOP_GEMM) && cu->ops->supports_op(cu, PB_BOP_BIAS));
    ck_assert(!cu->ops->supports_op(cu, PB_BOP_NOPS));
    free(y), free(b), free(db), free(gotdb), free(goty), free(refdb);
    pb_backend_free(cu, dy);
    pb_backend_free(cu, dbias);
    pb_backend_free(cu, ddb);
    pb_backend_destroy(cpu);
    pb_backend_destroy(cu);
}
END_TEST

static void expect_failed(struct pb_backend *be, const char *fragment)
{
    struct pb_err e;
    ck_assert_msg(pb_backend_status(be, &e) == -1, "the instance did not fail (%s)", fragment);
    ck_assert_msg(strstr(e.msg, fragment), "'%s' lacks '%s'", e.msg, fragment);
}

START_TEST(test_alloc_failures)
{
    struct pb_err e;
    struct pb_backend *be = make("cuda", false);
    pb_cuda_test_fail_allocs(1);
    ck_assert_ptr_null(pb_backend_alloc(be, 12345, PB_MEM_ACTS, &e));
    ck_assert_msg(strstr(e.msg, "out of cuda memory") && strstr(e.msg, "12345 bytes"), "%s", e.msg);
    ck_assert_int_eq(pb_backend_status(be, NULL), 0);
    void *p = dalloc(be, 12345);
    pb_backend_free(be, p);

    float *d = dalloc(be, 3 << 20);
    pb_cuda_test_fail_allocs(1);  /* no staging buffer of 3 MiB yet: cudaHostAlloc */
    float *h = be->ops->write_begin(be, d, 3 << 20);
    ck_assert_ptr_nonnull(h);
    memset(h, 0, 3 << 20);
    be->ops->write_end(be, d, h, 3 << 20);
    be->ops->sync(be);
    expect_failed(be, "pinned host memory");
    pb_backend_free(be, d);
    pb_backend_destroy(be);

    be = make("cuda", false);
    float *y = dalloc(be, 5000 * 3 * sizeof(float)), *db = dalloc(be, 3 * sizeof(float));
    pb_cuda_test_fail_allocs(1);
    be->ops->bias_grad(be, y, db, 5000, 3);
    expect_failed(be, "out of cuda memory");
    pb_backend_free(be, y);
    pb_backend_free(be, db);
    pb_backend_destroy(be);

    be = make("cuda", false);
    pb_cuda_test_fail_allocs(1);
    ck_assert_ptr_null(pb_cuda_workspace(be, 1 << 20));
    expect_failed(be, "out of cuda memory");
    pb_backend_destroy(be);

    pb_cuda_test_fail_allocs(1);
    struct pb_backend_cfg c = {.device = 0};
    ck_assert_ptr_null(pb_backend_create("cuda", &c, &e));
    ck_assert_msg(strstr(e.msg, "cuBLAS's workspace") && strstr(e.msg, "out of cuda memory"), "%s",
                  e.msg);
    pb_cuda_test_fail_allocs(0);
}
END_TEST

Suite *pb_test_suite(void)
{
    if (!pb_test_gpu_sign()) {
        printf("no NVIDIA GPU here (no /dev/nvidiactl, no libcuda.so.1): skipped\n");
        exit(77);
    }
    Suite *s = suite_create("cuda_core");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_copies);
    tcase_add_test(tc, test_staging);
    tcase_add_test(tc, test_fences);
    tcase_add_test(tc, test_gemm_fp32);
    tcase_add_test(tc, test_gemm_tf32);
    tcase_add_test(tc, test_bias);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}
