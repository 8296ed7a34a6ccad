/*
 * error.h -- the one error enum of fencecert (SPEC section 4).
 *
 * Every fallible function in the project returns int: 0 on success or one of
 * the negative codes below.  A failing call leaves the object it was called on
 * as it was; the detail of what went wrong is kept in a per-object message
 * (journal_errmsg(), fence_errmsg(), ...).  error_name() gives the family name
 * the CLI prints ("fencecert: CAS_CONFLICT: ..."), error_str() a sentence.
 *
 * Owns the error families and their names.  Included by every layer
 * (it is the bottom of the tree).  Invariant: codes are negative and
 * contiguous, so error_name()/error_str() index one table.
 */
#ifndef FENCECERT_ERROR_H
#define FENCECERT_ERROR_H

#define FC_MUST_CHECK __attribute__((warn_unused_result))

/*
 * Two families share their names with journal states (states.h); their codes
 * carry an ERR_ infix so that FC_COMMIT_UNKNOWN is always the state and
 * FC_ERR_COMMIT_UNKNOWN the error.
 */

enum fc_error {
	FC_OK = 0,
	FC_INTENT_CONFLICT = -1,      /* same operation_id, other intent_digest */
	FC_CAS_CONFLICT = -2,         /* expected version/state did not match */
	FC_ILLEGAL_TRANSITION = -3,   /* not an edge of the SPEC section 3 table */
	FC_JOURNAL_UNAVAILABLE = -4,  /* journal cannot be read or written */
	FC_FENCE_UNAVAILABLE = -5,    /* target/fence cannot be reached */
	FC_ERR_COMMIT_UNKNOWN = -6,   /* outcome of a target commit not provable */
	FC_ERR_COMMITTED_INCOMPLETE = -7, /* target committed, evidence not saved */
	FC_RECOVERY_CONFLICT = -8,    /* operator action raced another change */
	FC_LEASE_LOST = -9,           /* caller's lease epoch is not current */
	FC_LEASE_HELD = -10,          /* another owner holds an unexpired lease */
	FC_NOT_FOUND = -11,           /* no such operation */
	FC_USAGE = -12,               /* bad arguments or configuration */
	FC_NOMEM = -13,               /* allocation failed */
	FC_CORRUPT = -14,             /* stored data is malformed */
	FC_ALREADY_APPLIED = -15,     /* fence proves the mutation is present */
	FC_STALE_EPOCH = -16,         /* fence refused a write from an old epoch */
	FC_IO = -17,                  /* local I/O failed (files, pipes) */
	FC_PURGED = -18,              /* operation was purged; never re-applied */
	FC_NOSPACE = -19,             /* a size limit, or the free space a file
					 system must keep, was reached */
};

#define FC_ERROR_MIN (-19)

/* "CAS_CONFLICT" for FC_CAS_CONFLICT; "OK" for 0; "UNKNOWN_ERROR" otherwise. */
const char *error_name(int code);

/* A short lower-case sentence describing the family. */
const char *error_str(int code);

#endif
