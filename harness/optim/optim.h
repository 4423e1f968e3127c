/* harness/optim/optim.h — torch.optim-exact optimizers over one flat buffer (semantics §2;
 * NAdam as torch 2.x):
 * configurations, learning-rate schedules, the torch scalar derivation, and the state
 * the predictors read (semantics §3). State buffers live in the backend's memory
 * (PB_MEM_OPTSTATE); the math runs in the backend's optim_step op, from the plain
 * arguments (harness/compute/optim_kernels.h) pb_optim_step builds. */
#ifndef PB_OPTIM_H
#define PB_OPTIM_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/base/err.h"
#include "harness/compute/optim_kernels.h"

struct pb_backend;

enum pb_optim_kind {
    PB_OPT_SGD, PB_OPT_ADAM, PB_OPT_ADAMW, PB_OPT_RMSPROP, PB_OPT_NADAM, PB_OPT_NKINDS
};

#define PB_LR_MAX_STEPS 16

struct pb_optim_cfg {
    enum pb_optim_kind kind;
    float lr;
    float momentum;       /* SGD u, RMSprop μ */
    float dampening;      /* SGD τ */
    bool nesterov;        /* SGD */
    float weight_decay;   /* λ: L2 (SGD, Adam, RMSprop) or decoupled (AdamW, NAdam) */
    float beta1, beta2;   /* Adam, AdamW, NAdam */
    float eps;            /* Adam, AdamW, RMSprop, NAdam */
    float alpha;          /* RMSprop */
    float momentum_decay; /* NAdam ψ: μ_t = β1·(1 − ½·0.96^(t·ψ)) */
    /* PipeMare's rescheduling (semantics §4.11): step t (0-based) runs at the rate in force
     * divided by lr_delay^(1 − min((t+1)/lr_reschedule, 1)); lr_delay <= 1 or
     * lr_reschedule = 0: none. Set per stage by the run from its schedule. */
    int lr_delay;
    long lr_reschedule;
    /* multi-step schedule: lr × gamma at each listed epoch (0-based epoch index at
     * which the new rate starts); n_lr_steps = 0 is constant */
    int n_lr_steps;
    int lr_steps[PB_LR_MAX_STEPS];
    float lr_gamma;
    /* warm-up: the first lr_warmup epochs (0: none) run at lr × (e + 1) / lr_warmup; then
     * with lr_cosine the rate follows a half cosine from lr to 0 over the remaining
     * epochs of lr_epochs (torch's CosineAnnealingLR with T_max = lr_epochs − lr_warmup,
     * eta_min 0, stepped once per epoch); lr_cosine excludes lr_steps */
    int lr_warmup;
    bool lr_cosine;
    int lr_epochs;        /* the run's epochs (set by the plan) */
    /* clip_grad > 0: before each step a stage's gradient is scaled by
     * clip_grad / (‖g‖₂ + 1e-6) where that is below 1 (torch's clip_grad_norm_ over the
     * stage's parameters, the global norm of one stage; the worker applies it) */
    float clip_grad;
    /* keep copies of the last step's d = g + λW (SGD; RMSprop μ = 0) and of its raw
     * gradient g (RMSprop) for the prediction forms that read them
     * (pb_predictor_reads_d_last / _g_last); a run sets them from its schedule's
     * forms, so the others keep no extra copy */
    bool keep_d_last;
    bool keep_g_last;
};

/* Forms of ΔW (semantics §3.2–§3.4): the paper's; guanleics/PipeOptim's code (SGDM:
 * u·buf + (1−τ)·d_last; Adam/AdamW with ε = 1e-8; RMSprop g_last/(√sq + ε)); SpecTrain's
 * code backward (SGD: u·buf) and forward (SGD: u·buf + d_last). */
enum pb_predict_variant {
    PB_PREDICT_PAPER = 0,
    PB_PREDICT_CODE = 1,
    PB_PREDICT_MOMENTUM = 2,
    PB_PREDICT_SPECTRAIN = 3,
    PB_PREDICT_NFORMS
};

struct pb_optim {
    struct pb_optim_cfg cfg;
    size_t n;        /* floats in the buffer */
    long t;          /* steps taken (torch's step count after the last step) */
    float lr;        /* rate in force (the epoch's) */
    double lr_div;   /* the last step's PipeMare divisor of lr (1: none) */
    /* state, device memory, NULL when the optimizer does not keep it */
    float *buf;      /* SGD momentum buffer (u > 0); RMSprop momentum buffer (μ > 0) */
    float *m, *v;    /* Adam/AdamW/NAdam moments */
    float mu_product; /* NAdam: Π_t = μ_1·…·μ_t, a float32 product as torch keeps it (1 at t = 0) */
    float *sq;       /* RMSprop square average */
    float *d_last;   /* the last step's d = g + λW, when cfg.keep_d_last (SGD, RMSprop μ = 0) */
    float *g_last;   /* the last step's raw gradient g, when cfg.keep_g_last (RMSprop) */
};

/* Names: "sgd", "sgdm" (SGD with momentum 0.9 unless set), "adam", "adamw", "rmsprop",
 * "nadam" (torch 2.x NAdam with decoupled_weight_decay=True). */
const char *pb_optim_kind_name(enum pb_optim_kind k);
/* Defaults of torch.optim for a kind (lr 0.01 for SGD/RMSprop, 1e-3 for Adam/AdamW, 2e-3
 * and ψ = 4e-3 for NAdam). */
void pb_optim_cfg_defaults(struct pb_optim_cfg *c, enum pb_optim_kind k);
/* Parses a name into defaults; lists the valid names on error. */
int pb_optim_cfg_from_name(struct pb_optim_cfg *c, const char *name, struct pb_err *e);
/* Rejects impossible values (negative lr, momentum outside [0,1), ...). */
int pb_optim_cfg_check(const struct pb_optim_cfg *c, struct pb_err *e);

int pb_optim_init(struct pb_optim *o, struct pb_backend *be, const struct pb_optim_cfg *c,
                  size_t n, struct pb_err *e);
void pb_optim_finish(struct pb_optim *o, struct pb_backend *be);
/* Sets the learning rate in force for an epoch (multi-step schedule, warm-up, cosine). */
void pb_optim_set_epoch(struct pb_optim *o, int epoch);
/* PipeMare's divisor of the rate at step t (0-based: t steps taken before it), semantics
 * §4.11: lr_delay^(1 − min((t+1)/lr_reschedule, 1)), 1 without rescheduling. */
double pb_optim_lr_divisor(const struct pb_optim_cfg *c, long t);
/* Sets the step count to t (a resumed run's), with the state derived from it alone
 * (NAdam's Π_t). */
void pb_optim_set_steps(struct pb_optim *o, long t);
/* One step: t += 1, then W ← step(W, g) on be, and g ← 0 in the same pass (the
 * gradient is consumed: the next accumulation starts from zero). w, g [o->n], device
 * memory of be. */
void pb_optim_step(struct pb_optim *o, struct pb_backend *be, float *w, float *g);
/* The kernel arguments of that step (o->t already counts it), zero_grad false: g only read. */
void pb_optim_step_args_init(struct pb_optim_step_args *a, const struct pb_optim *o, float *w,
                             float *g);

/* Fills c from o's configuration, rate in force (o->lr) and step count (o->t). */
void pb_optim_coef_init(struct pb_optim_coef *c, const struct pb_optim *o);

#endif
