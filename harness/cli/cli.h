/* harness/cli/cli.h — the `pipebench` subcommands. Each returns the process exit status
 * (PB_EXIT_*, harness/base/err.h). */
#ifndef PB_CLI_H
#define PB_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "harness/base/err.h"
#include "harness/ir/program.h"
#include "plots/report_db.h"

int pb_cmd_program(int argc, char **argv);
int pb_cmd_list(int argc, char **argv);
int pb_cmd_run(int argc, char **argv);   /* harness/cli/cli_run.c */
int pb_cmd_runs(int argc, char **argv);   /* harness/cli/cli_results.c */
int pb_cmd_show(int argc, char **argv);
int pb_cmd_report(int argc, char **argv);   /* harness/cli/cli_report.c */
int pb_cmd_plot(int argc, char **argv);     /* harness/cli/cli_plot.c */
int pb_cmd_trace(int argc, char **argv);    /* harness/cli/cli_trace.c */
int pb_cmd_compare(int argc, char **argv);   /* harness/cli/cli_compare.c */
int pb_cmd_sweep(int argc, char **argv);     /* harness/cli/cli_sweep.c */

int pb_cmd_simulate(int argc, char **argv);  /* harness/cli/cli_simulate.c */
int pb_cmd_resume(int argc, char **argv);    /* harness/cli/cli_resume.c */
int pb_cmd_partition(int argc, char **argv); /* harness/cli/cli_partition.c */
int pb_cmd_bleu(int argc, char **argv);      /* harness/cli/cli_bleu.c */
int pb_cmd_reproduce(int argc, char **argv); /* harness/cli/cli_reproduce.c */

struct pb_sweep;
/* Prints why a sweep file (at file) did not load, each line headed "who: ": each of s's
 * errors with its line, or e's message when it has none; with advice, that nothing ran
 * and where the format is described. */
void pb_cli_sweep_errors(const struct pb_sweep *s, const char *file, const struct pb_err *e,
                         const char *who, bool advice);

struct pb_batch_item;
/* Says once, before a batch of n runs `jobs` at a time starts, when jobs > 1 makes their
 * stage threads outnumber the machine's cores: every timing will carry a dagger. */
void pb_cli_warn_shared(const char *who, const struct pb_batch_item *items, int n, int jobs);

struct pb_run_cfg;
/* Runs c's repeats c->repeat .. c->repeats - 1 one after another and says how each
 * ended, as `pipebench run` does (the first that does not end done ends the rest);
 * returns the exit status. */
int pb_cli_run_cfg(const struct pb_run_cfg *c);

/* The pipe options of program and simulate (harness/cli/cli_pipe.c): finds the schedule
 * and optimizer and checks D, N and M (M defaults to D unless have_m). */
int pb_cli_pipe(const char *cmd, const char *sched_name, const char *opt_name, bool have_m,
                struct pb_pipe *pipe, const struct pb_schedule **sch, struct pb_err *e);
/* For a command that builds the pipe's programs whole: D·N within PB_MAX_PROGRAM_OPS / 3
 * (simulate extrapolates larger pipes instead, harness/sim/sim_periodic.h). */
int pb_cli_pipe_whole(const char *cmd, const struct pb_pipe *pipe, struct pb_err *e);

/* The selection options of report, plot and runs (harness/cli/cli_select.c): 1 when
 * flag (with its value) is one and was recorded in sel, 0 when it is not one, -1 with a
 * message on error. */
int pb_cli_select_flag(const char *flag, const char *value, struct pb_report_select *sel,
                       struct pb_err *e);
#define PB_CLI_SELECT_HELP                                                                    \
    "  --experiment NAME  only the runs recorded with --experiment NAME\n"                    \
    "  --where KEY=VALUE  only the runs whose configuration has KEY = VALUE (repeatable;\n"   \
    "                     keys as `pipebench show RUN` prints them: lr=0.01, epochs=10)\n"    \
    "  --runs ID,ID,...   only these runs\n"

struct pb_sweep;
/* The sweep loaded from file as a Slurm job-array script on out (harness/cli/cli_slurm.c):
 * one task per run, each `pipebench sweep FILE --task I` (with --hostfile when given) on
 * the sweep's database; -1 when out fails. */
int pb_cli_emit_slurm(const struct pb_sweep *s, const char *file, const char *hostfile,
                      FILE *out);

/* Refuses an option given twice in argv[1 ..] (as --db X or --db=X; with opts, the
 * command's getopt_long table, an abbreviation as the option it names) but those named
 * in repeatable (space-separated, "--where"; NULL for none): returns 0, or
 * PB_EXIT_USAGE after a message naming cmd and the option. */
struct option;
int pb_cli_once(const char *cmd, int argc, char **argv, const struct option *opts,
                const char *repeatable);

/* Prints "pipebench: <msg>" to stderr and returns PB_EXIT_USAGE. */
int pb_cli_fail(const char *msg);
/* `pipebench COMMAND ...` (cli_main.c): the program's whole behaviour, its exit status. */
int pb_cli_main(int argc, char **argv);

#endif
