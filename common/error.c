/*
 * error.c -- names and sentences for enum fc_error.  The table is indexed by
 * the negated code so adding a family means adding one row here.
 */
#include <string.h>

#include "common/error.h"

static const struct {
	const char *name;
	const char *text;
} families[] = {
	[0] = { "OK", "success" },
	[-FC_INTENT_CONFLICT] = { "INTENT_CONFLICT", "operation exists with another intent" },
	[-FC_CAS_CONFLICT] = { "CAS_CONFLICT", "expected version or state does not match" },
	[-FC_ILLEGAL_TRANSITION] = { "ILLEGAL_TRANSITION", "transition is not allowed" },
	[-FC_JOURNAL_UNAVAILABLE] = { "JOURNAL_UNAVAILABLE", "journal is unavailable" },
	[-FC_FENCE_UNAVAILABLE] = { "FENCE_UNAVAILABLE", "target fence is unavailable" },
	[-FC_ERR_COMMIT_UNKNOWN] = { "COMMIT_UNKNOWN", "target commit outcome is unknown" },
	[-FC_ERR_COMMITTED_INCOMPLETE] = { "COMMITTED_INCOMPLETE", "target committed but evidence is incomplete" },
	[-FC_RECOVERY_CONFLICT] = { "RECOVERY_CONFLICT", "operation changed during recovery" },
	[-FC_LEASE_LOST] = { "LEASE_LOST", "lease epoch is no longer current" },
	[-FC_LEASE_HELD] = { "LEASE_HELD", "lease is held by another owner" },
	[-FC_NOT_FOUND] = { "NOT_FOUND", "no such operation" },
	[-FC_USAGE] = { "USAGE", "invalid usage" },
	[-FC_NOMEM] = { "NOMEM", "out of memory" },
	[-FC_CORRUPT] = { "CORRUPT", "stored data is malformed" },
	[-FC_ALREADY_APPLIED] = { "ALREADY_APPLIED", "operation is already applied" },
	[-FC_STALE_EPOCH] = { "STALE_EPOCH", "write from a stale epoch refused" },
	[-FC_IO] = { "IO", "input/output error" },
	[-FC_PURGED] = { "PURGED", "operation was purged after completing; a retry is refused" },
	[-FC_NOSPACE] = { "NOSPACE", "a size limit or the free space to keep was reached" },
};

const char *error_name(int code)
{
	if (code > 0 || code < FC_ERROR_MIN)
		return "UNKNOWN_ERROR";
	return families[-code].name;
}

const char *error_str(int code)
{
	if (code > 0 || code < FC_ERROR_MIN)
		return "unknown error";
	return families[-code].text;
}

