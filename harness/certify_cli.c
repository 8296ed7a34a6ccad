/* harness/certify_cli.c -- placeholder until the 'certify' command lands. */
#include "cli.h"
#include "../journal/error.h"

int cmd_certify(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_fail(FC_USAGE, "'certify' is not available in this build");
}
