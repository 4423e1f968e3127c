/* predictors/predict.c — the weight prediction Ŵ = W − lr·s·ΔW of SPEC §3 (PipeOptim
 * eq. of Table I, SpecTrain, XPipe) over elements [lo, hi): dispatch to the ΔW of the
 * optimizer family; reads the optimizer state and never changes it. */
#include "predictors/predictor.h"

#include <math.h>
#include <string.h>

typedef void (*delta_fn)(const struct pb_optim *o, const struct pb_optim_coef *c, int variant,
                         float *dw, size_t lo, size_t hi);

static const delta_fn deltas[PB_OPT_NKINDS] = {
    [PB_OPT_SGD] = pb_delta_sgd,
    [PB_OPT_ADAM] = pb_delta_adam,
    [PB_OPT_ADAMW] = pb_delta_adam,
    [PB_OPT_RMSPROP] = pb_delta_rmsprop,
};

int pb_predictor_check(enum pb_optim_kind k, const struct pb_optim_cfg *c,
                       enum pb_predict_variant v, struct pb_err *e)
{
    if (v != PB_PREDICT_PAPER && v != PB_PREDICT_CODE && v != PB_PREDICT_MOMENTUM)
        return pb_err_set(e, "unknown prediction form %d (valid: paper, code, momentum)", (int)v);
    if (v == PB_PREDICT_MOMENTUM && k != PB_OPT_SGD)
        return pb_err_set(e, "the momentum prediction form (SpecTrain, ΔW = u·buf) needs SGD with "
                             "momentum, not %s", pb_optim_kind_name(k));
    if (v == PB_PREDICT_MOMENTUM && !(c->momentum > 0.0f))
        return pb_err_set(e, "the momentum prediction form (SpecTrain, ΔW = u·buf) needs "
                             "--momentum > 0 (got %g)", (double)c->momentum);
    return 0;
}

bool pb_predictor_reads_d_last(const struct pb_optim_cfg *c, enum pb_predict_variant v)
{
    if (c->kind == PB_OPT_SGD)
        return c->momentum == 0.0f || v == PB_PREDICT_CODE;
    return c->kind == PB_OPT_RMSPROP && c->momentum == 0.0f;
}

#define PB_PREDICT_BLOCK 256

void pb_predict_ref(const struct pb_optim *o, int variant, float s, const float *w, float *w_hat,
                    size_t lo, size_t hi)
{
    PB_CHECK(lo <= hi && hi <= o->n);
    PB_CHECK(o->cfg.kind >= 0 && o->cfg.kind < PB_OPT_NKINDS);
    PB_CHECK(pb_predictor_check(o->cfg.kind, &o->cfg, (enum pb_predict_variant)variant, NULL) == 0);
    if (o->t == 0 || s == 0.0f) {
        /* no step yet: ΔW = 0; s = 0: Ŵ = W */
        if (w_hat != w)
            memmove(w_hat + lo, w + lo, (hi - lo) * sizeof *w);
        return;
    }
    struct pb_optim_coef c;
    pb_optim_coef_init(&c, o);
    float neg_ls = (float)((double)c.neg_lr * (double)s);
    float dw[PB_PREDICT_BLOCK];
    for (size_t b = lo; b < hi; b += PB_PREDICT_BLOCK) {
        size_t e = hi - b < PB_PREDICT_BLOCK ? hi : b + PB_PREDICT_BLOCK;
        deltas[o->cfg.kind](o, &c, variant, dw, b, e);
        for (size_t i = b; i < e; i++)
            w_hat[i] = fmaf(neg_ls, dw[i - b], w[i]);
    }
}
