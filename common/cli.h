/*
 * cli.h -- helpers every command line of fencecert shares: exit codes,
 * error and usage messages, duration and number parsing, the version.
 * The subcommands themselves are cli/commands.h's.
 *
 * Errors go to stderr as "fencecert: FAMILY: message" (FAMILY is
 * error_name() of the code); machine output (JSON) goes to stdout.
 *
 * Exit status of the journal/id/recover commands (documented in README):
 *   0 ok, 1 other error, 2 NOT_FOUND, 3 CAS_CONFLICT, 4 ILLEGAL_TRANSITION,
 *   5 INTENT_CONFLICT, 6 LEASE_LOST, 7 LEASE_HELD, 8 RECOVERY_CONFLICT,
 *   64 USAGE, 69 JOURNAL_UNAVAILABLE / FENCE_UNAVAILABLE.
 *
 * Who includes it: anything (it is in common/); today cli/, recover/
 * (the operator's tool prints its refusals) and harness/certify (the
 * version strings a report names).  It depends on common/error.h only
 * and keeps no state.
 */
#ifndef FENCECERT_CLI_H
#define FENCECERT_CLI_H

#include <stdio.h>

#define CLI_EXIT_USAGE 64

/* The exit status documented above for an fc_error code. */
int cli_exit_code(int code);

/* Print "fencecert: FAMILY: message" and return cli_exit_code(code). */
int cli_fail(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "fencecert: USAGE: message" plus a hint to run --help; returns 64. */
int cli_usage(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The opening of a command that dispatches on a subcommand word, argv[1]:
 * with no word, list() writes the subcommands to stderr and the answer is
 * CLI_EXIT_USAGE; with --help, -h or help, it writes them to stdout and
 * the answer is 0.  For any other word the answer is CLI_DISPATCH: argv[1]
 * is the caller's to look up.
 */
#define CLI_DISPATCH (-1)
int cli_help_or_dispatch(int argc, char **argv, void (*list)(FILE *to));

/* Parse a duration such as "30s", "15m", "2h", "7d", "500ms" into ms.
 * 0, or FC_USAGE. */
int cli_parse_duration(const char *s, long long *ms);

/* Parse a non-negative decimal integer.  0, or FC_USAGE. */
int cli_parse_ll(const char *s, long long *out);

/* Parse a size such as "4096", "64K", "512M", "2G" (binary units, either
 * case) into bytes.  0, or FC_USAGE. */
int cli_parse_size(const char *s, unsigned long long *bytes);

extern const char *const fencecert_version;
extern const char *const fencecert_git_rev;

#endif
