/* harness/compute/cpu/cpu_optim.c — the optimizer step and the weight prediction (SPEC §2, §3)
 * over a stage's flat buffer: optim.h's plain C references on the instance's threads,
 * in chunks (elementwise, so the bits never depend on the thread count). */
#include "harness/compute/cpu/cpu_internal.h"
#include "harness/optim/optim.h"

/* w, g [o->n] */
void pb_cpu_optim_step(struct pb_backend *be, struct pb_optim *o, float *w, const float *g)
{
    pb_cpu_begin(be);
    size_t n = o->n, nch = (n + PB_CPU_CHUNK - 1) / PB_CPU_CHUNK;
#pragma omp parallel for num_threads(be->nthreads) schedule(static)
    for (size_t ch = 0; ch < nch; ch++) {
        size_t lo = ch * PB_CPU_CHUNK, hi = lo + PB_CPU_CHUNK < n ? lo + PB_CPU_CHUNK : n;
        pb_optim_step_ref(o, w, g, lo, hi);
    }
}

/* w, w_hat [o->n]: w_hat = w - lr * s * ΔW */
void pb_cpu_predict(struct pb_backend *be, const struct pb_optim *o, int variant, float s,
                    const float *w, float *w_hat)
{
    pb_cpu_begin(be);
    size_t n = o->n, nch = (n + PB_CPU_CHUNK - 1) / PB_CPU_CHUNK;
#pragma omp parallel for num_threads(be->nthreads) schedule(static)
    for (size_t ch = 0; ch < nch; ch++) {
        size_t lo = ch * PB_CPU_CHUNK, hi = lo + PB_CPU_CHUNK < n ? lo + PB_CPU_CHUNK : n;
        pb_predict_ref(o, variant, s, w, w_hat, lo, hi);
    }
}
