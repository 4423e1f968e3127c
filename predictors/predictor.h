/* predictors/predictor.h — the weight predictors Ŵ = W − lr·s·ΔW (semantics §3, PipeOptim
 * Table I; SpecTrain in §4.3, XPipe in §4.5): which ΔW formula each optimizer and form reads
 * from the optimizer's state, handed to the backend's predict kernel as plain arguments. */
#ifndef PB_PREDICTOR_H
#define PB_PREDICTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/compute/optim_kernels.h"
#include "harness/optim/optim.h"

/* w_hat = w − lr·s·ΔW in form `form` from o's state, on backend be (w, w_hat [o->n],
 * device memory of be; w_hat may equal w). ΔW = 0 before the first step and for s = 0.
 * Reads the state, never changes it. The form must pass pb_predictor_check. */
void pb_predict(struct pb_backend *be, const struct pb_optim *o, enum pb_predict_variant form,
                float s, const float *w, float *w_hat);
/* The kernel arguments pb_predict hands to be->ops->predict. */
void pb_predict_args_init(struct pb_predict_args *a, const struct pb_optim *o,
                          enum pb_predict_variant form, float s, const float *w, float *w_hat);

/* The ΔW formula of form v for one optimizer family from o's state after step o->t >= 1,
 * c = o's scalars (pb_optim_coef_init). Each points dw at o's state buffers. */
void pb_dw_sgd(const struct pb_optim *o, const struct pb_optim_coef *c,
               enum pb_predict_variant v, struct pb_dw_desc *dw);      /* predictors/sgd.c */
void pb_dw_adam(const struct pb_optim *o, const struct pb_optim_coef *c,
                enum pb_predict_variant v, struct pb_dw_desc *dw);     /* predictors/adam.c */
void pb_dw_rmsprop(const struct pb_optim *o, const struct pb_optim_coef *c,
                   enum pb_predict_variant v, struct pb_dw_desc *dw);  /* predictors/rmsprop.c */

/* Whether form v is defined for optimizer k with configuration c (predictors/predict.c).
 * PAPER and CODE are defined for every optimizer but NAdam, which has no ΔW in PipeOptim's
 * Table I and is refused in every form. MOMENTUM (ΔW = u·buf, SpecTrain's code
 * backward) and SPECTRAIN (ΔW = u·buf + d_last, its code forward) are SGD's only: with
 * u = 0 MOMENTUM is ΔW = 0 and SPECTRAIN d_last (semantics §3.4); refused for Adam, AdamW and
 * RMSprop, which have no such buffer. */
int pb_predictor_check(enum pb_optim_kind k, const struct pb_optim_cfg *c,
                       enum pb_predict_variant v, struct pb_err *e);

/* Whether ΔW of form v reads the last step's d = g + λW (SGD: every form but MOMENTUM
 * when u = 0, the CODE and SPECTRAIN forms when u > 0; RMSprop without momentum: the
 * PAPER form), so the optimizer must keep it (cfg.keep_d_last). */
bool pb_predictor_reads_d_last(const struct pb_optim_cfg *c, enum pb_predict_variant v);
/* Whether ΔW of form v reads the last step's raw gradient g (RMSprop's code form, with
 * or without weight decay and momentum), so the optimizer must keep it (cfg.keep_g_last). */
bool pb_predictor_reads_g_last(const struct pb_optim_cfg *c, enum pb_predict_variant v);

#endif
