/*
 * fence.h -- the target-side fence port (SPEC section 5).
 *
 * A fence records, in the same atomic target commit as the data, that an
 * operation was applied and by which lease epoch.  It is queryable (probe)
 * so a retry can prove whether an earlier attempt's mutation landed.
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
 *
 * Fences are chosen by target URL: "sqlite:PATH", "file:DIR", later
 * "postgresql://..." and "etcd://...".
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

/* Read-only.  Errors become answer FENCE_UNKNOWN and a non-zero return. */
int fence_probe(fence *f, const char *op, struct fence_probe *out)
	FC_MUST_CHECK;

#endif
