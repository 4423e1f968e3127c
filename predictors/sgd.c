/* predictors/sgd.c — ΔW of SGD and SGD with momentum (SPEC §3, PipeOptim Table I;
 * SpecTrain §4.3): paper buf (u > 0) or d_last (u = 0); code u·buf + (1−τ)·d_last;
 * momentum u·buf (SpecTrain's code backward). */
#include "predictors/predictor.h"

void pb_delta_sgd(const struct pb_optim *o, const struct pb_optim_coef *c, int variant,
                  float *dw, size_t lo, size_t hi)
{
    const float *buf = o->buf, *d = o->d_last;
    if (!buf) {
        /* u = 0: the last step's d in the paper and code forms alike */
        PB_CHECK(d != NULL);  /* kept when the run predicts (cfg.keep_d_last) */
        for (size_t i = lo; i < hi; i++)
            dw[i - lo] = d[i];
        return;
    }
    switch (variant) {
    case PB_PREDICT_CODE:
        PB_CHECK(d != NULL);
        for (size_t i = lo; i < hi; i++)
            dw[i - lo] = c->mom * buf[i] + c->one_minus_damp * d[i];
        break;
    case PB_PREDICT_MOMENTUM:
        for (size_t i = lo; i < hi; i++)
            dw[i - lo] = c->mom * buf[i];
        break;
    default:
        for (size_t i = lo; i < hi; i++)
            dw[i - lo] = buf[i];
        break;
    }
}
