/* harness/cli.h — the `pipebench` subcommands. Each returns the process exit status:
 * 0 success, 1 a run that ended badly (diverged, failed), 2 bad input or environment
 * (message printed to stderr). */
#ifndef PB_CLI_H
#define PB_CLI_H

#define PB_EXIT_OK 0
#define PB_EXIT_RUN 1
#define PB_EXIT_USAGE 2

int pb_cmd_program(int argc, char **argv);
int pb_cmd_list(int argc, char **argv);
int pb_cmd_run(int argc, char **argv);   /* harness/cli_run.c */
int pb_cmd_runs(int argc, char **argv);   /* harness/cli_results.c */
int pb_cmd_show(int argc, char **argv);
int pb_cmd_report(int argc, char **argv);   /* harness/cli_report.c */
int pb_cmd_plot(int argc, char **argv);     /* harness/cli_plot.c */
int pb_cmd_trace(int argc, char **argv);    /* harness/cli_trace.c */
int pb_cmd_compare(int argc, char **argv);   /* harness/cli_compare.c */
int pb_cmd_sweep(int argc, char **argv);     /* harness/cli_sweep.c */

/* Prints "pipebench: <msg>" to stderr and returns PB_EXIT_USAGE. */
int pb_cli_fail(const char *msg);

#endif
