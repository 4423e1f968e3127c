/* tests/workloads/test_zoo_train.c — the zoo's image models train (semantics §5): every `paper`
 * preset runs one training micro-batch of 2 at D = 4 on the CPU under its paper cut —
 * forward, backward, update, validation and checkpoint — on synthetic data of its input
 * shape; and every registered schedule form trains a `small` preset (the forms take the
 * six models in turn) for one epoch at D = 4 to a finite loss, the run recording its
 * preset and partition; and the small AlexNet and Inception-V3 rise well above chance
 * from their default command. Heavy (ResNet-101 at 224, Inception-V3 at 299, training
 * runs of minutes): the slow suite. */
#include <check.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/err.h"
#include "harness/driver/run_flags.h"
#include "tests/support/schedule_forms.h"
#include "tests/support/test_util.h"
#include "tests/support/train_util.h"
#include "workloads/datasets/dataset.h"
#include "workloads/models/workload.h"

static const char *const zoo[] = {"alexnet", "resnet101", "inceptionv3", "vgg16", "googlenet",
                                  "densenet121"};
#define NZOO (int)(sizeof zoo / sizeof zoo[0])

static const struct pb_preset *preset_of(const char *model, const char *name)
{
    const struct pb_preset *p;
    struct pb_err e;
    ck_assert_msg(pb_workload_preset(pb_workload_find(model, NULL), name, &p, &e) == 0, "%s", e.msg);
    return p;
}

/* c on synthetic data of the preset's input shape, 10 classes (the heads are wider). */
static void zoo_cfg(struct pb_run_cfg *c, const char *model, const char *preset)
{
    small_cfg(c);
    const struct pb_preset *p = preset_of(model, preset);
    struct pb_shape in = pb_preset_sample(p);
    c->model = model;
    c->preset = preset;
    c->dataset = "synthetic";
    c->synthetic = (struct pb_dataset_opts){.c = in.c, .h = in.h, .w = in.w, .nclasses = 10};
    c->stages = 4;
    c->epochs = 1;
    c->threads = 0;
}

/* The last linear layer of the model (its head) and its bias's initial values. */
static const struct pb_layer *head(const struct pb_model *m, float **bias0, uint64_t seed)
{
    const struct pb_block *b = &m->blocks[m->nblocks - 1];
    const struct pb_layer *l = &b->nodes[b->nnodes - 1];
    ck_assert_int_eq(l->cfg.kind, PB_LAYER_LINEAR);
    float *p = calloc(l->ops->param_count(l), sizeof *p);
    l->ops->init(l, p, NULL, seed);
    *bias0 = malloc((size_t)l->cfg.out_features * sizeof **bias0);
    memcpy(*bias0, p + (size_t)l->cfg.out_features * l->cfg.in_features,
           (size_t)l->cfg.out_features * sizeof **bias0);
    free(p);
    return l;
}

/* One micro-batch of 2 through the paper cut: the run ends done with a finite loss, its
 * checkpoint holds the four stages' tensors (as many values as the model's parameters,
 * under the state_dict's keys), the head's bias moved from its initial
 * values by one step (the update ran) and every saved value is finite. */
START_TEST(test_paper_micro_batch)
{
    const char *model = zoo[_i];
    struct pb_run_cfg c;
    zoo_cfg(&c, model, "paper");
    c.limit_train = 2;
    c.limit_val = 2;
    c.microbatch_size = 2;
    struct pb_err e;
    struct pb_run_summary sum;
    c.save = tmp_path_kept("paper.safetensors");
    ck_assert_msg(pb_run(&c, &sum, &e) == PB_EXIT_OK, "%s: %s", model, e.msg);
    ck_assert_msg(isfinite(sum.final_train_loss), "%s: loss %g", model, sum.final_train_loss);

    const struct pb_preset *p = preset_of(model, "paper");
    struct pb_model m;
    ck_assert(pb_workload_find(model, NULL)->build(&m, p, pb_preset_sample(p), p->classes, &e) == 0);
    ck_assert(pb_model_finalize(&m, 2, &e) == 0);
    float *bias0;
    const struct pb_layer *l = head(&m, &bias0, c.seed);
    struct pb_safetensors st;
    ck_assert_msg(pb_st_load(&st, c.save, &e) == 0, "%s", e.msg);
    char name[128];
    const struct pb_block *hb = &m.blocks[m.nblocks - 1];
    if (hb->top_level)
        snprintf(name, sizeof name, "%s.bias", l->name);
    else
        snprintf(name, sizeof name, "%s.%s.bias", hb->name, l->name);
    int n = l->cfg.out_features, moved = 0;
    float *bias = malloc((size_t)n * sizeof *bias);
    ck_assert_msg(pb_st_read_f32(&st, name, bias, (size_t)n, &e) == 0, "%s: %s", model, e.msg);
    for (int i = 0; i < n; i++)
        moved += bias[i] != bias0[i];
    ck_assert_msg(moved > 0, "%s: the head's bias did not change", model);
    size_t total = 0;
    for (int i = 0; i < st.n; i++) {
        float *v = malloc(st.t[i].count * sizeof *v + 1);
        ck_assert(pb_st_read_f32(&st, st.t[i].name, v, st.t[i].count, &e) == 0);
        char what[256];
        snprintf(what, sizeof what, "%s: %s", model, st.t[i].name);
        pb_assert_finite(what, v, st.t[i].count);
        if (!strstr(st.t[i].name, ".running_"))
            total += st.t[i].count;
        free(v);
    }
    ck_assert_uint_eq(total, pb_model_param_count(&m, 0, m.nblocks));
    free(bias);
    free(bias0);
    pb_st_finish(&st);
    pb_model_finish(&m);
}
END_TEST

static char *config_of_last_run(const char *db)
{
    sqlite3 *h;
    sqlite3_stmt *q;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    ck_assert(sqlite3_prepare_v2(h, "SELECT config FROM runs ORDER BY id DESC LIMIT 1", -1, &q,
                                 NULL) == SQLITE_OK);
    ck_assert(sqlite3_step(q) == SQLITE_ROW);
    char *s = strdup((const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(h);
    return s;
}

/* Every schedule form trains a small preset for one epoch at D = 4 (the forms take the
 * models in turn, the paper cut every other one) and ends with a finite loss. The rate
 * is 0.001: at SGDM's 0.01 the small Inception-V3 with micro-batches of 16 is unstable
 * on this data under every schedule (its training loss climbs above the uniform
 * guess's ln 200), and PipeOptim's predictions, which extrapolate the momentum, turn
 * that into a divergence within the epoch. */
START_TEST(test_every_schedule_small)
{
    struct sched_form forms[SCHED_FORMS_MAX];
    int nforms = sched_forms(forms);
    for (int i = 0; i < nforms; i++) {
        struct pb_run_cfg c;
        zoo_cfg(&c, zoo[i % NZOO], "small");
        c.partition = i % 2 ? "paper" : NULL;
        c.limit_train = 256;
        c.limit_val = 64;
        c.microbatch_size = 16;
        c.optim.lr = 0.001f;
        sched_form_apply(&c, &forms[i]);
        struct pb_err e;
        struct pb_run_summary sum;
        ck_assert_msg(pb_run(&c, &sum, &e) == PB_EXIT_OK, "%s on %s: %s", forms[i].label, c.model,
                      e.msg);
        ck_assert_msg(isfinite(sum.final_train_loss) && sum.final_train_loss > 0,
                      "%s on %s: loss %g", forms[i].label, c.model, sum.final_train_loss);
        char *cfg = config_of_last_run(c.db), want[96];
        snprintf(want, sizeof want, "\"preset\":\"small\",\"partition\":\"%s\"",
                 i % 2 ? "paper" : "cost");
        ck_assert_msg(strstr(cfg, want), "%s: %s", forms[i].label, cfg);
        free(cfg);
    }
}
END_TEST

/* The small AlexNet and Inception-V3 learn (issue 9) from the default command, `run
 * --model M --dataset synthetic --stages 1` with a sample limit and a few epochs, parsed
 * by the run flags as the CLI parses them (so the preset's own optimizer applies): on
 * their default stand-in (CIFAR-100's, 100 classes) the best validation accuracy reaches
 * `times` × chance. The presets they replaced (Tiny-ImageNet's stand-in, SGDM, dropout
 * 0.5) stayed at chance here (0.5%, below even 1 × this chance). */
static const struct learner {
    const char *model, *train, *val, *epochs;
    double times;
} learners[] = {
    {"alexnet", "4000", "1000", "4", 4},
    /* 5 epochs: measured 0.67, 1.12, 1.79, 4.02, 4.46% (chance 1%); 2 epochs reached the
     * 2% only by the luck of a trajectory (2.23% on one machine, 1.12% on another) */
    {"inceptionv3", "2000", "500", "5", 2},
};

START_TEST(test_small_learns)
{
    const struct learner *l = &learners[_i];
    const char *flags[][2] = {{"model", l->model},      {"dataset", "synthetic"},
                              {"stages", "1"},          {"limit-train", l->train},
                              {"limit-val", l->val},    {"epochs", l->epochs},
                              {"quiet", "on"}};
    struct pb_run_flags f = {0};
    struct pb_err e;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        ck_assert_msg(pb_run_flags_set(&f, flags[i][0], flags[i][1], &e) == 0, "%s", e.msg);
    struct pb_run_cfg c;
    pb_run_cfg_defaults(&c);
    c.db = tmp_path_kept("learn.db");
    ck_assert_msg(pb_run_flags_apply(&f, &c, &e) == 0, "%s", e.msg);
    struct pb_run_summary sum;
    ck_assert_msg(pb_run(&c, &sum, &e) == PB_EXIT_OK, "%s: %s", l->model, e.msg);
    struct pb_image_kind kind;
    ck_assert(pb_dataset_image_kind(pb_preset_lookup(l->model, NULL)->dataset, &kind));
    double chance = 1.0 / kind.nclasses;
    ck_assert_msg(sum.best_acc >= l->times * chance,
                  "%s small (%s, lr %g): best validation accuracy %.2f%% after %s epochs, "
                  "below %.0f x chance (%.2f%%)", l->model, c.optimizer, (double)c.optim.lr,
                  100 * sum.best_acc, l->epochs, l->times, 100 * l->times * chance);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("zoo_train");
    TCase *tc = tcase_create("train");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_paper_micro_batch, 0, NZOO);
    suite_add_tcase(s, tc);
    tc = tcase_create("schedules");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, test_every_schedule_small);
    suite_add_tcase(s, tc);
    tc = tcase_create("learns");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_small_learns, 0, (int)(sizeof learners / sizeof learners[0]));
    suite_add_tcase(s, tc);
    return s;
}
