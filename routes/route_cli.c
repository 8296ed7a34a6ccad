/* routes/route_cli.c -- placeholder until the 'route' command lands. */
#include "../harness/cli.h"
#include "../journal/error.h"

int cmd_route(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_fail(FC_USAGE, "'route' is not available in this build");
}
