/*
 * route_supervisor.h -- a small supervisor for the route tests.
 *
 * It runs one route attempt as a real child process (`$FENCECERT route`,
 * or any route command such as routes/examples/route.sh) in its own process
 * group, with one end of a socketpair as FENCECERT_FAILPOINT_FD, answers
 * every failpoint with 'c' except the one chosen for a fault, where it
 * kills the group (SIGKILL), answers 'f', or stops the group (SIGSTOP) and
 * returns so another attempt can run before rs_resume().
 *
 * It also builds a scratch operation (workload JSON + CSV source with
 * awkward payloads) in a mkdtemp directory, and checks outcomes the way the
 * harness does: rows read back from the target by the observer
 * (fences/target.h), state and history read through the journal port.
 *
 * Every attempt's stdout/stderr goes to DIR/try-<n>.log; rs_log() prints it
 * when a test fails.  Helpers return 0 on success and -1 with a message in
 * rs_error (for cmocka's fail_msg) otherwise.
 */
#ifndef FENCECERT_TESTS_ROUTE_SUPERVISOR_H
#define FENCECERT_TESTS_ROUTE_SUPERVISOR_H

#include <stdbool.h>
#include <sys/types.h>

#include "journal/states.h"

#define RS_PATH 512
#define RS_MAX_HITS 160
#define RS_NAME 64

extern char rs_error[1024];

struct rs_op {
	char dir[64];              /* mkdtemp scratch directory */
	char kind[16];             /* "sqlite" or "file" */
	char journal[RS_PATH];     /* sqlite:DIR/journal.db */
	char target[RS_PATH];      /* sqlite:DIR/target.db or file:DIR/target */
	char target_path[RS_PATH / 2]; /* the path inside the target URL */
	char workload[RS_PATH];
	char source[RS_PATH];
	int nrows;
};

/* Scratch dir, workload and a source of nrows rows (keys k000000...). */
int rs_op_init(struct rs_op *op, const char *kind, int nrows);
void rs_op_cleanup(struct rs_op *op); /* removes the directory */

/* A fresh scratch dir holding a copy of everything in src's (journal,
 * target, workload, logs): the same operation in the same state, so one
 * expensive prefix of attempts can seed many experiments.  No attempt of
 * src may be running. */
int rs_op_clone(const struct rs_op *src, struct rs_op *dst);

/* Rewrite the source with other payloads (same keys): a changed intent. */
int rs_op_change_source(struct rs_op *op);

enum rs_action { RS_NONE, RS_KILL, RS_FAIL, RS_PAUSE };

/* Faults are given as an array ended by an entry with action RS_NONE
 * (or NULL for none); each fires at most once. */
#define RS_MAX_FAULTS 4

struct rs_fault {
	enum rs_action action;
	const char *failpoint;
	int hit;                   /* the n-th hit of failpoint; 0 means 1 */
};

/* How to start a route; argv NULL: { $FENCECERT, "route", NULL }. */
struct rs_route {
	const char *const *argv;
	const char *const *env;    /* extra "NAME=VALUE" entries or NULL */
};

struct rs_attempt {
	int try_number;
	pid_t pid;
	int fd;                    /* our end of the channel; -1 when closed */
	bool paused;               /* stopped at the fault's failpoint */
	bool fired[RS_MAX_FAULTS]; /* which faults fired */
	int status;                /* exit status, or 128 + signal */
	char hits[RS_MAX_HITS][RS_NAME];
	int nhits;
	char buf[256];             /* partial channel line */
	size_t buflen;
	struct rs_fault faults[RS_MAX_FAULTS + 1]; /* copied, RS_NONE-ended */
	char xcom[RS_PATH];        /* DIR/xcom-<try> */
	char run[RS_PATH];         /* DIR/run-<try> */
};

/* Start try `try_number` and supervise it until it ends or pauses. */
int rs_start(const struct rs_op *op, const struct rs_route *r, int try_number,
	     const struct rs_fault *faults, struct rs_attempt *a);

/* rs_start() with one fault (action RS_NONE: none). */
int rs_start1(const struct rs_op *op, const struct rs_route *r,
	      int try_number, enum rs_action action, const char *failpoint,
	      struct rs_attempt *a);

/* Continue a paused attempt (SIGCONT, answer 'c') until it ends. */
int rs_resume(struct rs_attempt *a);

/* Kill a still-running attempt (cleanup after a failed assertion). */
void rs_reap(struct rs_attempt *a);

/* Run tries first..max without faults until one exits 0 or 100; *last
 * is that attempt.  Also checks invariant 6 on every try: its first target
 * call is a probe (or it makes none) when the operation already existed. */
int rs_retry(const struct rs_op *op, const struct rs_route *r, int first,
	     int max, struct rs_attempt *last);

/* Which hit of its name the i-th hit of the attempt was (1, 2, ...). */
int rs_occurrence(const struct rs_attempt *a, int i);

/* 1 when the attempt hit `name`; index of the first target call
 * (fence_prepare, target_commit, probe, reconcile_probe) or -1. */
bool rs_hit(const struct rs_attempt *a, const char *name);
int rs_first_target_call(const struct rs_attempt *a);

/* Every source row present exactly `each` times in the target. */
int rs_check_rows(const struct rs_op *op, int each);

/* Path, size and mtime of every file of the target, as one string (the
 * database and its -wal/-shm, or the directory tree); "" when absent. */
void rs_target_stamp(const struct rs_op *op, char *out, size_t len);

/* Total rows in the target (any key). */
long long rs_total_rows(const struct rs_op *op);

/* Journal state of the operation (FC_STATE_NONE when there is none, -1 on
 * error) and a check that its history is a legal path with versions +1. */
int rs_journal_state(const struct rs_op *op);
int rs_check_history(const struct rs_op *op);

/* The operation id / intent digest of the workload (via routes/workload). */
int rs_ids(const struct rs_op *op, char *opid, char *intent);

/* A field of DIR/xcom-<try>/return.json as text ("" when absent). */
int rs_return_field(const struct rs_op *op, int try_number, const char *key,
		    char *out, size_t len);

/* The attempt exited 0, every source row is in the target once, and the
 * journal is COMPLETE with a legal history (the log is printed when the
 * attempt failed). */
int rs_check_complete(const struct rs_op *op, const struct rs_attempt *a);

/* Print an attempt's log to stderr. */
void rs_log(const struct rs_op *op, int try_number);

#endif
