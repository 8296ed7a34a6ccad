/*
 * journal_syscalls.h -- self-certification of a journal adapter under
 * syscall faults (docs/syscall-faults.md), shared by the SQLite, PostgreSQL
 * and etcd tests (test_journal_syscalls*.c).
 *
 * A driver (the test binary re-executed with --driver URL) walks JSYS_OPS
 * operation(s) from create to COMPLETE through the journal port and, after
 * every call that returned 0, writes "ACK op version state" to its stdout:
 * what it was told is durable (a read's answer included).  When a call
 * fails it re-reads the entry and carries on from what the journal says
 * (at most JSYS_DRIVER_ERRORS failures), the way a route reconciles.
 *
 * jsys_explore() runs it under the supervisor with a seccomp plan:
 *
 *   1. discovery: count every in-scope occurrence of the backend's
 *      syscalls (the backend's scope: the journal's files, or the TCP
 *      peer of its server);
 *   2. for each chosen occurrence N of each syscall and each of its
 *      actions, a fresh journal and the one rule "SYSCALL#N:ACTION"; the
 *      fault must fire exactly once.  Then the journal is checked, each
 *      entry once it agrees with its history (a write a killed driver
 *      had sent may still land; 5 s at most):
 *        - it opens;
 *        - every history is a legal path (versions 1..n, the first row
 *          NONE -> PREPARING, each row from the previous row's state, each
 *          edge in state_transition_legal(), the entry in row n's state);
 *        - every acknowledged (op, version, state) is in the history;
 *      a driver that was not killed (an errno fault) must have finished
 *      every operation itself; and a second driver without faults
 *      finishes every operation, checked the same way.
 *
 * FENCECERT_JSYS_TRACE=1 prints each schedule's wall time.
 */
#ifndef FENCECERT_TESTS_JOURNAL_SYSCALLS_H
#define FENCECERT_TESTS_JOURNAL_SYSCALLS_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/inject/inject_seccomp.h"

#define JSYS_OPS 1
#define JSYS_DRIVER_ERRORS 8

/* One faulted (or discovery) run's journal. */
struct jsys_run {
	char dir[600];  /* scratch dir of the run (the driver's acks) */
	char url[1024]; /* the journal, empty before the run */
	unsigned long n; /* the run's number, for unique names */
};

/* A syscall to explore, and what to do at its occurrences. */
struct jsys_syscall {
	const char *name;
	const char *const *actions; /* NULL-terminated rule actions */
	unsigned long every;        /* 0 or 1: every occurrence; k > 1:
				     * occurrences 1, 1+k, 1+2k ... and the
				     * last (a deterministic sample) */
};

struct jsys_backend {
	const char *name;                   /* in messages: "sqlite" ... */
	const struct jsys_syscall *syscalls;
	size_t nsyscalls;
	/* r->dir exists; fill r->url with a fresh, empty journal */
	void (*fresh)(struct jsys_run *r);
	/* the plan's scope (watch / ignore globs) for run r */
	void (*scope)(const struct jsys_run *r, struct inject_seccomp_plan *p);
	/* optional: after the run was checked (drop a schema ...) */
	void (*release)(const struct jsys_run *r);
};

/*
 * The test binary's main(): the driver when argv says so (--driver URL),
 * else the supervisor, the one cmocka test `test` named `name`, then
 * `after` (may be NULL: cleanup of the backend's server).  Returns the exit
 * status.
 */
int jsys_main(int argc, char **argv, const char *name,
	      void (*test)(void **state), void (*after)(void));

/* The whole exploration of the header comment, as cmocka assertions;
 * skips when seccomp user notification is unavailable.  counts[s] gets
 * the discovered occurrences of b->syscalls[s] (at most 16 syscalls). */
void jsys_explore(const struct jsys_backend *b, unsigned long *counts);

/* The value of environment variable `name` (a server's URL); skips the
 * calling test, saying why, when it is unset or empty. */
const char *jsys_server_or_skip(const char *name);

/*
 * The exploration of a journal adapter that talks to a server (its scope:
 * that server's sockets, by peer): every sendto x kill_before, kill_after,
 * errno:ECONNRESET and every recvfrom x kill_before, errno:ECONNRESET
 * (b->syscalls is ignored); both must have occurred.
 */
void jsys_explore_sockets(const struct jsys_backend *b);

#endif
