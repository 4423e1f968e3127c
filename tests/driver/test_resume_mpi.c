/* tests/driver/test_resume_mpi.c — resume states under --executor mpi (semantics §1.10): rank 0
 * writes the one state file from every rank's stage, and `mpirun -np 2 pipebench resume`
 * gives each rank its stage's part back. A run stopped by a SIGTERM to one rank after an
 * epoch, and a run whose rank 0 is killed -9 after its --checkpoint-every 2 states, resume
 * to the very weights (byte-identical --save) and per-epoch losses of the uninterrupted
 * run, training only the epochs after their state (the rows before it kept). A damaged
 * state is refused (exit 2, the run left interrupted), and so is an mpi run's state taken
 * up under another executor. With model chunks (zb-v, D = 4 on 2 ranks) each rank's two
 * stages go to rank 0 and back. 40 short epochs, as test_sweep's mpi case: the signal sent
 * once the first epoch is recorded lands long before the last. Skipped (exit 77) without
 * mpirun or an mpi build. */
#include <signal.h>
#include <stdarg.h>

#include "harness/exec/dist.h"
#include "tests/support/cli_util.h"
#include "tests/support/proc_util.h"
#include "tests/support/train_util.h"

static char dir[64], out[1 << 16];

/* The configuration of every run here, but its database and save file. */
#define ARGS                                                                                \
    "--executor mpi --stages 2 --model mlp --limit-train 2000 --limit-val 320 "             \
    "--microbatch-size 32 --epochs 40 --threads 2 --quiet"

/* `mpirun -np 2 pipebench ARGS` in dir as a shell command, into cmd. */
static void mpi_command(char *cmd, size_t cap, const char *args)
{
    snprintf(cmd, cap, "cd '%s' && exec mpirun --oversubscribe %s -np 2 '%s' %s 2>&1", dir,
             geteuid() == 0 ? "--allow-run-as-root" : "", getenv("PB_PIPEBENCH"), args);
}

/* Runs `mpirun -np 2 pipebench ARGS` (printf-style) to its end: its exit status, its
 * output in out. */
static int mpi_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int mpi_run(const char *fmt, ...)
{
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    mpi_command(cmd, sizeof cmd, args);
    FILE *f = popen(cmd, "r");
    ck_assert(f != NULL);
    size_t n = 0, r;
    while (n < sizeof out - 1 && (r = fread(out + n, 1, sizeof out - 1 - n, f)) > 0)
        n += r;
    out[n] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int db_int(const char *db, const char *sql)
{
    return cli_db_int(dir, db, sql);
}

/* Every epoch's losses and accuracy of run id in db, each double to the bit, in order. */
static void losses(const char *db, int id, char *buf, size_t cap)
{
    char path[128], sql[256];
    snprintf(path, sizeof path, "%s/%s", dir, db);
    snprintf(sql, sizeof sql, "SELECT group_concat(v, ';') FROM (SELECT printf('%%d:%%.17g,"
             "%%.17g,%%.17g', epoch, train_loss, val_loss, val_acc) AS v FROM epochs WHERE "
             "run_id = %d ORDER BY epoch)", id);
    sqlite3 *h;
    sqlite3_stmt *s;
    ck_assert(sqlite3_open(path, &h) == SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &s, NULL) == SQLITE_OK, "%s", sql);
    ck_assert(sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0));
    snprintf(buf, cap, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(h);
}

/* Each recorded epoch's wall time of run 1 in db into wall[40]: a retrained epoch's
 * differs from the first one's. */
static void walls(const char *db, double *wall)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, db);
    sqlite3 *h;
    sqlite3_stmt *s;
    ck_assert(sqlite3_open(path, &h) == SQLITE_OK);
    ck_assert(sqlite3_prepare_v2(h, "SELECT epoch, wall_s FROM epochs WHERE run_id = 1", -1, &s,
                                 NULL) == SQLITE_OK);
    for (int i = 0; i < 40; i++)
        wall[i] = -1;
    while (sqlite3_step(s) == SQLITE_ROW) {
        int epoch = sqlite3_column_int(s, 0);
        ck_assert(epoch >= 0 && epoch < 40);
        wall[epoch] = sqlite3_column_double(s, 1);
    }
    sqlite3_finalize(s);
    sqlite3_close(h);
}

/* How many epochs of run 1 in db the resume kept as they were recorded before it
 * (`before`, from walls()): a prefix of the epochs, the others trained again. */
static int epochs_kept(const char *db, const double *before)
{
    double after[40];
    walls(db, after);
    int kept = 0;
    while (kept < 40 && !memcmp(&before[kept], &after[kept], sizeof *after) && before[kept] >= 0)
        kept++;
    int again = 0;
    for (int i = kept; i < 40; i++)
        again += after[i] >= 0 && memcmp(&before[i], &after[i], sizeof *after) != 0;
    ck_assert_msg(again == 40 - kept, "the resume kept epochs %d and on in part", kept);
    return kept;
}

/* Waits (up to 2 minutes) until run 1 of db has `epochs` epochs recorded and, when state
 * is not NULL, dir/state exists. */
static void wait_for(const char *db, int epochs, const char *state)
{
    char path[128] = "";
    if (state)
        snprintf(path, sizeof path, "%s/%s", dir, state);
    for (int i = 0; i < 6000; i++) {
        if (db_int(db, "SELECT count(*) FROM epochs WHERE run_id = 1") >= epochs &&
            (!state || access(path, F_OK) == 0))
            return;
        usleep(20000);
    }
    ck_abort_msg("%s: %d epochs%s not recorded in 2 minutes", db, epochs,
                 state ? " and a resume state" : "");
}

/* The uninterrupted run, once for every case: its weights straight.st, its epochs in
 * s.db. */
static void straight_run(void)
{
    cli_scratch(dir, sizeof dir, "resume-mpi");
    int rc = mpi_run("run " ARGS " --db s.db --save straight.st");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
}

static void straight_cleanup(void)
{
    cli_cleanup(dir);
}

/* The resumed run id of db ended done with the weights of the uninterrupted run's
 * save file sst in `saved` and its per-epoch numbers (run 1 of sdb), its resume state
 * gone. */
static void same_as(const char *sdb, const char *sst, const char *db, int id, const char *saved)
{
    char a[128], b[128];
    snprintf(a, sizeof a, "%s/%s", dir, sst);
    snprintf(b, sizeof b, "%s/%s", dir, saved);
    size_t la, lb;
    unsigned char *wa = read_file(a, &la), *wb = read_file(b, &lb);
    ck_assert_msg(la == lb && !memcmp(wa, wb, la), "the resumed mpi run's weights differ from "
                  "the uninterrupted run's");
    free(wa);
    free(wb);
    static char want[1 << 15], got[1 << 15];
    losses(sdb, 1, want, sizeof want);
    losses(db, id, got, sizeof got);
    ck_assert_msg(!strcmp(want, got), "per-epoch numbers differ:\n%s\n%s", want, got);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM runs WHERE id = %d AND status = 'done'", id);
    ck_assert_int_eq(db_int(db, sql), 1);
    snprintf(a, sizeof a, "%s/%s.run%d.state", dir, db, id);
    ck_assert_int_ne(access(a, F_OK), 0);
}

static void same_as_straight(const char *db, int id, const char *saved)
{
    same_as("s.db", "straight.st", db, id, saved);
}

/* A SIGTERM to rank 0 after the first epoch: every rank finishes the epoch, rank 0
 * writes the state of both stages, exit 130 with how to resume. A flipped bit in the
 * state, or the run's configuration naming another executor, is refused; the state then
 * resumes under mpirun to the uninterrupted run, the epochs before it not trained again. */
START_TEST(signal_then_resume)
{
    static struct proc p;
    char cmd[4096], state[128], kept[160];
    mpi_command(cmd, sizeof cmd, "run " ARGS " --db r.db --save resumed.st");
    proc_start_shell(&p, cmd);
    wait_for("r.db", 1, NULL);
    pid_t rank0 = (pid_t)db_int("r.db", "SELECT pid FROM runs WHERE id = 1");
    ck_assert_int_gt(rank0, 0);
    kill(rank0, SIGTERM);
    int rc = proc_finish(&p);
    ck_assert_msg(rc == 130, "exit %d: %s", rc, p.log);
    ck_assert_int_eq(db_int("r.db", "SELECT count(*) FROM runs WHERE id = 1 AND status = "
                                    "'interrupted' AND message LIKE 'interrupted after epoch % "
                                    "its resume state is written: `mpirun -np 2 pipebench "
                                    "resume 1` continues the run'"), 1);
    int done = db_int("r.db", "SELECT count(*) FROM epochs WHERE run_id = 1");
    ck_assert_msg(done >= 1 && done < 40, "%d epochs before the stop", done);
    double before[40];
    walls("r.db", before);
    snprintf(state, sizeof state, "%s/r.db.run1.state", dir);
    snprintf(kept, sizeof kept, "%s.kept", state);
    ck_assert_msg(access(state, F_OK) == 0, "no resume state after the signal: %s", p.log);

    copy_file(state, kept);
    FILE *f = fopen(state, "r+b");   /* the last byte: a weight's */
    ck_assert(f != NULL && fseek(f, -1, SEEK_END) == 0);
    int c = getc(f);
    ck_assert(fseek(f, -1, SEEK_END) == 0 && putc(c ^ 1, f) != EOF && fclose(f) == 0);
    rc = mpi_run("resume 1 --db r.db");
    ck_assert_msg(rc == 2 && strstr(out, "is damaged") && strstr(out, "delete"), "exit %d: %s",
                  rc, out);
    ck_assert_int_eq(db_int("r.db", "SELECT count(*) FROM runs WHERE id = 1 AND status = "
                                    "'interrupted'"), 1);
    copy_file(kept, state);

    ck_assert_int_eq(db_int("r.db", "UPDATE runs SET config = json_set(config, '$.executor', "
                                    "'threads') WHERE id = 1 RETURNING id"), 1);
    rc = cli_run(dir, out, sizeof out, "resume 1 --db r.db --quiet");
    ck_assert_msg(rc == 2 && strstr(out, "was written under --executor mpi, but run 1 now "
                                         "names --executor threads"), "exit %d: %s", rc, out);
    ck_assert_int_eq(db_int("r.db", "UPDATE runs SET config = json_set(config, '$.executor', "
                                    "'mpi') WHERE id = 1 RETURNING id"), 1);

    rc = mpi_run("resume 1 --db r.db --quiet");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    same_as_straight("r.db", 1, "resumed.st");
    ck_assert_int_eq(epochs_kept("r.db", before), done);   /* those not trained again */
}
END_TEST

/* Starts `mpirun ... run` (run_args, into db), kills rank 0 with -9 once three epochs
 * and `state` are recorded, and waits for the job to fail; returns the epochs it
 * recorded (3 to 39), their wall times into before[40]. */
static int crash_rank0(const char *run_args, const char *db, const char *state, double *before)
{
    static struct proc p;
    char cmd[4096];
    mpi_command(cmd, sizeof cmd, run_args);
    proc_start_shell(&p, cmd);
    wait_for(db, 3, state);
    pid_t rank0 = (pid_t)db_int(db, "SELECT pid FROM runs WHERE id = 1");
    ck_assert_int_gt(rank0, 0);
    kill(rank0, SIGKILL);
    int rc = proc_finish(&p);
    kill(-p.pid, SIGKILL);   /* whatever of the job is left */
    ck_assert_msg(rc != 0, "mpirun exit %d after rank 0 was killed: %s", rc, p.log);
    int recorded = db_int(db, "SELECT count(*) FROM epochs WHERE run_id = 1");
    ck_assert_msg(recorded >= 3 && recorded < 40, "%d epochs before the kill", recorded);
    walls(db, before);
    return recorded;
}

/* --checkpoint-every 2, rank 0 killed -9 once a state is written and three epochs are
 * recorded: the run is left to be marked failed; resume takes up the last state (after
 * an even number of epochs, some epochs past it lost) and ends as the uninterrupted run. */
START_TEST(crash_then_resume_from_checkpoint)
{
    double before[40];
    int recorded = crash_rank0("run " ARGS " --db c.db --checkpoint-every 2 --save c.st", "c.db",
                               "c.db.run1.state", before);
    int rc = mpi_run("resume 1 --db c.db --quiet");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    same_as_straight("c.db", 1, "c.st");
    int kept = epochs_kept("c.db", before);
    ck_assert_msg(kept >= 2 && kept % 2 == 0 && kept <= recorded, "resumed after %d of %d "
                  "epochs, not from a --checkpoint-every 2 state", kept, recorded);
    ck_assert_int_eq(db_int("c.db", "SELECT count(*) FROM epochs WHERE run_id = 1"), 40);
}
END_TEST

/* The same crash and resume with model chunks: zb-v on D = 4 stages in a V over 2 ranks
 * (rank 0 holds stages 0 and 3, rank 1 stages 1 and 2), each rank sending both its
 * stages' states to rank 0 and getting both back. */
#define ARGS_V                                                                              \
    "--executor mpi --stages 4 --schedule zb-v --model mlp --limit-train 2000 "             \
    "--limit-val 320 --microbatch-size 32 --epochs 40 --threads 1 --quiet"

START_TEST(chunks_crash_then_resume)
{
    int rc = mpi_run("run " ARGS_V " --db vs.db --save v-straight.st");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    double before[40];
    int recorded = crash_rank0("run " ARGS_V " --db v.db --checkpoint-every 1 --save v.st",
                               "v.db", "v.db.run1.state", before);
    rc = mpi_run("resume 1 --db v.db --quiet");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    same_as("vs.db", "v-straight.st", "v.db", 1, "v.st");
    int kept = epochs_kept("v.db", before);
    ck_assert_msg(kept >= 1 && kept <= recorded, "resumed after %d of %d epochs", kept,
                  recorded);
}
END_TEST

Suite *pb_test_suite(void)
{
    if (!pb_dist_available() || system("command -v mpirun >/dev/null 2>&1") != 0) {
        printf("no mpirun or no mpi executor in this build: skipped\n");
        exit(77);
    }
    Suite *s = suite_create("resume_mpi");
    TCase *tc = tcase_create("resume_mpi");
    tcase_set_timeout(tc, 600);
    tcase_add_unchecked_fixture(tc, straight_run, straight_cleanup);
    tcase_add_test(tc, signal_then_resume);
    tcase_add_test(tc, crash_then_resume_from_checkpoint);
    tcase_add_test(tc, chunks_crash_then_resume);
    suite_add_tcase(s, tc);
    return s;
}
