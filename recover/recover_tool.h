/*
 * recover_tool.h -- the operator's recovery tool, one call per subcommand
 * of `fencecert recover`:
 *
 *   recover_inspect  entry, lease, history and the fence's probe (read-only)
 *   recover_plan     which actions are safe now and why         (read-only)
 *   recover_apply    one action, as a CAS on the expected version, audited
 *   recover_list     operations that stopped or went stale      (read-only)
 *
 * Owner: recover/ -- recover_show.c (inspect, plan, list), recover_apply.c
 * (apply), recover_facts.c (the facts all of them gather, and the output
 * they share); the decision itself is recover.c's (recover.h), free of I/O.
 * Who includes it: cli/cmd_recover.c, which parses the options into a
 * struct recover_request and calls one of these; nothing else needs to.
 *
 * Invariants:
 *  1. inspect, plan and list write nothing: the journal is opened
 *     read-only (a sqlite: journal that does not exist is NOT_FOUND, never
 *     created) and the fence is only probed, hands off
 *     (fence_hands_off()): a pending transaction is left for the operator.
 *  2. apply gathers the facts afresh and decides again; it moves the entry
 *     only by one CAS on r->expect whose evidence is the audit record
 *     (recover_audit_json()), after fencing when the action needs it.
 *  3. Nothing printed carries a URL password, row values or SQL.
 *
 * Output and errors: machine output (r->json) or text on stdout; errors on
 * stderr as "fencecert: FAMILY: message" (cli_fail()).  Each call returns
 * the process exit status (common/cli.h): 0 ok, 2 NOT_FOUND,
 * 4 ILLEGAL_TRANSITION (the plan refuses the action), 7 LEASE_HELD,
 * 8 RECOVERY_CONFLICT, 64 USAGE, 69 JOURNAL_UNAVAILABLE /
 * FENCE_UNAVAILABLE, 1 otherwise.  Each call opens and closes everything
 * it uses; the request is only read.
 */
#ifndef FENCECERT_RECOVER_TOOL_H
#define FENCECERT_RECOVER_TOOL_H

#include <stdbool.h>

#include "journal/states.h"
#include "recover/recover.h"

/* `recover list` counts an entry as stopped after this long without a
 * change (--stale-after). */
#define RECOVER_STALE_AFTER_DEFAULT_MS (15LL * 60 * 1000)

/* One invocation; strings are borrowed for the call. */
struct recover_request {
	const char *journal_url;  /* every subcommand */
	const char *target_url;   /* inspect, plan, apply */
	const char *op;           /* inspect, plan, apply */
	enum recover_action action; /* apply */
	long long expect;         /* apply: the version `plan` showed */
	const char *actor;        /* apply: who acts (recorded) */
	const char *reason;       /* apply: why (recorded) */
	bool force;               /* apply: act without proof (recorded) */
	state_set states;         /* list: only these; 0 = all but COMPLETE */
	long long stale_ms;       /* list: idle time before an entry counts
				   * as stopped */
	bool json;                /* JSON on stdout instead of text */
};

int recover_inspect(const struct recover_request *r);
int recover_plan(const struct recover_request *r);
int recover_apply(const struct recover_request *r);
int recover_list(const struct recover_request *r);

#endif
