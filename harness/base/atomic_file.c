/* harness/base/atomic_file.c — write to a temporary file, then rename (atomic_file.h); the
 * temporary name is hidden and unique per process so parallel writers do not collide, and
 * the next writer of a path removes the temporaries that killed writers of it left. */
#include "harness/base/atomic_file.h"
#include "harness/base/out_path.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void pb_afile_remove_stale(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t cap = strlen(path) + 64;
    char *dir = pb_xmalloc(cap), *prefix = pb_xmalloc(cap), *tmp = pb_xmalloc(cap + 256);
    snprintf(dir, cap, "%.*s", !slash ? 1 : slash == path ? 1 : (int)(slash - path),
             !slash ? "." : path);
    snprintf(prefix, cap, ".%s.tmp-", slash ? slash + 1 : path);
    size_t n = strlen(prefix);
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, n))
            continue;
        char *end;
        long pid = strtol(de->d_name + n, &end, 10);
        if (pid > 0 && *end == '-' && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            snprintf(tmp, cap + 256, "%s/%s", dir, de->d_name);
            unlink(tmp);
        }
    }
    if (d)
        closedir(d);
    free(dir);
    free(prefix);
    free(tmp);
}

char *pb_afile_tmp_name(const char *path)
{
    static unsigned counter;
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    size_t cap = strlen(path) + 64;
    char *tmp = pb_xmalloc(cap);
    pb_afile_remove_stale(path);
    snprintf(tmp, cap, "%.*s.%s.tmp-%ld-%u", dirlen, path, path + dirlen, (long)getpid(),
             counter++);
    return tmp;
}

int pb_afile_open(struct pb_afile *a, const char *path, struct pb_err *e)
{
    a->path = pb_xstrdup(path);
    a->tmp = pb_afile_tmp_name(path);
    a->f = fopen(a->tmp, "w");
    if (!a->f) {
        pb_err_set(e, "cannot write %s: %s; choose a writable output folder", path,
                   strerror(errno));
        pb_afile_abort(a);
        return -1;
    }
    return 0;
}

int pb_afile_commit(struct pb_afile *a, struct pb_err *e)
{
    int bad = ferror(a->f);
    bad |= fclose(a->f) != 0;
    a->f = NULL;
    if (!bad && pb_out_path_replaceable(a->path, e)) {
        pb_afile_abort(a);
        return -1;
    }
    if (bad || rename(a->tmp, a->path) != 0) {
        pb_err_set(e, "cannot write %s: %s; check the free space and permissions of its "
                   "folder", a->path, strerror(errno ? errno : EIO));
        pb_afile_abort(a);
        return -1;
    }
    free(a->tmp);
    free(a->path);
    a->tmp = a->path = NULL;
    return 0;
}

void pb_afile_abort(struct pb_afile *a)
{
    if (a->f)
        fclose(a->f);
    if (a->tmp)
        remove(a->tmp);
    free(a->tmp);
    free(a->path);
    a->f = NULL;
    a->tmp = a->path = NULL;
}
