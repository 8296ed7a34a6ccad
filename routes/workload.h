/*
 * workload.h -- the operation a route attempt works on (SPEC section 7,
 * FENCECERT_WORKLOAD).
 *
 * A workload file is a JSON object:
 *
 *   {"identity": {"release", "deployment", "dag", "run", "workload",
 *                 "partition", "interval", "target"  (all strings)},
 *    "intent":   {"pack", "strategy", "target_contract", "schema"},
 *    "source":   "partition-p0.csv",   (relative to the workload's directory)
 *    "table":    "events"}
 *
 * Extra fields inside "identity" and "intent" enter the digests; unknown
 * top-level keys are ignored (routes in other languages may extend the
 * file).  The source is a CSV file (RFC 4180: quoted fields may hold commas,
 * doubled quotes and newlines) whose header is exactly `row_key,payload`.
 *
 *   operation_id  = identity_digest(every "identity" field)
 *   intent_digest = identity_digest(every "intent" field
 *                                   + "source" = sha256 of the CSV bytes)
 *
 * so a changed source under the same identity is an intent conflict.
 *
 * Two phases, because an attempt must be able to stop on an intent conflict
 * before it reads rows: workload_load() reads the JSON and the source bytes
 * (once; the digest is of exactly the bytes later parsed, so the file cannot
 * change in between), workload_rows() parses the CSV on first use.
 *
 * Who includes it: the route runtime and the controls (routes/), and tests.
 * The harness writes workload files (harness/run/workgen.c) without it.
 *
 * Ownership: workload_load() returns a heap object, workload_free() releases
 * it; every string and row returned points into it.
 */
#ifndef FENCECERT_WORKLOAD_H
#define FENCECERT_WORKLOAD_H

#include <stddef.h>

#include "fences/fence.h"
#include "common/error.h"
#include "journal/identity.h"

#define WORKLOAD_SOURCE_MAX (1024L * 1024 * 1024) /* bytes of one partition */

typedef struct workload workload; /* opaque; fields known to workload.c only */

/*
 * Read the workload file and its source, derive the ids.  Errors (with a
 * message in err naming the file, and the line where there is one):
 *   FC_USAGE  bad JSON, a missing or mistyped key, unknown strategy, a
 *             source file that does not exist or cannot be opened
 *   FC_IO     a read error on an existing file
 *   FC_NOMEM
 */
int workload_load(const char *path, workload **out, char *err, size_t errlen)
	FC_MUST_CHECK;
void workload_free(workload *w); /* NULL is a no-op */

const char *workload_operation_id(const workload *w);
const char *workload_intent_digest(const workload *w);
const char *workload_source_digest(const workload *w); /* "sha256:..." */
const char *workload_source_path(const workload *w);
const char *workload_table(const workload *w);
enum fence_strategy workload_strategy(const workload *w);
const char *workload_strategy_name(const workload *w); /* "append", ... */

/*
 * The source rows, parsed on the first call (later calls return the same
 * array).  FC_USAGE with "FILE: line N: ..." for a bad header or a
 * malformed record; the workload is unchanged by a failing call only in the
 * sense that it keeps failing the same way.
 */
int workload_rows(workload *w, const struct fence_row **rows, size_t *n,
		  char *err, size_t errlen) FC_MUST_CHECK;

#endif
