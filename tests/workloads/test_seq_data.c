/* tests/workloads/test_seq_data.c — the IMDb loader on the committed aclImdb fixture tree (the
 * token ids, lengths and labels fixtures_imdb.py computes as Keras does), its errors
 * (missing tree, stray and binary files, empty folders: CLI exit 2, nothing in the
 * database), the synthetic IMDb stand-in (deterministic, padded at the end, learnable
 * ids), residual-lstm's two presets run through the CLI (the paper one a micro-batch at
 * D = 4 under its paper cut, checkpointed), and (slow) every schedule training
 * residual-lstm (preset small) one short epoch at D = 4 on the stand-in with a finite
 * loss. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/optim/optim.h"
#include "schedules/registry.h"
#include "tests/support/cli_util.h"
#include "tests/support/schedule_forms.h"
#include "tests/support/test_util.h"
#include "workloads/datasets/dataset.h"

static const char *data_dir(void)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/data", getenv("PB_FIXTURES") ? getenv("PB_FIXTURES") : "tests/fixtures");
    return buf;
}

static void check_split(int vocab, int steps, enum pb_split split, const char *dir)
{
    struct pb_safetensors fx;
    struct pb_err e;
    pb_load_fixture(&fx, "imdb.safetensors");
    char tag[64];
    snprintf(tag, sizeof tag, "v%dt%d.%s", vocab, steps, split == PB_SPLIT_TRAIN ? "train" : "test");
    struct pb_dataset_opts o = {.vocab = vocab, .steps = steps};
    struct pb_dataset ds;
    ck_assert_msg(pb_dataset_load_opts(&ds, "imdb", dir, split, 0, 0, &o, &e) == 0, "%s", e.msg);
    int n = split == PB_SPLIT_TRAIN ? 6 : 4;
    ck_assert_int_eq(ds.n, n);
    ck_assert(ds.c == steps && ds.h == 1 && ds.w == 1 && ds.nclasses == 2 && ds.vocab == vocab);
    float *x = malloc((size_t)n * steps * sizeof *x), len[8], y[8];
    char name[96];
    snprintf(name, sizeof name, "%s.x", tag);
    ck_assert(pb_st_read_f32(&fx, name, x, (size_t)n * steps, &e) == 0);
    snprintf(name, sizeof name, "%s.len", tag);
    ck_assert(pb_st_read_f32(&fx, name, len, (size_t)n, &e) == 0);
    snprintf(name, sizeof name, "%s.y", tag);
    ck_assert(pb_st_read_f32(&fx, name, y, (size_t)n, &e) == 0);
    pb_assert_close(tag, ds.x, x, (size_t)n * steps, 0, 1e-6);  /* whole ids: exact */
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(ds.len[i], (int)len[i]);
        ck_assert_int_eq(ds.y[i], (int)y[i]);
    }
    pb_dataset_finish(&ds);
    /* a labels-only load (the last stage) has the same labels and lengths, no tokens */
    o.parts = PB_DATA_LABELS;
    ck_assert(pb_dataset_load_opts(&ds, "imdb", dir, split, 2, 0, &o, &e) == 0);
    ck_assert(ds.x == NULL && ds.n == 2 && ds.len[1] == (int)len[1] && ds.y[1] == (int)y[1]);
    pb_dataset_finish(&ds);
    free(x);
    pb_st_finish(&fx);
}

START_TEST(imdb_fixture)
{
    check_split(12, 8, PB_SPLIT_TRAIN, data_dir());
    check_split(12, 8, PB_SPLIT_TEST, data_dir());
    check_split(10000, 40, PB_SPLIT_TRAIN, data_dir());
    char inner[4200];
    snprintf(inner, sizeof inner, "%s/aclImdb", data_dir());
    check_split(10000, 40, PB_SPLIT_TEST, inner);  /* the tree's own folder works too */
}
END_TEST

START_TEST(imdb_errors)
{
    struct pb_dataset ds;
    struct pb_err e;
    ck_assert_int_eq(pb_dataset_load(&ds, "imdb", "/nonexistent", PB_SPLIT_TRAIN, 0, 0, &e), -1);
    ck_assert(strstr(e.msg, "no aclImdb tree") && strstr(e.msg, "PIPEBENCH_IMDB_DIR"));
    ck_assert_int_eq(pb_dataset_load(&ds, "imdb", data_dir(), PB_SPLIT_TEST, 5, 0, &e), -1);
    ck_assert(strstr(e.msg, "limit 5 is more than the 4"));
}
END_TEST

/* A broken copy of the tree: `how` damages it; the run exits 2, says `want`, records nothing. */
static void broken_run(const char *how, const char *want)
{
    char dir[64], out[8192];
    cli_scratch(dir, sizeof dir, "imdb");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cp -r '%s/aclImdb' '%s/' && cd '%s/aclImdb' && %s", data_dir(), dir,
             dir, how);
    ck_assert_int_eq(system(cmd), 0);
    int rc = cli_run(dir, out, sizeof out,
                     "run --quiet --model residual-lstm --preset small --data-dir . --stages 2 "
                     "--microbatch-size 2 --db r.db");
    ck_assert_msg(rc == 2, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, want), "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM runs"), 0);
    cli_cleanup(dir);
}

START_TEST(imdb_cli_errors)
{
    broken_run("printf 'x\\0y' > train/pos/20_9.txt", "NUL bytes");
    broken_run("touch train/neg/notes.md", "notes.md is not a review");
    broken_run("rm test/pos/*.txt", "holds no reviews");
    broken_run("rm -r train", "no aclImdb tree");
    /* and the whole tree trains (a micro-batch of 2 out of 6 reviews) */
    char dir[64], out[8192];
    cli_scratch(dir, sizeof dir, "imdb");
    int rc = cli_run(dir, out, sizeof out,
                     "run --quiet --model residual-lstm --preset small --data-dir '%s' --stages 2 "
                     "--microbatch-size 2 --optimizer adam --db r.db", data_dir());
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM runs"), 1);
    cli_cleanup(dir);
}
END_TEST

START_TEST(stand_in)
{
    struct pb_dataset a, b, l;
    struct pb_err e;
    struct pb_dataset_opts o = {.like = "imdb", .vocab = 300, .steps = 24, .n = 400};
    ck_assert(pb_dataset_load_opts(&a, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 3, &o, &e) == 0);
    ck_assert(pb_dataset_load_opts(&b, "synthetic", NULL, PB_SPLIT_TRAIN, 100, 3, &o, &e) == 0);
    o.parts = PB_DATA_LABELS;
    ck_assert(pb_dataset_load_opts(&l, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 3, &o, &e) == 0);
    ck_assert(a.n == 400 && a.c == 24 && a.nclasses == 2 && b.n == 100 && l.x == NULL);
    ck_assert(memcmp(a.x, b.x, 100 * 24 * sizeof(float)) == 0);
    ck_assert(memcmp(a.len, l.len, 400 * sizeof(int32_t)) == 0);
    /* class-0 sentiment ids are odd, class-1 even: their share separates the classes */
    int agree = 0, ones = 0;
    for (int i = 0; i < a.n; i++) {
        const float *x = a.x + (size_t)i * 24;
        ck_assert(x[0] == 1.0f && a.len[i] >= 6 && a.len[i] <= 24);
        int odd = 0, even = 0;
        for (int t = 0; t < 24; t++) {
            ck_assert(t < a.len[i] ? x[t] >= 1 && x[t] < 300 : x[t] == 0);
            int id = (int)x[t];
            if (t > 0 && t < a.len[i] && id >= 3 && id < 3 + 2 * 50)
                *(id % 2 ? &odd : &even) += 1;
        }
        agree += (even > odd) == (a.y[i] == 1) && even != odd;
        ones += a.y[i];
    }
    ck_assert_msg(agree > a.n / 2, "%d of %d", agree, a.n);
    ck_assert(ones > 150 && ones < 250);
    pb_dataset_finish(&l);
    o.c = 3;
    ck_assert_int_eq(pb_dataset_load_opts(&l, "synthetic", NULL, PB_SPLIT_TRAIN, 0, 3, &o, &e), -1);
    pb_dataset_finish(&a);
    pb_dataset_finish(&b);
}
END_TEST

/* residual-lstm's presets through the CLI on the stand-in: the paper one runs one
 * micro-batch of 2 at D = 4 under its paper cut (the default there) with Adam lr 1e-3 and
 * checkpoints its four stages, embedding + block1 / block2 / block3 / block4 + head, all
 * finite; the small one is the default (Adam too) and takes the cost partition at D = 4.
 * The run records the preset, partition and optimizer it took. */
START_TEST(presets_run)
{
    char dir[64], out[8192];
    struct pb_err e;
    cli_scratch(dir, sizeof dir, "rlstm");
    int rc = cli_run(dir, out, sizeof out,
                     "run --quiet --model residual-lstm --preset paper --dataset synthetic "
                     "--stages 4 --microbatch-size 2 --limit-train 2 --limit-val 2 "
                     "--save p.safetensors --db r.db");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    rc = cli_run(dir, out, sizeof out,
                 "run --quiet --model residual-lstm --dataset synthetic --stages 4 "
                 "--microbatch-size 2 --limit-train 2 --limit-val 2 --db r.db");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    const char *q = "SELECT count(*) FROM runs WHERE instr(config, '\"preset\":\"%s\"') AND "
                    "instr(config, '\"partition\":\"%s\"') AND "
                    "instr(config, '\"optimizer\":\"adam\"') AND instr(config, '\"lr\":0.001')";
    char sql[512];
    snprintf(sql, sizeof sql, q, "paper", "paper");
    ck_assert_int_eq(cli_db_int(dir, "r.db", sql), 1);
    snprintf(sql, sizeof sql, q, "small", "cost");
    ck_assert_int_eq(cli_db_int(dir, "r.db", sql), 1);
    char path[128];
    snprintf(path, sizeof path, "%s/p.safetensors", dir);
    struct pb_safetensors st;
    ck_assert_msg(pb_st_load(&st, path, &e) == 0, "%s", e.msg);
    const char *want[] = {"embedding.weight", "blocks.0.lstm.weight_ih_l0",
                          "blocks.1.lstm.weight_hh_l0", "blocks.2.linear.weight",
                          "blocks.3.lstm.bias_hh_l0", "fc.bias"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(pb_st_find(&st, want[i]) != NULL, "no %s in the checkpoint", want[i]);
    size_t total = 0;
    for (int i = 0; i < st.n; i++) {
        float *v = malloc(st.t[i].count * sizeof *v + 1);
        ck_assert(pb_st_read_f32(&st, st.t[i].name, v, st.t[i].count, &e) == 0);
        pb_assert_finite(st.t[i].name, v, st.t[i].count);
        total += st.t[i].count;
        free(v);
    }
    ck_assert_uint_eq(total, 1874690);  /* the paper preset's count, PyTorch's */
    pb_st_finish(&st);
    cli_cleanup(dir);
}
END_TEST

/* Every registered schedule (its default form) trains residual-lstm --preset small one
 * short epoch at D = 4 on the stand-in, with AdamW where it accepts it (else the first
 * optimizer it does: spectrain's SGDM). */
START_TEST(schedules_train)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "rlstm");
    int n = 0;
    for (; pb_schedules[n]; n++) {
        struct pb_run_cfg c;
        struct pb_err e;
        pb_run_cfg_defaults(&c);
        c.stages = 4;
        c.optimizer = "adamw";
        ck_assert(pb_optim_cfg_from_name(&c.optim, "adamw", &e) == 0);
        struct sched_form f = {.sch = pb_schedules[n]};
        sched_form_apply(&c, &f);
        int rc = cli_run(dir, out, sizeof out,
                         "run --model residual-lstm --preset small --dataset synthetic "
                         "--schedule %s --optimizer %s --stages 4 --microbatch-size 16 "
                         "--limit-train 256 --limit-val 64 --db r.db", c.schedule, c.optimizer);
        ck_assert_msg(rc == 0, "%s: exit %d: %s", c.schedule, rc, out);
        const char *p = strstr(out, "train loss ");
        ck_assert_msg(p, "%s: %s", c.schedule, out);
        double loss = atof(p + strlen("train loss "));
        ck_assert_msg(isfinite(loss) && loss > 0 && loss < 2, "%s: loss %g", c.schedule, loss);
    }
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM runs"), n);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("seq_data");
    TCase *fast = tcase_create("fast");
    tcase_set_tags(fast, "fast");
    tcase_add_test(fast, imdb_fixture);
    tcase_add_test(fast, imdb_errors);
    tcase_add_test(fast, imdb_cli_errors);
    tcase_add_test(fast, stand_in);
    tcase_add_test(fast, presets_run);
    suite_add_tcase(s, fast);
    TCase *slow = tcase_create("slow");
    tcase_add_test(slow, schedules_train);
    suite_add_tcase(s, slow);
    return s;
}
