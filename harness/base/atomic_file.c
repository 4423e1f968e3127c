/* harness/base/atomic_file.c — write to a temporary file, then rename (atomic_file.h); the
 * temporary name is hidden and unique per process so parallel writers do not collide. */
#include "harness/base/atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *pb_afile_tmp_name(const char *path)
{
    static unsigned counter;
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    size_t cap = strlen(path) + 64;
    char *tmp = pb_xmalloc(cap);
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
