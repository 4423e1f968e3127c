/* tests/driver/test_cli_options.c — command-line behaviour common to the commands (through the
 * built binary): --version names the git revision and the optional parts of the build,
 * an option given twice is refused (exit 2, nothing written), `run --config FILE`
 * records the configuration the same flags give (and flags given too replace the
 * file's), `runs --status` lists the runs of the statuses named, scripts/test --help runs
 * nothing, the documents quote --target as a fraction, and --clip-grad clips each
 * stage's gradient to its norm while --lr-warmup and --lr-cosine set the epochs' rates. */
#include <math.h>

#include "harness/base/safetensors.h"
#include "pb_config.h"
#include "tests/support/cli_util.h"

static char dir[64], out[1 << 16];

START_TEST(version_names_revision_and_features)
{
    cli_scratch(dir, sizeof dir, "cliopt");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "--version"), 0);
    char ver[64] = "", rev[64] = "";
    ck_assert_msg(sscanf(out, "pipebench %63s (git %63[^)])", ver, rev) == 2, "%s", out);
    ck_assert_str_eq(ver, PB_VERSION);
    ck_assert_msg(strlen(rev) > 0, "%s", out);
    char features[80];
    snprintf(features, sizeof features, "features: cuda %s, mpi %s\n",
             PB_HAVE_CUDA ? "on" : "off", PB_HAVE_MPI ? "on" : "off");
    ck_assert_msg(strstr(out, features), "no '%s' in: %s", features, out);
    cli_cleanup(dir);
}
END_TEST

static bool exists(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

START_TEST(repeated_options_are_refused)
{
    cli_scratch(dir, sizeof dir, "cliopt");
    cli_write(dir, "s.ini", "[grid]\nschedule = gpipe\n[run]\nmodel = mlp\n");
    static const char *const cmds[] = {
        "run --db a.db --epochs 1 --db b.db",
        "run --db=a.db --db b.db",
        "run --seed 1 --seed 2 --db a.db",
        "compare --db a.db --target 0.5 --target 0.6",
        "sweep s.ini --db a.db --db b.db",
        "report --table accuracy --db a.db --db b.db",
        "runs --db a.db --db b.db",
        "plot --figure all --db a.db --out o --db b.db",
        "show 1 --db a.db --db b.db",
        "trace 1 --db a.db --db b.db",
        "resume 1 --db a.db --db b.db",
        "program --schedule gpipe --stages 2 --stages 3",
        "simulate --schedule gpipe --stages 2 --cost 1,2,0.1 --record --db a.db --db b.db",
        "partition --model mlp --stages 2 --stages 3",
        "bleu --hyp h.txt --ref r.txt --ref h.txt",
        "bleu --hyp h.txt --ref r.txt -tok intl --tokenize 13a",
        /* getopt's abbreviations name the option they abbreviate */
        "program --schedule gpipe --stage 2 --stages 3",
        "simulate --sched gpipe --schedule 1f1b --stages 2 --cost 1,2,0.1 --record --db a.db",
        "partition --model mlp --stages 2 --stag 3",
        "sweep s.ini --jobs 1 --job 2 --db a.db",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        ck_assert_msg(cli_run(dir, out, sizeof out, "%s", cmds[i]) == 2, "%s: %s", cmds[i], out);
        ck_assert_msg(strstr(out, "is given twice; give it once"), "%s: %s", cmds[i], out);
        ck_assert_msg(!exists("a.db") && !exists("b.db"), "%s wrote a database", cmds[i]);
    }
    /* a repeatable option is not refused */
    ck_assert_msg(cli_run(dir, out, sizeof out, "runs --db a.db --where seed=1 --where lr=0.01")
                  != 2 || !strstr(out, "given twice"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

#define SMALL "--model mlp --limit-train 320 --limit-val 160 --microbatch-size 32 --epochs 1 "

START_TEST(config_file_equals_flags)
{
    cli_scratch(dir, sizeof dir, "cliopt");
    cli_write(dir, "one.ini",
              "; one run\n"
              "[grid]\n"
              "schedule = gpipe\n"
              "microbatches = 2\n"
              "[run]\n"
              "model = mlp\n"
              "limit-train = 320\n"
              "limit-val = 160\n"
              "microbatch-size = 32\n"
              "epochs = 1\n"
              "optimizer = sgd\n"
              "momentum = 0.5\n"
              "nesterov = on\n"
              "seed = 7\n"
              "stages = 2\n");
    ck_assert_msg(cli_run(dir, out, sizeof out, "run --config one.ini --db a.db --quiet") == 0,
                  "%s", out);
    ck_assert_msg(cli_run(dir, out, sizeof out, "run " SMALL "--schedule gpipe --microbatches 2 "
                          "--optimizer sgd --momentum 0.5 --nesterov --seed 7 --stages 2 "
                          "--db a.db --quiet") == 0, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(*) FROM runs WHERE status = 'done'"),
                     2);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(DISTINCT config) FROM runs"), 1);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(DISTINCT train_loss) FROM epochs"), 1);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(*) FROM runs WHERE seed = 7 AND "
                                             "microbatches = 2 AND stages = 2"), 2);
    /* a flag given too replaces the file's */
    ck_assert_msg(cli_run(dir, out, sizeof out, "run --config one.ini --seed 9 --db b.db --quiet")
                  == 0, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "b.db", "SELECT seed FROM runs"), 9);
    /* a file of several configurations is a sweep's */
    cli_write(dir, "two.ini", "[grid]\nseed = 1, 2\n[run]\nmodel = mlp\n");
    ck_assert_msg(cli_run(dir, out, sizeof out, "run --config two.ini --db c.db") == 2, "%s", out);
    ck_assert_msg(strstr(out, "2 configurations") && strstr(out, "pipebench sweep two.ini"),
                  "%s", out);
    /* a bad value is reported with its line, and nothing runs */
    cli_write(dir, "bad.ini", "[run]\nmodel = mlp\nepochs = zero\n");
    ck_assert_msg(cli_run(dir, out, sizeof out, "run --config bad.ini --db c.db") == 2, "%s", out);
    ck_assert_msg(strstr(out, "bad.ini:3:") && strstr(out, "--epochs"), "%s", out);
    ck_assert_msg(cli_run(dir, out, sizeof out, "run --config missing.ini --db c.db") == 2, "%s",
                  out);
    ck_assert_msg(strstr(out, "missing.ini"), "%s", out);
    ck_assert(!exists("c.db"));
    /* runs --status: the runs of those statuses */
    ck_assert_int_eq(cli_db_int(dir, "a.db", "UPDATE runs SET status = 'failed' WHERE id = 2 "
                                             "RETURNING id"), 2);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "runs --db a.db --status failed --json"), 0);
    ck_assert_msg(strstr(out, "\"id\":\t2") && !strstr(out, "\"id\":\t1"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "runs --db a.db --status done,failed --json"),
                     0);
    ck_assert_msg(strstr(out, "\"id\":\t2") && strstr(out, "\"id\":\t1"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "runs --db a.db --status interrupted"), 0);
    ck_assert_msg(strstr(out, "no runs"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "runs --db a.db --status finished"), 2);
    ck_assert_msg(strstr(out, "unknown status 'finished'"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* scripts/test --help says what it does and runs nothing (here nothing can run: no
 * program is on the PATH). */
START_TEST(scripts_test_help)
{
    cli_scratch(dir, sizeof dir, "cliopt");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "env -i PATH=%s /bin/bash %s/scripts/test --help 2>&1", dir,
             PB_SOURCE_ROOT);
    FILE *f = popen(cmd, "r");
    ck_assert(f != NULL);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    int st = pclose(f);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
    ck_assert_msg(!strncmp(out, "usage: scripts/test", 19) && strstr(out, "N passed, N failed"),
                  "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* Every `--target X` the documents quote is a fraction, as report, plot and compare take. */
START_TEST(documented_targets_are_fractions)
{
    static const char *const docs[] = {"README.md", "docs/reproducing.md", "docs/design.md",
                                       "docs/semantics.md", "docs/extending.md"};
    int seen = 0;
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", PB_SOURCE_ROOT, docs[i]);
        FILE *f = fopen(path, "r");
        ck_assert_msg(f != NULL, "%s", path);
        char line[1024];
        for (int no = 1; fgets(line, sizeof line, f); no++)
            for (const char *p = strstr(line, "--target "); p; p = strstr(p + 1, "--target ")) {
                double t;
                if (sscanf(p + 9, "%lf", &t) != 1)
                    continue;
                seen++;
                ck_assert_msg(t > 0 && t <= 1, "%s:%d quotes --target %g, not a fraction in "
                              "(0, 1]", docs[i], no, t);
            }
        fclose(f);
    }
    ck_assert_int_gt(seen, 0);
}
END_TEST

/* The saved weights' difference between two runs (safetensors files in dir): its norm,
 * over every tensor. */
static double weights_distance(const char *a, const char *b)
{
    struct pb_safetensors x, y;
    struct pb_err e;
    char pa[256], pbth[256];
    snprintf(pa, sizeof pa, "%s/%s", dir, a);
    snprintf(pbth, sizeof pbth, "%s/%s", dir, b);
    ck_assert_msg(pb_st_load(&x, pa, &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_st_load(&y, pbth, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(x.n, y.n);
    double sum = 0;
    for (int i = 0; i < x.n; i++) {
        const struct pb_st_tensor *t = &x.t[i], *u = pb_st_find(&y, t->name);
        ck_assert(u && u->count == t->count && t->dtype == PB_ST_F32);
        for (size_t k = 0; k < t->count; k++) {
            float p, q;
            memcpy(&p, t->data + 4 * k, 4);
            memcpy(&q, u->data + 4 * k, 4);
            sum += ((double)p - q) * ((double)p - q);
        }
    }
    pb_st_finish(&x);
    pb_st_finish(&y);
    return sqrt(sum);
}

/* --clip-grad C: one SGD update per stage from the same weights with C and 2C (both
 * below the gradients' norms) moves each stage's weights by lr·C·ĝ and lr·2C·ĝ: the two
 * results lie lr·C apart per stage, lr·C·√2 over D = 2 stages (a global norm over the
 * whole model would give lr·C); recorded in the configuration and its identity. */
START_TEST(clip_grad_per_stage)
{
    cli_scratch(dir, sizeof dir, "cliopt");
#define ONE_UPDATE "run --quiet --model mlp --dataset synthetic --stages 2 --optimizer sgd " \
                   "--momentum 0 --lr 0.5 --limit-train 32 --limit-val 32 --microbatch-size 32 " \
                   "--schedule pipedream --epochs 1 --db a.db "
    ck_assert_msg(cli_run(dir, out, sizeof out, ONE_UPDATE "--clip-grad 1e-4 --save c1.st") == 0,
                  "%s", out);
    ck_assert_msg(cli_run(dir, out, sizeof out, ONE_UPDATE "--clip-grad 2e-4 --save c2.st") == 0,
                  "%s", out);
    ck_assert_msg(cli_run(dir, out, sizeof out, ONE_UPDATE "--save c0.st") == 0, "%s", out);
    double d = weights_distance("c1.st", "c2.st"), want = 0.5 * 1e-4 * sqrt(2.0);
    ck_assert_msg(fabs(d - want) < 1e-3 * want, "|W(2C) - W(C)| = %.9g, want %.9g", d, want);
    ck_assert_msg(weights_distance("c0.st", "c1.st") > 100 * want, "no clipping without it?");
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(DISTINCT json_extract(config, "
                                             "'$.clip_grad')) FROM runs"), 2);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(DISTINCT config_id) FROM run_config"),
                     3);
    /* warm-up and cosine: recorded, and the epochs' rates follow them */
    ck_assert_msg(cli_run(dir, out, sizeof out, "run --quiet --model mlp --dataset synthetic "
                          "--limit-train 64 --limit-val 64 --epochs 4 --lr 0.1 --lr-warmup 2 "
                          "--lr-cosine --db b.db") == 0, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "b.db", "SELECT json_extract(config, '$.lr_warmup') * 10 + "
                                             "json_extract(config, '$.lr_cosine') FROM runs"), 21);
    ck_assert_int_eq(cli_db_int(dir, "b.db", "SELECT group_concat(CAST(round(lr * 1000) AS "
                                             "INTEGER), ',') = '50,100,100,50' FROM epochs"), 1);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run --lr-warmup 3 --epochs 3 --db c.db"), 2);
    ck_assert_msg(strstr(out, "--lr-warmup 3 leaves no epoch at the full rate"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run --lr-cosine --lr-steps 2 --db c.db"), 2);
    ck_assert_msg(strstr(out, "give one of them"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run --clip-grad -1 --db c.db"), 2);
    ck_assert(!exists("c.db"));
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("cli_options");
    TCase *tc = tcase_create("cli");
    tcase_add_test(tc, version_names_revision_and_features);
    tcase_add_test(tc, repeated_options_are_refused);
    tcase_add_test(tc, config_file_equals_flags);
    tcase_add_test(tc, scripts_test_help);
    tcase_add_test(tc, documented_targets_are_fractions);
    tcase_add_test(tc, clip_grad_per_stage);
    suite_add_tcase(s, tc);
    return s;
}
