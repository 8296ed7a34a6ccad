/*
 * orchestrator_setup.h -- what a schedule needs before its first try, and
 * what every try is started with: the workload (workgen), the target
 * observer, the expanded journal URL, route argv and env, the record's
 * skeleton, and each attempt's environment (SPEC section 7).
 *
 * Owns: struct orch_setup and everything in it (the journal URL the
 * schedule context borrows included).
 *
 * Who includes it: orchestrator_setup.c and orchestrator.c, which calls
 * orch__setup_vars(), then the fault families' init (a proxy adds
 * {proxy:NAME}), then orch__setup_start(), and orch__setup_release() at
 * the end.  It calls none of the fault families and never the loop.
 *
 * Invariants:
 *  1. Nothing here starts a route's process; the loop does, with what this
 *     prepared.  (The observer may run its command, later, for the loop.)
 *  2. The route's journal URL, argv and env are expanded once, here,
 *     after every variable ({proxy:NAME} included) is known.
 */
#ifndef FENCECERT_ORCHESTRATOR_SETUP_H
#define FENCECERT_ORCHESTRATOR_SETUP_H

#include "common/error.h"
#include "harness/run/observe.h"
#include "harness/run/orchestrator_sched.h"
#include "harness/run/workgen.h"

/* Fields are read by the loop, written here only. */
struct orch_setup {
	struct workgen *wg;  /* the workload */
	observer *obs;       /* the target's observer */
	char *journal_url;   /* expanded; s->journal_url points here */
	char **argv;         /* expanded route command */
	char **env;          /* expanded route env */
	char **writable;     /* what an attempt may write, sandboxed: the
				schedule dir, then the route's `writable:` */
};

/* {schedule_id}, {dir} and {service:NAME} into s->vars. */
void orch__setup_vars(struct orch_sched *s);

/* Generate the workload, bind the observer, expand the journal URL, argv
 * and env.  0, or an error with err set (FC_NOMEM: out of memory); what
 * was made is freed by orch__setup_release() either way. */
int orch__setup_start(struct orch_setup *su, struct orch_sched *s, char *err,
		      size_t errlen) FC_MUST_CHECK;

void orch__setup_release(struct orch_setup *su);

/* The record's faults (a copy of the schedule's) and fired flags.  0 or
 * FC_NOMEM. */
int orch__record_faults(struct orch_sched *s) FC_MUST_CHECK;

/* The record's operations (ids, row counts) from the workload, and its row
 * store, a private temporary file (never in the schedule's dir, which the
 * route may write) with every operation's keys.  0, or an error with err
 * set (FC_NOMEM: out of memory). */
int orch__record_ops(struct orch_sched *s, const struct orch_setup *su,
		     char *err, size_t errlen) FC_MUST_CHECK;

/* The worker's cache (orch_cache) keeps the rows of the schedule's
 * observations (obs_store_keep, the first few distinct ones), so that a
 * later schedule that sees the same rows repeats them instead of storing
 * them again.  Nothing is
 * lost when it cannot: the next schedule stores its own. */
void orch__keep_rows(const struct orch_sched *s);

/* The environment of try k of op (heap, NULL-terminated; free with
 * orch__free_list), or NULL when out of memory. */
char **orch__attempt_env(const struct orch_setup *su,
			 const struct orch_sched *s, int op, int k,
			 const char *xcom, const char *run_dir);

void orch__free_list(char **v);

#endif
