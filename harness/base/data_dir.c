/* harness/base/data_dir.c — the data folders' lookup (data_dir.h). */
#include "harness/base/data_dir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/self_exe.h"
#include "pb_config.h"

void pb_data_dir(const char *sub, const char *env, char *out, size_t cap)
{
    const char *v = getenv(env);
    if (v && *v) {
        snprintf(out, cap, "%s", v);
        return;
    }
    char exe[4096];
    if (!pb_self_exe(exe, sizeof exe) || pb_in_build_tree(exe)) {
        snprintf(out, cap, "%s/%s", PB_SOURCE_ROOT, sub);
        return;
    }
    *strrchr(exe, '/') = 0;
    if (PB_DATA_FROM_BIN[0] == '/' ||
        snprintf(out, cap, "%s/%s/%s", exe, PB_DATA_FROM_BIN, sub) >= (int)cap)
        snprintf(out, cap, "%s/%s", PB_DATA_FROM_BIN, sub);
}
