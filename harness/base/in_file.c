/* harness/base/in_file.c — input files checked as they are opened (in_file.h). */
#include "harness/base/in_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *pb_in_file_open(const char *path, long long max, struct pb_err *e)
{
    /* non-blocking, so a FIFO with no writer does not hang the open */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int err = errno;
        pb_err_set(e, "cannot open %s: %s", path, strerror(err));
        if (fd >= 0)
            close(fd);
        errno = err;
        return NULL;
    }
    const char *kind = S_ISREG(st.st_mode)  ? NULL
                     : S_ISDIR(st.st_mode)  ? "a folder"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                   : "not a regular file";
    if (kind) {
        close(fd);
        pb_err_set(e, "%s is %s, not a file; give the path of a regular file", path, kind);
        errno = 0;
        return NULL;
    }
    if (max > 0 && (long long)st.st_size > max) {
        close(fd);
        pb_err_set(e, "%s is %lld bytes, over the %lld-byte limit of this input; give a smaller "
                      "file", path, (long long)st.st_size, max);
        errno = 0;
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        int err = errno;
        pb_err_set(e, "cannot open %s: %s", path, strerror(err));
        close(fd);
        errno = err ? err : EIO;
    }
    return f;
}
