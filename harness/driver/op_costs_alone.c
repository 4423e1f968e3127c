/* harness/driver/op_costs_alone.c — op costs of the stages measured alone
 * (op_costs_alone.h): the partition study's forward and backward times summed per stage,
 * and each stage's optimizer step timed on its own backend. */
#include "harness/driver/op_costs_alone.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/atomic_file.h"
#include "harness/base/clock.h"
#include "harness/compute/registry.h"
#include "harness/optim/optim.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median seconds of one step of c's optimizer over n parameters (zero weights and
 * gradients) on be, over reps timed steps after one untimed. */
static int update_s(const struct pb_run_cfg *c, struct pb_backend *be, size_t n, int reps,
                    double *s, struct pb_err *e)
{
    *s = 0;
    if (n == 0)
        return 0;
    float *zeros = pb_xcalloc(n, sizeof *zeros);
    float *w = pb_backend_alloc(be, n * sizeof *w, PB_MEM_PARAMS, e);
    float *g = w ? pb_backend_alloc(be, n * sizeof *g, PB_MEM_GRADS, e) : NULL;
    struct pb_optim o;
    int rc = g ? pb_optim_init(&o, be, &c->optim, n, e) : -1;
    if (!rc) {
        be->ops->upload(be, w, zeros, n * sizeof *w);
        be->ops->upload(be, g, zeros, n * sizeof *g);
        be->ops->sync(be);
        double *t = pb_xcalloc((size_t)reps, sizeof *t);
        for (int r = 0; r <= reps; r++) {
            double t0 = pb_now_s();
            pb_optim_step(&o, be, w, g);
            be->ops->sync(be);
            if (r > 0)
                t[r - 1] = pb_now_s() - t0;
        }
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        *s = reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
        free(t);
        pb_optim_finish(&o, be);
    }
    pb_backend_free(be, w);
    pb_backend_free(be, g);
    free(zeros);
    return rc;
}

int pb_op_costs_alone_write(const struct pb_run_cfg *c, const struct pb_partition_study *st,
                            const char *path, struct pb_err *e)
{
    int d = st->stages;
    double *u = pb_xcalloc((size_t)d, sizeof *u);
    struct pb_backend_cfg bc = {.device = 0, .threads = st->threads};
    struct pb_backend *be = pb_backend_create(c->backend, &bc, e);
    int rc = be ? 0 : -1;
    for (int k = 0; k < d && !rc; k++)
        rc = update_s(c, be, pb_model_param_count(&st->model, st->bounds[k], st->bounds[k + 1]),
                      st->reps, &u[k], e);
    if (be)
        pb_backend_destroy(be);
    struct pb_afile a = {0};
    if (!rc)
        rc = pb_afile_open(&a, path, e);
    if (!rc) {
        fprintf(a.f, "# op costs of %s cut by %s into %d stages, each measured alone on %d "
                "core%s (pipebench partition): median of %d; recv not measured (0)\n",
                st->model.name, pb_partition_by_names[st->by], d, st->threads,
                st->threads == 1 ? "" : "s", st->reps);
        double load;
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        if (getloadavg(&load, 1) == 1 && load > (double)cores)
            fprintf(a.f, "# \xe2\x80\xa0 measured under a load average of %.2f on %ld cores: "
                    "not each stage's alone\n", load, cores);
        fprintf(a.f, "stage,op,seconds\n");
        for (int k = 0; k < d; k++) {
            double f = 0, fb = 0;
            for (int i = st->bounds[k]; i < st->bounds[k + 1]; i++) {
                f += st->f_ms[i] / 1e3;
                fb += st->ms[i] / 1e3;
            }
            fprintf(a.f, "%d,F,%.9g\n%d,B,%.9g\n%d,U,%.9g\n", k, f, k, fb > f ? fb - f : 0, k,
                    u[k]);
        }
        rc = pb_afile_commit(&a, e);
    }
    free(u);
    return rc ? pb_err_prefix(e, "--op-costs-out %s: ", path) : 0;
}
