/* predictors/rmsprop.c — ΔW of RMSprop (semantics §3, PipeOptim Table I): paper d_last/(√sq + ε)
 * without momentum (the last step's update direction, recomputed from the state) and the
 * momentum buffer with μ > 0; the code form g_last/(√sq + ε) with the raw last gradient,
 * with or without weight decay and momentum, as guanleics/PipeOptim. */
#include "predictors/predictor.h"

#include <string.h>

void pb_dw_rmsprop(const struct pb_optim *o, const struct pb_optim_coef *c,
                   enum pb_predict_variant v, struct pb_dw_desc *dw)
{
    memset(dw, 0, sizeof *dw);
    if (v != PB_PREDICT_CODE && o->buf) {
        dw->kind = PB_DW_LINEAR;
        dw->a = 1.0f;  /* 1·buf is exact */
        dw->x = o->buf;
        return;
    }
    const float *x = v == PB_PREDICT_CODE ? o->g_last : o->d_last;
    PB_CHECK(x != NULL);  /* kept when the run predicts (cfg.keep_d_last / keep_g_last) */
    dw->kind = PB_DW_RMS;
    dw->x = x;
    dw->sq = o->sq;
    dw->eps = c->eps;
}
