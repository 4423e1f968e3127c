/* tests/support/block_cases.c — the composite-block cases (block_cases.h): the fixture instances
 * of fixtures_blocks.py and the tinier ones of the finite-difference check. */
#include "tests/support/block_cases.h"

#include <check.h>
#include <string.h>

#include "harness/compute/cpu/cpu_backend.h"
#include "workloads/models/blocks.h"

static void bneck_proj(struct pb_model *m, const char *n, int cin) { pb_zoo_bottleneck(m, n, cin, 4, 2); }
static void bneck_id(struct pb_model *m, const char *n, int cin) { pb_zoo_bottleneck(m, n, cin, cin / 4, 1); }
static void incep_a(struct pb_model *m, const char *n, int cin) { pb_zoo_inception_a(m, n, cin, 32, 8); }
static void incep_b(struct pb_model *m, const char *n, int cin) { pb_zoo_inception_b(m, n, cin, 8); }
static void incep_c(struct pb_model *m, const char *n, int cin) { pb_zoo_inception_c(m, n, cin, 4, 1); }
static void incep_c_div(struct pb_model *m, const char *n, int cin) { pb_zoo_inception_c(m, n, cin, 16, 8); }
static void incep_d(struct pb_model *m, const char *n, int cin) { pb_zoo_inception_d(m, n, cin, 16); }
static void incep_e(struct pb_model *m, const char *n, int cin) { pb_zoo_inception_e(m, n, cin, 16); }
static void googlenet(struct pb_model *m, const char *n, int cin) { pb_zoo_googlenet_inception(m, n, cin, 4, 3, 6, 2, 4, 3); }
static void dense_layer(struct pb_model *m, const char *n, int cin) { pb_zoo_dense_layer(m, n, cin, 4); }
static void transition(struct pb_model *m, const char *n, int cin) { pb_zoo_transition(m, n, cin, 5); }

/* tiny widths for finite differences: few outputs keep the float32 noise of L small */
static void g_bneck_proj(struct pb_model *m, const char *n, int cin) { pb_zoo_bottleneck(m, n, cin, 2, 2); }
static void g_incep_a(struct pb_model *m, const char *n, int cin) { pb_zoo_inception_a(m, n, cin, 32, 32); }
static void g_incep_b(struct pb_model *m, const char *n, int cin) { pb_zoo_inception_b(m, n, cin, 32); }
static void g_incep_c(struct pb_model *m, const char *n, int cin) { pb_zoo_inception_c(m, n, cin, 64, 64); }
static void g_incep_d(struct pb_model *m, const char *n, int cin) { pb_zoo_inception_d(m, n, cin, 64); }
static void g_incep_e(struct pb_model *m, const char *n, int cin) { pb_zoo_inception_e(m, n, cin, 64); }
static void g_googlenet(struct pb_model *m, const char *n, int cin) { pb_zoo_googlenet_inception(m, n, cin, 2, 2, 3, 2, 2, 2); }
static void g_dense_layer(struct pb_model *m, const char *n, int cin) { pb_zoo_dense_layer(m, n, cin, 2); }
static void g_transition(struct pb_model *m, const char *n, int cin) { pb_zoo_transition(m, n, cin, 3); }

const struct block_case block_fixture_cases[] = {
    {"bneck_proj", {2, 8, 6, 6}, bneck_proj},
    {"bneck_id", {2, 16, 5, 5}, bneck_id},
    {"incep_a", {2, 10, 5, 5}, incep_a},
    {"incep_b", {2, 10, 7, 7}, incep_b},
    {"incep_c", {2, 4, 3, 3}, incep_c},
    {"incep_c_div", {2, 10, 4, 4}, incep_c_div},
    {"incep_d", {2, 10, 7, 7}, incep_d},
    {"incep_e", {2, 10, 3, 3}, incep_e},
    {"googlenet", {2, 8, 5, 5}, googlenet},
    {"dense_layer", {2, 6, 5, 5}, dense_layer},
    {"transition", {2, 10, 6, 6}, transition},
};
const int n_block_fixture_cases = (int)(sizeof block_fixture_cases / sizeof block_fixture_cases[0]);

const struct block_case block_grad_cases[] = {
    {"bneck_proj", {2, 4, 4, 4}, g_bneck_proj},
    {"bneck_id", {2, 8, 3, 3}, bneck_id},
    {"incep_a", {2, 3, 3, 3}, g_incep_a},
    {"incep_b", {2, 3, 7, 7}, g_incep_b},
    {"incep_c", {2, 3, 3, 3}, g_incep_c},
    {"incep_d", {2, 3, 7, 7}, g_incep_d},
    {"incep_e", {2, 3, 3, 3}, g_incep_e},
    {"googlenet", {2, 3, 3, 3}, g_googlenet},
    {"dense_layer", {2, 3, 3, 3}, g_dense_layer},
    {"transition", {2, 4, 4, 4}, g_transition},
};
const int n_block_grad_cases = (int)(sizeof block_grad_cases / sizeof block_grad_cases[0]);

const struct block_case *block_case_find(const struct block_case *cases, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(cases[i].name, name))
            return &cases[i];
    ck_abort_msg("no block case %s", name);
    return NULL;
}

void block_run_init(struct case_run *r, const struct block_case *c, uint64_t seed)
{
    struct pb_err e;
    pb_model_init(&r->model, c->name, c->x, 0);
    c->build(&r->model, c->name, c->x.c);
    ck_assert_int_eq(r->model.nblocks, 1);
    ck_assert_msg(pb_model_finalize(&r->model, c->x.n, &e) == 0, "%s", e.msg);
    r->be = pb_backend_cpu_create(1, &e);
    ck_assert_msg(r->be != NULL, "%s", e.msg);
    ck_assert_msg(pb_stage_init(&r->stage, r->be, &r->model, 1, 3, 0, 1, &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_stage_init_params(&r->stage, seed, &e) == 0, "%s", e.msg);
}
