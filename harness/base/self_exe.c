/* harness/base/self_exe.c — the running program's own path (self_exe.h). */
#include "harness/base/self_exe.h"

#include <string.h>
#include <unistd.h>

#include "pb_config.h"

bool pb_self_exe(char *buf, size_t cap)
{
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0 || (size_t)n >= cap)
        return false;
    memcpy(buf, path, (size_t)n);
    buf[n] = 0;
    return true;
}

bool pb_in_build_tree(const char *path)
{
    size_t build = strlen(PB_BUILD_ROOT);
    return !strncmp(path, PB_BUILD_ROOT, build) && path[build] == '/';
}
