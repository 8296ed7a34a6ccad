/*
 * fence.h -- the target-side fence port (SPEC section 5).
 *
 * A fence records, in the same atomic target commit as the data, that an
 * operation was applied and by which lease epoch.  It is queryable (probe)
 * so a retry can prove whether an earlier attempt's mutation landed.
 *
 * Owner: fence.c (dispatch and request checks) over one backend per file,
 * fence_<backend>.c, behind struct fence_ops (fence_impl.h).  Anyone may
 * include this header: the route runtime, recover/, the harness and the
 * CLI use fences through it only; `fence` is opaque.
 *
 * Invariants every fence keeps:
 *  1. apply() commits the rows and the fence record together or neither.
 *  2. apply() for an operation whose fence record exists changes nothing
 *     and reports FC_ALREADY_APPLIED (same intent) or FC_INTENT_CONFLICT
 *     (another intent): "already exists" and "conflict" stay distinct.
 *  3. prepare(op, e) makes every later apply() with an epoch below e fail
 *     with FC_STALE_EPOCH and change nothing: the epoch is a fencing token.
 *  4. probe() answers FENCE_ABSENT only when the mutation is absent and can
 *     no longer land for any epoch below the highest prepared one.
 *  5. Every target error is classified as proved-present, proved-absent or
 *     unknown (enum fence_outcome); an unknown outcome is never guessed.
 *  6. An optional feature (fence_features()) is all or nothing: a backend
 *     without it refuses its calls with FC_USAGE and changes nothing.
 *
 * Fences are chosen by target URL: "sqlite:PATH", "file:DIR",
 * "etcd://..." and "postgresql://..." (or "postgres://...").
 */
#ifndef FENCECERT_FENCE_H
#define FENCECERT_FENCE_H

#include <stddef.h>

#include "common/error.h"
#include "journal/journal.h"

typedef struct fence fence; /* opaque; fields known to fence*.c only */

enum fence_capability {
	FENCE_CAP_AUTOMATIC,   /* probe decisive and fence atomic with data */
	FENCE_CAP_FAIL_CLOSED, /* some outcomes need an operator */
};

enum fence_outcome {
	FENCE_PROVED_ABSENT,  /* the mutation did not land and cannot land */
	FENCE_PROVED_PRESENT, /* the mutation (with its fence) is committed */
	FENCE_OUTCOME_UNKNOWN,
};

enum fence_probe_answer {
	FENCE_ABSENT,
	FENCE_APPLIED,
	FENCE_UNKNOWN,
};

struct fence_probe {
	enum fence_probe_answer answer;
	long long epoch;                     /* epoch that applied (APPLIED) */
	char intent_digest[JOURNAL_ID_MAX];  /* intent recorded (APPLIED) */
	long long rows;                      /* rows applied (APPLIED) */
};

enum fence_strategy {
	FENCE_APPEND,  /* insert the rows */
	FENCE_REPLACE, /* delete target rows whose row_key is in the batch, insert */
};

struct fence_row {
	const char *row_key;
	const char *payload;
};

/* The table a batch goes to when it names none. */
#define FENCE_DEFAULT_TABLE "events"

struct fence_batch {
	const char *operation_id;
	const char *intent_digest;
	const char *table;           /* target table / dataset name; NULL:
				      * FENCE_DEFAULT_TABLE.  Letters, digits
				      * and '_', not starting with a digit,
				      * at most 63 characters */
	enum fence_strategy strategy;
	const struct fence_row *rows;
	size_t nrows;
};

int fence_open(const char *url, fence **out, char *err, size_t errlen)
	FC_MUST_CHECK;
void fence_close(fence *f); /* NULL is a no-op */
const char *fence_errmsg(const fence *f);
enum fence_capability fence_capability(const fence *f);
const char *fence_name(const fence *f); /* "sqlite", "fs", ... */

/*
 * Record that `epoch` is now the highest epoch allowed to apply op.
 * FC_STALE_EPOCH when a higher epoch was already prepared;
 * FC_FENCE_UNAVAILABLE when the target cannot be reached.
 */
int fence_prepare(fence *f, const char *op, long long epoch) FC_MUST_CHECK;

/*
 * Apply the batch and the fence record in one atomic commit.  Returns 0 when
 * this call applied it (*outcome = FENCE_PROVED_PRESENT).  Otherwise returns
 * the error and classifies what is known in *outcome:
 *   FC_ALREADY_APPLIED      present (an earlier apply landed)
 *   FC_INTENT_CONFLICT      fence exists with another intent (present, not ours)
 *   FC_STALE_EPOCH          absent, refused: a newer epoch was prepared
 *   FC_FENCE_UNAVAILABLE    absent when the failure is before commit,
 *                           unknown when it is at or after commit
 *   FC_ERR_COMMIT_UNKNOWN   unknown
 */
int fence_apply(fence *f, long long epoch, const struct fence_batch *b,
		enum fence_outcome *outcome) FC_MUST_CHECK;

/*
 * Read-only, except that a target whose transactions outlive their client
 * (PostgreSQL) lets the probe settle what is pending for op -- end an
 * apply still in flight, roll back a transaction left prepared -- so that
 * it can answer decisively (see fence_hands_off()).  Errors become answer
 * FENCE_UNKNOWN and a non-zero return.
 */
int fence_probe(fence *f, const char *op, struct fence_probe *out)
	FC_MUST_CHECK;

/*
 * From now on, f's probe settles nothing: where it would end or roll back
 * a pending transaction of the operation, it answers FENCE_UNKNOWN with
 * FC_FENCE_UNAVAILABLE instead, so that a person can still choose
 * (`fencecert recover`, `fencecert target probe`).  Backends whose probe
 * never settles anything are unaffected.
 */
void fence_hands_off(fence *f);

/* Optional features of a fence, as bits of fence_features(). */
enum fence_feature {
	/*
	 * The target can hold an in-doubt transaction of an operation: one
	 * prepared by two-phase commit, neither committed nor rolled back,
	 * outliving the client that prepared it (the pg-2pc fence makes
	 * them; pg-txn, on the same server, sees and resolves them too).
	 * fence_in_doubt() and fence_resolve_in_doubt() act on them.
	 */
	FENCE_HAS_IN_DOUBT = 1u << 0,
	/*
	 * The fence makes its writes durable itself (fsync of its files and
	 * directories: the fs fence) and can leave that out on request
	 * (fence_skip_sync()).
	 */
	FENCE_CAN_SKIP_SYNC = 1u << 1,
};

unsigned fence_features(const fence *f);

/*
 * From now on, f syncs nothing it writes: no fsync of a data file, fence
 * or epoch record, nor of a directory after an entry is created, renamed
 * or linked in it.  Every answer stays the same to any process as long as
 * the machine runs (a killed process's writes live on in the page cache);
 * after a power loss what f wrote may be gone although it said
 * "applied".  Wrong on purpose: only the no-fsync control route
 * (routes/controls.c) calls it.  FC_USAGE, and nothing changes, without
 * FENCE_CAN_SKIP_SYNC.
 */
int fence_skip_sync(fence *f) FC_MUST_CHECK;

/*
 * How many in-doubt transactions of op the target holds (*n).
 * FC_FENCE_UNAVAILABLE when the target cannot say; FC_USAGE (and *n = 0)
 * without FENCE_HAS_IN_DOUBT.
 */
int fence_in_doubt(fence *f, const char *op, int *n) FC_MUST_CHECK;

/*
 * Commit (commit = 1) or roll back every in-doubt transaction of op; *n
 * (if n) receives how many were resolved, also on failure.  A committed
 * one lands its mutation with its fence record (probe: APPLIED), a rolled
 * back one makes it absent for good.  FC_FENCE_UNAVAILABLE, FC_NOMEM;
 * FC_USAGE without FENCE_HAS_IN_DOUBT.
 */
int fence_resolve_in_doubt(fence *f, const char *op, int commit, int *n)
	FC_MUST_CHECK;

#endif
