/* tests/support/layer_cases.c — block builders mirroring fixtures_layers.py, and a runner
 * of one block as the middle stage of a pipeline (layer_cases.h). */
#include "tests/support/layer_cases.h"

#include <check.h>
#include <string.h>

#include "harness/compute/cpu/cpu_backend.h"

static void b_linear(struct pb_model *m, struct pb_block *b) { pb_block_linear(m, b, "fc", 12, 7); }
static void b_conv3x3(struct pb_model *m, struct pb_block *b) { pb_block_conv(m, b, "conv", 3, 8, 3, 3, 1, 1, 1, true); }
static void b_conv1x7(struct pb_model *m, struct pb_block *b) { pb_block_conv(m, b, "conv", 8, 16, 1, 7, 1, 0, 3, true); }
static void b_conv7x1(struct pb_model *m, struct pb_block *b) { pb_block_conv(m, b, "conv", 16, 8, 7, 1, 1, 3, 0, false); }
static void b_conv_s2(struct pb_model *m, struct pb_block *b) { pb_block_conv(m, b, "conv", 8, 16, 3, 3, 2, 1, 1, false); }
static void b_conv11(struct pb_model *m, struct pb_block *b) { pb_block_conv(m, b, "conv", 3, 16, 11, 11, 4, 2, 2, true); }
static void b_bn(struct pb_model *m, struct pb_block *b) { pb_block_bn(m, b, "bn", 8); }
static void b_maxpool(struct pb_model *m, struct pb_block *b) { pb_block_maxpool(m, b, "pool", 3, 2, 0, true); }
static void b_avgpool(struct pb_model *m, struct pb_block *b) { pb_block_avgpool(m, b, "pool", 3, 1, 1); }
static void b_gap(struct pb_model *m, struct pb_block *b) { pb_block_gap(m, b, "gap"); }
static void b_relu(struct pb_model *m, struct pb_block *b) { pb_block_relu(m, b, "relu"); }
static void b_dropout(struct pb_model *m, struct pb_block *b) { pb_block_dropout(m, b, "drop", 0.3f); }

static void b_flatten_linear(struct pb_model *m, struct pb_block *b)
{
    pb_block_conv(m, b, "conv", 3, 8, 3, 3, 1, 1, 1, true);  /* blocked output on the CPU */
    pb_block_flatten(m, b, "flat");
    pb_block_linear(m, b, "fc", 8 * 5 * 5, 6);
}

static void b_residual(struct pb_model *m, struct pb_block *b)
{
    pb_block_conv(m, b, "conv1", 8, 8, 3, 3, 1, 1, 1, false);
    pb_block_bn(m, b, "bn1", 8);
    pb_block_relu(m, b, "relu1");
    pb_block_conv(m, b, "conv2", 8, 8, 3, 3, 1, 1, 1, false);
    int bn2 = pb_block_bn(m, b, "bn2", 8);
    int in[2] = {bn2, -1};
    pb_block_node(m, b, "add", &(struct pb_layer_cfg){.kind = PB_LAYER_ADD}, 2, in);
    pb_block_relu(m, b, "relu");
}

/* The residual block without ReLUs: conv-bn-conv-bn plus the skip. */
static void b_residual_smooth(struct pb_model *m, struct pb_block *b)
{
    pb_block_conv(m, b, "conv1", 8, 8, 3, 3, 1, 1, 1, false);
    pb_block_bn(m, b, "bn1", 8);
    pb_block_conv(m, b, "conv2", 8, 8, 3, 3, 1, 1, 1, false);
    int bn2 = pb_block_bn(m, b, "bn2", 8);
    int in[2] = {bn2, -1};
    pb_block_node(m, b, "add", &(struct pb_layer_cfg){.kind = PB_LAYER_ADD}, 2, in);
}

static void b_branches(struct pb_model *m, struct pb_block *b)
{
    int x = -1;
    struct pb_layer_cfg a = {.kind = PB_LAYER_CONV2D, .conv = {8, 8, 1, 1, 1, 1, 0, 0, true}};
    struct pb_layer_cfg c = {.kind = PB_LAYER_CONV2D, .conv = {8, 5, 3, 3, 1, 1, 1, 1, true}};
    struct pb_layer_cfg p = {.kind = PB_LAYER_MAXPOOL2D,
                             .pool = {PB_POOL_MAX, 3, 3, 1, 1, 1, 1, false, false}};
    int in[3];
    in[0] = pb_block_node(m, b, "a", &a, 1, &x);
    in[1] = pb_block_node(m, b, "b", &c, 1, &x);
    in[2] = pb_block_node(m, b, "pool", &p, 1, &x);
    pb_block_node(m, b, "cat", &(struct pb_layer_cfg){.kind = PB_LAYER_CONCAT}, 3, in);
}

const struct layer_case layer_cases[] = {
    {"linear", {4, 12, 1, 1}, true, b_linear},
    {"conv3x3", {2, 3, 9, 9}, true, b_conv3x3},
    {"conv1x7", {2, 8, 7, 9}, true, b_conv1x7},
    {"conv7x1", {2, 16, 9, 7}, true, b_conv7x1},
    {"conv_s2", {2, 8, 9, 9}, true, b_conv_s2},
    {"conv11", {2, 3, 35, 35}, true, b_conv11},
    {"bn_train", {4, 8, 5, 5}, true, b_bn},
    {"bn_eval", {4, 8, 5, 5}, false, b_bn},
    {"maxpool", {2, 8, 9, 9}, true, b_maxpool},
    {"avgpool", {2, 8, 8, 8}, true, b_avgpool},
    {"gap", {2, 16, 5, 5}, true, b_gap},
    {"relu", {2, 8, 5, 5}, true, b_relu},
    {"residual", {2, 8, 6, 6}, true, b_residual},
    {"residual_smooth", {2, 8, 6, 6}, true, b_residual_smooth},
    {"branches", {2, 8, 6, 6}, true, b_branches},
    {"dropout", {3, 40, 1, 1}, true, b_dropout},
    {"flatten_linear", {2, 3, 5, 5}, true, b_flatten_linear},
};
const int n_layer_cases = (int)(sizeof layer_cases / sizeof layer_cases[0]);

const struct layer_case *layer_case_find(const char *name)
{
    for (int i = 0; i < n_layer_cases; i++)
        if (!strcmp(layer_cases[i].name, name))
            return &layer_cases[i];
    ck_abort_msg("no layer case %s", name);
    return NULL;
}

void case_run_init(struct case_run *r, const struct layer_case *c, uint64_t seed)
{
    struct pb_err e;
    pb_model_init(&r->model, c->name, c->x, 0);
    c->build(&r->model, pb_model_block(&r->model, c->name));
    ck_assert_msg(pb_model_finalize(&r->model, c->x.n, &e) == 0, "%s", e.msg);
    r->be = pb_backend_cpu_create(1, &e);
    ck_assert_msg(r->be != NULL, "%s", e.msg);
    ck_assert_msg(pb_stage_init(&r->stage, r->be, &r->model, 1, 3, 0, 1, &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_stage_init_params(&r->stage, seed, &e) == 0, "%s", e.msg);
}

void case_run_finish(struct case_run *r)
{
    pb_stage_finish(&r->stage);
    pb_backend_destroy(r->be);
    pb_model_finish(&r->model);
}

float *stage_forward_host(struct pb_backend *be, struct pb_stage *s, const struct pb_step_ctx *c,
                          const float *x, struct pb_stage_act *act)
{
    struct pb_err e;
    struct pb_tensor in, out;
    ck_assert(pb_tensor_alloc(be, &in, s->in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, &e) == 0);
    be->ops->upload(be, in.data, x, pb_shape_count(in.shape) * sizeof(float));
    ck_assert_msg(pb_stage_forward(s, c, s->params, in, NULL, act, &out, &e) == 0, "%s", e.msg);
    size_t n = pb_shape_count(out.shape);
    float *y = malloc(n * sizeof *y);
    be->ops->download(be, y, out.data, n * sizeof *y);
    pb_backend_free(be, out.data);
    return y;
}

float *stage_backward_host(struct pb_backend *be, struct pb_stage *s, struct pb_stage_act *act,
                           const float *dy)
{
    struct pb_err e;
    struct pb_tensor tdy, dx;
    ck_assert(pb_tensor_alloc(be, &tdy, s->out_shape, PB_LAYOUT_PLAIN, PB_MEM_COMM, &e) == 0);
    be->ops->upload(be, tdy.data, dy, pb_shape_count(tdy.shape) * sizeof(float));
    struct pb_step_ctx c = {.train = true, .seed = 7, .mb = act->mb};
    ck_assert_msg(pb_stage_backward(s, &c, s->params, act, &tdy, &dx, &e) == 0, "%s", e.msg);
    pb_backend_free(be, tdy.data);
    size_t n = pb_shape_count(dx.shape);
    float *out = malloc(n * sizeof *out);
    be->ops->download(be, out, dx.data, n * sizeof *out);
    pb_backend_free(be, dx.data);
    return out;
}

float *case_forward(struct case_run *r, const float *x, bool train, struct pb_stage_act *act, int64_t mb)
{
    struct pb_step_ctx c = {.train = train, .seed = 7, .mb = mb};
    return stage_forward_host(r->be, &r->stage, &c, x, act);
}

float *case_backward(struct case_run *r, struct pb_stage_act *act, const float *dy)
{
    return stage_backward_host(r->be, &r->stage, act, dy);
}
