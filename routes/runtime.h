/*
 * runtime.h -- one attempt of a certified route: the SPEC section 6
 * algorithm (journal, lease, fence, evidence) with a failpoint before and
 * after every journal transition and every target call.  The protocol and
 * its invariants are written down at the top of runtime.c; the failpoint
 * names are listed in docs/failpoints.md.
 *
 * runtime_run() returns the exit status of the route process:
 *
 *   0    the operation is COMPLETE (this attempt may not have mutated)
 *   75   transient failure; the orchestrator may retry
 *   100  fail-closed stop (COMMIT_UNKNOWN, INTENT_CONFLICT, a contradiction
 *        between journal and fence): an operator must look; do not retry
 *   64   usage or configuration error
 *
 * and prints one human line about the attempt on stderr (state reached and
 * why it stopped; never a URL password or a row value).
 *
 * Who includes it: the route command (cli/cmd_route.c) and the controls;
 * runtime.c and runtime_step.c through runtime_impl.h.  It reaches the
 * journal and the target through their ports only.
 */
#ifndef FENCECERT_RUNTIME_H
#define FENCECERT_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "common/protocol.h"
#include "fences/fence.h"

/* The statuses of SPEC section 6, as common/protocol.h numbers them. */
enum route_exit {
	ROUTE_EXIT_COMPLETE = PROTO_EXIT_COMPLETE,
	ROUTE_EXIT_USAGE = PROTO_EXIT_USAGE,
	ROUTE_EXIT_RETRY = PROTO_EXIT_RETRY,
	ROUTE_EXIT_STOP = PROTO_EXIT_STOP,
};

#define ROUTE_DEFAULT_LEASE_OWNER "route"
#define ROUTE_DEFAULT_LEASE_TTL_MS 30000LL

/* What one attempt is told (SPEC section 7).  Strings are borrowed. */
struct route_config {
	const char *journal_url;   /* FENCECERT_JOURNAL */
	const char *target_url;    /* FENCECERT_TARGET */
	const char *workload_path; /* FENCECERT_WORKLOAD */
	long long try_number;      /* FENCECERT_TRY_NUMBER, >= 1 */
	const char *run_dir;       /* FENCECERT_RUN_DIR; NULL: no checkpoint */
	const char *xcom_dir;      /* FENCECERT_XCOM_DIR; NULL: no return.json */
	const char *lease_owner;   /* FENCECERT_LEASE_OWNER */
	long long lease_ttl_ms;    /* FENCECERT_LEASE_TTL_MS */
	bool evidence_no_fsync;    /* return.json and checkpoint.json left to
				    * the page cache: the no-fsync control
				    * only (routes/controls.c) */
};

/* Fill the defaults: try 1, owner "route", ttl 30 s, evidence fsynced,
 * everything else NULL. */
void route_config_init(struct route_config *c);

/* Run one attempt of the certified route (fence port).  Returns an exit
 * status from enum route_exit. */
int runtime_run(const struct route_config *c);

/*
 * How an attempt reaches its target.  The certified route uses the fence
 * port; routes/controls.c supplies deliberately broken implementations to
 * show what the certification rejects.  Each call has the contract of its
 * fence.h namesake; `t` is what open() returned.
 */
struct runtime_target {
	const char *variant; /* label in the report line; NULL: certified */
	int (*open)(const char *url, void **t, char *err, size_t errlen);
	void (*close)(void *t);
	const char *(*name)(void *t);
	const char *(*errmsg)(void *t);
	int (*prepare)(void *t, const char *op, long long epoch);
	int (*apply)(void *t, long long epoch, const struct fence_batch *b,
		     enum fence_outcome *outcome);
	int (*probe)(void *t, const char *op, struct fence_probe *out);
};

/* The certified way: the fence port; the handle open() returns is the
 * fence_open() handle (controls reuse it with another variant label,
 * target URL or fence setting). */
extern const struct runtime_target runtime_fence_port;

/* runtime_run() with another way to the target (controls only). */
int runtime_run_with(const struct route_config *c,
		     const struct runtime_target *target);

#endif
