/* tests/optim/test_code_vectors.c — semantics §3.3, §4.2, §4.3: the `code` variants reproduce the
 * official PipeOptim and SpecTrain code. tests/fixtures/official_code_predictions.txt holds
 * that code's weights and predictions after each of 5 steps (float64); pipebench's
 * optimizer and the prediction forms its schedules emit, through the CPU backend, must
 * match them to float32 precision, and the paper forms must differ where semantics §3.3 says. */
#include <cjson/cJSON.h>
#include <float.h>
#include <string.h>

#include "harness/compute/backend.h"
#include "harness/compute/cpu/cpu_backend.h"
#include "harness/ir/program.h"
#include "harness/optim/optim.h"
#include "predictors/predictor.h"
#include "schedules/registry.h"
#include "tests/support/cli_util.h"
#include "tests/support/test_util.h"

#define VEC_FILE "official_code_predictions.txt"
#define VEC_N 8        /* parameters */
#define VEC_STEPS 5
#define VEC_MAX_PREDS 32  /* prediction lines after one step */
#define VEC_MAX_D 8

/* Tolerance. The reference ran in float64 on the decimal inputs; pipebench rounds the
 * inputs to float32 (≤ 0.5 ulp) and every operation of the steps and of the prediction
 * to float32 (each ≤ 0.5 ulp of its result, about ten per element and step). A float
 * sum a + b is off by a few ulps of |a| + |b|, not of the result, which may cancel near
 * 0 (RMSprop with momentum walks W from 0.5 to −0.016 in 3 steps; one of its Ŵ is 1.1e-5
 * from W = 0.4). So the scale of an element of W_t is the magnitudes its steps summed,
 * |W_0| + Σ_{τ≤t} |W_τ − W_{τ−1}|, and that of Ŵ adds |W_t − Ŵ|, all from the reference;
 * an element may be off by VEC_ULPS·FLT_EPSILON·scale. 8 ulps of the scale leave room
 * for the accumulated roundings of 5 steps and a prediction; the worst seen is printed. */
#define VEC_ULPS 8.0

struct vec_pred {
    char dir;  /* 'F' forward, 'B' backward (SpecTrain) */
    int d, rank, s;
    double w_hat[VEC_N];
};

struct vec_step {
    double w[VEC_N];
    int npred;
    struct vec_pred pred[VEC_MAX_PREDS];
};

struct vec_case {
    char name[64];
    const char *schedule;  /* "pipeoptim" or "spectrain" */
    struct pb_optim_cfg cfg;
    double lr, wd;  /* as the settings give them (float64) */
    int nsteps;
    struct vec_step step[VEC_STEPS];
};

struct vec_file {
    double w0[VEC_N], g[VEC_STEPS][VEC_N];  /* the header's rows W0, g1..g5 */
    double grad[VEC_STEPS][VEC_N];          /* the gradient of each step (align_gradients) */
    int shift;                              /* step t used the header's row g(t + shift) */
    int ncases;
    struct vec_case cases[32];
};

/* Reads VEC_N doubles from text after the prefix's end. */
static void read_row(const char *text, double *out, const char *what)
{
    char *end = (char *)text;
    for (int i = 0; i < VEC_N; i++) {
        char *start = end;
        out[i] = strtod(start, &end);
        ck_assert_msg(end != start, "%s: expected %d numbers in '%s'", what, VEC_N, text);
    }
}

static double json_num(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* "## name  ({json})": the case's optimizer, as torch.optim was given it. */
static void parse_case_head(const char *line, const char *schedule, struct vec_case *c)
{
    ck_assert_msg(schedule != NULL, "case before any '# official ... code' section: %s", line);
    memset(c, 0, sizeof *c);
    c->schedule = schedule;
    ck_assert(sscanf(line, "## %63s", c->name) == 1);
    const char *open = strchr(line, '{'), *close = strrchr(line, '}');
    ck_assert_msg(open && close && close > open, "%s: no settings", c->name);
    char json[512];
    size_t len = (size_t)(close - open) + 1;
    ck_assert(len < sizeof json);
    memcpy(json, open, len);
    json[len] = 0;
    cJSON *o = cJSON_Parse(json);
    ck_assert_msg(o != NULL, "%s: settings are not JSON", c->name);
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
    ck_assert(cJSON_IsString(kind));
    struct pb_err e;
    ck_assert_msg(pb_optim_cfg_from_name(&c->cfg, kind->valuestring, &e) == 0, "%s", e.msg);
    c->lr = json_num(o, "lr", c->cfg.lr);
    c->wd = json_num(o, "wd", c->cfg.weight_decay);
    c->cfg.lr = (float)c->lr;
    c->cfg.weight_decay = (float)c->wd;
    c->cfg.momentum = (float)json_num(o, "momentum", c->cfg.momentum);
    c->cfg.dampening = (float)json_num(o, "dampening", c->cfg.dampening);
    c->cfg.beta1 = (float)json_num(o, "beta1", c->cfg.beta1);
    c->cfg.beta2 = (float)json_num(o, "beta2", c->cfg.beta2);
    c->cfg.eps = (float)json_num(o, "eps", c->cfg.eps);
    c->cfg.alpha = (float)json_num(o, "alpha", c->cfg.alpha);
    ck_assert_msg(pb_optim_cfg_check(&c->cfg, &e) == 0, "%s: %s", c->name, e.msg);
    cJSON_Delete(o);
}

static void parse_file(struct vec_file *f)
{
    const char *path = pb_fixture_path(VEC_FILE);
    FILE *in = fopen(path, "r");
    ck_assert_msg(in != NULL, "cannot read %s", path);
    memset(f, 0, sizeof *f);
    char line[4096];
    const char *schedule = NULL;
    bool have_w0 = false;
    int have_g = 0;
    struct vec_case *c = NULL;
    while (fgets(line, sizeof line, in)) {
        int t, n;
        struct vec_pred p;
        if (!strncmp(line, "## ", 3)) {
            ck_assert(f->ncases < (int)(sizeof f->cases / sizeof *f->cases));
            c = &f->cases[f->ncases++];
            parse_case_head(line, schedule, c);
        } else if (!strncmp(line, "# official pipeoptim code", 25)) {
            schedule = "pipeoptim";
        } else if (!strncmp(line, "# official spectrain code", 25)) {
            schedule = "spectrain";
        } else if (!strncmp(line, "# W0:", 5)) {
            read_row(line + 5, f->w0, "W0");
            have_w0 = true;
        } else if (sscanf(line, "# g%d:%n", &t, &n) == 1) {
            ck_assert(t >= 1 && t <= VEC_STEPS);
            read_row(line + n, f->g[t - 1], "gradient");
            have_g++;
        } else if (sscanf(line, "t=%d W =%n", &t, &n) == 1) {
            ck_assert_msg(c && t == c->nsteps + 1 && t <= VEC_STEPS, "step %d out of order", t);
            read_row(line + n, c->step[t - 1].w, c->name);
            c->nsteps = t;
        } else if (sscanf(line, " %c D=%d rank=%d s=%d W_hat =%n", &p.dir, &p.d, &p.rank, &p.s,
                          &n) == 4) {
            ck_assert_msg(c && c->nsteps > 0, "prediction before its step");
            struct vec_step *st = &c->step[c->nsteps - 1];
            ck_assert(st->npred < VEC_MAX_PREDS);
            ck_assert(p.dir == 'F' || p.dir == 'B');
            ck_assert(p.d >= 1 && p.d <= VEC_MAX_D && p.rank >= 0 && p.rank < p.d);
            read_row(line + n, p.w_hat, c->name);
            st->pred[st->npred++] = p;
        }
    }
    fclose(in);
    ck_assert_msg(have_w0 && have_g == VEC_STEPS, "%s: no W0 or gradients", VEC_FILE);
}

/* The gradients the file's runs used. The header lists g1..g5, but its data were made
 * with other rows: as printed, g1 repeats W0 and step t used row g(t+1), the 5th step's
 * gradient being absent. Plain SGD inverts exactly (semantics §2.1: W_t = W_{t−1} −
 * lr·(g_t + λ·W_{t−1})), so the plain-SGD case's trajectory gives every step's gradient
 * in float64 (to ~1e-11 relative: W moves ~1e-5 a step); the header rows that match it
 * to their 9 printed digits (1e-8 relative) are used as printed, and the alignment must
 * be the header's or this one-row shift. The plain-SGD case's own W at the step whose
 * gradient it gave is thus not independent evidence; the other cases' are. */
static void align_gradients(struct vec_file *f)
{
    const struct vec_case *c = NULL;
    for (int i = 0; i < f->ncases && !c; i++)
        if (f->cases[i].cfg.kind == PB_OPT_SGD && f->cases[i].cfg.momentum == 0.0f)
            c = &f->cases[i];
    ck_assert_msg(c != NULL, "%s: no plain-SGD case to read the gradients from", VEC_FILE);
    double lr = c->lr, wd = c->wd, derived[VEC_STEPS][VEC_N];
    for (int t = 0; t < VEC_STEPS; t++) {
        const double *prev = t ? c->step[t - 1].w : f->w0;
        for (int i = 0; i < VEC_N; i++)
            derived[t][i] = (prev[i] - c->step[t].w[i]) / lr - wd * prev[i];
    }
    f->shift = -1;
    for (int shift = 0; shift <= 1 && f->shift < 0; shift++) {
        bool match = true;
        for (int t = 0; t + shift < VEC_STEPS; t++)
            for (int i = 0; i < VEC_N; i++)
                match &= fabs(f->g[t + shift][i] - derived[t][i]) <= 1e-8 * fabs(derived[t][i]);
        if (match)
            f->shift = shift;
    }
    ck_assert_msg(f->shift >= 0, "%s: the header's gradients are not those of its runs",
                  VEC_FILE);
    for (int t = 0; t < VEC_STEPS; t++)
        for (int i = 0; i < VEC_N; i++)
            f->grad[t][i] = t + f->shift < VEC_STEPS ? f->g[t + f->shift][i] : derived[t][i];
}

/* The first F or B op of a stage's program. */
static const struct pb_op *first_op(const struct pb_program *p, char dir)
{
    enum pb_op_kind k = dir == 'F' ? PB_OP_F : PB_OP_B;
    for (int i = 0; i < p->n; i++)
        if (p->ops[i].kind == k)
            return &p->ops[i];
    ck_abort_msg("no %c op in the program of stage %d", dir, p->device);
    return NULL;
}

/* Worst error of got against want in units of FLT_EPSILON·(path + |w − want|) (see
 * VEC_ULPS); path [VEC_N] is W_t's scale, w [VEC_N] the reference W_t. */
static double err_ulps(const float *got, const double *want, const double *w, const double *path)
{
    double worst = 0;
    for (int i = 0; i < VEC_N; i++) {
        double scale = FLT_EPSILON * (path[i] + fabs(w[i] - want[i]));
        double r = fabs((double)got[i] - want[i]) / (scale > 0 ? scale : FLT_MIN);
        worst = r > worst ? r : worst;
    }
    return worst;
}

/* semantics §3, §4.3: whether the paper's ΔW (at the same s) differs from the code's. */
static bool paper_differs(const struct vec_case *c, char dir)
{
    const struct pb_optim_cfg *g = &c->cfg;
    switch (g->kind) {
    case PB_OPT_SGD:
        /* u > 0: buf against u·buf + (1−τ)·d_last (PipeOptim), u·buf + d_last and u·buf
         * (SpecTrain); u = 0: d_last in every forward form, 0 in SpecTrain's backward */
        return g->momentum > 0.0f || dir == 'B';
    case PB_OPT_ADAM:
    case PB_OPT_ADAMW:
        return g->eps != 1e-8f;  /* the code's ε is 1e-8 */
    default:
        /* d_last or buf against the raw g_last: equal only without decay and momentum */
        return g->weight_decay != 0.0f || g->momentum != 0.0f;
    }
}

struct vec_stats {
    int preds, w_checks;
    double worst_w, worst_pred;
};

static void run_case(const struct vec_file *f, const struct vec_case *c, struct vec_stats *st)
{
    struct pb_err e;
    /* the programs of every D the case lists, as `--schedule S --variant code` builds them */
    struct pb_program progs[VEC_MAX_D + 1][VEC_MAX_D];
    bool built[VEC_MAX_D + 1] = {false};
    struct pb_optim_cfg cfg = c->cfg;
    const struct pb_schedule *sch = pb_schedule_find(c->schedule, &e);
    ck_assert_msg(sch != NULL, "%s", e.msg);
    for (int t = 0; t < c->nsteps; t++)
        for (int i = 0; i < c->step[t].npred; i++) {
            int d = c->step[t].pred[i].d;
            if (built[d])
                continue;
            struct pb_pipe p = {.stages = d, .length = 2 * d, .microbatches = d,
                                .optimizer = cfg.kind, .variant = "code"};
            ck_assert_msg(pb_programs_build(sch, &p, progs[d], &e) == 0, "%s: %s", c->name,
                          e.msg);
            built[d] = true;
            /* what run_setup keeps: the copies the predicting ops' forms read */
            for (int k = 0; k < d; k++)
                for (int j = 0; j < progs[d][k].n; j++) {
                    const struct pb_op *op = &progs[d][k].ops[j];
                    if (op->wsrc != PB_W_PREDICTED)
                        continue;
                    ck_assert_msg(pb_predictor_check(cfg.kind, &cfg, op->pform, &e) == 0,
                                  "%s: %s", c->name, e.msg);
                    cfg.keep_d_last |= pb_predictor_reads_d_last(&cfg, op->pform);
                    cfg.keep_g_last |= pb_predictor_reads_g_last(&cfg, op->pform);
                }
        }

    /* the paper form, compared below, may read another copy (RMSprop: d_last) */
    cfg.keep_d_last |= pb_predictor_reads_d_last(&cfg, PB_PREDICT_PAPER);
    cfg.keep_g_last |= pb_predictor_reads_g_last(&cfg, PB_PREDICT_PAPER);

    struct pb_backend *be = pb_backend_cpu_create(1, &e);
    ck_assert_msg(be != NULL, "%s", e.msg);
    float *w = pb_backend_alloc(be, VEC_N * sizeof(float), PB_MEM_PARAMS, &e);
    float *g = pb_backend_alloc(be, VEC_N * sizeof(float), PB_MEM_GRADS, &e);
    float *w_hat = pb_backend_alloc(be, VEC_N * sizeof(float), PB_MEM_WCOPIES, &e);
    ck_assert_msg(w && g && w_hat, "%s", e.msg);
    float host[VEC_N], got[VEC_N], paper[VEC_N];
    double path[VEC_N];  /* W_t's scale: |W_0| + Σ |W_τ − W_{τ−1}| */
    for (int i = 0; i < VEC_N; i++) {
        host[i] = (float)f->w0[i];
        path[i] = fabs(f->w0[i]);
    }
    be->ops->upload(be, w, host, sizeof host);
    struct pb_optim o;
    ck_assert_msg(pb_optim_init(&o, be, &cfg, VEC_N, &e) == 0, "%s: %s", c->name, e.msg);

    bool differs[2] = {false, false}, equal[2] = {true, true}, seen[2] = {false, false};
    char what[160];
    for (int t = 0; t < c->nsteps; t++) {
        const struct vec_step *vs = &c->step[t];
        for (int i = 0; i < VEC_N; i++)
            host[i] = (float)f->grad[t][i];
        be->ops->upload(be, g, host, sizeof host);
        pb_optim_step(&o, be, w, g);
        be->ops->download(be, got, w, sizeof got);
        for (int i = 0; i < VEC_N; i++)
            path[i] += fabs(vs->w[i] - (t ? c->step[t - 1].w[i] : f->w0[i]));
        double ew = err_ulps(got, vs->w, vs->w, path);
        st->worst_w = ew > st->worst_w ? ew : st->worst_w;
        st->w_checks++;
        ck_assert_msg(ew <= VEC_ULPS, "%s t=%d: W off by %.1f ulps of the tolerance scale",
                      c->name, t + 1, ew);
        for (int i = 0; i < vs->npred; i++) {
            const struct vec_pred *p = &vs->pred[i];
            const struct pb_op *op = first_op(&progs[p->d][p->rank], p->dir);
            snprintf(what, sizeof what, "%s t=%d %c D=%d rank=%d s=%d", c->name, t + 1, p->dir,
                     p->d, p->rank, p->s);
            ck_assert_msg(op->s == p->s || (op->wsrc == PB_W_LATEST && p->s == 0),
                          "%s: the schedule looks %d ahead", what, (int)op->s);
            if (op->wsrc == PB_W_PREDICTED)
                pb_predict(be, &o, op->pform, (float)op->s, w, w_hat);
            else
                be->ops->copy(be, w_hat, w, VEC_N * sizeof(float));
            ck_assert_msg(op->wsrc == PB_W_PREDICTED || op->wsrc == PB_W_LATEST, "%s: wsrc %d",
                          what, (int)op->wsrc);
            be->ops->download(be, got, w_hat, sizeof got);
            double ep = err_ulps(got, p->w_hat, vs->w, path);
            st->worst_pred = ep > st->worst_pred ? ep : st->worst_pred;
            st->preds++;
            ck_assert_msg(ep <= VEC_ULPS, "%s: Ŵ off by %.1f ulps of the tolerance scale", what,
                          ep);
            if (p->s == 0)
                continue;
            /* the paper form at the same look-ahead */
            int di = p->dir == 'B';
            pb_predict(be, &o, PB_PREDICT_PAPER, (float)p->s, w, w_hat);
            be->ops->download(be, paper, w_hat, sizeof paper);
            seen[di] = true;
            differs[di] |= err_ulps(paper, p->w_hat, vs->w, path) > VEC_ULPS;
            equal[di] &= memcmp(paper, got, sizeof got) == 0;
        }
    }
    for (int di = 0; di < 2; di++) {
        if (!seen[di])
            continue;
        char dir = di ? 'B' : 'F';
        if (paper_differs(c, dir))
            ck_assert_msg(differs[di], "%s %c: the paper form matches the official code, "
                                       "semantics §3.3 says the forms differ", c->name, dir);
        else
            ck_assert_msg(equal[di], "%s %c: the paper form differs from the code form, "
                                     "semantics §3.3 says they agree", c->name, dir);
    }
    pb_optim_finish(&o, be);
    pb_backend_free(be, w);
    pb_backend_free(be, g);
    pb_backend_free(be, w_hat);
    pb_backend_destroy(be);
    for (int d = 1; d <= VEC_MAX_D; d++)
        if (built[d])
            pb_programs_finish(progs[d], d);
}

START_TEST(test_official_code_vectors)
{
    static struct vec_file f;
    parse_file(&f);
    align_gradients(&f);
    if (f.shift)
        printf("code_vectors: %s: step t used the header's gradient row g(t+%d); the last "
               "step's gradient is read off the plain-SGD case\n", VEC_FILE, f.shift);
    struct vec_stats st = {0};
    int spectrain = 0;
    for (int i = 0; i < f.ncases; i++) {
        ck_assert_msg(f.cases[i].nsteps == VEC_STEPS, "%s: %d steps", f.cases[i].name,
                      f.cases[i].nsteps);
        run_case(&f, &f.cases[i], &st);
        spectrain += !strcmp(f.cases[i].schedule, "spectrain");
    }
    printf("code_vectors: %d cases (%d SpecTrain), %d W and %d predictions checked; worst "
           "%.2f (W), %.2f (Ŵ) ulps of the tolerance scale, tolerance %.0f\n",
           f.ncases, spectrain, st.w_checks, st.preds, st.worst_w, st.worst_pred, VEC_ULPS);
    /* the whole file: 11 PipeOptim and 4 SpecTrain cases, 700 prediction lines */
    ck_assert_int_eq(f.ncases, 15);
    ck_assert_int_eq(spectrain, 4);
    ck_assert_int_eq(st.w_checks, 15 * VEC_STEPS);
    ck_assert_int_eq(st.preds, 700);
}
END_TEST

/* semantics §4.3: `--schedule spectrain --variant code` runs with plain SGD (the forward
 * predicts from d_last, the backward reads W unchanged), and its backward differs from
 * the paper form's (which predicts with d_last): stages 2 and 3 of 4 predict at B. */
START_TEST(test_spectrain_code_plain_sgd_runs)
{
    char dir[64], out[8192];
    cli_scratch(dir, sizeof dir, "codevec");
    const char *common = "run --quiet --model lenet --dataset synthetic --stages 4 "
                         "--microbatch-size 8 --limit-train 128 --limit-val 32 --epochs 1 "
                         "--threads 1 --db r.db --schedule spectrain --optimizer sgd";
    int rc = cli_run(dir, out, sizeof out, "%s --variant code --save code.safetensors", common);
    ck_assert_msg(rc == 0, "spectrain code sgd: exit %d: %s", rc, out);
    rc = cli_run(dir, out, sizeof out, "%s --save paper.safetensors", common);
    ck_assert_msg(rc == 0, "spectrain sgd: exit %d: %s", rc, out);
    char a[160], b[160];
    snprintf(a, sizeof a, "%s/code.safetensors", dir);
    snprintf(b, sizeof b, "%s/paper.safetensors", dir);
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    ck_assert_msg(fa && fb, "no checkpoints in %s", dir);
    bool same = true;
    int ca, cb;
    do {
        ca = fgetc(fa);
        cb = fgetc(fb);
        same &= ca == cb;
    } while (ca != EOF && cb != EOF);
    fclose(fa);
    fclose(fb);
    ck_assert_msg(!same, "the code variant trained exactly as the paper form");
    /* SpecTrain stays SGD/SGDM only */
    rc = cli_run(dir, out, sizeof out, "run --quiet --model lenet --dataset synthetic "
                 "--stages 4 --limit-train 64 --epochs 1 --db r.db --schedule spectrain "
                 "--variant code --optimizer adam");
    ck_assert_msg(rc != 0 && strstr(out, "SGD or SGDM only"), "adam: exit %d: %s", rc, out);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("code_vectors");
    TCase *tc = tcase_create("code_vectors");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_official_code_vectors);
    tcase_add_test(tc, test_spectrain_code_plain_sgd_runs);
    suite_add_tcase(s, tc);
    return s;
}
