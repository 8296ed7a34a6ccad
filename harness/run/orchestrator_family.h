/*
 * orchestrator_family.h -- the port between the orchestrator's loop and
 * its fault families: members (orchestrator_member.c), proxies
 * (orchestrator_proxy.c), syscalls (orchestrator_syscall.c) and the
 * operator (orchestrator_recover.c).
 *
 * Owns: struct orch_family, the ops table each family fills (one extern
 * table per family), and orchestrator_family.c's list of the families in
 * event order with the calls that hand one event to all of them.  The
 * loop (orchestrator.c) drives a schedule and raises the events below; a
 * family keeps its own state (opaque to the loop, made by init, freed by
 * release) and reports through the schedule context (orchestrator_sched.h)
 * only: it never calls the loop, nor another family.
 *
 * Who includes it: orchestrator.c, orchestrator_family.c and the four
 * family files.
 *
 * The loop's own faults are kill, pause and fail at a failpoint (they make
 * zombies, which are the loop's), and lose_xcom, lose_pod and
 * change_source between tries (the task's pod, XCom and source, which the
 * loop's setup owns).  Every other action belongs to exactly one family
 * (`owns`).
 *
 * Invariants:
 *  1. Every hook may be NULL (the family has nothing to do then); state
 *     may be NULL (a family with none), and release(NULL) is a no-op.
 *  2. Hooks of one event run in the family order (orchestrator_family.c),
 *     which is part of the schedule's behaviour: what each writes to the
 *     record comes in that order.
 *  3. A hook never blocks on the route: it may start or stop a server, run
 *     the operator's CLI to its end, or arm a proxy, but waiting for the
 *     route's processes (leases, zombies) is the loop's.
 *  4. A failing init leaves nothing behind (*state NULL, nothing started).
 */
#ifndef FENCECERT_ORCHESTRATOR_FAMILY_H
#define FENCECERT_ORCHESTRATOR_FAMILY_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/proc/supervise.h"
#include "harness/run/orchestrator_sched.h"

/* Between two tries of a task: what ended, and what the loop must do
 * once the fault acted. */
struct orch_between {
	int op, k;          /* try k of op ended ... */
	bool zombie;        /* ... or was given up as a zombie */
	long long hold_ms;  /* out: serve live processes this long first (a
			       lease the operator took runs out) */
	bool cleared;       /* out: the task was cleared: it gets new tries */
};

struct orch_family {
	/* Whether fault action a is this family's. */
	bool (*owns)(enum fault_action a);
	/* A schedule with a fault of this family has the suite's services to
	 * itself (services_enter exclusive). */
	bool exclusive;
	/* Between tries, let every lease of another try run out before the
	 * fault acts (the loop waits, then calls between). */
	bool leases_expire_first;
	/* Between tries, the family reads an operation's journal entry as
	 * the watch attributed it: the watch lists after every attempt, also
	 * in a schedule of one operation (collect_watch_eager()). */
	bool reads_entries;

	/* Before the route's templates are expanded (s->vars has {dir},
	 * {schedule_id} and {service:}; a family may add to it).  0, or an
	 * error with err set and *state NULL. */
	int (*init)(struct orch_sched *s, void **state, char *err,
		    size_t errlen);
	/* Attempt idx (its record has op and try) is about to be spawned; the
	 * family may add to its spawn request.  0, FC_NOMEM, or another error
	 * with err set (the attempt then fails to spawn). */
	int (*try_starts)(void *st, struct orch_sched *s, int idx,
			  struct sv_spawn *req, char *err, size_t errlen);
	/* Attempt idx waits at the nth hit of failpoint fp; before the loop's
	 * own faults there. */
	void (*hit)(void *st, struct orch_sched *s, int idx, const char *fp,
		    int nth);
	/* The family's fault holding running attempt idx now (it then waits
	 * like a paused one, a zombie once given up), or -1; *armed: one may
	 * hold it later, ask again soon. */
	int (*holding)(void *st, struct orch_sched *s, int idx, bool *armed);
	/* Let the attempt held by fault fi (returned by holding) go on; its
	 * process was never stopped, and may have ended meanwhile. */
	void (*resume)(void *st, struct orch_sched *s, int fi);
	/* Attempt idx's process ended; proc says what it did (valid during
	 * the call only). */
	void (*exited)(void *st, struct orch_sched *s, int idx,
		       const sv_proc *proc);
	/* Attempt idx's process is gone (reaped and freed), before the target
	 * is observed; zombie: the task had given up on it. */
	void (*gone)(void *st, struct orch_sched *s, int idx, bool zombie);
	/* Attempt idx is over for its task: ended, or given up as a zombie. */
	void (*try_over)(void *st, struct orch_sched *s, int idx);
	/* Fault fi, one of this family's not at a failpoint, once try b->k of
	 * b->op ended (b->zombie: was given up). */
	void (*between)(void *st, struct orch_sched *s, int fi,
			struct orch_between *b);
	/* Every process of the schedule is gone: stop what the family started
	 * (before the services are given back) and free the state. */
	void (*release)(void *st, struct orch_sched *s);
};

extern const struct orch_family orch__members;   /* stop/start_member */
extern const struct orch_family orch__proxies;   /* cut, hold, refuse, delay */
extern const struct orch_family orch__syscalls;  /* syscall */
extern const struct orch_family orch__operator;  /* recover */
#define ORCH_FAMILIES 4

/* The families of one schedule: each one's state, in family order. */
struct orch_families {
	void *state[ORCH_FAMILIES];
};

/* The family owning fault action a, or NULL: one of the loop's own. */
const struct orch_family *orch__family_of(enum fault_action a);

/* Does the schedule have a fault of an `exclusive` family? */
bool orch__families_exclusive(const struct orch_params *p);
/* Does it have one of a family that `reads_entries`? */
bool orch__families_read_entries(const struct orch_params *p);

/* Each event, handed to every family having the hook, in family order.
 * init and try_starts stop at the first error and return it (init: the
 * families already made are released by orch__families_release). */
int orch__families_init(struct orch_families *fs, struct orch_sched *s,
			char *err, size_t errlen) FC_MUST_CHECK;
int orch__families_try_starts(struct orch_families *fs, struct orch_sched *s,
			      int idx, struct sv_spawn *req, char *err,
			      size_t errlen) FC_MUST_CHECK;
void orch__families_hit(struct orch_families *fs, struct orch_sched *s,
			int idx, const char *fp, int nth);
/* The first family's fault holding idx, or -1; *armed if any may later. */
int orch__families_holding(struct orch_families *fs, struct orch_sched *s,
			   int idx, bool *armed);
void orch__families_exited(struct orch_families *fs, struct orch_sched *s,
			   int idx, const sv_proc *proc);
void orch__families_gone(struct orch_families *fs, struct orch_sched *s,
			 int idx, bool zombie);
void orch__families_try_over(struct orch_families *fs, struct orch_sched *s,
			     int idx);
void orch__families_release(struct orch_families *fs, struct orch_sched *s);

/* Fault fi's event, handed to the family owning it (which must have the
 * hook: resume for a fault its holding returned, between for any). */
void orch__families_resume(struct orch_families *fs, struct orch_sched *s,
			   int fi);
void orch__families_between(struct orch_families *fs, struct orch_sched *s,
			    int fi, struct orch_between *b);

#endif
