/* harness/optim/optim.h — torch.optim-exact optimizers over one flat buffer (SPEC §2),
 * learning-rate schedules, and the state the predictors read (SPEC §3).
 * State buffers live in the backend's memory (PB_MEM_OPTSTATE); the math runs in
 * the backend's optim_step/predict ops, whose CPU versions are the plain C
 * reference in optim.c and predictors/. */
#ifndef PB_OPTIM_H
#define PB_OPTIM_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/base/err.h"

struct pb_backend;

enum pb_optim_kind { PB_OPT_SGD, PB_OPT_ADAM, PB_OPT_ADAMW, PB_OPT_RMSPROP, PB_OPT_NKINDS };

#define PB_LR_MAX_STEPS 16

struct pb_optim_cfg {
    enum pb_optim_kind kind;
    float lr;
    float momentum;       /* SGD u, RMSprop μ */
    float dampening;      /* SGD τ */
    bool nesterov;        /* SGD */
    float weight_decay;   /* λ: L2 (SGD, Adam, RMSprop) or decoupled (AdamW) */
    float beta1, beta2;   /* Adam, AdamW */
    float eps;            /* Adam, AdamW, RMSprop */
    float alpha;          /* RMSprop */
    /* multi-step schedule: lr × gamma at each listed epoch (0-based epoch index at
     * which the new rate starts); n_lr_steps = 0 is constant */
    int n_lr_steps;
    int lr_steps[PB_LR_MAX_STEPS];
    float lr_gamma;
    /* keep the last step's d for the predictors that read it (SGD, RMSprop μ = 0);
     * a run sets it when its schedule predicts, so the others keep no extra copy */
    bool keep_d_last;
};

/* Forms of ΔW (SPEC §3, §4.3): the paper's; guanleics/PipeOptim's code (SGDM:
 * u·buf + (1−τ)·d_last; others as the paper); SpecTrain's code backward (u·buf). */
enum pb_predict_variant { PB_PREDICT_PAPER = 0, PB_PREDICT_CODE = 1, PB_PREDICT_MOMENTUM = 2 };

struct pb_optim {
    struct pb_optim_cfg cfg;
    size_t n;        /* floats in the buffer */
    long t;          /* steps taken (torch's step count after the last step) */
    float lr;        /* rate in force */
    /* state, device memory, NULL when the optimizer does not keep it */
    float *buf;      /* SGD momentum buffer (u > 0); RMSprop momentum buffer (μ > 0) */
    float *m, *v;    /* Adam/AdamW moments */
    float *sq;       /* RMSprop square average */
    float *d_last;   /* the last step's d = g + λW (SGD u = 0, RMSprop, SGDM code variant) */
};

/* Names: "sgd", "sgdm" (SGD with momentum 0.9 unless set), "adam", "adamw", "rmsprop". */
const char *pb_optim_kind_name(enum pb_optim_kind k);
/* Defaults of torch.optim for a kind (lr 0.01 for SGD/RMSprop, 1e-3 for Adam/AdamW). */
void pb_optim_cfg_defaults(struct pb_optim_cfg *c, enum pb_optim_kind k);
/* Parses a name into defaults; lists the valid names on error. */
int pb_optim_cfg_from_name(struct pb_optim_cfg *c, const char *name, struct pb_err *e);
/* Rejects impossible values (negative lr, momentum outside [0,1), ...). */
int pb_optim_cfg_check(const struct pb_optim_cfg *c, struct pb_err *e);

int pb_optim_init(struct pb_optim *o, struct pb_backend *be, const struct pb_optim_cfg *c,
                  size_t n, struct pb_err *e);
void pb_optim_finish(struct pb_optim *o, struct pb_backend *be);
/* Sets the learning rate in force for an epoch (multi-step schedule). */
void pb_optim_set_epoch(struct pb_optim *o, int epoch);
/* One step: W ← step(W, g); t += 1. */
void pb_optim_step(struct pb_optim *o, struct pb_backend *be, float *w, const float *g);

/* Plain C reference of the step and of the prediction, over host memory, for the
 * CPU backend: elements [lo, hi) (the caller splits the range among threads). */
void pb_optim_step_ref(const struct pb_optim *o, float *w, const float *g, size_t lo, size_t hi);
void pb_predict_ref(const struct pb_optim *o, int variant, float s, const float *w, float *w_hat,
                    size_t lo, size_t hi);

#endif
