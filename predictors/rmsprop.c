/* predictors/rmsprop.c — ΔW of RMSprop (SPEC §3, PipeOptim Table I): d_last/(√sq + ε)
 * without momentum (the last step's update direction, recomputed from the state),
 * the momentum buffer with μ > 0. Paper and code forms agree. */
#include "predictors/predictor.h"

#include <math.h>

void pb_delta_rmsprop(const struct pb_optim *o, const struct pb_optim_coef *c, int variant,
                      float *dw, size_t lo, size_t hi)
{
    (void)variant;  /* every defined form is the paper's */
    if (o->buf) {
        for (size_t i = lo; i < hi; i++)
            dw[i - lo] = o->buf[i];
        return;
    }
    PB_CHECK(o->d_last != NULL);  /* kept when the run predicts (cfg.keep_d_last) */
    for (size_t i = lo; i < hi; i++)
        dw[i - lo] = o->d_last[i] / (sqrtf(o->sq[i]) + c->eps);
}
