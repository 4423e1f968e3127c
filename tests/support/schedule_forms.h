/* tests/support/schedule_forms.h — the registries as the tests walk them: every registered
 * schedule (schedules/registry.c) in each of its forms, the default and each variant of
 * its `variants` list, so a new schedule or variant is tested without editing a test. */
#ifndef PB_TEST_SCHEDULE_FORMS_H
#define PB_TEST_SCHEDULE_FORMS_H

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "harness/driver/run.h"
#include "harness/ir/program.h"
#include "schedules/registry.h"

#define SCHED_FORMS_MAX 64

struct sched_form {
    const struct pb_schedule *sch;
    const char *variant;  /* NULL: the default form; else points at buf */
    char buf[32];
    char label[80];       /* "pipeoptim" or "pipeoptim --variant code" */
};

/* Fills forms[] (SCHED_FORMS_MAX entries) in registry order, each schedule's default
 * form first; returns the count. */
static inline int sched_forms(struct sched_form *forms)
{
    int n = 0;
    for (int i = 0; pb_schedules[i]; i++) {
        const struct pb_schedule *s = pb_schedules[i];
        const char *v = s->variants ? s->variants : "";
        for (int first = 1; first || *v; first = 0) {
            ck_assert_msg(n < SCHED_FORMS_MAX, "more than %d schedule forms", SCHED_FORMS_MAX);
            struct sched_form *f = &forms[n++];
            f->sch = s;
            f->variant = NULL;
            if (!first) {
                size_t len = strcspn(v, ",");
                ck_assert_msg(len > 0 && len < sizeof f->buf, "%s: variants '%s'", s->name,
                              s->variants);
                memcpy(f->buf, v, len);
                f->buf[len] = 0;
                f->variant = f->buf;
                v += len + (v[len] == ',');
                while (*v == ' ')
                    v++;
            }
            snprintf(f->label, sizeof f->label, "%s%s%s", s->name, f->variant ? " --variant " : "",
                     f->variant ? f->variant : "");
        }
    }
    return n;
}

/* The least M' ≥ max(M, need) whose steps of an epoch of N all hold at least `need`
 * micro-batches (N mod M' = 0 or ≥ need); N itself (one step) at most. */
static inline int sched_fit_m(int N, int M, int need)
{
    M = M < need ? need : M;
    while (M < N && N % M && N % M < need)
        M++;
    return M;
}

/* Raises c's micro-batches per step to the step_min·p the schedule's steps need (DualPipeV:
 * 2p) and on until the epoch's last step holds as many (sched_fit_m); the epoch is
 * c->limit_train samples, so set it first (the schedule's other runs keep M). */
static inline void sched_fit_steps(struct pb_run_cfg *c, const struct pb_schedule *sch)
{
    int v = c->chunks ? c->chunks : sch->chunks ? sch->chunks : 1;
    int need = sch->step_min * (c->stages / v), M = c->microbatches ? c->microbatches : c->stages;
    if (!need)
        return;
    int N = c->limit_train && c->microbatch_size ? c->limit_train / c->microbatch_size : 0;
    c->microbatches = N ? sched_fit_m(N, M, need) : (M < need ? need : M);
}

/* Sets c's schedule and variant to form f; a form that fixes v chunks per device runs
 * the c->stages stages on c->stages / v devices or, where v does not divide them (one
 * stage), c->stages devices of v chunks, with the steps it needs (sched_fit_steps). When f cannot run c's optimizer (spectrain
 * needs SGD), switches c to the first optimizer it can run, in the order "sgdm", then
 * each kind's name (pb_optim_kind_name), with that optimizer's defaults; as
 * pb_run_check judges. Fails the test when f accepts none. */
static inline void sched_form_apply(struct pb_run_cfg *c, const struct sched_form *f)
{
    struct pb_err e;
    c->schedule = f->sch->name;
    c->variant = f->variant;
    if (f->sch->chunks > 1 && !c->chunks && c->stages % f->sch->chunks)
        c->stages *= f->sch->chunks;
    sched_fit_steps(c, f->sch);
    if (pb_run_check(c, &e) == 0)
        return;
    struct pb_err first = e;
    for (int k = -1; k < PB_OPT_NKINDS; k++) {
        const char *name = k < 0 ? "sgdm" : pb_optim_kind_name((enum pb_optim_kind)k);
        struct pb_run_cfg t = *c;
        t.optimizer = name;
        if (pb_optim_cfg_from_name(&t.optim, name, &e) == 0 && pb_run_check(&t, &e) == 0) {
            *c = t;
            return;
        }
    }
    ck_abort_msg("%s runs with no optimizer: %s", f->label, first.msg);
}

/* Whether form f is schedule `name` with variant `variant` (NULL: the default). */
static inline bool sched_form_is(const struct sched_form *f, const char *name, const char *variant)
{
    return !strcmp(f->sch->name, name) &&
           (variant ? f->variant && !strcmp(f->variant, variant) : !f->variant);
}

/* A pipe of schedule sch on `devices` devices as the registry says it runs: its fixed v
 * chunks each (devices·v stages; one otherwise) in its placement, N micro-batches and M
 * per step, N and M raised to the step_min·p every step needs (sched_fit_m). */
static inline void sched_pipe(const struct pb_schedule *sch, int devices, int N, int M,
                              struct pb_pipe *p)
{
    *p = (struct pb_pipe){.stages = devices * (sch->chunks ? sch->chunks : 1), .length = N,
                          .microbatches = M};
    pb_pipe_adopt(p, sch);
    int need = sch->step_min * devices;
    if (p->length < need)
        p->length = need;
    p->microbatches = sched_fit_m(p->length, p->microbatches, need);
}

#endif
