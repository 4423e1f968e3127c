/* harness/cli/cli_once.c — an option given twice on a command line is refused
 * (pb_cli_once): a second --db would otherwise silently replace the first. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "harness/cli/cli.h"

/* The option's name: "--db" of "--db" and of "--db=FILE", in out. */
static void option_name(const char *arg, char *out, size_t cap)
{
    size_t n = strcspn(arg, "=");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), arg);
}

/* Whether name is one of the space-separated names of list (NULL: none). */
static bool listed(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; p && *p; p += strcspn(p, " "), p += *p == ' ')
        if (strcspn(p, " ") == len && !strncmp(p, name, len))
            return true;
    return false;
}

int pb_cli_once(const char *cmd, int argc, char **argv, const char *repeatable)
{
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) || !argv[i][2])
            continue;
        char a[64], b[64];
        option_name(argv[i], a, sizeof a);
        if (listed(repeatable, a))
            continue;
        for (int j = i + 1; j < argc; j++) {
            option_name(argv[j], b, sizeof b);
            if (!strcmp(a, b)) {
                fprintf(stderr, "pipebench %s: %s is given twice; give it once (a later value "
                                "would silently replace the earlier)\n", cmd, a);
                return PB_EXIT_USAGE;
            }
        }
    }
    return 0;
}
