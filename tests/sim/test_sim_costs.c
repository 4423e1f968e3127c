/* tests/sim/test_sim_costs.c — where the simulator's op costs come from: a hand-worked
 * `simulate --op-costs FILE` and the files it refuses, and a recorded run's simulated
 * throughput (results/results_sim.h) printed alike by `simulate --run` and `report --table
 * sim-throughput`, with a dagger where its op times were measured on shared cores (in
 * sim-bubble too). */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/cli_util.h"

/* GPipe, D = 2, N = M = 4, b = 3: stage 0 F 1, B 1, U 0.5; stage 1 F 2, B 3, U 0.25 and
 * its messages 0.5 s in transit. Stage 1's forwards arrive at 1.5, 2.5, ..: they run
 * 1.5–3.5, 3.5–5.5, 5.5–7.5, 7.5–9.5, its backwards 9.5–12.5, .., 18.5–21.5 (U to 21.75);
 * stage 0 receives each gradient as it is sent (its recv 0), so its backwards run
 * 12.5–13.5, 15.5–16.5, 18.5–19.5, 21.5–22.5 and its U 22.5–23: makespan 23 s, 4 · 3 / 23
 * = 0.521739 samples/s. */
START_TEST(test_op_costs_file)
{
    char dir[64], out[8192];
    cli_scratch(dir, sizeof dir, "opcosts");
    cli_write(dir, "c.csv", "# hand-worked\nstage,op,seconds\n0,F,1\n0,B,1\n0,U,0.5\n\n"
                            "1, F, 2\n1,B,3\n1,U,0.25\n1,recv,0.5\n");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule gpipe --stages 2 "
                             "--length 4 --microbatches 4 --microbatch-size 3 "
                             "--op-costs c.csv"), 0);
    ck_assert_msg(strstr(out, "makespan 23 s;") && strstr(out, "= 0.521739 samples/s") &&
                  strstr(out, "costs: from c.csv"), "%s", out);
    /* the stages' rows swapped: another pipe (stage 0 now the slow one) */
    cli_write(dir, "s.csv", "stage,op,seconds\n1,F,1\n1,B,1\n1,U,0.5\n0,F,2\n0,B,3\n0,U,0.25\n");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule gpipe --stages 2 "
                             "--length 4 --microbatches 4 --op-costs s.csv"), 0);
    ck_assert_msg(!strstr(out, "makespan 23 s;") && !strstr(out, "\xe2\x80\xa0"), "%s", out);
    /* a file that says its costs were measured on shared cores: simulate says so */
    cli_write(dir, "d.csv", "# \xe2\x80\xa0 measured under a load average of 9 on 2 cores\n"
                            "stage,op,seconds\n0,F,1\n0,B,1\n0,U,0\n1,F,1\n1,B,1\n1,U,0\n");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule gpipe --stages 2 "
                             "--op-costs d.csv"), 0);
    ck_assert_msg(strstr(out, "\xe2\x80\xa0 d.csv says its op times were measured while the "
                          "stages shared cores"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* Every bad file is refused with exit 2, the line and what to write, and --record writes
 * nothing then. */
START_TEST(test_op_costs_refused)
{
    static const char full[] = "0,F,1\n0,B,1\n0,U,0\n1,F,1\n1,B,1\n1,U,0\n";
    static const struct {
        const char *rows, *says;
    } bad[] = {
        {"2,F,1\n", "line 2: unknown stage '2': the stages are 0 to 1"},
        {"x,F,1\n", "unknown stage 'x'"},
        {"-1,F,1\n", "unknown stage '-1'"},
        {"0,X,1\n", "line 2: unknown op 'X': one of F, B, U, I, W or recv"},
        {"0,F,-1\n", "line 2: the seconds of stage 0's F must be a finite number, 0 or more "
                     "(got '-1')"},
        {"0,F,inf\n", "(got 'inf')"},
        {"0,F,nan\n", "(got 'nan')"},
        {"0,F,1e999\n", "(got '1e999')"},
        {"0,F,abc\n", "(got 'abc')"},
        {"0,F,\n", "(got '')"},
        {"0,F,1\n0,F,2\n", "line 3: stage 0's F is given again (first on line 2)"},
        {"0,F\n", "line 2: a row is stage,op,seconds (e.g. 0,F,0.002), got 2 fields"},
        {"0,F,1,2\n", "got 4 fields"},
        {"0,F,1\n0,B,1\n0,U,0\n1,F,1\n1,U,0\n", "no row for stage 1's B, which its program "
                                                "runs; add the line 1,B,SECONDS"},
    };
    char dir[64], out[8192], text[512];
    cli_scratch(dir, sizeof dir, "opcostsbad");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        /* the bad rows first: the error is theirs, the full set after them never read */
        snprintf(text, sizeof text, "stage,op,seconds\n%s%s", bad[i].rows,
                 strstr(bad[i].says, "no row") ? "" : full);
        cli_write(dir, "b.csv", text);
        ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule gpipe --stages 2 "
                                 "--op-costs b.csv --record --db r.db"), 2);
        ck_assert_msg(strstr(out, bad[i].says) != NULL, "row %zu: want '%s' in: %s", i,
                      bad[i].says, out);
        ck_assert_msg(cli_db_int(dir, "r.db", "SELECT 1") == 0, "row %zu wrote a database", i);
    }
    cli_write(dir, "b.csv", full);   /* no header */
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule gpipe --stages 2 "
                             "--op-costs b.csv"), 2);
    ck_assert_msg(strstr(out, "line 1: the first line must be the header stage,op,seconds"),
                  "%s", out);
    cli_write(dir, "b.csv", "# nothing\n");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule gpipe --stages 2 "
                             "--op-costs b.csv"), 2);
    ck_assert_msg(strstr(out, "no header stage,op,seconds and no rows"), "%s", out);
    /* zb-h1 splits the backward: I and W are needed, B is not */
    snprintf(text, sizeof text, "stage,op,seconds\n%s", full);
    cli_write(dir, "b.csv", text);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule zb-h1 --stages 2 "
                             "--op-costs b.csv"), 2);
    ck_assert_msg(strstr(out, "no row for stage 0's I"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule gpipe --stages 2 "
                             "--op-costs missing.csv"), 2);
    ck_assert_msg(strstr(out, "missing.csv"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule gpipe --stages 2 "
                             "--op-costs b.csv --cost 1,1,0"), 2);
    ck_assert_msg(strstr(out, "give the op costs one way"), "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT 1"), 0);
    cli_cleanup(dir);
}
END_TEST

/* partition --op-costs-out: every stage's F, B, U, I, W and recv measured alone, a file
 * simulate reads for a schedule of any of those kinds (gpipe, and zb-h1's split
 * backward); an output path that cannot be written is refused before anything is
 * measured. */
START_TEST(test_op_costs_measured_alone)
{
    char dir[64], out[8192], path[512];
    cli_scratch(dir, sizeof dir, "opcostsalone");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "partition --model mlp --stages 2 --reps 1 "
                             "--microbatch-size 16 --op-costs-out oc.csv"), 0);
    ck_assert_msg(strstr(out, "pipebench simulate --op-costs oc.csv"), "%s", out);
    snprintf(path, sizeof path, "%s/oc.csv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    int rows = 0;
    bool header = false;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        if (!header) {
            ck_assert_str_eq(line, "stage,op,seconds\n");
            header = true;
            continue;
        }
        static const char *const ops[] = {"F", "B", "U", "I", "W", "recv"};
        int k, end = 0;
        char op[8];
        double s;
        ck_assert_msg(sscanf(line, "%d,%7[^,],%lf%n", &k, op, &s, &end) == 3 && line[end] == '\n',
                      "%s", line);
        ck_assert_msg(k == rows / 6 && !strcmp(op, ops[rows % 6]) && isfinite(s) && s >= 0,
                      "%s", line);
        /* every op runs kernels but recv, a buffer taken over between two CPU instances */
        ck_assert_msg(rows % 6 == 5 || s > 0, "%s", line);
        rows++;
    }
    fclose(f);
    ck_assert_int_eq(rows, 12);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule gpipe --stages 2 "
                             "--op-costs oc.csv"), 0);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule zb-h1 --stages 2 "
                             "--op-costs oc.csv"), 0);
    ck_assert_msg(strstr(out, "makespan"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "partition --model mlp --stages 2 "
                             "--op-costs-out nodir/oc.csv"), 2);
    ck_assert_msg(strstr(out, "--op-costs-out"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* Runs sql on dir/r.db. */
static void sql_exec(const char *dir, const char *sql)
{
    char path[512];
    snprintf(path, sizeof path, "%s/r.db", dir);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    char *msg = NULL;
    ck_assert_msg(sqlite3_exec(h, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", sql, msg);
    sqlite3_close(h);
}

/* The number after "= " and before " samples/s" in simulate's output. */
static double simulated_samples_per_s(const char *out)
{
    const char *at = strstr(out, " samples/s (b = ");
    ck_assert_msg(at != NULL, "%s", out);
    while (at > out && at[-1] != ' ')
        at--;
    return strtod(at, NULL);
}

/* The mean of the report's CSV row for the run's schedule. */
static double reported_mean(const char *out, const char *row)
{
    const char *at = strstr(out, row);
    ck_assert_msg(at != NULL, "no row '%s' in: %s", row, out);
    return strtod(at + strlen(row), NULL);
}

/* One recorded run: `simulate --run` and `report --table sim-throughput` print the same
 * simulated throughput, and `report --table sim-bubble` the bubble simulate prints (to
 * the digits each prints), each with a dagger exactly where the run's op times were
 * measured on shared cores. */
START_TEST(test_run_sim_one_definition)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "simdef");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run --model mlp --dataset synthetic "
                             "--schedule pipedream --stages 2 --executor threads --epochs 3 "
                             "--limit-train 256 --limit-val 64 --microbatch-size 32 --db r.db "
                             "--quiet"), 0);
    /* on its own cores: no dagger */
    sql_exec(dir, "UPDATE runs SET oversubscribed = 0, load_avg = 0");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --run 1 --db r.db"), 0);
    ck_assert_msg(!strstr(out, "\xe2\x80\xa0"), "%s", out);
    double sim = simulated_samples_per_s(out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table sim-throughput "
                             "--format csv"), 0);
    double rep = reported_mean(out, "sgdm,mlp,synthetic,2,pipedream,");
    ck_assert_msg(sim > 0 && fabs(rep - sim) <= 1e-5 * sim, "simulate --run %.9g, report %.9g",
                  sim, rep);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table sim-throughput"),
                     0);
    ck_assert_msg(!strstr(out, " \xe2\x80\xa0 (n"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table sim-bubble"), 0);
    ck_assert_msg(!strstr(out, " \xe2\x80\xa0 (n"), "%s", out);
    /* the bubble too: the same simulation's */
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --run 1 --db r.db"), 0);
    const char *at = strstr(out, "\nbubble ");
    ck_assert_msg(at != NULL, "%s", out);
    double sim_bubble = strtod(at + 8, NULL);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table sim-bubble "
                             "--format csv"), 0);
    double rep_bubble = reported_mean(out, "sgdm,mlp,synthetic,2,pipedream,");
    ck_assert_msg(sim_bubble > 0 && fabs(rep_bubble - sim_bubble) <= 1e-4 * sim_bubble,
                  "simulate --run %.9g%%, report %.9g%%", sim_bubble, rep_bubble);
    /* a schedule of the split backward has no costs in a run of the fused one */
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --run 1 --db r.db --schedule zb-h1"),
                     2);
    ck_assert_msg(strstr(out, "zb-h1 runs I on stage 0, and run 1 (pipedream) recorded no I "
                  "events there") && strstr(out, "--op-costs FILE"), "%s", out);
    /* the run's pipe with a file's costs */
    cli_write(dir, "c.csv", "stage,op,seconds\n0,F,1\n0,B,2\n0,U,0\n1,F,1\n1,B,2\n1,U,0\n");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --run 1 --db r.db --op-costs c.csv"),
                     0);
    ck_assert_msg(strstr(out, "simulated pipedream, D = 2, 8 micro-batches") &&
                  strstr(out, "(costs: from c.csv)") && strstr(out, "(b = 32)"), "%s", out);
    /* measured with a load above the cores: both say so */
    sql_exec(dir, "UPDATE runs SET load_avg = cores + 1");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --run 1 --db r.db"), 0);
    ck_assert_msg(strstr(out, "\xe2\x80\xa0 run 1's op times were measured while its stages "
                  "shared cores"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table sim-throughput"),
                     0);
    ck_assert_msg(strstr(out, " \xe2\x80\xa0 (n = 1)"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table sim-bubble"), 0);
    ck_assert_msg(strstr(out, " \xe2\x80\xa0 (n = 1)"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("sim_costs");
    TCase *tc = tcase_create("sim_costs");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_op_costs_file);
    tcase_add_test(tc, test_op_costs_refused);
    tcase_add_test(tc, test_op_costs_measured_alone);
    tcase_add_test(tc, test_run_sim_one_definition);
    suite_add_tcase(s, tc);
    return s;
}
