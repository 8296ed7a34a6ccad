/*
 * workgen.h -- deterministic workloads for certification runs.
 *
 * For each operation i (1-based) of a suite's workload, workgen writes into
 * a directory the two files a route reads (SPEC section 7):
 *
 *   DIR/workload-<i>.json   identity fields, intent fields, the source file
 *                           name (relative to the workload file) and table
 *   DIR/partition-<i>.csv   "row_key,payload" then one row per line; row
 *                           keys "o<i>-r<j>" are unique across operations;
 *                           payloads are RFC 4180 quoted where needed
 *
 * The bytes depend only on the workload spec (seed, rows, strategy, table),
 * the operation count and how many times the source was changed, so the
 * same seed gives byte-identical files on every machine.
 *
 * For each operation workgen also reports what the checker compares the
 * target and the journal against: the row keys, and the operation_id and
 * intent_digest a route derives from the workload file (journal/identity.h):
 * operation_id over the eight identity fields, intent_digest over the four
 * intent fields plus "source" = identity_file_digest(csv).
 *
 * Ownership: workgen_generate() returns one heap object; everything a
 * struct workgen_op points to belongs to it and lives until workgen_free().
 * The files stay on disk.
 *
 * Included by harness/run only (the orchestrator and its setup).
 */
#ifndef FENCECERT_WORKGEN_H
#define FENCECERT_WORKGEN_H

#include <stddef.h>

#include "journal/identity.h"
#include "harness/model/scenario.h"

/* Rows over all operations of one workload; keeps a run's files and the
 * checker's row-key lists bounded. */
#define WORKGEN_MAX_ROWS 1000000

struct workgen;

struct workgen_op {
	int index;                   /* 1-based */
	const char *workload_path;   /* DIR/workload-<i>.json */
	const char *source_path;     /* DIR/partition-<i>.csv */
	size_t nrows;                /* keys: workgen_row_key() */
	char operation_id[IDENTITY_DIGEST_LEN + 1];
	char intent_digest[IDENTITY_DIGEST_LEN + 1]; /* of the current source */
	int source_version;          /* 0 as generated; +1 per change_source */
};

/* Row j (0-based, file order) of op's partition has key "o<op>-r<j+1>";
 * keys are computed, never stored, so a workload's memory does not grow
 * with its rows.  buf must hold WORKGEN_KEY_MAX bytes. */
#define WORKGEN_KEY_MAX 48
void workgen_row_key(const struct workgen_op *op, size_t j,
		     char buf[WORKGEN_KEY_MAX]);

/*
 * Write the workload of spec into dir (created if missing; existing files
 * of the same names are replaced).  operations overrides
 * spec->operations when > 0 (a scenario's `operations:`).  Returns 0, or
 * FC_USAGE (bad spec, too many rows) / FC_IO / FC_NOMEM with a message in
 * err; on failure the files this call wrote are removed and *out is NULL.
 */
int workgen_generate(const struct workload_spec *spec, int operations,
		     const char *dir, struct workgen **out, char *err,
		     size_t errlen) FC_MUST_CHECK;

/* Number of operations. */
size_t workgen_count(const struct workgen *w);

/* Operation `index` (1-based), or NULL when out of range. */
const struct workgen_op *workgen_op(const struct workgen *w, int index);

/*
 * The change_source fault: rewrite operation index's CSV with the same row
 * keys and different payloads (replaced atomically by rename), and store
 * and return the new intent_digest.  The operation_id does not change, so a
 * route that reads the new file must stop with INTENT_CONFLICT.  On failure
 * the old file and digest stay.
 */
int workgen_change_source(struct workgen *w, int index,
			  char intent[IDENTITY_DIGEST_LEN + 1], char *err,
			  size_t errlen) FC_MUST_CHECK;

void workgen_free(struct workgen *w); /* NULL is a no-op */

#endif
