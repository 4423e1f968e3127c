/* harness/compute/cpu/cpu_panels.c — the product of a few rows by a matrix used many
 * times over: C[m × n] = A[m × k]·op(B)[k × n] (+ C) for m ≤ PB_CPU_PANEL_ROWS_MAX, with B
 * packed once into panels of eight columns, then streamed from memory at every product.
 *
 * Why: an LSTM's recurrent product at a small batch (a pipeline's micro-batch: B = 8 rows
 * against W_hh [4096 × 1024] at GNMT's width) is bound by reading W_hh. oneDNN's sgemm
 * packs B at every call, so each step reads W_hh twice and writes it once. On an AVX2
 * machine (Zen 3, one thread) that product took 2.0–3.0 ms a step in oneDNN tiles and
 * takes 1.3–1.55 ms over panels packed once per call (about 50 GFLOP/s; the packing,
 * once, about 2.3 ms); at 32 rows the two are even (4.6 ms), at 64 oneDNN's forward
 * product is the faster (7.5 against 9.0 ms).
 *
 * Layout: panel p holds columns [8p, 8p + 8) of op(B) as k rows of eight floats, the
 * columns past n zero: panels [⌈n/8⌉][k][8].
 * Arithmetic: each element of C is one chain of fused multiply-adds over l = 0 … k − 1 in
 * order, started from zero, then added to C (beta 1) or stored (beta 0); the bits depend
 * on the shape only, never on the thread count or on which rows share a kernel call. */
#include "harness/compute/cpu/cpu_internal.h"

#include <math.h>

enum { PANEL = 8 };

/* The panels pay where the machine has AVX2 and FMA (the kernel below); elsewhere the
 * portable kernel gives the same bits, slower than oneDNN. */
bool pb_cpu_panels_usable(int m)
{
#if defined(__AVX2__) && defined(__FMA__)
    return m >= 1 && m <= PB_CPU_PANEL_ROWS_MAX;
#else
    (void)m;
    return false;
#endif
}

size_t pb_cpu_panels_floats(int k, int n)
{
    return (size_t)((n + PANEL - 1) / PANEL) * PANEL * (size_t)k;
}

/* Inside a parallel region: panels of op(B) [k × n] (B [n × k] when trans_b, else
 * [k × n]; ldb its row stride) shared out among the team's threads by panel. */
void pb_cpu_pack_panels_in_team(const float *b, int ldb, bool trans_b, int k, int n,
                                float *panels)
{
    int np = (n + PANEL - 1) / PANEL;
#pragma omp for schedule(static)
    for (int p = 0; p < np; p++) {
        float *dst = panels + (size_t)p * k * PANEL;
        int j0 = p * PANEL, cols = n - j0 < PANEL ? n - j0 : PANEL;
        for (int l = 0; l < k; l++) {
            for (int j = 0; j < cols; j++)
                dst[(size_t)l * PANEL + j] =
                    trans_b ? b[(size_t)(j0 + j) * ldb + l] : b[(size_t)l * ldb + j0 + j];
            for (int j = cols; j < PANEL; j++)
                dst[(size_t)l * PANEL + j] = 0.0f;
        }
    }
}

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

/* rows (a constant once inlined) of A against one panel: c[rows × cols] (+)= the chains */
static inline __attribute__((always_inline)) void panel_kernel(int rows, int k, const float *a,
                                                               int lda, const float *panel,
                                                               bool beta, float *c, int ldc,
                                                               int cols)
{
    __m256 acc[8];
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++)
        acc[r] = _mm256_setzero_ps();
    for (int l = 0; l < k; l++) {
        __m256 bv = _mm256_loadu_ps(panel + (size_t)l * PANEL);
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++)
            acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + (size_t)r * lda + l), bv, acc[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++) {
        float out[PANEL];
        _mm256_storeu_ps(out, acc[r]);
        float *cr = c + (size_t)r * ldc;
        for (int j = 0; j < cols; j++)
            cr[j] = beta ? cr[j] + out[j] : out[j];
    }
}

#else
static inline void panel_kernel(int rows, int k, const float *a, int lda, const float *panel,
                                bool beta, float *c, int ldc, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) {
            float acc = 0.0f;
            for (int l = 0; l < k; l++)
                acc = fmaf(a[(size_t)r * lda + l], panel[(size_t)l * PANEL + j], acc);
            float *cj = c + (size_t)r * ldc + j;
            *cj = beta ? *cj + acc : acc;
        }
}
#endif

/* Inside a parallel region: C[m × n] = A[m × k]·panels (+ C where beta), panels shared out
 * among the team's threads; m ≤ PB_CPU_PANEL_ROWS_MAX, in kernels of up to 8 rows. */
void pb_cpu_gemm_panels_in_team(int m, int n, int k, const float *a, int lda,
                                const float *panels, bool beta, float *c, int ldc)
{
    int np = (n + PANEL - 1) / PANEL;
#pragma omp for schedule(static)
    for (int p = 0; p < np; p++) {
        const float *panel = panels + (size_t)p * k * PANEL;
        int j0 = p * PANEL, cols = n - j0 < PANEL ? n - j0 : PANEL;
        for (int r0 = 0; r0 < m; r0 += 8) {
            const float *ar = a + (size_t)r0 * lda;
            float *cr = c + (size_t)r0 * ldc + j0;
            switch (m - r0 < 8 ? m - r0 : 8) {
            case 8: panel_kernel(8, k, ar, lda, panel, beta, cr, ldc, cols); break;
            case 7: panel_kernel(7, k, ar, lda, panel, beta, cr, ldc, cols); break;
            case 6: panel_kernel(6, k, ar, lda, panel, beta, cr, ldc, cols); break;
            case 5: panel_kernel(5, k, ar, lda, panel, beta, cr, ldc, cols); break;
            case 4: panel_kernel(4, k, ar, lda, panel, beta, cr, ldc, cols); break;
            case 3: panel_kernel(3, k, ar, lda, panel, beta, cr, ldc, cols); break;
            case 2: panel_kernel(2, k, ar, lda, panel, beta, cr, ldc, cols); break;
            default: panel_kernel(1, k, ar, lda, panel, beta, cr, ldc, cols); break;
            }
        }
    }
}
