/*
 * inject_seccomp_session.c -- the supervisor's side: one listener fd, one
 * notification at a time.
 *
 *   poll: POLLIN ---> receive ---> describe (syscall, paths) ---> hook
 *                                     |
 *            out of scope <-----------+-----------> in scope: decide (rules)
 *                 |                                        |
 *          respond CONTINUE          +---------------------+--------------+
 *            (IGNORED)               |                     |              |
 *                           respond CONTINUE /    pidfd, validate,   pidfd, validate,
 *                             -errno             kill (KILLED_BEFORE) perform, kill
 *                          (CONTINUED / FAILED)                      (KILLED_AFTER)
 *
 * Invariants:
 *  1. inject_seccomp_handle() reads at most one notification and only after
 *     a zero-timeout poll saw POLLIN, so it never waits for the route (a
 *     notification withdrawn in between makes the receive fail with ENOENT,
 *     not block).
 *  2. Nothing irreversible (a kill, a call performed for the route) happens
 *     before the notification id is validated after every read from the
 *     route, and the kill goes through a pidfd opened before that
 *     validation, so a recycled pid is never signalled.
 *  3. Counters move only when the decision reached the route (a response
 *     accepted by the kernel, or a kill): a withdrawn call keeps its number.
 *  4. Every received notification is answered or its route killed; a route
 *     is never left waiting on a decision that will not come.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/inject/inject_seccomp_impl.h"

/* Distinct (syscall, path) pairs a session tracks; calls on further pairs
 * are still decided by the rules but get occurrence 0. */
#define INJECT_STATS_MAX 4096

struct stat_entry {
	int sys;
	char *path;
	unsigned long count;
};

struct inject_seccomp_session {
	const struct inject_seccomp_plan *plan;
	int fd;
	pid_t pgid;
	uint32_t arch;
	int nr_of[INJECT_SYSCALLS_MAX];       /* -1: not intercepted */
	unsigned long syscall_count[INJECT_SYSCALLS_MAX];
	unsigned long *rule_count;            /* per plan rule */
	struct stat_entry *stats;
	size_t nstats, stats_cap;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
	inject_seccomp_hook *hook;
	void *hook_arg;
	char errmsg[256];
};

static int session_fail(struct inject_seccomp_session *s, int code,
			const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int session_fail(struct inject_seccomp_session *s, int code,
			const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	return code;
}

int inject_seccomp_session_new(const struct inject_seccomp_plan *p,
			       int notify_fd, pid_t pgid,
			       struct inject_seccomp_session **out)
{
	struct inject_seccomp_session *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return FC_NOMEM;
	s->rule_count = calloc(p->nrules ? p->nrules : 1, sizeof(unsigned long));
	if (!s->rule_count || seccomp_notify_alloc(&s->req, &s->resp) < 0) {
		free(s->rule_count);
		free(s);
		return FC_NOMEM;
	}
	s->plan = p;
	s->fd = notify_fd;
	s->pgid = pgid;
	s->arch = seccomp_arch_native();
	for (int i = 0; i < INJECT_SYSCALLS_MAX; i++)
		s->nr_of[i] = i < inject_seccomp__nsyscalls && p->intercept[i]
			? seccomp_syscall_resolve_name(inject_seccomp__syscalls[i].name)
			: -1;
	*out = s;
	return 0;
}

void inject_seccomp_session_free(struct inject_seccomp_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nstats; i++)
		free(s->stats[i].path);
	free(s->stats);
	free(s->rule_count);
	seccomp_notify_free(s->req, s->resp);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

int inject_seccomp_session_fd(const struct inject_seccomp_session *s)
{
	return s->fd;
}

const char *inject_seccomp_session_errmsg(const struct inject_seccomp_session *s)
{
	return s ? s->errmsg : "";
}

void inject_seccomp_session_set_hook(struct inject_seccomp_session *s,
				     inject_seccomp_hook *fn, void *arg)
{
	s->hook = fn;
	s->hook_arg = arg;
}

/* --- describing a call ------------------------------------------------ */

/* The absolute form of a path argument, resolved the way the kernel will
 * (against the cwd or the dirfd argument), but not normalized: no "..",
 * no symlinks.  "" when it cannot be read. */
static void resolve_arg(const struct seccomp_notif *req,
			const struct inject_arg *arg, char *out, size_t outlen)
{
	char rel[PATH_MAX], dir[PATH_MAX];
	int dirfd = arg->dirfd < 0 ? AT_FDCWD
				   : (int)req->data.args[(int)arg->dirfd];
	size_t dlen;

	out[0] = '\0';
	if (inject_seccomp__read_string(req->pid, req->data.args[(int)arg->index],
					rel, sizeof(rel)) < 0)
		return;
	if (rel[0] == '/' || arg->kind == ARG_RAW) {
		snprintf(out, outlen, "%s", rel);
		return;
	}
	if (inject_seccomp__fd_path(req->pid, dirfd, dir, sizeof(dir)) < 0)
		return;
	dlen = strlen(dir);
	if (!rel[0]) /* AT_EMPTY_PATH: the dirfd itself */
		snprintf(out, outlen, "%s", dir);
	else if (snprintf(out, outlen, "%s%s%s", dir,
			  dlen && dir[dlen - 1] == '/' ? "" : "/", rel) >=
		 (int)outlen)
		out[0] = '\0';
}

/* Fill path/from; false when the call names no file at all. */
static bool describe(const struct seccomp_notif *req,
		     const struct inject_syscall *sys,
		     struct inject_seccomp_event *ev)
{
	switch (sys->subject.kind) {
	case ARG_FD: {
		int fd = (int)req->data.args[(int)sys->subject.index];

		if (inject_seccomp__fd_path(req->pid, fd, ev->path,
					    sizeof(ev->path)) < 0)
			ev->path[0] = '\0';
		if (strncmp(ev->path, "socket:[", 8) == 0)
			inject_seccomp__fd_peer(req->pid, fd, ev->peer,
						sizeof(ev->peer));
		break;
	}
	case ARG_PATH:
	case ARG_RAW:
		resolve_arg(req, &sys->subject, ev->path, sizeof(ev->path));
		break;
	default:
		return false;
	}
	if (sys->from.kind != ARG_NONE)
		resolve_arg(req, &sys->from, ev->from, sizeof(ev->from));
	return true;
}

/* --- counting --------------------------------------------------------- */

/* What the discovery table counts a call under: a socket's peer is the
 * same in every run, its "socket:[INODE]" is not. */
static const char *stat_key(const struct inject_seccomp_event *ev)
{
	return ev->peer[0] ? ev->peer : ev->path;
}

static struct stat_entry *stat_find(struct inject_seccomp_session *s, int sys,
				    const char *path)
{
	for (size_t i = 0; i < s->nstats; i++)
		if (s->stats[i].sys == sys && strcmp(s->stats[i].path, path) == 0)
			return &s->stats[i];
	return NULL;
}

static struct stat_entry *stat_add(struct inject_seccomp_session *s, int sys,
				   const char *path)
{
	struct stat_entry *e;

	if (s->nstats == INJECT_STATS_MAX)
		return NULL;
	if (s->nstats == s->stats_cap) {
		size_t cap = s->stats_cap ? 2 * s->stats_cap : 16;
		struct stat_entry *grown = realloc(s->stats, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		s->stats = grown;
		s->stats_cap = cap;
	}
	e = &s->stats[s->nstats];
	e->path = strdup(path);
	if (!e->path)
		return NULL;
	e->sys = sys;
	e->count = 0;
	s->nstats++;
	return e;
}

/* The decision took effect: move every counter the call touches
 * (invariant 3).  Cannot fail; a pair beyond INJECT_STATS_MAX (or out of
 * memory) is simply not tracked per path. */
static void commit(struct inject_seccomp_session *s, int sys,
		   const struct inject_seccomp_event *ev)
{
	struct stat_entry *e = stat_find(s, sys, stat_key(ev));

	if (!e)
		e = stat_add(s, sys, stat_key(ev));
	if (e)
		e->count++;
	s->syscall_count[sys]++;
	for (size_t i = 0; i < s->plan->nrules; i++)
		if (inject_seccomp__rule_matches(&s->plan->rules[i], sys, ev))
			s->rule_count[i]++;
}

/* Which rule acts on this call, with the counters as they will be. */
static void decide(struct inject_seccomp_session *s, int sys,
		   struct inject_seccomp_event *ev)
{
	const struct stat_entry *e = stat_find(s, sys, stat_key(ev));

	ev->occurrence = e ? e->count + 1
			   : s->nstats < INJECT_STATS_MAX ? 1 : 0;
	ev->syscall_occurrence = s->syscall_count[sys] + 1;
	ev->rule = -1;
	ev->action = INJECT_COUNT;
	for (size_t i = 0; i < s->plan->nrules; i++) {
		const struct inject_rule *r = &s->plan->rules[i];

		if (r->action == INJECT_COUNT ||
		    !inject_seccomp__rule_matches(r, sys, ev))
			continue;
		if (r->occurrence && s->rule_count[i] + 1 != r->occurrence)
			continue;
		ev->rule = (int)i;
		ev->action = r->action;
		ev->error = r->error;
		return;
	}
}

/* --- acting ----------------------------------------------------------- */

/* Answer the pending call: let it run (error == 0) or fail it. */
static int respond(struct inject_seccomp_session *s,
		   struct inject_seccomp_event *ev, int error,
		   enum inject_outcome done)
{
	memset(s->resp, 0, sizeof(*s->resp));
	s->resp->id = s->req->id;
	if (error)
		s->resp->error = -error;
	else
		s->resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	if (seccomp_notify_respond(s->fd, s->resp) < 0) {
		if (errno == ENOENT) {
			ev->outcome = INJECT_OUT_STALE;
			return 0;
		}
		return session_fail(s, FC_IO,
				    "cannot answer '%s' of pid %d: %s",
				    ev->syscall, (int)ev->pid, strerror(errno));
	}
	ev->outcome = done;
	return 0;
}

/* The group first: killing the caller alone first would let its parent
 * in the group (a shell) see it die and exit on its own before the group
 * kill reaches it, so the route would end by exit, not by the kill. */
static void kill_route(struct inject_seccomp_session *s, int pidfd, pid_t pid)
{
	if (s->pgid > 0)
		kill(-s->pgid, SIGKILL);
	if (pidfd >= 0)
		inject_seccomp__pidfd_kill(pidfd);
	else if (pid > 0)
		kill(pid, SIGKILL);
}

/* A pidfd of the calling process, opened before the notification is
 * validated (invariant 2).  false: the route is gone (STALE). */
static bool open_caller(struct inject_seccomp_session *s, int sys,
			struct inject_seccomp_event *ev, struct inject_call *call,
			pid_t *tgid, int *open_errno)
{
	*call = (struct inject_call){
		.req = s->req, .sys = &inject_seccomp__syscalls[sys],
		.notify_fd = s->fd, .err = s->errmsg, .errlen = sizeof(s->errmsg),
		.pidfd = -1,
	};
	if (inject_seccomp__tgid(ev->pid, tgid) < 0) {
		ev->outcome = INJECT_OUT_STALE;
		return false;
	}
	call->pidfd = inject_seccomp__pidfd_open(*tgid);
	*open_errno = errno;
	if (call->pidfd < 0 && *open_errno == ESRCH) {
		ev->outcome = INJECT_OUT_STALE;
		return false;
	}
	return true;
}

static int kill_call(struct inject_seccomp_session *s, int sys,
		     struct inject_seccomp_event *ev)
{
	struct inject_call call;
	pid_t tgid;
	bool stale = false, performed = false;
	int rc = 0, open_errno = 0;

	if (!open_caller(s, sys, ev, &call, &tgid, &open_errno))
		return 0;
	if (!inject_seccomp__pending(s->fd, s->req->id)) {
		ev->outcome = INJECT_OUT_STALE;
		goto out;
	}
	if (call.pidfd < 0) {
		/* Cannot happen short of fd exhaustion; the route must not
		 * hang, so kill it by pid, without the pidfd's guarantee. */
		rc = session_fail(s, FC_IO, "cannot open pidfd of pid %d: %s",
				  (int)tgid, strerror(open_errno));
	} else if (ev->action == INJECT_KILL_AFTER) {
		rc = inject_seccomp__perform(&call, &ev->result, &stale);
		if (stale) {
			ev->outcome = INJECT_OUT_STALE;
			goto out;
		}
		performed = !rc;
	}
	kill_route(s, call.pidfd, tgid);
	ev->outcome = performed ? INJECT_OUT_KILLED_AFTER
				: INJECT_OUT_KILLED_BEFORE;
out:
	if (call.pidfd >= 0)
		close(call.pidfd);
	return rc;
}

/* INJECT_ERRNO: a socket call told its connection is gone has it gone
 * (inject_seccomp__break_connection()), then the call fails. */
static int fail_call(struct inject_seccomp_session *s, int sys,
		     struct inject_seccomp_event *ev)
{
	struct inject_call call;
	pid_t tgid;
	bool stale = false;
	int rc = 0, open_errno = 0;

	if (!ev->peer[0] && strncmp(ev->path, "socket:[", 8) != 0)
		return respond(s, ev, ev->error, INJECT_OUT_FAILED);
	if (!open_caller(s, sys, ev, &call, &tgid, &open_errno))
		return 0;
	if (call.pidfd >= 0)
		rc = inject_seccomp__break_connection(&call, ev->error, &stale);
	if (call.pidfd >= 0)
		close(call.pidfd);
	if (stale) {
		ev->outcome = INJECT_OUT_STALE;
		return 0;
	}
	if (rc)
		return rc;
	return respond(s, ev, ev->error, INJECT_OUT_FAILED);
}

static int table_index(const struct inject_seccomp_session *s, int nr)
{
	for (int i = 0; i < inject_seccomp__nsyscalls; i++)
		if (s->nr_of[i] == nr)
			return i;
	return -1;
}

static int process(struct inject_seccomp_session *s,
		   struct inject_seccomp_event *ev)
{
	const struct seccomp_notif *req = s->req;
	int sys = table_index(s, req->data.nr);
	bool has_path, scoped;
	int rc;

	ev->nr = req->data.nr;
	ev->pid = (pid_t)req->pid;
	if (sys < 0 || req->data.arch != s->arch) /* not ours: cannot happen */
		return respond(s, ev, 0, INJECT_OUT_IGNORED);
	snprintf(ev->syscall, sizeof(ev->syscall), "%s",
		 inject_seccomp__syscalls[sys].name);
	has_path = describe(req, &inject_seccomp__syscalls[sys], ev);
	scoped = inject_seccomp__in_scope(s->plan, ev, has_path);
	if (scoped) /* no side effect: the counts move in commit() */
		decide(s, sys, ev);
	if (s->hook) /* it sees the decision: whether the call will run */
		s->hook(s->hook_arg, ev);
	if (!scoped)
		return respond(s, ev, 0, INJECT_OUT_IGNORED);
	if (!inject_seccomp__pending(s->fd, req->id)) {
		ev->outcome = INJECT_OUT_STALE;
		return 0;
	}
	switch (ev->action) {
	case INJECT_COUNT:
		rc = respond(s, ev, 0, INJECT_OUT_CONTINUED);
		break;
	case INJECT_ERRNO:
		rc = fail_call(s, sys, ev);
		break;
	default:
		rc = kill_call(s, sys, ev);
		break;
	}
	switch (ev->outcome) {
	case INJECT_OUT_CONTINUED:
	case INJECT_OUT_FAILED:
	case INJECT_OUT_KILLED_BEFORE:
	case INJECT_OUT_KILLED_AFTER:
		commit(s, sys, ev);
		break;
	default: /* stale, or not answered: the route never saw a decision */
		break;
	}
	return rc;
}

int inject_seccomp_handle(struct inject_seccomp_session *s,
			  struct inject_seccomp_event *ev)
{
	struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
	int r;

	memset(ev, 0, sizeof(*ev));
	ev->rule = -1;
	r = poll(&pfd, 1, 0);
	if (r < 0)
		return errno == EINTR ? 0
			: session_fail(s, FC_IO, "cannot poll seccomp listener: %s",
				       strerror(errno));
	if (!(pfd.revents & POLLIN)) {
		if (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))
			ev->outcome = INJECT_OUT_HANGUP;
		return 0;
	}
	memset(s->req, 0, sizeof(*s->req));
	if (seccomp_notify_receive(s->fd, s->req) < 0) {
		/* ENOENT: withdrawn between poll and receive (invariant 1) */
		if (errno == ENOENT || errno == EINTR)
			return 0;
		return session_fail(s, FC_IO,
				    "cannot receive seccomp notification: %s",
				    strerror(errno));
	}
	r = process(s, ev);
	if (r && ev->outcome == INJECT_OUT_NONE) {
		/* The answer failed for a reason other than a dead route:
		 * do not leave it waiting (invariant 4). */
		kill_route(s, -1, ev->pid);
		ev->outcome = INJECT_OUT_KILLED_BEFORE;
	}
	return r;
}

/* --- reporting -------------------------------------------------------- */

size_t inject_seccomp_stats_len(const struct inject_seccomp_session *s)
{
	return s->nstats;
}

int inject_seccomp_stats_get(const struct inject_seccomp_session *s, size_t i,
			     const char **syscall, const char **path,
			     unsigned long *count)
{
	if (i >= s->nstats)
		return FC_USAGE;
	*syscall = inject_seccomp__syscalls[s->stats[i].sys].name;
	*path = s->stats[i].path;
	*count = s->stats[i].count;
	return 0;
}

json_t *inject_seccomp_stats_json(const struct inject_seccomp_session *s)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < s->nstats; i++) {
		json_t *o = json_pack("{s:s, s:s, s:I}", "syscall",
				      inject_seccomp__syscalls[s->stats[i].sys].name,
				      "path", s->stats[i].path,
				      "count", (json_int_t)s->stats[i].count);

		if (!o || json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

json_t *inject_seccomp_event_json(const struct inject_seccomp_session *s,
				  const struct inject_seccomp_event *ev)
{
	char rule[PATH_MAX + 64];
	const char *ename = ev->error ? strerrorname_np(ev->error) : NULL;
	json_t *o;

	o = json_pack("{s:s, s:s, s:i, s:i, s:s, s:I, s:I, s:s, s:I}",
		      "outcome", inject_outcome_name(ev->outcome),
		      "syscall", ev->syscall, "nr", ev->nr, "pid", (int)ev->pid,
		      "path", ev->path,
		      "occurrence", (json_int_t)ev->occurrence,
		      "syscall_occurrence", (json_int_t)ev->syscall_occurrence,
		      "action", inject_action_name(ev->action),
		      "result", (json_int_t)ev->result);
	if (!o)
		return NULL;
	if (ev->from[0] && json_object_set_new(o, "from", json_string(ev->from)))
		goto fail;
	if (ev->peer[0] && json_object_set_new(o, "peer", json_string(ev->peer)))
		goto fail;
	if (ev->rule >= 0 &&
	    inject_seccomp_plan_format_rule(s->plan, (size_t)ev->rule, rule,
					    sizeof(rule)) == 0 &&
	    json_object_set_new(o, "rule", json_string(rule)))
		goto fail;
	if (ename && json_object_set_new(o, "errno", json_string(ename)))
		goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}
