/* harness/compute/cuda/cuda_optim.cu — the optimizer step (semantics §2, NAdam §2.7) and the prediction
 * Ŵ = W − lr·s·ΔW (§3.1) over a flat buffer, one thread per element. References: cpu_optim.c,
 * cpu_predict.c; the math is kernels/optim.h and predict.h, the CPU's: the CPU's bits.
 * One kernel per family, its options read at run time (uniform over the grid: no divergence;
 * no loop per thread, so each fmaf appears once in the PTX, test_cuda_ptx.c). */
#include "harness/compute/cuda/cuda_kernels.cuh"
#include "harness/compute/kernels/optim.h"
#include "harness/compute/kernels/predict.h"

/* The options of a step, decided once on the host as the CPU's step functions do. */
struct step_opts {
    bool wd;        /* SGD, RMSprop, Adam: λ ≠ 0 (Adam's L2; AdamW decays instead) */
    bool buf;       /* a->buf: SGD u > 0, RMSprop μ > 0 */
    bool nesterov;  /* SGD, only with buf */
    bool adamw;
};

/* The step's d and raw g into d_last and g_last where kept, g zeroed with zero_grad. */
static __device__ __forceinline__ void step_tail(const struct pb_optim_step_args &a, size_t i,
                                                 float d, float g)
{
    if (a.d_last)
        a.d_last[i] = d;
    if (a.g_last)
        a.g_last[i] = g;
    if (a.zero_grad)
        a.g[i] = 0.0f;
}

/* w, g, buf, d_last, g_last [a.n]: SGD (semantics §2.1) */
static __global__ void sgd_kernel(struct pb_optim_step_args a, struct step_opts o)
{
    size_t i = pb_cu_index();
    if (i >= a.n)
        return;
    float w = a.w[i], g = a.g[i], b = o.buf ? a.buf[i] : 0.0f;
    float d = pb_k_sgd_step(&a.c, o.wd, o.buf, a.first, o.nesterov, &w, g, &b);
    a.w[i] = w;
    if (o.buf)
        a.buf[i] = b;
    step_tail(a, i, d, g);
}

/* w, g, m, v, d_last, g_last [a.n]: Adam and AdamW (semantics §2.2, §2.3) */
static __global__ void adam_kernel(struct pb_optim_step_args a, struct step_opts o)
{
    size_t i = pb_cu_index();
    if (i >= a.n)
        return;
    float w = a.w[i], g = a.g[i], m = a.m[i], v = a.v[i];
    float d = pb_k_adam_step(&a.c, o.adamw, o.wd, &w, g, &m, &v);
    a.w[i] = w;
    a.m[i] = m;
    a.v[i] = v;
    step_tail(a, i, d, g);
}

/* w, g, sq, buf, d_last, g_last [a.n]: RMSprop (semantics §2.4) */
static __global__ void rmsprop_kernel(struct pb_optim_step_args a, struct step_opts o)
{
    size_t i = pb_cu_index();
    if (i >= a.n)
        return;
    float w = a.w[i], g = a.g[i], sq = a.sq[i], b = o.buf ? a.buf[i] : 0.0f;
    float d = pb_k_rmsprop_step(&a.c, o.wd, o.buf, &w, g, &sq, &b);
    a.w[i] = w;
    a.sq[i] = sq;
    if (o.buf)
        a.buf[i] = b;
    step_tail(a, i, d, g);
}

/* w, g, m, v, d_last, g_last [a.n]: NAdam (semantics §2.7); o.wd: the decoupled decay */
static __global__ void nadam_kernel(struct pb_optim_step_args a, struct step_opts o)
{
    size_t i = pb_cu_index();
    if (i >= a.n)
        return;
    float w = a.w[i], g = a.g[i], m = a.m[i], v = a.v[i];
    float d = pb_k_nadam_step(&a.c, o.wd, &w, g, &m, &v);
    a.w[i] = w;
    a.m[i] = m;
    a.v[i] = v;
    step_tail(a, i, d, g);
}

/* w, w_hat and the arrays of a.dw [a.n]: ŵ = fmaf(scale, ΔW, w) for ΔW of kind LINEAR,
 * ADAM or RMS (ZERO is a copy, or nothing, on the host side) */
static __global__ void predict_kernel(struct pb_predict_args a)
{
    size_t i = pb_cu_index();
    if (i >= a.n)
        return;
    const struct pb_dw_desc &d = a.dw;
    float dw;
    if (d.kind == PB_DW_LINEAR)
        dw = d.y ? pb_k_dw_linear2(d.a, d.x[i], d.b, d.y[i]) : pb_k_dw_linear1(d.a, d.x[i]);
    else if (d.kind == PB_DW_ADAM)
        dw = pb_k_dw_adam(d.m[i], d.v[i], d.bc1, d.bc2_sqrt, d.eps);
    else
        dw = pb_k_dw_rms(d.x[i], d.sq[i], d.eps);
    a.w_hat[i] = pb_k_predict(a.scale, dw, a.w[i]);
}

void pb_cuda_optim_step(struct pb_backend *be, const struct pb_optim_step_args *a)
{
    struct step_opts o = {a->c.wd != 0.0f, a->buf != NULL, a->buf != NULL && a->nesterov,
                          a->family == PB_OPTK_ADAMW};
    switch (a->family) {
    case PB_OPTK_SGD:
        break;
    case PB_OPTK_RMSPROP:
        PB_CHECK(a->sq);
        break;
    case PB_OPTK_ADAM:
    case PB_OPTK_ADAMW:
        PB_CHECK(a->m && a->v);
        o.wd = !o.adamw && a->c.wd != 0.0f;  /* AdamW: decoupled decay instead of L2 */
        break;
    case PB_OPTK_NADAM:
        PB_CHECK(a->m && a->v);
        break;
    default:
        PB_CHECK(!"unknown optimizer family");
    }
    if (!pb_cuda_begin(be) || a->n == 0)
        return;
    cudaStream_t s = pb_cuda_of(be)->stream;
    unsigned blocks = pb_cu_blocks(a->n);
    if (a->family == PB_OPTK_SGD)
        sgd_kernel<<<blocks, PB_CU_BLOCK, 0, s>>>(*a, o);
    else if (a->family == PB_OPTK_RMSPROP)
        rmsprop_kernel<<<blocks, PB_CU_BLOCK, 0, s>>>(*a, o);
    else if (a->family == PB_OPTK_NADAM)
        nadam_kernel<<<blocks, PB_CU_BLOCK, 0, s>>>(*a, o);
    else
        adam_kernel<<<blocks, PB_CU_BLOCK, 0, s>>>(*a, o);
    PB_CUDA(be, cudaGetLastError());
}

void pb_cuda_predict(struct pb_backend *be, const struct pb_predict_args *a)
{
    pb_predict_args_check(a);
    const struct pb_dw_desc *d = &a->dw;
    if (!pb_cuda_begin(be) || a->n == 0)
        return;
    struct pb_cuda *cu = pb_cuda_of(be);
    if (d->kind == PB_DW_ZERO) {
        /* Ŵ = W: a copy unless in place (w_hat does not overlap w otherwise) */
        if (a->w_hat != a->w)
            PB_CUDA(be, cudaMemcpyAsync(a->w_hat, a->w, a->n * sizeof *a->w,
                                        cudaMemcpyDeviceToDevice, cu->stream));
        return;
    }
    predict_kernel<<<pb_cu_blocks(a->n), PB_CU_BLOCK, 0, cu->stream>>>(*a);
    PB_CUDA(be, cudaGetLastError());
}
