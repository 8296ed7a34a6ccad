/*
 * runtime_impl.h -- what the two halves of the route runtime share: the
 * state of one attempt and the protocol steps.  Only runtime.c (the paths
 * through the protocol) and runtime_step.c (one journal transition or
 * target call each, between its failpoints) include this file.
 *
 * Conventions of every step: it returns 0 to go on or the exit status the
 * attempt must end with (enum route_exit), having written the reason into
 * a->why; runtime__prepare_fence() is the exception and returns an
 * fc_error code, because its callers decide differently what a failure
 * means.
 */
#ifndef FENCECERT_RUNTIME_IMPL_H
#define FENCECERT_RUNTIME_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "journal/journal.h"
#include "routes/runtime.h"
#include "routes/workload.h"

struct attempt {
	const struct route_config *cfg;
	const struct runtime_target *tops;
	void *target;             /* NULL until the target is first needed */
	workload *w;
	journal *j;
	const char *op;
	const char *intent;
	struct journal_entry e;   /* the entry as the journal last returned it */
	long long epoch;          /* our lease epoch; 0 until taken */
	bool prepared;            /* fence prepared at `epoch` by this attempt */
	bool applied;             /* this attempt sent the apply */
	bool mutated;             /* ... and the fence shows it landed */
	bool have_rows;
	const struct fence_row *rows;
	size_t nrows;
	char fence[32];           /* fence name, from the target or the record */
	long long result_rows;    /* what the fence record says */
	long long result_epoch;
	char how[128];            /* what the attempt did, for the report line */
	char why[640];            /* why it stopped */
};

/* Record why the attempt ends and return `status`. */
int runtime__stop(struct attempt *a, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Record what went wrong with a target call and return `code`. */
int runtime__note(struct attempt *a, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The exit status for a journal failure while `doing`. */
int runtime__journal_failed(struct attempt *a, int rc, const char *doing);

/* One CAS to `next` under our lease between its failpoints; consumes
 * `evidence`. */
int runtime__move(struct attempt *a, enum fc_state next, const char *before,
		  const char *after, json_t *evidence);
json_t *runtime__epoch_evidence(struct attempt *a, const char *reason);
int runtime__take_lease(struct attempt *a);

/* Best effort FAILED_PRE_COMMIT, then 75; COMMIT_UNKNOWN, then 100. */
int runtime__pre_commit_failed(struct attempt *a, const char *reason);
int runtime__commit_unknown(struct attempt *a);

/* Open the target (lazily: never before the intent check). */
int runtime__target_ready(struct attempt *a);
/* fence prepare at our epoch; 0 or an fc_error code. */
int runtime__prepare_fence(struct attempt *a);
/* A probe between its failpoints; any failure answers FENCE_UNKNOWN. */
void runtime__probe(struct attempt *a, bool reconcile, struct fence_probe *p);
/* The fence shows the operation applied: check it is ours, keep its
 * rows and epoch as the result. */
int runtime__accept_applied(struct attempt *a, const struct fence_probe *p);

/* COMMITTING -> TARGET_COMMITTED -> evidence -> COMPLETE, and the last two
 * alone; both return ROUTE_EXIT_COMPLETE at the end. */
int runtime__to_target_committed(struct attempt *a);
int runtime__finish_evidence(struct attempt *a);
/* The committed result (rows, epoch) from the journal. */
int runtime__recorded_result(struct attempt *a);
/* COMPLETE already: return.json from the record, no target I/O. */
int runtime__deliver_recorded(struct attempt *a);

/* Parse the source rows (once). */
int runtime__need_rows(struct attempt *a);

#endif
