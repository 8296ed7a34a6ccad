/*
 * merge.h -- shard reports of one suite (`certify --shard I/N`) merged
 * into one report, as if one run had produced it.
 *
 * Owns: the rules for what may merge and how (merge.c states them as
 * invariants: same run configuration, every shard exactly once, verdicts
 * recomputed with the checker's verdict module, a schedule counted once,
 * signed inputs and output).  The command line (operands, messages, exit
 * codes, writing OUT) is cli/cmd_merge.c's.  Who includes it: cli/ and
 * tests/.  It reads the inputs only through rview.h, does no I/O and
 * reads no environment: the caller loads the inputs and passes the key.
 *
 * Ownership: the inputs are not modified; the merged document holds new
 * references to their schedules, so it stays valid after they are freed.
 */
#ifndef FENCECERT_MERGE_H
#define FENCECERT_MERGE_H

#include <stddef.h>

#include <jansson.h>

#include "common/error.h"
#include "reports/sign.h"

/*
 * Merge the n documents in[] (rview_load()ed; paths[i] names in[i] in
 * messages and in the output's "merged_from") into *out, a new reference.
 * With a key, every input must verify and *out is signed; a key of
 * length 0 (a variable set but empty) is refused.  key NULL is an
 * unsigned merge, for a caller that chose it explicitly (cmd_merge.c's
 * --unsigned): signatures are neither checked nor made, and *out carries
 * "unsigned": MERGE_UNSIGNED_NOTE, which no signed report has.
 *
 * Returns 0; FC_USAGE when the inputs do not merge (not shards of one
 * run, a signature fails, no input) with err saying why; FC_NOMEM.  On
 * error *out is NULL.
 */
#define MERGE_UNSIGNED_NOTE \
	"merged without a key: no input's signature was verified"

int merge_reports(json_t *const *in, const char *const *paths, size_t n,
		  const struct sign_key *key, json_t **out, char *err,
		  size_t errlen) FC_MUST_CHECK;

#endif
