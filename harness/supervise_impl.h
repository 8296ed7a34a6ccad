/*
 * supervise_impl.h -- what supervise.c and supervise_spawn.c share: the
 * insides of a supervisor and its processes.  No other file includes it.
 */
#ifndef FENCECERT_SUPERVISE_IMPL_H
#define FENCECERT_SUPERVISE_IMPL_H

#include <signal.h>

#include "supervise.h"
#include "watchdog.h"

#define LINE_MAX_BYTES 256  /* longest failpoint line accepted */
/* The child's end of the failpoint channel is always fd 3: a small number
 * every shell can redirect (dash takes single digits only). */
#define CHILD_FP_FD 3

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

struct supervisor {
	struct sv_proc *procs;
	struct watchdog wd;
	struct sv_event *queue;
	size_t qlen, qcap;
	struct sigaction old_chld;
};

#endif
