/* tests/model/test_checkpoint.c — a checkpoint loads into another partition of its model
 * (harness/store/checkpoint.h): lenet's stages at D = 4, initialised and saved, load
 * into its stages at D = 2 with every parameter and BatchNorm statistic the same, tensor
 * by tensor; a checkpoint of another model is refused with the tensor it lacks. The
 * residual LSTM's embedding and LSTM weights are saved in PyTorch's 2-D shapes under
 * PyTorch's names, and files written before ("stage<k>.<block>.<layer>.<param>", those
 * tensors as vectors) still load; under PyTorch's names a vector is refused.
 * tests/model/test_torchnames.c checks the names against PyTorch's state_dicts. */
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

/* Checkpoint `from` (this version's names) rewritten at path as pipebench wrote it before
 * its names were PyTorch's: each tensor "stage<k>.<block>.<layer>.<param>" by the stage k
 * of s holding it (the layer's legacy_name where it has one), and those whose new names
 * contain `part` or `part2` as vectors (as the LSTM and embedding weights were before
 * they took PyTorch's shapes); NULL parts: none. */
struct old_file {
    struct pb_safetensors in, out;
    int k;
    const char *part, *part2;
    char *names[256];
    float *v[256];
    int n;
};

static void add_old(void *ctx, const struct pb_stage_tensor *t)
{
    struct old_file *o = ctx;
    struct pb_err e;
    const struct pb_st_tensor *ft = pb_st_find(&o->in, t->name);
    ck_assert_msg(ft != NULL, "the checkpoint lacks %s", t->name);
    ck_assert_int_lt(o->n, 256);
    char old[320];
    snprintf(old, sizeof old, "stage%d.%s", o->k, t->legacy_name ? t->legacy_name : t->name);
    o->names[o->n] = pb_xstrdup(old);
    o->v[o->n] = malloc(ft->count * sizeof(float) + 1);
    ck_assert(pb_st_read_f32(&o->in, t->name, o->v[o->n], ft->count, &e) == 0);
    int64_t flat[1] = {(int64_t)ft->count};
    bool vector = (o->part && strstr(t->name, o->part)) || (o->part2 && strstr(t->name, o->part2));
    pb_st_add(&o->out, o->names[o->n], PB_ST_F32, vector ? 1 : ft->ndim,
              vector ? flat : ft->shape, o->v[o->n]);
    o->n++;
}

static void write_old(const char *path, const char *from, struct staged *s, const char *part,
                      const char *part2)
{
    struct pb_err e;
    struct old_file *o = calloc(1, sizeof *o);
    ck_assert_msg(pb_st_load(&o->in, from, &e) == 0, "%s", e.msg);
    pb_st_writer_init(&o->out);
    o->part = part;
    o->part2 = part2;
    for (o->k = 0; o->k < s->d; o->k++)
        pb_stage_tensors(&s->stages[o->k], add_old, o);
    ck_assert_msg(pb_st_save(&o->out, path, NULL, &e) == 0, "%s", e.msg);
    pb_st_finish(&o->out);
    pb_st_finish(&o->in);
    for (int i = 0; i < o->n; i++) {
        free(o->names[i]);
        free(o->v[i]);
    }
    free(o);
}

/* The same file with the tensor `name` as a vector (PyTorch's names kept). */
static void flatten_one(const char *path, const char *from, const char *name)
{
    struct pb_safetensors in, out;
    struct pb_err e;
    ck_assert_msg(pb_st_load(&in, from, &e) == 0, "%s", e.msg);
    pb_st_writer_init(&out);
    for (int i = 0; i < in.n; i++) {
        const struct pb_st_tensor *t = &in.t[i];
        int64_t flat[1] = {(int64_t)t->count};
        bool vector = !strcmp(t->name, name);
        pb_st_add(&out, t->name, t->dtype, vector ? 1 : t->ndim, vector ? flat : t->shape,
                  t->data);
    }
    ck_assert_msg(pb_st_save(&out, path, NULL, &e) == 0, "%s", e.msg);
    pb_st_finish(&out);
    pb_st_finish(&in);
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
    /* as written before the names were PyTorch's: "stage<k>.<block>.<layer>.<param>" */
    write_old(path, path, &four, NULL, NULL);
    build(&two, "lenet", 2);
    for (int k = 0; k < 2; k++)
        ck_assert(pb_stage_init_params(&two.stages[k], 8, &e) == 0);
    ck_assert_msg(pb_checkpoint_load(two.stages, 2, path, &e) == 0, "%s", e.msg);
    a = gather(&four, &n4);
    b = gather(&two, &n2);
    ck_assert(n4 == n2 && !memcmp(a, b, n4 * sizeof(float)));
    free(a);
    free(b);
    finish(&two);
    finish(&four);
    unlink(path);
}
END_TEST

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
    const struct pb_st_tensor *ih = pb_st_find(&st, "blocks.0.lstm.weight_ih_l0");
    const struct pb_st_tensor *emb = pb_st_find(&st, "embedding.weight");
    ck_assert_msg(ih && ih->ndim == 2 && emb && emb->ndim == 2, "weight_ih_l0 and the "
                  "embedding are not 2-D");
    ck_assert_int_eq(ih->shape[0], 4 * ih->shape[1]);   /* [4H, I] with I = H */
    pb_st_finish(&st);
    /* as written before the names were PyTorch's, LSTM and embedding weights as vectors */
    write_old(old, path, &a, "lstm.weight", "embedding.weight");
    ck_assert_msg(pb_st_load(&st, old, &e) == 0, "%s", e.msg);
    ih = pb_st_find(&st, "stage0.block1.lstm.weight_ih_l0");
    emb = pb_st_find(&st, "stage0.embedding.embedding.weight");
    ck_assert_msg(ih && ih->ndim == 1 && emb && emb->ndim == 1 &&
                  pb_st_find(&st, "stage1.head.linear.bias"), "not an older file's names");
    pb_st_finish(&st);
    build(&b, "residual-lstm", 2);
    for (int k = 0; k < 2; k++)
        ck_assert(pb_stage_init_params(&b.stages[k], 8, &e) == 0);
    ck_assert_msg(pb_checkpoint_load(b.stages, 2, old, &e) == 0, "%s", e.msg);
    size_t na, nb;
    float *wa = gather(&a, &na), *wb = gather(&b, &nb);
    ck_assert(na == nb && !memcmp(wa, wb, na * sizeof(float)));
    free(wa);
    free(wb);
    /* only those layers' tensors ever were vectors: a flat linear weight is refused */
    write_old(old, path, &a, "fc.weight", NULL);
    ck_assert_int_eq(pb_checkpoint_load(b.stages, 2, old, &e), -1);
    ck_assert_msg(strstr(e.msg, "stage1.head.linear.weight") && strstr(e.msg, "shape"), "%s",
                  e.msg);
    /* and under PyTorch's names, a vector is refused even where older files had one */
    flatten_one(old, path, "blocks.0.lstm.weight_ih_l0");
    ck_assert_int_eq(pb_checkpoint_load(b.stages, 2, old, &e), -1);
    ck_assert_msg(strstr(e.msg, "'blocks.0.lstm.weight_ih_l0' has shape [4096], expected "
                  "[128, 32]"), "%s", e.msg);
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
