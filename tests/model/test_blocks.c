/* tests/model/test_blocks.c — the zoo's composite blocks (workloads/models/blocks.h). "build": every
 * builder appends one block whose finalised output shape is the channel count it returns,
 * with torchvision 0.14's (and kuangliu's) parameter counts at the real widths.
 * "pytorch": one small instance of each block against PyTorch 1.13 (the committed
 * tests/fixtures/blocks.safetensors of fixtures_blocks.py): the torch module's
 * state_dict names map one to one onto the block's checkpoint tensors, shapes equal;
 * loaded through the checkpoint loader, the block's training forward, dx, every
 * parameter gradient, the BatchNorm running statistics after the step and the
 * eval-mode forward match torch's. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/store/checkpoint.h"
#include "tests/support/block_cases.h"
#include "tests/support/test_util.h"
#include "workloads/models/blocks.h"

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

/* BasicConv2d's names: "<name>.conv", "<name>.bn" (its ReLU fused), or without the prefix
 * (a stem block named after the unit); eps as given, the conv without bias. */
START_TEST(test_conv_bn_relu)
{
    struct pb_model m;
    pb_model_init(&m, "stem", (struct pb_shape){1, 3, 9, 9}, 0);
    struct pb_block *b = pb_model_block(&m, "Conv2d_1a_3x3");
    ck_assert_int_eq(pb_zoo_conv_bn_relu(&m, b, "", -1, 3, 8, 3, 3, 2, 0, 0, 1e-3f), 1);
    b = pb_model_block(&m, "stem2");
    int x = pb_zoo_conv_bn_relu(&m, b, "branch7x7_2", -1, 8, 4, 1, 7, 1, 0, 3, 1e-5f);
    ck_assert_int_eq(x, 1);
    finalize(&m);
    static const char *const names[2][2] = {{"conv", "bn"},
                                            {"branch7x7_2.conv", "branch7x7_2.bn"}};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(m.blocks[i].nnodes, 2);
        for (int j = 0; j < 2; j++)
            ck_assert_str_eq(m.blocks[i].nodes[j].name, names[i][j]);
        ck_assert(!m.blocks[i].nodes[0].cfg.conv.bias);
        ck_assert(m.blocks[i].nodes[1].cfg.relu);
    }
    ck_assert(m.blocks[0].nodes[1].cfg.eps == 1e-3f && m.blocks[1].nodes[1].cfg.eps == 1e-5f);
    expect_out(&m, 0, 8, 4, 4);
    expect_out(&m, 1, 4, 4, 4);
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
    ck_assert_str_eq(m.blocks[2].nodes[m.blocks[2].nnodes - 2].name, "downsample.1");
    /* the join: the add with the block's ReLU fused */
    const struct pb_layer *join = &m.blocks[2].nodes[m.blocks[2].nnodes - 1];
    ck_assert(join->cfg.kind == PB_LAYER_ADD && join->cfg.relu);
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

/* ---- parity with PyTorch ----
 * Tolerance: the error of a tensor is max_i |pb_i − torch_i| / max_i |torch_i|, the
 * worst element measured against the tensor's scale (elementwise relative error is
 * meaningless where BatchNorm's backward cancels terms to near zero). Both sides are
 * float32 with different summation orders (oneDNN's blocked kernels and Winograd-free
 * direct convolutions against PyTorch's): a sum of K terms carries about sqrt(K)·2^-24
 * ≈ 6e-8·sqrt(K) of its terms' magnitude, and a block chains up to 6 such layers, each
 * BatchNorm dividing by a batch standard deviation that can amplify what comes in by
 * 1/σ. With K ≤ 2·7·7·12·9 ≈ 10^4 (a 3×3 conv's weight gradient over N·H·W) that is
 * ~1e-5 at worst; measured errors are below 3e-6 (each case prints its own), PyTorch's
 * own float32 results differ from float64 ones by up to 1e-6 on these instances, so 5e-5
 * leaves a margin of about 17 and still fails any wrong wiring, order or constant (a BN
 * eps of 1e-5 instead of Inception's 1e-3 gives errors of 4e-3 to 0.3). Running statistics are means of one forward: 1e-5.
 * A conv's bias feeding a training-mode BatchNorm (every bias in these blocks) has a zero
 * gradient in exact arithmetic, the batch mean subtracted, so both sides hold rounding
 * noise of the dL/dz terms summed; its error is measured against the scale of the same
 * conv's weight gradient, a sum over the same terms (times the inputs). */
#define PARITY_TOL 5e-5
#define STATS_TOL 1e-5

static struct pb_safetensors fx;

static double scale_of(const float *v, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)v[i]));
    return m;
}

/* max |a − b| / max(max |b|, floor), reported and checked against tol. */
static double check_norm(const char *cs, const char *what, const float *a, const float *b,
                         size_t n, double tol, double floor)
{
    double err = 0, scale = floor;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= err)) {
            err = d;
            wi = i;
        }
        scale = fmax(scale, fabs((double)b[i]));
    }
    double rel = err / (scale > 0 ? scale : 1.0);
    ck_assert_msg(rel <= tol, "%s %s: element %zu: pb %.9g, torch %.9g; error %.3g of the "
                  "tensor's scale %.3g (tolerance %g)", cs, what, wi, n ? a[wi] : 0.0,
                  n ? b[wi] : 0.0, rel, scale, tol);
    return rel;
}

/* One pb tensor of the stage (pb_stage_tensors): the name after "<block>.". */
struct tensor_ref {
    char key[160];
    int is_buffer;
    size_t off, n;
    enum pb_layer_kind kind;
};

struct tensor_list {
    const char *prefix;
    int n;
    struct tensor_ref t[128];
};

static void collect(void *ctx, const struct pb_stage_tensor *t)
{
    struct tensor_list *tl = ctx;
    size_t plen = strlen(tl->prefix);
    ck_assert_msg(!strncmp(t->name, tl->prefix, plen), "%s lacks the prefix %s", t->name,
                  tl->prefix);
    ck_assert_int_lt(tl->n, 128);
    struct tensor_ref *r = &tl->t[tl->n++];
    snprintf(r->key, sizeof r->key, "%s", t->name + plen);
    r->is_buffer = t->is_buffer;
    r->off = t->off;
    r->n = t->count;
    r->kind = t->layer->cfg.kind;
}

/* Fixture tensors named <case>.<tag>.* */
static int count_tagged(const char *cs, const char *tag)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s.%s.", cs, tag);
    int k = 0;
    for (int i = 0; i < fx.n; i++)
        k += !strncmp(fx.t[i].name, prefix, strlen(prefix));
    return k;
}

/* The block's checkpoint (written by pb_checkpoint_save, so with its names and shapes)
 * names exactly the torch module's parameters and BatchNorm statistics: each checkpoint
 * tensor has a torch tensor of the same name and shape, and the counts agree, so the
 * map is one to one. Then the torch values are written under the checkpoint's names and
 * loaded with pb_checkpoint_load. */
static void map_and_load(struct case_run *r, const char *cs, const char *dir)
{
    struct pb_err e;
    char path[512], key[256];
    snprintf(path, sizeof path, "%s/pb.safetensors", dir);
    ck_assert_msg(pb_checkpoint_save(&r->stage, 1, path, NULL, &e) == 0, "%s", e.msg);
    struct pb_safetensors ck;
    ck_assert_msg(pb_st_load(&ck, path, &e) == 0, "%s", e.msg);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s.", cs);
    struct pb_safetensors w;
    pb_st_writer_init(&w);
    int nparams = 0, nbuffers = 0;
    for (int i = 0; i < ck.n; i++) {
        const struct pb_st_tensor *t = &ck.t[i];
        ck_assert(!strncmp(t->name, prefix, strlen(prefix)));
        const char *tname = t->name + strlen(prefix);
        size_t len = strlen(tname);
        int buffer = (len > 13 && !strcmp(tname + len - 13, ".running_mean")) ||
                     (len > 12 && !strcmp(tname + len - 12, ".running_var"));
        nbuffers += buffer;
        nparams += !buffer;
        snprintf(key, sizeof key, "%s.%s.%s", cs, buffer ? "buffer" : "param", tname);
        const struct pb_st_tensor *ref = pb_st_find(&fx, key);
        ck_assert_msg(ref != NULL, "%s: pipebench's %s has no torch tensor %s", cs, t->name, key);
        ck_assert_msg(ref->ndim == t->ndim, "%s: %s has %d dimensions, torch's %d", cs, tname,
                      t->ndim, ref->ndim);
        for (int d = 0; d < t->ndim; d++)
            ck_assert_msg(ref->shape[d] == t->shape[d], "%s: %s dimension %d is %lld, torch's %lld",
                          cs, tname, d, (long long)t->shape[d], (long long)ref->shape[d]);
        ck_assert(ref->dtype == PB_ST_F32);
        pb_st_add(&w, t->name, PB_ST_F32, ref->ndim, ref->shape, ref->data);
    }
    ck_assert_int_eq(nparams, count_tagged(cs, "param"));
    ck_assert_int_eq(nbuffers, count_tagged(cs, "buffer"));
    snprintf(path, sizeof path, "%s/torch.safetensors", dir);
    ck_assert_msg(pb_st_save(&w, path, NULL, &e) == 0, "%s", e.msg);
    pb_st_finish(&w);
    pb_st_finish(&ck);
    ck_assert_msg(pb_checkpoint_load(&r->stage, 1, path, &e) == 0, "%s", e.msg);
}

static void parity_case(const char *cs)
{
    const struct block_case *c = block_case_find(block_fixture_cases, n_block_fixture_cases, cs);
    struct case_run r;
    pb_load_fixture(&fx, "blocks.safetensors");
    block_run_init(&r, c, 1);
    struct pb_stage *s = &r.stage;
    struct pb_backend *be = r.be;
    char dir[] = "/tmp/pb_test_blocks_XXXXXX", path[512];
    ck_assert(mkdtemp(dir) != NULL);
    map_and_load(&r, cs, dir);

    size_t nx = pb_shape_count(s->in_shape), ny = pb_shape_count(s->out_shape);
    float *x = pb_fixture_read(&fx, cs, "x", nx), *dy = pb_fixture_read(&fx, cs, "dy", ny);
    float *y_ref = pb_fixture_read(&fx, cs, "y", ny), *dx_ref = pb_fixture_read(&fx, cs, "dx", nx);
    struct pb_stage_act act;
    float *y = case_forward(&r, x, true, &act, 0);
    double err_y = check_norm(cs, "y", y, y_ref, ny, PARITY_TOL, 0);
    float *dx = case_backward(&r, &act, dy);
    double err_dx = check_norm(cs, "dx", dx, dx_ref, nx, PARITY_TOL, 0);

    struct tensor_list tl = {0};
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s.", cs);
    tl.prefix = prefix;
    pb_stage_tensors(s, collect, &tl);
    float *g = malloc((s->nparams + 1) * sizeof *g), *buf = malloc((s->nbuffers + 1) * sizeof *buf);
    be->ops->download(be, g, s->grads, s->nparams * sizeof(float));
    be->ops->download(be, buf, s->buffers, s->nbuffers * sizeof(float));
    double err_g = 0, err_stats = 0, weight_scale = 0;
    for (int i = 0; i < tl.n; i++) {
        const struct tensor_ref *t = &tl.t[i];
        char what[200];
        snprintf(what, sizeof what, "%s.%s", t->is_buffer ? "after" : "grad", t->key);
        float *ref = pb_fixture_read(&fx, cs, what, t->n);
        size_t klen = strlen(t->key);
        bool bias = t->kind == PB_LAYER_CONV2D && klen > 5 && !strcmp(t->key + klen - 5, ".bias");
        if (t->is_buffer)
            err_stats = fmax(err_stats, check_norm(cs, what, buf + t->off, ref, t->n, STATS_TOL, 0));
        else
            err_g = fmax(err_g, check_norm(cs, what, g + t->off, ref, t->n, PARITY_TOL,
                                           bias ? weight_scale : 0));
        /* a conv's weight comes just before its bias */
        weight_scale = t->kind == PB_LAYER_CONV2D && !bias ? scale_of(ref, t->n) : 0;
        free(ref);
    }
    float *ye_ref = pb_fixture_read(&fx, cs, "y_eval", ny);
    float *ye = case_forward(&r, x, false, &act, 1);
    double err_ye = check_norm(cs, "y_eval", ye, ye_ref, ny, PARITY_TOL, 0);
    printf("%-12s %2d tensors  y %.2e  dx %.2e  dW %.2e  stats %.2e  y_eval %.2e\n", cs, tl.n,
           err_y, err_dx, err_g, err_stats, err_ye);
    fflush(stdout);

    snprintf(path, sizeof path, "%s/pb.safetensors", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/torch.safetensors", dir);
    unlink(path);
    rmdir(dir);
    free(x);
    free(dy);
    free(y);
    free(y_ref);
    free(dx);
    free(dx_ref);
    free(g);
    free(buf);
    free(ye);
    free(ye_ref);
    case_run_finish(&r);
    pb_st_finish(&fx);
}

/* Every case of the fixture is one of block_fixture_cases, and the other way round. */
START_TEST(test_fixture_cases)
{
    pb_load_fixture(&fx, "blocks.safetensors");
    int nx = 0;
    for (int i = 0; i < fx.n; i++) {
        size_t len = strlen(fx.t[i].name);
        if (len > 2 && !strcmp(fx.t[i].name + len - 2, ".x")) {
            char cs[64];
            snprintf(cs, sizeof cs, "%.*s", (int)(len - 2), fx.t[i].name);
            block_case_find(block_fixture_cases, n_block_fixture_cases, cs);
            nx++;
        }
    }
    ck_assert_int_eq(nx, n_block_fixture_cases);
    pb_st_finish(&fx);
}
END_TEST

#define PARITY_TEST(nm)                                                                        \
    START_TEST(test_##nm) { parity_case(#nm); }                                                \
    END_TEST

PARITY_TEST(bneck_proj)
PARITY_TEST(bneck_id)
PARITY_TEST(incep_a)
PARITY_TEST(incep_b)
PARITY_TEST(incep_c)
PARITY_TEST(incep_c_div)
PARITY_TEST(incep_d)
PARITY_TEST(incep_e)
PARITY_TEST(googlenet)
PARITY_TEST(dense_layer)
PARITY_TEST(transition)

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("blocks");
    TCase *tc = tcase_create("build");
    tcase_add_test(tc, test_inception_v3_widths);
    tcase_add_test(tc, test_inception_div);
    tcase_add_test(tc, test_conv_bn_relu);
    tcase_add_test(tc, test_bottleneck);
    tcase_add_test(tc, test_googlenet_inception);
    tcase_add_test(tc, test_densenet);
    suite_add_tcase(s, tc);
    tc = tcase_create("pytorch");
    tcase_add_test(tc, test_fixture_cases);
    tcase_add_test(tc, test_bneck_proj);
    tcase_add_test(tc, test_bneck_id);
    tcase_add_test(tc, test_incep_a);
    tcase_add_test(tc, test_incep_b);
    tcase_add_test(tc, test_incep_c);
    tcase_add_test(tc, test_incep_c_div);
    tcase_add_test(tc, test_incep_d);
    tcase_add_test(tc, test_incep_e);
    tcase_add_test(tc, test_googlenet);
    tcase_add_test(tc, test_dense_layer);
    tcase_add_test(tc, test_transition);
    suite_add_tcase(s, tc);
    return s;
}
