/* harness/compute/cpu/cpu_optim.c — the optimizer step kernel (semantics §2) of the CPU backend
 * over a stage's flat buffer, each element by harness/compute/kernels/optim.h (torch 1.13's
 * single-tensor op order; NAdam's torch 2.x's), fused with the zeroing of the gradient: one vectorised loop per
 * optimizer and option set, on the instance's threads in chunks (elementwise, so the bits
 * never depend on the thread count). */
#include "harness/compute/cpu/cpu_internal.h"
#include "harness/compute/kernels/optim.h"

/* Each loop below runs over elements [lo, hi) of the arrays of a step's arguments a
 * ([a->n] each, none overlapping another, hence restrict; those an option set does not
 * use may be NULL), with a copy of the scalars that no store can alias.
 *
 * Each family has one loop (a static inline function) whose options are bool
 * arguments; the step functions call it with constant options for every option set of
 * the steps after the first one (g zeroed, the copies the optimizer keeps), so that
 * each gets a loop of its own, without tests and vectorised, and with the options
 * read at run time for the rest (the first step, no zeroing, copies it never keeps).
 * Both compute each element with the same operations in the same order: the bits do
 * not depend on which one ran. */

/* SGD (semantics §2.1); wd: λ ≠ 0, buf: a->buf (u > 0), nesterov only with buf, dl, gl:
 * d_last, g_last kept, zero: g ← 0. */
static inline void sgd_loop(const struct pb_optim_coef *c, size_t lo, size_t hi,
                            float *restrict w, float *restrict g, float *restrict b,
                            float *restrict d_last, float *restrict g_last, bool wd, bool buf,
                            bool first, bool nesterov, bool dl, bool gl, bool zero)
{
    const struct pb_optim_coef k = *c;
    for (size_t i = lo; i < hi; i++) {
        float gi = g[i];
        float wi = w[i], bi = buf ? b[i] : 0.0f;
        float d = pb_k_sgd_step(&k, wd, buf, first, nesterov, &wi, gi, &bi);
        w[i] = wi;
        if (buf)
            b[i] = bi;
        if (dl)
            d_last[i] = d;
        if (gl)
            g_last[i] = gi;
        if (zero)
            g[i] = 0.0f;
    }
}

static void step_sgd(const struct pb_optim_step_args *a, size_t lo, size_t hi)
{
    bool wd = a->c.wd != 0.0f, buf = a->buf != NULL, nesterov = buf && a->nesterov;
    bool dl = a->d_last != NULL, gl = a->g_last != NULL;
    if (!a->first && !gl && a->zero_grad) {
#define PB_SGD(wd_, buf_, nesterov_, dl_)                                              \
    case (wd_) | (buf_) << 1 | (nesterov_) << 2 | (dl_) << 3:                          \
        sgd_loop(&a->c, lo, hi, a->w, a->g, a->buf, a->d_last, a->g_last, wd_, buf_,   \
                 false, nesterov_, dl_, false, true);                                  \
        return;
        switch (wd | buf << 1 | nesterov << 2 | dl << 3) {
            PB_SGD(0, 0, 0, 0) PB_SGD(1, 0, 0, 0) PB_SGD(0, 0, 0, 1) PB_SGD(1, 0, 0, 1)
            PB_SGD(0, 1, 0, 0) PB_SGD(1, 1, 0, 0) PB_SGD(0, 1, 0, 1) PB_SGD(1, 1, 0, 1)
            PB_SGD(0, 1, 1, 0) PB_SGD(1, 1, 1, 0) PB_SGD(0, 1, 1, 1) PB_SGD(1, 1, 1, 1)
        }
#undef PB_SGD
    }
    sgd_loop(&a->c, lo, hi, a->w, a->g, a->buf, a->d_last, a->g_last, wd, buf, a->first,
             nesterov, dl, gl, a->zero_grad);
}

/* Adam and AdamW (semantics §2.2, §2.3); adamw: decoupled decay, l2: Adam's λ ≠ 0, dl, gl, zero as
 * for SGD. */
static inline void adam_loop(const struct pb_optim_coef *c, size_t lo, size_t hi,
                             float *restrict w, float *restrict g, float *restrict m,
                             float *restrict v, float *restrict d_last, float *restrict g_last,
                             bool adamw, bool l2, bool dl, bool gl, bool zero)
{
    const struct pb_optim_coef k = *c;
    for (size_t i = lo; i < hi; i++) {
        float gi = g[i];
        float wi = w[i], mi = m[i], vi = v[i];
        float d = pb_k_adam_step(&k, adamw, l2, &wi, gi, &mi, &vi);
        w[i] = wi;
        m[i] = mi;
        v[i] = vi;
        if (dl)
            d_last[i] = d;
        if (gl)
            g_last[i] = gi;
        if (zero)
            g[i] = 0.0f;
    }
}

static void step_adam(const struct pb_optim_step_args *a, size_t lo, size_t hi)
{
    bool adamw = a->family == PB_OPTK_ADAMW;
    bool l2 = !adamw && a->c.wd != 0.0f;  /* AdamW: decoupled decay instead of L2 */
    bool dl = a->d_last != NULL, gl = a->g_last != NULL;
#define PB_ADAM(adamw_, l2_, dl_, gl_, zero_)                                          \
    adam_loop(&a->c, lo, hi, a->w, a->g, a->m, a->v, a->d_last, a->g_last, adamw_,     \
              l2_, dl_, gl_, zero_)
    if (!dl && !gl && a->zero_grad) {
        if (adamw)
            PB_ADAM(true, false, false, false, true);
        else if (l2)
            PB_ADAM(false, true, false, false, true);
        else
            PB_ADAM(false, false, false, false, true);
    } else {
        PB_ADAM(adamw, l2, dl, gl, a->zero_grad);
    }
#undef PB_ADAM
}

/* RMSprop (semantics §2.4); wd: λ ≠ 0, buf: a->buf (μ > 0), dl, gl, zero as for SGD. */
static inline void rmsprop_loop(const struct pb_optim_coef *c, size_t lo, size_t hi,
                                float *restrict w, float *restrict g, float *restrict sq,
                                float *restrict b, float *restrict d_last,
                                float *restrict g_last, bool wd, bool buf, bool dl, bool gl,
                                bool zero)
{
    const struct pb_optim_coef k = *c;
    for (size_t i = lo; i < hi; i++) {
        float gi = g[i];
        float wi = w[i], si = sq[i], bi = buf ? b[i] : 0.0f;
        float d = pb_k_rmsprop_step(&k, wd, buf, &wi, gi, &si, &bi);
        w[i] = wi;
        sq[i] = si;
        if (buf)
            b[i] = bi;
        if (dl)
            d_last[i] = d;
        if (gl)
            g_last[i] = gi;
        if (zero)
            g[i] = 0.0f;
    }
}

static void step_rmsprop(const struct pb_optim_step_args *a, size_t lo, size_t hi)
{
    bool wd = a->c.wd != 0.0f, buf = a->buf != NULL;
    bool dl = a->d_last != NULL, gl = a->g_last != NULL;
    if (a->zero_grad) {
#define PB_RMS(wd_, buf_, dl_, gl_)                                                    \
    case (wd_) | (buf_) << 1 | (dl_) << 2 | (gl_) << 3:                                \
        rmsprop_loop(&a->c, lo, hi, a->w, a->g, a->sq, a->buf, a->d_last, a->g_last,   \
                     wd_, buf_, dl_, gl_, true);                                       \
        return;
        switch (wd | buf << 1 | dl << 2 | gl << 3) {
            PB_RMS(0, 0, 0, 0) PB_RMS(1, 0, 0, 0) PB_RMS(0, 0, 1, 0) PB_RMS(1, 0, 1, 0)
            PB_RMS(0, 0, 0, 1) PB_RMS(1, 0, 0, 1) PB_RMS(0, 0, 1, 1) PB_RMS(1, 0, 1, 1)
            PB_RMS(0, 1, 0, 0) PB_RMS(1, 1, 0, 0) PB_RMS(0, 1, 0, 1) PB_RMS(1, 1, 0, 1)
        }
#undef PB_RMS
    }
    rmsprop_loop(&a->c, lo, hi, a->w, a->g, a->sq, a->buf, a->d_last, a->g_last, wd, buf, dl,
                 gl, a->zero_grad);
}

/* NAdam (semantics §2.7); decay: λ ≠ 0 (decoupled), dl, gl, zero as for SGD. */
static inline void nadam_loop(const struct pb_optim_coef *c, size_t lo, size_t hi,
                              float *restrict w, float *restrict g, float *restrict m,
                              float *restrict v, float *restrict d_last, float *restrict g_last,
                              bool decay, bool dl, bool gl, bool zero)
{
    const struct pb_optim_coef k = *c;
    for (size_t i = lo; i < hi; i++) {
        float gi = g[i];
        float wi = w[i], mi = m[i], vi = v[i];
        float d = pb_k_nadam_step(&k, decay, &wi, gi, &mi, &vi);
        w[i] = wi;
        m[i] = mi;
        v[i] = vi;
        if (dl)
            d_last[i] = d;
        if (gl)
            g_last[i] = gi;
        if (zero)
            g[i] = 0.0f;
    }
}

static void step_nadam(const struct pb_optim_step_args *a, size_t lo, size_t hi)
{
    bool decay = a->c.wd != 0.0f, dl = a->d_last != NULL, gl = a->g_last != NULL;
#define PB_NADAM(decay_, dl_, gl_, zero_)                                              \
    nadam_loop(&a->c, lo, hi, a->w, a->g, a->m, a->v, a->d_last, a->g_last, decay_,    \
               dl_, gl_, zero_)
    if (!dl && !gl && a->zero_grad) {
        if (decay)
            PB_NADAM(true, false, false, true);
        else
            PB_NADAM(false, false, false, true);
    } else {
        PB_NADAM(decay, dl, gl, a->zero_grad);
    }
#undef PB_NADAM
}

void pb_cpu_optim_step(struct pb_backend *be, const struct pb_optim_step_args *a)
{
    void (*step)(const struct pb_optim_step_args *a, size_t lo, size_t hi) = NULL;
    switch (a->family) {
    case PB_OPTK_SGD:
        step = step_sgd;
        break;
    case PB_OPTK_ADAM:
    case PB_OPTK_ADAMW:
        PB_CHECK(a->m && a->v);
        step = step_adam;
        break;
    case PB_OPTK_RMSPROP:
        PB_CHECK(a->sq);
        step = step_rmsprop;
        break;
    case PB_OPTK_NADAM:
        PB_CHECK(a->m && a->v);
        step = step_nadam;
        break;
    }
    PB_CHECK(step != NULL);
    if (!pb_cpu_begin(be))
        return;
    PB_CPU_CHUNKED(be, a->n, lo, hi, step(a, lo, hi));
}
