/* harness/driver/partition_report.c — the study behind `pipebench partition`
 * (partition_report.h): measure the blocks, cut by each method, compare the predictors. */
#include "harness/driver/partition_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/driver/plan.h"

#define KIB 1024.0

/* Pearson correlation of x and y over n values (NaN when either is constant). */
static double correlation(const double *x, const double *y, int n)
{
    double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < n; i++) {
        mx += x[i] / n;
        my += y[i] / n;
    }
    for (int i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

/* Sum of v over the blocks of stage k. */
static double stage_sum(const double *v, const int *bounds, int k)
{
    double s = 0;
    for (int i = bounds[k]; i < bounds[k + 1]; i++)
        s += v[i];
    return s;
}

/* How predictor `by` (costs cost[nblocks]) does against the measurements. */
static int judge(struct pb_partition_study *st, enum pb_partition_by by, const double *cost,
                 int *bounds, struct pb_err *e)
{
    int nb = st->model.nblocks, d = st->stages;
    if (pb_partition_min_max(cost, nb, d, bounds, e))
        return -1;
    double total_c = 0, total_ms = 0, slowest = 0, err = 0;
    for (int i = 0; i < nb; i++) {
        total_c += cost[i];
        total_ms += st->ms[i];
    }
    for (int k = 0; k < d; k++) {
        double ms = stage_sum(st->ms, bounds, k);
        slowest = ms > slowest ? ms : slowest;
    }
    for (int k = 0; k < d; k++) {
        double pred = total_c > 0 ? stage_sum(cost, bounds, k) / total_c * total_ms : 0;
        double gap = fabs(pred - stage_sum(st->ms, bounds, k));
        err = gap > err ? gap : err;
    }
    st->corr[by] = correlation(cost, st->ms, nb);
    st->slowest_ms[by] = slowest;
    st->stage_err[by] = slowest > 0 ? err / slowest : 0;
    return 0;
}

int pb_partition_study(const struct pb_run_cfg *c, int reps, bool split,
                       struct pb_partition_study *st, struct pb_err *e)
{
    memset(st, 0, sizeof *st);
    const struct pb_preset *paper;
    if (pb_run_model_build(c, &st->model, &paper, e))
        return -1;
    int nb = st->model.nblocks, d = st->stages = c->stages;
    st->threads = pb_run_stage_threads(c);
    st->reps = reps;
    st->ms = pb_xcalloc((size_t)nb, sizeof *st->ms);
    st->f_ms = pb_xcalloc((size_t)nb, sizeof *st->f_ms);
    if (split) {
        st->i_ms = pb_xcalloc((size_t)nb, sizeof *st->i_ms);
        st->w_ms = pb_xcalloc((size_t)nb, sizeof *st->w_ms);
    }
    st->bounds = pb_xcalloc((size_t)d + 1, sizeof *st->bounds);
    if (d > nb)
        return pb_err_set(e, "model '%s' has %d blocks, so it can be cut into at most %d stages "
                          "(got --stages %d)", st->model.name, nb, nb, d);
    struct pb_block_times bt = {st->ms, st->f_ms, st->i_ms, st->w_ms};
    if (pb_partition_profile_ops(&st->model, c->backend, 0, st->threads, reps, &bt, e))
        return -1;
    double *cost = pb_xcalloc((size_t)nb, sizeof *cost);
    int *tmp = pb_xcalloc((size_t)d + 1, sizeof *tmp);
    int rc = 0;
    for (int by = 0; by <= PB_PART_TIME && !rc; by++) {
        if (by == PB_PART_TIME)
            memcpy(cost, st->ms, (size_t)nb * sizeof *cost);
        else
            pb_partition_costs(&st->model, (enum pb_partition_by)by, st->model.batch, cost);
        rc = judge(st, (enum pb_partition_by)by, cost, tmp, e);
    }
    free(cost);
    free(tmp);
    st->by = PB_PARTITION_DEFAULT;
    if (!rc && paper)
        st->by = PB_PART_PAPER;
    else if (!rc && c->partition)
        rc = pb_partition_parse(c->partition, d, &st->by, st->bounds, e);
    if (rc)
        return -1;
    if (st->by == PB_PART_TIME) {
        double *ms = pb_xcalloc((size_t)nb, sizeof *ms);
        memcpy(ms, st->ms, (size_t)nb * sizeof *ms);
        rc = pb_partition_min_max(ms, nb, d, st->bounds, e);
        free(ms);
        return rc;
    }
    return pb_run_partition(c, &st->model, paper, false, 0, st->bounds, e);
}

/* "0 conv1" or "1-2 relu1..pool1": the first and last block of a stage. */
static void stage_blocks(const struct pb_model *m, int lo, int hi, char *buf, size_t cap)
{
    if (hi - lo == 1)
        snprintf(buf, cap, "%d %s", lo, m->blocks[lo].name);
    else
        snprintf(buf, cap, "%d-%d %s..%s", lo, hi - 1, m->blocks[lo].name,
                 m->blocks[hi - 1].name);
}

void pb_partition_study_print(const struct pb_partition_study *st, FILE *out)
{
    const struct pb_model *m = &st->model;
    char *cut = pb_partition_text(st->bounds, st->stages);
    fprintf(out, "model %s: %d blocks, micro-batches of %d; cut by %s into %d stages: %s\n",
            m->name, m->nblocks, m->batch, pb_partition_by_names[st->by], st->stages, cut);
    fprintf(out, "(ms: forward + backward of one micro-batch, median of %d, %d thread%s per "
            "stage; act: what the forward keeps for the backward)\n\n", st->reps, st->threads,
            st->threads == 1 ? "" : "s");
    fprintf(out, "  %-5s %-28s %10s %12s %10s %10s\n", "stage", "blocks", "params",
            "fwd MFLOPs", "act KiB", "ms");
    for (int k = 0; k < st->stages; k++) {
        int lo = st->bounds[k], hi = st->bounds[k + 1];
        double flops = 0, act = 0;
        for (int i = lo; i < hi; i++) {
            flops += m->blocks[i].flops;
            act += (double)m->blocks[i].act_bytes;
        }
        char blocks[160];
        stage_blocks(m, lo, hi, blocks, sizeof blocks);
        fprintf(out, "  %-5d %-28s %10zu %12.2f %10.1f %10.3f\n", k, blocks,
                pb_model_param_count(m, lo, hi), flops / 1e6, act / KIB,
                stage_sum(st->ms, st->bounds, k));
    }
    fprintf(out, "\nblocks:\n  %-5s %-22s %10s %12s %10s %10s %10s\n", "block", "name", "params",
            "fwd MFLOPs", "act KiB", "moved KiB", "ms");
    for (int i = 0; i < m->nblocks; i++) {
        const struct pb_block *b = &m->blocks[i];
        fprintf(out, "  %-5d %-22s %10zu %12.2f %10.1f %10.1f %10.3f\n", i, b->name, b->nparams,
                b->flops / 1e6, (double)b->act_bytes / KIB, pb_block_bytes_moved(b) / KIB,
                st->ms[i]);
    }
    fprintf(out, "\nhow each cost predicts the measured block times (corr: over the blocks; "
            "its cut's slowest stage, measured; the largest gap between a stage's predicted "
            "and measured time, over that slowest stage):\n");
    fprintf(out, "  %-7s %7s %18s %16s\n", "by", "corr", "slowest stage ms", "max stage error");
    for (int by = 0; by <= PB_PART_TIME; by++)
        fprintf(out, "  %-7s %7.3f %18.3f %15.1f%%\n", pb_partition_by_names[by], st->corr[by],
                st->slowest_ms[by], 100 * st->stage_err[by]);
    free(cut);
}

void pb_partition_study_finish(struct pb_partition_study *st)
{
    pb_model_finish(&st->model);
    free(st->ms);
    free(st->f_ms);
    free(st->i_ms);
    free(st->w_ms);
    free(st->bounds);
    memset(st, 0, sizeof *st);
}
