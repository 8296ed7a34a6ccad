/*
 * cli.h -- the fencecert command line: subcommands and shared CLI helpers.
 *
 * Each subcommand is `int cmd_NAME(int argc, char **argv)` returning the
 * process exit status; argv[0] is the subcommand name.  Errors go to stderr
 * as "fencecert: FAMILY: message"; machine output (JSON) goes to stdout.
 *
 * Exit status of the journal/id/recover commands (documented in README):
 *   0 ok, 1 other error, 2 NOT_FOUND, 3 CAS_CONFLICT, 4 ILLEGAL_TRANSITION,
 *   5 INTENT_CONFLICT, 6 LEASE_LOST, 7 LEASE_HELD, 8 RECOVERY_CONFLICT,
 *   64 USAGE, 69 JOURNAL_UNAVAILABLE / FENCE_UNAVAILABLE.
 */
#ifndef FENCECERT_CLI_H
#define FENCECERT_CLI_H

#include <stdio.h>

#define CLI_EXIT_USAGE 64

int cmd_id(int argc, char **argv);
int cmd_journal(int argc, char **argv);
int cmd_route(int argc, char **argv);
int cmd_certify(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_target(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* The exit status documented above for an fc_error code. */
int cli_exit_code(int code);

/* Print "fencecert: FAMILY: message" and return cli_exit_code(code). */
int cli_fail(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "fencecert: USAGE: message" plus a hint to run --help; returns 64. */
int cli_usage(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Parse a duration such as "30s", "15m", "2h", "7d", "500ms" into ms.
 * 0, or FC_USAGE. */
int cli_parse_duration(const char *s, long long *ms);

/* Parse a non-negative decimal integer.  0, or FC_USAGE. */
int cli_parse_ll(const char *s, long long *out);

extern const char *const fencecert_version;
extern const char *const fencecert_git_rev;

#endif
