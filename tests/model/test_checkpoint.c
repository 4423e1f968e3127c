/* tests/model/test_checkpoint.c — a checkpoint loads into another partition of its model
 * (harness/store/checkpoint.h): lenet's stages at D = 4, initialised and saved, load
 * into its stages at D = 2 with every parameter and BatchNorm statistic the same, tensor
 * by tensor; a checkpoint of another model is refused with the tensor it lacks. The
 * residual LSTM's embedding and LSTM weights are saved in PyTorch's 2-D shapes, and a
 * file written before they were (the same tensors as vectors) still loads. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/safetensors.h"
#include "harness/compute/registry.h"
#include "harness/store/checkpoint.h"
#include "workloads/models/workload.h"

/* lenet for 1×28×28, 10 classes, micro-batches of 4, cut into D stages. */
struct staged {
    struct pb_model model;
    struct pb_backend *be;
    struct pb_stage stages[4];
    int d;
};

static void build(struct staged *s, const char *model, int d)
{
    struct pb_err e;
    memset(s, 0, sizeof *s);
    s->d = d;
    const struct pb_workload *w = pb_workload_find(model, &e);
    ck_assert_ptr_nonnull(w);
    const struct pb_preset *p;   /* a zoo model: its default preset */
    ck_assert(pb_workload_preset(w, NULL, &p, &e) == 0);
    struct pb_shape in = p ? pb_preset_sample(p) : (struct pb_shape){1, 1, 28, 28};
    ck_assert_msg(w->build(&s->model, p, in, p ? p->classes : 10, &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_model_finalize(&s->model, 4, &e) == 0, "%s", e.msg);
    int bounds[5];
    ck_assert_msg(pb_partition_balanced(&s->model, d, bounds, &e) == 0, "%s", e.msg);
    struct pb_backend_cfg bc = {.device = 0, .threads = 1};
    s->be = pb_backend_create("cpu", &bc, &e);
    ck_assert_ptr_nonnull(s->be);
    for (int k = 0; k < d; k++) {
        ck_assert_msg(pb_stage_init(&s->stages[k], s->be, &s->model, k, d, bounds[k],
                                    bounds[k + 1], &e) == 0, "%s", e.msg);
        ck_assert(pb_stage_init_params(&s->stages[k], 7, &e) == 0);
    }
}

static void finish(struct staged *s)
{
    for (int k = 0; k < s->d; k++)
        pb_stage_finish(&s->stages[k]);
    pb_backend_destroy(s->be);
    pb_model_finish(&s->model);
}

/* All the parameters of the stages in model order, then all their buffers. */
static float *gather(struct staged *s, size_t *n)
{
    size_t total = 0;
    for (int k = 0; k < s->d; k++)
        total += s->stages[k].nparams + s->stages[k].nbuffers;
    float *v = malloc(total * sizeof *v + 1), *p = v;
    for (int k = 0; k < s->d; k++) {
        struct pb_stage *st = &s->stages[k];
        s->be->ops->download(s->be, p, st->params, st->nparams * sizeof(float));
        p += st->nparams;
    }
    for (int k = 0; k < s->d; k++) {
        struct pb_stage *st = &s->stages[k];
        s->be->ops->download(s->be, p, st->buffers, st->nbuffers * sizeof(float));
        p += st->nbuffers;
    }
    *n = total;
    return v;
}

START_TEST(test_other_partition)
{
    char path[] = "/tmp/pb-ckpt-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    struct staged four, two;
    struct pb_err e;
    build(&four, "lenet", 4);
    ck_assert_msg(pb_checkpoint_save(four.stages, 4, path, NULL, &e) == 0, "%s", e.msg);
    build(&two, "lenet", 2);
    /* a different seed: the load must replace every value */
    for (int k = 0; k < 2; k++)
        ck_assert(pb_stage_init_params(&two.stages[k], 8, &e) == 0);
    ck_assert_msg(pb_checkpoint_load(two.stages, 2, path, &e) == 0, "%s", e.msg);
    size_t n4, n2;
    float *a = gather(&four, &n4), *b = gather(&two, &n2);
    ck_assert_uint_eq(n4, n2);
    ck_assert(!memcmp(a, b, n4 * sizeof(float)));
    free(a);
    free(b);
    finish(&two);
    struct staged mlp;
    build(&mlp, "mlp", 2);
    ck_assert_int_eq(pb_checkpoint_load(mlp.stages, 2, path, &e), -1);
    ck_assert_msg(strstr(e.msg, "--init") && strstr(e.msg, "any --stages"), "%s", e.msg);
    finish(&mlp);
    finish(&four);
    unlink(path);
}
END_TEST

/* Rewrites the checkpoint at path with the tensors whose names contain `part` as
 * vectors (as pipebench wrote its LSTM and embedding weights before). */
static void flatten(const char *path, const char *from, const char *part)
{
    struct pb_safetensors in, out;
    struct pb_err e;
    ck_assert_msg(pb_st_load(&in, from, &e) == 0, "%s", e.msg);
    pb_st_writer_init(&out);
    float *v[256];
    ck_assert_int_lt(in.n, 256);
    for (int i = 0; i < in.n; i++) {
        const struct pb_st_tensor *t = &in.t[i];
        v[i] = malloc(t->count * sizeof(float) + 1);
        ck_assert(pb_st_read_f32(&in, t->name, v[i], t->count, &e) == 0);
        int64_t flat[1] = {(int64_t)t->count};
        bool vector = strstr(t->name, part) != NULL;
        pb_st_add(&out, t->name, PB_ST_F32, vector ? 1 : t->ndim, vector ? flat : t->shape, v[i]);
    }
    ck_assert_msg(pb_st_save(&out, path, NULL, &e) == 0, "%s", e.msg);
    pb_st_finish(&out);
    for (int i = 0; i < in.n; i++)
        free(v[i]);
    pb_st_finish(&in);
}

START_TEST(test_torch_shapes_and_older_files)
{
    char path[] = "/tmp/pb-ckpt-XXXXXX", old[] = "/tmp/pb-ckpt-old-XXXXXX";
    ck_assert(close(mkstemp(path)) == 0 && close(mkstemp(old)) == 0);
    struct staged a, b;
    struct pb_err e;
    build(&a, "residual-lstm", 2);
    ck_assert_msg(pb_checkpoint_save(a.stages, 2, path, NULL, &e) == 0, "%s", e.msg);
    struct pb_safetensors st;
    ck_assert_msg(pb_st_load(&st, path, &e) == 0, "%s", e.msg);
    const struct pb_st_tensor *ih = pb_st_find(&st, "stage0.block1.lstm.weight_ih_l0");
    const struct pb_st_tensor *emb = pb_st_find(&st, "stage0.embedding.embedding.weight");
    ck_assert_msg(ih && ih->ndim == 2 && emb && emb->ndim == 2, "weight_ih_l0 and the "
                  "embedding are not 2-D");
    ck_assert_int_eq(ih->shape[0], 4 * ih->shape[1]);   /* [4H, I] with I = H */
    pb_st_finish(&st);
    flatten(old, path, "lstm.weight");
    flatten(path, old, "embedding.weight");
    build(&b, "residual-lstm", 2);
    for (int k = 0; k < 2; k++)
        ck_assert(pb_stage_init_params(&b.stages[k], 8, &e) == 0);
    ck_assert_msg(pb_checkpoint_load(b.stages, 2, path, &e) == 0, "%s", e.msg);
    size_t na, nb;
    float *wa = gather(&a, &na), *wb = gather(&b, &nb);
    ck_assert(na == nb && !memcmp(wa, wb, na * sizeof(float)));
    free(wa);
    free(wb);
    /* only those layers' tensors ever were vectors: a flat linear weight is refused */
    flatten(old, path, "head.linear.weight");
    ck_assert_int_eq(pb_checkpoint_load(b.stages, 2, old, &e), -1);
    ck_assert_msg(strstr(e.msg, "head.linear.weight") && strstr(e.msg, "shape"), "%s", e.msg);
    finish(&a);
    finish(&b);
    unlink(path);
    unlink(old);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("checkpoint");
    tcase_add_test(tc, test_other_partition);
    tcase_add_test(tc, test_torch_shapes_and_older_files);
    suite_add_tcase(s, tc);
    return s;
}
