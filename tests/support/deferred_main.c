/* tests/support/deferred_main.c — pipebench with the deferred backend in its registry
 * (tests/support/deferred_backend.h), so an mpirun of it checks the mpi executor's side of the
 * device contract: `pipebench-deferred run --executor mpi --backend deferred ...`. */
#include "harness/cli/cli.h"
#include "tests/support/deferred_backend.h"

int main(int argc, char **argv)
{
    pb_deferred_register();
    return pb_cli_main(argc, argv);
}
