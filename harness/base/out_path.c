/* harness/base/out_path.c — output paths checked before any work (out_path.h). */
#include "harness/base/out_path.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m) ? "a folder" : S_ISCHR(m) || S_ISBLK(m) ? "a device" : S_ISFIFO(m) ? "a FIFO"
         : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* path with its folder made canonical (the file itself may not exist yet); free() it,
 * NULL when the folder does not exist. */
static char *canonical(const char *path)
{
    char *dir = pb_xstrdup(path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? path + (slash - dir) + 1 : path;
    char *real = realpath(slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".", NULL);
    free(dir);
    if (!real)
        return NULL;
    size_t n = strlen(real) + strlen(base) + 2;
    char *out = pb_xmalloc(n);
    snprintf(out, n, "%s/%s", real, base);
    free(real);
    return out;
}

/* Whether a and b name one file: the same inode, or (one not made yet) the same path. */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ca = canonical(a), *cb = canonical(b);
    bool same = ca && cb && !strcmp(ca, cb);
    free(ca);
    free(cb);
    return same;
}

int pb_out_path_replaceable(const char *path, struct pb_err *e)
{
    struct stat st;
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
        return 0;   /* a link: its target is checked by pb_out_path_check; rename replaces the link */
    return pb_err_set(e, "cannot write %s: it is %s, which a file must not replace; give the path "
                         "of a file", path, kind_of(st.st_mode));
}

int pb_out_path_check(const char *flag, const char *path, const char *db, struct pb_err *e)
{
    struct stat st;
    if (!*path)
        return pb_err_set(e, "%s: an empty path; give a file path", flag);
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return pb_err_set(e, "cannot write %s: it is %s; give %s the path of a file in a "
                                 "writable output folder", path, kind_of(st.st_mode), flag);
    } else if (errno != ENOENT && errno != ENOTDIR) {
        return pb_err_set(e, "cannot write %s: %s; give %s a path in a writable output folder",
                          path, strerror(errno), flag);
    }
    if (db && same_file(path, db))
        return pb_err_set(e, "cannot write %s: it is the results database (--db %s), whose runs "
                             "it would destroy; give %s another path", path, db, flag);
    char *dir = pb_xstrdup(path);
    char *slash = strrchr(dir, '/');
    const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
    int rc = 0;
    if (stat(d, &st) != 0)
        rc = pb_err_set(e, "cannot write %s: its folder %s: %s; give %s a path in a writable "
                           "output folder", path, d, strerror(errno), flag);
    else if (!S_ISDIR(st.st_mode))
        rc = pb_err_set(e, "cannot write %s: %s is not a folder; give %s a path in a writable "
                           "output folder", path, d, flag);
    else if (access(d, W_OK | X_OK) != 0)
        rc = pb_err_set(e, "cannot write %s: its folder %s is not writable (%s); give %s a path "
                           "in a writable output folder", path, d, strerror(errno), flag);
    free(dir);
    return rc;
}
