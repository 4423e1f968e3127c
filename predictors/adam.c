/* predictors/adam.c — ΔW of Adam and AdamW (SPEC §3, PipeOptim Table I; XPipe):
 * m̂/(√v̂ + ε) with the bias corrections of the last step, in the order of torch's
 * step (denominator √v/√(1−β2^t) + ε). AdamW's decoupled decay is not part of ΔW. */
#include "predictors/predictor.h"

#include <math.h>

void pb_delta_adam(const struct pb_optim *o, const struct pb_optim_coef *c, int variant,
                   float *dw, size_t lo, size_t hi)
{
    (void)variant;  /* every defined form is the paper's */
    for (size_t i = lo; i < hi; i++) {
        float denom = sqrtf(o->v[i]) / c->bc2_sqrt + c->eps;
        dw[i - lo] = (o->m[i] / c->bc1) / denom;
    }
}
