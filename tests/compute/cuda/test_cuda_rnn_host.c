/* tests/compute/cuda/test_cuda_rnn_host.c — the CUDA backend's LSTM and attention ops (cuda_lstm.c,
 * cuda_attention.c, cuda_rnn.c: the code itself, as linked from the library) run on the
 * host against the CPU backend, without a GPU. What they call is replaced here: the three
 * cuBLAS calls (Sgemm, SgemmStridedBatched, Sgemv) by host versions of their documented
 * column-major semantics, the CUDA runtime's fills and copies by memset and memcpy, and the
 * kernels' launch helpers (cuda_rnn.h) by loops over every index that call the kernels' own
 * per-element bodies (cuda_rnn_kernels.h), the block and warp sums in the kernels' order.
 * So it checks the row-major mapping of every product (transposes, leading dimensions,
 * batch strides), the workspace and scratch layouts, the strided copies, the per-element
 * math and the ops' contracts (accumulation, NULL dx/dq/dk, lengths, the states,
 * attn_fwd_projected's and the inference forward's bits equal to attn_fwd's, the split
 * backward's data then weights passes equal to the fused one's bits, on both), within the
 * parity suite's tolerances of the CPU. What it cannot check: the kernels' thread mapping,
 * the score's shared-memory tiles, the warp shuffles, cuBLAS itself — the op parity suite
 * (test_backend_ops) runs those on a GPU. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/rng.h"
#include "harness/compute/backend.h"
#include "harness/compute/cuda/cuda_rnn_kernels.h"
#include "harness/compute/registry.h"
#include "tests/support/test_util.h"

/* ---- cuBLAS, column-major, sums in double ---- */

static float op_at(const float *m, int ld, bool t, int r, int c)
{
    return t ? m[(size_t)c + (size_t)r * ld] : m[(size_t)r + (size_t)c * ld];
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const float *alpha, const float *a, int lda,
                              const float *b, int ldb, const float *beta, float *c, int ldc)
{
    (void)h;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0;
            for (int l = 0; l < k; l++)
                s += (double)op_at(a, lda, ta != CUBLAS_OP_N, i, l) *
                     op_at(b, ldb, tb != CUBLAS_OP_N, l, j);
            float *cij = c + i + (size_t)j * ldc;
            /* beta = 0: C is not read (it may hold NaN) */
            *cij = (float)(*alpha * s + (*beta != 0.0f ? (double)*beta * *cij : 0.0));
        }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *a, int lda,
                                         long long sa, const float *b, int ldb, long long sb,
                                         const float *beta, float *c, int ldc, long long sc,
                                         int count)
{
    for (int i = 0; i < count; i++)
        cublasSgemm_v2(h, ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta,
                       c + i * sc, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemv_v2(cublasHandle_t h, cublasOperation_t t, int m, int n,
                              const float *alpha, const float *a, int lda, const float *x,
                              int incx, const float *beta, float *y, int incy)
{
    (void)h;
    int ny = t == CUBLAS_OP_N ? m : n, nx = t == CUBLAS_OP_N ? n : m;
    for (int i = 0; i < ny; i++) {
        double s = 0;
        for (int l = 0; l < nx; l++)
            s += (double)op_at(a, lda, t != CUBLAS_OP_N, i, l) * x[(size_t)l * incx];
        float *yi = y + (size_t)i * incy;
        *yi = (float)(*alpha * s + (*beta != 0.0f ? (double)*beta * *yi : 0.0));
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- the CUDA runtime: the one emulated device, its fills and copies ---- */

cudaError_t cudaSetDevice(int d)
{
    return d == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
    (void)s;
    memset(p, v, n);
    return cudaSuccess;
}

cudaError_t cudaMemset2DAsync(void *p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s)
{
    (void)s;
    for (size_t r = 0; r < h; r++)
        memset((char *)p + r * pitch, v, w);
    return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t w,
                              size_t h, enum cudaMemcpyKind kind, cudaStream_t s)
{
    (void)kind, (void)s;
    ck_assert(w <= dpitch && w <= spitch);
    for (size_t r = 0; r < h; r++)
        memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, w);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    (void)kind, (void)s;
    memmove(dst, src, n);
    return cudaSuccess;
}

/* ---- the kernels: every index of their grids, through their per-element bodies ---- */

void pb_cuda_lstm_cell_fwd(struct pb_backend *be, const struct pb_cuda_lstm_cell *p, int t)
{
    (void)be;
    for (int b = 0; b < p->batch; b++)
        for (int j = 0; j < p->hidden; j++)
            pb_cu_lstm_cell_fwd_at(p, t, b, j);
}

void pb_cuda_lstm_cell_bwd(struct pb_backend *be, const struct pb_cuda_lstm_cell_grad *p, int t)
{
    (void)be;
    for (int b = 0; b < p->batch; b++)
        for (int j = 0; j < p->hidden; j++)
            pb_cu_lstm_cell_bwd_at(p, t, b, j);
}

void pb_cuda_rnn_ones(struct pb_backend *be, float *p, size_t n)
{
    (void)be;
    for (size_t i = 0; i < n; i++)
        p[i] = 1.0f;
}

/* The lengths kernel's flag as the device leaves it (the lowest bad source's key), and
 * what the sync after makes of it: the instance failed with its message. */
void pb_cuda_attn_check_lengths(struct pb_backend *be, const struct pb_cuda_attn_dims *d)
{
    int f[PB_CUDA_FLAG_INTS] = {0};
    uint64_t key = 0;
    for (int b = 0; d->lengths && b < d->batch; b++)
        if (d->lengths[b] < 1 || d->lengths[b] > d->tk) {
            uint64_t k = pb_cuda_flag_key((unsigned)b, (uint32_t)d->lengths[b]);
            key = k > key ? k : key;
            f[0] = 1, f[1] = PB_CUDA_FLAG_ATTN_LEN, f[2] = d->tk;
        }
    memcpy(f + 4, &key, sizeof key);
    char msg[256];
    if (pb_cuda_flag_message(f, msg, sizeof msg))
        pb_backend_fail(be, "%s", msg);
}

enum { RED = 256 };  /* cuda_attention.cu's RED_THREADS */

/* The v̂ kernels' block sum: thread t's part over n ≡ t (mod RED), then the fixed tree. */
static double block_sum(double *part)
{
    for (int w = RED / 2; w > 0; w /= 2)
        for (int t = 0; t < w; t++)
            part[t] += part[t + w];
    return part[0];
}

static double v_norm(int U, const float *v)
{
    double part[RED] = {0};
    for (int n = 0; n < U; n++)
        part[n % RED] += (double)v[n] * v[n];
    return sqrt(block_sum(part));
}

void pb_cuda_attn_vhat(struct pb_backend *be, int units, const float *v, const float *g, float *vh)
{
    (void)be;
    double norm = v_norm(units, v);
    for (int n = 0; n < units; n++)
        vh[n] = (float)(g[0] * v[n] / norm);
}

void pb_cuda_attn_vgrad(struct pb_backend *be, int units, const float *v, const float *g,
                        const float *dvhat, float *gv, float *gg)
{
    (void)be;
    double norm = v_norm(units, v), part[RED] = {0};
    for (int n = 0; n < units; n++)
        part[n % RED] += v[n] / norm * dvhat[n];
    double udv = block_sum(part);
    gg[0] += (float)udv;
    for (int n = 0; n < units; n++)
        gv[n] += (float)(g[0] / norm * (dvhat[n] - v[n] / norm * udv));
}

void pb_cuda_attn_score(struct pb_backend *be, const struct pb_cuda_attn_dims *d,
                        const float *pq, const float *pk, const float *bias, const float *vh,
                        float *s)
{
    (void)be;
    int U = d->units;
    for (int b = 0; b < d->batch; b++)
        for (int i = 0; i < d->tq; i++)
            for (int j = 0; j < pb_cu_attn_len(d, b); j++) {
                const float *q = pq + ((size_t)b * d->tq + i) * U;
                const float *k = pk + ((size_t)b * d->tk + j) * U;
                float acc = 0.0f;
                for (int n = 0; n < U; n++)
                    acc = pb_cu_attn_score_term(acc, vh[n], q[n], k[n], bias[n]);
                s[((size_t)b * d->tq + i) * d->tk + j] = acc;
            }
}

/* A warp's butterfly sum of its 32 lanes' parts (every lane ends with lane 0's value). */
static double warp_sum(double *lane)
{
    for (int w = 16; w > 0; w /= 2) {
        double next[32];
        for (int l = 0; l < 32; l++)
            next[l] = lane[l] + lane[l ^ w];
        memcpy(lane, next, sizeof next);
    }
    return lane[0];
}

void pb_cuda_attn_softmax(struct pb_backend *be, const struct pb_cuda_attn_dims *d, float *a)
{
    (void)be;
    for (size_t r = 0; r < (size_t)d->batch * d->tq; r++) {
        int len = pb_cu_attn_len(d, (int)(r / d->tq));
        float *ar = a + r * d->tk, mx = -INFINITY;
        for (int j = 0; j < len; j++)
            mx = ar[j] > mx ? ar[j] : mx;
        double lane[32] = {0};
        for (int j = 0; j < len; j++)
            lane[j % 32] += exp((double)ar[j] - mx);
        double sum = warp_sum(lane);
        for (int j = 0; j < d->tk; j++)
            ar[j] = j < len ? (float)(exp((double)ar[j] - mx) / sum) : 0.0f;
    }
}

void pb_cuda_attn_softmax_bwd(struct pb_backend *be, const struct pb_cuda_attn_dims *d,
                              const float *a, float *ds)
{
    (void)be;
    for (size_t r = 0; r < (size_t)d->batch * d->tq; r++) {
        int len = pb_cu_attn_len(d, (int)(r / d->tq));
        const float *ar = a + r * d->tk;
        float *dr = ds + r * d->tk;
        double lane[32] = {0};
        for (int j = 0; j < len; j++)
            lane[j % 32] += (double)ar[j] * dr[j];
        double dot = warp_sum(lane);
        for (int j = 0; j < d->tk; j++)
            dr[j] = j < len ? (float)(ar[j] * (dr[j] - dot)) : 0.0f;
    }
}

void pb_cuda_attn_dpq(struct pb_backend *be, const struct pb_cuda_attn_dims *d, const float *pq,
                      const float *pk, const float *bias, const float *vh, const float *ds,
                      float *dpq)
{
    (void)be;
    for (size_t r = 0; r < (size_t)d->batch * d->tq; r++)
        for (int n = 0; n < d->units; n++)
            pb_cu_attn_dpq_at(d, pq, pk, bias, vh, ds, dpq, r, n);
}

void pb_cuda_attn_dpk(struct pb_backend *be, const struct pb_cuda_attn_dims *d, const float *pq,
                      const float *pk, const float *bias, const float *vh, const float *ds,
                      float *dpk, float *gvp)
{
    (void)be;
    for (size_t r = 0; r < (size_t)d->batch * d->tk; r++)
        for (int n = 0; n < d->units; n++)
            pb_cu_attn_dpk_at(d, pq, pk, bias, vh, ds, dpk, gvp, r, n);
}

/* ---- the emulated instance: host memory, the CUDA ops of cuda_internal.h ---- */

static void *host_alloc(struct pb_backend *be, size_t bytes)
{
    (void)be;
    return aligned_alloc(256, (bytes + 255) / 256 * 256);
}

static void host_free(struct pb_backend *be, void *p)
{
    (void)be;
    free(p);
}

static const struct pb_backend_ops emulated_ops = {
    .name = "cuda (host emulation)", .alloc = host_alloc, .free = host_free,
    .lstm_bwd_keep = pb_cuda_lstm_bwd_keep, .lstm_bwd_data = pb_cuda_lstm_bwd_data,
    .lstm_bwd_weights = pb_cuda_lstm_bwd_weights, .attn_bwd_keep = pb_cuda_attn_bwd_keep,
    .attn_bwd_data = pb_cuda_attn_bwd_data, .attn_bwd_weights = pb_cuda_attn_bwd_weights,
    .attn_workspace = pb_cuda_attn_workspace, .attn_fwd = pb_cuda_attn_fwd,
    .attn_fwd_projected = pb_cuda_attn_fwd_projected,
};

static struct pb_cuda emulated_cu;

static struct pb_backend *emu_new(void)
{
    struct pb_backend *be = malloc(sizeof *be);
    ck_assert_ptr_nonnull(be);
    pb_backend_init_common(be, &emulated_ops, &emulated_cu, 0);
    return be;
}

static void emu_done(struct pb_backend *be)
{
    ck_assert_msg(!be->failed, "%s", be->error.msg);
    for (int k = 0; k < PB_MEM_NKINDS; k++)  /* every scratch block freed */
        ck_assert_uint_eq(be->mem_cur[k], 0);
    pb_backend_finish_common(be);
    free(be);
}

static struct pb_backend *cpu_new(void)
{
    struct pb_err e;
    struct pb_backend_cfg bc = {.device = 0, .threads = 2};
    struct pb_backend *be = pb_backend_create("cpu", &bc, &e);
    ck_assert_msg(be != NULL, "%s", e.msg);
    return be;
}

/* Memory of either instance (both host memory), freed by release. */
static struct {
    struct pb_backend *be;
    void *p;
} tracked[64];
static int ntracked;

static float *buf(struct pb_backend *be, size_t n)
{
    struct pb_err e;
    float *p = pb_backend_alloc(be, (n ? n : 1) * sizeof(float), PB_MEM_ACTS, &e);
    ck_assert_msg(p != NULL, "%s", e.msg);
    ck_assert(ntracked < 64);
    tracked[ntracked].be = be;
    tracked[ntracked++].p = p;
    return p;
}

/* Frees what the test allocated on the two instances, then them; every block of the
 * emulated one was the test's (the ops freed their scratch). */
static void release(struct pb_backend *gpu, struct pb_backend *cpu)
{
    for (int i = 0; i < ntracked; i++)
        pb_backend_free(tracked[i].be, tracked[i].p);
    ntracked = 0;
    emu_done(gpu);
    pb_backend_destroy(cpu);
}

static float *rnd(struct pb_backend *be, size_t n, uint64_t tag, float lo, float hi)
{
    float *p = buf(be, n);
    pb_rng_fill_uniform(pb_rng_key(PB_RNG_DATA, 4321, tag, 0, 0), 0, p, n, lo, hi);
    return p;
}

static float *nans(struct pb_backend *be, size_t n)
{
    float *p = buf(be, n);
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
    return p;
}

/* got within rtol·|want| + atol of want, element by element (the parity suite's bound) */
static void assert_close(const char *what, const float *got, const float *want, size_t n)
{
    pb_assert_close(what, got, want, n, 1e-4, 1e-5);
}

static void assert_same(const char *what, const float *got, const float *want, size_t n)
{
    ck_assert_msg(!memcmp(got, want, n * sizeof *got), "%s: other bits", what);
}

/* ---- LSTM ---- */

static const struct pb_lstm_desc lstm_cases[] = {
    {2, 4, 5, 6}, {3, 6, 8, 16}, {1, 1, 3, 4}, {4, 3, 7, 33},
};

/* Training forward and backward (twice: accumulated), with dx and without, and the
 * inference forward from given states to the final ones, against the CPU backend. */
START_TEST(test_lstm)
{
    const struct pb_lstm_desc *d = &lstm_cases[_i];
    struct pb_backend *gpu = emu_new(), *cpu = cpu_new();
    struct pb_backend *be[2] = {gpu, cpu};
    size_t nx = (size_t)d->batch * d->steps * d->input, ny = (size_t)d->batch * d->steps * d->hidden;
    size_t nw = 4 * (size_t)d->hidden * (d->input + d->hidden + 2), ns = (size_t)d->batch * d->hidden;
    float *y[2], *dx[2], *dw[2], *yi[2], *hl[2], *cl[2], *x[2], *w[2], *dy[2], *h0[2], *c0[2];
    void *ws[2];
    for (int k = 0; k < 2; k++) {
        x[k] = rnd(be[k], nx, 1, -1, 1), w[k] = rnd(be[k], nw, 2, -0.5f, 0.5f);
        dy[k] = rnd(be[k], ny, 3, -1, 1), dw[k] = rnd(be[k], nw, 4, -1, 1);
        h0[k] = rnd(be[k], ns, 5, -1, 1), c0[k] = rnd(be[k], ns, 6, -1, 1);
        y[k] = nans(be[k], ny), dx[k] = nans(be[k], nx), yi[k] = nans(be[k], ny);
        hl[k] = nans(be[k], ns), cl[k] = nans(be[k], ns);
        ws[k] = buf(be[k], (k ? cpu->ops->lstm_workspace(cpu, d) : pb_cuda_lstm_workspace(gpu, d)) /
                               sizeof(float));
        struct pb_lstm_states st = {h0[k], c0[k], hl[k], cl[k]};
        if (k == 0) {
            pb_cuda_lstm_fwd(gpu, d, x[0], w[0], y[0], ws[0], NULL);
            pb_cuda_lstm_bwd(gpu, d, x[0], w[0], y[0], dy[0], ws[0], dx[0], dw[0]);
            pb_cuda_lstm_bwd(gpu, d, x[0], w[0], y[0], dy[0], ws[0], NULL, dw[0]);
            pb_cuda_lstm_fwd(gpu, d, x[0], w[0], yi[0], NULL, &st);
        } else {
            const struct pb_backend_ops *o = cpu->ops;
            o->lstm_fwd(cpu, d, x[1], w[1], y[1], ws[1], NULL);
            o->lstm_bwd(cpu, d, x[1], w[1], y[1], dy[1], ws[1], dx[1], dw[1]);
            o->lstm_bwd(cpu, d, x[1], w[1], y[1], dy[1], ws[1], NULL, dw[1]);
            o->lstm_fwd(cpu, d, x[1], w[1], yi[1], NULL, &st);
        }
        ck_assert_msg(!be[k]->failed, "%s", be[k]->error.msg);
    }
    assert_close("y (train)", y[0], y[1], ny);
    assert_close("dx", dx[0], dx[1], nx);
    assert_close("dw_acc", dw[0], dw[1], nw);
    assert_close("y (inference, states)", yi[0], yi[1], ny);
    assert_close("h_last", hl[0], hl[1], ns);
    assert_close("c_last", cl[0], cl[1], ns);
    /* the inference forward without states gives training's bits */
    float *y2 = nans(gpu, ny);
    pb_cuda_lstm_fwd(gpu, d, x[0], w[0], y2, NULL, NULL);
    assert_same("y (inference)", y2, y[0], ny);
    /* the split backward on each: data then weights, twice as above, gives the fused
     * pass's bits of dx and dw_acc, the weights pass reading only x, y and the keep */
    for (int k = 0; k < 2; k++) {
        const struct pb_backend_ops *o = be[k]->ops;
        float *dx2 = nans(be[k], nx), *dw2 = rnd(be[k], nw, 4, -1, 1);
        void *keep = nans(be[k], o->lstm_bwd_keep(be[k], d) / sizeof(float));
        o->lstm_bwd_data(be[k], d, w[k], dy[k], ws[k], dx2, keep);
        o->lstm_bwd_weights(be[k], d, x[k], y[k], keep, dw2);
        o->lstm_bwd_data(be[k], d, w[k], dy[k], ws[k], NULL, keep);
        o->lstm_bwd_weights(be[k], d, x[k], y[k], keep, dw2);
        ck_assert_msg(!be[k]->failed, "%s", be[k]->error.msg);
        assert_same(k ? "dx (cpu, data pass)" : "dx (data pass)", dx2, dx[k], nx);
        assert_same(k ? "dw_acc (cpu, weights pass)" : "dw_acc (weights pass)", dw2, dw[k], nw);
    }
    release(gpu, cpu);
}
END_TEST

/* ---- attention ---- */

struct attn_case {
    struct pb_attn_desc d;
    bool lengths;
};

static const struct attn_case attn_cases[] = {
    {{3, 4, 5, 4, 6, 7}, true},     {{3, 1, 5, 4, 6, 37}, true},  {{2, 3, 9, 16, 24, 48}, false},
    {{2, 5, 40, 8, 12, 300}, true}, {{1, 2, 1, 3, 5, 2}, false},
};

/* Forward (training and inference), weights, backward twice (with dq and dk, then without:
 * dw accumulated), attn_project_keys and attn_fwd_projected with the weights wanted and not,
 * against the CPU backend and the contract's equal bits. */
START_TEST(test_attention)
{
    const struct attn_case *c = &attn_cases[_i];
    const struct pb_attn_desc *d = &c->d;
    struct pb_backend *gpu = emu_new(), *cpu = cpu_new();
    struct pb_backend *be[2] = {gpu, cpu};
    int B = d->batch, U = d->units;
    size_t nq = (size_t)B * d->tq * d->query, nk = (size_t)B * d->tk * d->key;
    size_t nctx = (size_t)B * d->tq * d->key, na = (size_t)B * d->tq * d->tk;
    size_t nw = (size_t)U * (2 + d->query + d->key) + 1, npk = (size_t)B * d->tk * U;
    float *q[2], *k[2], *w[2], *ctx[2], *a[2], *dctx[2], *dq[2], *dk[2], *dw[2], *pk[2];
    float *ctx2[2], *a2[2];
    int32_t *len[2];
    void *ws[2];
    for (int e = 0; e < 2; e++) {
        struct pb_backend *b = be[e];
        q[e] = rnd(b, nq, 11, -1, 1), k[e] = rnd(b, nk, 12, -1, 1), w[e] = rnd(b, nw, 13, -1, 1);
        dctx[e] = rnd(b, nctx, 14, -1, 1), dw[e] = rnd(b, nw, 15, -1, 1);
        ctx[e] = nans(b, nctx), a[e] = nans(b, na), dq[e] = nans(b, nq), dk[e] = nans(b, nk);
        pk[e] = nans(b, npk), ctx2[e] = nans(b, nctx), a2[e] = nans(b, na);
        len[e] = (int32_t *)buf(b, (size_t)B);
        for (int s = 0; s < B; s++)
            len[e][s] = s == 0 ? d->tk : 1 + (s * 5 + 1) % d->tk;
        const int32_t *l = c->lengths ? len[e] : NULL;
        if (e == 0) {
            ws[0] = buf(gpu, pb_cuda_attn_workspace(gpu, d) / sizeof(float));
            pb_cuda_attn_fwd(gpu, d, q[0], k[0], l, w[0], ctx[0], ws[0]);
            pb_cuda_attn_weights(gpu, d, ws[0], a[0]);
            pb_cuda_attn_bwd(gpu, d, q[0], k[0], l, w[0], ws[0], dctx[0], dq[0], dk[0], dw[0]);
            pb_cuda_attn_bwd(gpu, d, q[0], k[0], l, w[0], ws[0], dctx[0], NULL, NULL, dw[0]);
            pb_cuda_attn_project_keys(gpu, d, k[0], w[0], pk[0]);
            pb_cuda_attn_fwd_projected(gpu, d, q[0], k[0], pk[0], l, w[0], ctx2[0], a2[0]);
        } else {
            const struct pb_backend_ops *o = cpu->ops;
            ws[1] = buf(cpu, o->attn_workspace(cpu, d) / sizeof(float));
            o->attn_fwd(cpu, d, q[1], k[1], l, w[1], ctx[1], ws[1]);
            o->attn_weights(cpu, d, ws[1], a[1]);
            o->attn_bwd(cpu, d, q[1], k[1], l, w[1], ws[1], dctx[1], dq[1], dk[1], dw[1]);
            o->attn_bwd(cpu, d, q[1], k[1], l, w[1], ws[1], dctx[1], NULL, NULL, dw[1]);
            o->attn_project_keys(cpu, d, k[1], w[1], pk[1]);
        }
        ck_assert_msg(!b->failed, "%s", b->error.msg);
    }
    assert_close("ctx (train)", ctx[0], ctx[1], nctx);
    assert_close("weights", a[0], a[1], na);
    assert_close("dq", dq[0], dq[1], nq);
    assert_close("dk", dk[0], dk[1], nk);
    assert_close("dw_acc", dw[0], dw[1], nw);
    assert_close("projected keys", pk[0], pk[1], npk);
    assert_same("ctx (projected)", ctx2[0], ctx[0], nctx);
    assert_same("weights (projected)", a2[0], a[0], na);
    const int32_t *l = c->lengths ? len[0] : NULL;
    float *ctx3 = nans(gpu, nctx);
    pb_cuda_attn_fwd_projected(gpu, d, q[0], k[0], pk[0], l, w[0], ctx3, NULL);
    assert_same("ctx (projected, no weights)", ctx3, ctx[0], nctx);
    pb_cuda_attn_fwd(gpu, d, q[0], k[0], l, w[0], ctx3, NULL);
    assert_same("ctx (inference)", ctx3, ctx[0], nctx);
    for (int s = 0; s < B; s++)  /* keys past a length: weight 0, dk 0 */
        for (int j = l ? l[s] : d->tk; j < d->tk; j++) {
            for (int i = 0; i < d->tq; i++)
                ck_assert(a[0][((size_t)s * d->tq + i) * d->tk + j] == 0.0f);
            for (int f = 0; f < d->key; f++)
                ck_assert(dk[0][((size_t)s * d->tk + j) * d->key + f] == 0.0f);
        }
    ck_assert_msg(!gpu->failed, "%s", gpu->error.msg);
    /* the split backward on each: data then weights, twice as above, gives the fused
     * pass's bits of dq, dk and dw_acc, the weights pass reading only q, k and the keep */
    for (int e = 0; e < 2; e++) {
        const struct pb_backend_ops *o = be[e]->ops;
        const int32_t *le = c->lengths ? len[e] : NULL;
        float *dq2 = nans(be[e], nq), *dk2 = nans(be[e], nk), *dw2 = rnd(be[e], nw, 15, -1, 1);
        void *keep = nans(be[e], o->attn_bwd_keep(be[e], d) / sizeof(float));
        o->attn_bwd_data(be[e], d, k[e], le, w[e], ws[e], dctx[e], dq2, dk2, keep);
        o->attn_bwd_weights(be[e], d, q[e], k[e], keep, dw2);
        o->attn_bwd_data(be[e], d, k[e], le, w[e], ws[e], dctx[e], NULL, NULL, keep);
        o->attn_bwd_weights(be[e], d, q[e], k[e], keep, dw2);
        ck_assert_msg(!be[e]->failed, "%s", be[e]->error.msg);
        assert_same(e ? "dq (cpu, data pass)" : "dq (data pass)", dq2, dq[e], nq);
        assert_same(e ? "dk (cpu, data pass)" : "dk (data pass)", dk2, dk[e], nk);
        assert_same(e ? "dw_acc (cpu, weights pass)" : "dw_acc (weights pass)", dw2, dw[e], nw);
    }
    release(gpu, cpu);
}
END_TEST

/* A backward on other weights than its forward's (semantics §1.3: PipeMare's B(j) reads the
 * latest weights, not F(j)'s): the backward's v̂ is its own w's, as on the CPU. */
START_TEST(test_attention_other_weights)
{
    const struct attn_case *c = &attn_cases[_i];
    const struct pb_attn_desc *d = &c->d;
    struct pb_backend *gpu = emu_new(), *cpu = cpu_new();
    struct pb_backend *be[2] = {gpu, cpu};
    int B = d->batch;
    size_t nq = (size_t)B * d->tq * d->query, nk = (size_t)B * d->tk * d->key;
    size_t nctx = (size_t)B * d->tq * d->key, nw = (size_t)d->units * (2 + d->query + d->key) + 1;
    float *dq[2], *dk[2], *dw[2];
    for (int e = 0; e < 2; e++) {
        struct pb_backend *b = be[e];
        float *q = rnd(b, nq, 11, -1, 1), *k = rnd(b, nk, 12, -1, 1);
        float *w_fwd = rnd(b, nw, 13, -1, 1), *w_bwd = rnd(b, nw, 16, -1, 1);
        float *dctx = rnd(b, nctx, 14, -1, 1), *ctx = nans(b, nctx);
        dw[e] = rnd(b, nw, 15, -1, 1), dq[e] = nans(b, nq), dk[e] = nans(b, nk);
        int32_t *len = (int32_t *)buf(b, (size_t)B);
        for (int s = 0; s < B; s++)
            len[s] = s == 0 ? d->tk : 1 + (s * 5 + 1) % d->tk;
        const int32_t *l = c->lengths ? len : NULL;
        if (e == 0) {
            void *ws = buf(gpu, pb_cuda_attn_workspace(gpu, d) / sizeof(float));
            pb_cuda_attn_fwd(gpu, d, q, k, l, w_fwd, ctx, ws);
            pb_cuda_attn_bwd(gpu, d, q, k, l, w_bwd, ws, dctx, dq[0], dk[0], dw[0]);
        } else {
            const struct pb_backend_ops *o = cpu->ops;
            void *ws = buf(cpu, o->attn_workspace(cpu, d) / sizeof(float));
            o->attn_fwd(cpu, d, q, k, l, w_fwd, ctx, ws);
            o->attn_bwd(cpu, d, q, k, l, w_bwd, ws, dctx, dq[1], dk[1], dw[1]);
        }
        ck_assert_msg(!b->failed, "%s", b->error.msg);
    }
    assert_close("dq (other weights)", dq[0], dq[1], nq);
    assert_close("dk (other weights)", dk[0], dk[1], nk);
    assert_close("dw_acc (other weights)", dw[0], dw[1], nw);
    release(gpu, cpu);
}
END_TEST

/* A length outside [1, tk] fails the instance with the CPU backend's message in each op
 * that reads lengths (attn_fwd, attn_fwd_projected, attn_bwd_data; the emulated lengths
 * kernel reports at once what the sync reports on a device), and the op frees its scratch. */
START_TEST(test_attention_bad_length)
{
    static const int32_t bad[] = {6, 0, -3};  /* source 1's, against tk 5 */
    const struct pb_attn_desc d = {2, 3, 5, 4, 6, 7};
    size_t nq = 2 * 3 * 4, nk = 2 * 5 * 6, nctx = 2 * 3 * 6, nw = 7 * (2 + 4 + 6) + 1;
    struct pb_backend *gpu = emu_new(), *cpu = cpu_new();
    struct pb_backend *be[2] = {gpu, cpu};
    for (int e = 0; e < 2; e++) {
        struct pb_backend *b = be[e];
        const struct pb_backend_ops *o = b->ops;
        float *q = rnd(b, nq, 11, -1, 1), *k = rnd(b, nk, 12, -1, 1), *w = rnd(b, nw, 13, -1, 1);
        float *ctx = nans(b, nctx), *dq = nans(b, nq), *dk = nans(b, nk), *pk = nans(b, 2 * 5 * 7);
        void *ws = buf(b, o->attn_workspace(b, &d) / sizeof(float));
        void *keep = buf(b, o->attn_bwd_keep(b, &d) / sizeof(float));
        int32_t *len = (int32_t *)buf(b, 2);
        len[0] = 5, len[1] = 2;
        o->attn_fwd(b, &d, q, k, len, w, ctx, ws);  /* the backward's ws */
        ck_assert_msg(!b->failed, "%s", b->error.msg);
        len[1] = bad[_i];
        if (_i == 0)
            o->attn_fwd(b, &d, q, k, len, w, ctx, NULL);
        else if (_i == 1)
            o->attn_fwd_projected(b, &d, q, k, pk, len, w, ctx, NULL);
        else
            o->attn_bwd_data(b, &d, k, len, w, ws, ctx, dq, dk, keep);
        ck_assert_msg(b->failed, "%s: a length of %d passed", o->name, bad[_i]);
    }
    ck_assert_str_eq(gpu->error.msg, cpu->error.msg);
    for (int i = 0; i < ntracked; i++)
        pb_backend_free(tracked[i].be, tracked[i].p);
    ntracked = 0;
    for (int m = 0; m < PB_MEM_NKINDS; m++)  /* the failed op freed its scratch */
        ck_assert_uint_eq(gpu->mem_cur[m], 0);
    pb_backend_finish_common(gpu);
    free(gpu);
    pb_backend_destroy(cpu);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("cuda_rnn_host");
    TCase *tc = tcase_create("ops");
    tcase_add_loop_test(tc, test_lstm, 0, sizeof lstm_cases / sizeof lstm_cases[0]);
    tcase_add_loop_test(tc, test_attention, 0, sizeof attn_cases / sizeof attn_cases[0]);
    tcase_add_loop_test(tc, test_attention_other_weights, 0,
                        sizeof attn_cases / sizeof attn_cases[0]);
    tcase_add_loop_test(tc, test_attention_bad_length, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}
