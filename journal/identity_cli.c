/* journal/identity_cli.c -- placeholder until the 'id' command lands. */
#include "../harness/cli.h"
#include "error.h"

int cmd_id(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_fail(FC_USAGE, "'id' is not available in this build");
}
