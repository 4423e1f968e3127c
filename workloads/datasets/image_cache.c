/* workloads/datasets/image_cache.c — the uint8 cache files of decoded images
 * (image_cache.h): where they live, their header, mapping and atomic writing. */
#include "workloads/datasets/image_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "harness/base/atomic_file.h"

static const char magic[8] = "PBU8IMG";
enum { CRC_AT = 60 };   /* the header's last 4 bytes: the pixels' CRC-32 */

uint64_t pb_fnv1a(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* $XDG_CACHE_HOME/pipebench when that is an absolute path, else ~/.cache/pipebench. */
static char *cache_folder(void)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    char buf[4096];
    if (xdg && xdg[0] == '/') {
        snprintf(buf, sizeof buf, "%s/pipebench", xdg);
        return pb_xstrdup(buf);
    }
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : NULL;
    }
    if (!home || !*home)
        return NULL;
    snprintf(buf, sizeof buf, "%s/.cache/pipebench", home);
    return pb_xstrdup(buf);
}

char *pb_image_cache_path(const struct pb_image_cache_id *id, bool beside)
{
    char buf[4096 + 256];
    if (beside) {
        snprintf(buf, sizeof buf, "%s/pipebench-%s.u8cache", id->dir, id->split);
        return pb_xstrdup(buf);
    }
    char *folder = cache_folder();
    if (!folder)
        return NULL;
    /* one cache per dataset folder: named by a hash of its absolute path */
    char real[PATH_MAX];
    const char *where = realpath(id->dir, real) ? real : id->dir;
    uint64_t h = pb_fnv1a(PB_FNV_OFFSET, where, strlen(where));
    snprintf(buf, sizeof buf, "%s/%s-%016llx-%s.u8cache", folder, id->dataset,
             (unsigned long long)h, id->split);
    free(folder);
    return pb_xstrdup(buf);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The header of id's cache holding n samples. */
static void header(const struct pb_image_cache_id *id, int n, unsigned char *h)
{
    memset(h, 0, PB_IMAGE_CACHE_HEADER);
    memcpy(h, magic, sizeof magic);
    put32(h + 8, PB_IMAGE_CACHE_VERSION);
    put32(h + 12, PB_IMAGE_CACHE_HEADER);
    put32(h + 16, (uint32_t)id->fingerprint);
    put32(h + 20, (uint32_t)(id->fingerprint >> 32));
    put32(h + 24, (uint32_t)id->n_total);
    put32(h + 28, (uint32_t)n);
    put32(h + 32, (uint32_t)id->c);
    put32(h + 36, (uint32_t)id->h);
    put32(h + 40, (uint32_t)id->w);
    snprintf((char *)h + 44, 16, "%s", id->split);
}

/* Maps path when it is a valid cache of id: header equal but for the count, which is at
 * most the split's, and the checksum, the size exactly header plus that many samples;
 * -1 with a message when such a cache's pixels do not match the checksum. */
static int try_map(const struct pb_image_cache_id *id, const char *path,
                   struct pb_image_cache_map *out, struct pb_err *e)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    struct stat st;
    unsigned char h[PB_IMAGE_CACHE_HEADER], want[PB_IMAGE_CACHE_HEADER];
    size_t per = (size_t)id->c * id->h * id->w;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || read(fd, h, sizeof h) != (ssize_t)sizeof h) {
        close(fd);
        return 0;
    }
    uint32_t n = get32(h + 28);
    header(id, (int)n, want);
    if (memcmp(h, want, CRC_AT) != 0 || n > (uint32_t)id->n_total ||
        (uint64_t)st.st_size != PB_IMAGE_CACHE_HEADER + (uint64_t)n * per || n == 0) {
        close(fd);
        return 0;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return 0;
    const uint8_t *pix = (const uint8_t *)m + PB_IMAGE_CACHE_HEADER;
    uint32_t sum = (uint32_t)crc32_z(crc32_z(0, NULL, 0), pix, (size_t)n * per);
    if (sum != get32(h + CRC_AT)) {
        munmap(m, (size_t)st.st_size);
        return pb_err_set(e, "%s: the decoded-image cache %s is damaged (its pixels do not match "
                             "their checksum); delete it and run again to rebuild it",
                          id->dataset, path);
    }
    out->map = m;
    out->len = (size_t)st.st_size;
    out->pix = (const uint8_t *)m + PB_IMAGE_CACHE_HEADER;
    out->n = (int)n;
    out->path = pb_xstrdup(path);
    return 0;
}

void pb_image_cache_unmap(struct pb_image_cache_map *m)
{
    if (m->map)
        munmap(m->map, m->len);
    free(m->path);
    memset(m, 0, sizeof *m);
}

int pb_image_cache_find(const struct pb_image_cache_id *id, struct pb_image_cache_map *out,
                        struct pb_err *e)
{
    memset(out, 0, sizeof *out);
    for (int beside = 1; beside >= 0; beside--) {
        char *path = pb_image_cache_path(id, beside);
        struct pb_image_cache_map m;
        if (path && try_map(id, path, &m, e)) {
            free(path);
            pb_image_cache_unmap(out);
            return -1;
        }
        free(path);
        if (!path || m.n <= out->n) {
            if (path)
                pb_image_cache_unmap(&m);
            continue;
        }
        pb_image_cache_unmap(out);
        *out = m;
    }
    return 0;
}

static int write_at(const struct pb_image_cache_id *id, const char *path, const uint8_t *pix,
                    int n, struct pb_err *e)
{
    struct pb_afile a;
    if (pb_afile_open(&a, path, e))
        return -1;
    unsigned char h[PB_IMAGE_CACHE_HEADER];
    header(id, n, h);
    size_t bytes = (size_t)n * id->c * id->h * id->w;
    put32(h + CRC_AT, (uint32_t)crc32_z(crc32_z(0, NULL, 0), pix, bytes));
    if (fwrite(h, 1, sizeof h, a.f) != sizeof h || fwrite(pix, 1, bytes, a.f) != bytes) {
        pb_err_set(e, "cannot write %s: %s", path, strerror(errno ? errno : EIO));
        pb_afile_abort(&a);
        return -1;
    }
    return pb_afile_commit(&a, e);
}

/* mkdir -p of an absolute folder. */
static void make_folders(const char *folder)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", folder);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0755);
            *p = '/';
        }
    mkdir(buf, 0755);
}

char *pb_image_cache_write(const struct pb_image_cache_id *id, const uint8_t *pix, int n,
                           struct pb_err *e)
{
    char *beside = pb_image_cache_path(id, true);
    struct pb_err e1 = {{0}};
    if (access(id->dir, W_OK) != 0)
        pb_err_set(&e1, "%s is not writable (%s)", id->dir, strerror(errno));
    else if (write_at(id, beside, pix, n, &e1) == 0)
        return beside;
    char *other = pb_image_cache_path(id, false);
    struct pb_err e2 = {{0}};
    if (!other) {
        pb_err_set(&e2, "neither $XDG_CACHE_HOME nor a home folder is set");
    } else {
        char *slash = strrchr(other, '/');
        *slash = 0;
        make_folders(other);
        *slash = '/';
        if (write_at(id, other, pix, n, &e2) == 0) {
            free(beside);
            return other;
        }
    }
    pb_err_set(e, "cannot write the decoded-image cache beside the data (%s: %s) nor in the "
                  "cache folder (%s: %s)", beside, e1.msg, other ? other : "(none)", e2.msg);
    free(beside);
    free(other);
    return NULL;
}
