/* tests/exec/test_executors.c — the concurrent executors (design §2.3, semantics §4.7):
 * for every registered schedule and variant, the seq, threads and mpi executors save
 * byte-identical weights (the first registered model at D = 2 and 4 in every form, every
 * other model at D = 4 in the first form of each kind of program, the zoo's image models
 * under seq and threads; the fast case is the first model at D = 2 under seq and
 * threads); mpi runs model chunks one rank per device (interleaved, zb-v,
 * dualpipe-v: seq's weights and epoch losses) and says how many ranks they need; a
 * failing stage stops the threads executor promptly; SIGINT leaves the run 'interrupted'
 * with its finished epochs recorded. */
#include <check.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/base/err.h"
#include "harness/driver/plan.h"
#include "tests/support/schedule_forms.h"
#include "tests/support/train_util.h"
#include "workloads/models/workload.h"

static void expect_same_file(const char *a, const char *b, const char *what)
{
    size_t la, lb;
    unsigned char *x = read_file(a, &la), *y = read_file(b, &lb);
    ck_assert_msg(la == lb && memcmp(x, y, la) == 0, "%s: %s and %s differ", what, a, b);
    free(x);
    free(y);
}

/* The same configuration as `pipebench run` flags, for mpirun: one rank per device, the
 * D / v the plan asks for (pb_plan_ranks). */
static void mpi_run(const struct pb_run_cfg *c, const char *save)
{
    char cmd[2048], chunks[32] = "", mbs[32] = "";
    if (c->chunks)
        snprintf(chunks, sizeof chunks, "--chunks %d ", c->chunks);
    if (c->microbatches)
        snprintf(mbs, sizeof mbs, "--microbatches %d ", c->microbatches);
    int ranks = pb_plan_ranks(c);
    ck_assert_int_gt(ranks, 0);
    snprintf(cmd, sizeof cmd,
             "mpirun --oversubscribe %s -np %d %s run --executor mpi --quiet --model %s %s%s "
             "--schedule %s %s%s %s%s--optimizer %s --stages %d --limit-train %d --limit-val %d "
             "--microbatch-size %d --epochs %d --threads %d --db %s --save %s >%s 2>&1",
             geteuid() == 0 ? "--allow-run-as-root" : "", ranks, getenv("PB_PIPEBENCH"),
             c->model, c->dataset ? "--dataset " : "", c->dataset ? c->dataset : "", c->schedule,
             c->variant ? "--variant " : "", c->variant ? c->variant : "", chunks, mbs,
             c->optimizer, c->stages, c->limit_train, c->limit_val, c->microbatch_size,
             c->epochs, c->threads, c->db, tmp_path(save), tmp_path("mpirun.log"));
    int st = system(cmd);
    if (st != 0) {
        size_t n;
        unsigned char *log = read_file(tmp_path("mpirun.log"), &n);
        /* the end of the log, where the reason is: Check refuses very long messages */
        size_t keep = n < 2000 ? n : 2000;
        ck_abort_msg("mpirun failed (%d), last %zu bytes of %s: %.*s", st, keep,
                     tmp_path("mpirun.log"), (int)keep, (const char *)log + (n - keep));
    }
}

/* A zoo model (one with presets) trains its default preset on synthetic data of the
 * preset's input shape, a few micro-batches of one epoch; the CLI has no options for
 * the synthetic shape, so the mpi executor (started through the CLI) runs the models
 * without presets only. A sequence model trains on its dataset's synthetic stand-in,
 * which the CLI gives too. */
static bool zoo_cfg(struct pb_run_cfg *c)
{
    const struct pb_workload *w = pb_workload_find(c->model, NULL);
    const struct pb_preset *p;
    ck_assert(w && pb_workload_preset(w, NULL, &p, NULL) == 0);
    if (w->steps || (p && p->steps)) {
        /* a sequence model (residual-lstm) or a translation model (gnmt8, gnmt16) in its
         * default preset: its own stand-in, and the mpi executor too */
        c->dataset = "synthetic";
        c->synthetic = (struct pb_dataset_opts){0};
        c->limit_train = 128;
        c->limit_val = 64;
        c->microbatch_size = 16;
        c->epochs = 1;
        return false;
    }
    if (!p)
        return false;
    struct pb_shape in = pb_preset_sample(p);
    c->dataset = "synthetic";
    c->synthetic = (struct pb_dataset_opts){.c = in.c, .h = in.h, .w = in.w, .nclasses = 10};
    c->limit_train = 64;
    c->limit_val = 32;
    c->microbatch_size = 16;
    c->epochs = 1;
    return true;
}

/* The executors compared with seq's weights: threads, mpi (through mpirun), or both;
 * LEG_EVERY_FORM: every schedule form, else the first form of each kind (below). */
enum { LEG_THREADS = 1, LEG_MPI = 2, LEG_BOTH = LEG_THREADS | LEG_MPI, LEG_EVERY_FORM = 4 };

/* A form's kind, for the models after the first: what the executors do differently for
 * it — asynchronous or synchronous, one chunk or loop or V placement of several (the
 * split backward's I and W come with zb-v's V). Each model's layers then cross each kind
 * of program; every form runs on the first model. */
static int form_kind(const struct sched_form *f)
{
    return (f->sch->synchronous ? 1 : 0) + 2 * (f->sch->chunked ? 1 + f->sch->placement : 0);
}

static void bit_identity(const char *model, int stages, unsigned legs)
{
    struct sched_form forms[SCHED_FORMS_MAX];
    int nforms = sched_forms(forms);
    unsigned kinds_seen = 0;
    for (int i = 0; i < nforms; i++) {
        unsigned kind = 1u << form_kind(&forms[i]);
        if (!(legs & LEG_EVERY_FORM) && (kinds_seen & kind))
            continue;
        kinds_seen |= kind;
        struct pb_run_cfg c;
        small_cfg(&c);
        c.model = model;
        c.stages = stages;
        sched_form_apply(&c, &forms[i]);
        c.threads = stages;  /* one core per stage under every executor */
        c.epochs = 2;
        bool zoo = zoo_cfg(&c);
        c.executor = "seq";
        run_ok(&c, "seq.safetensors");
        char what[128];
        snprintf(what, sizeof what, "%s D=%d %s", model, stages, forms[i].label);
        if (legs & LEG_THREADS) {
            c.executor = "threads";
            run_ok(&c, "threads.safetensors");
            expect_same_file(tmp_path("seq.safetensors"), tmp_path("threads.safetensors"), what);
        }
        /* mpi runs one rank per device: a schedule fixing v = 2 chunks on D = 2 stages
           runs on one rank, its edge between the chunks local */
        if ((legs & LEG_MPI) && !zoo) {
            mpi_run(&c, "mpi.safetensors");
            expect_same_file(tmp_path("seq.safetensors"), tmp_path("mpi.safetensors"), what);
        }
    }
}

/* The fast case: the first registered model at D = 2, seq against threads (an mpirun per
 * schedule form is most of a second: its mpi leg is the slow suite's first pair). */
START_TEST(test_identity_first_model_d2)
{
    bit_identity(pb_workloads[0]->name, 2, LEG_THREADS | LEG_EVERY_FORM);
}
END_TEST

/* Loop index _i over (model, D) pairs: the first model at D = 2 (its mpi leg: the threads
 * leg is the fast case), then every registered model at D = 4, whose stage boundaries
 * cut more of it than D = 2's (D = 2 for every model too doubled the suite's longest
 * test), the first in every schedule form and the others in the first form of each kind
 * (form_kind: every form on every model made this the suite's longest test, 380 s);
 * bit_identity_pairs() counts them. */
static int bit_identity_pairs(void)
{
    int n = 0;
    while (pb_workloads[n])
        n++;
    return 1 + n;
}

START_TEST(test_identity_models)
{
    if (_i == 0)
        bit_identity(pb_workloads[0]->name, 2, LEG_MPI | LEG_EVERY_FORM);
    else
        bit_identity(pb_workloads[_i - 1]->name, 4, LEG_BOTH | (_i == 1 ? LEG_EVERY_FORM : 0));
}
END_TEST

/* The last run's per-epoch training loss, validation loss and accuracy, epoch by epoch,
 * into x[3 · epochs]. */
static void last_run_epochs(const char *db, double *x, int epochs)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    ck_assert(sqlite3_prepare_v2(h, "SELECT train_loss, val_loss, val_acc FROM epochs WHERE "
                                    "run_id = (SELECT max(id) FROM runs) ORDER BY epoch",
                                 -1, &st, NULL) == SQLITE_OK);
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < epochs) {
        for (int j = 0; j < 3; j++)
            x[3 * n + j] = sqlite3_column_double(st, j);
        n++;
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    ck_assert_int_eq(n, epochs);
}

/* Model chunks under mpi, one rank per device (p = 2 ranks of D = 4 stages): interleaved
 * at v = 2 (loop placement: rank r holds stages r and r + 2), zb-v and dualpipe-v (V
 * placement: rank 0 holds stages 0 and 3, the loss; rank 1 stages 1 and 2, the edge
 * between them local). The trained weights and every epoch's losses and accuracy are
 * seq's bit for bit. */
START_TEST(test_mpi_chunks)
{
    static const struct {
        const char *schedule;
        int chunks, microbatches;
    } forms[] = {{"interleaved", 2, 0}, {"zb-v", 0, 4}, {"dualpipe-v", 0, 4}};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        struct pb_run_cfg c;
        small_cfg(&c);
        c.model = "mlp";
        c.stages = 4;
        c.threads = 4;
        c.schedule = forms[i].schedule;
        c.chunks = forms[i].chunks;
        c.microbatches = forms[i].microbatches;
        ck_assert_int_eq(pb_plan_ranks(&c), 2);
        double seq[3 * 2], mpi[3 * 2];
        c.executor = "seq";
        run_ok(&c, "seq.safetensors");
        last_run_epochs(c.db, seq, c.epochs);
        mpi_run(&c, "mpi.safetensors");
        last_run_epochs(c.db, mpi, c.epochs);
        expect_same_file(tmp_path("seq.safetensors"), tmp_path("mpi.safetensors"),
                         forms[i].schedule);
        ck_assert_msg(memcmp(seq, mpi, sizeof seq) == 0, "%s: epoch losses differ: seq %.17g "
                      "%.17g, mpi %.17g %.17g", forms[i].schedule, seq[0], seq[3], mpi[0],
                      mpi[3]);
    }
}
END_TEST

/* Started on a rank per stage, a run of 2 chunks per device says how many ranks it needs
 * (exit 2, nothing recorded). */
START_TEST(test_mpi_chunks_rank_count)
{
    char cmd[1024];
    const char *db = tmp_path("mpi-ranks.db");
    snprintf(cmd, sizeof cmd,
             "mpirun --oversubscribe %s -np 4 %s run --executor mpi --quiet --stages 4 "
             "--schedule zb-v --microbatches 4 --model mlp --limit-train 256 --limit-val 64 "
             "--microbatch-size 32 --db %s >%s 2>&1",
             geteuid() == 0 ? "--allow-run-as-root" : "", getenv("PB_PIPEBENCH"), db,
             tmp_path("mpirun.log"));
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "mpirun status %d", st);
    size_t n;
    char *log = (char *)read_file(tmp_path("mpirun.log"), &n);
    log[n] = 0;   /* read_file leaves a byte past the end */
    ck_assert_msg(strstr(log, "start it as `mpirun -np 2 pipebench run ... --stages 4` (D / v = "
                              "4 / 2: 2 chunks per device) (got 4 ranks)"), "%s", log);
    free(log);
    ck_assert_int_eq(access(db, F_OK), -1);
}
END_TEST

static const char *status_of_last_run(const char *db, int *epochs)
{
    static char status[32];
    sqlite3 *h;
    sqlite3_stmt *st;
    ck_assert(sqlite3_open(db, &h) == SQLITE_OK);
    ck_assert(sqlite3_prepare_v2(h, "SELECT status, (SELECT count(*) FROM epochs WHERE run_id = "
                                    "runs.id) FROM runs ORDER BY id DESC LIMIT 1",
                                 -1, &st, NULL) == SQLITE_OK);
    ck_assert(sqlite3_step(st) == SQLITE_ROW);
    snprintf(status, sizeof status, "%s", sqlite3_column_text(st, 0));
    *epochs = sqlite3_column_int(st, 1);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return status;
}

/* The last stage's thread fails (the loss becomes NaN); every other thread, blocked
 * on a channel, stops too and the run ends as 'diverged'. */
START_TEST(test_threads_failure_stops_all)
{
    struct pb_run_cfg c;
    struct pb_err e;
    struct pb_run_summary sum;
    small_cfg(&c);
    c.executor = "threads";
    c.optim.lr = 1e8f;
    c.limit_train = 6400;
    c.epochs = 5;
    ck_assert_int_eq(pb_run(&c, &sum, &e), PB_EXIT_RUN);
    ck_assert_msg(strstr(e.msg, "diverged"), "%s", e.msg);
    int epochs;
    ck_assert_str_eq(status_of_last_run(c.db, &epochs), "diverged");
    ck_assert_int_eq(epochs, 0);
}
END_TEST

/* Under MPI a divergence on the last rank ends every rank at the epoch's end: exit
 * status 1 and the run recorded as 'diverged' by rank 0. */
START_TEST(test_mpi_divergence_stops_all)
{
    char cmd[1024];
    const char *db = tmp_path("mpi-div.db");
    snprintf(cmd, sizeof cmd,
             "mpirun --oversubscribe %s -np 2 %s run --executor mpi --quiet --stages 2 --lr 1e8 "
             "--limit-train 640 --limit-val 64 --microbatch-size 32 --epochs 3 --db %s >%s 2>&1",
             geteuid() == 0 ? "--allow-run-as-root" : "", getenv("PB_PIPEBENCH"), db,
             tmp_path("mpirun.log"));
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) != 0, "mpirun status %d", st);
    int epochs;
    ck_assert_str_eq(status_of_last_run(db, &epochs), "diverged");
    ck_assert_int_eq(epochs, 0);
}
END_TEST

/* SIGINT during the second epoch: exit status 130, status 'interrupted', the first
 * epoch's rows intact (the second finishes first: semantics §1.10). */
START_TEST(test_sigint_interrupts)
{
    const char *db = tmp_path("sigint.db");
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        execl(getenv("PB_PIPEBENCH"), "pipebench", "run", "--executor", "threads", "--quiet",
              "--limit-train", "12800", "--limit-val", "320", "--epochs", "1000", "--db", db,
              (char *)NULL);
        _exit(127);
    }
    /* wait until the first epoch is recorded, then interrupt */
    for (int i = 0; i < 600; i++) {
        usleep(100000);
        if (access(db, F_OK) == 0) {
            int epochs = 0;
            sqlite3 *h;
            if (sqlite3_open(db, &h) == SQLITE_OK) {
                sqlite3_stmt *st;
                if (sqlite3_prepare_v2(h, "SELECT count(*) FROM epochs", -1, &st, NULL) == SQLITE_OK &&
                    sqlite3_step(st) == SQLITE_ROW)
                    epochs = sqlite3_column_int(st, 0);
                sqlite3_finalize(st);
            }
            sqlite3_close(h);
            if (epochs >= 1)
                break;
        }
    }
    kill(pid, SIGINT);
    int st;
    ck_assert(waitpid(pid, &st, 0) == pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == PB_EXIT_INTERRUPTED, "status %d", st);
    int epochs;
    ck_assert_str_eq(status_of_last_run(db, &epochs), "interrupted");
    ck_assert_int_ge(epochs, 1);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("executors");
    TCase *fast = tcase_create("bit_identity_fast");
    tcase_set_tags(fast, "fast");
    tcase_set_timeout(fast, 600);
    tcase_add_test(fast, test_identity_first_model_d2);
    suite_add_tcase(s, fast);
    TCase *tc = tcase_create("bit_identity");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_identity_models, 0, bit_identity_pairs());
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("mpi_chunks");
    tcase_set_timeout(tm, 300);
    tcase_add_test(tm, test_mpi_chunks);
    tcase_add_test(tm, test_mpi_chunks_rank_count);
    suite_add_tcase(s, tm);
    TCase *tf = tcase_create("faults");
    tcase_set_timeout(tf, 300);
    tcase_add_test(tf, test_threads_failure_stops_all);
    tcase_add_test(tf, test_sigint_interrupts);
    tcase_add_test(tf, test_mpi_divergence_stops_all);
    suite_add_tcase(s, tf);
    return s;
}
