/* reports/gate.c -- placeholder until the 'gate' command lands. */
#include "../harness/cli.h"
#include "../journal/error.h"

int cmd_gate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_fail(FC_USAGE, "'gate' is not available in this build");
}
