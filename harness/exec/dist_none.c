/* harness/exec/dist_none.c — dist.h in a build without MPI: one process, d is always NULL,
 * and asking for the mpi executor says how to get it. */
#include <stdlib.h>
#include <string.h>

#include "harness/exec/dist.h"

bool pb_dist_available(void)
{
    return false;
}

int pb_dist_init(struct pb_dist *d, struct pb_err *e)
{
    (void)d;
    return pb_err_set(e, "this pipebench was built without MPI: install libopenmpi-dev and "
                         "openmpi-bin, then reconfigure (meson setup --reconfigure build)");
}

void pb_dist_finish(struct pb_dist *d)
{
    (void)d;
}

void pb_dist_sum(const struct pb_dist *d, double *x)
{
    (void)x;
    PB_CHECK(d == NULL);
}

bool pb_dist_any(const struct pb_dist *d, bool local)
{
    PB_CHECK(d == NULL);
    return local;
}

void pb_dist_bcast(const struct pb_dist *d, void *buf, size_t bytes, int root)
{
    (void)buf, (void)bytes, (void)root;
    PB_CHECK(d == NULL);
}

void pb_dist_send(const struct pb_dist *d, const void *buf, size_t bytes, int to, int tag)
{
    (void)d, (void)buf, (void)bytes, (void)to, (void)tag;
    PB_CHECK(!"no MPI in this build");
}

void pb_dist_recv(const struct pb_dist *d, void *buf, size_t bytes, int from, int tag)
{
    (void)d, (void)buf, (void)bytes, (void)from, (void)tag;
    PB_CHECK(!"no MPI in this build");
}

void pb_dist_gather(const struct pb_dist *d, const void *mine, size_t bytes, void *all, int root)
{
    (void)root;
    PB_CHECK(d == NULL);
    memcpy(all, mine, bytes);
}

void pb_dist_gatherv(const struct pb_dist *d, const void *mine, size_t bytes, void **all,
                     size_t *total, int root)
{
    (void)d, (void)mine, (void)bytes, (void)all, (void)total, (void)root;
    PB_CHECK(!"no MPI in this build");
}

void pb_dist_barrier(const struct pb_dist *d)
{
    PB_CHECK(d == NULL);
}

void pb_dist_abort(const struct pb_dist *d, int status)
{
    (void)d;
    exit(status);
}

int pb_exec_mpi(const struct pb_dist *d, struct pb_worker *workers, int nst,
                const struct pb_program *prog, struct pb_err *e)
{
    (void)d, (void)workers, (void)nst, (void)prog;
    return pb_err_set(e, "this pipebench was built without MPI");
}
