/* tests/test_blocks.c — the zoo's composite blocks (workloads/blocks.h). "build": every
 * builder appends one block whose finalised output shape is the channel count it returns,
 * with torchvision 0.14's (and kuangliu's) parameter counts at the real widths. */
#include <check.h>
#include <string.h>

#include "workloads/blocks.h"

/* Finalises m for batch 2 and checks block i's output [2, c, h, w]. */
static void expect_out(const struct pb_model *m, int i, int c, int h, int w)
{
    struct pb_shape s = m->blocks[i].out_shape;
    ck_assert_msg(s.n == 2 && s.c == c && s.h == h && s.w == w,
                  "block %d ('%s'): [%d, %d, %d, %d], expected [2, %d, %d, %d]", i,
                  m->blocks[i].name, s.n, s.c, s.h, s.w, c, h, w);
}

static void finalize(struct pb_model *m)
{
    struct pb_err e;
    ck_assert_msg(pb_model_finalize(m, 2, &e) == 0, "%s", e.msg);
}

/* Mixed_5b … Mixed_7c of torchvision's inception_v3 on its 35×35×192 feature map; the
 * counts are sum(p.numel() for p in model.Mixed_X.parameters()) in torchvision 0.14. */
START_TEST(test_inception_v3_widths)
{
    static const struct {
        const char *name;
        char kind;
        int arg;
        size_t nparams;
        int c, side;
    } mixed[] = {
        {"Mixed_5b", 'A', 32, 255904, 256, 35},   {"Mixed_5c", 'A', 64, 277472, 288, 35},
        {"Mixed_5d", 'A', 64, 285152, 288, 35},   {"Mixed_6a", 'B', 0, 1153280, 768, 17},
        {"Mixed_6b", 'C', 128, 1297408, 768, 17}, {"Mixed_6c", 'C', 160, 1691008, 768, 17},
        {"Mixed_6d", 'C', 160, 1691008, 768, 17}, {"Mixed_6e", 'C', 192, 2141952, 768, 17},
        {"Mixed_7a", 'D', 0, 1698304, 1280, 8},   {"Mixed_7b", 'E', 0, 5044608, 2048, 8},
        {"Mixed_7c", 'E', 0, 6076800, 2048, 8},
    };
    int n = (int)(sizeof mixed / sizeof mixed[0]);
    for (int div = 1; div <= 8; div *= 8) {
        struct pb_model m;
        int c = 192 / div;
        pb_model_init(&m, "inception", (struct pb_shape){1, c, 35, 35}, 0);
        int ret[16];
        for (int i = 0; i < n; i++) {
            int a = mixed[i].arg;
            switch (mixed[i].kind) {
            case 'A': c = pb_zoo_inception_a(&m, mixed[i].name, c, a, div); break;
            case 'B': c = pb_zoo_inception_b(&m, mixed[i].name, c, div); break;
            case 'C': c = pb_zoo_inception_c(&m, mixed[i].name, c, a, div); break;
            case 'D': c = pb_zoo_inception_d(&m, mixed[i].name, c, div); break;
            default: c = pb_zoo_inception_e(&m, mixed[i].name, c, div); break;
            }
            ret[i] = c;
        }
        finalize(&m);
        ck_assert_int_eq(m.nblocks, n);
        for (int i = 0; i < n; i++) {
            ck_assert_str_eq(m.blocks[i].name, mixed[i].name);
            int s = mixed[i].side;
            expect_out(&m, i, ret[i], s, s);
            if (div == 1) {
                ck_assert_int_eq(ret[i], mixed[i].c);
                ck_assert_msg(m.blocks[i].nparams == mixed[i].nparams, "%s: %zu parameters, "
                              "torchvision has %zu", mixed[i].name, m.blocks[i].nparams,
                              mixed[i].nparams);
            }
        }
        pb_model_finish(&m);
    }
}
END_TEST

/* Every width divided by div, at least 1: InceptionA(8, pool_features 32) at div 16 has
 * branches 64/16 = 4, 64/16 = 4, 96/16 = 6 and 32/16 = 2; at div 64, 1 + 1 + 1 + 1. */
START_TEST(test_inception_div)
{
    struct pb_model m;
    pb_model_init(&m, "a", (struct pb_shape){1, 8, 5, 5}, 0);
    ck_assert_int_eq(pb_zoo_inception_a(&m, "a16", 8, 32, 16), 4 + 4 + 6 + 2);
    ck_assert_int_eq(pb_zoo_inception_a(&m, "a64", 16, 32, 64), 4);
    ck_assert_int_eq(pb_zoo_inception_b(&m, "b", 4, 1000), 1 + 1 + 4);
    finalize(&m);
    expect_out(&m, 2, 6, 2, 2);
    pb_model_finish(&m);
}
END_TEST

/* torchvision's resnet101: layer1.0 (projection: 64 → 256 channels), layer1.1
 * (identity), layer2.0 (projection, stride 2) and layer4.2 on 56×56 inputs. */
START_TEST(test_bottleneck)
{
    struct pb_model m;
    pb_model_init(&m, "resnet", (struct pb_shape){1, 64, 56, 56}, 0);
    ck_assert_int_eq(pb_zoo_bottleneck(&m, "layer1.0", 64, 64, 1), 256);
    ck_assert_int_eq(pb_zoo_bottleneck(&m, "layer1.1", 256, 64, 1), 256);
    ck_assert_int_eq(pb_zoo_bottleneck(&m, "layer2.0", 256, 128, 2), 512);
    ck_assert_int_eq(pb_zoo_bottleneck(&m, "layer2.1", 512, 128, 1), 512);
    finalize(&m);
    expect_out(&m, 0, 256, 56, 56);
    expect_out(&m, 2, 512, 28, 28);
    expect_out(&m, 3, 512, 28, 28);
    static const size_t counts[] = {75008, 70400, 379392, 280064};
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(m.blocks[i].nparams, counts[i]);
    /* the identity block has no downsample layers, the projections do */
    ck_assert_int_eq(m.blocks[1].nnodes, m.blocks[0].nnodes - 2);
    ck_assert_str_eq(m.blocks[2].nodes[m.blocks[2].nnodes - 3].name, "downsample.1");
    pb_model_finish(&m);

    pb_model_init(&m, "layer4", (struct pb_shape){1, 2048, 7, 7}, 0);
    ck_assert_int_eq(pb_zoo_bottleneck(&m, "layer4.2", 2048, 512, 1), 2048);
    finalize(&m);
    ck_assert_uint_eq(m.blocks[0].nparams, 4462592);
    pb_model_finish(&m);
}
END_TEST

/* kuangliu's CIFAR GoogLeNet: a3 = Inception(192, 64, 96, 128, 16, 32, 32) and
 * b5 = Inception(832, 384, 192, 384, 48, 128, 128), counted with PyTorch. */
START_TEST(test_googlenet_inception)
{
    struct pb_model m;
    pb_model_init(&m, "googlenet", (struct pb_shape){1, 192, 32, 32}, 0);
    ck_assert_int_eq(pb_zoo_googlenet_inception(&m, "a3", 192, 64, 96, 128, 16, 32, 32), 256);
    finalize(&m);
    expect_out(&m, 0, 256, 32, 32);
    ck_assert_uint_eq(m.blocks[0].nparams, 165552);
    pb_model_finish(&m);
    pb_model_init(&m, "googlenet", (struct pb_shape){1, 832, 8, 8}, 0);
    ck_assert_int_eq(pb_zoo_googlenet_inception(&m, "b5", 832, 384, 192, 384, 48, 128, 128), 1024);
    finalize(&m);
    expect_out(&m, 0, 1024, 8, 8);
    ck_assert_uint_eq(m.blocks[0].nparams, 1496144);
    pb_model_finish(&m);
}
END_TEST

/* kuangliu's CIFAR DenseNet-121: the first dense layer (64 channels in, growth 32:
 * 2·64 + 64·128 + 2·128 + 128·32·9 = 45440) and a transition 256 → 128 (2·256 + 256·128). */
START_TEST(test_densenet)
{
    struct pb_model m;
    pb_model_init(&m, "densenet", (struct pb_shape){1, 64, 32, 32}, 0);
    int c = 64;
    for (int i = 0; i < 6; i++) {
        char name[32];
        snprintf(name, sizeof name, "dense1.%d", i);
        c = pb_zoo_dense_layer(&m, name, c, 32);
    }
    ck_assert_int_eq(c, 256);
    ck_assert_int_eq(pb_zoo_transition(&m, "trans1", c, 128), 128);
    finalize(&m);
    expect_out(&m, 0, 96, 32, 32);
    expect_out(&m, 5, 256, 32, 32);
    expect_out(&m, 6, 128, 16, 16);
    ck_assert_uint_eq(m.blocks[0].nparams, 45440);
    ck_assert_uint_eq(m.blocks[6].nparams, 33280);
    pb_model_finish(&m);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("blocks");
    TCase *tc = tcase_create("build");
    tcase_add_test(tc, test_inception_v3_widths);
    tcase_add_test(tc, test_inception_div);
    tcase_add_test(tc, test_bottleneck);
    tcase_add_test(tc, test_googlenet_inception);
    tcase_add_test(tc, test_densenet);
    suite_add_tcase(s, tc);
    return s;
}
