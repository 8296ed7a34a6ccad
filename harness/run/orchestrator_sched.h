/*
 * orchestrator_sched.h -- the schedule being run, as every part of the
 * orchestrator sees it: its parameters, its record, its clock, what its
 * templates expand to, and the first error that leaves no record.
 *
 * Owns: struct orch_sched (the context object), the two ways a part reports
 * what happened (orch__note_applied: a fault acted; orch__trouble: the
 * schedule cannot be certified; orch__fail: no record at all), the
 * schedule's directory layout (orch__op_path) and the predicates on when a
 * fault applies.
 *
 * Who includes it: harness/run/orchestrator*.c only.  It is the bottom of
 * the orchestrator: the loop (orchestrator.c), its setup and every fault
 * family use it; it calls none of them.
 *
 * Invariants:
 *  1. The first trouble wins: rec->status and rec->error keep the first
 *     problem, so the record names the cause, not a consequence.
 *  2. The first fatal error wins likewise: `fatal` holds its real code
 *     (FC_NOMEM, FC_IO from waiting on processes, ...) and `fatal_msg`
 *     says what failed; once set, every loop of the orchestrator ends.
 *  3. Families write only the record fields of the faults and attempts
 *     they act on (fired[], applied through orch__note_applied, an
 *     attempt's syscalls and journal_failed) and, at start, the {proxy:}
 *     variables; the rest belongs to the loop.
 */
#ifndef FENCECERT_ORCHESTRATOR_SCHED_H
#define FENCECERT_ORCHESTRATOR_SCHED_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/model/record.h"
#include "harness/model/scenario.h"
#include "harness/run/orchestrator.h"

struct orch_sched {
	const struct orch_params *p;
	struct rec_schedule *rec;
	long long t0;               /* monotonic start */
	char schedule_id[64];       /* {schedule_id} */
	struct template_vars vars;  /* {dir}, {schedule_id}, {service:}, {proxy:} */
	const char *journal_url;    /* expanded (orchestrator_setup.c owns it);
				       NULL before setup */
	snap_durable *durable;      /* orch_params.track_power: what the
				       schedule's files would keep if power
				       failed now (the syscall family feeds it
				       every sync); NULL */
	int power_lost;             /* a syscall fault's power_loss killed the
				       attempt that just ended: its index
				       into the faults, for the loop to bring
				       the files back to what was synced; -1
				       (orchestrator_syscall.c sets it) */
	int fatal;                  /* first error that leaves no record; 0 */
	char fatal_msg[200];        /* what failed */
};

/* Milliseconds since the schedule started (monotonic). */
long long orch__elapsed_ms(const struct orch_sched *s);

/* Record the first harness-side problem; the schedule becomes unverified. */
void orch__trouble(struct orch_sched *s, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The store refused to keep a state the recording took (FC_NOSPACE,
 * harness/run/snapshot.h): not trouble -- that point is not recorded, and
 * the schedules that would start there run whole; counted, the first
 * reason kept. */
void orch__state_refused(struct orch_sched *s, const char *why);

/* Record the first error after which no record can be made (invariant 2). */
void orch__fail(struct orch_sched *s, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* orch__fail(s, FC_NOMEM, "out of memory running schedule") */
void orch__out_of_memory(struct orch_sched *s);

/* Record that fault `fault` was applied (attempt: index, -1 between). */
void orch__note_applied(struct orch_sched *s, int fault, int attempt, int op,
			const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* "DIR/op<op>/<fmt...>" on the heap, or NULL. */
char *orch__op_path(const struct orch_sched *s, int op, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The template variables as the harness itself reaches the servers: like
 * s->vars, but {proxy:NAME} is the proxy's upstream, so no proxy fault
 * ever meets the harness's own reads (the journal's listing, the target's
 * observation).  *u holds the upstream URLs *v points into: free it with
 * orch__upstreams_free() after the last use of *v.  0, or an error with
 * err set.
 */
struct orch_upstreams;
int orch__harness_vars(const struct orch_sched *s, struct template_vars *v,
		       struct orch_upstreams **u, char *err, size_t errlen)
	FC_MUST_CHECK;
void orch__upstreams_free(struct orch_upstreams *u); /* NULL: no-op */

/* This fencecert binary: routes get it as FENCECERT_BIN, the operator of a
 * recover fault runs it. */
const char *orch__self_exe(void);

/* Does fault f apply to operation op (0: every operation)? */
bool orch__fault_for_op(const struct fault *f, int op);

/* Does fault f act at the nth hit of fp in try k of op? */
bool orch__fault_here(const struct fault *f, int op, int k, const char *fp,
		      int nth);

#endif
