/* tests/compute/cuda/test_cuda_ptx.c — the CUDA kernels' code generation keeps the CPU's per-element bits
 * (shared/CUDA.md §5), read from their PTX: each .cu file of PB_CUDA_PTX_FILES is compiled
 * with nvcc -ptx and the project's own CUDA flags (PB_NVCC, PB_CUDA_PTX_ARGS: tests/meson.build
 * passes the cuda_args of the top meson.build), and the PTX must show
 *   1. no .approx and no .ftz on any instruction, save rcp.approx.ftz.f64: the seed libdevice's
 *      double log and division refine by Newton steps (fma.rn.f64) to full accuracy. This
 *      also catches the fast intrinsics (__expf, __fdividef), which ignore the flags;
 *   2. f32 division only as div.rn.f32, square root only sqrt.rn.f32, reciprocal only
 *      rcp.rn.f32 (IEEE, correctly rounded);
 *   3. no add, sub or mul of f32 or f64 without a rounding mode: ptxas may fuse a bare
 *      mul.f32 and add.f32 into an FMA, .rn forbids it (nvcc writes .rn under -fmad=false);
 *   4. in each kernel (its .entry, plus each .func it calls, once per call site), as many
 *      f32 FMAs (fma.*.f32, mad.*.f32) as its source makes explicitly.
 * Rule 4's count from the source: the calls of fmaf and PB_K_FMA (fmaf on a CUDA device,
 * harness/compute/kernels/kernel.h) in the kernel's body, plus, for every call in that body
 * of a function defined in the .cu or in a project header it includes (directly or not),
 * that function's own count, each call site once. Comments and preprocessor lines are left
 * out. Conditional calls count too: a branch not taken at run time is still in the code.
 * This is the count of the compiled code as long as no fmaf sits in a loop the compiler
 * unrolls, so that is the rule for the checked kernels: one thread per element, and a loop
 * with an fmaf in it written `#pragma unroll 1` (an unrolled copy fails the check). The
 * kernels checked today have no fmaf in any loop (Philox rounds, row and tile walks, trees).
 * Needs nvcc, no GPU: it runs wherever the CUDA backend is built. A second case compiles the
 * same files with -fmad=true and with -use_fast_math and requires the checks to fail. */
#include <check.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pb_config.h"

#define MAX_ARGS 64
#define MAX_FUNCS 256

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

static const char *env_or_fail(const char *name)
{
    const char *v = getenv(name);
    ck_assert_msg(v && *v, "%s is not set (tests/meson.build sets it)", name);
    return v;
}

/* appends a formatted line to err [cap] (cut short when full) */
static void note(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(char *err, size_t cap, const char *fmt, ...)
{
    size_t used = strlen(err);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + used, cap - used, fmt, ap);
    va_end(ap);
}

/* ---- PTX ---- */

/* PB_CUDA_PTX_ARGS split at newlines into argv (pointers into a copy), then extra (NULL:
 * none) with `drop` flags removed (exact matches). Returns argc. */
static int nvcc_argv(char **argv, char *buf, const char *const *extra, const char *const *drop)
{
    int argc = 0;
    argv[argc++] = (char *)env_or_fail("PB_NVCC");
    for (char *tok = strtok(buf, "\n"); tok; tok = strtok(NULL, "\n")) {
        bool dropped = false;
        for (int i = 0; drop && drop[i]; i++)
            dropped |= !strcmp(tok, drop[i]);
        if (!dropped && argc < MAX_ARGS - 8)
            argv[argc++] = tok;
    }
    for (int i = 0; extra && extra[i]; i++)
        argv[argc++] = (char *)extra[i];
    return argc;
}

/* The PTX of source file src (relative to the source root), compiled with the project's
 * flags plus extra, less drop; NULL when nvcc fails (its messages on stderr). */
static char *compile_ptx(const char *src, const char *const *extra, const char *const *drop)
{
    char *argv[MAX_ARGS];
    char *buf = strdup(env_or_fail("PB_CUDA_PTX_ARGS"));
    int argc = nvcc_argv(argv, buf, extra, drop);
    char path[4096], inc_src[4200], inc_build[4200], out[] = "/tmp/pb_ptx_XXXXXX";
    int fd = mkstemp(out);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(path, sizeof path, "%s/%s", PB_SOURCE_ROOT, src);
    snprintf(inc_src, sizeof inc_src, "-I%s", PB_SOURCE_ROOT);
    snprintf(inc_build, sizeof inc_build, "-I%s", PB_BUILD_ROOT);
    char *tail[] = {"-D_GNU_SOURCE", inc_src, inc_build, "-ptx", path, "-o", out, NULL};
    for (int i = 0; tail[i]; i++)
        argv[argc++] = tail[i];
    argv[argc] = NULL;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    char *ptx = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? read_text(out) : NULL;
    unlink(out);
    free(buf);
    return ptx;
}

/* The name of a PTX function: its mangled C++ name's identifier, _Z<len><name>... or, in a
 * namespace (nvcc's _INTERNAL_ one for some static functions), _ZN<len><ns>...<len><name>E...:
 * the last component. */
static void ptx_plain_name(const char *mangled, char *name, size_t cap)
{
    const char *p = mangled;
    size_t n = strcspn(p, "( \t\n");
    if (p[0] == '_' && p[1] == 'Z') {
        bool nested = p[2] == 'N';
        const char *q = p + 2 + nested;
        while (isdigit((unsigned char)*q)) {
            char *end;
            size_t len = strtoul(q, &end, 10);
            if (strnlen(end, len) < len)
                break;
            p = end;
            n = len;
            q = end + len;
            if (!nested)
                break;
        }
    }
    snprintf(name, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
}

struct ptx_func {
    char name[128], mangled[256];
    bool entry;
    int fma;           /* fma.*.f32 and mad.*.f32 in its own body */
    char calls[32][256];  /* mangled names it calls, a call site each */
    int ncalls;
};

/* Checks rules 1–3 on every instruction of ptx (violations appended to err) and splits it
 * into functions with their f32 FMA counts. Returns the count of functions. */
static int ptx_scan(const char *ptx, const char *file, struct ptx_func *fs, int cap, char *err,
                    size_t errcap, int *nviol)
{
    int nf = 0, depth = 0;
    struct ptx_func *cur = NULL;
    bool callee_next = false;  /* a call's callee stands on the next line */
    for (const char *line = ptx; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        char l[1024];
        snprintf(l, sizeof l, "%.*s", (int)(len < sizeof l ? len : sizeof l - 1), line);
        line += len + (eol != NULL);
        char *c = strstr(l, "//");
        if (c)
            *c = 0;
        char *e = strstr(l, ".entry ");
        char *fn = strstr(l, ".func ");
        if (depth == 0 && (e || fn) && nf < cap) {
            cur = &fs[nf++];
            memset(cur, 0, sizeof *cur);
            cur->entry = e != NULL;
            const char *p = e ? e + 7 : fn + 6;
            while (*p == ' ')
                p++;
            if (*p == '(') {  /* .func (.param ... retval) name( */
                p = strchr(p, ')');
                p = p ? p + 1 : "";
                while (*p == ' ')
                    p++;
            }
            snprintf(cur->mangled, sizeof cur->mangled, "%.*s", (int)strcspn(p, "( \t;"), p);
            ptx_plain_name(cur->mangled, cur->name, sizeof cur->name);
            if (strchr(l, ';') && !strchr(l, '{'))  /* a declaration, no body */
                nf--, cur = NULL;
        }
        for (char *q = l; *q; q++)
            depth += *q == '{' ? 1 : *q == '}' ? -1 : 0;
        /* the opcode: the first token, past a predicate guard */
        char *op = l;
        while (isspace((unsigned char)*op))
            op++;
        if (*op == '@') {
            op += strcspn(op, " \t");
            while (isspace((unsigned char)*op))
                op++;
        }
        char opc[64];
        snprintf(opc, sizeof opc, "%.*s", (int)strcspn(op, " \t;"), op);
        if (callee_next && *op) {
            snprintf(cur->calls[cur->ncalls++], sizeof cur->calls[0], "%.*s",
                     (int)strcspn(op, ", \t;"), op);
            callee_next = false;
            continue;
        }
        if (!*opc || *opc == '.' || *opc == '$' || *opc == '{' || *opc == '}')
            continue;
        size_t ol = strlen(opc);
        bool f32 = ol > 4 && !strcmp(opc + ol - 4, ".f32");
        bool f64 = ol > 4 && !strcmp(opc + ol - 4, ".f64");
        const char *bad = NULL;
        if ((strstr(opc, ".approx") || strstr(opc, ".ftz")) && strcmp(opc, "rcp.approx.ftz.f64"))
            bad = "approximate or flushing to zero";
        else if (f32 && !strncmp(opc, "div.", 4) && strcmp(opc, "div.rn.f32"))
            bad = "a division other than div.rn.f32";
        else if (f32 && !strncmp(opc, "sqrt.", 5) && strcmp(opc, "sqrt.rn.f32"))
            bad = "a square root other than sqrt.rn.f32";
        else if (f32 && !strncmp(opc, "rcp.", 4) && strcmp(opc, "rcp.rn.f32"))
            bad = "a reciprocal other than rcp.rn.f32";
        else if ((f32 || f64) && (!strcmp(opc, "add.f32") || !strcmp(opc, "sub.f32") ||
                                  !strcmp(opc, "mul.f32") || !strcmp(opc, "add.f64") ||
                                  !strcmp(opc, "sub.f64") || !strcmp(opc, "mul.f64")))
            bad = "no rounding mode (ptxas may fuse it into an FMA)";
        if (bad) {
            (*nviol)++;
            note(err, errcap, "  %s, %s: %s: %s\n", file, cur ? cur->name : "(top)", opc, bad);
        }
        if (!cur)
            continue;
        if (f32 && (!strncmp(opc, "fma.", 4) || !strncmp(opc, "mad.", 4)))
            cur->fma++;
        if (!strncmp(opc, "call", 4) && cur->ncalls < 32) {
            /* call.uni (retval), name, (args); or call.uni name, (args); the name and the
             * arguments may stand on lines of their own */
            const char *p = op + strlen(opc);
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p == '(')
                p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p);
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p)
                snprintf(cur->calls[cur->ncalls++], sizeof cur->calls[0], "%.*s",
                         (int)strcspn(p, ", \t;"), p);
            else
                callee_next = true;
        }
    }
    return nf;
}

/* f32 FMAs of function i with those of the .func it calls (each call once; depth-bounded) */
static int ptx_fma_total(const struct ptx_func *fs, int nf, int i, int depth)
{
    int n = fs[i].fma;
    for (int k = 0; k < fs[i].ncalls && depth < 16; k++)
        for (int j = 0; j < nf; j++)
            if (!strcmp(fs[j].mangled, fs[i].calls[k]))
                n += ptx_fma_total(fs, nf, j, depth + 1);
    return n;
}

/* ---- source ---- */

/* src with comments, string and character literals and preprocessor directives blanked
 * (newlines kept) */
static void blank_source(char *s)
{
    bool line_start = true;
    char *p = s;
    while (*p) {
        if (line_start) {
            char *q = p;
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q == '#') {  /* a directive, with its continuation lines */
                char prev = 0;
                for (; *p && !(*p == '\n' && prev != '\\'); p++) {
                    prev = *p;
                    *p = ' ';
                }
                continue;
            }
        }
        if (p[0] == '/' && p[1] == '*') {
            char *end = strstr(p + 2, "*/");
            char *stop = end ? end + 2 : p + strlen(p);
            for (; p < stop; p++)
                *p = *p == '\n' ? '\n' : ' ';
            line_start = false;
            continue;
        }
        if (p[0] == '/' && p[1] == '/') {
            for (; *p && *p != '\n'; p++)
                *p = ' ';
            continue;
        }
        if (*p == '"' || *p == '\'') {
            char quote = *p;
            *p++ = ' ';
            for (; *p && *p != quote && *p != '\n'; p++) {
                if (*p == '\\' && p[1])
                    *p++ = ' ';
                *p = ' ';
            }
            if (*p == quote)
                *p++ = ' ';
            line_start = false;
            continue;
        }
        line_start = *p == '\n';
        p++;
    }
}

struct src_func {
    char name[128];
    const char *body, *body_end;  /* inside the braces */
    bool global;
};

static bool is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

static const char *const keywords[] = {"if", "for", "while", "switch", "return", "sizeof",
                                       "do", "else", "case", "defined", NULL};

/* Function definitions in blanked text s: an identifier, a balanced (...) and a body {...}. */
static int find_defs(const char *s, struct src_func *fs, int nf, int cap)
{
    for (const char *p = s; *p; p++) {
        if (!is_ident(*p) || (p > s && is_ident(p[-1])))
            continue;
        const char *id = p;
        while (is_ident(*p))
            p++;
        size_t idl = (size_t)(p - id);
        const char *q = p;
        while (isspace((unsigned char)*q))
            q++;
        if (*q != '(' || isdigit((unsigned char)*id)) {
            p--;
            continue;
        }
        int d = 0;
        const char *r = q;
        for (; *r; r++) {
            d += *r == '(' ? 1 : *r == ')' ? -1 : 0;
            if (d == 0)
                break;
        }
        if (!*r)
            break;
        r++;
        while (isspace((unsigned char)*r))
            r++;
        bool kw = false;
        for (int k = 0; keywords[k]; k++)
            kw |= strlen(keywords[k]) == idl && !strncmp(keywords[k], id, idl);
        if (*r != '{' || kw || nf >= cap) {
            p--;
            continue;
        }
        const char *b = r + 1;
        d = 1;
        for (r = b; *r && d; r++)
            d += *r == '{' ? 1 : *r == '}' ? -1 : 0;
        struct src_func *f = &fs[nf++];
        snprintf(f->name, sizeof f->name, "%.*s", (int)idl, id);
        f->body = b;
        f->body_end = r - 1;
        /* __global__ in the declaration: back to the end of the previous statement */
        const char *decl = id;
        while (decl > s && decl[-1] != ';' && decl[-1] != '}')
            decl--;
        f->global = false;
        for (const char *g = strstr(decl, "__global__"); g && g < id; g = strstr(g + 1, "__global__"))
            f->global = true;
        p = r - 1;
    }
    return nf;
}

/* fmaf calls in [b, e) with those of the functions it calls (each call site once) */
static int src_fma(const struct src_func *fs, int nf, const char *b, const char *e, int depth)
{
    int n = 0;
    for (const char *p = b; p < e; p++) {
        if (!is_ident(*p) || (p > b && is_ident(p[-1])))
            continue;
        const char *id = p;
        while (p < e && is_ident(*p))
            p++;
        size_t idl = (size_t)(p - id);
        const char *q = p;
        while (q < e && isspace((unsigned char)*q))
            q++;
        p--;
        if (q >= e || *q != '(')
            continue;
        if ((idl == 4 && !strncmp(id, "fmaf", 4)) || (idl == 8 && !strncmp(id, "PB_K_FMA", 8))) {
            n++;
            continue;
        }
        for (int i = 0; i < nf && depth < 16; i++)
            if (strlen(fs[i].name) == idl && !strncmp(fs[i].name, id, idl) &&
                !(fs[i].body <= id && id < fs[i].body_end))
                n += src_fma(fs, nf, fs[i].body, fs[i].body_end, depth + 1);
    }
    return n;
}

/* The project headers path includes (relative to the source root), recursively, each once:
 * their blanked texts appended to texts. */
static int load_includes(const char *raw, char **texts, char (*names)[256], int nt, int cap)
{
    for (const char *p = strstr(raw, "#include \""); p; p = strstr(p + 1, "#include \"")) {
        char rel[256], path[4400];
        snprintf(rel, sizeof rel, "%.*s", (int)strcspn(p + 10, "\""), p + 10);
        bool seen = false;
        for (int i = 0; i < nt; i++)
            seen |= !strcmp(names[i], rel);
        snprintf(path, sizeof path, "%s/%s", PB_SOURCE_ROOT, rel);
        char *t = seen || nt >= cap ? NULL : read_text(path);
        if (!t)
            continue;  /* pb_config.h (generated) and system headers have no kernels */
        snprintf(names[nt], sizeof names[0], "%s", rel);
        char *copy = strdup(t);
        texts[nt++] = t;
        nt = load_includes(copy, texts, names, nt, cap);
        free(copy);
        blank_source(t);
    }
    return nt;
}

/* Rules 1–4 on one file compiled with extra/drop flags: the count of violations, described
 * in err; -1 when nvcc fails. */
static int check_file(const char *rel, const char *const *extra, const char *const *drop,
                      char *err, size_t errcap, int *nkernels)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", PB_SOURCE_ROOT, rel);
    char *src = read_text(path);
    ck_assert_msg(src != NULL, "cannot read %s", path);
    char *ptx = compile_ptx(rel, extra, drop);
    if (!ptx) {
        free(src);
        return -1;
    }
    static struct ptx_func pf[MAX_FUNCS];
    int nviol = 0;
    int npf = ptx_scan(ptx, rel, pf, MAX_FUNCS, err, errcap, &nviol);

    char *texts[64], names[64][256];
    int nt = load_includes(src, texts, names, 0, 64);
    blank_source(src);
    static struct src_func sf[MAX_FUNCS];
    int nsf = find_defs(src, sf, 0, MAX_FUNCS);
    int nkernel_defs = nsf;
    for (int i = 0; i < nt; i++)
        nsf = find_defs(texts[i], sf, nsf, MAX_FUNCS);

    *nkernels = 0;
    for (int i = 0; i < nkernel_defs; i++) {
        if (!sf[i].global)
            continue;
        (*nkernels)++;
        int want = src_fma(sf, nsf, sf[i].body, sf[i].body_end, 0), got = -1;
        for (int j = 0; j < npf; j++)
            if (pf[j].entry && !strcmp(pf[j].name, sf[i].name))
                got = ptx_fma_total(pf, npf, j, 0);
        if (got != want) {
            nviol++;
            if (got < 0)
                note(err, errcap, "  %s, %s: no .entry in the PTX\n", rel, sf[i].name);
            else
                note(err, errcap, "  %s, %s: %d f32 FMAs in the PTX, the source makes %d\n", rel,
                     sf[i].name, got, want);
        }
    }
    for (int j = 0; j < npf; j++) {
        bool known = !pf[j].entry;
        for (int i = 0; i < nkernel_defs; i++)
            known |= sf[i].global && !strcmp(pf[j].name, sf[i].name);
        if (!known) {
            nviol++;
            note(err, errcap, "  %s: .entry %s has no __global__ source\n", rel, pf[j].name);
        }
    }
    for (int i = 0; i < nt; i++)
        free(texts[i]);
    free(src);
    free(ptx);
    return nviol;
}

/* the files of PB_CUDA_PTX_FILES (newline-separated), into files (pointers into buf) */
static int ptx_files(char *buf, char **files, int cap)
{
    int n = 0;
    for (char *tok = strtok(buf, "\n"); tok && n < cap; tok = strtok(NULL, "\n"))
        files[n++] = tok;
    return n;
}

START_TEST(test_build_flags_keep_cpu_bits)
{
    char *buf = strdup(env_or_fail("PB_CUDA_PTX_FILES")), *files[32];
    int nfiles = ptx_files(buf, files, 32);
    ck_assert_int_gt(nfiles, 0);
    static char err[65536];
    int total = 0, kernels = 0;
    for (int i = 0; i < nfiles; i++) {
        int nk = 0;
        int v = check_file(files[i], NULL, NULL, err, sizeof err, &nk);
        ck_assert_msg(v >= 0, "nvcc failed on %s", files[i]);
        ck_assert_msg(nk > 0, "%s: no __global__ kernel found in the source", files[i]);
        total += v;
        kernels += nk;
    }
    if (total)
        fprintf(stderr, "the PTX of the CUDA kernels:\n%s", err);
    ck_assert_msg(total == 0, "%d violation(s) in the PTX of %d kernels (listed above)", total,
                  kernels);
    free(buf);
}
END_TEST

/* The checks have teeth: the same files with the flags CUDA.md §5 forbids fail them. */
START_TEST(test_bad_flags_are_caught)
{
    static const char *const fmad_drop[] = {"-fmad=false", NULL};
    static const char *const fmad_extra[] = {"-fmad=true", NULL};
    static const char *const fast_drop[] = {"-fmad=false", "-prec-div=true", "-prec-sqrt=true",
                                            "-ftz=false", NULL};
    static const char *const fast_extra[] = {"-use_fast_math", NULL};
    struct {
        const char *what;
        const char *const *extra, *const *drop;
    } bad[] = {{"-fmad=true", fmad_extra, fmad_drop}, {"-use_fast_math", fast_extra, fast_drop}};
    char *buf = strdup(env_or_fail("PB_CUDA_PTX_FILES")), *files[32];
    int nfiles = ptx_files(buf, files, 32);
    static char err[65536];
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        int total = 0;
        for (int i = 0; i < nfiles && total == 0; i++) {  /* until one file fails */
            int nk = 0;
            err[0] = 0;
            int v = check_file(files[i], bad[b].extra, bad[b].drop, err, sizeof err, &nk);
            ck_assert_msg(v >= 0, "nvcc failed on %s with %s", files[i], bad[b].what);
            total += v;
        }
        ck_assert_msg(total > 0, "compiled with %s, the kernels passed the PTX checks",
                      bad[b].what);
    }
    free(buf);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("cuda_ptx");
    TCase *tc = tcase_create("ptx");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_build_flags_keep_cpu_bits);
    tcase_add_test(tc, test_bad_flags_are_caught);
    suite_add_tcase(s, tc);
    return s;
}
