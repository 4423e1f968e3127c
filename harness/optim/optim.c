/* harness/optim/optim.c — torch.optim-exact SGD/SGDM, Adam, AdamW, RMSprop (torch 1.13) and
 * NAdam (torch 2.x, decoupled decay) over one flat float32 buffer (semantics §2):
 * configuration, state in backend memory, multi-step learning rates, torch's scalars of a
 * step, and the arguments of the backend's step kernel. */
#include "harness/optim/optim.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/backend.h"

static const char *const kind_names[PB_OPT_NKINDS] = {"sgd", "adam", "adamw", "rmsprop",
                                                       "nadam"};

const char *pb_optim_kind_name(enum pb_optim_kind k)
{
    return (k >= 0 && k < PB_OPT_NKINDS) ? kind_names[k] : "unknown";
}

void pb_optim_cfg_defaults(struct pb_optim_cfg *c, enum pb_optim_kind k)
{
    memset(c, 0, sizeof *c);
    c->kind = k;
    c->lr = (k == PB_OPT_ADAM || k == PB_OPT_ADAMW) ? 1e-3f : k == PB_OPT_NADAM ? 2e-3f : 1e-2f;
    c->weight_decay = k == PB_OPT_ADAMW ? 1e-2f : 0.0f;
    c->beta1 = 0.9f;
    c->beta2 = 0.999f;
    c->eps = 1e-8f;
    c->alpha = 0.99f;
    c->momentum_decay = 4e-3f;
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
    return pb_err_set(e, "unknown optimizer '%s'; valid optimizers: sgd, sgdm, adam, adamw, "
                         "rmsprop, nadam", name ? name : "(null)");
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
                             "adamw, rmsprop, nadam", (int)c->kind);
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
    case PB_OPT_NADAM:
        if (check_unit(c->beta1, "--beta1", e) || check_unit(c->beta2, "--beta2", e) ||
            check_positive(c->eps, "--eps", e))
            return -1;
        if (!(c->momentum_decay >= 0.0f && isfinite(c->momentum_decay)))
            return pb_err_set(e, "--momentum-decay must be >= 0 (got %g)",
                              (double)c->momentum_decay);
        break;
    default:
        break;
    }
    if (c->n_lr_steps < 0 || c->n_lr_steps > PB_LR_MAX_STEPS)
        return pb_err_set(e, "--lr-steps takes at most %d epochs (got %d)", PB_LR_MAX_STEPS,
                          c->n_lr_steps);
    if (check_positive(c->lr_gamma, "--lr-gamma", e))
        return -1;
    if (c->lr_warmup < 0)
        return pb_err_set(e, "--lr-warmup counts epochs: 0 or more (got %d)", c->lr_warmup);
    if (c->lr_cosine && c->n_lr_steps > 0)
        return pb_err_set(e, "--lr-cosine and --lr-steps are two schedules of the rate after "
                             "the warm-up: give one of them");
    if (!(c->clip_grad >= 0 && c->clip_grad < INFINITY))
        return pb_err_set(e, "--clip-grad is the largest gradient norm of a stage, a finite "
                             "number > 0 (0: no clipping; got %g)", (double)c->clip_grad);
    if (c->lr_delay < 0 || c->lr_reschedule < 0)
        return pb_err_set(e, "the learning-rate rescheduling needs a delay and a length >= 0 "
                             "(got %d and %ld)", c->lr_delay, c->lr_reschedule);
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
 * thread, as the scalars are derived at every step and every prediction. */
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

/* NAdam's momentum cache μ_t = β1·(1 − ½·0.96^(t·ψ)), in Python doubles as torch 2.x. */
static double nadam_mu(const struct pb_optim_cfg *g, long t)
{
    return decimal_of(g->beta1) * (1.0 - 0.5 * pow(0.96, (double)t * decimal_of(g->momentum_decay)));
}

/* NAdam's scalars of step o->t (Π_t in o->mu_product already), as torch 2.x's
 * _single_tensor_nadam derives them: (−lr·(1 − μ_t))/(1 − Π_t) and (−lr·μ_{t+1})/(1 −
 * Π_t·μ_{t+1}), Π_t read as the double of its float32. */
static void nadam_coef(struct pb_optim_coef *c, const struct pb_optim *o, double lr)
{
    double mu = nadam_mu(&o->cfg, o->t), mu_next = nadam_mu(&o->cfg, o->t + 1);
    double prod = (double)o->mu_product, prod_next = prod * mu_next;
    c->bc2 = (float)(1.0 - pow(decimal_of(o->cfg.beta2), (double)o->t));
    c->nadam_g = (float)(-lr * (1.0 - mu) / (1.0 - prod));
    c->nadam_m = (float)((-lr * mu_next) / (1.0 - prod_next));
}

void pb_optim_coef_init(struct pb_optim_coef *c, const struct pb_optim *o)
{
    const struct pb_optim_cfg *g = &o->cfg;
    double lr = decimal_of(o->lr) / o->lr_div, wd = decimal_of(g->weight_decay);
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
    if (g->kind == PB_OPT_NADAM && o->t > 0)
        nadam_coef(c, o, lr);
}

static bool needs_d_last(const struct pb_optim_cfg *c)
{
    /* SGD: ΔW of plain SGD (paper) and the code forms of SGDM; RMSprop μ = 0: paper ΔW */
    return c->keep_d_last &&
           (c->kind == PB_OPT_SGD || (c->kind == PB_OPT_RMSPROP && c->momentum == 0.0f));
}

static bool needs_g_last(const struct pb_optim_cfg *c)
{
    /* RMSprop's code form (any μ, any λ) reads the raw gradient */
    return c->keep_g_last && c->kind == PB_OPT_RMSPROP;
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
    o->lr_div = 1.0;
    o->mu_product = 1.0f;
    bool sgd_buf = c->kind == PB_OPT_SGD && c->momentum > 0.0f;
    bool adam = c->kind == PB_OPT_ADAM || c->kind == PB_OPT_ADAMW || c->kind == PB_OPT_NADAM;
    bool rms = c->kind == PB_OPT_RMSPROP;
    if ((sgd_buf && alloc_state(&o->buf, be, n, e)) ||
        (adam && (alloc_state(&o->m, be, n, e) || alloc_state(&o->v, be, n, e))) ||
        (rms && alloc_state(&o->sq, be, n, e)) ||
        (rms && c->momentum > 0.0f && alloc_state(&o->buf, be, n, e)) ||
        (needs_d_last(c) && alloc_state(&o->d_last, be, n, e)) ||
        (needs_g_last(c) && alloc_state(&o->g_last, be, n, e))) {
        pb_optim_finish(o, be);
        return pb_err_prefix(e, "%s optimizer state: ", kind_names[c->kind]);
    }
    return 0;
}

void pb_optim_finish(struct pb_optim *o, struct pb_backend *be)
{
    float **state[] = {&o->buf, &o->m, &o->v, &o->sq, &o->d_last, &o->g_last};
    for (size_t i = 0; i < sizeof state / sizeof state[0]; i++) {
        if (*state[i])
            pb_backend_free(be, *state[i]);
        *state[i] = NULL;
    }
    o->t = 0;
    o->lr_div = 1.0;
    o->mu_product = 1.0f;
}

void pb_optim_set_epoch(struct pb_optim *o, int epoch)
{
    /* torch's MultiStepLR: lr ← lr·γ at each milestone reached, in Python doubles */
    double lr = decimal_of(o->cfg.lr), gamma = decimal_of(o->cfg.lr_gamma);
    for (int i = 0; i < o->cfg.n_lr_steps; i++)
        if (o->cfg.lr_steps[i] <= epoch)
            lr *= gamma;
    int warm = o->cfg.lr_warmup, span = o->cfg.lr_epochs - warm;
    if (epoch < warm)   /* torch's LinearLR from 1/W to 1 over W epochs */
        lr *= (double)(epoch + 1) / warm;
    else if (o->cfg.lr_cosine && span > 0)
        lr *= 0.5 * (1 + cos(M_PI * (epoch - warm) / span));
    o->lr = (float)lr;
}

static const enum pb_optk_family families[PB_OPT_NKINDS] = {
    [PB_OPT_SGD] = PB_OPTK_SGD,
    [PB_OPT_ADAM] = PB_OPTK_ADAM,
    [PB_OPT_ADAMW] = PB_OPTK_ADAMW,
    [PB_OPT_RMSPROP] = PB_OPTK_RMSPROP,
    [PB_OPT_NADAM] = PB_OPTK_NADAM,
};

void pb_optim_step_args_init(struct pb_optim_step_args *a, const struct pb_optim *o, float *w,
                             float *g)
{
    PB_CHECK(o->t >= 1 && o->cfg.kind >= 0 && o->cfg.kind < PB_OPT_NKINDS);
    memset(a, 0, sizeof *a);
    a->family = families[o->cfg.kind];
    pb_optim_coef_init(&a->c, o);
    a->first = o->t == 1;
    a->nesterov = o->cfg.nesterov;
    a->n = o->n;
    a->w = w;
    a->g = g;
    a->buf = o->buf;
    a->m = o->m;
    a->v = o->v;
    a->sq = o->sq;
    a->d_last = o->d_last;
    a->g_last = o->g_last;
}

/* NAdam's Π after step t from Π before it: torch's float32 `mu_product *= mu`, the double
 * μ_t rounded to float first. */
static float nadam_product(const struct pb_optim *o, float prod, long t)
{
    return prod * (float)nadam_mu(&o->cfg, t);
}

void pb_optim_set_steps(struct pb_optim *o, long t)
{
    o->t = t;
    o->mu_product = 1.0f;
    for (long i = 1; o->cfg.kind == PB_OPT_NADAM && i <= t; i++)
        o->mu_product = nadam_product(o, o->mu_product, i);
}

double pb_optim_lr_divisor(const struct pb_optim_cfg *c, long t)
{
    if (c->lr_delay <= 1 || c->lr_reschedule <= 0)
        return 1.0;
    /* AsyncPP's `lr / (num_versions-1) ** (1 - min(float(1 + step)/K, 1))` */
    return pow((double)c->lr_delay, 1.0 - fmin((double)(t + 1) / (double)c->lr_reschedule, 1.0));
}

void pb_optim_step(struct pb_optim *o, struct pb_backend *be, float *w, float *g)
{
    o->lr_div = pb_optim_lr_divisor(&o->cfg, o->t);
    o->t += 1;
    if (o->cfg.kind == PB_OPT_NADAM)
        o->mu_product = nadam_product(o, o->mu_product, o->t);
    struct pb_optim_step_args a;
    pb_optim_step_args_init(&a, o, w, g);
    a.zero_grad = true;
    be->ops->optim_step(be, &a);
}
