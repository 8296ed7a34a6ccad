/*
 * cli.c -- the helpers every subcommand shares: error lines, exit codes,
 * the answer to a missing subcommand or --help, durations.  The dispatch table and main() are in main.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/cli.h"

#ifndef FENCECERT_VERSION
#define FENCECERT_VERSION "0.0.0"
#endif
#ifndef FENCECERT_GIT_REV
#define FENCECERT_GIT_REV "unknown"
#endif

const char *const fencecert_version = FENCECERT_VERSION;
const char *const fencecert_git_rev = FENCECERT_GIT_REV;

int cli_exit_code(int code)
{
	switch (code) {
	case FC_OK: return 0;
	case FC_NOT_FOUND: return 2;
	case FC_CAS_CONFLICT: return 3;
	case FC_ILLEGAL_TRANSITION: return 4;
	case FC_INTENT_CONFLICT: return 5;
	case FC_LEASE_LOST: return 6;
	case FC_LEASE_HELD: return 7;
	case FC_RECOVERY_CONFLICT: return 8;
	case FC_USAGE: return CLI_EXIT_USAGE;
	case FC_JOURNAL_UNAVAILABLE:
	case FC_FENCE_UNAVAILABLE: return 69;
	default: return 1;
	}
}

int cli_fail(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fencecert: %s: ", error_name(code));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return cli_exit_code(code);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fencecert: USAGE: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'fencecert %s --help')\n", cmd);
	return CLI_EXIT_USAGE;
}

int cli_help_or_dispatch(int argc, char **argv, void (*list)(FILE *to))
{
	if (argc < 2) {
		list(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		list(stdout);
		return 0;
	}
	return CLI_DISPATCH;
}

int cli_parse_ll(const char *s, long long *out)
{
	char *end;
	long long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return FC_USAGE;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return FC_USAGE;
	*out = v;
	return 0;
}

int cli_parse_size(const char *s, unsigned long long *bytes)
{
	static const struct { const char *unit; unsigned long long n; } units[] = {
		{ "", 1 }, { "K", 1ULL << 10 }, { "k", 1ULL << 10 },
		{ "M", 1ULL << 20 }, { "m", 1ULL << 20 }, { "G", 1ULL << 30 },
		{ "g", 1ULL << 30 }, { NULL, 0 },
	};
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return FC_USAGE;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return FC_USAGE;
	for (int i = 0; units[i].unit; i++) {
		if (strcmp(end, units[i].unit) == 0) {
			if (v > ~0ULL / units[i].n)
				return FC_USAGE;
			*bytes = v * units[i].n;
			return 0;
		}
	}
	return FC_USAGE;
}

int cli_parse_duration(const char *s, long long *ms)
{
	static const struct { const char *unit; long long ms; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 }, { NULL, 0 },
	};
	char *end;
	long long v;

	if (!s || *s < '0' || *s > '9')
		return FC_USAGE;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno)
		return FC_USAGE;
	for (int i = 0; units[i].unit; i++) {
		if (strcmp(end, units[i].unit) == 0) {
			if (v > (long long)9e15 / units[i].ms)
				return FC_USAGE;
			*ms = v * units[i].ms;
			return 0;
		}
	}
	return FC_USAGE;
}

