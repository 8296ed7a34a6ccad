/*
 * supervise_impl.h -- what supervise.c and supervise_spawn.c share: the
 * insides of a supervisor and its processes.  No other file includes it.
 */
#ifndef FENCECERT_SUPERVISE_IMPL_H
#define FENCECERT_SUPERVISE_IMPL_H

#include <signal.h>

#include "common/child_setup.h"
#include "harness/proc/supervise.h"
#include "harness/proc/watchdog.h"

#define LINE_MAX_BYTES 256  /* longest failpoint line accepted */

struct sv_proc {
	supervisor *sv;
	struct sv_proc *next;
	pid_t pid;             /* also the process group id */
	int fp_fd;             /* our end of the failpoint channel, or -1 */
	bool fp_eof;
	char line[LINE_MAX_BYTES];
	size_t linelen;
	bool paused;
	bool registered;       /* the watchdog knows the group */
	long long deadline_ms; /* 0: none */
	struct sv_status st;
	void *data;
	struct inject_seccomp_session *sess; /* NULL without a plan */
	bool sess_hup;         /* no process left under the filter */
	struct sv_sysfault *sysfaults; /* up to SV_SYSFAULT_LOG */
	size_t nsysfaults, sysfaults_total;
	char sess_err[200];
};

/* Answer one pending notification of p (supervise.c). */
int sv__handle_syscall(sv_proc *p);

/* One fork server (supervise_forksrv.c): a helper process started by
 * sv__spawn() with its SEQPACKET socket as proc->fp_fd; proc is not in
 * supervisor.procs. */
struct sv_forksrv {
	struct sv_forksrv *next;
	char *key;             /* argv and cwd, each NUL-terminated */
	size_t keylen;
	sv_proc *proc;
};

#define FORKSRV_TIMEOUT_MS 10000
#define FORKSRV_MAX 8          /* servers per supervisor; the oldest goes */

/* What the child of a spawn is given (supervise_spawn.c fills it): how it
 * sets itself up, and what it runs. */
struct child_plan {
	struct child_setup cs;
	char *const *argv;
	char **envp;
};

/* Start a process and wait until it runs (supervise_spawn.c); *out is not
 * linked into sv->procs.  server: the channel is a SEQPACKET socket named
 * by FENCECERT_FORK_SERVER_FD instead of the failpoint channel. */
int sv__spawn(supervisor *sv, const struct sv_spawn *req, bool server,
	      sv_proc **out, char *err, size_t errlen);

/* Have the fork server of req start cp; *pid on success
 * (supervise_forksrv.c). */
int sv__forksrv_spawn(supervisor *sv, const struct sv_spawn *req,
		      const struct child_plan *cp, pid_t *pid, char *err,
		      size_t errlen);

/* Stop every fork server. */
void sv__forksrv_stop_all(supervisor *sv);

struct supervisor {
	struct sv_proc *procs;
	struct sv_forksrv *servers;
	long long forksrv_timeout_ms;
	struct watchdog wd;
	struct sv_event *queue;
	size_t qlen, qcap;
	struct sigaction old_chld;
	bool chld_pending;      /* SIGCHLD seen since the last reap() */
	int null_fd;            /* /dev/null, every child's stdin; -1: not yet */
};

#endif
