/*
 * orchestrator.h -- the Airflow model that runs one schedule.
 *
 * One schedule = one fresh directory, one deterministic workload (workgen),
 * and a list of faults.  Operations are tasks run in order; each task has
 * tries 1..retries+1:
 *
 *   - every try gets a fresh, empty XCom dir DIR/op<i>/xcom/try-<k>
 *     (Airflow clears XCom when a try starts) and FENCECERT_PREV_XCOM_DIR
 *     names the previous try's; DIR/op<i>/run persists across tries until a
 *     lose_pod fault wipes it;
 *   - exit 0 ends the task in success, exit 100 ends it failed (no more
 *     tries), anything else (other exits, signals, timeouts) moves on to the
 *     next try while tries remain;
 *   - a try paused by a fault becomes a zombie: after max(zombie_delay_ms,
 *     lease_ttl_ms) the task gives up on it and the next try starts while
 *     it still lives; it is resumed per its fault (after the next try ended,
 *     when the next try reaches a failpoint -- the next try then waits at
 *     that failpoint until the zombie ended --, or never: killed at the end)
 *     and its exit is recorded but does not change the task;
 *   - no try starts and no zombie continues until max(zombie_delay_ms,
 *     lease_ttl_ms) has passed since the last try ended (Airflow's
 *     retry_delay) or since the event that resumes it, so every lease of
 *     another try has expired: whether an attempt meets a live lease or a
 *     stale epoch never depends on the machine's speed;
 *   - kill/pause/fail apply at the hit-th HIT of a failpoint in try
 *     `attempt` of the fault's operation (0: every operation);
 *     lose_xcom/lose_pod/change_source apply once try `after_attempt` ended;
 *     stop_member/start_member either way, as the fault says;
 *   - the schedule holds the services' lock (services_enter): exclusive when
 *     it stops or starts members, so no other schedule sees that; at the
 *     end its {schedule_id} namespace is cleaned and stopped members are
 *     started again (services_leave).
 *
 * Besides SPEC section 7's variables every attempt gets
 * FENCECERT_PREV_XCOM_DIR, FENCECERT_LEASE_TTL_MS, FENCECERT_LEASE_OWNER
 * ("op<i>-try<k>") and FENCECERT_BIN (this fencecert binary, so routes in
 * other languages can use its journal CLI).
 *
 * The target is observed after every process ends (and when a paused try
 * is given up), so the record says which attempt changed which rows; the
 * journal is listed after every process ends too, so the record says
 * which operation wrote which entry under which id (collect.h); at the
 * end those entries (through the port) and the surviving return.json
 * files are read into the record.  A route with `journal: none` gets no
 * FENCECERT_JOURNAL and is not listed.  A requested fault that never
 * fired is marked so (rec_schedule.fired).
 *
 * Syscall faults (FAULT_SYSCALL) of try k run that try under a seccomp
 * plan (inject_seccomp.h) built before it starts; tries without one get no
 * filter.  A rule that failed a call or killed the try marks its fault
 * fired and is recorded as applied.
 *
 * Ownership: orchestrator_run() returns a record the caller frees with
 * record_free().  The directory stays; the caller removes it.
 *
 * Who includes it: harness/certify (a worker runs each schedule through
 * it) and tests; inside harness/run, the orchestrator's own parts for
 * struct orch_params.  Its parts (orchestrator_*.h: the schedule context,
 * the fault families' port, setup, wait set) are not for other modules.
 * Invariants: the numbered list at the top of orchestrator.c.
 */
#ifndef FENCECERT_ORCHESTRATOR_H
#define FENCECERT_ORCHESTRATOR_H

#include <stddef.h>

#include "common/error.h"
#include "harness/model/record.h"
#include "harness/model/scenario.h"
#include "harness/run/services.h"
#include "harness/run/snapshot.h"
#include "harness/proc/supervise.h"

/*
 * One try of operation `op` that another schedule ran and recorded
 * (orch_params.record): it reached hits[0..nhits) and fault `fault` of
 * this schedule (a kill or power_loss at hits[nhits-1]) ended it, leaving
 * state `state` of the store.  The orchestrator does not run it: it
 * restores the state, records the attempt as the recording saw it
 * (rec_attempt.seeded), observes, and goes on with the next try.
 */
struct orch_seed {
	int op, try_number;
	const char *const *hits;
	size_t nhits;
	int fault;
	const char *state;
	const char *what;            /* a syscall fault: how it killed the try
				    (rec_snap.what), else NULL */
	const char *model;           /* the power model recorded with the
					state (snap_take_model), when a power
					loss follows; else NULL */
	long long start_wall_ms;     /* when it started, and */
	long long end_wall_ms;       /* ended: leases run from there */
};

/* What a worker keeps from one schedule to the next: a row store with the
 * expected rows of the last workload it saw, lent to each schedule of it
 * (obs_store_borrow) instead of one insert per row (the same workload
 * gives the same keys: workgen.h), and the rows the schedules of that
 * workload ended with, which an observation of the same rows repeats
 * instead of storing them again (obs_store_keep).  Zeroed to start;
 * orch_cache_release(). */
struct orch_cache {
	obs_store *expected;  /* expected rows, kept observations */
	char *shape;          /* the workload they are of: each operation's
				 row count */
};

void orch_cache_release(struct orch_cache *c);

struct orch_params {
	const struct suite *suite;
	const struct route_spec *route;
	const char *scenario;        /* name, for the record */
	const char *schedule;        /* string form, for the record */
	const struct fault *faults;
	size_t nfaults;
	int operations;              /* workload operations; 0: the suite's */
	const char *dir;             /* the schedule's own directory (exists) */
	supervisor *sv;
	services *services;          /* the suite's servers; NULL: none */
	bool keep_namespaces;        /* leave {schedule_id}'s keys/schemas */
	bool full_deltas;            /* keep every changed row of an attempt,
					not RECORD_DELTAS_KEPT of them */
	/* Syscall discovery: op 1 try 1 runs under a plan that counts these
	 * syscalls on these paths, recorded in its rec_attempt.syscalls. */
	const struct explore_spec *sys_discover;
	/* Proxy discovery: the COMMITs proxy_discover->proxy relays during op
	 * 1 try 1, recorded in its rec_attempt.proxy_commits. */
	const struct explore_spec *proxy_discover;
	/* Crash states (harness/run/snapshot.h): the run's store, NULL when
	 * the schedule's state does not live in its files (then no seeds,
	 * no recording, and a power_loss fault makes it unverified). */
	snap_store *snaps;
	bool record;          /* snapshot at every HIT of the first try of op 1
				 run here, until a fault acts in it
				 (rec_schedule.snaps) */
	bool track_power;     /* watch every fsync/fdatasync/syncfs/sync of
				 every try (harness/run/snapshot.h): needed by
				 power_loss faults and power states */
	const struct orch_seed *seed; /* op 1's first tries, in order */
	size_t nseed;
	struct orch_cache *cache;     /* the worker's; NULL: nothing kept */
};

/*
 * Run the schedule.  Returns 0 and a record, also when the route misbehaved
 * or could not be started (then record->status/error say so and the
 * checker calls the schedule unverified).  Returns an error only when no
 * record could be made: FC_NOMEM (out of memory), or the error waiting on
 * the schedule's processes failed with (FC_IO when poll failed); then *out
 * is NULL and err says which.
 */
int orchestrator_run(const struct orch_params *p, struct rec_schedule **out,
		     char *err, size_t errlen) FC_MUST_CHECK;

#endif
