/* harness/cli/main.c — the pipebench program: the CLI's dispatch (cli_main.c). */
#include "harness/cli/cli.h"

int main(int argc, char **argv)
{
    return pb_cli_main(argc, argv);
}
