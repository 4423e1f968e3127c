/* harness/cli/cli_slurm.c — `pipebench sweep FILE --emit slurm`: the sweep as a Slurm
 * job-array script, one array task per run of the sweep, each `pipebench sweep FILE
 * --task I` recording into the sweep's database under the sweep's claims. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/self_exe.h"
#include "harness/cli/cli.h"
#include "harness/driver/plan.h"
#include "harness/driver/sweep.h"

/* s in single quotes for bash, a quote in it written '\'' */
static void quoted(FILE *out, const char *s)
{
    fputc('\'', out);
    for (; *s; s++)
        fputs(*s == '\'' ? "'\\''" : (char[]){*s, 0}, out);
    fputc('\'', out);
}

/* path made absolute against the current folder (a file need not exist yet). */
static void absolute(const char *path, char *out, size_t cap)
{
    char cwd[PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd))
        snprintf(out, cap, "%s", path);
    else if (snprintf(out, cap, "%s/%s", cwd, path) >= (int)cap)
        snprintf(out, cap, "%s", path);   /* too long to make absolute: as given */
}

int pb_cli_emit_slurm(const struct pb_sweep *s, const char *file, const char *hostfile,
                      FILE *out)
{
    char exe[PATH_MAX] = "pipebench", path[2 * PATH_MAX], db[2 * PATH_MAX], hosts[2 * PATH_MAX];
    pb_self_exe(exe, sizeof exe);
    absolute(file, path, sizeof path);
    absolute(s->items[0].cfg.db, db, sizeof db);
    int ranks = 1;
    for (int i = 0; i < s->n; i++) {
        const struct pb_executor *ex = pb_plan_executor(&s->items[i].cfg);
        int need = pb_plan_ranks(&s->items[i].cfg);   /* one per device */
        if (ex && ex->one_rank_per_device && need > ranks)
            ranks = need;
    }
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    fprintf(out,
            "#!/bin/bash\n"
            "# The sweep %s as a Slurm job array (written by `pipebench sweep --emit slurm`):\n"
            "# array task I runs the sweep's run I (`pipebench sweep FILE --dry-run` lists them\n"
            "# in order) and records it in the sweep's database under the sweep's claims, so\n"
            "# tasks running at once, a task run again and a sweep run beside them split the\n"
            "# work; a finished run is skipped, an interrupted one continued. Submit it with\n"
            "# `sbatch FILE.sh`; run task I by hand with `SLURM_ARRAY_TASK_ID=I bash FILE.sh`.\n"
            "# Tasks of the mpi executor start `mpirun -np D` (D / v with chunks) inside their\n"
            "# allocation.\n"
            "#SBATCH --job-name=pipebench-%.*s\n"
            "#SBATCH --array=0-%d\n"
            "#SBATCH --ntasks=%d\n"
            "#SBATCH --output=pipebench-sweep-%%A_%%a.out\n"
            "set -eu\n"
            "exec ",
            base, (int)strcspn(base, "."), base, s->n - 1, ranks);
    quoted(out, exe);
    fputs(" sweep ", out);
    quoted(out, path);
    fputs(" --db ", out);
    quoted(out, db);
    if (hostfile) {
        absolute(hostfile, hosts, sizeof hosts);
        fputs(" --hostfile ", out);
        quoted(out, hosts);
    }
    fputs(" --task \"${SLURM_ARRAY_TASK_ID:?run it with sbatch, or set SLURM_ARRAY_TASK_ID}\"\n",
          out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
