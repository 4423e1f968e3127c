/* tests/model/test_partition.c — partitions (semantics §5.3): the min-max cut over given costs,
 * `pipebench partition`'s columns on lenet and mlp, hand-set bounds accepted and bad ones
 * refused (exit 2, nothing recorded), a measured --partition time, the recorded cut
 * in `show` and in the configuration identity, and one static cut per --batch whatever
 * the micro-batches. */
#include "tests/support/cli_util.h"

#include "harness/driver/plan.h"
#include "harness/model/partition.h"

static char dir[64], out[1 << 16];

START_TEST(min_max_cut)
{
    struct pb_err e;
    int b[4];
    /* the slowest stage is 5 (the block of 5 alone), the others as even as can be */
    const double cost[] = {1, 1, 5, 1, 1, 1};
    ck_assert(pb_partition_min_max(cost, 6, 3, b, &e) == 0);
    ck_assert(b[0] == 0 && b[1] == 2 && b[2] == 3 && b[3] == 6);
    ck_assert_int_eq(pb_partition_min_max(cost, 6, 7, b, &e), -1);
    ck_assert_msg(strstr(e.msg, "6 blocks can be cut into at most 6 stages"), "%s", e.msg);
    enum pb_partition_by by;
    ck_assert(pb_partition_parse("0:2:3:6", 3, &by, b, &e) == 0 && by == PB_PART_BOUNDS);
    ck_assert(b[1] == 2 && b[2] == 3 && b[3] == 6);
    ck_assert(pb_partition_parse("balanced", 3, &by, NULL, &e) == 0 && by == PB_PART_FLOPS);
    ck_assert(pb_partition_parse("time", 3, &by, NULL, &e) == 0 && by == PB_PART_TIME);
    char *t = pb_partition_text(b, 3);
    ck_assert_str_eq(t, "0,2,3,6");
    free(t);
}
END_TEST

/* vgg16's cost cut at D = 4 with --batch B and micro-batches of b into bounds */
static void vgg16_cost_cut(int batch, int microbatch, int *bounds)
{
    struct pb_run_cfg c;
    pb_run_cfg_defaults(&c);
    c.model = "vgg16";
    c.stages = 4;
    c.partition = "cost";
    c.schedule = batch > microbatch ? "gpipe" : "pipedream";
    c.batch = batch;
    c.microbatch_size = microbatch;
    c.microbatches = batch > microbatch ? batch / microbatch : 0;
    struct pb_model m;
    const struct pb_preset *paper;
    struct pb_err e;
    ck_assert_msg(pb_run_model_build(&c, &m, &paper, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(m.batch, microbatch);
    ck_assert_msg(pb_run_partition(&c, &m, paper, false, 0, bounds, &e) == 0, "%s", e.msg);
    pb_model_finish(&m);
}

/* Equal footing: under --batch B a static cost cuts at B samples, so GPipe's 4
 * micro-batches of 16 get PipeDream's cut of micro-batches of 64. vgg16's cost weighs a
 * block's parameter bytes, which do not grow with the micro-batch, against its FLOPs and
 * activations, which do: cut per micro-batch (no --batch), 16 and 64 give other cuts. */
START_TEST(one_cut_per_batch)
{
    int b64[5], gpipe[5], b16[5];
    vgg16_cost_cut(64, 64, b64);
    vgg16_cost_cut(64, 16, gpipe);
    vgg16_cost_cut(0, 16, b16);
    char *t64 = pb_partition_text(b64, 4), *tg = pb_partition_text(gpipe, 4);
    char *t16 = pb_partition_text(b16, 4);
    ck_assert_msg(!strcmp(t64, tg), "--batch 64: pipedream %s, gpipe %s", t64, tg);
    ck_assert_msg(strcmp(t64, t16), "micro-batches of 16 and 64 cut alike (%s): the case "
                  "shows nothing", t16);
    free(t64), free(tg), free(t16);
}
END_TEST

/* The printer's columns: a row per stage, a row per block, a row per predictor. */
static void expect_printout(const char *args, int stages, const char *const *blocks)
{
    int rc = cli_run(dir, out, sizeof out, "partition %s --reps 1", args);
    ck_assert_msg(rc == 0, "%s: exit %d: %s", args, rc, out);
    const char *st = strstr(out, "  stage blocks");
    const char *bl = strstr(out, "\nblocks:\n");
    const char *pr = strstr(out, "how each cost predicts");
    ck_assert_msg(st && bl && pr && st < bl && bl < pr, "%s", out);
    ck_assert_msg(strstr(st, "params") && strstr(st, "fwd MFLOPs") && strstr(st, "act KiB") &&
                  strstr(st, " ms\n"), "%s", out);
    for (int k = 0; k < stages; k++) {
        char row[16];
        snprintf(row, sizeof row, "\n  %-5d ", k);
        const char *r = strstr(st, row);
        ck_assert_msg(r && r < bl, "no stage %d: %s", k, out);
    }
    for (int i = 0; blocks[i]; i++) {
        char row[64];
        snprintf(row, sizeof row, "\n  %-5d %-22s ", i, blocks[i]);
        ck_assert_msg(strstr(bl, row), "no block '%s': %s", row, out);
    }
    ck_assert_msg(strstr(bl, "moved KiB"), "%s", out);
    static const char *const by[] = {"\n  flops ", "\n  cost ", "\n  params ", "\n  time "};
    for (int i = 0; i < 4; i++)
        ck_assert_msg(strstr(pr, by[i]), "no '%s': %s", by[i] + 1, out);
    /* the measured cut is the fastest: its max stage error is 0 */
    ck_assert_msg(strstr(pr, "0.0%\n"), "%s", out);
}

START_TEST(printer_columns)
{
    cli_scratch(dir, sizeof dir, "partition");
    static const char *const lenet[] = {"conv1", "relu1", "pool1", "conv2", "pool2", "fc1",
                                        "drop", "fc2", "fc3", NULL};
    expect_printout("--model lenet", 4, lenet);
    ck_assert_msg(strstr(out, "model lenet: 9 blocks, micro-batches of 64; cut by cost into 4 "
                              "stages: "), "%s", out);
    static const char *const mlp[] = {"flatten", "fc1", "relu1", "fc2", "relu2", "fc3", "relu3",
                                      "fc4", NULL};
    expect_printout("--model mlp --stages 2 --microbatch-size 32 --by 0,3,8", 2, mlp);
    ck_assert_msg(strstr(out, "cut by bounds into 2 stages: 0,3,8") &&
                  strstr(out, "\n  0     0-2 flatten..relu1 ") &&
                  strstr(out, "micro-batches of 32"), "%s", out);
    /* stage 0 holds fc1's 784 × 256 + 256 parameters */
    ck_assert_msg(strstr(out, "0-2 flatten..relu1               200960 "), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "partition --model mlp --stages 2 --by 0,3,9 --reps 1"),
                     2);
    ck_assert_msg(strstr(out, "model 'mlp' has 8 blocks"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "partition --model mlp --stages 9"), 2);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "partition --model nope"), 2);
    cli_cleanup(dir);
}
END_TEST

#define RUN "run --model mlp --dataset synthetic --epochs 1 --limit-train 256 --limit-val 64 " \
            "--db p.db --quiet"

static void expect_refused(const char *partition, const char *fragment)
{
    int rc = cli_run(dir, out, sizeof out, RUN " --partition %s", partition);
    ck_assert_msg(rc == 2, "%s: exit %d: %s", partition, rc, out);
    ck_assert_msg(strstr(out, fragment), "%s: no '%s' in: %s", partition, fragment, out);
    ck_assert_int_eq(cli_db_int(dir, "p.db", "SELECT count(*) FROM runs WHERE partition_cut "
                                              "IS NULL OR status != 'done'"), 0);
}

START_TEST(hand_set_cuts)
{
    cli_scratch(dir, sizeof dir, "partition");
    int rc = cli_run(dir, out, sizeof out, RUN " --partition 0,1,2,5,8");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_int_eq(cli_db_int(dir, "p.db", "SELECT count(*) FROM runs WHERE partition_cut = "
                                              "'0,1,2,5,8'"), 1);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "show --db p.db 1"), 0);
    ck_assert_msg(strstr(out, "partition cut       0,1,2,5,8"), "%s", out);
    expect_refused("0,1,2,5", "gives 4 bounds, so 3 stages; --stages 4 needs 5");
    expect_refused("0,2,1,5,8", "the bounds must increase (2 then 1)");
    expect_refused("1,2,3,5,8", "the bounds start at block 0");
    expect_refused("0,1,2,5,9", "model 'mlp' has 8 blocks; end the bounds with 8");
    expect_refused("0,1,x,5,8", "expected a method");
    ck_assert_int_eq(cli_db_int(dir, "p.db", "SELECT count(*) FROM runs"), 1);
    cli_cleanup(dir);
}
END_TEST

/* A measured cut is valid and recorded; runs of the same cut share the configuration
 * identity whichever method chose it, so the report averages them in one cell. */
START_TEST(time_cut_and_identity)
{
    cli_scratch(dir, sizeof dir, "partition");
    int rc = cli_run(dir, out, sizeof out, RUN " --partition time");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_int_eq(cli_db_int(dir, "p.db", "SELECT count(*) FROM runs WHERE partition_cut "
                                              "LIKE '0,%,8' AND json_extract(config, "
                                              "'$.partition') = 'time'"), 1);
    rc = cli_run(dir, out, sizeof out, RUN " --partition 0,2,4,6,8 --seed 2");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    rc = cli_run(dir, out, sizeof out, RUN " --partition params --seed 3");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    /* runs 2 and 3 (the measured cut of run 1 may be the same one, by chance) */
    ck_assert_int_eq(cli_db_int(dir, "p.db", "SELECT count(*) FROM runs WHERE id IN (2, 3) AND "
                                              "partition_cut = '0,2,4,6,8'"), 2);
    rc = cli_run(dir, out, sizeof out, "report --db p.db --table accuracy --runs 2,3");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "(n = 2)"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* The sequence models measure too: each block runs on the output of the one before it,
 * so GNMT's ids, carried beside the features to the decoder's embedding, stay token ids
 * (on generated floats its profile stopped at "token 0.52 is not a whole number"). */
START_TEST(sequence_models_measured)
{
    cli_scratch(dir, sizeof dir, "partition");
    static const char *const cases[][2] = {
        {"gnmt8", "model gnmt8: 11 blocks, micro-batches of 4; cut by time into 4 stages: 0,"},
        {"residual-lstm", "model residual-lstm: 6 blocks, micro-batches of 4; cut by time into 4 "
                          "stages: 0,"},
    };
    for (int i = 0; i < 2; i++) {
        int rc = cli_run(dir, out, sizeof out, "partition --model %s --stages 4 --by time "
                                               "--microbatch-size 4 --reps 1", cases[i][0]);
        ck_assert_msg(rc == 0, "%s: exit %d: %s", cases[i][0], rc, out);
        ck_assert_msg(strstr(out, cases[i][1]), "%s", out);
    }
    /* stage 0 starts at block 0 whatever the measured cut; the blocks table names block4 */
    ck_assert_msg(strstr(out, "\n  0     0") && strstr(out, "\n  4     block4"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("partition");
    TCase *tc = tcase_create("partition");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, min_max_cut);
    tcase_add_test(tc, one_cut_per_batch);
    tcase_add_test(tc, printer_columns);
    tcase_add_test(tc, hand_set_cuts);
    tcase_add_test(tc, time_cut_and_identity);
    tcase_add_test(tc, sequence_models_measured);
    suite_add_tcase(s, tc);
    return s;
}
