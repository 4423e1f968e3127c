/* tests/project/test_docs.c — the documentation travels with the code: every section reference in
 * the sources, docs/ and README.md, `pipebench list` and `pipebench run --help` names a
 * section docs/ has, and none points at a document outside the repository; the programs
 * docs/semantics.md quotes are what `pipebench program` prints, one for every registered
 * schedule form; docs/extending.md's example schedule compiles against the tree, links
 * with the library and prints the program quoted after it, and its quoted snippets still
 * match their files. The reference form is defined in docs/semantics.md's header. */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness/compute/backend.h"
#include "pb_config.h"
#include "tests/support/schedule_forms.h"

/* The section sign, spelled so that this file holds no reference itself. */
#define SECT "\xc2\xa7"
#define SECT_LEN 2

#define REPORT_CAP (1 << 16)

/* ---- text helpers ---- */

/* The whole file, NUL-terminated (caller frees), or NULL when it cannot be read. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 14, n = 0, r;
    char *buf = malloc(cap);
    ck_assert(buf != NULL);
    while ((r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            ck_assert(buf != NULL);
        }
    }
    fclose(f);
    buf[n] = 0;
    return buf;
}

/* PB_SOURCE_ROOT/rel's text; fails the test when it is missing. */
static char *read_source(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", PB_SOURCE_ROOT, rel);
    char *t = read_text(path);
    ck_assert_msg(t != NULL, "cannot read %s", path);
    return t;
}

/* Runs cmd with stdout and stderr together in a malloc'ed *out; returns the exit status. */
static int run_capture(const char *cmd, char **out)
{
    char full[8192];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *f = popen(full, "r");
    ck_assert_msg(f != NULL, "cannot run %s", cmd);
    size_t cap = 1 << 14, n = 0, r;
    char *buf = malloc(cap);
    ck_assert(buf != NULL);
    while ((r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            ck_assert(buf != NULL);
        }
    }
    buf[n] = 0;
    *out = buf;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *pipebench(void)
{
    const char *bin = getenv("PB_PIPEBENCH");
    ck_assert_msg(bin != NULL, "PB_PIPEBENCH is not set (run through meson test)");
    return bin;
}

static void report_add(char *report, int *count, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report_add(char *report, int *count, const char *fmt, ...)
{
    size_t used = strlen(report);
    va_list ap;
    va_start(ap, fmt);
    if (used + 2 < REPORT_CAP) {
        report[used++] = '\n';
        report[used] = 0;
        vsnprintf(report + used, REPORT_CAP - used, fmt, ap);
    }
    va_end(ap);
    (*count)++;
}

/* Fails with the report when it counts any problem: the whole list on stderr (meson's
 * log keeps it), its first part in Check's message, which has a size limit. */
static void assert_report(int count, const char *report, const char *what)
{
    if (count == 0)
        return;
    fprintf(stderr, "%d %s:%s\n", count, what, report);
    ck_abort_msg("%d %s:%.3000s%s", count, what, report,
                 strlen(report) > 3000 ? "\n  ... (the whole list is on stderr)" : "");
}

/* One line of text (without its newline) into buf. */
static void line_at(const char *line, char *buf, size_t cap)
{
    size_t n = strcspn(line, "\n");
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, line, n);
    buf[n] = 0;
}

/* The line's text with surrounding blanks removed, into buf. */
static void trimmed(const char *line, size_t len, char *buf, size_t cap)
{
    while (len > 0 && isspace((unsigned char)*line))
        line++, len--;
    while (len > 0 && isspace((unsigned char)line[len - 1]))
        len--;
    if (len >= cap)
        len = cap - 1;
    memcpy(buf, line, len);
    buf[len] = 0;
}

/* ---- sections ---- */

enum doc { DOC_SEMANTICS, DOC_DESIGN, NDOCS };
static const char *const doc_names[NDOCS] = {"semantics", "design"};

#define MAX_SECTIONS 512
struct sections {
    int n;
    char id[MAX_SECTIONS][16];
};

/* "4.6" from the text after a section sign: digits and dots, no trailing dot; false when
 * there is no number. */
static bool parse_id(const char *s, char *id, size_t cap, size_t *len)
{
    size_t n = 0;
    while ((isdigit((unsigned char)s[n]) || (s[n] == '.' && n > 0 && isdigit((unsigned char)s[n + 1]))) &&
           n + 1 < cap)
        n++;
    if (n == 0)
        return false;
    memcpy(id, s, n);
    id[n] = 0;
    *len = n;
    return true;
}

/* The section numbers of docs/NAME.md: every heading whose text starts with one. */
static void load_sections(enum doc d, struct sections *out)
{
    char rel[64];
    snprintf(rel, sizeof rel, "docs/%s.md", doc_names[d]);
    char *text = read_source(rel);
    out->n = 0;
    for (const char *line = text; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != 0)) {
        if (*line != '#')
            continue;
        const char *p = line;
        while (*p == '#')
            p++;
        while (*p == ' ')
            p++;
        size_t len;
        if (strncmp(p, SECT, SECT_LEN) || out->n == MAX_SECTIONS ||
            !parse_id(p + SECT_LEN, out->id[out->n], sizeof out->id[0], &len))
            continue;
        out->n++;
    }
    free(text);
    ck_assert_msg(out->n > 0, "docs/%s.md has no numbered section headings", doc_names[d]);
}

static bool has_section(const struct sections *s, const char *id)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->id[i], id))
            return true;
    return false;
}

/* The document named by the word right before position p (after blanks): "semantics",
 * "design", or a path ending in semantics.md or design.md; -1 when none. */
static int named_doc(const char *text, const char *p)
{
    const char *end = p;
    for (;;) {
        while (end > text && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        /* at the start of a line, or after only a comment leader (" * ", "-- ", "# "):
         * the word may end the line before ("(design\n * <section sign>2.8)") */
        const char *ls = end;
        while (ls > text && ls[-1] != '\n' && strchr("*#-/ \t", ls[-1]))
            ls--;
        if (ls == end && end > text && end[-1] != '\n')
            break;
        if (ls == text || ls[-1] != '\n')
            break;
        end = ls - 1;
    }
    const char *start = end;
    while (start > text && (isalnum((unsigned char)start[-1]) || strchr("_./-", start[-1])))
        start--;
    size_t n = (size_t)(end - start);
    for (int d = 0; d < NDOCS; d++) {
        char md[32];
        snprintf(md, sizeof md, "%s.md", doc_names[d]);
        const char *names[2] = {doc_names[d], md};
        for (int k = 0; k < 2; k++) {
            size_t m = strlen(names[k]);
            if (n >= m && !strncmp(end - m, names[k], m) &&
                (n == m || !isalnum((unsigned char)end[-(long)m - 1])))
                return d;
        }
    }
    return -1;
}

/* Checks every section reference of text (called `where` in messages): a section sign
 * and a number, in the document the word before it names, else the one the last named
 * reference of the same line named, else dflt. */
static void check_refs(const char *text, const char *where, enum doc dflt,
                       const struct sections *secs, char *report, int *count)
{
    int lineno = 1;
    int line_doc = -1;
    const char *line = text;
    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            lineno++;
            line = p + 1;
            line_doc = -1;
            continue;
        }
        if (strncmp(p, SECT, SECT_LEN))
            continue;
        char id[16];
        size_t len;
        if (!parse_id(p + SECT_LEN, id, sizeof id, &len))
            continue;
        int d = named_doc(text, p);
        if (d >= 0)
            line_doc = d;
        else
            d = line_doc >= 0 ? line_doc : (int)dflt;
        if (!has_section(&secs[d], id)) {
            char l[160];
            line_at(line, l, sizeof l);
            report_add(report, count, "  %s:%d: %s " SECT "%s: docs/%s.md has no such section "
                       "(\"%s\")", where, lineno, doc_names[d], id, doc_names[d], l);
        }
        p += SECT_LEN + len - 1;
    }
}

/* Words that name the project's documents outside the repository. */
static void check_outside(const char *text, const char *where, char *report, int *count)
{
    /* spelled in pieces so that this file does not match itself */
    static const char *const words[] = {"S" "PEC", "DES" "IGN", "Z" "OO"};
    static const char *const phrases[] = {"shared" " folder", "/work/" "shared"};
    int lineno = 1;
    const char *line = text;
    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            lineno++;
            line = p + 1;
            continue;
        }
        const char *hit = NULL;
        for (size_t i = 0; i < sizeof words / sizeof *words && !hit; i++) {
            size_t n = strlen(words[i]);
            if (strncmp(p, words[i], n) || (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_')))
                continue;
            /* cited as a document: "X.md", "X §4", "X 4.6", "X's", "X principle 3",
             * 'X "Tests"', "X (Conventions)"; the bare word may mean something else */
            static const char *const cites[] = {".md", " " SECT, SECT, "'s", " principle",
                                                " \"", " ("};
            const char *after = p + n;
            bool cited = after[0] == ' ' && isdigit((unsigned char)after[1]);
            for (size_t c = 0; c < sizeof cites / sizeof *cites && !cited; c++)
                cited = !strncmp(after, cites[c], strlen(cites[c]));
            if (cited)
                hit = words[i];
        }
        for (size_t i = 0; i < sizeof phrases / sizeof *phrases && !hit; i++)
            if (!strncmp(p, phrases[i], strlen(phrases[i])))
                hit = phrases[i];
        if (hit) {
            char l[160];
            line_at(line, l, sizeof l);
            report_add(report, count, "  %s:%d: \"%s\" points outside the repository; cite "
                       "docs/ instead (\"%s\")", where, lineno, hit, l);
        }
    }
}

/* ---- the source tree ---- */

static bool is_build_dir(const char *path)
{
    char probe[4096 + 32];
    struct stat st;
    snprintf(probe, sizeof probe, "%s/meson-private", path);
    if (stat(probe, &st) == 0)
        return true;
    snprintf(probe, sizeof probe, "%s/build.ninja", path);
    return stat(probe, &st) == 0;
}

static bool scanned_name(const char *rel, const char *name)
{
    static const char *const exts[] = {".c", ".h", ".cu", ".sql", ".gp", ".py", ".in"};
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof exts / sizeof *exts; i++)
        if (!strcmp(dot, exts[i]))
            return true;
    return !strcmp(name, "meson.build") || !strcmp(name, "meson_options.txt") ||
           !strncmp(rel, "scripts/", 8);
}

/* Calls fn on every scanned file under rel ("" for the root), build folders and hidden
 * entries left out; returns the count. */
static int walk(const char *rel, void (*fn)(const char *rel, void *ctx), void *ctx)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", PB_SOURCE_ROOT, *rel ? "/" : "", rel);
    if (is_build_dir(path))
        return 0;
    DIR *d = opendir(path);
    ck_assert_msg(d != NULL, "cannot list %s", path);
    int files = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char sub[1024], full[4096];
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", de->d_name);
        snprintf(full, sizeof full, "%s/%s", PB_SOURCE_ROOT, sub);
        struct stat st;
        if (stat(full, &st))
            continue;
        if (S_ISDIR(st.st_mode)) {
            files += walk(sub, fn, ctx);
        } else if (S_ISREG(st.st_mode) && scanned_name(sub, de->d_name)) {
            fn(sub, ctx);
            files++;
        }
    }
    closedir(d);
    return files;
}

struct scan {
    struct sections secs[NDOCS];
    char *report;
    int count;
};

static void scan_source(const char *rel, void *ctx)
{
    struct scan *s = ctx;
    char *text = read_source(rel);
    check_refs(text, rel, DOC_SEMANTICS, s->secs, s->report, &s->count);
    check_outside(text, rel, s->report, &s->count);
    free(text);
}

static void scan_init(struct scan *s)
{
    static char report[REPORT_CAP];
    report[0] = 0;
    s->report = report;
    s->count = 0;
    for (int d = 0; d < NDOCS; d++)
        load_sections((enum doc)d, &s->secs[d]);
}

/* Every .c, .h, .sql, .gp (and .py, meson, scripts) file of the tree. */
START_TEST(test_source_references)
{
    struct scan s;
    scan_init(&s);
    int files = walk("", scan_source, &s);
    ck_assert_msg(files > 100, "only %d source files found under %s", files, PB_SOURCE_ROOT);
    assert_report(s.count, s.report, "reference(s) to fix");
}
END_TEST

/* What the program prints: `pipebench list` and `pipebench run --help`. */
START_TEST(test_cli_references)
{
    struct scan s;
    scan_init(&s);
    static const char *const cmds[] = {"list", "run --help"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        char cmd[4096], where[64];
        char *out;
        snprintf(cmd, sizeof cmd, "'%s' %s", pipebench(), cmds[i]);
        ck_assert_msg(run_capture(cmd, &out) == 0, "pipebench %s failed: %s", cmds[i], out);
        snprintf(where, sizeof where, "`pipebench %s`", cmds[i]);
        check_refs(out, where, DOC_SEMANTICS, s.secs, s.report, &s.count);
        check_outside(out, where, s.report, &s.count);
        free(out);
    }
    assert_report(s.count, s.report, "reference(s) to fix");
}
END_TEST

/* README.md and the documents in docs/: references between the documents (a bare one in
 * docs/design.md is to design.md itself). */
START_TEST(test_doc_references)
{
    struct scan s;
    scan_init(&s);
    static const struct {
        const char *rel;
        enum doc dflt;
    } docs[] = {
        {"README.md", DOC_SEMANTICS},         {"docs/semantics.md", DOC_SEMANTICS},
        {"docs/design.md", DOC_DESIGN},       {"docs/extending.md", DOC_SEMANTICS},
        {"docs/reproducing.md", DOC_SEMANTICS},
    };
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        char *text = read_source(docs[i].rel);
        check_refs(text, docs[i].rel, docs[i].dflt, s.secs, s.report, &s.count);
        check_outside(text, docs[i].rel, s.report, &s.count);
        free(text);
    }
    assert_report(s.count, s.report, "reference(s) to fix");
}
END_TEST

/* The rules themselves, on made-up text. */
START_TEST(test_reference_rules)
{
    struct scan s;
    scan_init(&s);
    check_refs("a (semantics " SECT "4.6) b " SECT "3.\n(design " SECT "2.3, " SECT "4.1)\n", "t",
               DOC_SEMANTICS, s.secs, s.report, &s.count);
    ck_assert_msg(s.count == 0, "valid references refused:%s", s.report);
    check_refs("semantics " SECT "99.9 and " SECT "98\n" SECT "97 docs/design.md " SECT "96\n",
               "t", DOC_SEMANTICS, s.secs, s.report, &s.count);
    ck_assert_msg(s.count == 4, "expected 4 missing sections, got %d:%s", s.count, s.report);
    ck_assert_msg(strstr(s.report, "t:1: semantics " SECT "98") &&
                  strstr(s.report, "t:2: design " SECT "96"), "%s", s.report);
    s.count = 0;
    check_outside("see S" "PEC " SECT "4.6 and Z" "OO.md; S" "PEC_RTOL, PB_PREDICT_S" "PECTRAIN\n"
                  "DES" "IGN principle 3; a block S" "PEC: kind,arg\n", "t", s.report, &s.count);
    ck_assert_msg(s.count == 3, "expected 3 outside pointers, got %d:%s", s.count, s.report);
}
END_TEST

/* ---- fenced blocks ---- */

/* The fenced block that starts at or after `from`: its language after the backticks
 * and its body (both malloc'ed), and where the text after its closing fence starts;
 * NULL when there is none. */
static const char *next_block(const char *from, char **lang, char **body)
{
    const char *p = from;
    while (*p) {
        if (!strncmp(p, "```", 3) && (p == from || p[-1] == '\n'))
            break;
        p += strcspn(p, "\n");
        if (*p)
            p++;
    }
    if (!*p)
        return NULL;
    size_t n = strcspn(p + 3, "\n");
    *lang = strndup(p + 3, n);
    const char *start = p + 3 + n + (p[3 + n] == '\n');
    const char *end = strstr(start, "\n```");
    ck_assert_msg(end != NULL, "a fenced block never closes");
    *body = strndup(start, (size_t)(end - start) + 1);  /* with its last newline */
    const char *after = end + 4;
    return after + strcspn(after, "\n");
}

/* The block after the first line `marker` of text (see next_block). */
static const char *block_after(const char *text, const char *marker, char **lang, char **body)
{
    const char *m = strstr(text, marker);
    return m ? next_block(m + strlen(marker), lang, body) : NULL;
}

/* ---- quoted programs ---- */

/* Whether the command line `args` has the token pair `flag value`, or flag alone when
 * value is NULL; *value_out receives the value found (NULL if the flag is absent). */
static bool has_flag(const char *args, const char *flag, char *value_out, size_t cap)
{
    size_t n = strlen(flag);
    for (const char *p = args; (p = strstr(p, flag)); p += n) {
        if ((p != args && p[-1] != ' ') || (p[n] != ' ' && p[n] != 0))
            continue;
        if (value_out) {
            const char *v = p + n + strspn(p + n, " ");
            size_t len = strcspn(v, " ");
            if (len >= cap)
                len = cap - 1;
            memcpy(value_out, v, len);
            value_out[len] = 0;
        }
        return true;
    }
    return false;
}

#define QUOTE_PREFIX "$ pipebench program "
#define MAX_QUOTES 64

/* Every ```text block of docs/semantics.md that opens with "$ pipebench program ARGS"
 * equals what the binary prints for ARGS; every registered schedule form has one at
 * D = 4 with --versions. */
START_TEST(test_quoted_programs)
{
    static char report[REPORT_CAP];
    report[0] = 0;
    int count = 0, nquotes = 0;
    char *quoted[MAX_QUOTES];
    char *text = read_source("docs/semantics.md");
    char *lang, *body;
    for (const char *p = text; (p = next_block(p, &lang, &body));) {
        if (!strcmp(lang, "text") && !strncmp(body, QUOTE_PREFIX, strlen(QUOTE_PREFIX))) {
            size_t n = strcspn(body, "\n");
            char *args = strndup(body + strlen(QUOTE_PREFIX), n - strlen(QUOTE_PREFIX));
            const char *expect = body + n + 1;
            char cmd[4096], *out;
            snprintf(cmd, sizeof cmd, "'%s' program %s", pipebench(), args);
            int rc = run_capture(cmd, &out);
            if (rc != 0 || strcmp(out, expect))
                report_add(report, &count, "  pipebench program %s (exit %d):\n  printed:\n%s"
                           "  docs/semantics.md quotes:\n%s", args, rc, out, expect);
            free(out);
            ck_assert_msg(nquotes < MAX_QUOTES, "more than %d quoted programs", MAX_QUOTES);
            quoted[nquotes++] = args;
        }
        free(lang);
        free(body);
    }
    free(text);
    ck_assert_msg(nquotes > 0, "docs/semantics.md quotes no program");

    struct sched_form forms[SCHED_FORMS_MAX];
    int nforms = sched_forms(forms);
    for (int i = 0; i < nforms; i++) {
        bool found = false;
        for (int q = 0; q < nquotes && !found; q++) {
            char name[64], variant[64], stages[16];
            bool has_variant = has_flag(quoted[q], "--variant", variant, sizeof variant);
            found = has_flag(quoted[q], "--schedule", name, sizeof name) &&
                    !strcmp(name, forms[i].sch->name) &&
                    has_flag(quoted[q], "--stages", stages, sizeof stages) &&
                    !strcmp(stages, "4") && has_flag(quoted[q], "--versions", NULL, 0) &&
                    (forms[i].variant ? has_variant && !strcmp(variant, forms[i].variant)
                                      : !has_variant);
        }
        if (!found)
            report_add(report, &count, "  %s: docs/semantics.md quotes no D = 4 program with "
                       "--versions for it (a ```text block opening with \"" QUOTE_PREFIX
                       "--schedule %s%s%s --stages 4 --length 8 --versions\")", forms[i].label,
                       forms[i].sch->name, forms[i].variant ? " --variant " : "",
                       forms[i].variant ? forms[i].variant : "");
    }
    for (int q = 0; q < nquotes; q++)
        free(quoted[q]);
    assert_report(count, report, "quoted program(s) to fix");
}
END_TEST

/* ---- docs/extending.md's example schedule ---- */

#define EX_MARK "<!-- test_docs: example schedule -->"
#define EX_OUT_MARK "<!-- test_docs: example output -->"
#define QUOTED_MARK "<!-- test_docs: quoted from "

/* The name of the schedule instance the example defines ("const struct pb_schedule NAME
 * = {"), into name. */
static bool example_instance(const char *src, char *name, size_t cap)
{
    static const char decl[] = "const struct pb_schedule ";
    for (const char *p = src; (p = strstr(p, decl)); p++) {
        const char *id = p + strlen(decl);
        size_t n = 0;
        while (isalnum((unsigned char)id[n]) || id[n] == '_')
            n++;
        const char *after = id + n;
        while (*after == ' ')
            after++;
        if (n > 0 && n < cap && *after == '=') {
            memcpy(name, id, n);
            name[n] = 0;
            return true;
        }
    }
    return false;
}

/* The integer after `flag` in args, or dflt. */
static int flag_int(const char *args, const char *flag, int dflt)
{
    char v[32];
    return has_flag(args, flag, v, sizeof v) ? atoi(v) : dflt;
}

/* The example compiles with the project's warnings against the source tree's include
 * root, links with the static library ($PB_LIBRARY) into a program that builds, validates
 * and prints its programs, and that output is the one docs/extending.md quotes. */
START_TEST(test_example_schedule)
{
    char *text = read_source("docs/extending.md");
    char *lang, *src, *olang, *out_block;
    ck_assert_msg(block_after(text, EX_MARK, &lang, &src) != NULL,
                  "docs/extending.md has no fenced block after %s", EX_MARK);
    ck_assert_msg(!strcmp(lang, "c"), "the example schedule's block is ```%s, not ```c", lang);
    ck_assert_msg(block_after(text, EX_OUT_MARK, &olang, &out_block) != NULL,
                  "docs/extending.md has no fenced block after %s", EX_OUT_MARK);
    ck_assert_msg(!strncmp(out_block, QUOTE_PREFIX, strlen(QUOTE_PREFIX)),
                  "the example output does not open with \"%s...\"", QUOTE_PREFIX);
    char inst[128];
    ck_assert_msg(example_instance(src, inst, sizeof inst),
                  "the example defines no `const struct pb_schedule NAME = {...}`");

    /* the quoted command names the example's schedule, and fixes D, N and M */
    size_t n = strcspn(out_block, "\n");
    char *args = strndup(out_block + strlen(QUOTE_PREFIX), n - strlen(QUOTE_PREFIX));
    const char *expect = out_block + n + 1;
    char sched[64], name_field[80];
    ck_assert_msg(has_flag(args, "--schedule", sched, sizeof sched), "%s", args);
    snprintf(name_field, sizeof name_field, ".name = \"%s\"", sched);
    ck_assert_msg(strstr(src, name_field) != NULL, "the example's output quotes --schedule %s "
                  "but the example has no %s", sched, name_field);
    int D = flag_int(args, "--stages", 0), N = flag_int(args, "--length", 8);
    int M = flag_int(args, "--microbatches", D);
    ck_assert_msg(D >= 1 && D <= 64 && N >= 1 && M >= 1, "%s", args);

    char dir[] = "/tmp/pb-docs-XXXXXX";
    ck_assert(mkdtemp(dir) != NULL);
    char path[4096];
    snprintf(path, sizeof path, "%s/example.c", dir);
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fputs(src, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/main.c", dir);
    f = fopen(path, "w");
    ck_assert(f != NULL);
    fprintf(f,
            "/* main.c — runs docs/extending.md's example schedule (written by test_docs). */\n"
            "#include <stdio.h>\n\n#include \"harness/ir/program.h\"\n\n"
            "extern const struct pb_schedule %s;\n\n"
            "int main(void)\n{\n"
            "    struct pb_pipe p = {.stages = %d, .length = %d, .microbatches = %d,\n"
            "                        .optimizer = PB_OPT_SGD};\n"
            "    struct pb_program pr[%d];\n    struct pb_err e;\n"
            "    if (pb_programs_build(&%s, &p, pr, &e) || pb_programs_validate(&p, pr, 1, &e)) {\n"
            "        fprintf(stderr, \"%%s\\n\", e.msg);\n        return 1;\n    }\n"
            "    for (int k = 0; k < p.stages; k++)\n"
            "        pb_program_print(stdout, &p, &pr[k], PB_PRINT_VERSIONS);\n"
            "    pb_programs_finish(pr, p.stages);\n    return 0;\n}\n",
            inst, D, N, M, D, inst);
    fclose(f);

    const char *lib = getenv("PB_LIBRARY");
    ck_assert_msg(lib != NULL, "PB_LIBRARY is not set (run through meson test)");
    char libcopy[4096];
    snprintf(libcopy, sizeof libcopy, "%s", lib);
    const char *build_root = dirname(libcopy);  /* where pb_config.h is */
    static const char flags[] = "-std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE";
    char cmd[8192], *log;
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cc %s -I'%s' -I'%s' -c example.c -o example.o && "
             "cc %s -I'%s' -I'%s' -c main.c -o main.o && "
             "cc -o example main.o example.o '%s' -lm -lpthread",
             dir, flags, PB_SOURCE_ROOT, build_root, flags, PB_SOURCE_ROOT, build_root, lib);
    char *run_log = NULL;
    int rc = run_capture(cmd, &log), run_rc = -1;
    if (rc == 0) {
        char exe[4200];
        snprintf(exe, sizeof exe, "'%s/example'", dir);
        run_rc = run_capture(exe, &run_log);
    }
    char rm[4200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(rm), 0);
    ck_assert_msg(rc == 0, "docs/extending.md's example schedule does not build (exit %d):\n%s\n"
                  "command: %s", rc, log, cmd);
    ck_assert_msg(run_rc == 0 && !strcmp(run_log, expect),
                  "docs/extending.md's example schedule (exit %d) prints:\n%sbut the document "
                  "quotes:\n%s", run_rc, run_log, expect);
    free(log);
    free(run_log);
    free(args);
    free(lang);
    free(src);
    free(olang);
    free(out_block);
    free(text);
}
END_TEST

/* Every line of a block marked "quoted from PATH" is a line of PATH (blanks around it
 * ignored), but for elisions ("...") and the lines that add the example schedule. */
START_TEST(test_quoted_snippets)
{
    static char report[REPORT_CAP];
    report[0] = 0;
    int count = 0, blocks = 0;
    char *text = read_source("docs/extending.md");
    char *lang, *src;
    ck_assert(block_after(text, EX_MARK, &lang, &src) != NULL);
    char inst[128], stem[128], dashed[128];
    ck_assert(example_instance(src, inst, sizeof inst));
    const char *pfx = "pb_schedule_";
    snprintf(stem, sizeof stem, "%s", strncmp(inst, pfx, strlen(pfx)) ? inst : inst + strlen(pfx));
    snprintf(dashed, sizeof dashed, "%s", stem);
    for (char *c = dashed; *c; c++)
        if (*c == '_')
            *c = '-';
    free(lang);
    free(src);
    for (const char *m = text; (m = strstr(m, QUOTED_MARK)); m++) {
        char rel[256];
        const char *r = m + strlen(QUOTED_MARK);
        size_t len = strcspn(r, " \n");
        ck_assert(len < sizeof rel);
        memcpy(rel, r, len);
        rel[len] = 0;
        char *file = read_source(rel), *body;
        ck_assert_msg(next_block(r + len, &lang, &body) != NULL, "no block after %s%s", QUOTED_MARK,
                      rel);
        blocks++;
        for (const char *l = body; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0)) {
            char want[512];
            trimmed(l, strcspn(l, "\n"), want, sizeof want);
            if (!*want || !strcmp(want, "...") || strstr(want, stem) || strstr(want, dashed))
                continue;
            bool found = false;
            for (const char *fl = file; *fl && !found;
                 fl += strcspn(fl, "\n") + (fl[strcspn(fl, "\n")] != 0)) {
                char have[512];
                trimmed(fl, strcspn(fl, "\n"), have, sizeof have);
                found = !strcmp(have, want);
            }
            if (!found)
                report_add(report, &count, "  docs/extending.md quotes \"%s\" from %s, which "
                           "has no such line", want, rel);
        }
        free(lang);
        free(body);
        free(file);
    }
    free(text);
    ck_assert_msg(blocks >= 3, "docs/extending.md quotes %d snippets (registry, declaration, "
                  "meson.build expected)", blocks);
    assert_report(count, report, "quoted line(s) to fix");
}
END_TEST

/* design §4.2 lists the ops of enum pb_backend_op by the names the code gives them
 * (pb_backend_op_names), all of them and in their order: an op added to the interface
 * is added to the design's list. */
START_TEST(test_backend_op_list)
{
    char *doc = read_source("docs/design.md");
    const char *lead = "implements (";
    char *list = strstr(doc, lead);
    ck_assert_msg(list != NULL, "docs/design.md: no \"%s\" list of the backend's ops", lead);
    list += strlen(lead);
    char *end = strchr(list, ':');
    ck_assert_msg(end != NULL, "docs/design.md: the backend's op list does not end with ':'");
    *end = 0;
    char *save = NULL;
    int i = 0;
    for (char *tok = strtok_r(list, ", \n", &save); tok; tok = strtok_r(NULL, ", \n", &save), i++) {
        ck_assert_msg(i < PB_BOP_NOPS, "docs/design.md §4.2 lists more ops than backend.h has "
                      "(%s)", tok);
        ck_assert_msg(!strcmp(tok, pb_backend_op_names[i]), "docs/design.md §4.2's op %d is "
                      "%s, backend.h's is %s", i + 1, tok, pb_backend_op_names[i]);
    }
    ck_assert_msg(i == PB_BOP_NOPS, "docs/design.md §4.2 lists %d ops, backend.h has %d (the "
                  "next: %s)", i, PB_BOP_NOPS, i < PB_BOP_NOPS ? pb_backend_op_names[i] : "");
    free(doc);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("docs");
    TCase *tc = tcase_create("references");
    tcase_add_test(tc, test_reference_rules);
    tcase_add_test(tc, test_source_references);
    tcase_add_test(tc, test_cli_references);
    tcase_add_test(tc, test_doc_references);
    tcase_add_test(tc, test_backend_op_list);
    suite_add_tcase(s, tc);
    tc = tcase_create("quotes");
    tcase_add_test(tc, test_quoted_programs);
    tcase_add_test(tc, test_example_schedule);
    tcase_add_test(tc, test_quoted_snippets);
    suite_add_tcase(s, tc);
    return s;
}
