/*
 * supervise.c -- process groups, the failpoint channel, one poll loop,
 * timeouts; starting a process is in supervise_spawn.c, the watchdog that
 * prevents orphans in watchdog.c.
 *
 * Invariants:
 *  1. Every child is the leader of its own process group (pgid == pid); all
 *     signals go to the group.  When the leader has been reaped the group is
 *     SIGKILLed, and the group stays registered with the watchdog until
 *     kill(-pgid, 0) says it is empty (a pgid is not reused while any
 *     member lives, so the watchdog never signals a stranger's group).
 *  2. The SIGCHLD handler only writes one byte to a non-blocking self-pipe;
 *     all reaping happens in pump() with waitpid(pid or -pgid, WNOHANG), never
 *     waitpid(-1), so other code in the process may run its own children.
 *     A running process is waited for only after the self-pipe said some
 *     child changed state (chld_pending): a wakeup for a failpoint line
 *     costs no waitpid() per process.
 *  3. Each process's failpoint events are queued in the order read, and a
 *     process's queued HIT/PASS lines precede its EXIT event.
 *  4. Every fd the harness opens is close-on-exec; the only fd a child
 *     inherits beyond 0-2 is its own end of the failpoint channel, as fd 3.
 *
 *   spawn --> RUNNING --(HIT)--> waiting for answer --(answer)--> RUNNING
 *               |  \__ PASS: recorded like a HIT, the process runs on
 *               |  \__ pause/resume: SIGSTOP/SIGCONT to the group
 *               |  \__ deadline passed: SIGKILL group, timed_out
 *               v
 *             ENDED (reaped) --> group killed --> group empty: unregistered
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/protocol.h"
#include "harness/proc/supervise_impl.h"

#define GROUP_DRAIN_MS 2000 /* how long sv_proc_free waits for a group */
#define HIT_LEN (sizeof(PROTO_HIT) - 1)
#define PASS_LEN (sizeof(PROTO_PASS) - 1)

/* The SIGCHLD self-pipe is process-wide, so is the one supervisor. */
static int chld_pipe[2] = { -1, -1 };
static supervisor *the_supervisor;

long long supervisor_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_sigchld(int sig)
{
	int saved = errno;
	char b = 0;

	(void)sig;
	if (write(chld_pipe[1], &b, 1) < 0) {
		/* full pipe: a wakeup is already pending */
	}
	errno = saved;
}

/* --- supervisor lifecycle ------------------------------------------------ */

int supervisor_new(supervisor **out, char *err, size_t errlen)
{
	supervisor *sv;
	struct sigaction sa;
	int rc;

	*out = NULL;
	if (the_supervisor) {
		snprintf(err, errlen, "a supervisor already runs in this process");
		return FC_USAGE;
	}
	sv = calloc(1, sizeof(*sv));
	if (!sv) {
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	sv->wd.fd = -1;
	sv->null_fd = -1;
	sv->chld_pending = true;
	sv->forksrv_timeout_ms = FORKSRV_TIMEOUT_MS;
	if (pipe2(chld_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "cannot create self-pipe: %s",
			 strerror(errno));
		free(sv);
		return FC_IO;
	}
	rc = watchdog_start(&sv->wd, err, errlen);
	if (rc) {
		close(chld_pipe[0]);
		close(chld_pipe[1]);
		chld_pipe[0] = chld_pipe[1] = -1;
		free(sv);
		return rc;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, &sv->old_chld);
	/* orphaned grandchildren come back to us and can be reaped */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	the_supervisor = sv;
	*out = sv;
	return 0;
}

void supervisor_free(supervisor *sv)
{
	if (!sv)
		return;
	while (sv->procs)
		sv_proc_free(sv->procs);
	sv__forksrv_stop_all(sv);
	free(sv->queue);
	watchdog_stop(&sv->wd);
	if (sv->null_fd >= 0)
		close(sv->null_fd);
	sigaction(SIGCHLD, &sv->old_chld, NULL);
	close(chld_pipe[0]);
	close(chld_pipe[1]);
	chld_pipe[0] = chld_pipe[1] = -1;
	the_supervisor = NULL;
	free(sv);
}

size_t supervisor_live(const supervisor *sv)
{
	size_t n = 0;

	for (const struct sv_proc *p = sv->procs; p; p = p->next)
		n += p->st.end == SV_RUNNING;
	return n;
}

/* --- the event queue ----------------------------------------------------- */

static int queue_push(supervisor *sv, const struct sv_event *ev)
{
	if (sv->qlen == sv->qcap) {
		size_t nc = sv->qcap ? sv->qcap * 2 : 16;
		struct sv_event *nq = realloc(sv->queue, nc * sizeof(*nq));
		if (!nq)
			return FC_NOMEM;
		sv->queue = nq;
		sv->qcap = nc;
	}
	sv->queue[sv->qlen++] = *ev;
	return 0;
}

static void queue_pop(supervisor *sv, struct sv_event *ev)
{
	*ev = sv->queue[0];
	memmove(sv->queue, sv->queue + 1, (sv->qlen - 1) * sizeof(*ev));
	sv->qlen--;
}

static void queue_forget(supervisor *sv, const sv_proc *p)
{
	size_t w = 0;

	for (size_t r = 0; r < sv->qlen; r++)
		if (sv->queue[r].proc != p)
			sv->queue[w++] = sv->queue[r];
	sv->qlen = w;
}

/* --- reading the failpoint channel --------------------------------------- */

static bool failpoint_name_valid(const char *s, size_t len)
{
	if (len == 0 || len >= PROTO_FAILPOINT_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

/* Turn each complete "HIT name" / "PASS name" line into an event (a PASS
 * expects no answer); other lines are dropped (a route printing garbage must not wedge the harness). */
static int parse_lines(sv_proc *p, long long now)
{
	char *nl;

	while ((nl = memchr(p->line, '\n', p->linelen))) {
		size_t len = (size_t)(nl - p->line);
		struct sv_event ev = { .kind = SV_EV_HIT, .proc = p, .at_ms = now };

		size_t skip = 0;

		if (len > HIT_LEN && memcmp(p->line, PROTO_HIT, HIT_LEN) == 0) {
			skip = HIT_LEN;
		} else if (len > PASS_LEN &&
			   memcmp(p->line, PROTO_PASS, PASS_LEN) == 0) {
			skip = PASS_LEN;
			ev.passed = true;
		}
		if (skip && failpoint_name_valid(p->line + skip, len - skip)) {
			memcpy(ev.failpoint, p->line + skip, len - skip);
			ev.failpoint[len - skip] = '\0';
			if (queue_push(p->sv, &ev))
				return FC_NOMEM;
		}
		p->linelen -= len + 1;
		memmove(p->line, nl + 1, p->linelen);
	}
	if (p->linelen == sizeof(p->line))
		p->linelen = 0; /* an overlong line: drop it */
	return 0;
}

static int read_channel(sv_proc *p, long long now)
{
	for (;;) {
		ssize_t r = read(p->fp_fd, p->line + p->linelen,
				 sizeof(p->line) - p->linelen);
		if (r > 0) {
			size_t asked = sizeof(p->line) - p->linelen;
			p->linelen += (size_t)r;
			int rc = parse_lines(p, now);
			if (rc || (size_t)r < asked)
				return rc; /* drained: poll says when more comes */
			continue;
		}
		if (r == 0) {
			p->fp_eof = true;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			p->fp_eof = true;
		return 0;
	}
}

/* --- syscall faults --------------------------------------------------------- */

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

/* --- reaping -------------------------------------------------------------- */

static void group_collect(sv_proc *p)
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

static void record_end(sv_proc *p, int status, long long now)
{
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

/* Read the SIGCHLD self-pipe empty; true when a child changed state since
 * the last call (invariant 2: only then can waitpid() find anything). */
static bool chld_drain(void)
{
	char buf[64];
	ssize_t r;
	bool any = false;

	while ((r = read(chld_pipe[0], buf, sizeof(buf))) > 0) {
		any = true;
		if ((size_t)r < sizeof(buf))
			break;
	}
	return any;
}

static int reap(supervisor *sv, long long now)
{
	bool chld = sv->chld_pending;

	sv->chld_pending = false;
	for (sv_proc *p = sv->procs; p; p = p->next) {
		int status;
		pid_t r;

		if (p->st.end == SV_RUNNING && chld) {
			r = waitpid(p->pid, &status, WNOHANG);
			if (r == p->pid) {
				struct sv_event ev = { .kind = SV_EV_EXIT,
						       .proc = p, .at_ms = now };
				if (p->fp_fd >= 0 && !p->fp_eof)
					read_channel(p, now);
				record_end(p, status, now);
				if (queue_push(sv, &ev))
					return FC_NOMEM;
			} else if (r < 0 && errno == ECHILD) {
				/* someone else reaped it; status unknown */
				struct sv_event ev = { .kind = SV_EV_EXIT,
						       .proc = p, .at_ms = now };
				p->st.end = SV_SIGNALED;
				p->st.end_ms = now;
				kill(-p->pid, SIGKILL);
				if (queue_push(sv, &ev))
					return FC_NOMEM;
			}
		}
		if (p->st.end != SV_RUNNING)
			group_collect(p);
	}
	return 0;
}

static void enforce_deadlines(supervisor *sv, long long now)
{
	for (sv_proc *p = sv->procs; p; p = p->next) {
		if (p->st.end != SV_RUNNING || !p->deadline_ms ||
		    p->st.timed_out || now < p->deadline_ms)
			continue;
		p->st.timed_out = true;
		kill(-p->pid, SIGKILL);
		kill(-p->pid, SIGCONT);
	}
}

static long long next_deadline(const supervisor *sv, long long deadline)
{
	for (const sv_proc *p = sv->procs; p; p = p->next) {
		if (p->st.end != SV_RUNNING || !p->deadline_ms || p->st.timed_out)
			continue;
		if (deadline < 0 || p->deadline_ms < deadline)
			deadline = p->deadline_ms;
	}
	return deadline;
}

/*
 * One round of the loop: reap, enforce deadlines, poll the self-pipe and
 * every open channel until something is readable or `deadline` passes,
 * read what arrived.  Adds events to the queue; never blocks past the
 * deadline or on any single child.
 */
static int pump(supervisor *sv, long long deadline)
{
	struct pollfd fds[64];
	sv_proc *who[64];
	bool seccomp[64];
	size_t n = 0;
	long long now = supervisor_now_ms(), wake;
	size_t queued = sv->qlen;
	int timeout, rc;

	/* return what reaping found; events queued before (supervisor_run()
	 * leaves other processes' events for later) are no reason to skip
	 * the poll, which is what learns of our own process's end */
	rc = reap(sv, now);
	if (rc || sv->qlen > queued)
		return rc;
	enforce_deadlines(sv, now);
	if (deadline >= 0 && now >= deadline)
		return 0;
	fds[n].fd = chld_pipe[0];
	fds[n].events = POLLIN;
	seccomp[n] = false;
	who[n++] = NULL;
	for (sv_proc *p = sv->procs; p && n < 64; p = p->next) {
		if (p->sess && !p->sess_hup) {
			/* also after the leader ended: members of its group
			 * may wait on a call until they are reaped */
			fds[n].fd = inject_seccomp_session_fd(p->sess);
			fds[n].events = POLLIN;
			seccomp[n] = true;
			who[n++] = p;
		}
		if (p->st.end != SV_RUNNING || p->fp_fd < 0 || p->fp_eof ||
		    n >= 64)
			continue;
		fds[n].fd = p->fp_fd;
		fds[n].events = POLLIN;
		seccomp[n] = false;
		who[n++] = p;
	}
	wake = next_deadline(sv, deadline);
	if (wake < 0)
		timeout = -1;
	else if (wake - now > INT_MAX)
		timeout = INT_MAX;
	else
		timeout = (int)(wake > now ? wake - now : 0);
	if (poll(fds, n, timeout) < 0) {
		if (errno == EINTR)
			return 0;
		return FC_IO;
	}
	now = supervisor_now_ms();
	if (fds[0].revents && chld_drain())
		sv->chld_pending = true;
	for (size_t i = 1; i < n; i++) {
		if (!fds[i].revents)
			continue;
		if (seccomp[i]) {
			if (sv__handle_syscall(who[i])) {
				/* recorded in the process; its call was answered */
			}
			continue;
		}
		rc = read_channel(who[i], now);
		if (rc)
			return rc;
	}
	return reap(sv, now);
}

int supervisor_wait(supervisor *sv, long long deadline_ms, struct sv_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	for (;;) {
		int rc;

		if (sv->qlen) {
			queue_pop(sv, ev);
			return 0;
		}
		if (deadline_ms >= 0 && supervisor_now_ms() >= deadline_ms) {
			if (chld_drain())
				sv->chld_pending = true;
			rc = reap(sv, supervisor_now_ms());
			if (rc)
				return rc;
			if (sv->qlen)
				continue;
			ev->kind = SV_EV_NONE;
			return 0;
		}
		if (deadline_ms < 0 && supervisor_live(sv) == 0) {
			ev->kind = SV_EV_NONE;
			return 0;
		}
		rc = pump(sv, deadline_ms);
		if (rc)
			return rc;
	}
}

/* --- spawning ------------------------------------------------------------- */

int supervisor_run(supervisor *sv, const struct sv_spawn *req,
		   struct sv_status *st, char *err, size_t errlen)
{
	sv_proc *p;
	int rc = supervisor_spawn(sv, req, &p, err, errlen);

	if (rc)
		return rc;
	while (p->st.end == SV_RUNNING) {
		rc = pump(sv, -1);
		if (rc) {
			snprintf(err, errlen, "cannot wait for '%s'", req->argv[0]);
			sv_proc_free(p);
			return rc;
		}
	}
	*st = p->st;
	sv_proc_free(p);
	return 0;
}

/* --- acting on a process -------------------------------------------------- */

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
	if (kill(-p->pid, SIGKILL) < 0 && errno != ESRCH)
		return FC_IO;
	return 0;
}

int sv_proc_pause(sv_proc *p)
{
	if (p->st.end != SV_RUNNING)
		return 0;
	if (kill(-p->pid, SIGSTOP) < 0 && errno != ESRCH)
		return FC_IO;
	p->paused = true;
	return 0;
}

int sv_proc_resume(sv_proc *p)
{
	if (p->st.end != SV_RUNNING)
		return 0;
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

/* Wait (bounded) until the group is empty so the watchdog can forget it. */
static void group_drain(sv_proc *p)
{
	long long until = supervisor_now_ms() + GROUP_DRAIN_MS;

	while (p->registered && supervisor_now_ms() < until) {
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		kill(-p->pid, SIGKILL);
		group_collect(p);
		if (p->registered)
			nanosleep(&ts, NULL);
	}
	if (p->registered) {
		/* members we cannot reap (not our children) are dead or dying */
		watchdog_unregister(&p->sv->wd, p->pid);
		p->registered = false;
	}
}

void sv_proc_free(sv_proc *p)
{
	supervisor *sv;

	if (!p)
		return;
	sv = p->sv;
	if (p->st.end == SV_RUNNING) {
		int status;
		kill(-p->pid, SIGKILL);
		while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
			;
		record_end(p, status, supervisor_now_ms());
	}
	group_drain(p);
	queue_forget(sv, p);
	if (p->fp_fd >= 0)
		close(p->fp_fd);
	inject_seccomp_session_free(p->sess);
	free(p->sysfaults);
	for (sv_proc **pp = &sv->procs; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	free(p);
}
