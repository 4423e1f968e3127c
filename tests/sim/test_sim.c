/* tests/sim/test_sim.c — the pipeline simulator (harness/sim/sim.h, design §6.6) against
 * closed forms: GPipe's bubble (D − 1)/(M + D − 1) with unit costs, an asynchronous 1F1B
 * steady state without idle time, transfer latency, blocking sends into full channels,
 * the memory a device holds; and `pipebench simulate` end to end: given costs, costs
 * from a recorded run, --record writing a run that trace reads, and bad input. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/sim/sim.h"
#include "results/results.h"
#include "schedules/registry.h"
#include "tests/support/cli_util.h"
#include "tests/support/schedule_forms.h"

/* Builds and validates the programs of (schedule, D, N, M), then simulates them. */
static void simulate(const char *schedule, int D, int N, int M, struct pb_sim_cost cost,
                     int capacity, struct pb_sim_result *r)
{
    struct pb_err e;
    const struct pb_schedule *sch = pb_schedule_find(schedule, &e);
    ck_assert(sch != NULL);
    struct pb_pipe p = {.stages = D, .length = N, .microbatches = M, .optimizer = PB_OPT_SGD};
    struct pb_program progs[16];
    ck_assert(D <= 16);
    ck_assert_msg(pb_programs_build(sch, &p, progs, &e) == 0, "%s", e.msg);
    ck_assert_msg(pb_programs_validate(&p, progs, capacity, &e) == 0, "%s", e.msg);
    struct pb_sim_cost costs[16];
    for (int k = 0; k < D; k++)
        costs[k] = cost;
    ck_assert_msg(pb_simulate(&p, progs, costs, capacity, true, r, &e) == 0, "%s", e.msg);
    pb_programs_finish(progs, D);
}

/* GPipe runs each mini-batch as M forwards then M backwards through D stages: with
 * F = B = 1 and free updates, a mini-batch takes 2(M + D − 1) and each device idles
 * 2(D − 1) of it. */
START_TEST(test_gpipe_bubble)
{
    static const int cases[][2] = {{1, 1}, {2, 4}, {4, 4}, {4, 8}, {8, 3}, {3, 16}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int D = cases[i][0], M = cases[i][1], N = 3 * M;
        struct pb_sim_result r;
        simulate("gpipe", D, N, M, (struct pb_sim_cost){1, 1, 0, 0, 0, 0}, D, &r);
        ck_assert_double_eq(r.makespan_s, 3 * 2.0 * (M + D - 1));
        for (int k = 0; k < D; k++) {
            ck_assert_double_eq_tol(r.bubble[k], (double)(D - 1) / (M + D - 1), 1e-12);
            ck_assert_double_eq(r.busy_s[k], 2.0 * N);
            ck_assert_int_eq(r.acts_peak[k], M);
            ck_assert_int_eq(r.stash_peak[k], 0);
        }
        pb_sim_result_finish(&r);
    }
}
END_TEST

/* PipeDream's 1F1B: after the fill, every device alternates F and B without a gap, so
 * the epoch takes N(F + B) plus the fill and drain (D − 1)(F + B); stage k holds D − k
 * micro-batches' activations and as many stashed weight versions, minus the one its
 * backward reads live. */
START_TEST(test_async_steady_state)
{
    int D = 4, N = 40;
    struct pb_sim_result r;
    simulate("pipedream", D, N, 1, (struct pb_sim_cost){1, 2, 0, 0, 0, 0}, D, &r);
    ck_assert_double_eq(r.makespan_s, N * 3.0 + (D - 1) * 3.0);
    long first = 0;
    for (int k = 0; k < D; k++) {
        const struct pb_event_record *ev = &r.events[first];
        int n = 0, first_b = -1, last_f = -1;
        while (first + n < r.ops && r.events[first + n].device == k)
            n++;
        for (int i = 0; i < n; i++) {
            if (ev[i].kind == 'B' && first_b < 0)
                first_b = i;
            if (ev[i].kind == 'F')
                last_f = i;
        }
        ck_assert_int_ge(first_b, 0);
        for (int i = first_b + 1; i <= last_f; i++)
            if (ev[i].kind != 'U' && ev[i - 1].kind != 'U')
                ck_assert_msg(ev[i].start_s == ev[i - 1].end_s, "stage %d idles before op %d", k,
                              i);
        ck_assert_int_eq(r.acts_peak[k], D - k);
        first += n;
    }
    ck_assert_int_eq(first, r.ops);
    pb_sim_result_finish(&r);
}
END_TEST

/* A message arrives `send` after it is sent: one micro-batch through two stages is
 * F, send, F, B, send, B. */
START_TEST(test_send_latency)
{
    struct pb_sim_result r;
    simulate("gpipe", 2, 1, 1, (struct pb_sim_cost){1, 1, 0, 0.25, 0, 0}, 2, &r);
    ck_assert_double_eq(r.makespan_s, 4.5);
    pb_sim_result_finish(&r);
}
END_TEST

/* Stage 1's forward is 10× stage 0's. With room for one message stage 0 may run one
 * forward ahead of the message stage 1 is working on, so its fourth forward starts only
 * when stage 1 takes the second message (t = 11); with room for two, at t = 3. */
START_TEST(test_blocking_send)
{
    struct pb_err e;
    const struct pb_schedule *sch = pb_schedule_find("gpipe", &e);
    struct pb_pipe p = {.stages = 2, .length = 4, .microbatches = 4, .optimizer = PB_OPT_SGD};
    struct pb_program progs[2];
    ck_assert(pb_programs_build(sch, &p, progs, &e) == 0);
    struct pb_sim_cost costs[2] = {{1, 1, 0, 0, 0, 0}, {10, 1, 0, 0, 0, 0}};
    double f3_start[2];
    for (int cap = 1; cap <= 2; cap++) {
        struct pb_sim_result r;
        ck_assert(pb_simulate(&p, progs, costs, cap, true, &r, &e) == 0);
        ck_assert(r.events[3].device == 0 && r.events[3].kind == 'F' && r.events[3].mb == 3);
        f3_start[cap - 1] = r.events[3].start_s;
        pb_sim_result_finish(&r);
    }
    ck_assert_double_eq(f3_start[0], 11);
    ck_assert_double_eq(f3_start[1], 3);
    pb_programs_finish(progs, 2);
}
END_TEST

/* Versions in the events are the version plan's; a bad cost is refused. */
START_TEST(test_events_and_bad_costs)
{
    struct pb_sim_result r;
    simulate("pipedream-2bw", 3, 12, 3, (struct pb_sim_cost){1, 1, 0.5, 0, 0, 0}, 3, &r);
    struct pb_pipe p = {.stages = 3, .length = 12, .microbatches = 3, .optimizer = PB_OPT_SGD};
    struct pb_err e;
    struct pb_program progs[3];
    ck_assert(pb_programs_build(pb_schedule_find("pipedream-2bw", &e), &p, progs, &e) == 0);
    long i = 0;
    for (int k = 0; k < 3; k++) {
        struct pb_version_plan vp;
        pb_version_plan_init(&vp, &p, &progs[k]);
        for (int j = 0; j < progs[k].n; j++, i++) {
            ck_assert_int_eq(r.events[i].seq, j);
            ck_assert_int_eq(r.events[i].version, vp.ops[j].base);
            ck_assert_int_eq(r.events[i].sync_version, vp.ops[j].sync);
            ck_assert(r.events[i].end_s >= r.events[i].start_s);
        }
        pb_version_plan_finish(&vp);
    }
    pb_sim_result_finish(&r);
    struct pb_sim_cost bad[3] = {{1, 1, 0, 0, 0, 0}, {1, -1, 0, 0, 0, 0}, {1, 1, 0, 0, 0, 0}};
    ck_assert(pb_simulate(&p, progs, bad, 3, false, &r, &e) != 0);
    ck_assert_msg(strstr(e.msg, "stage 1") != NULL, "%s", e.msg);
    bad[1].b = NAN;
    ck_assert(pb_simulate(&p, progs, bad, 3, false, &r, &e) != 0);
    pb_programs_finish(progs, 3);
}
END_TEST

START_TEST(test_cli)
{
    char dir[64], out[8192];
    cli_scratch(dir, sizeof dir, "sim");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --schedule gpipe --stages 4 "
                             "--length 8 --cost 1,1,0"), 0);
    ck_assert_msg(strstr(out, "makespan 28 s") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "42.9%") != NULL, "%s", out);
    /* bad input: exit 2, a message saying what to do, nothing recorded */
    static const char *const bad[][2] = {
        {"simulate --schedule gpipe --stages 4", "--cost"},
        {"simulate --schedule gpipe --stages 4 --cost 1,2", "--cost"},
        {"simulate --schedule gpipe --stages 4 --cost 1,x,0", "--cost"},
        {"simulate --schedule gpipe --stages 4 --cost 1,-2,0", "non-negative"},
        {"simulate --schedule nope --stages 4 --cost 1,1,0", "unknown schedule"},
        {"simulate --schedule gpipe --stages 0 --cost 1,1,0", "--stages"},
        {"simulate --schedule gpipe --stages 4 --cost 1,1,0 --run 1", "one way"},
        {"simulate --schedule gpipe --stages 2 --run 7 --db missing.db", "missing.db"},
        {"simulate --schedule gpipe --stages 4 --cost 1,1,0 --bogus", "--bogus"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(cli_run(dir, out, sizeof out, "%s", bad[i][0]), 2);
        ck_assert_msg(strstr(out, bad[i][1]) != NULL, "%s: %s", bad[i][0], out);
    }
    /* a measured run's costs, a schedule simulated on them, and a recorded simulation */
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run --model mlp --dataset synthetic "
                             "--schedule gpipe --stages 2 --epochs 1 --limit-train 256 "
                             "--limit-val 64 --microbatch-size 16 --db r.db --quiet"), 0);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --run 1 --db r.db"), 0);
    ck_assert_msg(strstr(out, "simulated gpipe, D = 2, 16 micro-batches") != NULL, "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --run 1 --db r.db --schedule "
                             "pipedream --record"), 0);
    ck_assert_msg(strstr(out, "recorded as run 2") != NULL, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM runs WHERE executor = 'sim' AND "
                            "status = 'done'"), 1);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM events WHERE run_id = 2"), 2 * (16 + 16 + 16));
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "trace 2 --db r.db --out t.json"), 0);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --run 2 --db r.db"), 2);
    ck_assert_msg(strstr(out, "itself a simulation") != NULL, "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "simulate --run 1 --db r.db --stages 3"), 2);
    ck_assert_msg(strstr(out, "--stages 2") != NULL, "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* Every epoch of a run is simulated with its own op costs; the run records the machine
 * (cores, threads per stage, load) and whether its stages' threads outnumber the cores,
 * says so, and the reports mark such timings. */
START_TEST(test_runs_record_simulation)
{
    char dir[64], out[16384];
    cli_scratch(dir, sizeof dir, "simrun");
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN), D = 4;
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run --model mlp --dataset synthetic "
                             "--schedule pipedream --stages %d --executor threads --epochs 2 "
                             "--limit-train 256 --limit-val 64 --microbatch-size 16 --db r.db "
                             "--experiment sims", D), 0);
    bool over = D * (cores / D > 0 ? cores / D : 1) > cores;
    ck_assert_msg((strstr(out, "warning: 4 stages") != NULL) == over, "%d cores: %s", cores, out);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT oversubscribed FROM runs"), over);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT cores FROM runs"), cores);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM epochs WHERE sim_wall_s > 0 "
                                "AND sim_throughput > 0"), 2);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM stage_stats WHERE "
                                "sim_bubble BETWEEN 0 AND 1 AND f_s > 0 AND b_s > 0 AND "
                                "u_s > 0"), 2 * D);
    /* each epoch's 16 F, B and U per stage at the stage's medians: the simulated makespan
     * is at least the busiest stage's work and at most all stages' work in turn, and a
     * stage's simulated bubble is 1 − its work / that makespan */
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM (SELECT e.epoch, "
                                "e.sim_wall_s AS w, max(16 * (f_s + b_s + u_s)) AS hi, "
                                "sum(16 * (f_s + b_s + u_s)) AS all_ FROM epochs e JOIN "
                                "stage_stats s USING (run_id, epoch) GROUP BY e.epoch) "
                                "WHERE w >= hi * (1 - 1e-9) AND w <= all_ * (1 + 1e-9)"), 2);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM stage_stats s JOIN epochs e "
                                "USING (run_id, epoch) WHERE abs(s.sim_bubble - (1 - 16 * "
                                "(f_s + b_s + u_s) / e.sim_wall_s)) < 1e-9"), 2 * D);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table sim-throughput "
                             "--format csv"), 0);
    ck_assert_msg(strstr(out, "sgdm,mlp,synthetic,4,pipedream,") != NULL, "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run --model mlp --dataset synthetic "
                             "--schedule gpipe --stages 2 --executor seq --epochs 1 "
                             "--limit-train 256 --limit-val 64 --db r.db --quiet"), 0);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table throughput "
                             "--format csv"), 0);
    /* its row: mean,,n 1,runs 1,diverged 0,best 0,shared 1, its epoch's range, its one
     * epoch timed with the warm-up, the metric and unit */
    const char *at = strstr(out, "sgdm,mlp,synthetic,2,gpipe,");
    ck_assert_msg(at != NULL, "no seq run in: %s", out);
    char row[256];
    snprintf(row, sizeof row, "%.*s", (int)strcspn(at, "\n"), at);
    size_t len = strlen(row);
    const char *tail = ",1,throughput,samples/s";
    ck_assert_msg(strstr(row, ",,1,1,0,0,1,") && len > strlen(tail) &&
                  !strcmp(row + len - strlen(tail), tail),
                  "the seq run's throughput is marked as a shared machine's: %s", row);
    /* --experiment is recorded and selects */
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "runs --db r.db --experiment sims"), 0);
    ck_assert_msg(strstr(out, "pipedream") && !strstr(out, "gpipe"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table accuracy "
                             "--experiment nope"), 2);
    ck_assert_msg(strstr(out, "matches the selection"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* A database of schema version 2 is upgraded in place by a command that writes to it;
 * one that only reads says how. */
/* Whether a schedule's programs (4 devices, M = 4) split the backward into I and W. */
static bool splits_backward(const struct pb_schedule *sch, enum pb_optim_kind optimizer)
{
    struct pb_pipe p;
    sched_pipe(sch, 4, 16, 4, &p);
    p.optimizer = optimizer;
    struct pb_program progs[16] = {0};
    struct pb_err e;
    ck_assert_int_le(p.stages, 16);
    ck_assert_msg(pb_programs_build(sch, &p, progs, &e) == 0, "%s: %s", sch->name, e.msg);
    bool split = false;
    for (int k = 0; k < p.stages; k++)
        for (int i = 0; i < progs[k].n; i++)
            split |= progs[k].ops[i].kind == PB_OP_I;
    pb_programs_finish(progs, p.stages);
    return split;
}

/* The memory a simulation predicts equals what runs measure: each registered schedule's
 * run (its default form; mlp, D = 4, threads, the first optimizer it accepts), against
 * `simulate --schedule S --run R` from the sizes of run R, the first schedule's (its
 * parameters, and its activations per micro-batch); per stage the peak bytes of
 * parameters, weight copies (stash, XPipe's predictions, 2BW's older buffer, Ŵ) and
 * activations are the same, byte for byte. A schedule that splits the backward is left
 * out: the simulator holds a micro-batch's whole activation from F to W, while the run
 * frees most of it at I and keeps what W needs and dY (zb-h1's stage 1 measured 565248
 * bytes, simulated 532480: docs/semantics.md §4.10). */
START_TEST(test_memory_equals_measured)
{
    const char *schedules[64], *optimizers[64];
    int n = 0;
    for (int i = 0; pb_schedules[i]; i++) {
        ck_assert_int_lt(n, 64);
        struct pb_run_cfg c;
        pb_run_cfg_defaults(&c);
        c.stages = 4;
        struct sched_form f = {.sch = pb_schedules[i]};
        sched_form_apply(&c, &f);
        if (splits_backward(pb_schedules[i], c.optim.kind))
            continue;
        schedules[n] = c.schedule;
        optimizers[n++] = c.optimizer;
    }
    ck_assert_int_ge(n, 6);
    char dir[64], out[8192];
    cli_scratch(dir, sizeof dir, "simmem");
    for (int i = 0; i < n; i++)
        ck_assert_msg(cli_run(dir, out, sizeof out, "run --model mlp --schedule %s --optimizer %s "
                              "--stages 4 --executor threads --microbatch-size 32 "
                              "--limit-train 512 --limit-val 64 --db m.db --quiet", schedules[i],
                              optimizers[i]) == 0, "%s: %s", schedules[i], out);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(cli_run(dir, out, sizeof out, "simulate --schedule %s --run 1 --db m.db",
                              schedules[i]) == 0, "%s: %s", schedules[i], out);
        const char *t = strstr(out, "stage   params        wcopies       acts\n");
        ck_assert_msg(t != NULL, "%s: no memory table in %s", schedules[i], out);
        t = strchr(t, '\n') + 1;
        for (int k = 0; k < 4; k++) {
            int stage, used;
            long long sim[3];
            ck_assert_msg(sscanf(t, "%d %lld %lld %lld%n", &stage, &sim[0], &sim[1], &sim[2],
                                 &used) == 4 && stage == k, "%s: %s", schedules[i], t);
            t += used + 1;
            static const char *const kinds[] = {"mem_params", "mem_wcopies", "mem_acts"};
            for (int m = 0; m < 3; m++) {
                char sql[256];
                snprintf(sql, sizeof sql, "SELECT max(%s) FROM stage_stats WHERE run_id = %d "
                         "AND stage = %d", kinds[m], i + 1, k);
                ck_assert_msg(sim[m] == cli_db_int(dir, "m.db", sql), "%s stage %d %s: simulated "
                              "%lld, measured %d", schedules[i], k, kinds[m], sim[m],
                              cli_db_int(dir, "m.db", sql));
            }
        }
    }
    cli_cleanup(dir);
}
END_TEST

START_TEST(test_schema_upgrade)
{
    char dir[64], out[8192];
    cli_scratch(dir, sizeof dir, "upgrade");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run --model mlp --dataset synthetic "
                             "--epochs 1 --limit-train 128 --limit-val 64 --db r.db --quiet"), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/r.db", dir);
    sqlite3 *h;
    ck_assert(sqlite3_open(path, &h) == SQLITE_OK);
    /* SQLite cannot drop the last column of runs, which its comment follows: the table
     * is rebuilt with the version 2 columns instead */
#define V2_RUN_COLUMNS "created, started, ended, status, config, model, dataset, schedule, " \
                       "variant, optimizer, stages, microbatch_size, microbatches, epochs, " \
                       "seed, executor, lr, git_revision, cpu_model, library_versions, host, " \
                       "pid, message"
    ck_assert(sqlite3_exec(h, CLI_DROP_VIEWS "CREATE TABLE runs2 (id INTEGER PRIMARY KEY, "
                              V2_RUN_COLUMNS "); "
                              "INSERT INTO runs2 SELECT id, " V2_RUN_COLUMNS " FROM runs; "
                              "DROP TABLE runs; ALTER TABLE runs2 RENAME TO runs",
                           NULL, NULL, NULL) == SQLITE_OK);
#undef V2_RUN_COLUMNS
    static const char *const cols[][2] = {
        {"epochs", "sim_wall_s"}, {"epochs", "sim_throughput"}, {"epochs", "val_bleu"},
        {"stage_stats", "f_s"}, {"stage_stats", "b_s"}, {"stage_stats", "u_s"},
        {"stage_stats", "sim_bubble"}};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "ALTER TABLE %s DROP COLUMN %s", cols[i][0], cols[i][1]);
        ck_assert_msg(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sql);
    }
    ck_assert(sqlite3_exec(h, "UPDATE schema_version SET version = 2", NULL, NULL, NULL) ==
              SQLITE_OK);
    sqlite3_close(h);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "runs --db r.db"), 2);
    ck_assert_msg(strstr(out, "upgrades it in place") != NULL, "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "run --model mlp --dataset synthetic "
                             "--epochs 1 --limit-train 128 --limit-val 64 --db r.db --quiet"), 0);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT max(version) FROM schema_version"),
                     PB_RESULTS_SCHEMA_VERSION);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM runs WHERE status = 'done'"),
                     2);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM epochs WHERE "
                                "sim_throughput IS NULL"), 1);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db r.db --table sim-throughput"), 0);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("sim");
    TCase *tc = tcase_create("sim");
    tcase_add_test(tc, test_gpipe_bubble);
    tcase_add_test(tc, test_async_steady_state);
    tcase_add_test(tc, test_send_latency);
    tcase_add_test(tc, test_blocking_send);
    tcase_add_test(tc, test_events_and_bad_costs);
    tcase_add_test(tc, test_cli);
    tcase_add_test(tc, test_runs_record_simulation);
    tcase_add_test(tc, test_schema_upgrade);
    tcase_set_tags(tc, "fast");
    suite_add_tcase(s, tc);
    TCase *measured = tcase_create("measured");   /* trains every schedule: seconds */
    tcase_set_timeout(measured, 600);
    tcase_add_test(measured, test_memory_equals_measured);
    suite_add_tcase(s, measured);
    return s;
}
