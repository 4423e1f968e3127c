/* harness/cli/cli_select.c — the run-selection options report, plot and runs share:
 * --experiment NAME, --where KEY=VALUE (repeatable) and --runs ID,ID,... */
#include <string.h>

#include "harness/cli/cli.h"

int pb_cli_select_flag(const char *flag, const char *value, struct pb_report_select *sel,
                       struct pb_err *e)
{
    if (!value || (strcmp(flag, "--experiment") && strcmp(flag, "--where") &&
                   strcmp(flag, "--runs")))
        return 0;
    if (!strcmp(flag, "--experiment")) {
        sel->experiment = value;
    } else if (!strcmp(flag, "--runs")) {
        sel->runs = value;
    } else if (sel->nwhere == PB_REPORT_MAX_WHERE) {
        return pb_err_set(e, "at most %d --where options", PB_REPORT_MAX_WHERE);
    } else {
        sel->where[sel->nwhere++] = value;
    }
    return 1;
}
