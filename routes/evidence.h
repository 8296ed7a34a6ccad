/*
 * evidence.h -- what a route attempt hands back: the XCom file
 * FENCECERT_XCOM_DIR/return.json and the local checkpoint
 * FENCECERT_RUN_DIR/checkpoint.json.
 *
 *   return.json  {"operation_id", "intent_digest", "state": "COMPLETE",
 *                 "rows_written": N, "try_number": K, "epoch": E,
 *                 "mutated": true|false}
 *
 * `epoch` is the lease epoch whose apply landed in the target (the fence
 * record's epoch), `mutated` says whether this attempt applied it.  Both
 * files are replaced atomically (temporary file, fsync, rename, fsync of the
 * directory; a directory created for them is synced in its parent), so a
 * reader sees the old file, the new one, or none -- never a torn one, and
 * a file written before the journal moves on survives a power loss.  The
 * evidence may still be lost afterwards (lose_xcom, lose_pod); the
 * journal, not these files, is the record.
 *
 * Who includes it: the route runtime and the controls (routes/).  The
 * harness reads return.json as a file (harness/run/collect.c), never
 * through this module.
 */
#ifndef FENCECERT_EVIDENCE_H
#define FENCECERT_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/error.h"

#define EVIDENCE_RETURN_FILE "return.json"
#define EVIDENCE_CHECKPOINT_FILE "checkpoint.json"

/* How a write is made durable: fsync of the file before its rename and of
 * the directory after it (the certified way), or not at all -- the page
 * cache keeps it through a process kill, not through a power loss (the
 * no-fsync control only, docs/controls.md). */
enum evidence_sync {
	EVIDENCE_FSYNC,
	EVIDENCE_NO_FSYNC,
};

struct route_result {
	const char *operation_id;
	const char *intent_digest;
	long long rows;
	long long try_number;
	long long epoch;
	bool mutated;
};

/* Write return.json into xcom_dir (created if missing, one level).  NULL
 * dir: nothing to do.  FC_IO with a message in err. */
int evidence_write_return(const char *xcom_dir, const struct route_result *r,
			  enum evidence_sync sync, char *err, size_t errlen)
	FC_MUST_CHECK;

/* Write checkpoint.json into run_dir recording `state`.  NULL dir: nothing
 * to do. */
int evidence_write_checkpoint(const char *run_dir, const char *state,
			      const struct route_result *r,
			      enum evidence_sync sync, char *err,
			      size_t errlen) FC_MUST_CHECK;

/* Remove return.json (best effort): evidence that could not be completed
 * must not outlive the attempt that wrote it. */
void evidence_remove_return(const char *xcom_dir);

/* Replace dir/name by the compact JSON of obj, atomically (see above). */
int evidence__write_json(const char *dir, const char *name, json_t *obj,
			 enum evidence_sync sync, char *err, size_t errlen)
	FC_MUST_CHECK;

#endif
