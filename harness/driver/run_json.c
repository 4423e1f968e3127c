/* harness/driver/run_json.c — a run's configuration as the JSON the runs table records
 * (run_json.h), and that JSON read straight back into a struct pb_run_cfg, key by key,
 * so `pipebench resume` continues a run with exactly the options it was started with. */
#include "harness/driver/run_json.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/args.h"
#include "harness/driver/placement.h"
#include "harness/driver/run_flags.h"
#include "schedules/registry.h"

/* The shortest decimal that reads back as f (0.01f is stored as 0.01, not as
 * 0.00999999977648258), so the configuration reads as it was typed. */
double pb_run_decimal(float f)
{
    char buf[32];
    for (int prec = 6; prec < 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if ((float)strtod(buf, NULL) == f)
            return strtod(buf, NULL);
    }
    snprintf(buf, sizeof buf, "%.9g", (double)f);
    return strtod(buf, NULL);
}

/* The largest integer every JSON reader (SQLite, pandas, JavaScript: IEEE doubles) holds
 * exactly: seeds up to it are recorded as JSON integers, larger ones as decimal strings. */
#define SEED_EXACT_MAX (UINT64_C(1) << 53)

/* The seed into o: an integer, its decimal digits written as they are (cJSON would print
 * 1e+15), or a decimal string where a double cannot hold it, and always a string with
 * string_seed (the form before schema 9, kept for the resume states written then). */
static void add_seed(cJSON *o, uint64_t seed, bool string_seed)
{
    char text[32];
    snprintf(text, sizeof text, "%llu", (unsigned long long)seed);
    if (string_seed || seed > SEED_EXACT_MAX)
        cJSON_AddStringToObject(o, "seed", text);
    else
        cJSON_AddRawToObject(o, "seed", text);
}

/* c as JSON with its preset p (NULL: as given), whether the paper cut applies, and its
 * placement as recorded; string_seed: the seed as a string (add_seed). */
static char *cfg_json(const struct pb_run_cfg *c, const struct pb_preset *p, bool paper_cut,
                      const char *devices, bool string_seed)
{
    cJSON *o = cJSON_CreateObject();
    const struct pb_optim_cfg *oc = &c->optim;
    cJSON_AddStringToObject(o, "model", c->model);
    /* the preset and partition the run takes (resolved, so leaving the default out and
     * naming it give the same configuration; a preset that does not resolve is kept as
     * given, so the record reads back to itself and the run's checks still refuse it) */
    cJSON_AddStringToObject(o, "preset", p ? p->name : c->preset ? c->preset : "");
    char *partition = pb_run_partition_name(c, paper_cut);
    cJSON_AddStringToObject(o, "partition", partition);
    free(partition);
    cJSON_AddStringToObject(o, "dataset", c->dataset ? c->dataset : "");
    cJSON_AddStringToObject(o, "data_dir", c->data_dir ? c->data_dir : "");
    cJSON_AddStringToObject(o, "schedule", c->schedule);
    cJSON_AddStringToObject(o, "variant", c->variant ? c->variant : "");
    cJSON_AddStringToObject(o, "executor", c->executor);
    cJSON_AddStringToObject(o, "backend", c->backend);
    cJSON_AddStringToObject(o, "optimizer", c->optimizer);
    cJSON_AddNumberToObject(o, "lr", pb_run_decimal(oc->lr));
    cJSON_AddNumberToObject(o, "momentum", pb_run_decimal(oc->momentum));
    cJSON_AddNumberToObject(o, "dampening", pb_run_decimal(oc->dampening));
    cJSON_AddBoolToObject(o, "nesterov", oc->nesterov);
    cJSON_AddNumberToObject(o, "weight_decay", pb_run_decimal(oc->weight_decay));
    cJSON_AddNumberToObject(o, "beta1", pb_run_decimal(oc->beta1));
    cJSON_AddNumberToObject(o, "beta2", pb_run_decimal(oc->beta2));
    cJSON_AddNumberToObject(o, "eps", pb_run_decimal(oc->eps));
    cJSON_AddNumberToObject(o, "alpha", pb_run_decimal(oc->alpha));
    if (oc->kind == PB_OPT_NADAM)  /* NAdam's alone: the others' configurations stay as they were */
        cJSON_AddNumberToObject(o, "momentum_decay", pb_run_decimal(oc->momentum_decay));
    cJSON *steps = cJSON_AddArrayToObject(o, "lr_steps");
    for (int i = 0; i < oc->n_lr_steps; i++)
        cJSON_AddItemToArray(steps, cJSON_CreateNumber(oc->lr_steps[i]));
    cJSON_AddNumberToObject(o, "lr_gamma", pb_run_decimal(oc->lr_gamma));
    /* only when set: runs recorded before they existed keep their identity */
    if (oc->lr_warmup > 0)
        cJSON_AddNumberToObject(o, "lr_warmup", oc->lr_warmup);
    if (oc->lr_cosine)
        cJSON_AddBoolToObject(o, "lr_cosine", true);
    if (oc->clip_grad > 0)
        cJSON_AddNumberToObject(o, "clip_grad", pb_run_decimal(oc->clip_grad));
    const struct pb_schedule *sch = pb_schedule_find(c->schedule, NULL);
    if (sch && sch->lr_delay)  /* a rescheduling schedule's alone (semantics §4.11) */
        cJSON_AddNumberToObject(o, "lr_reschedule_epochs",
                                c->lr_reschedule_epochs ? c->lr_reschedule_epochs
                                                        : PB_LR_RESCHEDULE_EPOCHS);
    cJSON_AddNumberToObject(o, "stages", c->stages);
    if (c->batch > 0)   /* the micro-batch size follows from it and the schedule */
        cJSON_AddNumberToObject(o, "batch", c->batch);
    else
        cJSON_AddNumberToObject(o, "microbatch_size", c->microbatch_size);
    cJSON_AddNumberToObject(o, "microbatches", c->microbatches);
    if (c->chunks > 1)  /* only with chunks: runs recorded before them keep their identity */
        cJSON_AddNumberToObject(o, "chunks", c->chunks);
    cJSON_AddNumberToObject(o, "epochs", c->epochs);
    cJSON_AddNumberToObject(o, "limit_train", c->limit_train);
    cJSON_AddNumberToObject(o, "limit_val", c->limit_val);
    if (c->beam > 0)   /* beside greedy decoding only: older runs keep their identity */
        cJSON_AddNumberToObject(o, "beam", c->beam);
    if (c->tf32)       /* only when on, likewise */
        cJSON_AddBoolToObject(o, "tf32", true);
    if (c->deterministic)
        cJSON_AddBoolToObject(o, "deterministic", true);
    cJSON_AddNumberToObject(o, "threads", c->threads);
    add_seed(o, c->seed, string_seed);
    cJSON_AddBoolToObject(o, "shuffle", c->shuffle);
    cJSON_AddNumberToObject(o, "label_smoothing", pb_run_decimal(c->label_smoothing));
    if (c->synthetic.noise > 0 && c->synthetic.noise != 1)   /* older runs keep their identity */
        cJSON_AddNumberToObject(o, "synthetic_noise", pb_run_decimal(c->synthetic.noise));
    cJSON_AddStringToObject(o, "init", c->init ? c->init : "");
    cJSON_AddStringToObject(o, "save", c->save ? c->save : "");
    cJSON_AddStringToObject(o, "trace_epochs", c->trace_epochs ? c->trace_epochs : "first,last");
    cJSON_AddNumberToObject(o, "trace_mb_lo", c->trace_mb_lo);
    cJSON_AddNumberToObject(o, "trace_mb_hi", c->trace_mb_hi);
    if (c->experiment)
        cJSON_AddStringToObject(o, "experiment", c->experiment);
    cJSON_AddNumberToObject(o, "checkpoint_every", c->checkpoint_every);
    /* last: a configuration recorded before it had none, and reads as all on device 0
     * with the key appended (finished.c) */
    cJSON_AddStringToObject(o, "devices", devices);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* The plan's configuration, the seed as string_seed says (add_seed). */
static char *plan_json(const struct pb_plan *p, bool string_seed)
{
    char *devices = pb_placement_text(p->devices, p->cfg->stages);
    char *s = cfg_json(p->cfg, p->preset, p->paper_cut, devices, string_seed);
    free(devices);
    return s;
}

char *pb_plan_cfg_json(const struct pb_plan *p)
{
    return plan_json(p, false);
}

char *pb_plan_cfg_json_v8(const struct pb_plan *p)
{
    return plan_json(p, true);
}

char *pb_run_cfg_json(const struct pb_run_cfg *c)
{
    const struct pb_workload *w;
    const struct pb_preset *p = NULL;
    bool paper_cut = false;
    if (pb_run_model(c, &w, &p, &paper_cut, NULL))
        p = NULL;
    /* the placement one entry per stage; a list that does not parse is kept as given */
    char *devices = NULL;
    if (c->stages >= 1 && c->stages <= PB_MAX_STAGES) {
        int *dev = pb_xcalloc((size_t)c->stages, sizeof *dev);
        if (!pb_placement_parse(c->devices, c->stages, dev, NULL))
            devices = pb_placement_text(dev, c->stages);
        free(dev);
    }
    char *s = cfg_json(c, p, paper_cut, devices ? devices : c->devices ? c->devices : "0",
                       false);
    free(devices);
    return s;
}

/* ---- back into a configuration ---- */

struct pb_run_json {
    cJSON *root;
};

/* A field of the configuration a key of the JSON goes to: its type ('s' string, 'i' int,
 * 'f' float, 'b' bool, 'u' the seed, 'l' the lr steps) and place. Optimizer fields are
 * set after the optimizer's defaults. */
struct field {
    const char *key;
    char type;
    bool optim;
    void *dst;
};

/* Keys read apart (betas, trace window), or that a resume must not take again (init). */
static bool apart(const char *key)
{
    static const char *const keys[] = {"beta1", "beta2", "trace_mb_lo", "trace_mb_hi", "init",
                                       NULL};
    for (int i = 0; keys[i]; i++)
        if (!strcmp(key, keys[i]))
            return true;
    return false;
}

/* "--weight-decay" of key "weight_decay". */
static void flag_of(const char *key, char *flag, size_t cap)
{
    snprintf(flag, cap, "--%s", key);
    for (char *p = flag; *p; p++)
        *p = *p == '_' ? '-' : *p;
}

static double number(const cJSON *root, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* x as an int in [lo, INT_MAX]; -1 with a message for another number (converting it
 * would be undefined). */
static int whole(const char *key, double x, double lo, int *out, struct pb_err *e)
{
    if (!(x >= lo && x <= INT_MAX) || x != floor(x))
        return pb_err_set(e, "the run's recorded configuration: %s is %g, not a whole number "
                             "between %.0f and %d", key, x, lo, INT_MAX);
    *out = (int)x;
    return 0;
}

static int read_float(const char *key, double x, float *out, struct pb_err *e)
{
    char flag[64];
    flag_of(key, flag, sizeof flag);
    if (!(fabs(x) <= FLT_MAX))
        return pb_err_set(e, "the run's recorded configuration: %s expects a number of "
                             "magnitude at most %g (got '%.15g')", flag, (double)FLT_MAX, x);
    *out = (float)x;
    return 0;
}

static int read_steps(const cJSON *it, struct pb_optim_cfg *o, struct pb_err *e)
{
    int n = 0;
    for (const cJSON *x = it->child; x; x = x->next, n++) {
        if (!cJSON_IsNumber(x))
            return pb_err_set(e, "the run's recorded configuration: %s holds something else "
                                 "than numbers", it->string);
        if (n == PB_LR_MAX_STEPS)
            return pb_err_set(e, "the run's recorded configuration: %s is a list longer than "
                                 "pipebench records (%d)", it->string, PB_LR_MAX_STEPS);
        if (whole(it->string, x->valuedouble, INT_MIN, &o->lr_steps[n], e))
            return -1;
        if (o->lr_steps[n] < 1)
            return pb_err_set(e, "the run's recorded configuration: --lr-steps are epoch counts "
                                 "of at least 1, as torch's MultiStepLR milestones (got %d)",
                              o->lr_steps[n]);
    }
    o->n_lr_steps = n;
    return 0;
}

/* The value of it into f's field. */
/* A seed recorded as a JSON integer (add_seed): whole, 0 to SEED_EXACT_MAX. */
static int read_seed(double v, uint64_t *seed, struct pb_err *e)
{
    if (!(v >= 0 && v <= (double)SEED_EXACT_MAX && v == floor(v)))
        return pb_err_set(e, "the run's recorded configuration: seed is not a whole number "
                          "from 0 to 2^53 (got %.17g)", v);
    *seed = (uint64_t)v;
    return 0;
}

static int read_field(const struct field *f, const cJSON *it, struct pb_err *e)
{
    bool ok = f->type == 's'   ? cJSON_IsString(it)
              : f->type == 'b' ? cJSON_IsBool(it)
              : f->type == 'l' ? cJSON_IsArray(it)
              : f->type == 'u' ? cJSON_IsString(it) || cJSON_IsNumber(it)
                               : cJSON_IsNumber(it);
    if (!ok)
        return pb_err_set(e, "the run's recorded configuration: %s is not %s", it->string,
                          f->type == 's'   ? "a string"
                          : f->type == 'b' ? "true or false"
                          : f->type == 'l' ? "a list of numbers"
                          : f->type == 'u' ? "a non-negative integer"
                                           : "a number");
    if (f->type == 'u' && cJSON_IsNumber(it))
        return read_seed(it->valuedouble, f->dst, e);
    switch (f->type) {
    case 's':
        if (*it->valuestring)   /* "" = not given */
            *(const char **)f->dst = it->valuestring;
        return 0;
    case 'u':
        return pb_arg_u64("--seed", it->valuestring, f->dst, e)
                   ? pb_err_prefix(e, "the run's recorded configuration: ")
                   : 0;
    case 'b': *(bool *)f->dst = cJSON_IsTrue(it); return 0;
    case 'l': return read_steps(it, f->dst, e);
    case 'f': return read_float(it->string, it->valuedouble, f->dst, e);
    default: return whole(it->string, it->valuedouble, INT_MIN, f->dst, e);
    }
}

/* Every key of root of one phase (optimizer fields or the others) into its field; keys
 * no field takes are refused. */
static int read_fields(const cJSON *root, const struct field *fields, bool optim,
                       struct pb_err *e)
{
    for (const cJSON *it = root->child; it; it = it->next) {
        if (apart(it->string))
            continue;
        if (cJSON_IsNull(it) || cJSON_IsObject(it))
            return pb_err_set(e, "the run's recorded configuration: %s is null or an object, "
                                 "which pipebench never records", it->string);
        const struct field *f = fields;
        while (f->key && strcmp(f->key, it->string))
            f++;
        if (!f->key)
            return pb_err_set(e, "the run's configuration has '%s', which this pipebench "
                              "does not know; resume it with the pipebench that started it",
                              it->string);
        if (f->optim == optim && read_field(f, it, e))
            return -1;
    }
    return 0;
}

/* Adam's betas and the trace window, recorded as two numbers each. */
static int read_pairs(const cJSON *root, struct pb_run_cfg *c, struct pb_err *e)
{
    if (cJSON_GetObjectItemCaseSensitive(root, "beta1")) {
        double b1 = number(root, "beta1"), b2 = number(root, "beta2");
        if (!(fabs(b1) <= FLT_MAX) || !(fabs(b2) <= FLT_MAX))
            return pb_err_set(e, "the run's recorded configuration: --betas expects 2 "
                                 "comma-separated numbers (got '%.15g,%.15g')", b1, b2);
        c->optim.beta1 = (float)b1;
        c->optim.beta2 = (float)b2;
    }
    int hi = 0, lo = 0;
    if (whole("trace_mb_hi", number(root, "trace_mb_hi"), 0, &hi, e) ||
        whole("trace_mb_lo", number(root, "trace_mb_lo"), 0, &lo, e))
        return -1;
    if (hi > 0) {
        c->trace_mb_lo = lo;
        c->trace_mb_hi = hi;
    }
    return 0;
}

int pb_run_cfg_from_json(const char *json, struct pb_run_cfg *c, struct pb_run_json **out,
                         struct pb_err *e)
{
    struct pb_run_json *j = pb_xcalloc(1, sizeof *j);
    *out = j;
    j->root = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(j->root))
        return pb_err_set(e, "the run's recorded configuration is not a JSON object");
    struct pb_optim_cfg *o = &c->optim;
    int microbatches = c->microbatches;
    const char *optimizer = NULL;
    const struct field fields[] = {
        {"model", 's', false, &c->model},         {"preset", 's', false, &c->preset},
        {"partition", 's', false, &c->partition}, {"dataset", 's', false, &c->dataset},
        {"data_dir", 's', false, &c->data_dir},   {"schedule", 's', false, &c->schedule},
        {"variant", 's', false, &c->variant},     {"executor", 's', false, &c->executor},
        {"backend", 's', false, &c->backend},     {"optimizer", 's', false, &optimizer},
        {"save", 's', false, &c->save},           {"trace_epochs", 's', false, &c->trace_epochs},
        {"experiment", 's', false, &c->experiment}, {"devices", 's', false, &c->devices},
        {"seed", 'u', false, &c->seed},           {"shuffle", 'b', false, &c->shuffle},
        {"tf32", 'b', false, &c->tf32},           {"deterministic", 'b', false, &c->deterministic},
        {"stages", 'i', false, &c->stages},       {"batch", 'i', false, &c->batch},
        {"microbatch_size", 'i', false, &c->microbatch_size},
        {"microbatches", 'i', false, &microbatches},
        {"chunks", 'i', false, &c->chunks},
        {"epochs", 'i', false, &c->epochs},       {"limit_train", 'i', false, &c->limit_train},
        {"limit_val", 'i', false, &c->limit_val}, {"beam", 'i', false, &c->beam},
        {"threads", 'i', false, &c->threads},
        {"lr_reschedule_epochs", 'i', false, &c->lr_reschedule_epochs},
        {"checkpoint_every", 'i', false, &c->checkpoint_every},
        {"label_smoothing", 'f', false, &c->label_smoothing},
        {"synthetic_noise", 'f', false, &c->synthetic.noise},
        {"lr", 'f', true, &o->lr},                {"momentum", 'f', true, &o->momentum},
        {"dampening", 'f', true, &o->dampening},  {"nesterov", 'b', true, &o->nesterov},
        {"weight_decay", 'f', true, &o->weight_decay}, {"eps", 'f', true, &o->eps},
        {"alpha", 'f', true, &o->alpha},          {"lr_steps", 'l', true, o},
        {"lr_gamma", 'f', true, &o->lr_gamma},    {"lr_warmup", 'i', true, &o->lr_warmup},
        {"lr_cosine", 'b', true, &o->lr_cosine},  {"clip_grad", 'f', true, &o->clip_grad},
        {"momentum_decay", 'f', true, &o->momentum_decay},
        {NULL, 0, false, NULL},
    };
    if (read_fields(j->root, fields, false, e))
        return -1;
    if (microbatches > 0)   /* 0 = not given: D */
        c->microbatches = microbatches;
    /* the optimizer's defaults (else the preset's own recipe where it has one), then the
     * recorded values over them */
    const struct pb_preset *p = pb_preset_lookup(c->model, c->preset);
    if (optimizer || (p && p->optimizer)) {
        c->optimizer = optimizer ? optimizer : p->optimizer;
        if (pb_optim_cfg_from_name(o, c->optimizer, e))
            return pb_err_prefix(e, "the run's recorded configuration: ");
        if (!optimizer && p->lr > 0)
            o->lr = p->lr;
    }
    if (read_fields(j->root, fields, true, e) || read_pairs(j->root, c, e))
        return -1;
    if (c->batch) {   /* the micro-batch size follows from it and the schedule */
        int mb;
        if (pb_run_batch_split(c, &mb, e))
            return pb_err_prefix(e, "the run's recorded configuration: ");
        c->microbatch_size = mb;
    }
    return 0;
}

void pb_run_json_finish(struct pb_run_json *j)
{
    if (!j)
        return;
    cJSON_Delete(j->root);
    free(j);
}
