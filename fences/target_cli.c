/* fences/target_cli.c -- placeholder until the 'target' command lands. */
#include "../harness/cli.h"
#include "../journal/error.h"

int cmd_target(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_fail(FC_USAGE, "'target' is not available in this build");
}
