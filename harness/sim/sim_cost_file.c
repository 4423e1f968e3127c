/* harness/sim/sim_cost_file.c — op costs from a CSV file (sim_cost_file.h): parsed and
 * checked whole before anything is simulated. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/in_file.h"
#include "harness/sim/sim_cost_file.h"

#define RECV PB_OP_NKINDS   /* the sixth column of a stage's costs */

unsigned pb_program_kinds(const struct pb_program *prog)
{
    unsigned k = 0;
    for (int i = 0; i < prog->n; i++)
        k |= 1u << prog->ops[i].kind;
    return k;
}

static const char *const op_names[] = {"F", "B", "U", "I", "W", "recv"};

/* The fields of line (NUL-terminated, no newline) split at commas, spaces around each
 * trimmed; at most 4 (one more than a row has, to see it). */
static int fields(char *line, char **f)
{
    int n = 0;
    for (char *p = line;; n++) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        while (*p == ' ' || *p == '\t')
            p++;
        char *end = p + strlen(p);
        while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
            *--end = 0;
        if (n < 4)
            f[n] = p;
        if (!comma)
            return n + 1;
        p = comma + 1;
    }
}

/* One row's stage, op and seconds into costs, its line number into seen. */
static int row(const char *path, int line, char **f, int stages, double (*v)[RECV + 1],
               int (*seen)[RECV + 1], struct pb_err *e)
{
    char *end;
    long k = strtol(f[0], &end, 10);
    if (!*f[0] || *end || k < 0 || k >= stages)
        return pb_err_set(e, "%s line %d: unknown stage '%s': the stages are 0 to %d", path,
                          line, f[0], stages - 1);
    int op = 0;
    while (op <= RECV && strcmp(f[1], op_names[op]))
        op++;
    if (op > RECV)
        return pb_err_set(e, "%s line %d: unknown op '%s': one of F, B, U, I, W or recv", path,
                          line, f[1]);
    double s = strtod(f[2], &end);
    if (!*f[2] || *end || !isfinite(s) || s < 0)
        return pb_err_set(e, "%s line %d: the seconds of stage %ld's %s must be a finite "
                          "number, 0 or more (got '%s')", path, line, k, op_names[op], f[2]);
    if (seen[k][op])
        return pb_err_set(e, "%s line %d: stage %ld's %s is given again (first on line %d); "
                          "give each stage and op once", path, line, k, op_names[op],
                          seen[k][op]);
    v[k][op] = s;
    seen[k][op] = line;
    return 0;
}

/* Reads the rows of f into v and seen; *contended when a comment begins "# †". */
static int read_rows(FILE *f, const char *path, int stages, double (*v)[RECV + 1],
                     int (*seen)[RECV + 1], bool *contended, struct pb_err *e)
{
    char buf[512];
    bool header = false;
    for (int line = 1; fgets(buf, sizeof buf, f); line++) {
        size_t len = strlen(buf);
        if (len == sizeof buf - 1 && buf[len - 1] != '\n' && !feof(f))
            return pb_err_set(e, "%s line %d: longer than %zu characters; a row is "
                              "stage,op,seconds", path, line, sizeof buf - 2);
        buf[strcspn(buf, "\r\n")] = 0;
        char *p = buf + strspn(buf, " \t");
        *contended |= !strncmp(p, "# \xe2\x80\xa0", 5);
        if (!*p || *p == '#')
            continue;
        char *fl[4];
        int n = fields(p, fl);
        if (!header) {
            if (n != 3 || strcmp(fl[0], "stage") || strcmp(fl[1], "op") ||
                strcmp(fl[2], "seconds"))
                return pb_err_set(e, "%s line %d: the first line must be the header "
                                  "stage,op,seconds", path, line);
            header = true;
            continue;
        }
        if (n != 3)
            return pb_err_set(e, "%s line %d: a row is stage,op,seconds (e.g. 0,F,0.002), got "
                              "%d field%s", path, line, n, n == 1 ? "" : "s");
        if (row(path, line, fl, stages, v, seen, e))
            return -1;
    }
    if (ferror(f))
        return pb_err_set(e, "%s: cannot be read", path);
    if (!header)
        return pb_err_set(e, "%s: no header stage,op,seconds and no rows", path);
    return 0;
}

int pb_sim_cost_file_read(const char *path, int stages, const unsigned *kinds,
                          struct pb_sim_cost *costs, bool *contended, struct pb_err *e)
{
    *contended = false;
    FILE *f = pb_in_file_open(path, 1 << 26, e);
    if (!f)
        return pb_err_prefix(e, "--op-costs: ");
    double (*v)[RECV + 1] = pb_xcalloc((size_t)stages, sizeof *v);
    int (*seen)[RECV + 1] = pb_xcalloc((size_t)stages, sizeof *seen);
    int rc = read_rows(f, path, stages, v, seen, contended, e);
    fclose(f);
    for (int k = 0; k < stages && !rc; k++)
        for (int op = 0; op < PB_OP_NKINDS && !rc; op++)
            if ((kinds[k] >> op & 1) && !seen[k][op])
                rc = pb_err_set(e, "%s: no row for stage %d's %s, which its program runs; add "
                                "the line %d,%s,SECONDS", path, k, op_names[op], k,
                                op_names[op]);
    for (int k = 0; k < stages && !rc; k++) {
        double c[RECV + 1];
        for (int op = 0; op <= RECV; op++)
            c[op] = op == RECV || (kinds[k] >> op & 1) ? v[k][op] : 0;
        costs[k] = (struct pb_sim_cost){c[PB_OP_F], c[PB_OP_B], c[PB_OP_U], c[RECV],
                                        c[PB_OP_I], c[PB_OP_W]};
    }
    free(v);
    free(seen);
    return rc ? pb_err_prefix(e, "--op-costs: ") : 0;
}
