/* tests/support/train_util.c — helpers of the training tests (train_util.h). */
#include "tests/support/train_util.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/compute/cpu/cpu_backend.h"
#include "harness/store/checkpoint.h"
#include "harness/base/err.h"
#include "harness/base/interrupt.h"
#include "workloads/models/workload.h"

/* The test's folder; it goes when the test's process ends (Check forks one per test). */
static char tmp_folder[256];

static void remove_tmp_dir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_folder);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_folder);
}

const char *tmp_dir(void)
{
    if (!tmp_folder[0]) {
        snprintf(tmp_folder, sizeof tmp_folder, "/tmp/pb-test-XXXXXX");
        ck_assert(mkdtemp(tmp_folder) != NULL);
        atexit(remove_tmp_dir);
    }
    return tmp_folder;
}

const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", tmp_dir(), name);
    return buf[i];
}

/* Paths that outlive tmp_path's rotating buffers (configurations keep them), freed
 * when the test's process ends. */
static char *kept[256];
static int nkept;

static void free_kept(void)
{
    for (int i = 0; i < nkept; i++)
        free(kept[i]);
    nkept = 0;
}

const char *tmp_path_kept(const char *name)
{
    if (nkept == 0)
        atexit(free_kept);
    ck_assert_int_lt(nkept, 256);
    kept[nkept] = pb_xstrdup(tmp_path(name));
    return kept[nkept++];
}

void signal_the_run(int sig)
{
    int before = pb_interrupt_count();
    kill(getpid(), sig);
    for (int i = 0; i < 10000 && pb_interrupt_count() == before; i++)
        usleep(100);
    ck_assert_int_gt(pb_interrupt_count(), before);
}

void small_cfg(struct pb_run_cfg *c)
{
    pb_run_cfg_defaults(c);
    c->limit_train = 640;
    c->limit_val = 320;
    c->microbatch_size = 32;
    c->epochs = 2;
    c->quiet = true;
    c->threads = 1;
    c->db = tmp_path_kept("runs.db");
}

void run_ok(struct pb_run_cfg *c, const char *save)
{
    struct pb_err e;
    struct pb_run_summary sum;
    c->save = save ? tmp_path_kept(save) : NULL;
    int rc = pb_run(c, &sum, &e);
    ck_assert_msg(rc == PB_EXIT_OK, "run %s/%s failed: %s", c->schedule, c->model, e.msg);
}

float *load_weights(const char *path, size_t *n)
{
    struct pb_safetensors st;
    struct pb_err e;
    ck_assert_msg(pb_st_load(&st, path, &e) == 0, "%s", e.msg);
    size_t total = 0;
    for (int i = 0; i < st.n; i++)
        total += st.t[i].count;
    float *w = malloc(total * sizeof *w + 1), *p = w;
    for (int i = 0; i < st.n; i++) {
        ck_assert(pb_st_read_f32(&st, st.t[i].name, p, st.t[i].count, &e) == 0);
        p += st.t[i].count;
    }
    pb_st_finish(&st);
    *n = total;
    return w;
}

void load_saved_gnmt8_small(struct pb_backend *be, const struct pb_dataset *ds, int rows,
                            const char *path, struct pb_model *m, struct pb_stage *s)
{
    load_saved_gnmt_small("gnmt8", be, ds, rows, path, m, s);
}

void load_saved_gnmt_small(const char *model, struct pb_backend *be, const struct pb_dataset *ds,
                           int rows, const char *path, struct pb_model *m, struct pb_stage *s)
{
    struct pb_err e;
    const struct pb_workload *w = pb_workload_find(model, &e);
    const struct pb_preset *p;
    ck_assert(w && pb_workload_preset(w, "small", &p, &e) == 0);
    ck_assert_msg(w->build(m, p, (struct pb_shape){1, ds->c, ds->h, ds->w}, p->classes, &e) == 0,
                  "%s", e.msg);
    ck_assert_msg(pb_model_finalize(m, rows, &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_stage_init(s, be, m, 0, 2, 0, m->nblocks, &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_checkpoint_load(s, 1, path, &e) == 0, "%s", e.msg);
}

unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len + 1);
    ck_assert(fread(b, 1, *len, f) == *len);
    fclose(f);
    return b;
}

void copy_file(const char *from, const char *to)
{
    size_t n;
    unsigned char *b = read_file(from, &n);
    FILE *f = fopen(to, "wb");
    ck_assert(f != NULL && fwrite(b, 1, n, f) == n && fclose(f) == 0);
    free(b);
}

/* plain_training, or with interleave each micro-batch's backward right after its
 * forward (plain_training_1f1b). */
static float *plain_loop(const struct pb_run_cfg *c, int accumulate, bool interleave, size_t *n)
{
    struct pb_err e;
    const struct pb_workload *wl = pb_workload_find(c->model, &e);
    ck_assert_msg(wl != NULL, "%s", e.msg);
    /* the data pb_run trains on: c's dataset, else the model's own */
    struct pb_dataset ds;
    ck_assert_msg(pb_dataset_load_opts(&ds, c->dataset ? c->dataset : wl->dataset, c->data_dir,
                                       PB_SPLIT_TRAIN, c->limit_train, c->seed, &c->synthetic,
                                       &e) == 0, "%s", e.msg);
    const struct pb_preset *p;
    ck_assert_msg(pb_workload_preset(wl, c->preset, &p, &e) == 0, "%s", e.msg);
    struct pb_model m;
    ck_assert(wl->build(&m, p, (struct pb_shape){1, ds.c, ds.h, ds.w},
                        p ? p->classes : ds.nclasses, &e) == 0);
    ck_assert(pb_model_finalize(&m, c->microbatch_size, &e) == 0);
    struct pb_backend *be = pb_backend_cpu_create(1, &e);
    struct pb_stage s;
    ck_assert(pb_stage_init(&s, be, &m, 0, 1, 0, m.nblocks, &e) == 0);
    ck_assert_msg(pb_stage_init_params(&s, c->seed, &e) == 0, "%s", e.msg);
    struct pb_optim o;
    ck_assert(pb_optim_init(&o, be, &c->optim, s.nparams, &e) == 0);
    int b = c->microbatch_size, nmb = ds.n / b;
    int32_t *order = malloc((size_t)ds.n * sizeof *order);
    float *x = malloc(pb_shape_count(s.in_shape) * sizeof *x);
    int32_t *y = malloc((size_t)b * sizeof *y);
    int32_t *labels = pb_backend_alloc(be, (size_t)b * sizeof *labels, PB_MEM_COMM, &e);
    struct pb_stage_act *acts = calloc((size_t)accumulate, sizeof *acts);
    for (int epoch = 0; epoch < c->epochs; epoch++) {
        pb_optim_set_epoch(&o, epoch);
        pb_epoch_order(c->seed, epoch, ds.n, c->shuffle, order);
        for (int first = 0; first < nmb; first += accumulate) {
            int cnt = nmb - first < accumulate ? nmb - first : accumulate;
            for (int i = 0; i < cnt; i++) {
                int j = first + i;
                pb_dataset_gather(&ds, (struct pb_data_key){c->seed, epoch, true}, order, j * b, b,
                                  x, y);
                be->ops->upload(be, labels, y, (size_t)b * sizeof *y);
                struct pb_tensor t;
                ck_assert(pb_tensor_alloc(be, &t, s.in_shape, PB_LAYOUT_PLAIN, PB_MEM_ACTS, &e) == 0);
                be->ops->upload(be, t.data, x, pb_shape_count(s.in_shape) * sizeof *x);
                struct pb_step_ctx ctx = {true, c->seed, (int64_t)epoch * nmb + j, NULL, NULL};
                ck_assert(pb_stage_forward(&s, &ctx, s.params, t, labels, &acts[i], NULL, &e) == 0);
                if (interleave)
                    ck_assert(pb_stage_backward(&s, &ctx, s.params, &acts[i], NULL, NULL, &e) == 0);
            }
            for (int i = cnt - 1; i >= 0 && !interleave; i--) {
                struct pb_step_ctx ctx = {true, c->seed, acts[i].mb, NULL, NULL};
                ck_assert(pb_stage_backward(&s, &ctx, s.params, &acts[i], NULL, NULL, &e) == 0);
            }
            if (cnt > 1)
                be->ops->axpby(be, 0.0f, s.grads, 1.0f / (float)cnt, s.grads, s.nparams);
            pb_optim_step(&o, be, s.params, s.grads);
            be->ops->fill(be, s.grads, 0.0f, s.nparams);
        }
    }
    const char *path = tmp_path("plain.safetensors");
    ck_assert_msg(pb_checkpoint_save(&s, 1, path, NULL, &e) == 0, "%s", e.msg);
    pb_backend_free(be, labels);
    free(acts);
    free(order);
    free(x);
    free(y);
    pb_optim_finish(&o, be);
    pb_stage_finish(&s);
    pb_backend_destroy(be);
    pb_model_finish(&m);
    pb_dataset_finish(&ds);
    return load_weights(path, n);
}

float *plain_training(const struct pb_run_cfg *c, int accumulate, size_t *n)
{
    return plain_loop(c, accumulate, false, n);
}

float *plain_training_1f1b(const struct pb_run_cfg *c, int accumulate, size_t *n)
{
    return plain_loop(c, accumulate, true, n);
}
