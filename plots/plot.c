/* plots/plot.c — `pipebench plot`'s engine (plot.h): checks the request, finds gnuplot
 * and the scripts of plots/, has the data writers fill each figure's .dat file, runs
 * `gnuplot -e "datafile='...'; outfile='...'; ..." plots/NAME.gp` and renames its output
 * into place. gnuplot's messages are kept and shown only when it fails. */
#include "plots/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/base/atomic_file.h"
#include "harness/base/data_dir.h"
#include "plots/plot_data.h"
#include "plots/report_db.h"

extern char **environ;

const char *const pb_plot_figure_names[] = {
    "convergence", "throughput", "memory", "timeline", "staleness", NULL,
};
static int (*const writers[])(struct pb_plot_job *, struct pb_err *) = {
    pb_plot_data_convergence, pb_plot_data_throughput, pb_plot_data_memory,
    pb_plot_data_timeline, pb_plot_data_staleness,
};
const char *const pb_plot_format_names[] = {"png", "svg", "pdf", NULL};

void pb_plot_var(struct pb_plot_job *j, const char *name, const char *fmt, ...)
{
    size_t n = strlen(j->vars);
    int w = snprintf(j->vars + n, sizeof j->vars - n, "%s=", name);
    PB_CHECK(w > 0 && (size_t)w < sizeof j->vars - n);
    n += (size_t)w;
    va_list ap;
    va_start(ap, fmt);
    w = vsnprintf(j->vars + n, sizeof j->vars - n, fmt, ap);
    va_end(ap);
    PB_CHECK(w >= 0 && (size_t)w + 2 < sizeof j->vars - n);
    strcat(j->vars, "; ");
}

/* s as a gnuplot single-quoted string: '' stands for '. */
static void gp_quote(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    out[n++] = '\'';
    for (; *s && n + 4 < cap; s++) {
        if (*s == '\'')
            out[n++] = '\'';
        out[n++] = *s;
    }
    out[n++] = '\'';
    out[n] = '\0';
}

void pb_plot_var_str(struct pb_plot_job *j, const char *name, const char *value)
{
    char q[2048];
    gp_quote(q, sizeof q, value);
    pb_plot_var(j, name, "%s", q);
}

int pb_plot_open_dat(struct pb_plot_job *j, struct pb_afile *a, struct pb_err *e)
{
    snprintf(j->datafile, sizeof j->datafile, "%s/%s.dat", j->outdir, j->figure);
    pb_plot_var_str(j, "datafile", j->datafile);
    return pb_afile_open(a, j->datafile, e);
}

void pb_plot_put_label(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++)
        if (*s != '"' && *s != '\n')
            fputc(*s, f);
    fputc('"', f);
}

int pb_plot_db_fail(struct pb_plot_job *j, const char *what, struct pb_err *e)
{
    return pb_err_set(e, "results database %s: %s figure: %s: %s", pb_results_path(j->db),
                      j->figure, what, sqlite3_errmsg(pb_results_sqlite(j->db)));
}

void pb_plot_describe(struct pb_plot_job *j, int with_stages, char *buf, size_t cap)
{
    sqlite3_stmt *s;
    snprintf(buf, cap, "run %lld", (long long)j->run);
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db), "SELECT coalesce(model, '?'), "
                           "coalesce(dataset, '?'), coalesce(optimizer, '?'), stages FROM "
                           "run_config WHERE run_id = ?", -1, &s, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(s, 1, j->run);
    if (sqlite3_step(s) == SQLITE_ROW) {
        int n = snprintf(buf, cap, "%s, %s, %s", sqlite3_column_text(s, 0),
                         sqlite3_column_text(s, 1), sqlite3_column_text(s, 2));
        if (with_stages && n > 0 && (size_t)n < cap)
            snprintf(buf + n, cap - (size_t)n, ", D=%d", sqlite3_column_int(s, 3));
    }
    sqlite3_finalize(s);
}

/* The gnuplot executable on PATH. */
static int find_gnuplot(char *out, size_t cap, struct pb_err *e)
{
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        const char *end = strchr(p, ':');
        int len = end ? (int)(end - p) : (int)strlen(p);
        snprintf(out, cap, "%.*s/gnuplot", len, len ? p : ".");
        if (access(out, X_OK) == 0)
            return 0;
        p += len + (end != NULL);
    }
    return pb_err_set(e, "gnuplot is not installed (not found on PATH); install the Debian "
                      "package gnuplot-nox (apt-get install gnuplot-nox) to make figures");
}

static int script_path(const char *figure, char *out, size_t cap, struct pb_err *e)
{
    char dir[4096];
    pb_data_dir("plots", "PB_PLOTS_DIR", dir, sizeof dir);
    if (snprintf(out, cap, "%s/%s.gp", dir, figure) >= (int)cap)
        return pb_err_set(e, "the gnuplot scripts' folder path is too long: %s", dir);
    if (access(out, R_OK) != 0)
        return pb_err_set(e, "cannot read the gnuplot script %s (%s); install pipebench with "
                          "`meson install` (it puts plots/*.gp beside the binary), or set "
                          "PB_PLOTS_DIR to the folder holding pipebench's plots/*.gp", out,
                          strerror(errno));
    return 0;
}

/* mkdir -p dir. */
static int make_dir(const char *dir, struct pb_err *e)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
        return pb_err_set(e, "output folder path is too long: %s", dir);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        struct stat st;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return pb_err_set(e, "cannot create the output folder %s: %s; pass --out with a "
                              "writable folder", buf, strerror(errno));
        if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
            return pb_err_set(e, "cannot use %s as an output folder (it is not a folder); "
                              "pass --out with another folder", buf);
        *p = saved;
        if (saved == '\0')
            return 0;
    }
}

/* The last part of gnuplot's messages, to show with its failure. */
static void log_tail(const char *path, char *buf, size_t cap)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size > (long)cap - 1 ? size - (long)cap + 1 : 0, SEEK_SET);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    fclose(f);
}

static int run_gnuplot(const char *gnuplot, const char *script, const char *assign,
                       const char *log, struct pb_err *e)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char *argv[] = {"gnuplot", "-e", (char *)assign, (char *)script, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, gnuplot, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return pb_err_set(e, "cannot run %s: %s; install the Debian package gnuplot-nox",
                          gnuplot, strerror(rc));
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return pb_err_set(e, "waiting for gnuplot: %s", strerror(errno));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char tail[600];
    log_tail(log, tail, sizeof tail);
    return pb_err_set(e, "gnuplot failed on %s (%s %d): %s", script,
                      WIFEXITED(status) ? "exit status" : "signal",
                      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                      *tail ? tail : "no message");
}

/* One figure: its data, then gnuplot into a temporary file renamed to NAME.FORMAT. */
static int make_one(struct pb_plot_job *j, int fig, const char *gnuplot, const char *format,
                    void (*wrote)(const char *, void *), void *arg, struct pb_err *e)
{
    char script[4096], out[4096];
    if (script_path(j->figure, script, sizeof script, e))
        return -1;
    j->vars[0] = '\0';
    int rc = writers[fig](j, e);
    if (rc)
        return rc;
    snprintf(out, sizeof out, "%s/%s.%s", j->outdir, j->figure, format);
    char *tmp = pb_afile_tmp_name(out), *log = pb_afile_tmp_name(out);
    pb_plot_var_str(j, "outfile", tmp);
    pb_plot_var_str(j, "fmt", format);
    rc = run_gnuplot(gnuplot, script, j->vars, log, e);
    struct stat st;
    if (rc == 0 && (stat(tmp, &st) != 0 || st.st_size == 0))
        rc = pb_err_set(e, "gnuplot wrote nothing for %s (script %s)", out, script);
    if (rc == 0 && rename(tmp, out) != 0)
        rc = pb_err_set(e, "cannot write %s: %s", out, strerror(errno));
    remove(tmp);
    remove(log);
    free(tmp);
    free(log);
    if (rc == 0 && wrote)
        wrote(out, arg);
    return rc;
}

/* The newest finished run of the selection that is not a simulation, else (a database of
 * simulations) pb_report_pick_run's choice. */
static int64_t newest_run(struct pb_results *db, struct pb_err *e)
{
    sqlite3_stmt *s;
    int64_t id = 0;
    if (sqlite3_prepare_v2(pb_results_sqlite(db), "SELECT max(run_id) FROM run_config WHERE "
                           "status = 'done'", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        id = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return id > 0 ? id : pb_report_pick_run(db, 0, e);
}

/* With several configurations (results/views.sql's config_id) among the selection's
 * finished runs, says on stderr which one's the figures but convergence show (run's) and
 * how to pick another: a database of several cells never draws one of them silently. */
static void note_cells(struct pb_results *db, int64_t run)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(pb_results_sqlite(db),
                           "SELECT (SELECT count(DISTINCT coalesce(config_id, run_id)) FROM "
                           "run_config WHERE status = 'done'), optimizer, model, dataset, stages "
                           "FROM run_config WHERE run_id = ?", -1, &s, NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return;
    }
    sqlite3_bind_int64(s, 1, run);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) > 1) {
        const char *txt[3];
        for (int k = 0; k < 3; k++) {
            txt[k] = (const char *)sqlite3_column_text(s, 1 + k);
            txt[k] = txt[k] ? txt[k] : "?";
        }
        fprintf(stderr, "pipebench: plot: the runs hold %d configurations; these figures show "
                        "run %lld's (%s, %s on %s, D = %d) and the runs of its configuration "
                        "(throughput: of every D; convergence: a facet per configuration); "
                        "pick another with --run ID, or select with --where KEY=VALUE or "
                        "--experiment NAME\n", sqlite3_column_int(s, 0),
                (long long)run, txt[0], txt[1], txt[2], sqlite3_column_int(s, 4));
    }
    sqlite3_finalize(s);
}

/* The cells the convergence figure draws a facet of (plot_data.h): the configurations as
 * PB_PLOT_SAME_CONFIG compares them whose finished runs recorded a validation accuracy,
 * by model, dataset, optimizer and D, each by its newest such run; says on stderr which
 * it leaves out beyond PB_PLOT_MAX_CELLS. */
static void find_cells(struct pb_plot_job *j)
{
    sqlite3_stmt *s;
    int total = 0;
    if (sqlite3_prepare_v2(pb_results_sqlite(j->db),
                           "SELECT max(run_id), optimizer, model, dataset, stages FROM "
                           "run_config WHERE status = 'done' AND run_id IN (SELECT run_id FROM "
                           "epochs WHERE val_acc IS NOT NULL) GROUP BY optimizer, model, "
                           "dataset, config_id ORDER BY model, dataset, optimizer, stages, 1",
                           -1, &s, NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return;
    }
    while (sqlite3_step(s) == SQLITE_ROW) {
        if (total < PB_PLOT_MAX_CELLS) {
            j->cells[total++] = sqlite3_column_int64(s, 0);
            continue;
        }
        const char *txt[3];
        for (int k = 0; k < 3; k++) {
            txt[k] = (const char *)sqlite3_column_text(s, 1 + k);
            txt[k] = txt[k] ? txt[k] : "?";
        }
        fprintf(stderr, "pipebench: plot: the convergence figure draws at most %d "
                        "configurations; left out run %lld's (%s, %s on %s, D = %d): select "
                        "fewer with --where KEY=VALUE or --experiment NAME\n", PB_PLOT_MAX_CELLS,
                (long long)sqlite3_column_int64(s, 0), txt[0], txt[1], txt[2],
                sqlite3_column_int(s, 4));
    }
    sqlite3_finalize(s);
    j->ncells = total;
}

static int lookup(const char *const *names, const char *v)
{
    for (int i = 0; names[i]; i++)
        if (v && !strcmp(names[i], v))
            return i;
    return -1;
}

static int bad_name(const char *what, const char *v, const char *const *names, const char *more,
                    struct pb_err *e)
{
    char list[256] = "";
    for (int i = 0; names[i]; i++) {
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", names[i]);
    }
    return pb_err_set(e, "unknown %s '%s'; valid: %s%s", what, v ? v : "(none)", list, more);
}

int pb_plot_figure_cb(const char *db_path, const char *figure, const char *outdir,
                      const char *format, int64_t run_id, const struct pb_report_select *sel,
                      const struct pb_plot_opts *opts,
                      void (*wrote)(const char *path, void *arg), void *arg, struct pb_err *e)
{
    int all = figure && !strcmp(figure, "all");
    int fig = all ? 0 : lookup(pb_plot_figure_names, figure);
    if (fig < 0)
        return bad_name("figure", figure, pb_plot_figure_names, ", all", e);
    if (lookup(pb_plot_format_names, format) < 0)
        return bad_name("figure format", format, pb_plot_format_names, "", e);
    if (!outdir || !*outdir || strlen(outdir) > 1024)
        return pb_err_set(e, "the output folder must be a path of 1 to 1024 characters");
    char gnuplot[4096], script[4096];
    if (find_gnuplot(gnuplot, sizeof gnuplot, e))
        return -1;
    for (int f = fig; f == fig || (all && pb_plot_figure_names[f]); f++)
        if (script_path(pb_plot_figure_names[f], script, sizeof script, e))
            return -1;
    if (opts && !(opts->target >= 0 && opts->target <= 1))
        return pb_err_set(e, "--target is a validation accuracy as a fraction in (0, 1], as "
                          "in compare and report (for 80%% write --target 0.80), got %g",
                          opts->target);
    if (opts && opts->window_hi > 0 && !(opts->window_lo >= 0 && opts->window_lo < opts->window_hi))
        return pb_err_set(e, "--window takes A:B, micro-batches A to B-1 of the epoch with "
                          "0 <= A < B (or 'all'), got %d:%d", opts->window_lo, opts->window_hi);
    struct pb_plot_job j = {.outdir = outdir, .opts = opts ? *opts : (struct pb_plot_opts){0}};
    j.selecting = sel && (sel->experiment || sel->nwhere > 0 || sel->runs);
    if (pb_report_open(&j.db, db_path, e))
        return -1;
    if (pb_report_select(j.db, sel, e)) {
        pb_results_close(j.db);
        return -1;
    }
    j.run = run_id > 0 ? pb_report_pick_run(j.db, run_id, e) : newest_run(j.db, e);
    if (run_id <= 0 && j.run > 0) {
        find_cells(&j);
        if (all || fig != 0)
            note_cells(j.db, j.run);
    }
    int rc = j.run > 0 ? make_dir(outdir, e) : -1;
    int made = 0;
    for (int f = fig; rc >= 0 && (f == fig || (all && pb_plot_figure_names[f])); f++) {
        j.figure = pb_plot_figure_names[f];
        rc = make_one(&j, f, gnuplot, format, wrote, arg, e);
        if (rc == PB_PLOT_NO_DATA && all) {
            fprintf(stderr, "pipebench: plot: skipped the %s figure: %s\n", j.figure, e->msg);
            rc = 0;
        } else if (rc == 0) {
            made++;
        }
    }
    pb_results_close(j.db);
    if (rc == 0 && made == 0)
        return pb_err_set(e, "no figure could be made: run %lld's database holds none of "
                          "the data they show", (long long)j.run);
    return rc ? -1 : 0;
}

int pb_plot_figure(const char *db_path, const char *figure, const char *outdir,
                   const char *format, int64_t run_id, struct pb_err *e)
{
    return pb_plot_figure_cb(db_path, figure, outdir, format, run_id, NULL, NULL, NULL, NULL, e);
}
