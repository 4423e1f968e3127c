/* tests/model/test_model.c — building a chain of blocks: shapes are inferred and checked when
 * the model is finalised, so a chain that does not fit is a clear error naming the
 * block and the shapes, never a crash; the partitioner cuts at block boundaries. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "harness/model/model.h"
#include "workloads/models/workload.h"

static void expect_error(struct pb_model *m, int batch, const char *const *fragments)
{
    struct pb_err e;
    ck_assert_int_eq(pb_model_finalize(m, batch, &e), -1);
    for (int i = 0; fragments[i]; i++)
        ck_assert_msg(strstr(e.msg, fragments[i]), "message lacks '%s': %s", fragments[i], e.msg);
    pb_model_finish(m);
}

#define EXPECT(m, batch, ...) expect_error(m, batch, (const char *const[]){__VA_ARGS__, NULL})

START_TEST(test_linear_in_features)
{
    struct pb_model m;
    pb_model_init(&m, "bad", (struct pb_shape){1, 1, 28, 28}, 10);
    pb_block_flatten(&m, pb_model_block(&m, "flat"), "flatten");
    pb_block_linear(&m, pb_model_block(&m, "fc1"), "linear", 100, 10);
    EXPECT(&m, 4, "block 1 ('fc1')", "expects [N, 100]", "[4, 784, 1, 1]");
}
END_TEST

START_TEST(test_linear_needs_flatten)
{
    struct pb_model m;
    pb_model_init(&m, "bad", (struct pb_shape){1, 1, 28, 28}, 10);
    pb_block_linear(&m, pb_model_block(&m, "fc1"), "linear", 784, 10);
    EXPECT(&m, 4, "flatten");
}
END_TEST

START_TEST(test_conv_channels_and_kernel)
{
    struct pb_model m;
    pb_model_init(&m, "bad", (struct pb_shape){1, 3, 8, 8}, 10);
    pb_block_conv(&m, pb_model_block(&m, "c1"), "conv", 1, 8, 3, 3, 1, 1, 1, true);
    EXPECT(&m, 2, "'c1'", "expects 1 input channels", "[2, 3, 8, 8]");
    pb_model_init(&m, "bad", (struct pb_shape){1, 3, 8, 8}, 10);
    pb_block_conv(&m, pb_model_block(&m, "c1"), "conv", 3, 8, 11, 11, 1, 0, 0, true);
    EXPECT(&m, 2, "11x11", "does not fit");
}
END_TEST

START_TEST(test_residual_branches_differ)
{
    struct pb_model m;
    pb_model_init(&m, "bad", (struct pb_shape){1, 8, 8, 8}, 10);
    struct pb_block *b = pb_model_block(&m, "res");
    int c = pb_block_conv(&m, b, "conv", 8, 16, 3, 3, 1, 1, 1, false);
    int in[2] = {c, -1};
    pb_block_node(&m, b, "add", &(struct pb_layer_cfg){.kind = PB_LAYER_ADD}, 2, in);
    EXPECT(&m, 2, "'res'", "add", "[2, 16, 8, 8]", "[2, 8, 8, 8]");
}
END_TEST

START_TEST(test_concat_spatial_mismatch)
{
    struct pb_model m;
    pb_model_init(&m, "bad", (struct pb_shape){1, 8, 8, 8}, 10);
    struct pb_block *b = pb_model_block(&m, "mix");
    int x = -1, in[2];
    struct pb_layer_cfg a = {.kind = PB_LAYER_CONV2D, .conv = {8, 4, 1, 1, 1, 1, 0, 0, true}};
    struct pb_layer_cfg s = {.kind = PB_LAYER_CONV2D, .conv = {8, 4, 3, 3, 2, 2, 1, 1, true}};
    in[0] = pb_block_node(&m, b, "a", &a, 1, &x);
    in[1] = pb_block_node(&m, b, "s", &s, 1, &x);
    pb_block_node(&m, b, "cat", &(struct pb_layer_cfg){.kind = PB_LAYER_CONCAT}, 2, in);
    EXPECT(&m, 2, "concat 'cat'", "N, H, W must match");
}
END_TEST

START_TEST(test_logits)
{
    struct pb_model m;
    pb_model_init(&m, "bad", (struct pb_shape){1, 1, 28, 28}, 10);
    pb_block_flatten(&m, pb_model_block(&m, "flat"), "flatten");
    pb_block_linear(&m, pb_model_block(&m, "fc"), "linear", 784, 7);
    EXPECT(&m, 4, "ends in [4, 7, 1, 1]", "[4, 10] logits");
}
END_TEST

START_TEST(test_batchnorm_needs_values)
{
    struct pb_model m;
    pb_model_init(&m, "bad", (struct pb_shape){1, 4, 1, 1}, 4);
    struct pb_block *b = pb_model_block(&m, "bn");
    pb_block_bn(&m, b, "bn", 4);
    pb_block_flatten(&m, b, "flatten");
    EXPECT(&m, 1, "more than one value per channel");
}
END_TEST

/* Every registered model fits (those without presets on 1×28×28 and 10 classes, each
 * preset of the others on its own 3×S×S and head), and the partitioner gives contiguous,
 * non-empty stages for D = 1 … 8. */
static void check_partitions(const struct pb_workload *w, const struct pb_preset *p)
{
    struct pb_err e;
    struct pb_model m;
    struct pb_shape in = p ? pb_preset_sample(p)
                         : w->steps ? (struct pb_shape){1, w->steps, 1, 1}
                                    : (struct pb_shape){1, 1, 28, 28};
    int classes = p ? p->classes : w->steps ? 2 : 10;
    ck_assert_msg(w->build(&m, p, in, classes, &e) == 0, "%s: %s", w->name, e.msg);
    ck_assert_msg(pb_model_finalize(&m, w->steps ? 2 : 16, &e) == 0, "%s: %s", w->name, e.msg);
    for (int d = 1; d <= 8 && d <= m.nblocks; d++) {
        int bounds[9];
        ck_assert(pb_partition_balanced(&m, d, bounds, &e) == 0);
        ck_assert(bounds[0] == 0 && bounds[d] == m.nblocks);
        for (int k = 0; k < d; k++)
            ck_assert(bounds[k] < bounds[k + 1]);
    }
    int *bounds = calloc((size_t)m.nblocks + 2, sizeof *bounds);
    ck_assert_int_eq(pb_partition_balanced(&m, m.nblocks + 1, bounds, &e), -1);
    ck_assert(strstr(e.msg, "at most"));
    free(bounds);
    pb_model_finish(&m);
}

START_TEST(test_zoo_partitions)
{
    for (int i = 0; pb_workloads[i]; i++) {
        const struct pb_preset *p = pb_workloads[i]->presets;
        if (!p)
            check_partitions(pb_workloads[i], NULL);
        for (; p && p->name; p++)
            check_partitions(pb_workloads[i], p);
    }
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("shapes");
    tcase_add_test(tc, test_linear_in_features);
    tcase_add_test(tc, test_linear_needs_flatten);
    tcase_add_test(tc, test_conv_channels_and_kernel);
    tcase_add_test(tc, test_residual_branches_differ);
    tcase_add_test(tc, test_concat_spatial_mismatch);
    tcase_add_test(tc, test_logits);
    tcase_add_test(tc, test_batchnorm_needs_values);
    tcase_add_test(tc, test_zoo_partitions);
    suite_add_tcase(s, tc);
    return s;
}
