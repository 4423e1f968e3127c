/* harness/driver/op_costs_alone.c — op costs of the stages measured alone
 * (op_costs_alone.h): the partition study's forward, backward and split-backward times
 * summed per stage, each stage's optimizer step timed on its own backend, and each
 * message between neighbours carried the way the executors carry it. */
#include "harness/driver/op_costs_alone.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/atomic_file.h"
#include "harness/base/clock.h"
#include "harness/compute/registry.h"
#include "harness/driver/placement.h"
#include "harness/exec/worker.h"
#include "harness/optim/optim.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of t[reps] (sorted here). */
static double median_of(double *t, int reps)
{
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    return reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
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
        *s = median_of(t, reps);
        free(t);
        pb_optim_finish(&o, be);
    }
    pb_backend_free(be, w);
    pb_backend_free(be, g);
    free(zeros);
    return rc;
}

/* One message of shape s from backend `from` to `to` as a worker sends and receives it
 * (pb_msg_from_tensor, pb_msg_to_tensor), reps times after one untimed: the medians of
 * the sender's and the receiver's seconds into *send_s and *recv_s. */
static int message_s(struct pb_backend *from, struct pb_backend *to, struct pb_shape s, int reps,
                     double *send_s, double *recv_s, struct pb_err *e)
{
    double *t = pb_xcalloc(2 * (size_t)reps, sizeof *t);
    int rc = 0;
    for (int r = 0; r <= reps && !rc; r++) {
        struct pb_tensor x, y;
        struct pb_msg m;
        rc = pb_tensor_alloc(from, &x, s, PB_LAYOUT_PLAIN, PB_MEM_COMM, e);
        if (rc)
            break;
        from->ops->sync(from);
        double sent = pb_msg_from_tensor(from, to, &x, &m);
        double t0 = pb_now_s();
        rc = pb_msg_to_tensor(to, &m, PB_MEM_ACTS, &y, e);
        to->ops->sync(to);
        double got = pb_now_s() - t0;
        if (!rc)
            pb_backend_free(to, y.data);
        if (r > 0) {
            t[r - 1] = sent;
            t[reps + r - 1] = got;
        }
    }
    if (!rc) {
        *send_s = median_of(t, reps);
        *recv_s = median_of(t + reps, reps);
    }
    free(t);
    return rc;
}

/* recv[k], as a run's stage records define it (results_costs.c): the seconds stage k
 * spends carrying messages in a micro-batch (receiving its input and its output's
 * gradient, sending its output and its input's gradient), over the messages it
 * receives; each edge measured between fresh backends on its two stages' devices. */
static int recv_s(const struct pb_run_cfg *c, const struct pb_partition_study *st, double *recv,
                  struct pb_err *e)
{
    int d = st->stages;
    int *dev = pb_xcalloc((size_t)d, sizeof *dev);
    double *spent = pb_xcalloc((size_t)d, sizeof *spent);
    int rc = pb_placement_parse(c->devices, d, dev, e);
    for (int k = 0; k + 1 < d && !rc; k++) {
        struct pb_backend_cfg a = {.device = dev[k], .threads = st->threads};
        struct pb_backend_cfg b = {.device = dev[k + 1], .threads = st->threads};
        struct pb_backend *lo = pb_backend_create(c->backend, &a, e);
        struct pb_backend *hi = lo ? pb_backend_create(c->backend, &b, e) : NULL;
        rc = hi ? 0 : -1;
        /* the tensor crossing the edge is stage k + 1's input, and its gradient back */
        struct pb_shape s = st->model.blocks[st->bounds[k + 1]].in_shape;
        double send, got;
        if (!rc && !(rc = message_s(lo, hi, s, st->reps, &send, &got, e))) {
            spent[k] += send;
            spent[k + 1] += got;
        }
        if (!rc && !(rc = message_s(hi, lo, s, st->reps, &send, &got, e))) {
            spent[k + 1] += send;
            spent[k] += got;
        }
        if (hi)
            pb_backend_destroy(hi);
        if (lo)
            pb_backend_destroy(lo);
    }
    for (int k = 0; k < d && !rc; k++) {
        int msgs = (k > 0) + (k + 1 < d);
        recv[k] = msgs ? spent[k] / msgs : 0;
    }
    free(dev);
    free(spent);
    return rc;
}

static double sum_ms(const double *ms, int lo, int hi)
{
    double s = 0;
    for (int i = lo; i < hi; i++)
        s += ms[i] / 1e3;
    return s;
}

int pb_op_costs_alone_write(const struct pb_run_cfg *c, const struct pb_partition_study *st,
                            const char *path, struct pb_err *e)
{
    int d = st->stages;
    double *u = pb_xcalloc((size_t)d, sizeof *u), *recv = pb_xcalloc((size_t)d, sizeof *recv);
    struct pb_backend_cfg bc = {.device = 0, .threads = st->threads};
    struct pb_backend *be = pb_backend_create(c->backend, &bc, e);
    int rc = be ? 0 : -1;
    for (int k = 0; k < d && !rc; k++)
        rc = update_s(c, be, pb_model_param_count(&st->model, st->bounds[k], st->bounds[k + 1]),
                      st->reps, &u[k], e);
    if (be)
        pb_backend_destroy(be);
    if (!rc)
        rc = recv_s(c, st, recv, e);
    struct pb_afile a = {0};
    if (!rc)
        rc = pb_afile_open(&a, path, e);
    if (!rc) {
        fprintf(a.f, "# op costs of %s cut by %s into %d stages, each measured alone on %d "
                "core%s (pipebench partition): median of %d%s\n", st->model.name,
                pb_partition_by_names[st->by], d, st->threads, st->threads == 1 ? "" : "s",
                st->reps, st->i_ms ? "" : "; no I and W (the split backward) measured");
        double load;
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        if (getloadavg(&load, 1) == 1 && load > (double)cores)
            fprintf(a.f, "# \xe2\x80\xa0 measured under a load average of %.2f on %ld cores: "
                    "not each stage's alone\n", load, cores);
        fprintf(a.f, "stage,op,seconds\n");
        for (int k = 0; k < d; k++) {
            int lo = st->bounds[k], hi = st->bounds[k + 1];
            double f = sum_ms(st->f_ms, lo, hi), fb = sum_ms(st->ms, lo, hi);
            fprintf(a.f, "%d,F,%.9g\n%d,B,%.9g\n%d,U,%.9g\n", k, f, k, fb > f ? fb - f : 0, k,
                    u[k]);
            if (st->i_ms)
                fprintf(a.f, "%d,I,%.9g\n%d,W,%.9g\n", k, sum_ms(st->i_ms, lo, hi), k,
                        sum_ms(st->w_ms, lo, hi));
            fprintf(a.f, "%d,recv,%.9g\n", k, recv[k]);
        }
        rc = pb_afile_commit(&a, e);
    }
    free(u);
    free(recv);
    return rc ? pb_err_prefix(e, "--op-costs-out %s: ", path) : 0;
}
