/* predictors/predictor.h — what the optimizer reference (harness/optim/optim.c) and the
 * weight predictors (SPEC §3, PipeOptim Table I) share: the per-step scalars of a
 * torch.optim step, and ΔW per optimizer family over elements [lo, hi). */
#ifndef PB_PREDICTOR_H
#define PB_PREDICTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/optim/optim.h"

/* The scalars torch.optim (1.13, single-tensor) derives from the hyperparameters in
 * Python doubles and hands to its float32 kernels. Each float hyperparameter is first
 * widened to the double its shortest decimal denotes (0.9f -> 0.9), the value the
 * user typed and Python would hold, so 1 - beta1, lr / (1 - beta1^t), ... round to
 * the same floats as in torch. Bias corrections are those of step o->t (0 when t = 0). */
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
    float decay;            /* AdamW: 1 - lr·λ */
    float alpha, one_minus_alpha;
};

/* Fills c from o's configuration, rate in force (o->lr) and step count (o->t);
 * harness/optim/optim.c. */
void pb_optim_coef_init(struct pb_optim_coef *c, const struct pb_optim *o);

/* dw[i - lo] = ΔW_i for i in [lo, hi), in the given form (enum pb_predict_variant),
 * from o's state after step o->t >= 1. Read the state, never write it. */
void pb_delta_sgd(const struct pb_optim *o, const struct pb_optim_coef *c, int variant,
                  float *dw, size_t lo, size_t hi);      /* predictors/sgd.c */
void pb_delta_adam(const struct pb_optim *o, const struct pb_optim_coef *c, int variant,
                   float *dw, size_t lo, size_t hi);     /* predictors/adam.c (Adam, AdamW) */
void pb_delta_rmsprop(const struct pb_optim *o, const struct pb_optim_coef *c, int variant,
                      float *dw, size_t lo, size_t hi);  /* predictors/rmsprop.c */

/* Whether form v is defined for optimizer k with configuration c (predictors/predict.c).
 * PAPER and CODE are defined for every optimizer (CODE equals PAPER except for SGD with
 * momentum; for plain SGD there is no buffer to look ahead and torch ignores τ, so CODE
 * is d_last as in the paper). MOMENTUM (ΔW = u·buf, SpecTrain's backward) needs a
 * momentum buffer: refused for Adam, AdamW and RMSprop, and for SGD with u = 0, where
 * it would silently predict nothing. */
int pb_predictor_check(enum pb_optim_kind k, const struct pb_optim_cfg *c,
                       enum pb_predict_variant v, struct pb_err *e);

/* Whether ΔW of this form reads the last step's d (SGD without momentum, SGDM's code
 * form, RMSprop without momentum), so the optimizer must keep it. */
bool pb_predictor_reads_d_last(const struct pb_optim_cfg *c, enum pb_predict_variant v);

#endif
