/* harness/model/partition.c — per-block costs, the min-max cut, hand-set bounds and their
 * text (partition.h); the measured costs are profile.c's. */
#include "harness/model/partition.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const pb_partition_by_names[PB_PART_NBY] = {
    "flops", "cost", "params", "time", "paper", "bounds",
};

/* The bounds "0,3,5,9" (or "0:3:5:9") into bounds[stages + 1] (NULL: count only). */
static int parse_bounds(const char *spec, int stages, int *bounds, struct pb_err *e)
{
    int n = 0, prev = -1;
    for (const char *p = spec;;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 1000000 || (*end && *end != ',' && *end != ':'))
            return pb_err_set(e, "--partition '%s': expected a method (flops, cost, params, "
                              "time, paper) or the D + 1 block bounds of the stages, e.g. "
                              "0,3,5,9 for 3 stages of a 9-block model", spec);
        if (n == 0 && v != 0)
            return pb_err_set(e, "--partition %s: the bounds start at block 0 (stage 0 holds "
                              "the model's first block)", spec);
        if (n > 0 && v <= prev)
            return pb_err_set(e, "--partition %s: the bounds must increase (%d then %ld): each "
                              "stage holds at least one block", spec, prev, v);
        if (bounds && n <= stages)
            bounds[n] = (int)v;
        n++;
        prev = (int)v;
        if (!*end)
            break;
        p = end + 1;
    }
    if (n != stages + 1)
        return pb_err_set(e, "--partition %s gives %d bounds, so %d stages; --stages %d needs "
                          "%d bounds (0, the first block of each later stage, and the block "
                          "count)", spec, n, n - 1, stages, stages + 1);
    return 0;
}

int pb_partition_parse(const char *spec, int stages, enum pb_partition_by *by, int *bounds,
                       struct pb_err *e)
{
    if (!strcmp(spec, "balanced")) {
        *by = PB_PART_FLOPS;
        return 0;
    }
    for (int i = 0; i < PB_PART_BOUNDS; i++)
        if (!strcmp(spec, pb_partition_by_names[i])) {
            *by = (enum pb_partition_by)i;
            return 0;
        }
    *by = PB_PART_BOUNDS;
    return parse_bounds(spec, stages, bounds, e);
}

int pb_partition_check_bounds(const struct pb_model *m, const int *bounds, int stages,
                              struct pb_err *e)
{
    if (bounds[stages] != m->nblocks)
        return pb_err_set(e, "--partition: the last bound is %d, but model '%s' has %d blocks; "
                          "end the bounds with %d (`pipebench partition --model %s` lists "
                          "the blocks)", bounds[stages], m->name, m->nblocks, m->nblocks,
                          m->name);
    return 0;
}

double pb_block_bytes_moved(const struct pb_block *b)
{
    double floats = (double)b->nparams;
    for (int i = 0; i < b->nnodes; i++) {
        const struct pb_layer *l = &b->nodes[i];
        for (int j = 0; j < l->nin; j++)
            floats += (double)pb_shape_count(l->in_shape[j]);
        floats += (double)pb_shape_count(l->out_shape);
    }
    return floats * sizeof(float);
}

void pb_partition_costs(const struct pb_model *m, enum pb_partition_by by, int samples,
                        double *cost)
{
    PB_CHECK(by == PB_PART_FLOPS || by == PB_PART_COST || by == PB_PART_PARAMS);
    PB_CHECK(samples > 0 && m->batch > 0);
    double scale = (double)samples / (double)m->batch;
    for (int i = 0; i < m->nblocks; i++) {
        const struct pb_block *b = &m->blocks[i];
        double params = (double)b->nparams * sizeof(float);
        double acts = pb_block_bytes_moved(b) - params;
        cost[i] = by == PB_PART_FLOPS  ? scale * b->flops
                  : by == PB_PART_COST ? scale * b->flops + PB_PARTITION_FLOPS_PER_BYTE *
                                                                (scale * acts + params)
                                       : (double)b->nparams;
    }
}

/* A partial partition's cost: its largest stage, then the sum of squared stage costs
 * (among cuts with the same largest stage, the most even). */
struct part_cost {
    double max, sumsq;
};

static bool part_less(struct part_cost a, struct part_cost b)
{
    return a.max < b.max || (a.max == b.max && a.sumsq < b.sumsq);
}

int pb_partition_min_max(const double *cost, int nb, int stages, int *bounds, struct pb_err *e)
{
    if (stages < 1)
        return pb_err_set(e, "--stages must be at least 1 (got %d)", stages);
    if (stages > nb)
        return pb_err_set(e, "%d blocks can be cut into at most %d stages "
                             "(got --stages %d)", nb, nb, stages);
    /* best[k][i]: the best cost of blocks [0, i) in k stages; cut[k][i] its last cut */
    double *prefix = pb_xcalloc((size_t)nb + 1, sizeof *prefix);
    struct part_cost *best = pb_xcalloc((size_t)(stages + 1) * (nb + 1), sizeof *best);
    int *cut = pb_xcalloc((size_t)(stages + 1) * (nb + 1), sizeof *cut);
    for (int i = 0; i < nb; i++)
        prefix[i + 1] = prefix[i] + cost[i];
#define AT(a, k, i) a[(size_t)(k) * (nb + 1) + (i)]
    for (int i = 0; i <= nb; i++)
        AT(best, 1, i) = (struct part_cost){prefix[i], prefix[i] * prefix[i]};
    for (int k = 2; k <= stages; k++)
        for (int i = k; i <= nb; i++) {
            AT(best, k, i) = (struct part_cost){DBL_MAX, DBL_MAX};
            for (int j = k - 1; j < i; j++) {
                double last = prefix[i] - prefix[j];
                struct part_cost c = AT(best, k - 1, j);
                c.max = last > c.max ? last : c.max;
                c.sumsq += last * last;
                if (part_less(c, AT(best, k, i))) {
                    AT(best, k, i) = c;
                    AT(cut, k, i) = j;
                }
            }
        }
    bounds[stages] = nb;
    for (int k = stages; k >= 2; k--)
        bounds[k - 1] = AT(cut, k, bounds[k]);
    bounds[0] = 0;
#undef AT
    free(prefix);
    free(best);
    free(cut);
    return 0;
}

int pb_partition_balanced(const struct pb_model *m, int stages, int *bounds, struct pb_err *e)
{
    double *cost = pb_xcalloc((size_t)m->nblocks + 1, sizeof *cost);
    pb_partition_costs(m, PB_PART_FLOPS, m->batch, cost);
    int rc = pb_partition_min_max(cost, m->nblocks, stages, bounds, e);
    free(cost);
    if (rc)
        return pb_err_prefix(e, "model '%s': ", m->name);
    return 0;
}

char *pb_partition_text(const int *bounds, int stages)
{
    size_t cap = (size_t)(stages + 1) * 12 + 1, len = 0;
    char *s = pb_xmalloc(cap);
    s[0] = 0;
    for (int k = 0; k <= stages; k++)
        len += (size_t)snprintf(s + len, cap - len, "%s%d", k ? "," : "", bounds[k]);
    return s;
}
