/* harness/driver/sweep.c — sweep files (sweep.h). inih parses; a custom reader feeds it the
 * file line by line and counts the lines, so the handler knows which line each value
 * came from. Values are checked as they come, configurations once all are read. */
#include "harness/driver/sweep.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workloads/datasets/dataset.h"
#include "harness/ir/program.h"
#include "workloads/workload.h"

const char *const pb_sweep_grid_keys[PB_SWEEP_NGRID] = {
    "model", "preset", "partition", "schedule", "optimizer", "stages", "microbatches", "lr", "seed",
};
enum { G_MODEL, G_PRESET, G_PARTITION, G_SCHEDULE, G_OPTIMIZER, G_STAGES, G_MICROBATCHES, G_LR,
       G_SEED };

/* Largest sweep file read. */
#define MAX_FILE (1 << 20)

static void add_error(struct pb_sweep *s, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_error(struct pb_sweep *s, int line, const char *fmt, ...)
{
    struct pb_sweep_error *grown = realloc(s->errors, (size_t)(s->nerrors + 1) * sizeof *grown);
    PB_CHECK(grown != NULL);
    s->errors = grown;
    struct pb_sweep_error *er = &s->errors[s->nerrors++];
    er->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(er->msg, sizeof er->msg, fmt, ap);
    va_end(ap);
}

/* Where the parse is: the reader's position and line, the last key the handler saw. */
struct parser {
    struct pb_sweep *s;
    const char *pos, *line_start;
    int lineno;
    char last_section[64], last_key[64];
};

/* The lines of the text, fgets-style, for ini_parse_stream; counts them in p->lineno.
 * A line too long for inih's buffer stops the parse with an error. */
static char *read_line(char *str, int num, void *stream)
{
    struct parser *p = stream;
    if (!*p->pos)
        return NULL;
    const char *nl = strchr(p->pos, '\n');
    size_t len = nl ? (size_t)(nl - p->pos) + 1 : strlen(p->pos);
    p->lineno++;
    p->line_start = p->pos;
    if (len > (size_t)num - 1) {
        add_error(p->s, p->lineno, "line longer than %d characters; a [grid] list can go on "
                  "over indented lines", num - 3);
        return NULL;
    }
    memcpy(str, p->pos, len);
    str[len] = 0;
    p->pos += len;
    return str;
}

static int grid_index(const char *key)
{
    for (int i = 0; i < PB_SWEEP_NGRID; i++)
        if (!strcmp(pb_sweep_grid_keys[i], key))
            return i;
    return -1;
}

/* Keys whose values pb_run_check can judge alone, over run's defaults. */
static bool context_free(const char *key)
{
    static const char *const keys[] = {
        "stages", "microbatches", "microbatch-size", "epochs", "limit-train", "limit-val",
        "threads", "label-smoothing", "executor", "lr", "weight-decay", NULL,
    };
    for (int i = 0; keys[i]; i++)
        if (!strcmp(keys[i], key))
            return true;
    return false;
}

/* One value of a run option, alone: it parses, a name is in its registry, and a value
 * that needs no other is in range. */
static void check_value(struct pb_sweep *s, const char *key, const char *value, int line)
{
    struct pb_err e;
    struct pb_run_flags f = {0};
    struct pb_run_cfg c;
    pb_run_cfg_defaults(&c);
    int rc = pb_run_flags_set(&f, key, value, &e) || pb_run_flags_apply(&f, &c, &e);
    if (!rc && !strcmp(key, "schedule"))
        rc = !pb_schedule_find(value, &e);
    else if (!rc && !strcmp(key, "model"))
        rc = !pb_workload_find(value, &e);
    else if (!rc && !strcmp(key, "dataset") && !pb_dataset_summary(value))
        rc = pb_err_set(&e, "unknown dataset '%s'; `pipebench list` shows the datasets", value);
    else if (!rc && context_free(key))
        rc = pb_run_check(&c, &e) != 0;
    if (rc)
        add_error(s, line, "%s", e.msg);
}

/* A [grid] line: more values of key g, from its first line or an indented continuation
 * (which may start with a comma; any line may end with one, where the list goes on). */
static void grid_values(struct pb_sweep *s, int g, const char *value, bool cont, int line)
{
    char chunk[256];
    if (cont && *value == ',')
        value++;
    snprintf(chunk, sizeof chunk, "%s", value);
    size_t len = strlen(chunk);
    while (len && isspace((unsigned char)chunk[len - 1]))
        len--;
    if (len && chunk[len - 1] == ',')
        len--;
    chunk[len] = 0;
    struct pb_strlist *l = &s->grid[g];
    int before = l->n;
    struct pb_err e;
    if (pb_strlist_add(l, chunk, pb_sweep_grid_keys[g], &e)) {
        add_error(s, line, "%s", e.msg);
        return;
    }
    for (int i = before; i < l->n; i++)
        check_value(s, pb_sweep_grid_keys[g], l->items[i], line);
}

static void run_value(struct pb_sweep *s, const char *name, const char *value, int line)
{
    bool is_switch;
    if (!pb_run_flag_known(name, &is_switch)) {
        add_error(s, line, "'%s' is not an option of pipebench run (pipebench run --help lists "
                  "them; [run] takes their long names without dashes)", name);
        return;
    }
    for (int i = 0; i < s->nrun; i++)
        if (!strcmp(s->run[i].name, name)) {
            add_error(s, line, "'%s' is already set on line %d", name, s->run[i].line);
            return;
        }
    if (!*value && !is_switch) {
        add_error(s, line, "'%s' has no value", name);
        return;
    }
    struct pb_sweep_entry *grown = realloc(s->run, (size_t)(s->nrun + 1) * sizeof *grown);
    PB_CHECK(grown != NULL);
    s->run = grown;
    s->run[s->nrun++] = (struct pb_sweep_entry){
        .name = pb_xstrdup(name), .value = *value ? pb_xstrdup(value) : NULL, .line = line};
    check_value(s, name, *value ? value : NULL, line);
}

/* inih's handler: one key = value of the file (an indented line after a key continues
 * it: inih hands it over under the same key). */
static int on_pair(void *user, const char *section, const char *name, const char *value)
{
    struct parser *p = user;
    struct pb_sweep *s = p->s;
    int line = p->lineno;
    bool cont = isspace((unsigned char)*p->line_start) && !strcmp(section, p->last_section) &&
                !strcmp(name, p->last_key);
    snprintf(p->last_section, sizeof p->last_section, "%s", section);
    snprintf(p->last_key, sizeof p->last_key, "%s", name);
    if (!strcmp(section, "grid")) {
        int g = grid_index(name);
        if (g < 0)
            add_error(s, line, "unknown [grid] key '%s'; the grid keys are model, preset, "
                      "partition, schedule, optimizer, stages, microbatches, lr and seed (other "
                      "run options go under [run])", name);
        else if (cont || !s->grid_line[g]) {
            if (!cont)
                s->grid_line[g] = line;
            grid_values(s, g, value, cont, line);
        } else
            add_error(s, line, "'%s' is already set on line %d", name, s->grid_line[g]);
    } else if (!strcmp(section, "run")) {
        if (cont)
            add_error(s, line, "a [run] value fits on one line (only [grid] lists go on "
                      "over indented lines)");
        else
            run_value(s, name, value, line);
    } else if (!*section) {
        add_error(s, line, "'%s' is outside a section; put it under [grid] or [run]", name);
    } else {
        add_error(s, line, "unknown section [%s]; a sweep file has [grid] and [run]", section);
    }
    return 1;
}

/* Why text of n bytes cannot be a sweep file, or NULL when it can. */
static const char *not_text(const char *text, size_t n)
{
    return n > MAX_FILE        ? "it is larger than 1 MiB"
           : n && memchr(text, 0, n) ? "it is not a text file"
                                     : NULL;
}

/* The whole file (*n bytes), NUL-terminated; free() it. */
static char *slurp(const char *path, size_t *n, struct pb_err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        pb_err_set(e, "cannot open the sweep file %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = pb_xmalloc(MAX_FILE + 2);
    *n = fread(buf, 1, MAX_FILE + 1, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) {
        pb_err_set(e, "cannot read the sweep file %s: %s", path, strerror(err));
        free(buf);
        return NULL;
    }
    buf[*n] = 0;
    return buf;
}

/* What inih could not parse on line `line` of text. */
static void syntax_error(struct pb_sweep *s, const char *text, int line)
{
    const char *p = text;
    for (int i = 1; i < line && *p; i++) {
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : p + strlen(p);
    }
    int len = (int)strcspn(p, "\r\n");
    add_error(s, line, "cannot read '%.*s%s': expected 'key = value', '[section]' or a comment "
              "(; or #)", len > 60 ? 60 : len, p, len > 60 ? "..." : "");
}

/* [run] as run flags; a key also in [grid] is an error. */
static void fixed_flags(struct pb_sweep *s)
{
    for (int i = 0; i < s->nrun; i++) {
        const struct pb_sweep_entry *r = &s->run[i];
        int g = grid_index(r->name);
        if (g >= 0 && s->grid[g].n)
            add_error(s, r->line, "'%s' is in [grid] (line %d) and in [run]; keep one", r->name,
                      s->grid_line[g]);
        else
            PB_CHECK(pb_run_flags_set(&s->flags, r->name, r->value, NULL) == 0);
    }
}

/* The grid values' names in a configuration's label: the keys with several values. */
static void label(const struct pb_sweep *s, const int *idx, bool with_m, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int g = 0; g < PB_SWEEP_NGRID && len < cap; g++)
        if (s->grid[g].n > 1 && (g != G_MICROBATCHES || with_m))
            len += (size_t)snprintf(out + len, cap - len, "%s%s=%s", len ? " " : "",
                                    pb_sweep_grid_keys[g], s->grid[g].items[idx[g]]);
}

/* Configuration idx (one index per grid key) into the next item; false when it is left
 * out: a repeat that differs only in M for a schedule without M, or a pair the
 * schedule cannot run, or a bad configuration (an error). */
static bool build(struct pb_sweep *s, const int *idx, const char *db, int threads)
{
    struct pb_run_flags f = s->flags;
    for (int g = 0; g < PB_SWEEP_NGRID; g++)
        if (s->grid[g].n && g != G_MICROBATCHES)
            pb_run_flags_set(&f, pb_sweep_grid_keys[g], s->grid[g].items[idx[g]], NULL);
    const char *name = pb_run_flags_get(&f, "schedule");
    struct pb_batch_item *it = &s->items[s->n];
    memset(it, 0, sizeof *it);
    pb_run_cfg_defaults(&it->cfg);
    const struct pb_schedule *sch = pb_schedule_find(name ? name : it->cfg.schedule, NULL);
    bool with_m = s->grid[G_MICROBATCHES].n && sch && sch->uses_microbatches;
    if (s->grid[G_MICROBATCHES].n && !with_m && idx[G_MICROBATCHES] > 0)
        return false;
    if (with_m)
        pb_run_flags_set(&f, "microbatches", s->grid[G_MICROBATCHES].items[idx[G_MICROBATCHES]],
                         NULL);
    label(s, idx, with_m, it->label, sizeof it->label);
    struct pb_err e;
    bool unsupported = false;
    int rc = pb_run_flags_apply(&f, &it->cfg, &e);
    if (!it->label[0])
        snprintf(it->label, sizeof it->label, "%s %s", it->cfg.schedule, it->cfg.optimizer);
    if (db)
        it->cfg.db = db;
    if (threads > 0 && !pb_run_flags_get(&f, "threads"))
        it->cfg.threads = threads;
    if (!rc)
        rc = pb_batch_check(&it->cfg, &unsupported, &e);
    if (rc && unsupported) {
        if (!s->nunsupported++)
            snprintf(s->unsupported_note, sizeof s->unsupported_note, "%s", e.msg);
        return false;
    }
    if (rc) {
        add_error(s, 0, "configuration %s: %s", it->label, e.msg);
        return false;
    }
    return true;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Two configurations with the same JSON (lr = 0.1, 0.10) would be one run twice. */
static void check_distinct(struct pb_sweep *s)
{
    char **json = pb_xcalloc((size_t)s->n, sizeof *json);
    for (int i = 0; i < s->n; i++) {
        char *j = pb_run_cfg_json(&s->items[i].cfg);
        size_t len = strlen(j);
        json[i] = pb_xmalloc(len + 12);
        snprintf(json[i], len + 12, "%s\n%d", j, i);   /* the item's index after the JSON */
        free(j);
    }
    qsort(json, (size_t)s->n, sizeof *json, cmp_str);
    for (int i = 1; i < s->n; i++) {
        size_t a = strcspn(json[i - 1], "\n"), b = strcspn(json[i], "\n");
        if (a == b && !strncmp(json[i - 1], json[i], a))
            add_error(s, 0, "configurations %s and %s are the same run (two values of a [grid] "
                      "key denote the same number?); remove one",
                      s->items[atoi(json[i - 1] + a + 1)].label, s->items[atoi(json[i] + b + 1)].label);
    }
    for (int i = 0; i < s->n; i++)
        free(json[i]);
    free(json);
}

static void expand(struct pb_sweep *s, const char *db, int threads)
{
    long total = 1;
    for (int g = 0; g < PB_SWEEP_NGRID; g++)
        if (s->grid[g].n && (total *= s->grid[g].n) > PB_SWEEP_MAX_CONFIGS) {
            add_error(s, 0, "the grid holds more than %d configurations; split the sweep",
                      PB_SWEEP_MAX_CONFIGS);
            return;
        }
    s->items = pb_xcalloc((size_t)total, sizeof *s->items);
    int nbad = 0;
    for (long k = 0; k < total; k++) {
        int idx[PB_SWEEP_NGRID];
        long r = k;
        for (int g = PB_SWEEP_NGRID - 1; g >= 0; g--) {
            int m = s->grid[g].n ? s->grid[g].n : 1;
            idx[g] = (int)(r % m);
            r /= m;
        }
        int before = s->nerrors;
        if (build(s, idx, db, threads))
            s->n++;
        else if (s->nerrors > before && ++nbad > 5)
            s->nerrors--;
    }
    if (nbad > 5)
        add_error(s, 0, "... and %d more configurations fail their checks", nbad - 5);
    if (!s->nerrors && s->n == 0)
        add_error(s, 0, "no configuration left: %s", s->unsupported_note);
    if (!s->nerrors)
        check_distinct(s);
}

/* Errors by line (those tied to none last), in the order found within a line. */
static void sort_errors(struct pb_sweep *s)
{
    for (int i = 1; i < s->nerrors; i++) {
        struct pb_sweep_error x = s->errors[i];
        int key = x.line ? x.line : 1 << 30, j = i;
        for (; j > 0; j--) {
            int prev = s->errors[j - 1].line ? s->errors[j - 1].line : 1 << 30;
            if (prev <= key)
                break;
            s->errors[j] = s->errors[j - 1];
        }
        s->errors[j] = x;
    }
}

/* Parses, checks and expands text (NUL-terminated, no NUL inside). */
static int parse(struct pb_sweep *s, const char *text, const char *db, int threads)
{
    struct parser p = {.s = s, .pos = text, .line_start = text};
    int rc = ini_parse_stream(read_line, &p, on_pair, &p);
    if (rc > 0)
        syntax_error(s, text, rc);
    else if (rc < 0)
        add_error(s, 0, "inih could not parse the file (error %d)", rc);
    bool any_grid = false;
    for (int g = 0; g < PB_SWEEP_NGRID; g++)
        any_grid |= s->grid[g].n > 0;
    if (!s->nerrors && !any_grid && !s->nrun)
        add_error(s, 0, "the file sets nothing: a sweep file has a [grid] section of keys with "
                        "the values to sweep (schedule = gpipe, pipedream) and may have a [run] "
                        "section of fixed run options");
    if (!s->nerrors)
        fixed_flags(s);
    if (!s->nerrors)
        expand(s, db, threads);
    if (!s->nerrors)
        return 0;
    sort_errors(s);
    return -1;
}

int pb_sweep_load(struct pb_sweep *s, const char *path, const char *db, int threads,
                  struct pb_err *e)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    size_t n;
    char *text = slurp(path, &n, e);
    if (!text)
        return -1;
    const char *why = not_text(text, n);
    int rc = why ? pb_err_set(e, "cannot read the sweep file %s: %s", path, why)
                 : parse(s, text, db, threads);
    free(text);
    return rc;
}

int pb_sweep_load_mem(struct pb_sweep *s, const char *name, const void *bytes, size_t len,
                      const char *db, int threads, struct pb_err *e)
{
    memset(s, 0, sizeof *s);
    s->path = name;
    const char *why = not_text(bytes, len);
    if (why)
        return pb_err_set(e, "cannot read the sweep file %s: %s", name, why);
    char *text = pb_xmalloc(len + 1);
    if (len)
        memcpy(text, bytes, len);
    text[len] = 0;
    int rc = parse(s, text, db, threads);
    free(text);
    return rc;
}

/* The finished runs' configurations without their thread count, sorted; *n of them. */
static char **finished_configs(sqlite3 *db, int *n, struct pb_err *e)
{
    sqlite3_stmt *q;
    *n = 0;
    if (sqlite3_prepare_v2(db, "SELECT json_remove(config, '$.threads') FROM runs WHERE status "
                           "IN ('done', 'diverged') AND config IS NOT NULL", -1, &q, NULL)) {
        pb_err_set(e, "reading the results database: %s", sqlite3_errmsg(db));
        return NULL;
    }
    char **out = NULL;
    int cap = 0, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(out, (size_t)cap * sizeof *grown);
            PB_CHECK(grown != NULL);
            out = grown;
        }
        out[(*n)++] = pb_xstrdup((const char *)sqlite3_column_text(q, 0));
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        pb_err_set(e, "reading the results database: %s", sqlite3_errmsg(db));
        for (int i = 0; i < *n; i++)
            free(out[i]);
        free(out);
        return NULL;
    }
    if (*n)
        qsort(out, (size_t)*n, sizeof *out, cmp_str);
    return out ? out : pb_xcalloc(1, sizeof *out);
}

/* Whether configuration c (its JSON without the thread count, normalised by SQLite as
 * the stored ones are) is among the sorted finished ones. */
static int is_finished(sqlite3 *db, sqlite3_stmt *norm, const struct pb_run_cfg *c, char **fin,
                       int nfin, bool *done, struct pb_err *e)
{
    char *json = pb_run_cfg_json(c);
    sqlite3_bind_text(norm, 1, json, -1, SQLITE_TRANSIENT);
    free(json);
    if (sqlite3_step(norm) != SQLITE_ROW) {
        sqlite3_reset(norm);
        return pb_err_set(e, "reading the results database: %s", sqlite3_errmsg(db));
    }
    const char *key = (const char *)sqlite3_column_text(norm, 0);
    *done = nfin && bsearch(&key, fin, (size_t)nfin, sizeof *fin, cmp_str) != NULL;
    sqlite3_reset(norm);
    return 0;
}

int pb_sweep_finished(struct pb_sweep *s, bool *done, bool create, struct pb_err *e)
{
    struct pb_results *r;
    const char *path = s->items[0].cfg.db;
    if (!create && access(path, F_OK) != 0)
        return 0;
    if ((create ? pb_results_open : pb_results_open_existing)(&r, path, e))
        return -1;
    sqlite3 *db = pb_results_sqlite(r);
    int nfin = 0, rc = -1;
    char **fin = NULL;
    sqlite3_stmt *norm = NULL;
    if ((create && pb_results_mark_orphans(r, e) < 0) || !(fin = finished_configs(db, &nfin, e)))
        goto out;
    if (sqlite3_prepare_v2(db, "SELECT json_remove(?1, '$.threads')", -1, &norm, NULL)) {
        pb_err_set(e, "reading the results database: %s", sqlite3_errmsg(db));
        goto out;
    }
    rc = 0;
    for (int i = 0; i < s->n && !rc; i++)
        rc = is_finished(db, norm, &s->items[i].cfg, fin, nfin, &done[i], e);
out:
    sqlite3_finalize(norm);
    for (int i = 0; i < nfin; i++)
        free(fin[i]);
    free(fin);
    pb_results_close(r);
    return rc;
}

void pb_sweep_finish(struct pb_sweep *s)
{
    for (int g = 0; g < PB_SWEEP_NGRID; g++)
        pb_strlist_finish(&s->grid[g]);
    for (int i = 0; i < s->nrun; i++) {
        free(s->run[i].name);
        free(s->run[i].value);
    }
    free(s->run);
    free(s->errors);
    free(s->items);
    memset(s, 0, sizeof *s);
}
