/* tests/schedules/test_versions.c — one source of truth for weight versions (design §2.2,
 * semantics §4, §6.1): for every registered schedule and variant, D = 2, 4 and 8, the events a
 * run logs under the seq, threads and mpi executors equal, op by op, the version plan
 * of the schedule's programs (harness/ir/versions.c): the version read, the look-ahead
 * and the version a synchronous run reads; over two epochs, so the second is offset
 * by the first epoch's updates. Also: --trace-window keeps exactly its micro-batches
 * and each epoch records how many ops ran and how many events were kept. */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/driver/run.h"
#include "harness/ir/program.h"
#include "schedules/registry.h"
#include "tests/support/cli_util.h"
#include "tests/support/schedule_forms.h"

#define MB_SIZE 8
#define NTRAIN 96   /* 12 micro-batches an epoch */
#define EPOCHS 2

static const char *const optimizers[] = {"sgdm", "adam", "sgd"};

/* The first optimizer the schedule accepts with this variant, as pb_run_check judges. */
static const char *accepted_optimizer(const char *schedule, const char *variant, int stages)
{
    for (size_t i = 0; i < sizeof optimizers / sizeof *optimizers; i++) {
        struct pb_run_cfg c;
        pb_run_cfg_defaults(&c);
        c.model = "mlp";
        c.dataset = "synthetic";
        c.schedule = schedule;
        c.variant = variant;
        c.stages = stages;
        c.optimizer = optimizers[i];
        struct pb_err e;
        if (pb_optim_cfg_from_name(&c.optim, optimizers[i], &e) == 0 && pb_run_check(&c, &e) == 0)
            return optimizers[i];
    }
    return NULL;
}

/* Compares every device's events of every epoch with the plan; returns the rows read. */
static int check_events(const char *db, const struct pb_pipe *pipe, struct pb_program *progs,
                        const char *what)
{
    sqlite3 *h;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert(sqlite3_prepare_v2(h, "SELECT epoch, device, seq, kind, coalesce(mb, -1), version, "
                                    "ahead, sync_version FROM events ORDER BY epoch, device, seq",
                                 -1, &st, NULL) == SQLITE_OK);
    struct pb_version_plan plans[8];
    int updates[8];
    for (int k = 0; k < pipe->stages; k++) {
        pb_version_plan_init(&plans[k], pipe, &progs[k]);
        updates[k] = 0;
        for (int i = 0; i < progs[k].n; i++)
            updates[k] += progs[k].ops[i].kind == PB_OP_U;
    }
    int rows = 0, expect_seq = 0, last_dev = -1, last_epoch = -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int epoch = sqlite3_column_int(st, 0), dev = sqlite3_column_int(st, 1);
        int seq = sqlite3_column_int(st, 2), mb = sqlite3_column_int(st, 4);
        char kind = (char)sqlite3_column_text(st, 3)[0];
        if (dev != last_dev || epoch != last_epoch)
            expect_seq = 0;
        last_dev = dev;
        last_epoch = epoch;
        ck_assert_msg(dev >= 0 && dev < pipe->stages && seq == expect_seq,
                      "%s: epoch %d device %d: event %d where op %d was expected", what, epoch,
                      dev, seq, expect_seq);
        expect_seq++;
        const struct pb_op *op = &progs[dev].ops[seq];
        const struct pb_op_version *v = &plans[dev].ops[seq];
        int offset = epoch * updates[dev];
        ck_assert_msg(kind == pb_op_letter(op->kind) &&
                          mb == (op->kind == PB_OP_U ? -1 : op->mb),
                      "%s: epoch %d device %d op %d: logged %c%d, the program has %c%d", what,
                      epoch, dev, seq, kind, mb, pb_op_letter(op->kind), op->mb);
        int version = sqlite3_column_int(st, 5), ahead = sqlite3_column_int(st, 6);
        int sync = sqlite3_column_int(st, 7);
        ck_assert_msg(version == offset + v->base && ahead == v->ahead && sync == offset + v->sync,
                      "%s: epoch %d device %d op %d (%c%d): logged version %d+%d (sync %d), the "
                      "plan says %d+%d (sync %d)", what, epoch, dev, seq, kind, mb, version, ahead,
                      sync, offset + v->base, v->ahead, offset + v->sync);
        rows++;
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    int total = 0;
    for (int k = 0; k < pipe->stages; k++) {
        total += progs[k].n;
        pb_version_plan_finish(&plans[k]);
    }
    ck_assert_msg(rows == EPOCHS * total, "%s: %d events logged, the programs have %d ops", what,
                  rows, EPOCHS * total);
    return rows;
}

/* One run in dir; under mpi on `ranks` ranks, one per device. */
static void run_one(const char *dir, const char *executor, const char *flags, int ranks)
{
    char out[8192];
    if (strcmp(executor, "mpi")) {
        int rc = cli_run(dir, out, sizeof out, "run --quiet --executor %s %s", executor, flags);
        ck_assert_msg(rc == 0, "run --executor %s %s: exit %d: %s", executor, flags, rc, out);
        return;
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && mpirun --oversubscribe %s -np %d '%s' run --quiet --executor mpi %s "
             ">mpirun.log 2>&1", dir, geteuid() == 0 ? "--allow-run-as-root" : "", ranks,
             getenv("PB_PIPEBENCH"), flags);
    ck_assert_msg(system(cmd) == 0, "mpirun %s failed (see %s/mpirun.log)", flags, dir);
}

/* The schedule's forms: the default (NULL) and each variant of its list. */
static int forms_of(const struct pb_schedule *sch, char *buf, size_t cap, const char **out)
{
    int n = 0;
    out[n++] = NULL;
    snprintf(buf, cap, "%s", sch->variants);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t && n < 8; t = strtok_r(NULL, ",", &save))
        out[n++] = t;
    return n;
}

static void events_match(int stages, const char *executor)
{
    for (int si = 0; pb_schedules[si]; si++) {
        const struct pb_schedule *sch = pb_schedules[si];
        char buf[128];
        const char *forms[8];
        int nforms = forms_of(sch, buf, sizeof buf, forms);
        for (int fi = 0; fi < nforms; fi++) {
            const char *variant = forms[fi];
            const char *opt = accepted_optimizer(sch->name, variant, stages);
            ck_assert_msg(opt != NULL, "%s %s: no optimizer accepted", sch->name,
                          variant ? variant : "");
            /* the registry's pipe on D stages: a schedule that fixes v chunks runs D / v
             * devices, with the micro-batches per step its steps need */
            struct pb_pipe pipe;
            int v = sch->chunks ? sch->chunks : 1;
            sched_pipe(sch, stages / v, NTRAIN / MB_SIZE, stages, &pipe);
            char dir[64], flags[512], what[128];
            cli_scratch(dir, sizeof dir, "versions");
            snprintf(flags, sizeof flags,
                     "--model mlp --dataset synthetic --limit-train %d --limit-val 16 "
                     "--microbatch-size %d --epochs %d --stages %d --threads %d --schedule %s "
                     "%s%s --optimizer %s --microbatches %d --trace-epochs all --db v.db", NTRAIN,
                     MB_SIZE, EPOCHS, stages, stages, sch->name, variant ? "--variant " : "",
                     variant ? variant : "", opt, pipe.microbatches);
            snprintf(what, sizeof what, "%s%s%s D=%d %s", sch->name, variant ? " " : "",
                     variant ? variant : "", stages, executor);
            run_one(dir, executor, flags, stages / v);
            struct pb_optim_cfg oc;
            struct pb_err e;
            ck_assert(pb_optim_cfg_from_name(&oc, opt, &e) == 0);
            pipe.optimizer = oc.kind;
            pipe.variant = variant;
            struct pb_program progs[8], st[8];
            ck_assert_msg(pb_programs_build(sch, &pipe, progs, &e) == 0, "%s: %s", what, e.msg);
            ck_assert(pb_programs_stages(&pipe, progs, st, &e) == 0);
            char db[128];
            snprintf(db, sizeof db, "%s/v.db", dir);
            check_events(db, &pipe, st, what);
            pb_programs_finish(progs, pb_pipe_devices(&pipe));
            pb_programs_finish(st, stages);
            cli_cleanup(dir);
        }
    }
}

static const char *const executors[] = {"seq", "threads", "mpi"};

START_TEST(test_events_d2) { events_match(2, executors[_i]); }
END_TEST
START_TEST(test_events_d4) { events_match(4, executors[_i]); }
END_TEST
START_TEST(test_events_d8) { events_match(8, executors[_i]); }
END_TEST

static int db_int(const char *dir, const char *sql)
{
    return cli_db_int(dir, "w.db", sql);
}

/* The default keeps the first and last epochs whole; a window keeps its micro-batches
 * (a U with the backward before it); every epoch records ops run and events kept. */
START_TEST(test_trace_selection)
{
    char dir[64], out[8192];
    cli_scratch(dir, sizeof dir, "trace");
    const char *base = "run --quiet --model mlp --dataset synthetic --limit-train 96 --limit-val 16 "
                       "--microbatch-size 8 --stages 2 --schedule pipedream --db w.db";
    ck_assert_msg(cli_run(dir, out, sizeof out, "%s --epochs 3", base) == 0, "%s", out);
    /* pipedream, D = 2, 12 micro-batches: 36 ops a device (F, B, U each), 72 an epoch */
    ck_assert_int_eq(db_int(dir, "SELECT count(DISTINCT epoch) FROM events"), 2);
    ck_assert_int_eq(db_int(dir, "SELECT count(*) FROM events WHERE epoch = 1"), 0);
    ck_assert_int_eq(db_int(dir, "SELECT count(*) FROM events WHERE epoch = 2"), 72);
    ck_assert_int_eq(db_int(dir, "SELECT sum(ops) FROM epochs"), 3 * 72);
    ck_assert_int_eq(db_int(dir, "SELECT events_kept FROM epochs WHERE epoch = 0"), 72);
    ck_assert_int_eq(db_int(dir, "SELECT events_kept FROM epochs WHERE epoch = 1"), 0);
    ck_assert_int_eq(db_int(dir, "SELECT events_kept FROM epochs WHERE epoch = 2"), 72);
    ck_assert_msg(cli_run(dir, out, sizeof out, "%s --epochs 2 --trace-epochs 2 --trace-window 4:6",
                          base) == 0, "%s", out);
    int run = db_int(dir, "SELECT max(id) FROM runs");
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM events WHERE run_id = %d AND epoch = 1", run);
    ck_assert_int_eq(db_int(dir, sql), 2 * 2 * 3);  /* 2 devices × 2 micro-batches × F, B, U */
    snprintf(sql, sizeof sql, "SELECT count(*) FROM events WHERE run_id = %d AND (epoch = 0 OR "
                              "(mb IS NOT NULL AND (mb < 4 OR mb >= 6)))", run);
    ck_assert_int_eq(db_int(dir, sql), 0);
    snprintf(sql, sizeof sql, "SELECT events_kept FROM epochs WHERE run_id = %d AND epoch = 1", run);
    ck_assert_int_eq(db_int(dir, sql), 12);
    cli_cleanup(dir);
}
END_TEST

/* What the weight store is sized for: PipeDream's stash holds D − k versions on stage
 * k < D − 1 (semantics §4.1: one per forward whose backward is pending, the latest
 * included) and none on the last stage, where no update falls between F(j) and B(j);
 * XPipe holds s + 1 mini-batch predictions, s = ⌈(D−1−k)/T⌉ the updates between a
 * bellwether's forward and its mini-batch's update (semantics §4.5), none where s = 0; no
 * other schedule stashes. */
START_TEST(test_store_sizes)
{
    int Ds[] = {1, 2, 4, 8}, Ts[] = {1, 2, 4};
    for (int di = 0; di < 4; di++)
        for (int si = 0; pb_schedules[si]; si++)
            for (int ti = 0; ti < 3; ti++) {
                const struct pb_schedule *sch = pb_schedules[si];
                int D = Ds[di], T = Ts[ti];
                struct pb_pipe pipe = {.stages = D, .length = 4 * D * T, .microbatches = T,
                                       .optimizer = PB_OPT_ADAM};
                if (!strcmp(sch->name, "spectrain"))
                    pipe.optimizer = PB_OPT_SGD;
                struct pb_program progs[8];
                struct pb_err e;
                if (pb_programs_build(sch, &pipe, progs, &e))
                    continue;  /* e.g. M < D for a schedule that needs M >= D */
                for (int k = 0; k < D; k++) {
                    struct pb_version_plan vp;
                    pb_version_plan_init(&vp, &pipe, &progs[k]);
                    int s = (D - 1 - k + T - 1) / T;
                    int stash = !strcmp(sch->name, "pipedream") && k < D - 1 ? D - k : 0;
                    int groups = !strcmp(sch->name, "xpipe") && s > 0 ? s + 1 : 0;
                    ck_assert_msg(vp.stash_slots == stash && vp.group_slots == groups,
                                  "%s D=%d T=%d stage %d: %d stash slots, %d group slots "
                                  "(expected %d, %d)", sch->name, D, T, k, vp.stash_slots,
                                  vp.group_slots, stash, groups);
                    pb_version_plan_finish(&vp);
                }
                pb_programs_finish(progs, D);
            }
}
END_TEST

/* `pipebench program --sync` prints both versions of semantics §6.1 for PipeDream, D = 4,
 * stage 0: F(j) and B(j) read max(0, j − 3); the synchronous run reads j. */
START_TEST(test_program_prints_sync)
{
    char dir[64], out[8192], want[1024] = "stage 0:";
    cli_scratch(dir, sizeof dir, "sync");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "program --schedule pipedream --stages 4 --sync"),
                     0);
    int order[][2] = {{'F', 0}, {'F', 1}, {'F', 2}, {'F', 3}, {'B', 0}, {'U', 0}, {'F', 4},
                      {'B', 1}, {'U', 0}, {'F', 5}, {'B', 2}, {'U', 0}, {'F', 6}, {'B', 3},
                      {'U', 0}, {'F', 7}, {'B', 4}, {'U', 0}, {'B', 5}, {'U', 0}, {'B', 6},
                      {'U', 0}, {'B', 7}, {'U', 0}};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        size_t n = strlen(want);
        int j = order[i][1];
        if (order[i][0] == 'U')
            snprintf(want + n, sizeof want - n, " U");
        else
            snprintf(want + n, sizeof want - n, " %c%d:%d|%d", order[i][0], j, j > 3 ? j - 3 : 0, j);
    }
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0 && out[strlen(want)] == '\n',
                  "got:\n%s\nwant:\n%s", out, want);
    cli_cleanup(dir);
}
END_TEST

/* Bad --trace-epochs and --trace-window values are refused before anything is written. */
START_TEST(test_trace_bad_input)
{
    char dir[64], out[8192];
    cli_scratch(dir, sizeof dir, "trace-bad");
    const char *base = "run --quiet --model mlp --dataset synthetic --limit-train 96 --epochs 2 "
                       "--db w.db";
    const char *bad[][2] = {
        {"--trace-epochs 3", "epoch 3 is not one of the run's epochs 1 to 2"},
        {"--trace-epochs fist", "all, none"},
        {"--trace-epochs 1,,2", "comma-separated"},
        {"--trace-window 5:5", "0 <= A < B"},
        {"--trace-window 3", "A:B"},
        {"--trace-window -1:4", "0 <= A < B"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = cli_run(dir, out, sizeof out, "%s %s", base, bad[i][0]);
        ck_assert_msg(rc == 2 && strstr(out, bad[i][1]), "%s: exit %d: %s", bad[i][0], rc, out);
    }
    ck_assert_int_eq(db_int(dir, "SELECT count(*) FROM runs"), 0);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("versions");
    TCase *tc = tcase_create("events");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_events_d2, 0, 3);
    tcase_add_loop_test(tc, test_events_d4, 0, 3);
    tcase_add_loop_test(tc, test_events_d8, 0, 3);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("trace");
    tcase_set_tags(tt, "fast");
    tcase_add_test(tt, test_trace_selection);
    tcase_add_test(tt, test_trace_bad_input);
    tcase_add_test(tt, test_program_prints_sync);
    tcase_add_test(tt, test_store_sizes);
    suite_add_tcase(s, tt);
    return s;
}
