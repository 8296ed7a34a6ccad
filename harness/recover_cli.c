/* harness/recover_cli.c -- placeholder until the 'recover' command lands. */
#include "cli.h"
#include "../journal/error.h"

int cmd_recover(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_fail(FC_USAGE, "'recover' is not available in this build");
}
