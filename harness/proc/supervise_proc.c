/*
 * supervise_proc.c -- one process of the supervisor (supervise.h): what
 * it is and what can be done to it, from the outside.  Its status and how
 * it ended, its process group until the watchdog may forget it, the
 * syscall notifications of its seccomp session and the log of the faults
 * that acted, the signals and answers the caller sends it.  The supervisor's
 * clock is here too, the bottom of harness/proc: everything above reads it.
 *
 * The bottom of the supervisor's files (supervise_impl.h): it calls none of
 * them.  It neither starts processes (supervise_spawn.c) nor knows the
 * supervisor's list, queue or loop (supervise.c).
 *
 * Invariants:
 *  1. A process group stays registered with the watchdog until
 *     kill(-pgid, 0) says it is empty (a pgid is not reused while any
 *     member lives, so the watchdog never signals a stranger's group).
 *  2. When the leader has been reaped the whole group is SIGKILLed
 *     (sv__record_end()): nothing a route started may outlive it.
 *  3. sv__handle_syscall() never waits for the route: one notification,
 *     polled with a zero timeout, answered before it returns.
 *  4. A contained process's end is its init's report (CHILD_REPORT_END:
 *     the route's own wait status, the descendants it killed), read once
 *     the init is reaped; without one (the init was killed, and its
 *     namespace with it) the init's status stands and the descendants
 *     are not known (-1).  Its stacks are freed only once it is reaped:
 *     an exec'd attempt's init runs on our memory.
 *  5. A process resumed goes on where its supervisor runs now, with its
 *     direct children (a contained attempt's route is its init's child):
 *     a pool worker moves to its turn's CPU (pool.c invariant 5), and a
 *     try paused under one turn and resumed under another runs beside
 *     it.  Placement is a speed-up only; a failure changes nothing else.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "harness/proc/supervise_impl.h"

#define GROUP_DRAIN_MS 2000 /* how long a release waits for a group */


/* --- how it ends ------------------------------------------------------- */

void sv__group_collect(sv_proc *p)
{
	if (!p->registered)
		return;
	while (waitpid(-p->pid, NULL, WNOHANG) > 0)
		;
	if (kill(-p->pid, 0) < 0 && errno == ESRCH) {
		watchdog_unregister(&p->sv->wd, p->pid);
		p->registered = false;
	}
}

/* A contained process's init wrote how the route ended before it exited
 * (once reaped, every writer of the pipe is gone: the read never waits).
 * Without it (the init was killed, so was everything in its namespace),
 * the init's own status stands and the descendants are not known. */
static void read_end(sv_proc *p, int *status)
{
	struct child_report rec;

	if (p->report_fd >= 0 && !p->have_end &&
	    read(p->report_fd, &rec, sizeof(rec)) == (ssize_t)sizeof(rec) &&
	    rec.what == CHILD_REPORT_END) {
		p->end = rec;
		p->have_end = true;
	}
	if (p->report_fd >= 0)
		close(p->report_fd);
	p->report_fd = -1;
	free(p->stacks); /* the init is gone */
	p->stacks = NULL;
	if (p->have_end) {
		*status = p->end.value;
		p->st.descendants_killed = p->end.killed;
	}
}

void sv__record_end(sv_proc *p, int status, long long now)
{
	read_end(p, &status);
	if (WIFEXITED(status)) {
		p->st.end = SV_EXITED;
		p->st.code = WEXITSTATUS(status);
	} else {
		p->st.end = SV_SIGNALED;
		p->st.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	}
	p->st.end_ms = now;
	p->paused = false;
	/* the leader is gone: nothing it started may outlive it */
	kill(-p->pid, SIGKILL);
}

/* Wait (bounded) until the group is empty so the watchdog can forget it. */
static void group_drain(sv_proc *p)
{
	long long until = clock_mono_ms() + GROUP_DRAIN_MS;

	while (p->registered && clock_mono_ms() < until) {
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		kill(-p->pid, SIGKILL);
		sv__group_collect(p);
		if (p->registered)
			nanosleep(&ts, NULL);
	}
	if (p->registered) {
		/* members we cannot reap (not our children) are dead or dying */
		watchdog_unregister(&p->sv->wd, p->pid);
		p->registered = false;
	}
}

void sv__kill_all(sv_proc *p)
{
	struct frozen f;

	/* stopped first, so none forks past the walk; then killed */
	if (p->reaper && freeze_tree(p->pid, &f) == 0) {
		for (size_t i = 0; i < f.n; i++)
			kill(f.pids[i], SIGKILL);
		free(f.pids);
	}
	kill(-p->pid, SIGKILL);
}

void sv__proc_release(sv_proc *p)
{
	if (!p)
		return;
	if (p->st.end == SV_RUNNING) {
		int status;
		sv__kill_all(p);
		while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
			;
		sv__record_end(p, status, clock_mono_ms());
	}
	group_drain(p);
	free(p->frozen.pids); /* they are dead: nothing to thaw */
	if (p->fp_fd >= 0)
		close(p->fp_fd);
	if (p->report_fd >= 0)
		close(p->report_fd);
	free(p->stacks); /* reaped above, or never started */
	inject_seccomp_session_free(p->sess);
	free(p->sysfaults);
	free(p);
}

/* --- syscall faults ----------------------------------------------------- */

static void log_sysfault(sv_proc *p, const struct inject_seccomp_event *ev)
{
	struct sv_sysfault *f;

	p->sysfaults_total++;
	if (p->nsysfaults >= SV_SYSFAULT_LOG)
		return;
	if (!p->sysfaults) {
		p->sysfaults = calloc(SV_SYSFAULT_LOG, sizeof(*p->sysfaults));
		if (!p->sysfaults)
			return;
	}
	f = &p->sysfaults[p->nsysfaults++];
	f->rule = ev->rule;
	f->outcome = ev->outcome;
	snprintf(f->syscall, sizeof(f->syscall), "%s", ev->syscall);
	snprintf(f->path, sizeof(f->path), "%.255s", ev->path);
	f->occurrence = ev->occurrence;
	f->error = ev->error;
	f->result = ev->result;
}

/* One notification (the listener polled readable).  Never waits for the
 * route: inject_seccomp_handle() polls with a zero timeout. */
int sv__handle_syscall(sv_proc *p)
{
	struct inject_seccomp_event ev;
	int rc = inject_seccomp_handle(p->sess, &ev);

	if (rc < 0 && !p->sess_err[0])
		snprintf(p->sess_err, sizeof(p->sess_err), "%s",
			 inject_seccomp_session_errmsg(p->sess));
	switch (ev.outcome) {
	case INJECT_OUT_HANGUP:
		p->sess_hup = true; /* kept for its statistics */
		break;
	case INJECT_OUT_FAILED:
	case INJECT_OUT_KILLED_BEFORE:
	case INJECT_OUT_KILLED_AFTER:
		if (ev.rule >= 0)
			log_sysfault(p, &ev);
		if (ev.outcome != INJECT_OUT_FAILED)
			p->st.killed = true;
		break;
	default:
		break;
	}
	return rc;
}

const struct sv_sysfault *sv_proc_sysfaults(const sv_proc *p, size_t *n,
					    size_t *total)
{
	*n = p->nsysfaults;
	if (total)
		*total = p->sysfaults_total;
	return p->sysfaults;
}

const struct inject_seccomp_session *sv_proc_seccomp(const sv_proc *p)
{
	return p->sess;
}

const char *sv_proc_seccomp_error(const sv_proc *p)
{
	return p->sess_err;
}

/* --- acting on it ------------------------------------------------------- */

pid_t sv_proc_pid(const sv_proc *p)
{
	return p->pid;
}

const struct sv_status *sv_proc_status(const sv_proc *p)
{
	return &p->st;
}

bool sv_proc_ended(const sv_proc *p)
{
	return p->st.end != SV_RUNNING;
}

bool sv_proc_paused(const sv_proc *p)
{
	return p->paused;
}

int sv_proc_answer(sv_proc *p, char answer)
{
	if (p->fp_fd < 0 || p->st.end != SV_RUNNING)
		return FC_IO;
	if (send(p->fp_fd, &answer, 1, MSG_NOSIGNAL) != 1)
		return FC_IO;
	return 0;
}

int sv_proc_kill(sv_proc *p)
{
	if (p->st.end != SV_RUNNING)
		return 0;
	p->st.killed = true;
	sv__kill_all(p);
	return 0;
}

/* Every process of the attempt, not only its group: a writer that
 * called setsid() is its descendant still (freeze.h walks the tree from
 * its init, where orphans come to), so a zombie worker is frozen whole. */
int sv_proc_pause(sv_proc *p)
{
	if (p->st.end != SV_RUNNING || p->paused)
		return 0;
	if (freeze_tree(p->pid, &p->frozen) != 0) {
		/* what could not be stopped in FREEZE_WAIT_MS: the group at
		 * least, as before */
		if (kill(-p->pid, SIGSTOP) < 0 && errno != ESRCH)
			return FC_IO;
	}
	p->paused = true;
	return 0;
}

/* Invariant 5: p's leader and its children run where we run. */
static void follow_cpus(const sv_proc *p)
{
	char path[64];
	cpu_set_t here;
	FILE *f;
	long child;

	if (sched_getaffinity(0, sizeof(here), &here) != 0)
		return;
	(void)sched_setaffinity(p->pid, sizeof(here), &here);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)p->pid,
		 (int)p->pid);
	if (!(f = fopen(path, "re")))
		return;
	while (fscanf(f, "%ld", &child) == 1)
		(void)sched_setaffinity((pid_t)child, sizeof(here), &here);
	fclose(f);
}

int sv_proc_resume(sv_proc *p)
{
	if (p->st.end != SV_RUNNING)
		return 0;
	follow_cpus(p);
	freeze_thaw(&p->frozen); /* the same set, then the group */
	if (kill(-p->pid, SIGCONT) < 0 && errno != ESRCH)
		return FC_IO;
	p->paused = false;
	return 0;
}

void sv_proc_set_deadline(sv_proc *p, long long deadline_ms)
{
	p->deadline_ms = deadline_ms;
}

void sv_proc_set_data(sv_proc *p, void *data)
{
	p->data = data;
}

void *sv_proc_data(const sv_proc *p)
{
	return p->data;
}
