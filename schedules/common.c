/* schedules/common.c — shared by the schedule files (semantics §4, §1): the checks
 * every pipe must pass and the 1F1B order of §4 that pipedream, pipeoptim,
 * spectrain, pipedream-2bw and xpipe use. */
#include "schedules/common.h"

#include <string.h>

/* Largest D and M: look-aheads (≤ D) must fit pb_op.s, an int16_t. */
#define PB_SCHED_MAX 4096

bool pb_sched_variant_is(const struct pb_pipe *p, const char *v)
{
    return p->variant && !strcmp(p->variant, v);
}

/* Whether v is one of the comma-separated names in list. */
static bool listed(const char *list, const char *v)
{
    size_t n = strlen(v);
    for (const char *s = list; *s;) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len == n && !strncmp(s, v, n))
            return true;
        s += len + (end != NULL);
    }
    return false;
}

int pb_sched_check_pipe(const struct pb_schedule *sch, const struct pb_pipe *p, struct pb_err *e)
{
    if (p->stages < 1 || p->stages > PB_SCHED_MAX)
        return pb_err_set(e, "%s: --stages must be between 1 and %d (got %d)", sch->name,
                          PB_SCHED_MAX, p->stages);
    if (p->length < 1)
        return pb_err_set(e, "%s: --length must be at least 1 micro-batch (got %d)", sch->name,
                          p->length);
    if (sch->uses_microbatches && (p->microbatches < 1 || p->microbatches > PB_SCHED_MAX))
        return pb_err_set(e, "%s: --microbatches must be between 1 and %d (got %d)", sch->name,
                          PB_SCHED_MAX, p->microbatches);
    if (p->variant && *p->variant && !listed(sch->variants, p->variant)) {
        if (!*sch->variants)
            return pb_err_set(e, "%s has no variants (got '%s'); leave --variant out", sch->name,
                              p->variant);
        return pb_err_set(e, "%s: unknown variant '%s'; valid variants: %s (or none for the "
                          "default)", sch->name, p->variant, sch->variants);
    }
    int need = sch->step_min * (p->stages / (p->chunks > 1 ? p->chunks : 1));
    int last = p->length % (p->microbatches > 0 ? p->microbatches : 1);
    if (need && p->microbatches < need)
        return pb_err_set(e, "%s needs at least %d·p = %d micro-batches per step on p = %d "
                             "devices (got --microbatches %d); give --microbatches %d or more",
                          sch->name, sch->step_min, need, need / sch->step_min,
                          p->microbatches, need);
    if (need && p->length < p->microbatches && p->length < need)
        return pb_err_set(e, "%s: the epoch's N = %d micro-batches are fewer than %d·p = %d; "
                             "give N >= %d (--length, or in a run more training samples)",
                          sch->name, p->length, sch->step_min, need, need);
    if (need && p->length > p->microbatches && last && last < need)
        return pb_err_set(e, "%s: the epoch's last step has N mod M = %d micro-batches, fewer "
                             "than %d·p = %d; give N (--length, or in a run the training "
                             "samples / --microbatch-size) a multiple of M = %d or with "
                             "N mod M >= %d", sch->name, last,
                          sch->step_min, need, p->microbatches, need);
    return 0;
}

void pb_sched_emit_1f1b(const struct pb_pipe *p, int k, struct pb_program *out,
                        pb_sched_emit_fn fwd, pb_sched_emit_fn bwd)
{
    int n = p->length, w = p->stages - 1 - k;
    if (w > n)
        w = n;
    int nf = 0;
    while (nf < w)
        fwd(p, k, nf++, out);
    for (int nb = 0; nb < n; nb++) {
        if (nf < n)
            fwd(p, k, nf++, out);
        bwd(p, k, nb, out);
    }
}

bool pb_sched_ends_minibatch(const struct pb_pipe *p, int mb)
{
    return mb % p->microbatches == p->microbatches - 1 || mb == p->length - 1;
}

void pb_sched_emit_steps(const struct pb_pipe *p, int d, struct pb_program *out,
                         pb_sched_step_fn step)
{
    for (int first = 0; first < p->length; first += p->microbatches) {
        int n = p->length - first < p->microbatches ? p->length - first : p->microbatches;
        step(p, d, first, n, out);
    }
}
