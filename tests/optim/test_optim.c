/* tests/optim/test_optim.c — semantics §2: the optimizers against torch.optim 1.13 trajectories
 * (tests/fixtures/optim.safetensors, written by gen_fixtures.py) and NAdam against torch
 * 2.x's (nadam.safetensors, written by fixtures_nadam.py) through the CPU backend, the
 * multi-step schedule, state allocation, and bad configurations. */
#include <cjson/cJSON.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "harness/compute/backend.h"
#include "harness/compute/cpu/cpu_backend.h"
#include "harness/optim/optim.h"
#include "predictors/predictor.h"
#include "tests/support/test_util.h"

#define FIX_N 37
#define FIX_STEPS 20

/* Distance in units in the last place between two finite floats. */
static int64_t ulp_distance(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, sizeof ia);
    memcpy(&ib, &b, sizeof ib);
    int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia;
    int64_t ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return oa > ob ? oa - ob : ob - oa;
}

/* Parses the fixture's description "optimizer=adam lr=0.01 beta1=0.9 ..." (Python
 * repr of the values torch was given). */
static void parse_config(const char *name, const char *desc, struct pb_optim_cfg *c)
{
    struct pb_err e;
    char text[512], *save = NULL;
    ck_assert_msg(strlen(desc) < sizeof text, "%s: description too long", name);
    strcpy(text, desc);
    bool have_kind = false;
    for (char *tok = strtok_r(text, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        ck_assert_msg(eq != NULL, "%s: bad field '%s'", name, tok);
        *eq = '\0';
        const char *k = tok, *v = eq + 1;
        if (!strcmp(k, "optimizer")) {
            ck_assert_msg(pb_optim_cfg_from_name(c, v, &e) == 0, "%s: %s", name, e.msg);
            have_kind = true;
            continue;
        }
        ck_assert_msg(have_kind, "%s: optimizer must come first", name);
        if (!strcmp(k, "lr"))
            c->lr = strtof(v, NULL);
        else if (!strcmp(k, "momentum"))
            c->momentum = strtof(v, NULL);
        else if (!strcmp(k, "dampening"))
            c->dampening = strtof(v, NULL);
        else if (!strcmp(k, "nesterov"))
            c->nesterov = atoi(v) != 0;
        else if (!strcmp(k, "weight_decay"))
            c->weight_decay = strtof(v, NULL);
        else if (!strcmp(k, "beta1"))
            c->beta1 = strtof(v, NULL);
        else if (!strcmp(k, "beta2"))
            c->beta2 = strtof(v, NULL);
        else if (!strcmp(k, "eps"))
            c->eps = strtof(v, NULL);
        else if (!strcmp(k, "alpha"))
            c->alpha = strtof(v, NULL);
        else if (!strcmp(k, "momentum_decay"))
            c->momentum_decay = strtof(v, NULL);
        else if (!strcmp(k, "decoupled_weight_decay"))
            ck_assert_msg(atoi(v) == 1 && c->kind == PB_OPT_NADAM, "%s: pipebench's nadam "
                          "decays decoupled only", name);
        else if (!strcmp(k, "lr_gamma"))
            c->lr_gamma = strtof(v, NULL);
        else if (!strcmp(k, "lr_steps")) {
            char *p = (char *)v;
            c->n_lr_steps = 0;
            while (*p && c->n_lr_steps < PB_LR_MAX_STEPS) {
                c->lr_steps[c->n_lr_steps++] = (int)strtol(p, &p, 10);
                if (*p == ',')
                    p++;
            }
        } else
            ck_abort_msg("%s: unknown hyperparameter '%s'", name, k);
    }
    ck_assert_msg(have_kind, "%s: no optimizer", name);
}

/* One torch trajectory through the CPU backend: every step uses epoch = step index
 * (so a multi-step milestone 10 takes effect at the 11th step, as MultiStepLR stepped
 * after each optimizer step). Returns the largest ulp distance seen. */
static int64_t run_trajectory(const struct pb_safetensors *st, const char *name, const char *desc)
{
    struct pb_err e;
    struct pb_optim_cfg cfg;
    parse_config(name, desc, &cfg);
    static float w0[FIX_N], grads[FIX_STEPS * FIX_N], want[FIX_STEPS * FIX_N], got[FIX_N];
    char tn[128];
    snprintf(tn, sizeof tn, "%s.w0", name);
    ck_assert_msg(pb_st_read_f32(st, tn, w0, FIX_N, &e) == 0, "%s", e.msg);
    snprintf(tn, sizeof tn, "%s.grads", name);
    ck_assert_msg(pb_st_read_f32(st, tn, grads, FIX_STEPS * FIX_N, &e) == 0, "%s", e.msg);
    snprintf(tn, sizeof tn, "%s.w", name);
    ck_assert_msg(pb_st_read_f32(st, tn, want, FIX_STEPS * FIX_N, &e) == 0, "%s", e.msg);

    struct pb_backend *be = pb_backend_cpu_create(1, &e);
    ck_assert_msg(be != NULL, "%s", e.msg);
    float *w = pb_backend_alloc(be, sizeof w0, PB_MEM_PARAMS, &e);
    float *g = pb_backend_alloc(be, sizeof w0, PB_MEM_GRADS, &e);
    ck_assert_msg(w && g, "%s", e.msg);
    be->ops->upload(be, w, w0, sizeof w0);
    struct pb_optim o;
    ck_assert_msg(pb_optim_init(&o, be, &cfg, FIX_N, &e) == 0, "%s: %s", name, e.msg);

    int64_t worst = 0;
    for (int k = 0; k < FIX_STEPS; k++) {
        pb_optim_set_epoch(&o, k);
        be->ops->upload(be, g, grads + (size_t)k * FIX_N, sizeof w0);
        pb_optim_step(&o, be, w, g);
        ck_assert_int_eq(o.t, k + 1);
        be->ops->download(be, got, w, sizeof got);
        const float *ref = want + (size_t)k * FIX_N;
        for (int i = 0; i < FIX_N; i++) {
            int64_t d = ulp_distance(got[i], ref[i]);
            worst = d > worst ? d : worst;
        }
        /* Same kernels, same op order, same float rounding of the Python-double
         * scalars as torch's CPU kernels: the trajectories agree bit for bit (measured
         * 0 ulp), NAdam's to 1 ulp: PyPI's torch 2.x takes square roots from MKL's
         * vector math, within 1 ulp but not always the nearest float (161 of 1000
         * random inputs differ from IEEE sqrt, measured), where pipebench's sqrtf is
         * IEEE; every other op of its step matches torch's bits. rtol 2·FLT_EPSILON
         * allows 2 ulp (and a different libm pow()); the atol only keeps 0 / 0 out of
         * the ratio. */
        snprintf(tn, sizeof tn, "%s after step %d", name, k + 1);
        pb_assert_close(tn, got, ref, FIX_N, 2 * FLT_EPSILON, 1e-30);
    }
    pb_optim_finish(&o, be);
    ck_assert_uint_eq(be->mem_cur[PB_MEM_OPTSTATE], 0);
    pb_backend_free(be, w);
    pb_backend_free(be, g);
    pb_backend_destroy(be);
    return worst;
}

/* Every trajectory of a fixture file; `want` configurations in it. */
static void run_fixture(const char *file, int want)
{
    struct pb_safetensors st;
    pb_load_fixture(&st, file);
    ck_assert_msg(st.metadata != NULL, "%s has no metadata", file);
    cJSON *meta = cJSON_Parse(st.metadata);
    ck_assert_msg(meta != NULL, "%s: metadata is not JSON", file);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(meta, "n");
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(meta, "steps");
    const cJSON *configs = cJSON_GetObjectItemCaseSensitive(meta, "configs");
    ck_assert(cJSON_IsString(n) && atoi(n->valuestring) == FIX_N);
    ck_assert(cJSON_IsString(steps) && atoi(steps->valuestring) == FIX_STEPS);
    ck_assert(cJSON_IsString(configs));
    char list[1024], *save = NULL;
    ck_assert(strlen(configs->valuestring) < sizeof list);
    strcpy(list, configs->valuestring);
    int count = 0;
    for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(meta, name);
        ck_assert_msg(cJSON_IsString(desc), "%s: no description of %s", file, name);
        int64_t worst = run_trajectory(&st, name, desc->valuestring);
        printf("optim: %-18s max %lld ulp from torch over %d steps\n", name, (long long)worst,
               FIX_STEPS);
        count++;
    }
    ck_assert_int_eq(count, want);
    cJSON_Delete(meta);
    pb_st_finish(&st);
}

START_TEST(test_torch_trajectories)
{
    run_fixture("optim.safetensors", 13);
}
END_TEST

/* torch 2.x's NAdam with decoupled_weight_decay=True: defaults with a decay, PipeNAG's
 * β1 = 0.99 and lr 3e-4, no decay, β1 < 0.5 (lerp's other branch), a multi-step rate */
START_TEST(test_torch2_nadam)
{
    run_fixture("nadam.safetensors", 5);
}
END_TEST

/* semantics §4.11, PipeMare's rescheduling worked by hand: τ = 3, K = 4, lr 0.1; step t
 * (0-based) runs at 0.1 / 3^(1 − min((t+1)/4, 1)): 0.1 / 3^0.75 = 0.1 / 2.2795070569547775,
 * 0.1 / √3 = 0.1 / 1.7320508075688772, 0.1 / 3^0.25 = 0.1 / 1.3160740129524924, then 0.1
 * from step 3 on. Plain SGD from W = 1 with g = 1 takes exactly those steps (one float
 * add each). After an epoch boundary of a multi-step schedule the base rate is the
 * epoch's; a delay of 1, or no length, leaves the rate alone. */
START_TEST(test_pipemare_rates)
{
    static const double divisor[6] = {2.2795070569547775, 1.7320508075688772,
                                      1.3160740129524924, 1, 1, 1};
    static const double rate[6] = {0.043869133765083085, 0.05773502691896258,
                                   0.07598356856515927, 0.1, 0.1, 0.1};
    struct pb_err e;
    struct pb_optim_cfg cfg;
    ck_assert_int_eq(pb_optim_cfg_from_name(&cfg, "sgd", &e), 0);
    cfg.lr = 0.1f;
    cfg.lr_delay = 3;
    cfg.lr_reschedule = 4;
    for (int t = 0; t < 6; t++)
        ck_assert_msg(fabs(pb_optim_lr_divisor(&cfg, t) - divisor[t]) <= 1e-15 * divisor[t],
                      "step %d: divisor %.17g, by hand %.17g", t,
                      pb_optim_lr_divisor(&cfg, t), divisor[t]);
    struct pb_backend *be = pb_backend_cpu_create(1, &e);
    ck_assert_msg(be != NULL, "%s", e.msg);
    enum { n = 3 };
    const float ones[n] = {1, 1, 1};
    float *w = pb_backend_alloc(be, sizeof ones, PB_MEM_PARAMS, &e);
    float *g = pb_backend_alloc(be, sizeof ones, PB_MEM_GRADS, &e);
    ck_assert_msg(w && g, "%s", e.msg);
    be->ops->upload(be, w, ones, sizeof ones);
    struct pb_optim o;
    ck_assert_msg(pb_optim_init(&o, be, &cfg, n, &e) == 0, "%s", e.msg);
    float want = 1.0f, got[n];
    for (int t = 0; t < 6; t++) {
        be->ops->upload(be, g, ones, sizeof ones);
        pb_optim_step(&o, be, w, g);
        struct pb_optim_coef c;
        pb_optim_coef_init(&c, &o);
        ck_assert_msg(c.neg_lr == (float)-rate[t], "step %d: rate %.9g, by hand %.9g", t,
                      -(double)c.neg_lr, rate[t]);
        want += (float)-rate[t];
        be->ops->download(be, got, w, sizeof got);
        for (int i = 0; i < n; i++)
            ck_assert_msg(got[i] == want, "step %d: W = %.9g, by hand %.9g", t, (double)got[i],
                          (double)want);
    }
    /* the multi-step rate of the epoch is the base: 0.1·0.5 at step 1, divided by √3 */
    pb_optim_finish(&o, be);
    cfg.n_lr_steps = 1;
    cfg.lr_steps[0] = 1;
    cfg.lr_gamma = 0.5f;
    ck_assert_msg(pb_optim_init(&o, be, &cfg, n, &e) == 0, "%s", e.msg);
    for (int t = 0; t < 2; t++) {
        pb_optim_set_epoch(&o, t);
        pb_optim_step(&o, be, w, g);
    }
    struct pb_optim_coef c;
    pb_optim_coef_init(&c, &o);
    ck_assert_msg(c.neg_lr == (float)-(0.05 / 1.7320508075688772), "rate %.9g", -(double)c.neg_lr);
    pb_optim_finish(&o, be);
    /* no rescheduling: a delay of 0 or 1 (the last stages), or no length */
    int delays[3] = {0, 1, 3};
    long lengths[3] = {4, 4, 0};
    for (int i = 0; i < 3; i++) {
        cfg.lr_delay = delays[i];
        cfg.lr_reschedule = lengths[i];
        ck_assert(pb_optim_lr_divisor(&cfg, 0) == 1.0);
    }
    pb_backend_free(be, w);
    pb_backend_free(be, g);
    pb_backend_destroy(be);
}
END_TEST

START_TEST(test_from_name)
{
    struct pb_optim_cfg c;
    struct pb_err e;
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "sgd", &e), 0);
    ck_assert(c.kind == PB_OPT_SGD && c.momentum == 0.0f && c.lr == 0.01f);
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "sgdm", &e), 0);
    ck_assert(c.kind == PB_OPT_SGD && c.momentum == 0.9f && c.dampening == 0.0f && !c.nesterov);
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "adam", &e), 0);
    ck_assert(c.kind == PB_OPT_ADAM && c.lr == 1e-3f && c.beta1 == 0.9f && c.beta2 == 0.999f &&
              c.eps == 1e-8f && c.weight_decay == 0.0f);
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "adamw", &e), 0);
    ck_assert(c.kind == PB_OPT_ADAMW && c.weight_decay == 1e-2f);
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "rmsprop", &e), 0);
    ck_assert(c.kind == PB_OPT_RMSPROP && c.lr == 0.01f && c.alpha == 0.99f && c.eps == 1e-8f);
    /* torch 2.x NAdam's defaults */
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "nadam", &e), 0);
    ck_assert(c.kind == PB_OPT_NADAM && c.lr == 2e-3f && c.beta1 == 0.9f && c.beta2 == 0.999f &&
              c.eps == 1e-8f && c.weight_decay == 0.0f && c.momentum_decay == 4e-3f);
    for (int k = 0; k < PB_OPT_NKINDS; k++) {
        ck_assert_int_eq(pb_optim_cfg_from_name(&c, pb_optim_kind_name(k), &e), 0);
        ck_assert_int_eq(c.kind, k);
        ck_assert_int_eq(pb_optim_cfg_check(&c, &e), 0);
    }
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "adagrad", &e), -1);
    ck_assert_msg(strstr(e.msg, "'adagrad'") &&
                  strstr(e.msg, "sgd, sgdm, adam, adamw, rmsprop, nadam"),
                  "message: %s", e.msg);
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "SGD", &e), -1);
}
END_TEST

struct bad_case {
    const char *optimizer;
    void (*set)(struct pb_optim_cfg *c);
    const char *message;  /* expected substring */
};

static void neg_lr(struct pb_optim_cfg *c) { c->lr = -0.1f; }
static void zero_lr(struct pb_optim_cfg *c) { c->lr = 0.0f; }
static void nan_lr(struct pb_optim_cfg *c) { c->lr = NAN; }
static void mom_one(struct pb_optim_cfg *c) { c->momentum = 1.0f; }
static void mom_neg(struct pb_optim_cfg *c) { c->momentum = -0.5f; }
static void damp_big(struct pb_optim_cfg *c) { c->dampening = 1.5f; }
static void nest_nomom(struct pb_optim_cfg *c) { c->nesterov = true; c->momentum = 0.0f; }
static void nest_damp(struct pb_optim_cfg *c) { c->nesterov = true; c->dampening = 0.1f; }
static void beta1_one(struct pb_optim_cfg *c) { c->beta1 = 1.0f; }
static void beta2_neg(struct pb_optim_cfg *c) { c->beta2 = -0.5f; }
static void eps_zero(struct pb_optim_cfg *c) { c->eps = 0.0f; }
static void eps_neg(struct pb_optim_cfg *c) { c->eps = -1e-8f; }
static void alpha_one(struct pb_optim_cfg *c) { c->alpha = 1.0f; }
static void wd_neg(struct pb_optim_cfg *c) { c->weight_decay = -1e-4f; }
static void gamma_zero(struct pb_optim_cfg *c) { c->n_lr_steps = 1; c->lr_steps[0] = 3; c->lr_gamma = 0.0f; }
static void steps_unsorted(struct pb_optim_cfg *c)
{
    c->n_lr_steps = 2;
    c->lr_steps[0] = 20;
    c->lr_steps[1] = 10;
}
static void steps_negative(struct pb_optim_cfg *c) { c->n_lr_steps = 1; c->lr_steps[0] = -1; }
static void steps_many(struct pb_optim_cfg *c) { c->n_lr_steps = PB_LR_MAX_STEPS + 1; }
static void kind_bad(struct pb_optim_cfg *c) { c->kind = (enum pb_optim_kind)99; }
static void warmup_neg(struct pb_optim_cfg *c) { c->lr_warmup = -1; }
static void cosine_steps(struct pb_optim_cfg *c)
{
    c->lr_cosine = true;
    c->n_lr_steps = 1;
    c->lr_steps[0] = 3;
}
static void clip_neg(struct pb_optim_cfg *c) { c->clip_grad = -1.0f; }
static void clip_inf(struct pb_optim_cfg *c) { c->clip_grad = INFINITY; }
static void psi_neg(struct pb_optim_cfg *c) { c->momentum_decay = -0.004f; }
static void psi_inf(struct pb_optim_cfg *c) { c->momentum_decay = INFINITY; }

static const struct bad_case bad_cases[] = {
    {"sgd", neg_lr, "--lr must be > 0 (got -0.1)"},
    {"adam", zero_lr, "--lr must be > 0 (got 0)"},
    {"rmsprop", nan_lr, "--lr must be > 0"},
    {"sgdm", mom_one, "--momentum must be in [0, 1) (got 1)"},
    {"rmsprop", mom_neg, "--momentum must be in [0, 1) (got -0.5)"},
    {"sgdm", damp_big, "--dampening must be in [0, 1) (got 1.5)"},
    {"sgd", nest_nomom, "--nesterov requires --momentum > 0"},
    {"sgdm", nest_damp, "--nesterov requires --momentum > 0 and --dampening 0"},
    {"adam", beta1_one, "--beta1 must be in [0, 1) (got 1)"},
    {"adamw", beta2_neg, "--beta2 must be in [0, 1) (got -0.5)"},
    {"adam", eps_zero, "--eps must be > 0 (got 0)"},
    {"rmsprop", eps_neg, "--eps must be > 0 (got -1e-08)"},
    {"rmsprop", alpha_one, "--alpha must be in [0, 1) (got 1)"},
    {"adamw", wd_neg, "--weight-decay must be >= 0 (got -0.0001)"},
    {"sgdm", gamma_zero, "--lr-gamma must be > 0 (got 0)"},
    {"sgdm", steps_unsorted, "--lr-steps must be strictly increasing (got 10 after 20)"},
    {"adam", steps_negative, "--lr-steps: epoch -1 is negative"},
    {"adam", steps_many, "--lr-steps takes at most 16 epochs"},
    {"sgd", kind_bad, "unknown optimizer kind 99"},
    {"sgdm", warmup_neg, "--lr-warmup counts epochs: 0 or more (got -1)"},
    {"adam", cosine_steps, "--lr-cosine and --lr-steps are two schedules"},
    {"sgd", clip_neg, "--clip-grad is the largest gradient norm of a stage"},
    {"sgd", clip_inf, "--clip-grad is the largest gradient norm of a stage"},
    {"nadam", beta1_one, "--beta1 must be in [0, 1) (got 1)"},
    {"nadam", beta2_neg, "--beta2 must be in [0, 1) (got -0.5)"},
    {"nadam", eps_zero, "--eps must be > 0 (got 0)"},
    {"nadam", psi_neg, "--momentum-decay must be >= 0 (got -0.004)"},
    {"nadam", psi_inf, "--momentum-decay must be >= 0 (got inf)"},
};

START_TEST(test_cfg_check_bad)
{
    const struct bad_case *bc = &bad_cases[_i];
    struct pb_optim_cfg c;
    struct pb_err e;
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, bc->optimizer, &e), 0);
    ck_assert_int_eq(pb_optim_cfg_check(&c, &e), 0);
    bc->set(&c);
    e.msg[0] = '\0';
    ck_assert_int_eq(pb_optim_cfg_check(&c, &e), -1);
    ck_assert_msg(strstr(e.msg, bc->message) != NULL, "%s case %d: message '%s' lacks '%s'",
                  bc->optimizer, _i, e.msg, bc->message);
}
END_TEST

START_TEST(test_cfg_check_good)
{
    struct pb_optim_cfg c;
    struct pb_err e;
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "sgdm", &e), 0);
    c.nesterov = true;
    c.weight_decay = 5e-4f;
    c.n_lr_steps = 2;
    c.lr_steps[0] = 40;
    c.lr_steps[1] = 60;
    ck_assert_msg(pb_optim_cfg_check(&c, &e) == 0, "%s", e.msg);
    /* fields another optimizer uses are not checked: SGD ignores eps and betas */
    c.eps = 0.0f;
    c.beta1 = 2.0f;
    ck_assert_msg(pb_optim_cfg_check(&c, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "rmsprop", &e), 0);
    c.momentum = 0.9f;
    c.alpha = 0.0f;
    ck_assert_msg(pb_optim_cfg_check(&c, &e) == 0, "%s", e.msg);
}
END_TEST

/* Floats of optimizer state per parameter: only what the configuration needs; the
 * last d only when a predicting schedule will read it (keep_d_last), the last raw
 * gradient likewise (keep_g_last, RMSprop's code form). */
START_TEST(test_state_allocation)
{
    static const struct {
        const char *name;
        float momentum;
        bool keep, keep_g;
        size_t per_param;  /* buffers of n floats */
    } cases[] = {
        {"sgd", 0.0f, true, false, 1},      /* d_last */
        {"sgd", 0.0f, false, false, 0},     /* nothing */
        {"sgdm", 0.9f, true, false, 2},     /* buf, d_last (code form) */
        {"sgdm", 0.9f, false, false, 1},    /* buf */
        {"adam", 0.0f, true, false, 2},     /* m, v */
        {"adamw", 0.0f, false, false, 2},   /* m, v */
        {"rmsprop", 0.0f, true, false, 2},  /* sq, d_last */
        {"rmsprop", 0.0f, false, false, 1}, /* sq */
        {"rmsprop", 0.9f, true, false, 2},  /* sq, buf */
        {"rmsprop", 0.0f, false, true, 2},  /* sq, g_last (code form) */
        {"rmsprop", 0.9f, false, true, 3},  /* sq, buf, g_last (code form) */
        {"sgdm", 0.9f, true, true, 2},      /* buf, d_last: SGD never reads g_last */
        {"nadam", 0.9f, false, false, 2},   /* m, v (Π_t is one float of the optimizer) */
    };
    struct pb_err e;
    struct pb_backend *be = pb_backend_cpu_create(1, &e);
    ck_assert_msg(be != NULL, "%s", e.msg);
    const size_t n = 1001;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct pb_optim_cfg c;
        struct pb_optim o;
        ck_assert_int_eq(pb_optim_cfg_from_name(&c, cases[i].name, &e), 0);
        c.momentum = cases[i].momentum;
        c.keep_d_last = cases[i].keep;
        c.keep_g_last = cases[i].keep_g;
        ck_assert_msg(pb_optim_init(&o, be, &c, n, &e) == 0, "%s", e.msg);
        ck_assert_uint_eq(be->mem_cur[PB_MEM_OPTSTATE], cases[i].per_param * n * sizeof(float));
        ck_assert(o.t == 0 && o.lr == c.lr && o.n == n);
        ck_assert((o.m != NULL) == (c.kind == PB_OPT_ADAM || c.kind == PB_OPT_ADAMW ||
                                    c.kind == PB_OPT_NADAM));
        ck_assert((o.v != NULL) == (o.m != NULL));
        ck_assert((o.sq != NULL) == (c.kind == PB_OPT_RMSPROP));
        ck_assert((o.buf != NULL) == (c.kind != PB_OPT_ADAM && c.kind != PB_OPT_ADAMW &&
                                      c.kind != PB_OPT_NADAM && c.momentum > 0.0f));
        ck_assert((o.g_last != NULL) == (c.kind == PB_OPT_RMSPROP && cases[i].keep_g));
        float *state[] = {o.buf, o.m, o.v, o.sq, o.d_last, o.g_last};
        float host[1001];
        for (size_t s = 0; s < 6; s++) {
            if (!state[s])
                continue;
            be->ops->download(be, host, state[s], sizeof host);
            for (size_t j = 0; j < n; j++)
                ck_assert(host[j] == 0.0f);
        }
        pb_optim_finish(&o, be);
        ck_assert_uint_eq(be->mem_cur[PB_MEM_OPTSTATE], 0);
        ck_assert(!o.buf && !o.m && !o.v && !o.sq && !o.d_last && !o.g_last);
        pb_optim_finish(&o, be);
    }
    struct pb_optim zero;
    memset(&zero, 0, sizeof zero);
    pb_optim_finish(&zero, be);
    pb_optim_finish(&zero, NULL);

    struct pb_optim_cfg c;
    struct pb_optim o;
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "adam", &e), 0);
    c.beta2 = 1.0f;
    ck_assert_int_eq(pb_optim_init(&o, be, &c, n, &e), -1);
    ck_assert_msg(strstr(e.msg, "--beta2") != NULL, "%s", e.msg);
    ck_assert_uint_eq(be->mem_cur[PB_MEM_OPTSTATE], 0);
    pb_backend_destroy(be);
}
END_TEST

START_TEST(test_set_epoch)
{
    struct pb_optim_cfg c;
    struct pb_err e;
    struct pb_optim o;
    memset(&o, 0, sizeof o);
    ck_assert_int_eq(pb_optim_cfg_from_name(&c, "sgdm", &e), 0);
    c.lr = 0.1f;
    c.lr_gamma = 0.5f;
    c.n_lr_steps = 2;
    c.lr_steps[0] = 3;
    c.lr_steps[1] = 5;
    o.cfg = c;
    static const float want[] = {0.1f, 0.1f, 0.1f, 0.05f, 0.05f, 0.025f, 0.025f};
    for (int ep = 0; ep < 7; ep++) {
        pb_optim_set_epoch(&o, ep);
        ck_assert_msg(o.lr == want[ep], "epoch %d: lr %g, expected %g", ep, (double)o.lr,
                      (double)want[ep]);
    }
    o.cfg.n_lr_steps = 0;
    pb_optim_set_epoch(&o, 100);
    ck_assert(o.lr == 0.1f);
    /* torch's MultiStepLR in doubles: 0.01·0.1 = 0.0010000000000000002 -> 0.001f */
    o.cfg.lr = 0.01f;
    o.cfg.lr_gamma = 0.1f;
    o.cfg.n_lr_steps = 1;
    o.cfg.lr_steps[0] = 0;
    pb_optim_set_epoch(&o, 0);
    ck_assert(o.lr == 0.001f);
    /* warm-up over 2 epochs, then a half cosine over the other 4 of 6 (torch's LinearLR
     * then CosineAnnealingLR, T_max 4, stepped per epoch) */
    o.cfg.lr = 0.1f;
    o.cfg.n_lr_steps = 0;
    o.cfg.lr_warmup = 2;
    o.cfg.lr_cosine = true;
    o.cfg.lr_epochs = 6;
    const double cosine[] = {0.05, 0.1, 0.1, 0.1 * (1 + cos(M_PI / 4)) / 2, 0.05,
                             0.1 * (1 + cos(3 * M_PI / 4)) / 2};
    for (int ep = 0; ep < 6; ep++) {
        pb_optim_set_epoch(&o, ep);
        ck_assert_msg(o.lr == (float)cosine[ep], "epoch %d: lr %.9g, expected %.9g", ep,
                      (double)o.lr, cosine[ep]);
    }
    /* warm-up alone, then the constant rate; warm-up before multi-step */
    o.cfg.lr_cosine = false;
    o.cfg.lr_warmup = 4;
    pb_optim_set_epoch(&o, 2);
    ck_assert(o.lr == (float)(0.1 * 3 / 4));
    pb_optim_set_epoch(&o, 5);
    ck_assert(o.lr == 0.1f);
    o.cfg.lr_warmup = 2;
    o.cfg.n_lr_steps = 1;
    o.cfg.lr_steps[0] = 4;
    pb_optim_set_epoch(&o, 4);
    ck_assert(o.lr == (float)(0.1 * 0.1));
}
END_TEST

/* Elementwise over chunks: the step and the prediction give the same bits on 1 and 4
 * threads of the CPU backend (design §2.3), over several chunks plus a tail. */
START_TEST(test_threads_bit_identical)
{
    static const char *const names[] = {"sgdm", "adam", "adamw", "rmsprop"};
    const size_t n = 3 * 16384 + 7;
    float *host[2][3];
    for (int run = 0; run < 2; run++) {
        struct pb_err e;
        struct pb_backend *be = pb_backend_cpu_create(run ? 4 : 1, &e);
        ck_assert_msg(be != NULL, "%s", e.msg);
        struct pb_optim_cfg c;
        ck_assert_int_eq(pb_optim_cfg_from_name(&c, names[_i], &e), 0);
        c.weight_decay = 0.01f;
        c.keep_d_last = true;  /* the prediction below reads it for sgd and rmsprop */
        c.keep_g_last = true;  /* and the code prediction g_last for rmsprop */
        float *w = pb_backend_alloc(be, n * sizeof(float), PB_MEM_PARAMS, &e);
        float *g = pb_backend_alloc(be, n * sizeof(float), PB_MEM_GRADS, &e);
        float *w_hat = pb_backend_alloc(be, n * sizeof(float), PB_MEM_WCOPIES, &e);
        ck_assert_msg(w && g && w_hat, "%s", e.msg);
        float *tmp = pb_xmalloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            tmp[i] = (float)((i * 7919u) % 1000u) / 500.0f - 1.0f;
        be->ops->upload(be, w, tmp, n * sizeof(float));
        struct pb_optim o;
        ck_assert_msg(pb_optim_init(&o, be, &c, n, &e) == 0, "%s", e.msg);
        for (int k = 0; k < 3; k++) {
            for (size_t i = 0; i < n; i++)
                tmp[i] = (float)((i * 104729u + (size_t)k * 31u) % 2000u) / 1000.0f - 1.0f;
            be->ops->upload(be, g, tmp, n * sizeof(float));
            pb_optim_step(&o, be, w, g);
        }
        pb_predict(be, &o, PB_PREDICT_PAPER, 3.0f, w, w_hat);
        host[run][0] = tmp;
        host[run][1] = pb_xmalloc(n * sizeof(float));
        host[run][2] = pb_xmalloc(n * sizeof(float));
        be->ops->download(be, host[run][0], w, n * sizeof(float));
        be->ops->download(be, host[run][1], w_hat, n * sizeof(float));
        pb_predict(be, &o, PB_PREDICT_CODE, 4.0f, w, w_hat);
        be->ops->download(be, host[run][2], w_hat, n * sizeof(float));
        pb_optim_finish(&o, be);
        pb_backend_free(be, w);
        pb_backend_free(be, g);
        pb_backend_free(be, w_hat);
        pb_backend_destroy(be);
    }
    ck_assert_msg(memcmp(host[0][0], host[1][0], n * sizeof(float)) == 0,
                  "%s: W differs between 1 and 4 threads", names[_i]);
    ck_assert_msg(memcmp(host[0][1], host[1][1], n * sizeof(float)) == 0,
                  "%s: the prediction differs between 1 and 4 threads", names[_i]);
    ck_assert_msg(memcmp(host[0][2], host[1][2], n * sizeof(float)) == 0,
                  "%s: the code prediction differs between 1 and 4 threads", names[_i]);
    for (int run = 0; run < 2; run++)
        for (int k = 0; k < 3; k++)
            free(host[run][k]);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("optim");
    TCase *tc = tcase_create("optim");
    tcase_add_test(tc, test_torch_trajectories);
    tcase_add_test(tc, test_torch2_nadam);
    tcase_add_test(tc, test_pipemare_rates);
    tcase_add_test(tc, test_from_name);
    tcase_add_loop_test(tc, test_cfg_check_bad, 0,
                        (int)(sizeof bad_cases / sizeof bad_cases[0]));
    tcase_add_test(tc, test_cfg_check_good);
    tcase_add_test(tc, test_state_allocation);
    tcase_add_test(tc, test_set_epoch);
    tcase_add_loop_test(tc, test_threads_bit_identical, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}
