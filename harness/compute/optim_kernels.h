/* harness/compute/optim_kernels.h — the arguments of the backend's two optimizer kernels,
 * the torch.optim step (semantics §2) and the weight prediction Ŵ = W − lr·s·ΔW (§3), as
 * plain scalars and device pointers: a backend runs them without the optimizer object. */
#ifndef PB_OPTIM_KERNELS_H
#define PB_OPTIM_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

/* The optimizer family a step kernel runs (semantics §2). */
enum pb_optk_family { PB_OPTK_SGD, PB_OPTK_ADAM, PB_OPTK_ADAMW, PB_OPTK_RMSPROP, PB_OPTK_NADAM };

/* The scalars torch.optim (1.13, single-tensor; NAdam's of torch 2.x) derives from the
 * hyperparameters in
 * Python doubles and hands to its float32 kernels. Each float hyperparameter is first
 * widened to the double its shortest decimal denotes (0.9f -> 0.9), the value the
 * user typed and Python would hold, so 1 - beta1, lr / (1 - beta1^t), ... round to
 * the same floats as in torch. Bias corrections are those of step t (0 when t = 0).
 * Filled by pb_optim_coef_init (harness/optim/optim.h). */
struct pb_optim_coef {
    float neg_lr;           /* -lr */
    float wd;               /* λ */
    float mom;              /* SGD u, RMSprop μ */
    float one_minus_damp;   /* 1 - τ */
    float beta1, beta2;
    float one_minus_beta1, one_minus_beta2;
    float eps;
    float neg_step_size;    /* -lr / (1 - beta1^t) */
    float bc2_sqrt;         /* sqrt(1 - beta2^t) */
    float bc1;              /* 1 - beta1^t */
    float decay;            /* AdamW, NAdam: 1 - lr·λ */
    float alpha, one_minus_alpha;
    float bc2;              /* NAdam: 1 - beta2^t */
    float nadam_g;          /* NAdam: -lr·(1 - μ_t) / (1 - Π_t), Π_t = μ_1·…·μ_t */
    float nadam_m;          /* NAdam: -lr·μ_{t+1} / (1 - Π_t·μ_{t+1}) */
};

/* One optimizer step over n floats, W updated in place (semantics §2):
 * SGD: d = g + λW; with buf: buf = first ? d : u·buf + (1−τ)·d, step = nesterov ?
 *      d + u·buf : buf; without: step = d; W ← W − lr·step.
 * ADAM: d = g + λW; m, v updated; W ← W − lr/bc1 · m/(√v/√bc2 + ε).
 * ADAMW: W ← W·(1 − lr·λ), then ADAM with d = g.
 * RMSPROP: d = g + λW; sq = α·sq + (1−α)·d²; with buf: buf = μ·buf + d/(√sq + ε),
 *      W ← W − lr·buf; without: W ← W − lr·d/(√sq + ε).
 * NADAM (torch 2.x, decoupled decay): W ← W·(1 − lr·λ); m = lerp(m, g, 1−β1),
 *      v = β2·v + (1−β2)·g²; den = √(v/bc2) + ε; W ← W + nadam_g·g/den + nadam_m·m/den
 *      (d = g).
 * d_last and g_last, when not NULL, receive the step's d and its raw gradient g
 * (what the predictors read afterwards); with zero_grad, g ← 0 once read (the next
 * accumulation starts from zero). The arrays do not overlap. */
struct pb_optim_step_args {
    enum pb_optk_family family;
    struct pb_optim_coef c;  /* the scalars of this step */
    bool first;              /* the first step (t = 1): SGD's buffer starts as d */
    bool nesterov;           /* SGD */
    bool zero_grad;          /* g ← 0 after the step read it */
    size_t n;
    float *w;                /* [n] weights, updated in place */
    float *g;                /* [n] gradient (zeroed with zero_grad, else only read) */
    float *buf;              /* [n] momentum buffer (SGD u > 0, RMSprop μ > 0) or NULL */
    float *m, *v;            /* [n] Adam/AdamW/NAdam moments (NULL for the others) */
    float *sq;               /* [n] RMSprop square average (NULL for the others) */
    float *d_last;           /* [n] copy of d, or NULL */
    float *g_last;           /* [n] copy of the raw g, or NULL */
};

/* Which formula ΔW is (the predictors choose it per optimizer and form, semantics §3.2). */
enum pb_dw_kind {
    PB_DW_ZERO,    /* ΔW = 0: Ŵ = W (no step yet, s = 0, or a momentum form without buffer) */
    PB_DW_LINEAR,  /* ΔW = a·x + b·y, or a·x when y is NULL */
    PB_DW_ADAM,    /* ΔW = (m / bc1) / (√v / bc2_sqrt + eps) */
    PB_DW_RMS,     /* ΔW = x / (√sq + eps) */
};

struct pb_dw_desc {
    enum pb_dw_kind kind;
    const float *x, *y;  /* [n] LINEAR's terms (y may be NULL); RMS's numerator x */
    float a, b;          /* LINEAR's coefficients */
    const float *m, *v;  /* [n] ADAM's moments */
    const float *sq;     /* [n] RMS's square average */
    float bc1, bc2_sqrt; /* ADAM: 1 − β1^t, √(1 − β2^t) */
    float eps;           /* ADAM, RMS */
};

/* w_hat[i] = fmaf(scale, ΔW_i, w[i]) over n floats; reads, never writes, the
 * pointers of dw. w_hat may equal w; it overlaps no array of dw, nor w otherwise. */
struct pb_predict_args {
    struct pb_dw_desc dw;
    float scale;         /* −lr·s */
    size_t n;
    const float *w;      /* [n] */
    float *w_hat;        /* [n] */
};

#endif
