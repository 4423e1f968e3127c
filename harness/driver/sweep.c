/* harness/driver/sweep.c — sweep files (sweep.h). inih parses; a custom reader feeds it the
 * file line by line and counts the lines, so the handler knows which line each value
 * came from. Values are checked as they come, configurations once all are read. */
#include "harness/driver/sweep.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/in_file.h"
#include "harness/driver/finished.h"
#include "harness/driver/plan.h"
#include "schedules/registry.h"
#include "workloads/datasets/dataset.h"
#include "harness/ir/program.h"
#include "workloads/models/workload.h"

/* The order the [grid] keys vary in, the last fastest: these first, in this order, then
 * every other run option in the order the file names them, then the seed. */
static const char *const leading_keys[] = {
    "model", "preset", "partition", "schedule", "optimizer", "stages", "batch", "microbatches",
    "lr", NULL,
};

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

static int grid_index(const struct pb_sweep *s, const char *key)
{
    for (int i = 0; i < s->naxes; i++)
        if (!strcmp(s->axes[i].key, key))
            return i;
    return -1;
}

/* Where key goes in the order of the axes (lower varies slower). */
static int axis_rank(const char *key)
{
    int n = 0;
    for (; leading_keys[n]; n++)
        if (!strcmp(leading_keys[n], key))
            return n;
    return !strcmp(key, "seed") ? n + 1 : n;
}

/* The axis of [grid] key `key`, added in its place in the order when new; NULL (an
 * error said why) when key cannot be swept. */
static struct pb_sweep_axis *axis_of(struct pb_sweep *s, const char *key, int line)
{
    int g = grid_index(s, key);
    if (g >= 0)
        return &s->axes[g];
    bool is_switch;
    if (!pb_run_flag_known(key, &is_switch)) {
        add_error(s, line, "unknown [grid] key '%s': it is not an option of pipebench run "
                  "(pipebench run --help lists them; [grid] takes their long names without "
                  "dashes)", key);
        return NULL;
    }
    if (!strcmp(key, "db") || !strcmp(key, "quiet")) {
        add_error(s, line, "'%s' cannot be swept: a sweep writes one database and runs quietly; "
                  "set db under [run] or with --db", key);
        return NULL;
    }
    if (s->naxes == PB_SWEEP_MAX_AXES) {
        add_error(s, line, "more than %d [grid] keys; fix the others under [run]",
                  PB_SWEEP_MAX_AXES);
        return NULL;
    }
    int at = s->naxes;
    while (at > 0 && axis_rank(s->axes[at - 1].key) > axis_rank(key))
        at--;
    memmove(&s->axes[at + 1], &s->axes[at], (size_t)(s->naxes - at) * sizeof *s->axes);
    s->naxes++;
    s->axes[at] = (struct pb_sweep_axis){.key = pb_xstrdup(key)};
    return &s->axes[at];
}

/* Keys whose values pb_run_check can judge alone, over run's defaults. */
static bool context_free(const char *key)
{
    static const char *const keys[] = {
        "stages", "microbatches", "microbatch-size", "epochs", "limit-train", "limit-val",
        "threads", "label-smoothing", "executor", "lr", "weight-decay", "beam", NULL,
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
static void grid_values(struct pb_sweep *s, struct pb_sweep_axis *a, const char *value, bool cont,
                        int line)
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
    struct pb_strlist *l = &a->values;
    int before = l->n;
    struct pb_err e;
    if (pb_strlist_add(l, chunk, a->key, &e)) {
        add_error(s, line, "%s", e.msg);
        return;
    }
    for (int i = before; i < l->n; i++)
        check_value(s, a->key, l->items[i], line);
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
        struct pb_sweep_axis *a = axis_of(s, name, line);
        if (a && (cont || !a->line)) {
            if (!cont)
                a->line = line;
            grid_values(s, a, value, cont, line);
        } else if (a) {
            add_error(s, line, "'%s' is already set on line %d", name, a->line);
        }
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
    struct pb_err why;
    FILE *f = pb_in_file_open(path, 0, &why);
    if (!f) {
        if (errno)
            pb_err_set(e, "cannot open the sweep file %s: %s", path, strerror(errno));
        else
            pb_err_set(e, "the sweep file %s", why.msg);
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
        int g = grid_index(s, r->name);
        if (g >= 0 && s->axes[g].values.n)
            add_error(s, r->line, "'%s' is in [grid] (line %d) and in [run]; keep one", r->name,
                      s->axes[g].line);
        else
            PB_CHECK(pb_run_flags_set(&s->flags, r->name, r->value, NULL) == 0);
    }
}

/* The grid values' names in a configuration's label: the keys with several values. */
static void label(const struct pb_sweep *s, const int *idx, int m_axis, bool with_m, char *out,
                  size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int g = 0; g < s->naxes && len < cap; g++)
        if (s->axes[g].values.n > 1 && (g != m_axis || with_m))
            len += (size_t)snprintf(out + len, cap - len, "%s%s=%s", len ? " " : "",
                                    s->axes[g].key, s->axes[g].values.items[idx[g]]);
}

/* Configuration idx (one index per grid key) into the next item; false when it is left
 * out: a repeat that differs only in M for a schedule without M, or a pair the
 * schedule cannot run, or a bad configuration (an error). */
static bool build(struct pb_sweep *s, const int *idx, const char *db, int threads)
{
    struct pb_run_flags f = s->flags;
    int m = grid_index(s, "microbatches");
    for (int g = 0; g < s->naxes; g++)
        if (g != m)
            pb_run_flags_set(&f, s->axes[g].key, s->axes[g].values.items[idx[g]], NULL);
    const char *name = pb_run_flags_get(&f, "schedule");
    struct pb_batch_item *it = &s->items[s->n];
    memset(it, 0, sizeof *it);
    pb_run_cfg_defaults(&it->cfg);
    const struct pb_schedule *sch = pb_schedule_find(name ? name : it->cfg.schedule, NULL);
    bool with_m = m >= 0 && sch && sch->uses_microbatches;
    if (m >= 0 && !with_m && idx[m] > 0)
        return false;
    if (with_m)
        pb_run_flags_set(&f, "microbatches", s->axes[m].values.items[idx[m]], NULL);
    label(s, idx, m, with_m, it->label, sizeof it->label);
    pb_run_flags_default_batch(&f);
    struct pb_err e;
    bool unsupported = false;
    int rc = pb_run_flags_apply(&f, &it->cfg, &e);
    if (!it->label[0])
        snprintf(it->label, sizeof it->label, "%s %s", it->cfg.schedule, it->cfg.optimizer);
    if (db)
        it->cfg.db = db;
    if (threads > 0 && !pb_run_flags_get(&f, "threads"))
        it->cfg.threads = threads;
    it->claim = true;   /* two copies of the sweep split its configurations */
    it->flags = f;      /* the ranks' options under the mpi executor */
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
        if (a != b || strncmp(json[i - 1], json[i], a))
            continue;
        const struct pb_batch_item *x = &s->items[atoi(json[i - 1] + a + 1)];
        const struct pb_batch_item *y = &s->items[atoi(json[i] + b + 1)];
        if (x->cfg.repeats != y->cfg.repeats)
            add_error(s, 0, "configurations %s and %s differ only in repeat: the repeats of a "
                      "configuration are not configurations of their own; give repeat one "
                      "value (its largest runs them all)", x->label, y->label);
        else
            add_error(s, 0, "configurations %s and %s are the same run (two values of a "
                      "[grid] key denote the same number?); remove one", x->label, y->label);
    }
    for (int i = 0; i < s->n; i++)
        free(json[i]);
    free(json);
}

/* Each configuration's repeats (--repeat, cfg.repeats) as items of their own, repeat r
 * of every configuration before repeat r + 1 of any: a drift of the machine's speed then
 * touches all configurations alike, and two repeats of one rarely run at once under
 * --jobs. */
static void expand_repeats(struct pb_sweep *s)
{
    long total = 0;
    int most = 1;
    for (int i = 0; i < s->n; i++) {
        total += s->items[i].cfg.repeats;
        most = s->items[i].cfg.repeats > most ? s->items[i].cfg.repeats : most;
    }
    if (total > PB_SWEEP_MAX_CONFIGS) {
        add_error(s, 0, "the grid's configurations and their repeats make %ld runs, more than "
                  "%d; split the sweep", total, PB_SWEEP_MAX_CONFIGS);
        return;
    }
    struct pb_batch_item *all = pb_xcalloc((size_t)total, sizeof *all);
    int n = 0;
    for (int r = 0; r < most; r++)
        for (int k = 0; k < s->n; k++) {
            if (r >= s->items[k].cfg.repeats)
                continue;
            struct pb_batch_item *it = &all[n++];
            *it = s->items[k];
            it->cfg.repeat = r;
            if (it->cfg.repeats > 1) {
                size_t len = strlen(it->label);
                snprintf(it->label + len, sizeof it->label - len, " repeat=%d", r);
            }
        }
    free(s->items);
    s->items = all;
    s->nconfigs = s->n;
    s->n = n;
}

static void expand(struct pb_sweep *s, const char *db, int threads)
{
    long total = 1;
    for (int g = 0; g < s->naxes; g++)
        if ((total *= s->axes[g].values.n) > PB_SWEEP_MAX_CONFIGS) {
            add_error(s, 0, "the grid holds more than %d configurations; split the sweep",
                      PB_SWEEP_MAX_CONFIGS);
            return;
        }
    s->items = pb_xcalloc((size_t)total, sizeof *s->items);
    int nbad = 0;
    for (long k = 0; k < total; k++) {
        int idx[PB_SWEEP_MAX_AXES];
        long r = k;
        for (int g = s->naxes - 1; g >= 0; g--) {
            idx[g] = (int)(r % s->axes[g].values.n);
            r /= s->axes[g].values.n;
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
    if (!s->nerrors)
        expand_repeats(s);
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
    if (!s->nerrors && !s->naxes && !s->nrun)
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

/* Reads the file at path (a `what` file, for its messages) and parses it into s. */
static int load_file(struct pb_sweep *s, const char *path, const char *what, const char *db,
                     int threads, struct pb_err *e)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    size_t n;
    char *text = slurp(path, &n, e);
    if (!text)
        return -1;
    const char *why = not_text(text, n);
    int rc = why ? pb_err_set(e, "cannot read the %s %s: %s", what, path, why)
                 : parse(s, text, db, threads);
    free(text);
    return rc;
}

int pb_sweep_load(struct pb_sweep *s, const char *path, const char *db, int threads,
                  struct pb_err *e)
{
    return load_file(s, path, "sweep file", db, threads, e);
}

int pb_sweep_load_run(struct pb_sweep *s, const char *path, struct pb_run_flags *f,
                      struct pb_err *e)
{
    int rc = load_file(s, path, "configuration file", NULL, 0, e);
    if (rc)
        return rc;
    if (s->nconfigs != 1) {
        add_error(s, 0, "the file describes %d configurations (its [grid] lists several "
                  "values); run it with `pipebench sweep %s`, or give each [grid] key one "
                  "value", s->nconfigs, path);
        return -1;
    }
    /* the one configuration's flags, as build() sets them: M only for a schedule with M */
    *f = s->flags;
    for (int g = 0; g < s->naxes; g++)
        if (s->axes[g].values.n && strcmp(s->axes[g].key, "microbatches"))
            pb_run_flags_set(f, s->axes[g].key, s->axes[g].values.items[0], NULL);
    int m = grid_index(s, "microbatches");
    const char *name = pb_run_flags_get(f, "schedule");
    const struct pb_schedule *sch = pb_schedule_find(name ? name : s->items[0].cfg.schedule,
                                                     NULL);
    if (m >= 0 && sch && sch->uses_microbatches)
        pb_run_flags_set(f, "microbatches", s->axes[m].values.items[0], NULL);
    return 0;
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

int pb_sweep_finished(struct pb_sweep *s, bool *done, bool create, struct pb_err *e)
{
    int64_t *ids = pb_xcalloc((size_t)s->n + 1, sizeof *ids);
    int rc = pb_finished_runs(s->items[0].cfg.db, s->items, s->n, ids, create, e);
    for (int i = 0; i < s->n; i++)
        done[i] = ids[i] > 0;
    free(ids);
    return rc;
}

void pb_sweep_finish(struct pb_sweep *s)
{
    for (int g = 0; g < s->naxes; g++) {
        free(s->axes[g].key);
        pb_strlist_finish(&s->axes[g].values);
    }
    for (int i = 0; i < s->nrun; i++) {
        free(s->run[i].name);
        free(s->run[i].value);
    }
    free(s->run);
    free(s->errors);
    free(s->items);
    memset(s, 0, sizeof *s);
}
