/* predictors/adam.c — ΔW of Adam and AdamW (semantics §3, PipeOptim Table I; XPipe in §4.5):
 * m̂/(√v̂ + ε) with the bias corrections of the last step, in the order of torch's
 * step (denominator √v/√(1−β2^t) + ε). AdamW's decoupled decay is not part of ΔW.
 * The code form hard-codes ε = 1e-8 whatever the optimizer's ε, as guanleics/PipeOptim. */
#include "predictors/predictor.h"

#include <string.h>

/* The ε of guanleics/PipeOptim's Adam prediction (semantics §3.3). */
#define PB_CODE_ADAM_EPS 1e-8f

void pb_dw_adam(const struct pb_optim *o, const struct pb_optim_coef *c,
                enum pb_predict_variant v, struct pb_dw_desc *dw)
{
    memset(dw, 0, sizeof *dw);
    dw->kind = PB_DW_ADAM;
    dw->m = o->m;
    dw->v = o->v;
    dw->bc1 = c->bc1;
    dw->bc2_sqrt = c->bc2_sqrt;
    dw->eps = v == PB_PREDICT_CODE ? PB_CODE_ADAM_EPS : c->eps;
}
