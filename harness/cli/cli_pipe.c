/* harness/cli/cli_pipe.c — the pipe options `program` and `simulate` share: the schedule,
 * D, N, M and optimizer, checked against the IR's ranges before any program is built, and
 * the bound on the ops of programs built whole. */
#include "harness/cli/cli.h"
#include "schedules/registry.h"

int pb_cli_pipe(const char *cmd, const char *sched_name, const char *opt_name, bool have_m,
                struct pb_pipe *pipe, const struct pb_schedule **sch, struct pb_err *e)
{
    if (!sched_name)
        return pb_err_set(e, "%s: --schedule is required (see pipebench %s --help)", cmd, cmd);
    if (pipe->stages == 0)
        return pb_err_set(e, "%s: --stages is required (see pipebench %s --help)", cmd, cmd);
    if (!(*sch = pb_schedule_find(sched_name, e)))
        return -1;
    pb_pipe_adopt(pipe, *sch);
    struct pb_optim_cfg oc;
    if (pb_optim_cfg_from_name(&oc, opt_name, e))
        return -1;
    pipe->optimizer = oc.kind;
    if (pipe->stages < 1 || pipe->stages > PB_MAX_STAGES)
        return pb_err_set(e, "%s: --stages must be between 1 and %d (got %d)", cmd,
                          PB_MAX_STAGES, pipe->stages);
    if (pipe->length < 1 || pipe->length > PB_MAX_MICROBATCHES)
        return pb_err_set(e, "%s: --length must be between 1 and %d micro-batches (got %d)",
                          cmd, PB_MAX_MICROBATCHES, pipe->length);
    if (!have_m)
        pipe->microbatches = pipe->stages;
    else if (pipe->microbatches < 1 || pipe->microbatches > PB_MAX_MICROBATCHES)
        return pb_err_set(e, "%s: --microbatches must be between 1 and %d (got %d)", cmd,
                          PB_MAX_MICROBATCHES, pipe->microbatches);
    return 0;
}

int pb_cli_pipe_whole(const char *cmd, const struct pb_pipe *pipe, struct pb_err *e)
{
    if ((long long)pipe->stages * pipe->length > PB_MAX_PROGRAM_OPS / 3)
        return pb_err_set(e, "%s: %d stages of %d micro-batches are over %lld ops; use fewer "
                          "stages or a shorter --length (the pattern repeats)", cmd,
                          pipe->stages, pipe->length, PB_MAX_PROGRAM_OPS);
    return 0;
}
