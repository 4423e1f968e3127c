/* tests/driver/test_reproduce.c — `pipebench reproduce` through the built binary: the shipped
 * pipeoptim kit loads at both scales (every row file a valid sweep of schedules and
 * seeds, the table's published numbers in place); a tiny kit runs every configuration,
 * prints the paper's line and pipebench's (the same means as `report`), resumes without
 * running anything again, adds a Δ line at the paper scale, and --dry-run writes no
 * database; --figures draws the convergence figure of its runs; bad kits and options exit
 * 2 with what to fix; a run on a model's synthetic
 * stand-in records its dataset as synthetic:NAME. */
#include <errno.h>
#include <sys/stat.h>

#include "pb_config.h"
#include "tests/support/cli_util.h"

static char dir[64], out[1 << 16];

/* One row, mlp on 640 samples for 1 epoch: gpipe and pipedream, seeds 1 and 2. */
static const char *const tiny_table =
    "# a tiny kit: one row\n"
    "row,workload,optimizer,metric,note,gpipe,pipedream,pipedream-2bw,spectrain,xpipe,"
    "pipeoptim\n"
    "mlp-sgdm,MLP,SGDM,top-1 %,,50.00,60.5,\xe2\x80\x93,\xe2\x80\x93,-,70\n";

static const char *const tiny_row =
    "[grid]\n"
    "schedule = gpipe, pipedream\n"
    "seed = 1, 2\n"
    "[run]\n"
    "model = mlp\n"
    "optimizer = sgdm\n"
    "limit-train = 640\n"
    "limit-val = 320\n"
    "batch = 32\n"
    "epochs = 1\n";

/* dir/kits/tiny with table and a row file per scale; PB_EXPERIMENTS_DIR points there. */
static void tiny_kit(const char *table, const char *row)
{
    char path[256];
    static const char *const sub[] = {"kits", "kits/tiny", "kits/tiny/cpu", "kits/tiny/paper"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, sub[i]);
        ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
    }
    cli_write(dir, "kits/tiny/table.csv", table);
    cli_write(dir, "kits/tiny/cpu/mlp-sgdm.ini", row);
    cli_write(dir, "kits/tiny/paper/mlp-sgdm.ini", row);
    snprintf(path, sizeof path, "%s/kits", dir);
    setenv("PB_EXPERIMENTS_DIR", path, 1);
}

/* The text from `head` to the end of its line. */
static const char *line_with(const char *text, const char *head)
{
    const char *p = strstr(text, head);
    ck_assert_msg(p != NULL, "no '%s' in:\n%s", head, text);
    return p;
}

/* The line from `head` on, alone, into buf. */
static void line_of(const char *text, const char *head, char *buf, size_t cap)
{
    const char *p = line_with(text, head);
    size_t n = strcspn(p, "\n");
    snprintf(buf, cap, "%.*s", (int)n, p);
}

START_TEST(shipped_kit_loads)
{
    cli_scratch(dir, sizeof dir, "reproduce");
    unsetenv("PB_EXPERIMENTS_DIR");
    ck_assert_msg(cli_run(dir, out, sizeof out, "reproduce pipeoptim --dry-run") == 0, "%s",
                  out);
    ck_assert_msg(strstr(out, "reproduce: alexnet-sgdm: 18 runs, 0 finished, 18 to run") &&
                  strstr(out, "reproduce: gnmt16-adam: 15 runs"), "%s", out);
    ck_assert_msg(strstr(out, "| ResNet-101    | SGDM      | top-1 %      | paper           | "
                              "66.64 |     67.72 |         66.94 |     67.81 |     \xe2\x80\x93 "
                              "|     67.84 |"), "%s", out);
    /* beside pipebench's line, what a guess scores on the data each row reads: the cpu
       rows' stand-ins of CIFAR-100 and Tiny-ImageNet, IMDb's two classes; BLEU none */
    ck_assert_msg(strstr(out, "| AlexNet       | SGDM      | top-1 %      | paper ") &&
                  strstr(out, "|               |           | chance 1.00  | pipebench ") &&
                  strstr(out, "|               |           | chance 0.50  | pipebench ") &&
                  strstr(out, "|               |           | chance 50.00 | pipebench ") &&
                  strstr(out, "|               |           |              | pipebench "),
                  "%s", out);
    ck_assert_msg(cli_db_int(dir, "pipeoptim-cpu.db", "SELECT 1") == 0, "a dry run wrote");
    /* the paper scale's rows run on --backend cuda: a build without it refuses them, with
       the reason, before anything runs */
    int rc = cli_run(dir, out, sizeof out, "reproduce pipeoptim --scale paper --dry-run --quiet");
    if (!PB_HAVE_CUDA) {
        ck_assert_msg(rc == 2 && strstr(out, "built without CUDA"), "exit %d: %s", rc, out);
        cli_cleanup(dir);
        return;
    }
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_msg(strstr(out, "| GNMT-8        | Adam      | BLEU         | paper              "
                              "   | 21.22 |"), "%s", out);
    ck_assert_msg(strstr(out, "\xce\x94 (pipebench \xe2\x88\x92 paper)"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

START_TEST(tiny_kit_runs_and_resumes)
{
    cli_scratch(dir, sizeof dir, "reproduce");
    tiny_kit(tiny_table, tiny_row);
    ck_assert_msg(cli_run(dir, out, sizeof out, "reproduce tiny --dry-run") == 0, "%s", out);
    ck_assert_msg(strstr(out, "mlp-sgdm: 4 runs, 0 finished, 4 to run") &&
                  strstr(out, "schedule=pipedream seed=2: to run"), "%s", out);
    ck_assert_msg(cli_db_int(dir, "tiny-cpu.db", "SELECT 1") == 0, "a dry run wrote");
    ck_assert_msg(cli_run(dir, out, sizeof out, "reproduce tiny --quiet") == 0, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "tiny-cpu.db", "SELECT count(*) FROM runs WHERE status = "
                                                    "'done'"), 4);
    char paper[512];
    line_of(out, "| MLP      | SGDM      | top-1 %      | paper     |", paper, sizeof paper);
    ck_assert_msg(strstr(paper, " 50.00 |") && strstr(paper, " 60.50 |") &&
                  strstr(paper, " 70.00 |") && strstr(paper, " \xe2\x80\x93 |"), "%s", paper);
    /* pipebench's cells: the accuracy report's means over the two seeds */
    char gp[32], pd[32], rep[1 << 14];
    ck_assert(cli_run(dir, rep, sizeof rep, "report --table accuracy --db tiny-cpu.db "
                                            "--format csv") == 0);
    double mg = 0, mp = 0;
    for (char *l = strtok(rep, "\n"); l; l = strtok(NULL, "\n")) {
        double m;
        if (sscanf(l, "sgdm,mlp,%*[^,],4,gpipe,%lf", &m) == 1)
            mg = m;
        if (sscanf(l, "sgdm,mlp,%*[^,],4,pipedream,%lf", &m) == 1)
            mp = m;
    }
    ck_assert(mg > 0 && mp > 0);
    snprintf(gp, sizeof gp, "%.2f \xc2\xb1 ", mg);
    snprintf(pd, sizeof pd, "%.2f \xc2\xb1 ", mp);
    char ours[512];
    line_of(out, "| pipebench |", ours, sizeof ours);
    ck_assert_msg(strstr(ours, gp) && strstr(ours, pd) && strstr(ours, "(n = 2)") &&
                  strstr(out, "| chance 10.00 | pipebench |"), "%s / %s in %s", gp, pd, ours);
    ck_assert_msg(!strstr(out, "\xce\x94 (pipebench"), "a cpu scale table has no \xce\x94 line: %s",
                  out);
    /* again: nothing to run, the same table */
    char first[1 << 14];
    snprintf(first, sizeof first, "%s", strstr(out, "Kit tiny"));
    ck_assert_msg(cli_run(dir, out, sizeof out, "reproduce tiny") == 0, "%s", out);
    ck_assert_msg(strstr(out, "mlp-sgdm: 4 runs, 4 finished, 0 to run"), "%s", out);
    ck_assert_str_eq(strstr(out, "Kit tiny"), first);
    ck_assert_int_eq(cli_db_int(dir, "tiny-cpu.db", "SELECT count(*) FROM runs"), 4);
    ck_assert_msg(!strstr(out, "wrote "), "figures drawn without --figures: %s", out);
    ck_assert_msg(!strstr(out, "| note"), "a note column with one partition: %s", out);
    /* a row whose schedules ran on different partitions says so beside it */
    ck_assert_int_eq(cli_db_int(dir, "tiny-cpu.db", "SELECT count(DISTINCT partition_cut) "
                                                    "FROM runs"), 1);
    ck_assert_int_eq(cli_db_int(dir, "tiny-cpu.db", "UPDATE runs SET partition_cut = "
                                "'0,1,2,3,4' WHERE schedule = 'gpipe' RETURNING 1"), 1);
    ck_assert_msg(cli_run(dir, out, sizeof out, "reproduce tiny --dry-run") == 0, "%s", out);
    line_of(out, "| pipebench |", ours, sizeof ours);
    ck_assert_msg(strstr(out, "| note ") && strstr(ours, "partitions differ: GPipe 0,1,2,3,4; "
                  "PipeDream "), "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "tiny-cpu.db", "UPDATE runs SET partition_cut = (SELECT "
                                "partition_cut FROM runs WHERE schedule = 'pipedream') WHERE "
                                "schedule = 'gpipe' RETURNING 1"), 1);
    /* --figures: top-1 against epoch, a line per schedule over its two seeds */
    ck_assert_msg(cli_run(dir, out, sizeof out, "reproduce tiny --quiet --figures figs") == 0,
                  "%s", out);
    ck_assert_msg(strstr(out, "figs/convergence.png"), "%s", out);
    char path[256], dat[1 << 14];
    snprintf(path, sizeof path, "%s/figs/convergence.dat", dir);
    FILE *fd = fopen(path, "r");
    ck_assert_msg(fd != NULL, "no %s", path);
    dat[fread(dat, 1, sizeof dat - 1, fd)] = '\0';
    fclose(fd);
    ck_assert_msg(strstr(dat, "epoch \"gpipe (n = 2)\"") &&
                  strstr(dat, "epoch \"pipedream (n = 2)\""), "%s", dat);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "reproduce tiny --figures ''"), 2);
    ck_assert_msg(strstr(out, "--figures names a folder"), "%s", out);
    /* the paper scale into its own database: a Δ line, pipebench − paper */
    ck_assert_msg(cli_run(dir, out, sizeof out, "reproduce tiny --scale paper --quiet") == 0,
                  "%s", out);
    char delta[32];
    snprintf(delta, sizeof delta, "%+.2f |", mg - 50.0);
    char dl[512];
    line_of(out, "\xce\x94 (pipebench", dl, sizeof dl);
    ck_assert_msg(strstr(dl, delta), "%s in %s", delta, dl);
    ck_assert_int_eq(cli_db_int(dir, "tiny-paper.db", "SELECT count(*) FROM runs"), 4);
    cli_cleanup(dir);
}
END_TEST

/* Exits 2 with expect in its output. */
static void refused(const char *args, const char *expect)
{
    int rc = cli_run(dir, out, sizeof out, "%s", args);
    ck_assert_msg(rc == 2 && strstr(out, expect), "%s: exit %d, want 2 and '%s':\n%s", args, rc,
                  expect, out);
}

START_TEST(bad_kits)
{
    cli_scratch(dir, sizeof dir, "reproduce");
    tiny_kit(tiny_table, tiny_row);
    refused("reproduce nope", "no such kit");
    refused("reproduce ../tiny", "not a path");
    refused("reproduce", "name the kit");
    refused("reproduce tiny --scale huge", "--scale is cpu or paper");
    refused("reproduce tiny --rows mlp-sgdm,vgg", "has no row 'vgg'; its rows: mlp-sgdm");
    refused("reproduce tiny --jobs 0", "--jobs must be at least 1");
    refused("reproduce tiny --format html", "--format is md, csv or latex");
    tiny_kit("row,workload,optimizer,metric,note,gpipe,pipedream,pipedream-2bw,spectrain,xpipe,"
             "pipeoptim\nmlp-sgdm,MLP,SGDM,top-1 %,,50,abc,-,-,-,-\n", tiny_row);
    refused("reproduce tiny", "table.csv:2: 'abc' is not a number");
    tiny_kit("row,workload,optimizer,metric,gpipe\n", tiny_row);
    refused("reproduce tiny", "table.csv:1: the header must be");
    tiny_kit(tiny_table, "[grid]\nschedule = gpipe\nlr = 0.1, 0.2\n[run]\nmodel = mlp\n");
    refused("reproduce tiny", "mlp-sgdm.ini:3: a kit's row varies schedule and seed only");
    tiny_kit(tiny_table, "[grid]\nschedule = gpipe, warp\n");
    refused("reproduce tiny --dry-run", "unknown schedule 'warp'");
    ck_assert_int_eq(cli_db_int(dir, "tiny-cpu.db", "SELECT 1"), 0);
    cli_cleanup(dir);
}
END_TEST

/* A run on the synthetic stand-in of its model's dataset records the stand-in by name, so a
 * table's dataset column says what the numbers are of. */
START_TEST(stand_in_named)
{
    cli_scratch(dir, sizeof dir, "reproduce");
    ck_assert_msg(cli_run(dir, out, sizeof out, "run --model vgg16 --dataset synthetic --stages 2 "
                                               "--epochs 1 --limit-train 64 --limit-val 64 "
                                               "--batch 32 --db s.db --quiet") == 0, "%s", out);
    ck_assert_msg(cli_run(dir, out, sizeof out, "report --table accuracy --db s.db --format csv")
                  == 0, "%s", out);
    ck_assert_msg(strstr(out, ",vgg16,synthetic:cifar100,2,pipedream,"), "%s", out);
    ck_assert_msg(cli_run(dir, out, sizeof out, "run --model mlp --dataset synthetic --stages 2 "
                                               "--epochs 1 --limit-train 64 --limit-val 64 "
                                               "--db s.db --quiet") == 0, "%s", out);
    ck_assert_msg(cli_run(dir, out, sizeof out, "report --table accuracy --db s.db --format csv")
                  == 0, "%s", out);
    ck_assert_msg(strstr(out, ",mlp,synthetic,2,pipedream,"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("reproduce");
    TCase *tc = tcase_create("reproduce");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, shipped_kit_loads);
    tcase_add_test(tc, tiny_kit_runs_and_resumes);
    tcase_add_test(tc, bad_kits);
    tcase_add_test(tc, stand_in_named);
    suite_add_tcase(s, tc);
    return s;
}
