/* results/results_env.c — the environment facts stored with each run (results.h):
 * git revision (meson's vcs_tag at build time), CPU model, library versions, host. */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "results/pb_git_revision.h"
#include "results/results.h"

const char *pb_env_git_revision(void)
{
    return PB_GIT_REVISION[0] ? PB_GIT_REVISION : "unknown";
}

void pb_env_cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) && strncmp(line, "Hardware", 8))
            continue;
        const char *v = strchr(line, ':');
        if (!v)
            continue;
        v += strspn(v + 1, " \t") + 1;
        size_t len = strcspn(v, "\n");
        snprintf(buf, cap, "%.*s", (int)len, v);
        break;
    }
    fclose(f);
}

void pb_env_library_versions(const char *backend_libraries, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%sSQLite %s; zlib %s; cJSON %s",
             backend_libraries ? backend_libraries : "", backend_libraries ? "; " : "",
             sqlite3_libversion(), zlibVersion(), cJSON_Version());
}

void pb_env_host(char *buf, size_t cap)
{
    if (cap == 0)
        return;
    if (gethostname(buf, cap) != 0)
        snprintf(buf, cap, "unknown");
    buf[cap - 1] = '\0';
}
