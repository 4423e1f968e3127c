/* tests/support/layer_run.c — one layer run on its own on a CPU backend (layer_run.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/cpu/cpu_backend.h"
#include "tests/support/layer_run.h"
#include "tests/support/test_util.h"

void lrun_init_threads(struct lrun *r, struct pb_layer_cfg cfg, int nin, const struct pb_shape *in,
                       const int32_t *host_len, int threads)
{
    struct pb_err e;
    memset(r, 0, sizeof *r);
    r->l.ops = pb_layer_ops_for(cfg.kind);
    r->l.cfg = cfg;
    snprintf(r->l.name, sizeof r->l.name, "%s", "layer");
    r->l.uid = 3;
    r->l.nin = nin;
    for (int i = 0; i < nin; i++)
        r->l.in_shape[i] = in[i];
    ck_assert_msg(r->l.ops->infer(&r->l, in, nin, &r->l.out_shape, &e) == 0, "%s", e.msg);
    r->be = pb_backend_cpu_create(threads, &e);
    ck_assert_msg(r->be != NULL, "%s", e.msg);
    r->np = r->l.ops->param_count(&r->l);
    r->params = pb_backend_alloc(r->be, r->np * sizeof(float), PB_MEM_PARAMS, &e);
    r->grads = pb_backend_alloc(r->be, r->np * sizeof(float), PB_MEM_GRADS, &e);
    ck_assert(r->params && r->grads);
    float *w = malloc(r->np * sizeof *w);
    r->l.ops->init(&r->l, w, NULL, 5);
    r->be->ops->upload(r->be, r->params, w, r->np * sizeof(float));
    free(w);
    for (int i = 0; i < nin; i++)
        ck_assert(pb_tensor_alloc(r->be, &r->in[i], in[i], PB_LAYOUT_PLAIN, PB_MEM_ACTS, &e) == 0);
    if (host_len) {
        r->lengths = pb_backend_alloc(r->be, (size_t)in[0].n * sizeof(int32_t), PB_MEM_COMM, &e);
        r->be->ops->upload(r->be, r->lengths, host_len, (size_t)in[0].n * sizeof(int32_t));
    }
}

void lrun_init(struct lrun *r, struct pb_layer_cfg cfg, int nin, const struct pb_shape *in,
               const int32_t *host_len)
{
    lrun_init_threads(r, cfg, nin, in, host_len, 1);
}

void lrun_finish(struct lrun *r)
{
    for (int i = 0; i < r->l.nin; i++)
        pb_backend_free(r->be, r->in[i].data);
    pb_backend_free(r->be, r->lengths);
    pb_backend_free(r->be, r->params);
    pb_backend_free(r->be, r->grads);
    pb_backend_destroy(r->be);
}

void set_inputs(struct lrun *r, float *const *x)
{
    for (int i = 0; i < r->l.nin; i++)
        r->be->ops->upload(r->be, r->in[i].data, x[i],
                           pb_shape_count(r->in[i].shape) * sizeof(float));
}

void act_release(struct lrun *r, struct pb_node_act *act)
{
    pb_backend_free(r->be, act->out.data);
    pb_backend_free(r->be, act->aux);
    pb_backend_free(r->be, act->kept);
    memset(act, 0, sizeof *act);
}

float *lforward(struct lrun *r, bool train, struct pb_node_act *act)
{
    struct pb_err e;
    struct pb_fwd_ctx c = {r->be, train, 7, 0, r->mb, r->lengths, NULL, false, NULL};
    const struct pb_tensor *ins[2] = {&r->in[0], &r->in[1]};
    memset(act, 0, sizeof *act);
    ck_assert_msg(r->l.ops->forward(&r->l, &c, ins, r->params, NULL, act, &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_backend_status(r->be, &e) == 0, "%s", e.msg);
    size_t ny = pb_shape_count(r->l.out_shape);
    float *y = malloc(ny * sizeof *y);
    r->be->ops->download(r->be, y, act->out.data, ny * sizeof *y);
    if (!train)
        act_release(r, act);
    return y;
}

void lbackward(struct lrun *r, struct pb_node_act *act, const float *dy, float **dx)
{
    struct pb_err e;
    struct pb_backend *be = r->be;
    struct pb_fwd_ctx c = {be, true, 7, 0, r->mb, r->lengths, NULL, false, NULL};
    const struct pb_tensor *ins[2] = {&r->in[0], &r->in[1]};
    struct pb_tensor tdy, tdx[2], *pdx[2] = {NULL, NULL};
    be->ops->fill(be, r->grads, 0.0f, r->np);
    ck_assert(pb_tensor_alloc(be, &tdy, r->l.out_shape, PB_LAYOUT_PLAIN, PB_MEM_COMM, &e) == 0);
    be->ops->upload(be, tdy.data, dy, pb_shape_count(tdy.shape) * sizeof(float));
    for (int i = 0; i < r->l.nin; i++) {
        ck_assert(pb_tensor_alloc(be, &tdx[i], r->in[i].shape, PB_LAYOUT_PLAIN, PB_MEM_COMM,
                                  &e) == 0);
        pdx[i] = &tdx[i];
    }
    ck_assert_msg(r->l.ops->backward(&r->l, &c, ins, act, &tdy, r->params, r->grads, pdx, &e) == 0,
                  "%s", e.msg);
    ck_assert_msg(pb_backend_status(be, &e) == 0, "%s", e.msg);
    for (int i = 0; i < r->l.nin; i++) {
        size_t n = pb_shape_count(r->in[i].shape);
        dx[i] = malloc(n * sizeof(float));
        be->ops->download(be, dx[i], tdx[i].data, n * sizeof(float));
        pb_backend_free(be, tdx[i].data);
    }
    pb_backend_free(be, tdy.data);
    act_release(r, act);
}


void lbackward_split(struct lrun *r, struct pb_node_act *act, const float *dy, float **dx,
                     size_t *kept_bytes)
{
    struct pb_err e;
    struct pb_backend *be = r->be;
    struct pb_fwd_ctx c = {be, true, 7, 0, r->mb, r->lengths, NULL, true, &act->kept};
    const struct pb_tensor *ins[2] = {&r->in[0], &r->in[1]};
    struct pb_tensor tdy, tdx[2], *pdx[2] = {NULL, NULL};
    be->ops->fill(be, r->grads, 0.0f, r->np);
    ck_assert(pb_tensor_alloc(be, &tdy, r->l.out_shape, PB_LAYOUT_PLAIN, PB_MEM_COMM, &e) == 0);
    be->ops->upload(be, tdy.data, dy, pb_shape_count(tdy.shape) * sizeof(float));
    for (int i = 0; i < r->l.nin; i++) {
        ck_assert(pb_tensor_alloc(be, &tdx[i], r->in[i].shape, PB_LAYOUT_PLAIN, PB_MEM_COMM,
                                  &e) == 0);
        pdx[i] = &tdx[i];
    }
    ck_assert_msg(r->l.ops->backward(&r->l, &c, ins, act, &tdy, r->params, r->grads, pdx, &e) == 0,
                  "%s", e.msg);
    ck_assert_msg(pb_backend_status(be, &e) == 0, "%s", e.msg);
    ck_assert_msg(act->kept != NULL, "%s: I kept nothing for W", r->l.name);
    float *g = malloc((r->np + 1) * sizeof *g);
    be->ops->download(be, g, r->grads, r->np * sizeof *g);
    be->ops->sync(be);
    pb_assert_all("weight gradients after I", g, r->np, 0.0f);
    free(g);
    /* W reads neither dY, the output nor the aux: gone, as the stage frees them */
    pb_backend_free(be, tdy.data);
    pb_backend_free(be, act->out.data);
    pb_backend_free(be, act->aux);
    act->out.data = NULL;
    act->aux = NULL;
    *kept_bytes = be->mem_cur[PB_MEM_ACTS];
    for (int i = 0; i < r->l.nin; i++)  /* the inputs, which the stage keeps for W */
        *kept_bytes -= pb_shape_count(r->in[i].shape) * sizeof(float);
    struct pb_tensor no_dy = {.shape = r->l.out_shape, .layout = PB_LAYOUT_PLAIN};
    c.input_only = false;
    c.kept = NULL;
    ck_assert_msg(r->l.ops->backward_weights(&r->l, &c, ins, act, &no_dy, r->grads, &e) == 0,
                  "%s", e.msg);
    ck_assert_msg(pb_backend_status(be, &e) == 0, "%s", e.msg);
    for (int i = 0; i < r->l.nin; i++) {
        size_t n = pb_shape_count(r->in[i].shape);
        dx[i] = malloc(n * sizeof(float));
        be->ops->download(be, dx[i], tdx[i].data, n * sizeof(float));
        pb_backend_free(be, tdx[i].data);
    }
    act_release(r, act);
}
