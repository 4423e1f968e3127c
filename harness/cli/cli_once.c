/* harness/cli/cli_once.c — an option given twice on a command line is refused
 * (pb_cli_once): a second --db would otherwise silently replace the first, and a second
 * spelled as getopt's abbreviation (--stage for --stages) too. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "harness/cli/cli.h"

/* The option's name: "--db" of "--db" and of "--db=FILE", in out; with opts, as getopt_long
 * reads it: the option a unique prefix abbreviates ("--stages" of "--stage"). */
static void option_name(const char *arg, const struct option *opts, char *out, size_t cap)
{
    size_t n = strcspn(arg, "=");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), arg);
    const struct option *hit = NULL;
    int prefixes = 0;
    for (const struct option *o = opts; o && o->name && n > 2; o++) {
        if (strlen(o->name) == n - 2 && !strncmp(o->name, arg + 2, n - 2)) {
            hit = o;
            prefixes = 1;
            break;
        }
        if (!strncmp(o->name, arg + 2, n - 2)) {
            hit = o;
            prefixes++;
        }
    }
    if (prefixes == 1)
        snprintf(out, cap, "--%s", hit->name);
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

int pb_cli_once(const char *cmd, int argc, char **argv, const struct option *opts,
                const char *repeatable)
{
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) || !argv[i][2])
            continue;
        char a[64], b[64];
        option_name(argv[i], opts, a, sizeof a);
        if (listed(repeatable, a))
            continue;
        for (int j = i + 1; j < argc; j++) {
            if (strncmp(argv[j], "--", 2))
                continue;
            option_name(argv[j], opts, b, sizeof b);
            if (!strcmp(a, b)) {
                fprintf(stderr, "pipebench %s: %s is given twice; give it once (a later value "
                                "would silently replace the earlier)\n", cmd, a);
                return PB_EXIT_USAGE;
            }
        }
    }
    return 0;
}
