/* tests/test_checkpoint.c — a checkpoint loads into another partition of its model
 * (harness/store/checkpoint.h): lenet's stages at D = 4, initialised and saved, load
 * into its stages at D = 2 with every parameter and BatchNorm statistic the same, tensor
 * by tensor; a checkpoint of another model is refused with the tensor it lacks. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/store/checkpoint.h"
#include "workloads/workload.h"

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
    ck_assert_msg(w->build(&s->model, NULL, (struct pb_shape){1, 1, 28, 28}, 10, &e) == 0, "%s",
                  e.msg);
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

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("checkpoint");
    tcase_add_test(tc, test_other_partition);
    suite_add_tcase(s, tc);
    return s;
}
