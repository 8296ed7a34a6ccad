/*
 * supervise.c -- the supervisor: its processes as a set, the failpoint
 * channel read into events, one poll loop, reaping, timeouts.  Starting a
 * process is supervise_spawn.c (or supervise_forksrv.c through a fork
 * server), one process's state and end supervise_proc.c, the watchdog that
 * prevents orphans watchdog.c; this file is the top of them
 * (supervise_impl.h).
 *
 * Invariants:
 *  1. Every child is the leader of its own process group (pgid == pid); all
 *     signals go to the group.  When the leader has been reaped the group is
 *     SIGKILLed, and it stays registered with the watchdog until it is
 *     empty (supervise_proc.c, invariants 1 and 2).
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
 *  5. Only this file links processes into sv->procs and queues events:
 *     the files below hand it a started process (sv__spawn()).
 *  6. Bounded by construction: one wakeup reads at most CHANNEL_READ_MAX
 *     bytes of each channel, parsed in linear time (channel.h), and no
 *     channel is read while SV_QUEUE_MAX events wait; queueing and taking
 *     an event cost O(1) (amortized).  So a route flooding its channel
 *     costs the harness what it wrote, and between two looks at the
 *     deadlines lies a bounded amount of work: the attempt deadline holds.
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/protocol.h"
#include "harness/proc/channel.h"
#include "harness/proc/child_env.h"
#include "harness/proc/supervise_impl.h"

/* The SIGCHLD self-pipe is process-wide, so is the one supervisor. */
static int chld_pipe[2] = { -1, -1 };
static supervisor *the_supervisor;

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
	sv->contain = supervisor_containment(sv->contain_why,
					     sizeof(sv->contain_why));
	/* what a contained child's init watches for our death (getppid()
	 * tells it nothing in a new namespace); without it, PDEATHSIG alone */
	sv->self_pidfd = child_setup_fd_high((int)syscall(SYS_pidfd_open,
							  getpid(), 0));
	if (pipe2(chld_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "cannot create self-pipe: %s",
			 strerror(errno));
		if (sv->self_pidfd >= 0)
			close(sv->self_pidfd);
		free(sv);
		return FC_IO;
	}
	rc = watchdog_start(&sv->wd, err, errlen);
	if (rc) {
		close(chld_pipe[0]);
		close(chld_pipe[1]);
		chld_pipe[0] = chld_pipe[1] = -1;
		if (sv->self_pidfd >= 0)
			close(sv->self_pidfd);
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
	if (sv->self_pidfd >= 0)
		close(sv->self_pidfd);
	sigaction(SIGCHLD, &sv->old_chld, NULL);
	close(chld_pipe[0]);
	close(chld_pipe[1]);
	chld_pipe[0] = chld_pipe[1] = -1;
	the_supervisor = NULL;
	free(sv);
}

void supervisor_allow_uncontained(supervisor *sv, bool allow)
{
	sv->uncontained_ok = allow;
}

int supervisor_pass_env(supervisor *sv, const char *const *names, char *err,
			size_t errlen)
{
	for (size_t i = 0; names && names[i]; i++) {
		const char *why = child_env_pass_refused(names[i]);

		if (why) {
			snprintf(err, errlen, "cannot pass '%.64s' on to routes: %s",
				 names[i], why);
			return FC_USAGE;
		}
	}
	sv->pass_env = names;
	return 0;
}

size_t supervisor_live(const supervisor *sv)
{
	size_t n = 0;

	for (const struct sv_proc *p = sv->procs; p; p = p->next)
		n += p->st.end == SV_RUNNING;
	return n;
}

/* --- the event queue ----------------------------------------------------- */

/* Events queued and not yet taken. */
static size_t queue_pending(const supervisor *sv)
{
	return sv->qlen - sv->qhead;
}

/* Taken events leave room at the front; it is reused once it is half the
 * queue, so every event is moved at most once on average and neither a
 * push nor a pop costs the length of the queue. */
static int queue_push(supervisor *sv, const struct sv_event *ev)
{
	if (sv->qlen == sv->qcap && sv->qhead && sv->qhead >= sv->qcap / 2) {
		memmove(sv->queue, sv->queue + sv->qhead,
			queue_pending(sv) * sizeof(*ev));
		sv->qlen -= sv->qhead;
		sv->qhead = 0;
	}
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
	*ev = sv->queue[sv->qhead++];
	if (sv->qhead == sv->qlen)
		sv->qhead = sv->qlen = 0;
}

static void queue_forget(supervisor *sv, const sv_proc *p)
{
	size_t w = sv->qhead;

	for (size_t r = sv->qhead; r < sv->qlen; r++)
		if (sv->queue[r].proc != p)
			sv->queue[w++] = sv->queue[r];
	sv->qlen = w;
	if (sv->qhead == sv->qlen)
		sv->qhead = sv->qlen = 0;
}

/* --- reading the failpoint channel --------------------------------------- */

/* One line of the channel (channel.h) becomes an event. */
struct line_ctx {
	sv_proc *p;
	long long now;
};

static int queue_line(void *ctx, const struct channel_line *line)
{
	const struct line_ctx *lc = ctx;
	struct sv_event ev = { .kind = SV_EV_HIT, .proc = lc->p,
			       .passed = line->passed, .at_ms = lc->now };

	memcpy(ev.failpoint, line->failpoint, sizeof(ev.failpoint));
	return queue_push(lc->p->sv, &ev) ? FC_NOMEM : 0;
}

/* Turn each complete line read so far into an event (channel.h). */
static int parse_lines(sv_proc *p, long long now)
{
	struct line_ctx lc = { p, now };

	return channel_parse(p->line, &p->linelen, sizeof(p->line), queue_line,
			     &lc);
}

/* Read p's channel into events, at most `budget` bytes: it stops at a
 * short read (drained: poll says when more comes), at EOF, or with the
 * budget spent (more may wait: a later wakeup reads on), so one route
 * flooding its channel never holds the loop (CHANNEL_READ_MAX). */
static int read_channel(sv_proc *p, long long now, size_t budget)
{
	while (budget) {
		size_t room = sizeof(p->line) - p->linelen;
		size_t asked = room < budget ? room : budget;
		ssize_t r = read(p->fp_fd, p->line + p->linelen, asked);

		if (r > 0) {
			int rc;

			budget -= (size_t)r;
			p->linelen += (size_t)r;
			rc = parse_lines(p, now);
			if (rc || (size_t)r < asked)
				return rc;
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
	return 0;
}

/* --- reaping -------------------------------------------------------------- */

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
				/* its last lines precede its end (invariant
				 * 3), as many as CHANNEL_DRAIN_MAX holds */
				if (p->fp_fd >= 0 && !p->fp_eof &&
				    read_channel(p, now, CHANNEL_DRAIN_MAX)) {
					/* out of memory: lines lost, the end
					 * is still recorded */
				}
				sv__record_end(p, status, now);
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
			sv__group_collect(p);
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
		sv__kill_all(p);
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
	long long now = clock_mono_ms(), wake;
	size_t queued = queue_pending(sv);
	bool read_more = queued < SV_QUEUE_MAX;
	int timeout, rc;

	/* return what reaping found; events queued before (supervisor_run()
	 * leaves other processes' events for later) are no reason to skip
	 * the poll, which is what learns of our own process's end */
	rc = reap(sv, now);
	if (rc || queue_pending(sv) > queued)
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
		    n >= 64 || !read_more)
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
	now = clock_mono_ms();
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
		rc = read_channel(who[i], now, CHANNEL_READ_MAX);
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

		if (queue_pending(sv)) {
			queue_pop(sv, ev);
			return 0;
		}
		if (deadline_ms >= 0 && clock_mono_ms() >= deadline_ms) {
			if (chld_drain())
				sv->chld_pending = true;
			rc = reap(sv, clock_mono_ms());
			if (rc)
				return rc;
			if (queue_pending(sv))
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

int supervisor_spawn(supervisor *sv, const struct sv_spawn *req,
		     sv_proc **out, char *err, size_t errlen)
{
	int rc = req->fork_server ?
		sv__forksrv_spawn(sv, req, out, err, errlen) :
		sv__spawn(sv, req, NULL, false, out, err, errlen);

	if (rc)
		return rc;
	(*out)->next = sv->procs;
	sv->procs = *out;
	return 0;
}

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

void sv_proc_free(sv_proc *p)
{
	supervisor *sv;

	if (!p)
		return;
	sv = p->sv;
	queue_forget(sv, p);
	for (sv_proc **pp = &sv->procs; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	sv__proc_release(p);
}
