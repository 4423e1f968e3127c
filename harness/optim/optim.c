/* harness/optim/optim.c — torch.optim-exact SGD/SGDM, Adam, AdamW and RMSprop over one flat
 * float32 buffer (SPEC §2): configuration, state in backend memory, multi-step learning
 * rates, and the plain C reference step in torch 1.13's single-tensor op order. */
#include "harness/optim/optim.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/backend.h"
#include "predictors/predictor.h"

static const char *const kind_names[PB_OPT_NKINDS] = {"sgd", "adam", "adamw", "rmsprop"};

const char *pb_optim_kind_name(enum pb_optim_kind k)
{
    return (k >= 0 && k < PB_OPT_NKINDS) ? kind_names[k] : "unknown";
}

void pb_optim_cfg_defaults(struct pb_optim_cfg *c, enum pb_optim_kind k)
{
    memset(c, 0, sizeof *c);
    c->kind = k;
    c->lr = (k == PB_OPT_ADAM || k == PB_OPT_ADAMW) ? 1e-3f : 1e-2f;
    c->weight_decay = k == PB_OPT_ADAMW ? 1e-2f : 0.0f;
    c->beta1 = 0.9f;
    c->beta2 = 0.999f;
    c->eps = 1e-8f;
    c->alpha = 0.99f;
    c->lr_gamma = 0.1f;
}

int pb_optim_cfg_from_name(struct pb_optim_cfg *c, const char *name, struct pb_err *e)
{
    if (name && !strcmp(name, "sgdm")) {
        pb_optim_cfg_defaults(c, PB_OPT_SGD);
        c->momentum = 0.9f;
        return 0;
    }
    for (int k = 0; k < PB_OPT_NKINDS && name; k++)
        if (!strcmp(name, kind_names[k])) {
            pb_optim_cfg_defaults(c, (enum pb_optim_kind)k);
            return 0;
        }
    return pb_err_set(e, "unknown optimizer '%s'; valid optimizers: sgd, sgdm, adam, adamw, rmsprop",
                      name ? name : "(null)");
}

/* value in [0, 1); NaN fails */
static int check_unit(float x, const char *flag, struct pb_err *e)
{
    if (x >= 0.0f && x < 1.0f)
        return 0;
    return pb_err_set(e, "%s must be in [0, 1) (got %g)", flag, (double)x);
}

static int check_positive(float x, const char *flag, struct pb_err *e)
{
    if (x > 0.0f && isfinite(x))
        return 0;
    return pb_err_set(e, "%s must be > 0 (got %g)", flag, (double)x);
}

int pb_optim_cfg_check(const struct pb_optim_cfg *c, struct pb_err *e)
{
    if (c->kind < 0 || c->kind >= PB_OPT_NKINDS)
        return pb_err_set(e, "unknown optimizer kind %d; valid optimizers: sgd, sgdm, adam, "
                             "adamw, rmsprop", (int)c->kind);
    if (check_positive(c->lr, "--lr", e))
        return -1;
    if (!(c->weight_decay >= 0.0f && isfinite(c->weight_decay)))
        return pb_err_set(e, "--weight-decay must be >= 0 (got %g)", (double)c->weight_decay);
    switch (c->kind) {
    case PB_OPT_SGD:
        if (check_unit(c->momentum, "--momentum", e) || check_unit(c->dampening, "--dampening", e))
            return -1;
        if (c->nesterov && (c->momentum <= 0.0f || c->dampening != 0.0f))
            return pb_err_set(e, "--nesterov requires --momentum > 0 and --dampening 0 (got "
                                 "momentum %g, dampening %g), as torch.optim.SGD does",
                              (double)c->momentum, (double)c->dampening);
        break;
    case PB_OPT_ADAM:
    case PB_OPT_ADAMW:
        if (check_unit(c->beta1, "--beta1", e) || check_unit(c->beta2, "--beta2", e) ||
            check_positive(c->eps, "--eps", e))
            return -1;
        break;
    case PB_OPT_RMSPROP:
        if (check_unit(c->alpha, "--alpha", e) || check_unit(c->momentum, "--momentum", e) ||
            check_positive(c->eps, "--eps", e))
            return -1;
        break;
    default:
        break;
    }
    if (c->n_lr_steps < 0 || c->n_lr_steps > PB_LR_MAX_STEPS)
        return pb_err_set(e, "--lr-steps takes at most %d epochs (got %d)", PB_LR_MAX_STEPS,
                          c->n_lr_steps);
    if (c->n_lr_steps > 0 && check_positive(c->lr_gamma, "--lr-gamma", e))
        return -1;
    for (int i = 0; i < c->n_lr_steps; i++) {
        if (c->lr_steps[i] < 0)
            return pb_err_set(e, "--lr-steps: epoch %d is negative", c->lr_steps[i]);
        if (i > 0 && c->lr_steps[i] <= c->lr_steps[i - 1])
            return pb_err_set(e, "--lr-steps must be strictly increasing (got %d after %d)",
                              c->lr_steps[i], c->lr_steps[i - 1]);
    }
    return 0;
}

/* The double that the shortest decimal of x denotes (0.9f -> 0.9): the value Python
 * holds for a hyperparameter given as text (see struct pb_optim_coef). Memoised per
 * thread, as the CPU backend derives the scalars once per chunk of every step. */
static double decimal_of(float x)
{
    static _Thread_local struct { uint32_t bits; bool set; double d; } memo[16];
    static _Thread_local unsigned next;
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    for (unsigned i = 0; i < 16; i++)
        if (memo[i].set && memo[i].bits == bits)
            return memo[i].d;
    unsigned slot = next++ % 16;
    double d = (double)x;
    char buf[32];
    for (int digits = 1; isfinite(x) && x != 0.0f && digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, (double)x);
        double y = strtod(buf, NULL);
        if ((float)y == x) {
            d = y;
            break;
        }
    }
    memo[slot].bits = bits;
    memo[slot].set = true;
    memo[slot].d = d;
    return d;
}

void pb_optim_coef_init(struct pb_optim_coef *c, const struct pb_optim *o)
{
    const struct pb_optim_cfg *g = &o->cfg;
    double lr = decimal_of(o->lr), wd = decimal_of(g->weight_decay);
    double b1 = decimal_of(g->beta1), b2 = decimal_of(g->beta2);
    double bc1 = o->t > 0 ? 1.0 - pow(b1, (double)o->t) : 0.0;
    double bc2 = o->t > 0 ? 1.0 - pow(b2, (double)o->t) : 0.0;
    memset(c, 0, sizeof *c);
    c->neg_lr = (float)-lr;
    c->wd = g->weight_decay;
    c->mom = g->momentum;
    c->one_minus_damp = (float)(1.0 - decimal_of(g->dampening));
    c->beta1 = g->beta1;
    c->beta2 = g->beta2;
    c->one_minus_beta1 = (float)(1.0 - b1);
    c->one_minus_beta2 = (float)(1.0 - b2);
    c->eps = g->eps;
    c->neg_step_size = bc1 > 0.0 ? (float)-(lr / bc1) : 0.0f;
    c->bc2_sqrt = (float)sqrt(bc2);
    c->bc1 = (float)bc1;
    c->decay = (float)(1.0 - lr * wd);
    c->alpha = g->alpha;
    c->one_minus_alpha = (float)(1.0 - decimal_of(g->alpha));
}

static bool needs_d_last(const struct pb_optim_cfg *c)
{
    /* SGD: ΔW of plain SGD (paper) and of SGDM's code form; RMSprop μ = 0: paper ΔW */
    return c->keep_d_last &&
           (c->kind == PB_OPT_SGD || (c->kind == PB_OPT_RMSPROP && c->momentum == 0.0f));
}

static int alloc_state(float **p, struct pb_backend *be, size_t n, struct pb_err *e)
{
    *p = pb_backend_alloc(be, n * sizeof(float), PB_MEM_OPTSTATE, e);
    if (!*p)
        return -1;
    be->ops->fill(be, *p, 0.0f, n);
    return 0;
}

int pb_optim_init(struct pb_optim *o, struct pb_backend *be, const struct pb_optim_cfg *c,
                  size_t n, struct pb_err *e)
{
    memset(o, 0, sizeof *o);
    if (pb_optim_cfg_check(c, e))
        return -1;
    o->cfg = *c;
    o->n = n;
    o->lr = c->lr;
    bool sgd_buf = c->kind == PB_OPT_SGD && c->momentum > 0.0f;
    bool adam = c->kind == PB_OPT_ADAM || c->kind == PB_OPT_ADAMW;
    bool rms = c->kind == PB_OPT_RMSPROP;
    if ((sgd_buf && alloc_state(&o->buf, be, n, e)) ||
        (adam && (alloc_state(&o->m, be, n, e) || alloc_state(&o->v, be, n, e))) ||
        (rms && alloc_state(&o->sq, be, n, e)) ||
        (rms && c->momentum > 0.0f && alloc_state(&o->buf, be, n, e)) ||
        (needs_d_last(c) && alloc_state(&o->d_last, be, n, e))) {
        pb_optim_finish(o, be);
        return pb_err_prefix(e, "%s optimizer state: ", kind_names[c->kind]);
    }
    return 0;
}

void pb_optim_finish(struct pb_optim *o, struct pb_backend *be)
{
    float **state[] = {&o->buf, &o->m, &o->v, &o->sq, &o->d_last};
    for (size_t i = 0; i < sizeof state / sizeof state[0]; i++) {
        if (*state[i])
            pb_backend_free(be, *state[i]);
        *state[i] = NULL;
    }
    o->t = 0;
}

void pb_optim_set_epoch(struct pb_optim *o, int epoch)
{
    /* torch's MultiStepLR: lr ← lr·γ at each milestone reached, in Python doubles */
    double lr = decimal_of(o->cfg.lr), gamma = decimal_of(o->cfg.lr_gamma);
    for (int i = 0; i < o->cfg.n_lr_steps; i++)
        if (o->cfg.lr_steps[i] <= epoch)
            lr *= gamma;
    o->lr = (float)lr;
}

void pb_optim_step(struct pb_optim *o, struct pb_backend *be, float *w, const float *g)
{
    o->t += 1;
    be->ops->optim_step(be, o, w, g);
}

/* The kernels below follow torch 1.13's CPU kernels: add(x, alpha) is fmaf(alpha, x, a),
 * addcmul(t1, t2, value) is fmaf(value·t1, t2, a), addcdiv(t1, t2, value) is
 * a + (value·t1)/t2, division by a Python scalar is a true division. */

static void step_sgd(const struct pb_optim *o, const struct pb_optim_coef *c, float *w,
                     const float *g, size_t lo, size_t hi)
{
    bool first = o->t == 1, nesterov = o->cfg.nesterov;
    for (size_t i = lo; i < hi; i++) {
        float d = c->wd != 0.0f ? fmaf(c->wd, w[i], g[i]) : g[i];
        if (o->d_last)
            o->d_last[i] = d;
        float step = d;
        if (o->buf) {
            float b = first ? d : fmaf(c->one_minus_damp, d, o->buf[i] * c->mom);
            o->buf[i] = b;
            step = nesterov ? fmaf(c->mom, b, d) : b;
        }
        w[i] = fmaf(c->neg_lr, step, w[i]);
    }
}

static void step_adam(const struct pb_optim *o, const struct pb_optim_coef *c, float *w,
                      const float *g, size_t lo, size_t hi)
{
    bool adamw = o->cfg.kind == PB_OPT_ADAMW;
    float l2 = adamw ? 0.0f : c->wd;  /* AdamW: decoupled decay instead of L2 */
    float *m = o->m, *v = o->v;
    for (size_t i = lo; i < hi; i++) {
        float wi = adamw ? w[i] * c->decay : w[i];
        float d = l2 != 0.0f ? fmaf(l2, wi, g[i]) : g[i];
        float mi = fmaf(c->one_minus_beta1, d, m[i] * c->beta1);
        float vi = fmaf(c->one_minus_beta2 * d, d, v[i] * c->beta2);
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) / c->bc2_sqrt + c->eps;
        w[i] = wi + (c->neg_step_size * mi) / denom;
    }
}

static void step_rmsprop(const struct pb_optim *o, const struct pb_optim_coef *c, float *w,
                         const float *g, size_t lo, size_t hi)
{
    float *sq = o->sq, *buf = o->buf, *d_last = o->d_last;
    for (size_t i = lo; i < hi; i++) {
        float d = c->wd != 0.0f ? fmaf(c->wd, w[i], g[i]) : g[i];
        float s = fmaf(c->one_minus_alpha * d, d, sq[i] * c->alpha);
        sq[i] = s;
        float avg = sqrtf(s) + c->eps;
        if (buf) {
            float b = buf[i] * c->mom + d / avg;
            buf[i] = b;
            w[i] = fmaf(c->neg_lr, b, w[i]);
        } else {
            if (d_last)
                d_last[i] = d;
            w[i] = w[i] + (c->neg_lr * d) / avg;
        }
    }
}

void pb_optim_step_ref(const struct pb_optim *o, float *w, const float *g, size_t lo, size_t hi)
{
    PB_CHECK(o->t >= 1 && lo <= hi && hi <= o->n);
    struct pb_optim_coef c;
    pb_optim_coef_init(&c, o);
    switch (o->cfg.kind) {
    case PB_OPT_SGD:
        step_sgd(o, &c, w, g, lo, hi);
        break;
    case PB_OPT_ADAM:
    case PB_OPT_ADAMW:
        step_adam(o, &c, w, g, lo, hi);
        break;
    case PB_OPT_RMSPROP:
        step_rmsprop(o, &c, w, g, lo, hi);
        break;
    default:
        PB_CHECK(!"unknown optimizer kind");
    }
}
