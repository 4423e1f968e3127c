/* predictors/predict.c — the weight prediction Ŵ = W − lr·s·ΔW of semantics §3 (PipeOptim
 * eq. of Table I, SpecTrain in §4.3, XPipe in §4.5): dispatch to the ΔW of the optimizer family,
 * the forms each optimizer defines and the state they read, and the call of the
 * backend's predict kernel. Reads the optimizer state and never changes it. */
#include "predictors/predictor.h"

#include <string.h>

#include "harness/compute/backend.h"

typedef void (*dw_fn)(const struct pb_optim *o, const struct pb_optim_coef *c,
                      enum pb_predict_variant v, struct pb_dw_desc *dw);

static const dw_fn dws[PB_OPT_NKINDS] = {
    [PB_OPT_SGD] = pb_dw_sgd,
    [PB_OPT_ADAM] = pb_dw_adam,
    [PB_OPT_ADAMW] = pb_dw_adam,
    [PB_OPT_RMSPROP] = pb_dw_rmsprop,
    [PB_OPT_NADAM] = NULL,  /* no ΔW: refused by pb_predictor_check */
};

int pb_predictor_check(enum pb_optim_kind k, const struct pb_optim_cfg *c,
                       enum pb_predict_variant v, struct pb_err *e)
{
    (void)c;
    if (k == PB_OPT_NADAM)
        return pb_err_set(e, "nadam has no weight prediction: the ΔW of PipeOptim's Table I "
                             "(semantics §3) is defined for SGD, SGDM, Adam, AdamW and RMSprop "
                             "only; run nadam with a schedule that does not predict (pipedream, "
                             "pipedream-2bw, gpipe) or predict with another optimizer");
    if ((unsigned)v >= (unsigned)PB_PREDICT_NFORMS)
        return pb_err_set(e, "unknown prediction form %d (valid: paper, code, momentum, "
                             "spectrain)", (int)v);
    if (v == PB_PREDICT_MOMENTUM && k != PB_OPT_SGD)
        return pb_err_set(e, "the momentum prediction form (SpecTrain's code backward, ΔW = "
                             "u·buf) needs SGD or SGDM, not %s", pb_optim_kind_name(k));
    if (v == PB_PREDICT_SPECTRAIN && k != PB_OPT_SGD)
        return pb_err_set(e, "the spectrain prediction form (SpecTrain's code forward, ΔW = "
                             "u·buf + d_last) needs SGD or SGDM, not %s", pb_optim_kind_name(k));
    return 0;
}

bool pb_predictor_reads_d_last(const struct pb_optim_cfg *c, enum pb_predict_variant v)
{
    if (c->kind == PB_OPT_SGD)
        return v != PB_PREDICT_MOMENTUM &&
               (c->momentum == 0.0f || v == PB_PREDICT_CODE || v == PB_PREDICT_SPECTRAIN);
    return c->kind == PB_OPT_RMSPROP && c->momentum == 0.0f && v == PB_PREDICT_PAPER;
}

bool pb_predictor_reads_g_last(const struct pb_optim_cfg *c, enum pb_predict_variant v)
{
    return c->kind == PB_OPT_RMSPROP && v == PB_PREDICT_CODE;
}

void pb_predict_args_init(struct pb_predict_args *a, const struct pb_optim *o,
                          enum pb_predict_variant form, float s, const float *w, float *w_hat)
{
    PB_CHECK(o->cfg.kind >= 0 && o->cfg.kind < PB_OPT_NKINDS);
    PB_CHECK(pb_predictor_check(o->cfg.kind, &o->cfg, form, NULL) == 0);
    memset(a, 0, sizeof *a);
    a->n = o->n;
    a->w = w;
    a->w_hat = w_hat;
    a->dw.kind = PB_DW_ZERO;
    if (o->t == 0 || s == 0.0f)
        return;  /* no step yet: ΔW = 0; s = 0: Ŵ = W */
    struct pb_optim_coef c;
    pb_optim_coef_init(&c, o);
    a->scale = (float)((double)c.neg_lr * (double)s);
    dws[o->cfg.kind](o, &c, form, &a->dw);
}

void pb_predict(struct pb_backend *be, const struct pb_optim *o, enum pb_predict_variant form,
                float s, const float *w, float *w_hat)
{
    struct pb_predict_args a;
    pb_predict_args_init(&a, o, form, s, w, w_hat);
    be->ops->predict(be, &a);
}
