/* harness/driver/batch_mpi.c — a batch's configuration run under mpirun (batch_mpi.h). The
 * ranks are `pipebench run` with the configuration's flags, or `pipebench resume RUN` for
 * a run its claim found with a resume state; the run they record is found again by its
 * configuration and repeat among the rows newer than the launch, or by its id. */
#include "harness/driver/batch_mpi.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/base/err.h"
#include "harness/base/self_exe.h"
#include "harness/driver/plan.h"
#include "results/results.h"

/* The most arguments an mpirun command line gets here. */
#define MAX_ARGS 160

static volatile sig_atomic_t launched_pid, passed;

/* A SIGTERM reaches mpirun as SIGUSR2, which mpirun forwards to every rank (on every
 * host) and the ranks count as a stop request (interrupt.h): mpirun ends a job it is sent
 * SIGTERM by, its ranks killed a second later, in their epoch or while rank 0 writes the
 * resume state. */
static void pass_on(int sig)
{
    (void)sig;
    if (launched_pid > 0) {
        kill((pid_t)launched_pid, SIGUSR2);
        passed = passed + 1;
    }
}

/* The newest run id in the database at path (0 when it has none or cannot be read). */
static int64_t newest_run(const char *path)
{
    struct pb_results *r;
    struct pb_err e;
    if (access(path, F_OK) || pb_results_open_existing(&r, path, &e))
        return 0;
    sqlite3_stmt *s;
    int64_t id = 0;
    if (sqlite3_prepare_v2(pb_results_sqlite(r), "SELECT coalesce(max(id), 0) FROM runs", -1,
                           &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        id = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    pb_results_close(r);
    return id;
}

/* The run of c's configuration and repeat recorded after run `after` (or run
 * c->resume_run, when it resumed that one): *sum and message from its row; false when
 * there is none. */
static bool recorded_run(const struct pb_run_cfg *c, int64_t after, struct pb_run_summary *sum,
                         char *message, size_t cap)
{
    struct pb_results *r;
    struct pb_err e;
    /* opened as a writer: a row its ranks left 'running' when they were killed is
     * marked failed first (results.h) */
    if (access(c->db, F_OK) || pb_results_open(&r, c->db, &e))
        return false;
    struct pb_run_cfg key = *c;
    key.threads = 0;
    char *json = pb_run_cfg_json(&key);
    sqlite3_stmt *s;
    bool found = false;
    if (sqlite3_prepare_v2(pb_results_sqlite(r),
                           "SELECT r.id, r.status, coalesce(r.message, ''), (SELECT count(*) FROM "
                           "epochs x WHERE x.run_id = r.id), (SELECT coalesce(max(val_acc), 0) "
                           "FROM epochs x WHERE x.run_id = r.id), (SELECT coalesce(sum(wall_s), "
                           "0) FROM epochs x WHERE x.run_id = r.id), (SELECT val_acc FROM epochs "
                           "x WHERE x.run_id = r.id ORDER BY epoch DESC LIMIT 1) FROM runs r "
                           "WHERE (?4 > 0 AND r.id = ?4) OR (?4 = 0 AND r.id > ?1 AND r.repeat "
                           "= ?2 AND r.config IS NOT NULL AND json_remove(r.config, '$.threads') "
                           "= json_remove(?3, '$.threads')) ORDER BY r.id DESC LIMIT 1", -1, &s,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, after);
        sqlite3_bind_int64(s, 4, c->resume_run > 0 ? c->resume_run : 0);
        sqlite3_bind_int(s, 2, c->repeat);
        sqlite3_bind_text(s, 3, json, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(s) == SQLITE_ROW) {
            found = true;
            sum->run_id = sqlite3_column_int64(s, 0);
            const char *st = (const char *)sqlite3_column_text(s, 1);
            sum->status = PB_RUN_FAILED;
            for (int k = 0; k < PB_RUN_NSTATUS; k++)
                if (!strcmp(st, pb_run_status_names[k]))
                    sum->status = (enum pb_run_status)k;
            snprintf(message, cap, "%s", (const char *)sqlite3_column_text(s, 2));
            sum->epochs_done = sqlite3_column_int(s, 3);
            sum->best_acc = sqlite3_column_double(s, 4);
            sum->seconds = sqlite3_column_double(s, 5);
            sum->final_acc = sqlite3_column_double(s, 6);
        }
    }
    sqlite3_finalize(s);
    free(json);
    pb_results_close(r);
    return found;
}

/* The ranks its run needs, one per device (a configuration the plan refuses: D, and the
 * run says why). */
static int ranks_of(const struct pb_run_cfg *c)
{
    int ranks = pb_plan_ranks(c);
    return ranks > 0 ? ranks : c->stages;
}

/* mpirun's arguments for it, NULL-terminated, in argv (malloc()ed strings): `pipebench
 * resume` of the run to continue (its recorded configuration), else `pipebench run`. */
static void command(const struct pb_batch_item *it, char **argv)
{
    static const char *const from_cfg[] = {"db", "threads", "quiet", "repeat", NULL};
    const struct pb_run_cfg *c = &it->cfg;
    char exe[PATH_MAX] = "pipebench", num[32];
    pb_self_exe(exe, sizeof exe);
    int k = 0;
    argv[k++] = pb_xstrdup("mpirun");
    if (geteuid() == 0)
        argv[k++] = pb_xstrdup("--allow-run-as-root");
    if (it->hostfile) {
        argv[k++] = pb_xstrdup("--hostfile");
        argv[k++] = pb_xstrdup(it->hostfile);
    } else {
        argv[k++] = pb_xstrdup("--oversubscribe");
    }
    argv[k++] = pb_xstrdup("-np");
    snprintf(num, sizeof num, "%d", ranks_of(c));
    argv[k++] = pb_xstrdup(num);
    argv[k++] = pb_xstrdup(exe);
    if (c->resume_run > 0) {
        argv[k++] = pb_xstrdup("resume");
        snprintf(num, sizeof num, "%lld", (long long)c->resume_run);
        argv[k++] = pb_xstrdup(num);
        argv[k++] = pb_xstrdup("--quiet");
        argv[k++] = pb_xstrdup("--db");
        argv[k++] = pb_xstrdup(c->db);
        argv[k] = NULL;
        return;
    }
    argv[k++] = pb_xstrdup("run");
    argv[k++] = pb_xstrdup("--quiet");
    argv[k++] = pb_xstrdup("--db");
    argv[k++] = pb_xstrdup(c->db);
    argv[k++] = pb_xstrdup("--threads");
    snprintf(num, sizeof num, "%d", c->threads);
    argv[k++] = pb_xstrdup(num);
    k += pb_run_flags_args(&it->flags, from_cfg, argv + k, MAX_ARGS - 1 - k);
    argv[k] = NULL;
}

int pb_batch_mpi_run(const struct pb_batch_item *it, struct pb_run_summary *sum, char *message,
                     size_t cap)
{
    memset(sum, 0, sizeof *sum);
    sum->status = PB_RUN_FAILED;
    message[0] = 0;
    int64_t before = newest_run(it->cfg.db);
    char *argv[MAX_ARGS];
    command(it, argv);
    struct sigaction sa = {.sa_handler = pass_on};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        /* a group of its own: a Ctrl-C to the sweep's group reaches mpirun only as the
         * SIGTERM this process passes on, as the batch passes it to its other runs */
        setpgid(0, 0);
        signal(SIGTERM, SIG_DFL);
        execvp(argv[0], argv);
        fprintf(stderr, "pipebench: cannot start mpirun: %s; install Open MPI (Debian: "
                        "openmpi-bin) or put mpirun on the PATH\n", strerror(errno));
        _exit(127);
    }
    for (int i = 0; argv[i]; i++)
        free(argv[i]);
    if (pid < 0) {
        snprintf(message, cap, "cannot start mpirun: %s", strerror(errno));
        return PB_EXIT_USAGE;
    }
    launched_pid = pid;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    launched_pid = 0;
    if (it->cfg.resume_run > 0 && WIFEXITED(st) && WEXITSTATUS(st) == PB_EXIT_USAGE) {
        /* refused before it took the run up (its resume state damaged, say): the row
         * still says how the run stopped before */
        snprintf(message, cap, "mpirun -np %d pipebench resume %lld exited with status %d (its "
                 "ranks' messages are above)", ranks_of(&it->cfg), (long long)it->cfg.resume_run,
                 PB_EXIT_USAGE);
        return PB_EXIT_USAGE;
    }
    if (recorded_run(&it->cfg, before, sum, message, cap))
        return sum->status == PB_RUN_DONE          ? PB_EXIT_OK
               : sum->status == PB_RUN_INTERRUPTED ? PB_EXIT_INTERRUPTED
                                                   : PB_EXIT_RUN;
    if (passed || WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == PB_EXIT_INTERRUPTED))
        return PB_EXIT_INTERRUPTED;   /* stopped while it set up: no row */
    snprintf(message, cap, "mpirun -np %d exited with status %d before the run was recorded "
             "(its ranks' messages are above)", ranks_of(&it->cfg),
             WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return PB_EXIT_USAGE;
}
