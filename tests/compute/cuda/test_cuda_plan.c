/* tests/compute/cuda/test_cuda_plan.c — the CUDA backend's convolution, pooling and batch-norm plans
 * (harness/compute/cuda/cuda_plan.c) against the real cuDNN, without a GPU (cuDNN's
 * descriptor calls need no device, shared/CUDA.md §3): for every convolution, pooling
 * and batch norm of every zoo model at both presets and of lenet, cuDNN's output shape
 * is pipebench's own shape inference; pooling with ceil_mode takes the padded copy
 * exactly where PyTorch's size exceeds cuDNN's, and the plans' descriptors, read back from
 * cuDNN and computed as cuDNN documents, with cuda_pool.cu's rescale factor (its host and
 * device function pb_cuda_pool_factor), give PyTorch's pooling (values on the host: the
 * kernels themselves run only on a GPU); a wrong output shape is refused. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compute/cuda/cuda_dnn_kernels.h"
#include "harness/compute/cuda/cuda_plan.h"
#include "harness/model/model.h"
#include "workloads/models/workload.h"

#define BATCH 32

struct counts {
    int conv, pool, bn;
};

static const char *shape_str(struct pb_shape s, char *buf, size_t cap)
{
    snprintf(buf, cap, "%dx%dx%dx%d", s.n, s.c, s.h, s.w);
    return buf;
}

/* The pooling a node runs (pool2d.c: global pooling covers its whole input). */
static struct pb_pool_desc pool_of(const struct pb_layer *l)
{
    if (l->cfg.kind != PB_LAYER_GLOBAL_AVGPOOL)
        return l->cfg.pool;
    struct pb_shape s = l->in_shape[0];
    return (struct pb_pool_desc){.kind = PB_POOL_AVG, .kh = s.h, .kw = s.w, .sh = 1, .sw = 1};
}

static void check_conv(const char *where, const struct pb_layer *l)
{
    char a[64], b[64], c[64];
    struct pb_cuda_conv_plan p;
    cudnnStatus_t st = pb_cuda_conv_plan(&p, &l->cfg.conv, l->in_shape[0], l->out_shape);
    ck_assert_msg(st == CUDNN_STATUS_SUCCESS, "%s: conv of %s: %s, cuDNN's output %s, ours %s",
                  where, shape_str(l->in_shape[0], a, sizeof a), cudnnGetErrorString(st),
                  shape_str(p.y_cudnn, b, sizeof b), shape_str(l->out_shape, c, sizeof c));
    ck_assert(pb_shape_eq(p.y_cudnn, l->out_shape));
    pb_cuda_conv_plan_destroy(&p);
}

/* Checks the pooling plan; returns whether it runs on the padded copy. */
static bool check_pool(const char *where, const struct pb_layer *l, bool deterministic)
{
    char a[64], b[64], c[64];
    struct pb_cuda_pool_plan p;
    struct pb_pool_desc d = pool_of(l);
    cudnnStatus_t st = pb_cuda_pool_plan(&p, &d, l->in_shape[0], l->out_shape, deterministic);
    ck_assert_msg(st == CUDNN_STATUS_SUCCESS, "%s: pool %dx%d/%d pad %d%s of %s: %s, cuDNN's %s, "
                  "ours %s", where, d.kh, d.kw, d.sh, d.ph, d.ceil_mode ? " ceil" : "",
                  shape_str(l->in_shape[0], a, sizeof a), cudnnGetErrorString(st),
                  shape_str(p.y_cudnn, b, sizeof b), shape_str(l->out_shape, c, sizeof c));
    ck_assert(pb_shape_eq(p.y_cudnn, l->out_shape));
    bool padded = p.padded;
    ck_assert(p.rescale == (padded && d.kind == PB_POOL_AVG));
    pb_cuda_pool_plan_destroy(&p);
    return padded;
}

static void check_bn(const char *where, const struct pb_layer *l)
{
    struct pb_cuda_bn_plan p;
    ck_assert_msg(pb_cuda_bn_plan(&p, l->in_shape[0]) == CUDNN_STATUS_SUCCESS, "%s", where);
    cudnnDataType_t t;
    int n, c, h, w, sn, sc, sh, sw;
    ck_assert(cudnnGetTensor4dDescriptor(p.param, &t, &n, &c, &h, &w, &sn, &sc, &sh, &sw) ==
              CUDNN_STATUS_SUCCESS);
    ck_assert_msg(t == CUDNN_DATA_FLOAT && n == 1 && c == l->cfg.channels && h == 1 && w == 1,
                  "%s: cuDNN's BN parameters %dx%dx%dx%d for %d channels", where, n, c, h, w,
                  l->cfg.channels);
    pb_cuda_bn_plan_destroy(&p);
}

/* Every convolution, pooling and batch norm of m; pooling planned both ways. */
static void check_model(const struct pb_model *m, const char *what, struct counts *n)
{
    char where[256];
    for (int i = 0; i < m->nblocks; i++)
        for (int j = 0; j < m->blocks[i].nnodes; j++) {
            const struct pb_layer *l = &m->blocks[i].nodes[j];
            snprintf(where, sizeof where, "%s %s.%s", what, m->blocks[i].name, l->name);
            switch (l->cfg.kind) {
            case PB_LAYER_CONV2D:
                check_conv(where, l);
                n->conv++;
                break;
            case PB_LAYER_MAXPOOL2D:
            case PB_LAYER_AVGPOOL2D:
            case PB_LAYER_GLOBAL_AVGPOOL:
                check_pool(where, l, false);
                check_pool(where, l, true);
                n->pool++;
                break;
            case PB_LAYER_BATCHNORM2D:
                check_bn(where, l);
                n->bn++;
                break;
            default:
                break;
            }
        }
}

/* Every image model of the zoo at both presets, and lenet. */
START_TEST(test_zoo_shapes)
{
    static const char *const zoo[] = {"alexnet", "resnet101", "inceptionv3", "vgg16",
                                      "googlenet", "densenet121", NULL};
    struct pb_err e;
    struct counts total = {0};
    for (int i = 0; zoo[i]; i++) {
        const struct pb_workload *w = pb_workload_find(zoo[i], NULL);
        ck_assert(w != NULL);
        static const char *const presets[] = {"small", "paper"};
        for (int k = 0; k < 2; k++) {
            const struct pb_preset *p;
            ck_assert_msg(pb_workload_preset(w, presets[k], &p, &e) == 0, "%s", e.msg);
            struct pb_model m;
            ck_assert_msg(w->build(&m, p, pb_preset_sample(p), p->classes, &e) == 0, "%s", e.msg);
            ck_assert_msg(pb_model_finalize(&m, BATCH, &e) == 0, "%s", e.msg);
            char what[64];
            snprintf(what, sizeof what, "%s %s", zoo[i], presets[k]);
            struct counts n = {0};
            check_model(&m, what, &n);
            ck_assert_msg(n.conv > 0 && n.pool > 0, "%s: %d convolutions, %d poolings", what,
                          n.conv, n.pool);
            total.conv += n.conv;
            total.pool += n.pool;
            total.bn += n.bn;
            pb_model_finish(&m);
        }
    }
    const struct pb_workload *w = pb_workload_find("lenet", NULL);
    struct pb_model m;
    ck_assert_msg(w->build(&m, NULL, (struct pb_shape){1, 1, 28, 28}, 10, &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_model_finalize(&m, BATCH, &e) == 0, "%s", e.msg);
    struct counts n = {0};
    check_model(&m, "lenet", &n);
    ck_assert(n.conv == 2 && n.pool == 2 && n.bn == 2);
    pb_model_finish(&m);
    /* 625 convolutions, 615 batch norms and 80 poolings at main fa51171 */
    ck_assert_msg(total.conv > 500 && total.bn > 500 && total.pool > 50,
                  "%d convolutions, %d batch norms, %d poolings", total.conv, total.bn, total.pool);
}
END_TEST

/* Pooling with ceil_mode, both kinds and divisors, on sides where PyTorch's rounding up
 * adds a window (cuDNN's size is one less: the padded copy) and where it does not. */
START_TEST(test_ceil_mode)
{
    struct {
        int side, k, s, p;
        bool padded;  /* PyTorch's size exceeds cuDNN's */
    } cases[] = {
        {112, 3, 2, 0, true},   /* torchvision GoogLeNet's maxpool: 56, cuDNN 55 */
        {6, 3, 2, 0, true},     /* 3 against 2 */
        {7, 2, 2, 0, true},     /* 4 against 3 */
        {5, 2, 2, 1, false},    /* 4 would start in the right padding: 3 as cuDNN */
        {9, 3, 3, 1, true},     /* 4 against 3 */
        {8, 3, 2, 1, true},     /* 5 against 4 */
        {15, 3, 2, 1, false},   /* 8 either way */
        {13, 2, 2, 0, true},    /* 7 against 6 */
    };
    struct pb_err e;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int kind = 0; kind < 3; kind++) {
            struct pb_model m;
            int side = cases[i].side;
            pb_model_init(&m, "ceil", (struct pb_shape){1, 3, side, side + 1}, 0);
            struct pb_block *b = pb_model_block(&m, "pool");
            struct pb_layer_cfg cfg = {
                .kind = kind == 0 ? PB_LAYER_MAXPOOL2D : PB_LAYER_AVGPOOL2D,
                .pool = {kind == 0 ? PB_POOL_MAX : PB_POOL_AVG, cases[i].k, cases[i].k, cases[i].s,
                         cases[i].s, cases[i].p, cases[i].p, true, kind == 2},
            };
            int in = -1;
            pb_block_node(&m, b, "pool", &cfg, 1, &in);
            ck_assert_msg(pb_model_finalize(&m, 4, &e) == 0, "%s", e.msg);
            char where[96];
            snprintf(where, sizeof where, "ceil case %zu kind %d", i, kind);
            const struct pb_layer *l = &m.blocks[0].nodes[0];
            bool padded = check_pool(where, l, false);
            /* the rows decide alone: the width side + 1 may add a column of its own */
            int oh = l->out_shape.h, floor_h = (side + 2 * cases[i].p - cases[i].k) / cases[i].s + 1;
            ck_assert_msg((oh > floor_h) == cases[i].padded, "%s: %d rows, cuDNN's rounding %d",
                          where, oh, floor_h);
            ck_assert(!cases[i].padded || padded);
            pb_model_finish(&m);
        }
}
END_TEST

/* ---- the pooling plans' arithmetic, on the host ----
 * What cuDNN documents its pooling to compute, run here on the plan's own descriptors read
 * back from cuDNN (mode, window, padding, stride; xp's dims), with the fill and the
 * rescale cuda_pool.c and cuda_pool.cu apply, against PyTorch's pooling computed
 * directly: the padded copy, the mode and the divisors together give PyTorch's results. */

/* PyTorch's max or average pooling of plane x [h, w] at (oh, ow) */
static float torch_pool(const struct pb_pool_desc *d, const float *x, int h, int w, int oh, int ow)
{
    int hs = oh * d->sh - d->ph, ws = ow * d->sw - d->pw;
    int he = hs + d->kh < h + d->ph ? hs + d->kh : h + d->ph;
    int we = ws + d->kw < w + d->pw ? ws + d->kw : w + d->pw;
    int size = (he - hs) * (we - ws);
    hs = hs > 0 ? hs : 0, ws = ws > 0 ? ws : 0, he = he < h ? he : h, we = we < w ? we : w;
    float m = -INFINITY;
    double sum = 0;
    for (int i = hs; i < he; i++)
        for (int j = ws; j < we; j++) {
            m = x[i * w + j] > m ? x[i * w + j] : m;
            sum += x[i * w + j];
        }
    if (d->kind == PB_POOL_MAX)
        return m;
    return (float)(sum / (d->exclude_pad ? (he - hs) * (we - ws) : size));
}

/* cuDNN's pooling (mode, window k, padding p, stride s) of plane x [h, w] at (oh, ow):
 * the padding is skipped by max and by the exclude-padding average, counted by the other */
static float cudnn_pool(cudnnPoolingMode_t mode, const int *k, const int *p, const int *s,
                        const float *x, int h, int w, int oh, int ow)
{
    int hs = oh * s[0] - p[0], ws = ow * s[1] - p[1];
    ck_assert_msg(hs + k[0] <= h + p[0] && ws + k[1] <= w + p[1], "window past the padding");
    float m = -INFINITY;
    double sum = 0;
    int inside = 0;
    for (int i = hs; i < hs + k[0]; i++)
        for (int j = ws; j < ws + k[1]; j++)
            if (i >= 0 && i < h && j >= 0 && j < w) {
                m = x[i * w + j] > m ? x[i * w + j] : m;
                sum += x[i * w + j];
                inside++;
            }
    if (mode == CUDNN_POOLING_MAX || mode == CUDNN_POOLING_MAX_DETERMINISTIC)
        return m;
    return (float)(sum / (mode == CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING ? inside
                                                                               : k[0] * k[1]));
}

/* One plane of h × w pooled by d both ways: the largest relative difference; *padded
 * whether the plan takes the padded copy. */
static double plan_vs_torch(const struct pb_pool_desc *d, int h, int w, bool *padded)
{
    struct pb_shape xs = {1, 1, h, w};
    int oh = 0, ow = 0;
    {
        /* PyTorch's sizes: pipebench's inference (one pool layer of a model) */
        struct pb_model m;
        struct pb_err e;
        pb_model_init(&m, "pool", xs, 0);
        struct pb_layer_cfg cfg = {.kind = d->kind == PB_POOL_MAX ? PB_LAYER_MAXPOOL2D
                                                                  : PB_LAYER_AVGPOOL2D,
                                   .pool = *d};
        int in = -1;
        pb_block_node(&m, pb_model_block(&m, "pool"), "pool", &cfg, 1, &in);
        ck_assert_msg(pb_model_finalize(&m, 1, &e) == 0, "%s", e.msg);
        oh = m.blocks[0].out_shape.h, ow = m.blocks[0].out_shape.w;
        pb_model_finish(&m);
    }
    struct pb_cuda_pool_plan p;
    ck_assert(pb_cuda_pool_plan(&p, d, xs, (struct pb_shape){1, 1, oh, ow}, false) ==
              CUDNN_STATUS_SUCCESS);
    cudnnPoolingMode_t mode;
    cudnnNanPropagation_t nan;
    int k[2], pad[2], str[2];
    ck_assert(cudnnGetPooling2dDescriptor(p.pool, &mode, &nan, &k[0], &k[1], &pad[0], &pad[1],
                                          &str[0], &str[1]) == CUDNN_STATUS_SUCCESS);
    /* the plane cuDNN pools: x, or xp with x at its top left and the fill elsewhere */
    int ph = h, pw = w;
    if (p.padded) {
        cudnnDataType_t t;
        int n, c, sn, sc, sh, sw;
        ck_assert(cudnnGetTensor4dDescriptor(p.xp, &t, &n, &c, &ph, &pw, &sn, &sc, &sh, &sw) ==
                  CUDNN_STATUS_SUCCESS);
        ck_assert(ph >= h && pw >= w);
    }
    float *x = malloc(sizeof(float) * (size_t)h * w), *xp = malloc(sizeof(float) * (size_t)ph * pw);
    for (int i = 0; i < h * w; i++)
        x[i] = (float)((i * 7919) % 257) / 128.0f - 1.0f;  /* negative and positive */
    for (int i = 0; i < ph; i++)
        for (int j = 0; j < pw; j++)
            xp[i * pw + j] = i < h && j < w ? x[i * w + j]
                             : d->kind == PB_POOL_MAX ? -INFINITY : 0.0f;
    double worst = 0;
    for (int i = 0; i < oh; i++)
        for (int j = 0; j < ow; j++) {
            float got = cudnn_pool(mode, k, pad, str, xp, ph, pw, i, j);
            if (p.rescale)
                got *= pb_cuda_pool_factor(d, h, w, i, j);  /* cuda_pool.cu's, on the host */
            float want = torch_pool(d, x, h, w, i, j);
            double rel = fabs((double)got - want) / (fabs(want) > 1e-3 ? fabs(want) : 1e-3);
            worst = rel > worst ? rel : worst;
        }
    free(x);
    free(xp);
    *padded = p.padded;
    pb_cuda_pool_plan_destroy(&p);
    return worst;
}

START_TEST(test_pool_arithmetic)
{
    static const int geo[][3] = {{2, 2, 0}, {3, 2, 0}, {3, 2, 1}, {3, 1, 1}, {3, 3, 1},
                                 {2, 2, 1}, {5, 3, 2}, {4, 4, 0}};
    int padded = 0, runs = 0;
    for (size_t g = 0; g < sizeof geo / sizeof geo[0]; g++)
        for (int side = geo[g][0]; side <= 13; side++)
            for (int v = 0; v < 6; v++) {
                struct pb_pool_desc d = {v < 2 ? PB_POOL_MAX : PB_POOL_AVG, geo[g][0], geo[g][0],
                                         geo[g][1], geo[g][1], geo[g][2], geo[g][2], v % 2 == 1,
                                         v >= 4};
                bool pad;
                double worst = plan_vs_torch(&d, side, side + 2, &pad);
                ck_assert_msg(worst < 1e-6, "pool %d/%d pad %d%s%s on %dx%d: off by %g",
                              d.kh, d.sh, d.ph, d.ceil_mode ? " ceil" : "",
                              d.kind == PB_POOL_MAX ? " max" : d.exclude_pad ? " avg excl" : " avg",
                              side, side + 2, worst);
                runs++;
                padded += pad;
            }
    ck_assert_msg(runs > 300 && padded > 50, "%d cases, %d padded", runs, padded);
}
END_TEST

/* A shape that does not fit is refused, and cuDNN's own is reported. */
START_TEST(test_wrong_shapes)
{
    struct pb_conv_desc c = {.cin = 3, .cout = 8, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1,
                             .pw = 1, .bias = true};
    struct pb_shape x = {4, 3, 15, 16}, y = {4, 8, 8, 8};
    struct pb_cuda_conv_plan cp;
    ck_assert(pb_cuda_conv_plan(&cp, &c, x, y) == CUDNN_STATUS_SUCCESS);
    pb_cuda_conv_plan_destroy(&cp);
    struct pb_shape wrong = {4, 8, 7, 8};
    ck_assert(pb_cuda_conv_plan(&cp, &c, x, wrong) == CUDNN_STATUS_BAD_PARAM);
    ck_assert(pb_shape_eq(cp.y_cudnn, y));
    ck_assert(cp.x == NULL && cp.conv == NULL);
    struct pb_shape x4 = {4, 4, 15, 16};   /* channels other than cin */
    ck_assert(pb_cuda_conv_plan(&cp, &c, x4, y) == CUDNN_STATUS_BAD_PARAM);

    struct pb_pool_desc pd = {PB_POOL_MAX, 3, 3, 2, 2, 0, 0, true, false};
    struct pb_shape px = {2, 5, 6, 6}, py = {2, 5, 3, 3};
    struct pb_cuda_pool_plan pp;
    ck_assert(pb_cuda_pool_plan(&pp, &pd, px, py, false) == CUDNN_STATUS_SUCCESS && pp.padded);
    pb_cuda_pool_plan_destroy(&pp);
    /* cuDNN's own rounding down is not PyTorch's ceil_mode size */
    struct pb_shape floor_y = {2, 5, 2, 2};
    ck_assert(pb_cuda_pool_plan(&pp, &pd, px, floor_y, false) == CUDNN_STATUS_BAD_PARAM);
    ck_assert(pb_shape_eq(pp.y_cudnn, py));
    ck_assert(pp.pool == NULL && pp.x == NULL);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("cuda_plan");
    TCase *tc = tcase_create("plans");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_zoo_shapes);
    tcase_add_test(tc, test_ceil_mode);
    tcase_add_test(tc, test_pool_arithmetic);
    tcase_add_test(tc, test_wrong_shapes);
    suite_add_tcase(s, tc);
    return s;
}
