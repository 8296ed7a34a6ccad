/*
 * orchestrator_impl.h -- what orchestrator.c (tries, zombies, faults) and
 * orchestrator_setup.c (a schedule's directory, workload, URLs and each
 * attempt's environment) share.  No other file includes it.
 */
#ifndef FENCECERT_ORCHESTRATOR_IMPL_H
#define FENCECERT_ORCHESTRATOR_IMPL_H

#include "harness/run/observe.h"
#include "harness/run/orchestrator.h"
#include "harness/inject/tcp_proxy.h"
#include "harness/run/workgen.h"

/* What the orchestrator knows about one attempt beyond its record. */
struct run {
	sv_proc *proc;       /* NULL once ended */
	int op, try_number;
	bool ended;
	bool paused;         /* stopped at a failpoint by a pause fault */
	long long paused_at; /* monotonic */
	int pause_fault;     /* index into faults, -1 */
	bool given_up;       /* zombie: the task moved on */
	bool resumed;
	struct inject_seccomp_plan *plan; /* syscall faults of this try, NULL */
	int *rule_fault;     /* plan rule i -> index into faults (-1: count) */
};

struct orch {
	const struct orch_params *p;
	struct rec_schedule *rec;
	struct run *runs;    /* parallel to rec->attempts */
	size_t nruns;
	struct workgen *wg;
	observer *obs;
	char schedule_id[64]; /* {schedule_id} */
	struct template_vars vars;
	char *journal_url;
	char **argv;         /* expanded route command */
	char **env;          /* expanded route env */
	long long t0;        /* monotonic start */
	long long zombie_wait_ms;
	int tries;
	int max_try;         /* highest try number a task may reach: tries, more
				after an operator cleared a task */
	bool *resume_done;   /* per fault: its resume happened as asked */
	tcp_proxy **proxies; /* per suite proxy (orchestrator_proxy.c) */
	char **proxy_urls;   /* {proxy:NAME} */
	int *proxy_fault;    /* per proxy: the fault armed on it, -1 */
	size_t nproxies;
	int rc;              /* fatal (out of memory) */
};

/* Generate the workload, bind the observer, expand URLs, argv and env. */
int orch__setup(struct orch *o, char *err, size_t errlen) FC_MUST_CHECK;

/* The record's operations (ids, expected rows) and requested faults. */
int orch__record_ops(struct orch *o) FC_MUST_CHECK;
int orch__record_faults(struct orch *o) FC_MUST_CHECK;

/* The SPEC section 7 environment of try k of op (heap, NULL-terminated;
 * free with orch__free_list), or NULL when out of memory. */
char **orch__attempt_env(struct orch *o, int op, int k, const char *xcom,
			 const char *run_dir);

/* "DIR/op<op>/<fmt...>" on the heap, or NULL. */
char *orch__op_path(const struct orch *o, int op, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void orch__free_list(char **v);

/* orchestrator_syscall.c: the seccomp plan of try k of op (*plan NULL
 * when it has no syscall faults), made before the try starts. */
int orch__seccomp_plan(struct orch *o, struct run *r, char *err,
		       size_t errlen) FC_MUST_CHECK;
void orch__seccomp_release(struct run *r);

/* A path made relative to the schedule's directory, as a glob:
 * "{dir}/a\*b" (or the escaped absolute path outside it). */
void orch__path_glob(const struct orch *o, const char *path, char *out,
		     size_t outlen);

/* Copy a discovery session's statistics into attempt idx; FC_NOMEM. */
int orch__seccomp_stats(struct orch *o, int idx,
			const struct inject_seccomp_session *s) FC_MUST_CHECK;

/* Does path name one of the journal's files (sqlite: the database and its
 * -journal / -wal), or its connection (a socket, when the journal is the
 * only server the route uses: PostgreSQL or etcd with a local target)? */
bool orch__journal_file(const struct orch *o, const char *path);
/* This fencecert binary (what routes get as FENCECERT_BIN). */
const char *orch__self_exe(void);

/* orchestrator_recover.c: fault fi (recover) after try k of op: run the
 * operator's `fencecert recover plan` and `recover apply`.  Returns apply's
 * exit status (0: it moved the operation), or -1 when it could not run;
 * `what` describes it for the record; *lease_left_ms is how long the lease
 * apply took is still held (0: none). */
int orch__operator(struct orch *o, int fi, int op, int k, char *what,
		   size_t whatlen, long long *lease_left_ms);
/* Record the first harness-side problem; the schedule becomes unverified. */
void orch__trouble(struct orch *o, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Does fault f apply to operation op (0: every operation)? */
bool orch__fault_for_op(const struct fault *f, int op);

/* Does fault f apply at the nth hit of fp in try k of op? */
bool orch__fault_here(const struct fault *f, int op, int k, const char *fp,
		      int nth);

/* Failpoints that wait (orchestrator_wait.c).  The comma-separated names
 * try k of op must wait at (malloc'd; NULL: out of memory); whether zombie
 * zi resumes when attempt idx reaches fp; whether anything acts at the nth
 * hit of fp in attempt idx (a PASS there is a harness bug). */
char *orch__wait_set(const struct orch *o, int op, int k);
bool orch__zombie_resumes_at(const struct orch *o, int zi, int idx,
			     const char *fp);
bool orch__acts_at(const struct orch *o, int idx, const char *fp, int nth);

/* Members (orchestrator_member.c).  Stop or start a member for fault fi;
 * it fired only when the script says the member is down or up and
 * serving. */
void orch__apply_member(struct orch *o, int fi, int attempt, int op);
/* start_member faults due after try idx, before its observation. */
void orch__starts_after(struct orch *o, int idx);
/* The member actions at this hit, in the order the schedule lists them. */
void orch__member_actions_at(struct orch *o, int idx, const char *fp, int nth);
/* Whether the schedule stops or starts members (it then runs alone). */
bool orch__changes_members(const struct orch_params *p);
/* Clean the schedule's namespace and give the services back. */
void orch__leave_services(struct orch *o);

/* What try idx's seccomp plan did: each rule that acted fired its fault
 * (orchestrator_syscall.c). */
void orch__collect_syscalls(struct orch *o, int idx);

/* Record that fault `fault` was applied (attempt: index, -1 between). */
void orch__note_applied(struct orch *o, int fault, int attempt, int op,
			const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Proxies (orchestrator_proxy.c).  Start the suite's proxies and set
 * o->vars.proxy; before any template naming one is expanded. */
int orch__proxies_start(struct orch *o, char *err, size_t errlen) FC_MUST_CHECK;
void orch__proxies_free(struct orch *o);
/* Arm try k's proxy faults (before it is spawned) / a refuse at a HIT. */
void orch__proxy_try_starts(struct orch *o, int op, int k);
void orch__proxy_hit(struct orch *o, int idx, const char *fp, int nth);
/* The hold_commit fault of attempt idx that holds a COMMIT now, or -1;
 * *armed says whether one is armed at all (worth asking again). */
int orch__proxy_holding(struct orch *o, int idx, bool *armed);
/* Let the COMMIT held for fault fi go on. */
void orch__proxy_release(struct orch *o, int fi);
/* Attempt idx ended or was given up: record what its proxy faults did and
 * disarm them. */
void orch__proxy_try_ends(struct orch *o, int idx);

#endif
