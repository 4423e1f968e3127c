/* tests/fuzz/fuzz_util.c — the targets' scratch folder, files and input parts (fuzz_util.h). */
#include "tests/fuzz/fuzz_util.h"

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[4096];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void remove_dir(void)
{
    if (dir[0])
        nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *pb_fuzz_dir(void)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/pb-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir))
            pb_fuzz_fail("cannot make a scratch folder %s: %s", dir, strerror(errno));
        atexit(remove_dir);
    }
    return dir;
}

static int remove_below(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    if (ftw->level > 0)
        remove(path);
    return 0;
}

void pb_fuzz_reset(void)
{
    nftw(pb_fuzz_dir(), remove_below, 16, FTW_DEPTH | FTW_PHYS);
}

void pb_fuzz_mkdir(const char *rel)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", pb_fuzz_dir(), rel);
    for (char *p = path + strlen(dir) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(path, 0755);
            *p = '/';
        }
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        pb_fuzz_fail("cannot make %s: %s", path, strerror(errno));
}

void pb_fuzz_write(const char *rel, const void *data, size_t n)
{
    const char *slash = strrchr(rel, '/');
    if (slash) {
        char parent[4096];
        snprintf(parent, sizeof parent, "%.*s", (int)(slash - rel), rel);
        pb_fuzz_mkdir(parent);
    }
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", pb_fuzz_dir(), rel);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0)
        pb_fuzz_fail("cannot write %s: %s", path, strerror(errno));
}

int pb_fuzz_split(const uint8_t *data, size_t n, struct pb_fuzz_part *parts, int max)
{
    const size_t sep = sizeof PB_FUZZ_SEP - 1;
    if (n == 0) {
        parts[0] = (struct pb_fuzz_part){data, 0};
        return 1;
    }
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; k < max - 1 && i + sep <= n; i++)
        if (!memcmp(data + i, PB_FUZZ_SEP, sep)) {
            parts[k++] = (struct pb_fuzz_part){data + start, i - start};
            start = i + sep;
            i = start - 1;
        }
    parts[k++] = (struct pb_fuzz_part){data + start, n - start};
    return k;
}

void pb_fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pipebench fuzz: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void pb_fuzz_refused(const char *msg)
{
    PB_FUZZ_ASSERT(msg && msg[0], "a refused input without a message");
    if (getenv("PB_FUZZ_VERBOSE"))
        fprintf(stderr, "pipebench fuzz: refused: %s\n", msg);
}

void pb_fuzz_accepted(const char *what)
{
    if (getenv("PB_FUZZ_VERBOSE"))
        fprintf(stderr, "pipebench fuzz: accepted: %s\n", what);
}
