/* journal/journal_cli.c -- placeholder until the 'journal' command lands. */
#include "../harness/cli.h"
#include "error.h"

int cmd_journal(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_fail(FC_USAGE, "'journal' is not available in this build");
}
