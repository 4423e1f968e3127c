/* predictors/sgd.c — ΔW of SGD and SGD with momentum (semantics §3, PipeOptim Table I;
 * SpecTrain's forms §3.4): paper buf (u > 0) or d_last (u = 0); PipeOptim's code u·buf +
 * (1−τ)·d_last; SpecTrain's code forward u·buf + d_last and backward u·buf. */
#include "predictors/predictor.h"

#include <string.h>

/* ΔW = a·x + b·y (y NULL: a·x) */
static void linear(struct pb_dw_desc *dw, float a, const float *x, float b, const float *y)
{
    dw->kind = PB_DW_LINEAR;
    dw->a = a;
    dw->x = x;
    dw->b = b;
    dw->y = y;
}

void pb_dw_sgd(const struct pb_optim *o, const struct pb_optim_coef *c,
               enum pb_predict_variant v, struct pb_dw_desc *dw)
{
    const float *buf = o->buf, *d = o->d_last;
    memset(dw, 0, sizeof *dw);
    if (v == PB_PREDICT_MOMENTUM) {
        /* u·buf; u = 0 (no buffer): ΔW = 0, the backward reads W unchanged */
        if (buf)
            linear(dw, c->mom, buf, 0.0f, NULL);
        else
            dw->kind = PB_DW_ZERO;
        return;
    }
    if (!buf) {
        /* u = 0: the last step's d in the paper and both code forms (1·d is exact) */
        PB_CHECK(d != NULL);  /* kept when the run predicts (cfg.keep_d_last) */
        linear(dw, 1.0f, d, 0.0f, NULL);
        return;
    }
    switch (v) {
    case PB_PREDICT_CODE:
        PB_CHECK(d != NULL);
        linear(dw, c->mom, buf, c->one_minus_damp, d);
        break;
    case PB_PREDICT_SPECTRAIN:
        /* d_last with weight 1 whatever the dampening (1·d is exact) */
        PB_CHECK(d != NULL);
        linear(dw, c->mom, buf, 1.0f, d);
        break;
    default:
        linear(dw, 1.0f, buf, 0.0f, NULL);
        break;
    }
}
