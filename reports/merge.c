/* reports/merge.c -- placeholder until the 'merge' command lands. */
#include "../harness/cli.h"
#include "../journal/error.h"

int cmd_merge(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_fail(FC_USAGE, "'merge' is not available in this build");
}
