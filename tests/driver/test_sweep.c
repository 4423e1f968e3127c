/* tests/driver/test_sweep.c — `pipebench sweep` through the built binary: a grid runs every
 * configuration, a second run resumes (adds nothing), also on a database of schema 8
 * (the seed a JSON string, upgraded in place), two copies started together split
 * the configurations (each runs once), --jobs 2 gives the same results as --jobs 1 (the
 * slow case), bad sweep files are refused with their line and reason, and a grid of
 * every registered schedule and model plans each pair that can run. SIGINT to the
 * sweep's process group (a Ctrl-C; slow cases): runs still setting up end without a row
 * and count as not started, never as crashed; running ones stop at their epoch boundary
 * with their resume state, and resumed (by hand, or by running the sweep again) they
 * give an uninterrupted sweep's epochs. A sweep killed alone leaves its runs to stop
 * the same way. */
#include "pb_config.h"
#include "harness/driver/run.h"
#include "harness/driver/run_flags.h"
#include "harness/ir/program.h"
#include "schedules/registry.h"
#include "tests/support/cli_util.h"
#include "tests/support/proc_util.h"
#include "workloads/models/workload.h"

/* mlp on 640 samples, 1 epoch: 2 schedules x 2 seeds, a few seconds in all. */
static const char *const small_sweep =
    "; two schedules, two seeds\n"
    "[grid]\n"
    "schedule = gpipe, pipedream\n"
    "seed = 1,\n"
    "       2\n"
    "[run]\n"
    "model = mlp\n"
    "limit-train = 640\n"
    "limit-val = 320\n"
    "microbatch-size = 32\n"
    "epochs = 1\n";

static char dir[64], out[1 << 16];

static int count_runs(const char *db)
{
    return cli_db_int(dir, db, "SELECT count(*) FROM runs");
}

START_TEST(runs_all_then_resumes)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "s.ini", small_sweep);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db a.db") == 0, "%s", out);
    ck_assert_msg(strstr(out, "4 configurations, 0 finished already, 4 to run"), "%s", out);
    ck_assert_int_eq(count_runs("a.db"), 4);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(*) FROM runs WHERE status = 'done' "
                                              "AND model = 'mlp' AND epochs = 1"), 4);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(DISTINCT schedule || seed) FROM runs"),
                     4);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db a.db") == 0, "%s", out);
    ck_assert_msg(strstr(out, "4 finished already, 0 to run"), "%s", out);
    ck_assert_int_eq(count_runs("a.db"), 4);
    /* a failed run is run again: only done (and diverged) count as finished */
    ck_assert_int_eq(cli_db_int(dir, "a.db", "UPDATE runs SET status = 'failed' WHERE id = 2 "
                                              "RETURNING id"), 2);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db a.db") == 0, "%s", out);
    ck_assert_msg(strstr(out, "3 finished already, 1 to run"), "%s", out);
    ck_assert_int_eq(count_runs("a.db"), 5);
    cli_cleanup(dir);
}
END_TEST

/* A database of schema 8, whose configurations record the seed as a string (made here
 * from a sweep's by SQL), is upgraded when the sweep runs again: the seeds become
 * integers and the sweep finds its finished runs, running nothing twice. */
START_TEST(finds_runs_of_a_schema_8_database)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "s.ini", small_sweep);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db a.db") == 0, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(*) FROM runs WHERE json_type(config, "
                                              "'$.seed') = 'integer'"), 4);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "UPDATE runs SET config = json_set(config, "
                                              "'$.seed', CAST(json_extract(config, '$.seed') AS "
                                              "TEXT)) RETURNING 1"), 1);
    cli_db_int(dir, "a.db", "ALTER TABLE events DROP COLUMN pair");   /* version 8's events */
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(*) FROM pragma_table_info('events') "
                                              "WHERE name = 'pair'"), 0);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "UPDATE schema_version SET version = 8 RETURNING "
                                              "version"), 8);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(*) FROM runs WHERE json_type(config, "
                                              "'$.seed') = 'text' AND config LIKE "
                                              "'%\"seed\":\"_\",%'"), 4);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db a.db") == 0, "%s", out);
    ck_assert_msg(strstr(out, "4 finished already, 0 to run"), "%s", out);
    ck_assert_int_eq(count_runs("a.db"), 4);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT max(version) FROM schema_version"),
                     PB_RESULTS_SCHEMA_VERSION);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(*) FROM runs WHERE json_type(config, "
                                              "'$.seed') = 'integer' AND json_extract(config, "
                                              "'$.seed') = seed"), 4);
    cli_cleanup(dir);
}
END_TEST

/* The "sweep: N runs: D done" line of a sweep's output: D (-1 when missing). */
static int done_count(const char *log)
{
    const char *l = strstr(log, "sweep: ");
    int n, done;
    while (l && sscanf(l, "sweep: %d run%*[s:] %d done", &n, &done) != 2)
        l = strstr(l + 1, "sweep: ");
    return l ? done : -1;
}

/* Two copies of one sweep started together on one database: each configuration runs
 * once, by one of them (the other skips it), and both end with status 0. */
START_TEST(two_copies_split_the_work)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "s.ini", small_sweep);
    static struct proc a, b;
    proc_start(&a, dir, "sweep s.ini --db a.db");
    proc_start(&b, dir, "sweep s.ini --db a.db");
    int ra = proc_finish(&a), rb = proc_finish(&b);
    ck_assert_msg(ra == 0 && rb == 0, "exit %d, %d:\n%s\n%s", ra, rb, a.log, b.log);
    ck_assert_int_eq(count_runs("a.db"), 4);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(DISTINCT schedule || seed) FROM runs "
                                              "WHERE status = 'done'"), 4);
    ck_assert_msg(done_count(a.log) + done_count(b.log) == 4, "%s\n%s", a.log, b.log);
    ck_assert_msg(strstr(a.log, "skipped") || strstr(b.log, "skipped"), "%s\n%s", a.log, b.log);
    cli_cleanup(dir);
}
END_TEST

/* Rows of the two databases' epochs that match exactly (losses and accuracy compared
 * bit for bit), joined on the configuration without its thread count. */
static int identical_epochs(const char *a, const char *b)
{
    char path[256], sql[1024];
    snprintf(path, sizeof path, "%s/%s", dir, a);
    sqlite3 *h;
    ck_assert(sqlite3_open(path, &h) == SQLITE_OK);
    snprintf(sql, sizeof sql, "ATTACH '%s/%s' AS b", dir, b);
    ck_assert(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert(sqlite3_prepare_v2(h,
        "SELECT count(*) FROM main.runs r1 JOIN main.epochs e1 ON e1.run_id = r1.id "
        "JOIN b.runs r2 ON json_remove(r1.config, '$.threads') = "
        "json_remove(r2.config, '$.threads') "
        "JOIN b.epochs e2 ON e2.run_id = r2.id AND e2.epoch = e1.epoch "
        "WHERE e1.train_loss = e2.train_loss AND e1.val_loss = e2.val_loss "
        "AND e1.val_acc = e2.val_acc AND r1.status = 'done' AND r2.status = 'done'",
        -1, &st, NULL) == SQLITE_OK);
    ck_assert(sqlite3_step(st) == SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
}

START_TEST(jobs_are_deterministic)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "s.ini", small_sweep);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db one.db --jobs 1") == 0, "%s",
                  out);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db two.db --jobs 2") == 0, "%s",
                  out);
    ck_assert_int_eq(count_runs("two.db"), 4);
    ck_assert_int_eq(identical_epochs("one.db", "two.db"), 4);
    cli_cleanup(dir);
}
END_TEST

/* Two configurations, two at once, long enough to be signalled while they set up or
 * train (6400 samples an epoch). Eight epochs: the runs' setups can end seconds apart on
 * a loaded machine, so when the later one records its first epoch the other may be
 * several epochs on, and it must still be training. */
static const char *const signal_sweep =
    "[grid]\n"
    "seed = 1, 2\n"
    "[run]\n"
    "model = mlp\n"
    "stages = 2\n"
    "limit-train = 6400\n"
    "limit-val = 320\n"
    "epochs = 8\n";

/* SIGINT as the runs start: no run is counted crashed or failed and none is left
 * running; the ones stopped while they set up count as not started. A run whose setup
 * is quicker than the signal stops at its first epoch boundary instead, so this tries
 * up to five times for a signal that finds a run setting up. */
START_TEST(sigint_while_starting)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "s.ini", "[grid]\nseed = 1, 2\n[run]\nmodel = mlp\nstages = 2\n"
                            "limit-train = 1280\nlimit-val = 320\nepochs = 2\n");
    bool hit = false;
    for (int attempt = 0; attempt < 5 && !hit; attempt++) {
        char args[64], db[16];
        snprintf(db, sizeof db, "a%d.db", attempt);
        snprintf(args, sizeof args, "sweep s.ini --db %s --jobs 2", db);
        static struct proc p;
        proc_start(&p, dir, args);
        ck_assert_msg(proc_wait_for(&p, ": started", 1), "%s", p.log);
        proc_signal(&p, SIGINT);
        int rc = proc_finish(&p);
        ck_assert_msg(rc == 130, "exit %d: %s", rc, p.log);
        ck_assert_msg(strstr(p.log, " 0 failed") && !strstr(p.log, "crashed"), "%s", p.log);
        ck_assert_int_eq(cli_db_int(dir, db, "SELECT count(*) FROM runs WHERE status IN "
                                             "('failed', 'running')"), 0);
        hit = strstr(p.log, "not started: interrupted while it set up") != NULL;
    }
    ck_assert_msg(hit, "no signal of five found a run setting up");
    cli_cleanup(dir);
}
END_TEST

/* SIGINT once both runs have recorded an epoch: each stops at its epoch boundary,
 * recorded interrupted with its resume state; resumed, their epochs equal those of an
 * uninterrupted sweep bit for bit. */
START_TEST(sigint_in_flight_stops_at_the_epoch)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "s.ini", signal_sweep);
    static struct proc p;
    proc_start(&p, dir, "sweep s.ini --db a.db --jobs 2");
    ck_assert_msg(proc_wait_for(&p, ": epoch 1/8", 2), "%s", p.log);
    proc_signal(&p, SIGINT);
    int rc = proc_finish(&p);
    ck_assert_msg(rc == 130, "exit %d: %s", rc, p.log);
    ck_assert_msg(strstr(p.log, "0 done, 0 diverged, 0 failed, 0 errors, 2 interrupted"), "%s",
                  p.log);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(*) FROM runs WHERE status = "
                                              "'interrupted' AND message LIKE '%resume state is "
                                              "written%'"), 2);
    for (int id = 1; id <= 2; id++) {
        char state[128];
        snprintf(state, sizeof state, "%s/a.db.run%d.state", dir, id);
        ck_assert_msg(access(state, F_OK) == 0, "no %s: %s", state, p.log);
    }
    /* one resumed by hand, the other by running the sweep again (under its id, with the
     * threads it was run with: here --jobs 1 gives each run all the cores) */
    ck_assert_msg(cli_run(dir, out, sizeof out, "resume 1 --db a.db --quiet") == 0, "%s", out);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db a.db") == 0, "%s", out);
    ck_assert_msg(strstr(out, "1 finished already, 1 to run") &&
                  strstr(out, "resuming run 2 from its resume state"), "%s", out);
    ck_assert_int_eq(count_runs("a.db"), 2);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db b.db --jobs 2") == 0, "%s", out);
    ck_assert_int_eq(identical_epochs("a.db", "b.db"), 16);
    cli_cleanup(dir);
}
END_TEST

/* kill -9 of the sweep process alone: its runs get SIGTERM (the parent-death signal)
 * and stop at their epoch boundary, recorded interrupted with their resume state. */
START_TEST(runs_stop_when_the_sweep_dies)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "s.ini", signal_sweep);
    static struct proc p;
    proc_start(&p, dir, "sweep s.ini --db a.db --jobs 2");
    ck_assert_msg(proc_wait_for(&p, ": epoch 1/8", 2), "%s", p.log);
    kill(p.pid, SIGKILL);
    ck_assert_int_eq(proc_finish(&p), 128 + SIGKILL);
    int left = 2;
    /* each run finishes the epoch it is in first: up to 3 minutes on a loaded machine */
    for (int i = 0; i < 1800 && left > 0; i++) {
        usleep(100000);
        left = cli_db_int(dir, "a.db", "SELECT count(*) FROM runs WHERE status = 'running'");
    }
    ck_assert_int_eq(left, 0);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(*) FROM runs WHERE status = "
                                              "'interrupted' AND message LIKE '%resume state is "
                                              "written%'"), 2);
    cli_cleanup(dir);
}
END_TEST

/* Exit status 2, "FILE:LINE: " and the reason on the output, no run row. */
static void expect_bad(const char *text, int line, const char *reason)
{
    cli_write(dir, "bad.ini", text);
    int rc = cli_run(dir, out, sizeof out, "sweep bad.ini --db bad.db");
    ck_assert_msg(rc == 2, "exit %d: %s", rc, out);
    char where[64];
    snprintf(where, sizeof where, "bad.ini:%d: ", line);
    ck_assert_msg(strstr(out, where) != NULL, "no '%s' in: %s", where, out);
    ck_assert_msg(strstr(out, reason) != NULL, "no '%s' in: %s", reason, out);
    ck_assert_int_eq(count_runs("bad.db"), 0);
}

/* One configuration is "1 configuration"; a dry run says which configurations it would
 * resume from their resume state (by run id) rather than run afresh. */
START_TEST(dry_run_grammar_and_resumes)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "one.ini", "[grid]\nschedule = gpipe\n[run]\nmodel = mlp\nlimit-train = 320\n"
                              "limit-val = 160\nmicrobatch-size = 32\nepochs = 1\n");
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep one.ini --db a.db") == 0, "%s", out);
    ck_assert_msg(strstr(out, "sweep: 1 configuration, 0 finished already, 1 to run"), "%s", out);
    ck_assert_msg(strstr(out, "sweep: 1 run: 1 done, 0 diverged, 0 failed, 0 errors"), "%s", out);
    /* the run left interrupted with a resume state beside the database */
    ck_assert_int_eq(cli_db_int(dir, "a.db", "UPDATE runs SET status = 'interrupted' RETURNING id"),
                     1);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep one.ini --db a.db --dry-run") == 0, "%s",
                  out);
    ck_assert_msg(strstr(out, "schedule=gpipe") || strstr(out, "gpipe sgdm: to run"), "%s", out);
    ck_assert_msg(strstr(out, ": to run\n"), "no resume state: run afresh: %s", out);
    cli_write(dir, "a.db.run1.state", "");
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep one.ini --db a.db --dry-run") == 0, "%s",
                  out);
    ck_assert_msg(strstr(out, ": to resume (run 1, from its resume state)\n"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* executor = mpi: each configuration runs as `mpirun -np 2 pipebench run ...` under its
 * claim (the ranks record it: executor mpi); SIGINT stops the sweep, its running run
 * stopped by its ranks at their epoch boundary (interrupted, rank 0 writing the resume
 * state of both stages) and the other not started; the sweep run again resumes the
 * interrupted run from that state as `mpirun -np 2 pipebench resume 1` (the epochs before
 * it kept as recorded, the others trained) and runs the other. 40 short epochs, so the
 * signal sent once the first is recorded lands long before the last (8 epochs of 6000
 * samples once finished in 1.1 s on a quiet machine, before it arrived). */
START_TEST(mpi_sweep_interrupted_and_resumed)
{
    if (!PB_HAVE_MPI)   /* a build without MPI refuses the executor (test_bad_inputs) */
        return;
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "m.ini", "[grid]\nseed = 1, 2\n[run]\nmodel = mlp\nexecutor = mpi\n"
                            "stages = 2\nlimit-train = 2000\nlimit-val = 320\n"
                            "microbatch-size = 32\nepochs = 40\nthreads = 2\n");
    static struct proc p;
    proc_start(&p, dir, "sweep m.ini --db a.db");
    ck_assert_msg(proc_wait_for(&p, "[1/2] seed=1: started", 1), "%s", p.log);
    int epochs = 0;
    for (int i = 0; i < 1200 && epochs < 1; i++) {
        usleep(50000);
        epochs = cli_db_int(dir, "a.db", "SELECT count(*) FROM epochs");
    }
    ck_assert_int_ge(epochs, 1);
    proc_signal(&p, SIGINT);
    int rc = proc_finish(&p);
    ck_assert_msg(rc == 130, "exit %d: %s", rc, p.log);
    ck_assert_msg(strstr(p.log, "0 done, 0 diverged, 0 failed, 0 errors, 1 interrupted, 1 not "
                                "started (run the sweep again to go on)"), "%s", p.log);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(*) FROM runs WHERE id = 1 AND status "
                                              "= 'interrupted' AND executor = 'mpi' AND seed = 1 "
                                              "AND message LIKE '%resume state is written%'"),
                     1);
    ck_assert_int_eq(count_runs("a.db"), 1);
    char state[128];
    snprintf(state, sizeof state, "%s/a.db.run1.state", dir);
    ck_assert_int_eq(access(state, F_OK), 0);
    int done = cli_db_int(dir, "a.db", "SELECT count(*) FROM epochs");
    ck_assert_msg(done >= 1 && done < 40, "%d epochs before the stop", done);
    /* the epochs recorded before the resume, each with its wall time (an epoch trained
     * again has another): a query that counts those still there as they were */
    char sql[8192] = "SELECT count(*) FROM epochs WHERE run_id = 1 AND (0";
    for (int k = 0; k < done; k++) {
        char one[96];
        snprintf(one, sizeof one, "SELECT wall_s FROM epochs WHERE run_id = 1 AND epoch = %d",
                 k);
        size_t len = strlen(sql);
        snprintf(sql + len, sizeof sql - len, " OR (epoch = %d AND wall_s = %.17g)", k,
                 cli_db_double(dir, "a.db", one));
    }
    ck_assert(strlen(sql) + 2 < sizeof sql);
    strcat(sql, ")");
    ck_assert_int_eq(cli_db_int(dir, "a.db", sql), done);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep m.ini --db a.db --dry-run") == 0, "%s",
                  out);
    ck_assert_msg(strstr(out, "seed=1: to resume (run 1, from its resume state)\n") &&
                  strstr(out, "seed=2: to run\n"), "%s", out);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep m.ini --db a.db") == 0, "%s", out);
    ck_assert_msg(strstr(out, "seed=1: resuming run 1 from its resume state"), "%s", out);
    ck_assert_msg(strstr(out, "sweep: 2 runs: 2 done"), "%s", out);
    ck_assert_int_eq(count_runs("a.db"), 2);
    ck_assert_int_ne(access(state, F_OK), 0);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(DISTINCT seed) FROM runs WHERE status "
                                              "= 'done' AND executor = 'mpi' AND stages = 2"), 2);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(*) FROM epochs e JOIN runs r ON "
                                              "r.id = e.run_id WHERE r.status = 'done'"), 80);
    /* the resumed run trained epochs `done` to 39 only: those before kept as recorded */
    ck_assert_int_eq(cli_db_int(dir, "a.db", sql), done);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep m.ini --db a.db") == 0, "%s", out);
    ck_assert_msg(strstr(out, "2 finished already, 0 to run"), "%s", out);
    cli_cleanup(dir);
}
END_TEST

/* --emit slurm: a job-array script of one task per run; its tasks, run by hand at once
 * and again, record every run once into the sweep's database. */
START_TEST(slurm_tasks_run_by_hand)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "s.ini", small_sweep);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db a.db --emit slurm > job.sh")
                  == 0, "%s", out);
    char path[128], cmd[512];
    snprintf(path, sizeof path, "%s/job.sh", dir);
    FILE *f = fopen(path, "r");
    ck_assert(f != NULL);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    fclose(f);
    ck_assert_msg(!strncmp(out, "#!/bin/bash\n", 12) && strstr(out, "#SBATCH --array=0-3\n") &&
                  strstr(out, "#SBATCH --ntasks=1\n") && strstr(out, "/a.db' --task"), "%s", out);
    ck_assert_int_eq(count_runs("a.db"), 0);   /* written, nothing run */
    /* the four tasks at once, then task 2 again, from another folder */
    snprintf(cmd, sizeof cmd, "cd / && for i in 0 1 2 3; do SLURM_ARRAY_TASK_ID=$i bash '%s' "
             ">'%s/task$i.log' 2>&1 & done; wait", path, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(*) FROM runs WHERE status = 'done'"),
                     4);
    ck_assert_int_eq(cli_db_int(dir, "a.db", "SELECT count(DISTINCT schedule || seed) FROM runs"),
                     4);
    snprintf(cmd, sizeof cmd, "cd / && SLURM_ARRAY_TASK_ID=2 bash '%s' >'%s/again.log' 2>&1",
             path, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(count_runs("a.db"), 4);
    snprintf(cmd, sizeof cmd, "cd / && bash '%s' >/dev/null 2>&1", path);
    ck_assert_int_ne(system(cmd), 0);   /* not a Slurm task: refused */
    ck_assert_int_eq(count_runs("a.db"), 4);
    cli_cleanup(dir);
}
END_TEST

START_TEST(bad_files)
{
    cli_scratch(dir, sizeof dir, "sweep");
    expect_bad("[grid]\nseed = 1\nschedule = gpipe, nope\n[run]\nmodel = mlp\n", 3,
               "unknown schedule 'nope'");
    expect_bad("[grid]\nseed = 1\n[run]\nthis line is no pair\nmodel = mlp\n", 4,
               "expected 'key = value'");
    expect_bad("[grid]\nseed = 1, two\n", 2, "--seed expects a non-negative integer");
    expect_bad("[grid]\nseed = 1\n[run]\nepochs = 2\nepochs = 3\n", 5,
               "already set on line 4");
    expect_bad("[grid]\nseed = 1, 1\n", 2, "'1' is listed twice");
    expect_bad("[grid]\nlr = 0.1\n[run]\nlr = 0.2\n", 4, "in [grid] (line 2) and in [run]");
    expect_bad("[grid]\nwarmup = 3\n", 2, "unknown [grid] key 'warmup': it is not an option");
    expect_bad("[grid]\ndb = a.db, b.db\n", 2, "'db' cannot be swept");
    expect_bad("[grid]\nmicrobatch-size = 16, 0\n", 2, "--microbatch-size must be at least 1");
    expect_bad("[grid]\nnesterov = on, maybe\n", 2, "--nesterov expects on or off");
    /* a file that sets nothing ran one default configuration on all the data */
    const char *empty[] = {"", "# only a comment\n", "[grid]\n"};
    for (int i = 0; i < 3; i++) {
        cli_write(dir, "empty.ini", empty[i]);
        int rc = cli_run(dir, out, sizeof out, "sweep empty.ini --db bad.db");
        ck_assert_msg(rc == 2 && strstr(out, "the file sets nothing"), "exit %d: %s", rc, out);
        ck_assert_int_eq(count_runs("bad.db"), 0);
    }
    expect_bad("[run]\nlimit-train = -5\n", 2, "--limit-train");
    expect_bad("[run]\nbogus = 1\n", 2, "not an option of pipebench run");
    cli_cleanup(dir);
}
END_TEST

START_TEST(bad_configurations)
{
    cli_scratch(dir, sizeof dir, "sweep");
    /* pipedream-2bw refuses M < D: a configuration error, no line of its own */
    cli_write(dir, "m.ini", "[grid]\nschedule = pipedream-2bw\nmicrobatches = 2\n");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "sweep m.ini --db m.db"), 2);
    ck_assert_msg(strstr(out, "m.ini: configuration") && strstr(out, "M >= D"), "%s", out);
    ck_assert_int_eq(count_runs("m.db"), 0);
    cli_run(dir, out, sizeof out, "sweep");
    ck_assert_msg(strstr(out, "name the sweep file"), "%s", out);
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "sweep missing.ini"), 2);
    ck_assert_msg(strstr(out, "cannot open the sweep file missing.ini"), "%s", out);
    cli_write(dir, "ok.ini", "[grid]\nseed = 1\n");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "sweep ok.ini --jobs 0"), 2);
    cli_cleanup(dir);
}
END_TEST

START_TEST(dry_run_skips_unsupported_pairs)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "p.ini", "[grid]\nschedule = spectrain, pipeoptim\noptimizer = sgdm, adam\n"
                            "microbatches = 4, 8\n");
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep p.ini --db p.db --dry-run") == 0, "%s",
                  out);
    /* spectrain x adam left out; microbatches does not multiply schedules without M */
    ck_assert_msg(strstr(out, "leaving out 1 configuration whose schedule cannot run its"), "%s",
                  out);
    ck_assert_msg(strstr(out, "3 configurations, 0 finished already, 3 to run"), "%s", out);
    ck_assert_msg(strstr(out, "schedule=pipeoptim optimizer=adam: to run"), "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "p.db", "SELECT 1"), 0);   /* no database made */
    cli_cleanup(dir);
}
END_TEST

/* Any run option is a grid key: the configurations vary the leading keys slowest, then
 * the file's others in its order, the seed fastest; each run records its values. */
START_TEST(any_option_is_a_grid_key)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "g.ini", "[grid]\nseed = 1, 2\nmicrobatch-size = 16, 32\n"
                            "shuffle = on, off\nschedule = gpipe, pipedream\n"
                            "[run]\nlimit-train = 128\nlimit-val = 64\nstages = 2\n");
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep g.ini --db g.db --dry-run") == 0, "%s", out);
    ck_assert_msg(strstr(out, "16 configurations, 0 finished already, 16 to run"), "%s", out);
    ck_assert_msg(strstr(out, "  #0 schedule=gpipe microbatch-size=16 shuffle=on seed=1: to run\n"
                              "  #1 schedule=gpipe microbatch-size=16 shuffle=on seed=2: to run\n"
                              "  #2 schedule=gpipe microbatch-size=16 shuffle=off seed=1: to run\n"),
                  "%s", out);
    ck_assert_msg(strstr(out, "#I: the run's index in the sweep, as --task I takes it"), "%s", out);
    cli_write(dir, "r.ini", "[grid]\nmicrobatch-size = 16, 32\nepochs = 1, 2\n"
                            "[run]\nlimit-train = 128\nlimit-val = 64\nstages = 2\n");
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep r.ini --db r.db") == 0, "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM runs WHERE status = 'done'"), 4);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(DISTINCT epochs || '/' || "
                                             "json_extract(config, '$.microbatch_size')) FROM runs"),
                     4);
    ck_assert_int_eq(cli_db_int(dir, "r.db", "SELECT count(*) FROM epochs"), 6);
    /* --quiet: no plan, no progress, only the closing count */
    cli_write(dir, "q.ini", "[grid]\nschedule = gpipe, pipedream\n"
                            "[run]\nlimit-train = 128\nlimit-val = 64\nstages = 2\n");
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep q.ini --db q.db --quiet") == 0, "%s", out);
    ck_assert_str_eq(out, "sweep: 2 runs: 2 done, 0 diverged, 0 failed, 0 errors\n");
    cli_cleanup(dir);
}
END_TEST

/* The zoo's presets and partitions are grid keys: each combination is a configuration
 * of its own; a preset on a model without presets, or the paper cut at D != 4, is a
 * configuration error. */
START_TEST(dry_run_presets)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "z.ini", "[grid]\nmodel = vgg16, googlenet\npreset = paper, small\n"
                            "partition = paper, balanced\n[run]\nstages = 4\n");
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep z.ini --db z.db --dry-run") == 0, "%s",
                  out);
    ck_assert_msg(strstr(out, "8 configurations, 0 finished already, 8 to run"), "%s", out);
    ck_assert_msg(strstr(out, "model=googlenet preset=small partition=paper: to run"), "%s", out);
    cli_write(dir, "bad.ini", "[grid]\nmodel = mlp, vgg16\npreset = paper\n");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "sweep bad.ini --db z.db"), 2);
    ck_assert_msg(strstr(out, "model 'mlp' has no presets"), "%s", out);
    cli_write(dir, "bad.ini", "[grid]\nmodel = vgg16\npartition = paper\nstages = 2, 4\n");
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "sweep bad.ini --db z.db"), 2);
    ck_assert_msg(strstr(out, "--partition paper is the 4-stage cut"), "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "z.db", "SELECT 1"), 0);   /* no database made */
    cli_cleanup(dir);
}
END_TEST

/* A dry run over every registered schedule x model plans exactly the pairs
 * pb_run_check accepts with the sweep's defaults and leaves out the others. */
START_TEST(dry_run_every_registered_pair)
{
    cli_scratch(dir, sizeof dir, "sweep");
    char ini[4096] = "[grid]\nschedule = ";
    for (int i = 0; pb_schedules[i]; i++)
        snprintf(ini + strlen(ini), sizeof ini - strlen(ini), "%s%s", i ? ", " : "",
                 pb_schedules[i]->name);
    snprintf(ini + strlen(ini), sizeof ini - strlen(ini), "\nmodel = ");
    for (int i = 0; pb_workloads[i]; i++)
        snprintf(ini + strlen(ini), sizeof ini - strlen(ini), "%s%s", i ? ", " : "",
                 pb_workloads[i]->name);
    snprintf(ini + strlen(ini), sizeof ini - strlen(ini), "\n");
    cli_write(dir, "all.ini", ini);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep all.ini --db all.db --dry-run") == 0, "%s",
                  out);
    int runnable = 0, left_out = 0;
    for (int m = 0; pb_workloads[m]; m++)
        for (int i = 0; pb_schedules[i]; i++) {
            struct pb_run_cfg c;
            struct pb_err e;
            struct pb_run_flags f = {0};
            pb_run_cfg_defaults(&c);
            /* through the flags, as the sweep: a preset's own optimizer applies */
            ck_assert(pb_run_flags_set(&f, "model", pb_workloads[m]->name, &e) == 0 &&
                      pb_run_flags_set(&f, "schedule", pb_schedules[i]->name, &e) == 0 &&
                      pb_run_flags_apply(&f, &c, &e) == 0);
            char line[256];
            snprintf(line, sizeof line, "model=%s schedule=%s: to run", c.model, c.schedule);
            if (pb_run_check(&c, &e) == 0) {
                runnable++;
                ck_assert_msg(strstr(out, line) != NULL, "no '%s' in: %s", line, out);
            } else {
                left_out++;
                ck_assert_msg(strstr(out, line) == NULL, "'%s' planned: %s", line, e.msg);
            }
        }
    char want[128];
    snprintf(want, sizeof want, "%d configurations, 0 finished already, %d to run", runnable,
             runnable);
    ck_assert_msg(strstr(out, want), "no '%s' in: %s", want, out);
    if (left_out) {
        snprintf(want, sizeof want, "leaving out %d configurations", left_out);
        ck_assert_msg(strstr(out, want), "no '%s' in: %s", want, out);
    }
    cli_cleanup(dir);
}
END_TEST

/* --jobs 2 of runs with 4 stage threads each (the threads executor) warns once, before
 * any run, that their timings will carry a dagger, where 8 threads outnumber the cores;
 * --jobs 1, or the seq executor's one thread a run, never does. */
START_TEST(jobs_warn_shared)
{
    cli_scratch(dir, sizeof dir, "sweep");
    cli_write(dir, "t.ini", "[grid]\nseed = 1, 2\n[run]\nmodel = mlp\nstages = 4\n"
                            "executor = threads\nlimit-train = 256\nlimit-val = 64\n"
                            "epochs = 1\n");
    const char *warn = "the runs share cores, so every throughput and bubble";
    bool shared = 8 > sysconf(_SC_NPROCESSORS_ONLN);
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep t.ini --db a.db --jobs 2 --quiet") == 0,
                  "%s", out);
    ck_assert_msg(!strstr(out, warn) == !shared, "warned %d, 8 threads on %ld cores: %s",
                  strstr(out, warn) != NULL, sysconf(_SC_NPROCESSORS_ONLN), out);
    if (shared) {
        const char *w = strstr(out, warn);
        ck_assert_msg(!strstr(w + 1, warn), "warned twice: %s", out);
    }
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep t.ini --db b.db --jobs 1 --quiet") == 0,
                  "%s", out);
    ck_assert_msg(!strstr(out, warn), "%s", out);
    cli_write(dir, "s.ini", "[grid]\nseed = 1, 2\n[run]\nmodel = mlp\nstages = 2\n"
                            "executor = seq\nlimit-train = 256\nlimit-val = 64\nepochs = 1\n");
    ck_assert_msg(cli_run(dir, out, sizeof out, "sweep s.ini --db c.db --jobs 2 --quiet") == 0,
                  "%s", out);
    ck_assert_msg(!strstr(out, warn) == !(2 > sysconf(_SC_NPROCESSORS_ONLN)), "%s", out);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("sweep");
    TCase *fast = tcase_create("sweep_fast");
    tcase_set_tags(fast, "fast");
    tcase_set_timeout(fast, 600);
    tcase_add_test(fast, runs_all_then_resumes);
    tcase_add_test(fast, bad_files);
    tcase_add_test(fast, dry_run_grammar_and_resumes);
    tcase_add_test(fast, slurm_tasks_run_by_hand);
    tcase_add_test(fast, bad_configurations);
    tcase_add_test(fast, dry_run_skips_unsupported_pairs);
    tcase_add_test(fast, dry_run_every_registered_pair);
    tcase_add_test(fast, dry_run_presets);
    tcase_add_test(fast, any_option_is_a_grid_key);
    suite_add_tcase(s, fast);
    TCase *tc = tcase_create("sweep");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, finds_runs_of_a_schema_8_database);
    tcase_add_test(tc, two_copies_split_the_work);
    tcase_add_test(tc, jobs_warn_shared);
    tcase_add_test(tc, jobs_are_deterministic);
    tcase_add_test(tc, sigint_while_starting);
    tcase_add_test(tc, sigint_in_flight_stops_at_the_epoch);
    tcase_add_test(tc, runs_stop_when_the_sweep_dies);
    suite_add_tcase(s, tc);
    /* mpirun's start: a few seconds per configuration */
    TCase *mpi = tcase_create("sweep_mpi");
    tcase_set_timeout(mpi, 600);
    tcase_add_test(mpi, mpi_sweep_interrupted_and_resumed);
    suite_add_tcase(s, mpi);
    return s;
}
