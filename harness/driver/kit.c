/* harness/driver/kit.c — an experiment kit's table.csv (kit.h). */
#include "harness/driver/kit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/args.h"

const char *const pb_kit_scales[2] = {"cpu", "paper"};

enum { NFIELDS = 5 + PB_KIT_NCOLS };

/* Splits line at commas into at most NFIELDS fields (trimmed); returns their count. */
static int split(char *line, char **f)
{
    int n = 0;
    for (char *p = line;; n++) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        while (*p == ' ')
            p++;
        char *end = p + strlen(p);
        while (end > p && (end[-1] == ' ' || end[-1] == '\r'))
            *--end = 0;
        if (n < NFIELDS)
            f[n] = p;
        if (!comma)
            return n + 1;
        p = comma + 1;
    }
}

static int copy_field(char *dst, size_t cap, const char *v, const char *what, const char *path,
                      int line, struct pb_err *e)
{
    if (snprintf(dst, cap, "%s", v) >= (int)cap)
        return pb_err_set(e, "%s:%d: the %s '%s' is too long (at most %zu bytes)", path, line,
                          what, v, cap - 1);
    return 0;
}

/* A published number: a decimal, or "–" (also "-") for one not published. */
static int paper_number(const char *v, double *out, const char *path, int line,
                        struct pb_err *e)
{
    if (!strcmp(v, "\xe2\x80\x93") || !strcmp(v, "-")) {
        *out = NAN;
        return 0;
    }
    float x;
    struct pb_err pe;
    if (pb_arg_float("a published number", v, &x, &pe) || !isfinite(x))
        return pb_err_set(e, "%s:%d: '%s' is not a number (write \xe2\x80\x93 where none was "
                          "published)", path, line, v);
    *out = x;
    return 0;
}

static int parse_row(struct pb_kit *k, char **f, const char *path, int line, struct pb_err *e)
{
    if (k->n == PB_KIT_MAX_ROWS)
        return pb_err_set(e, "%s:%d: more than %d rows", path, line, PB_KIT_MAX_ROWS);
    struct pb_kit_row *r = &k->rows[k->n];
    if (!f[0][0] || strchr(f[0], '/') || f[0][0] == '.')
        return pb_err_set(e, "%s:%d: a row's name is its sweep files' name: not empty, no '/', "
                          "not starting with '.' (got '%s')", path, line, f[0]);
    if (pb_kit_row(k, f[0]))
        return pb_err_set(e, "%s:%d: row '%s' appears twice", path, line, f[0]);
    if (copy_field(r->id, sizeof r->id, f[0], "row", path, line, e) ||
        copy_field(r->label, sizeof r->label, f[1], "workload", path, line, e) ||
        copy_field(r->optimizer, sizeof r->optimizer, f[2], "optimizer", path, line, e) ||
        copy_field(r->metric, sizeof r->metric, f[3], "metric", path, line, e) ||
        copy_field(r->note, sizeof r->note, f[4], "note", path, line, e))
        return -1;
    for (int c = 0; c < PB_KIT_NCOLS; c++)
        if (paper_number(f[5 + c], &r->paper[c], path, line, e))
            return -1;
    k->n++;
    return 0;
}

static int check_header(char **f, int n, const char *path, int line, struct pb_err *e)
{
    static const char *const head[5] = {"row", "workload", "optimizer", "metric", "note"};
    bool ok = n == NFIELDS;
    for (int i = 0; ok && i < NFIELDS; i++)
        ok = !strcmp(f[i], i < 5 ? head[i] : pb_kit_columns[i - 5]);
    if (!ok)
        return pb_err_set(e, "%s:%d: the header must be row,workload,optimizer,metric,note,"
                          "gpipe,pipedream,pipedream-2bw,spectrain,xpipe,pipeoptim", path, line);
    return 0;
}

int pb_kit_load(struct pb_kit *k, const char *dir, struct pb_err *e)
{
    memset(k, 0, sizeof *k);
    if (snprintf(k->dir, sizeof k->dir, "%s", dir) >= (int)sizeof k->dir)
        return pb_err_set(e, "the kit's folder path is too long: %s", dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/table.csv", dir);
    FILE *in = fopen(path, "r");
    if (!in)
        return pb_err_set(e, "cannot read %s: no such kit (its folder holds table.csv and "
                          "cpu/ and paper/ sweep files)", path);
    char buf[1024];
    int line = 0, rc = 0;
    bool header = false;
    while (!rc && fgets(buf, sizeof buf, in)) {
        line++;
        size_t len = strlen(buf);
        if (len == sizeof buf - 1 && buf[len - 1] != '\n') {
            rc = pb_err_set(e, "%s:%d: a line longer than %zu bytes", path, line, sizeof buf - 2);
            break;
        }
        buf[strcspn(buf, "\n")] = 0;
        if (buf[0] == '#' || buf[strspn(buf, " \r")] == 0)
            continue;
        char *f[NFIELDS];
        int n = split(buf, f);
        if (!header) {
            rc = check_header(f, n, path, line, e);
            header = true;
        } else if (n != NFIELDS) {
            rc = pb_err_set(e, "%s:%d: %d fields, want %d (the header's)", path, line, n,
                            NFIELDS);
        } else {
            rc = parse_row(k, f, path, line, e);
        }
    }
    fclose(in);
    if (!rc && k->n == 0)
        rc = pb_err_set(e, "%s holds no row", path);
    return rc;
}

const struct pb_kit_row *pb_kit_row(const struct pb_kit *k, const char *id)
{
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->rows[i].id, id))
            return &k->rows[i];
    return NULL;
}

int pb_kit_row_file(const struct pb_kit *k, const struct pb_kit_row *r, const char *scale,
                    char *out, size_t cap, struct pb_err *e)
{
    if (snprintf(out, cap, "%s/%s/%s.ini", k->dir, scale, r->id) >= (int)cap)
        return pb_err_set(e, "the kit's path is too long: %s", k->dir);
    return 0;
}
