/*
 * supervise_impl.h -- the insides of the supervisor (supervise.h): its
 * struct, its processes' struct, and the internal functions its four files
 * call on each other.  Included by those four files only:
 *
 *   supervise.c          the supervisor: lifecycle, event queue, the one
 *                        poll loop, reaping, deadlines, supervisor_spawn()
 *        |         \
 *        |          supervise_forksrv.c   the fork-server client: servers
 *        |         /                      per (argv, cwd), a launcher for
 *        v        v                       sv__spawn() that sends requests
 *   supervise_spawn.c    starting one process (sv__spawn())
 *        |
 *        v
 *   supervise_proc.c     one process: status, end, group, syscall
 *                        notifications, the calls acting on it; the clock
 *
 * Dependencies point down only: a file calls the internals of the files
 * below it, never above (ci/check-cycles).  The spawner reaches a fork
 * server only through struct sv_launcher, which supervise_forksrv.c hands
 * it; supervise.c alone links processes into sv->procs and queues events.
 */
#ifndef FENCECERT_SUPERVISE_IMPL_H
#define FENCECERT_SUPERVISE_IMPL_H

#include <sched.h>
#include <signal.h>

#include "common/child_setup.h"
#include "common/sanitizer.h"
#include "harness/proc/freeze.h"
#include "harness/proc/supervise.h"
#include "harness/proc/watchdog.h"

#define LINE_MAX_BYTES 256  /* longest failpoint line accepted */

/* Bounds on what one route's failpoint channel costs the poll loop
 * (docs/harness.md, "Bounds"):
 *   CHANNEL_READ_MAX  bytes read from one channel per wakeup: a route
 *                     flooding it gets that much of the loop, then the
 *                     loop reaps, enforces deadlines and polls again;
 *   CHANNEL_DRAIN_MAX bytes read from an ended process's channel before
 *                     its EXIT event (its last lines); the rest is dropped;
 *   SV_QUEUE_MAX      events queued: past it no channel is read (its
 *                     writer blocks) until the caller has taken events. */
#define CHANNEL_READ_MAX (16 * LINE_MAX_BYTES)
#define CHANNEL_DRAIN_MAX (256 * LINE_MAX_BYTES)
#define SV_QUEUE_MAX 4096

struct sv_proc {
	supervisor *sv;
	struct sv_proc *next;  /* in sv->procs (supervise.c) */
	pid_t pid;             /* also the process group id */
	int fp_fd;             /* our end of the failpoint channel, or -1 */
	bool fp_eof;
	char line[LINE_MAX_BYTES];
	size_t linelen;
	bool paused;
	struct frozen frozen;  /* paused: every process stopped (freeze.h) */
	bool reaper;           /* CHILD_CONTAIN_REAPER: no namespace ends
				  what it started when it is killed, so a
				  kill walks its tree (sv__kill_all()) */
	bool registered;       /* the watchdog knows the group */
	long long deadline_ms; /* 0: none */
	struct sv_status st;
	void *data;
	struct inject_seccomp_session *sess; /* NULL without a plan */
	bool sess_hup;         /* no process left under the filter */
	struct sv_sysfault *sysfaults; /* up to SV_SYSFAULT_LOG */
	size_t nsysfaults, sysfaults_total;
	char sess_err[200];
	/* contained: the read end of its report pipe (non-blocking), where
	 * its init writes CHILD_REPORT_END; -1 otherwise or once read */
	int report_fd;
	struct child_report end; /* CHILD_REPORT_END, once read */
	bool have_end;
	char *stacks;          /* the init's and the route's stacks when the
				  init shares our memory; freed once reaped */
};

/* One fork server (supervise_forksrv.c): a helper process started by
 * sv__spawn() with its SEQPACKET socket as proc->fp_fd; proc is not in
 * supervisor.procs. */
struct sv_forksrv {
	struct sv_forksrv *next;
	char *key;             /* argv and cwd, each NUL-terminated */
	size_t keylen;
	sv_proc *proc;
	cpu_set_t cpus;        /* the CPUs we last gave it (follow_cpus()) */
	bool cpus_given;
};

#define FORKSRV_TIMEOUT_MS 10000
#define FORKSRV_MAX 8          /* servers per supervisor; the oldest goes */

struct supervisor {
	struct sv_proc *procs;
	struct sv_forksrv *servers;
	long long forksrv_timeout_ms;
	struct watchdog wd;
	struct sv_event *queue; /* pending: queue[qhead..qlen) */
	size_t qhead, qlen, qcap;
	struct sigaction old_chld;
	bool chld_pending;      /* SIGCHLD seen since the last reap() */
	int null_fd;            /* /dev/null, every child's stdin; -1: not yet */
	enum child_contain contain;  /* supervisor_containment() */
	char contain_why[200];       /* why it is CHILD_CONTAIN_NONE */
	bool uncontained_ok;         /* supervisor_allow_uncontained() */
	int self_pidfd;         /* a pidfd of this process: a contained
				   child's init sees it readable if we died */
	const char *const *pass_env; /* supervisor_pass_env() */
};

/* --- supervise_proc.c ---------------------------------------------------- */

/* The leader was reaped with `status` at `now`: record how it ended (a
 * contained process's as its init reported it) and SIGKILL the rest of
 * its group. */
void sv__record_end(sv_proc *p, int status, long long now);

/* Reap what is left of an ended process's group; once the group is empty,
 * tell the watchdog to forget it. */
void sv__group_collect(sv_proc *p);

/* SIGKILL to p's group and, behind a subreaper (p->reaper), to every
 * process of its tree first (a descendant that left the group would
 * outlive the kill, and no namespace ends it). */
void sv__kill_all(sv_proc *p);

/* Kill p if it runs, reap it, wait (bounded) for its group to empty, close
 * its channel, free its session and p.  p must not be linked anywhere. */
void sv__proc_release(sv_proc *p);

/* Answer one pending notification of p's session, logging the fault if a
 * rule acted; never waits.  The first error is kept in p->sess_err. */
int sv__handle_syscall(sv_proc *p);

/* --- supervise_spawn.c --------------------------------------------------- */

/* What the child of a spawn is given (sv__spawn() fills it): how it sets
 * itself up, and what it runs. */
struct child_plan {
	struct child_setup cs;
	char *const *argv;
	char **envp;
	char *stacks;          /* exec'd and contained: the init's stack
				  (the upper half) and the route's */
	struct sandbox sb;     /* cs.sandbox points here when sandboxed */
};

/* Each half of child_plan.stacks (sanitized frames are big). */
#if FC_SANITIZED
#define SV_CHILD_STACK_SIZE (64 * 1024)
#else
#define SV_CHILD_STACK_SIZE (32 * 1024)
#endif

/* Another way to start the child than clone-and-exec here: launch() makes
 * the process cp describes and gives its pid, which is then our child as
 * if cloned here (a fork server clones it with CLONE_PARENT).  0, or an
 * error code with err filled. */
struct sv_launcher {
	int (*launch)(void *ctx, const struct sv_spawn *req,
		      const struct child_plan *cp, pid_t *pid, char *err,
		      size_t errlen);
	void *ctx;
};

/* Start a process (through `via`, or cloned and exec'd when it is NULL)
 * and wait until it runs the route; *out is not linked into sv->procs.
 * server: the channel is a SEQPACKET socket named by
 * PROTO_ENV_FORK_SERVER_FD instead of the failpoint channel.  On failure
 * nothing is left running. */
int sv__spawn(supervisor *sv, const struct sv_spawn *req,
	      const struct sv_launcher *via, bool server, sv_proc **out,
	      char *err, size_t errlen);

/* --- supervise_forksrv.c ------------------------------------------------- */

/* sv__spawn() through the fork server of req's (argv, cwd), started on
 * first use. */
int sv__forksrv_spawn(supervisor *sv, const struct sv_spawn *req,
		      sv_proc **out, char *err, size_t errlen);

/* Stop every fork server. */
void sv__forksrv_stop_all(supervisor *sv);

#endif
