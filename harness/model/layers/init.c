/* harness/model/layers/init.c — the initialisations a model's definition may set
 * (torch.nn.init: kaiming_normal_, normal_, trunc_normal_, constant_, uniform_; layer.h),
 * drawn
 * from the counter-based RNG as the PyTorch defaults are (semantics §1.9). */
#include <math.h>
#include <string.h>

#include "harness/base/rng.h"
#include "harness/model/layers/layer_util.h"

/* Rejection draws of a truncated normal value before the inverse-CDF fallback. */
#define TRUNC_TRIES 32

/* P(Z > x) for a standard normal Z, accurate in the upper tail. */
static double upper_tail(double x)
{
    return 0.5 * erfc(x / sqrt(2.0));
}

/* P(Z < x), accurate in the lower tail and near zero. */
static double lower_tail(double x)
{
    return 0.5 * erfc(-x / sqrt(2.0));
}

/* The z in [a, b] with P(a < Z < z) = u · P(a < Z < b), by bisection on the tail that
 * keeps its digits on [a, b]: the upper one when the interval lies above zero. */
static double trunc_inverse(double a, double b, double u)
{
    double lo = a, hi = b;
    bool upper = a >= 0;
    double pa = upper ? upper_tail(a) : lower_tail(a), pb = upper ? upper_tail(b) : lower_tail(b);
    double target = pa + u * (pb - pa);
    for (int it = 0; it < 200 && hi - lo > 1e-12 * (1.0 + fabs(lo)); it++) {
        double mid = 0.5 * (lo + hi), p = upper ? upper_tail(mid) : lower_tail(mid);
        if (upper ? p > target : p < target)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* N(0, std²) truncated to [lo, hi]: element i takes the first of TRUNC_TRIES normal
 * draws (key coordinate c = try) inside the bounds, else the inverse CDF of one more
 * uniform draw; both are the exact truncated distribution, so their mixture is. */
static void fill_trunc_normal(float *w, size_t n, float std, float lo, float hi, uint64_t seed,
                              int uid, int which)
{
    PB_CHECK(std > 0.0f && lo < hi);
    double a = (double)lo / std, b = (double)hi / std;
    struct pb_rng_key keys[TRUNC_TRIES + 1];
    for (int t = 0; t <= TRUNC_TRIES; t++)
        keys[t] = pb_rng_key(PB_RNG_INIT, seed, (uint64_t)uid, (uint64_t)which, (uint64_t)t);
    for (size_t i = 0; i < n; i++) {
        double z = NAN;
        for (int t = 0; t < TRUNC_TRIES && isnan(z); t++) {
            double d = pb_rng_normal(keys[t], i);
            if (d >= a && d <= b)
                z = d;
        }
        if (isnan(z))
            z = trunc_inverse(a, b, pb_rng_uniform(keys[TRUNC_TRIES], i));
        float v = (float)(std * z);
        w[i] = v < lo ? lo : v > hi ? hi : v;
    }
}

static void fill_normal(float *w, size_t n, double std, uint64_t seed, int uid, int which)
{
    struct pb_rng_key key = pb_rng_key(PB_RNG_INIT, seed, (uint64_t)uid, (uint64_t)which, 0);
    for (size_t i = 0; i < n; i++)
        w[i] = (float)(std * pb_rng_normal(key, i));
}

void pb_init_fill(const struct pb_init_spec *spec, float *w, size_t n, int fan_out, uint64_t seed,
                  int uid, int which)
{
    switch (spec->kind) {
    case PB_INIT_DEFAULT:
        PB_CHECK(!"PB_INIT_DEFAULT is the layer's own rule");
        break;
    case PB_INIT_KAIMING_NORMAL:
        PB_CHECK(fan_out > 0);
        fill_normal(w, n, sqrt(2.0 / fan_out), seed, uid, which);
        break;
    case PB_INIT_NORMAL:
        fill_normal(w, n, spec->std, seed, uid, which);
        break;
    case PB_INIT_TRUNC_NORMAL:
        fill_trunc_normal(w, n, spec->std, spec->lo, spec->hi, seed, uid, which);
        break;
    case PB_INIT_CONSTANT:
        for (size_t i = 0; i < n; i++)
            w[i] = spec->value;
        break;
    case PB_INIT_UNIFORM:
        PB_CHECK(spec->lo < spec->hi);
        pb_rng_fill_uniform(pb_rng_key(PB_RNG_INIT, seed, (uint64_t)uid, (uint64_t)which, 0), 0, w,
                            n, spec->lo, spec->hi);
        break;
    }
}

void pb_init_weight_bias(const struct pb_init_spec *spec, float *w, size_t nw, float *b, size_t nb,
                         int fan_in, int fan_out, uint64_t seed, int uid)
{
    if (spec->kind == PB_INIT_DEFAULT)
        pb_init_uniform_fan_in(w, nw, fan_in, seed, uid, 0);
    else
        pb_init_fill(spec, w, nw, fan_out, seed, uid, 0);
    if (!b)
        return;
    if (spec->zero_bias)
        memset(b, 0, nb * sizeof *b);
    else if (spec->kind == PB_INIT_UNIFORM)
        pb_init_fill(spec, b, nb, fan_out, seed, uid, 1);
    else
        pb_init_uniform_fan_in(b, nb, fan_in, seed, uid, 1);
}
