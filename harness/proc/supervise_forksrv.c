/*
 * supervise_forksrv.c -- start attempts through the route's fork server
 * (supervise.h, docs/fork-server.md; the route side is routes/fork_server.c).
 *
 * A route that declares `fork_server: true` is exec'd once per supervisor
 * and (argv, cwd) with PROTO_ENV_FORK_SERVER_FD=3 naming a SEQPACKET socket;
 * each spawn then costs one request and one reply instead of an exec.  The
 * server clones the attempt with CLONE_PARENT, so from the reply on the
 * attempt is our child exactly as if supervise_spawn.c had started it: this
 * file is only the launcher sv__spawn() calls (struct sv_launcher) in place
 * of its clone-and-exec, and the same setpgid, watchdog registration, exec
 * report (EOF = set up) and seccomp listener hand-over follow there.  The
 * servers themselves are started with sv__spawn() and stopped with
 * sv__proc_release() (supervise_impl.h: this file sits between supervise.c
 * and supervise_spawn.c).
 *
 * Invariants:
 *  1. A server is a helper, not a process of the supervisor: it is in its
 *     own process group, registered with the watchdog and dies with us
 *     (PR_SET_PDEATHSIG), but it is never in sv->procs, never an event and
 *     never counted by supervisor_live().
 *  2. One request is in flight per server, and we wait for its reply (or
 *     the hello) at most forksrv_timeout_ms: a server that is late is
 *     killed, so no stale reply can ever be read as the next one's.
 *  3. A server that died or answered garbage is stopped and started again,
 *     once per spawn; a server that never said hello, or said something
 *     else, fails the spawn with an error naming the program and route.
 *  4. Servers are keyed by the whole argv and cwd (an interpreter's script
 *     is in argv[1]); at most FORKSRV_MAX live, the oldest is stopped.
 *  5. A server runs on the CPUs we run on, given to it before a request
 *     whenever ours changed (a pool worker follows its turn's CPU,
 *     pool.c invariant 5), so the attempt it clones inherits them.
 *
 *   (none) --sv__spawn()--> STARTED --hello--> READY --request--> BUSY
 *                              |                 ^                  |
 *                              +-- EOF/timeout:  +------- "pid N" --+
 *                                  spawn fails      died/garbage: stop, restart
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fds.h"
#include "common/protocol.h"
#include "common/sandbox.h"
#include "harness/proc/supervise_impl.h"

enum { SENT = 0, GONE = 1 }; /* GONE: the server died or misbehaved */

/* Besides the allow-list (child_env.h): a server is route code, and gets
 * no more of ours than an attempt does. */
static char *const server_env[] = { (char *)"LD_BIND_NOW=1", NULL };

void supervisor_set_fork_server_timeout(supervisor *sv, long long ms)
{
	sv->forksrv_timeout_ms = ms > 0 ? ms : FORKSRV_TIMEOUT_MS;
}

size_t supervisor_fork_servers(const supervisor *sv)
{
	size_t n = 0;

	for (const struct sv_forksrv *s = sv->servers; s; s = s->next)
		n++;
	return n;
}

/* "fork server 'prog' of route 'r'" for messages. */
static const char *who(const struct sv_spawn *req, char *buf, size_t len)
{
	if (req->label)
		snprintf(buf, len, "fork server '%s' of route '%s'",
			 req->argv[0], req->label);
	else
		snprintf(buf, len, "fork server '%s'", req->argv[0]);
	return buf;
}

static char *make_key(const struct sv_spawn *req, size_t *len)
{
	size_t n = 0;
	char *key, *w;

	for (char *const *a = req->argv; *a; a++)
		n += strlen(*a) + 1;
	n += strlen(req->cwd ? req->cwd : "") + 1;
	key = malloc(n);
	if (!key)
		return NULL;
	w = key;
	for (char *const *a = req->argv; *a; a++)
		w = stpcpy(w, *a) + 1;
	stpcpy(w, req->cwd ? req->cwd : "");
	*len = n;
	return key;
}

static void server_stop(supervisor *sv, struct sv_forksrv *srv)
{
	for (struct sv_forksrv **pp = &sv->servers; *pp; pp = &(*pp)->next) {
		if (*pp == srv) {
			*pp = srv->next;
			break;
		}
	}
	sv__proc_release(srv->proc); /* SIGKILLs the group, reaps it */
	free(srv->key);
	free(srv);
}

void sv__forksrv_stop_all(supervisor *sv)
{
	while (sv->servers)
		server_stop(sv, sv->servers);
}

/* Wait for one message on the server's socket, at most the timeout.
 * Returns its length, 0 on EOF, -1 on timeout or error (errno). */
static ssize_t recv_timed(supervisor *sv, int fd, char *buf, size_t len)
{
	long long until = clock_mono_ms() + sv->forksrv_timeout_ms;

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		long long left = until - clock_mono_ms();
		ssize_t n;
		int r;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		r = poll(&pf, 1, (int)left);
		if (r < 0 && errno != EINTR)
			return -1;
		if (r <= 0)
			continue;
		n = recv(fd, buf, len - 1, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0 && errno == ECONNRESET)
			return 0;
		if (n >= 0)
			buf[n] = '\0';
		return n;
	}
}

/* A sandboxed server's writable directories: the parent of the
 * attempt's own (into area), then the attempt's others; -1 when the
 * first has no parent. */
static int server_area(const struct sv_spawn *req, char *area, size_t len,
		       const char **writable)
{
	const char *slash = strrchr(req->writable[0], '/');
	size_t n = 1;

	if (!slash || slash == req->writable[0] ||
	    (size_t)(slash - req->writable[0]) >= len)
		return -1;
	memcpy(area, req->writable[0], (size_t)(slash - req->writable[0]));
	area[slash - req->writable[0]] = '\0';
	writable[0] = area;
	for (size_t i = 1; req->writable[i] && n < SANDBOX_WRITABLE_MAX; i++)
		writable[n++] = req->writable[i];
	writable[n] = NULL;
	return 0;
}

static int server_start(supervisor *sv, const struct sv_spawn *req,
			const char *key, size_t keylen, struct sv_forksrv **out,
			char *err, size_t errlen)
{
	struct sv_forksrv *srv = calloc(1, sizeof(*srv)), **last;
	char name[300], hello[128], area[4096];
	const char *writable[SANDBOX_WRITABLE_MAX + 1];
	size_t n = 0;
	ssize_t r;
	int rc;

	if (!srv || !(srv->key = malloc(keylen))) {
		free(srv);
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	memcpy(srv->key, key, keylen);
	srv->keylen = keylen;
	/* stdout and stderr of the server are /dev/null: each attempt gets
	 * its own in the request.  The dynamic linker binds every symbol once
	 * in the server, not lazily again in each child.  Sandboxed, the
	 * server may write where its attempts may: their parent directory
	 * (each attempt's own is below it) and the suite's extra ones
	 * (supervise.h, invariant 9). */
	if (req->writable && server_area(req, area, sizeof(area), writable)) {
		snprintf(err, errlen, "cannot run '%s': its writable "
			 "directory '%s' has no parent", req->argv[0],
			 req->writable[0]);
		free(srv->key);
		free(srv);
		return FC_USAGE;
	}
	rc = sv__spawn(sv, &(struct sv_spawn){ .argv = req->argv,
		       .cwd = req->cwd, .env = server_env,
		       .writable = req->writable ? writable : NULL }, NULL,
		       true, &srv->proc, err, errlen);
	if (rc) {
		free(srv->key);
		free(srv);
		return rc;
	}
	r = recv_timed(sv, srv->proc->fp_fd, hello, sizeof(hello));
	if (r <= 0 || strcmp(hello, FORK_SERVER_HELLO) != 0) {
		who(req, name, sizeof(name));
		if (r > 0)
			snprintf(err, errlen, "%s said '%.40s' instead of hello "
				 "('%s')", name, hello, FORK_SERVER_HELLO);
		else if (r == 0)
			snprintf(err, errlen, "%s exited before saying hello "
				 "(does the program call fork_server_serve()?)",
				 name);
		else
			snprintf(err, errlen, "%s did not say hello within "
				 "%lld ms", name, sv->forksrv_timeout_ms);
		sv__proc_release(srv->proc);
		free(srv->key);
		free(srv);
		return FC_IO;
	}
	for (last = &sv->servers; *last; last = &(*last)->next)
		n++;
	if (n >= FORKSRV_MAX) {
		struct sv_forksrv *oldest = sv->servers;

		while (oldest->next)
			oldest = oldest->next;
		server_stop(sv, oldest);
	}
	srv->next = sv->servers;
	sv->servers = srv;
	*out = srv;
	return 0;
}

/* The request's text part: "spawn", counts, cwd, the failpoint flag, the
 * filter's length, the namespace, argv, env (and room for the filter
 * after it); NULL when it would exceed the maximum. */
static char *request_text(const struct sv_spawn *req,
			  const struct child_plan *cp, size_t bpf_len,
			  size_t *len)
{
	size_t argc = 0, envc = 0, n;
	char head[96], *msg, *w;
	int hl;

	for (char *const *a = req->argv; *a; a++)
		argc++;
	for (char **e = cp->envp; *e; e++)
		envc++;
	hl = snprintf(head, sizeof(head), "%s%c%zu%c%zu%c", FORK_SERVER_SPAWN,
		      0, argc, 0, envc, 0);
	n = (size_t)hl + strlen(req->cwd ? req->cwd : "") + 1 + 2 + 24 + 2 +
	    bpf_len;
	for (size_t i = 0; i < argc; i++)
		n += strlen(req->argv[i]) + 1;
	for (size_t i = 0; i < envc; i++)
		n += strlen(cp->envp[i]) + 1;
	if (n > FORK_SERVER_MSG_MAX || !(msg = malloc(n)))
		return NULL;
	memcpy(msg, head, (size_t)hl);
	w = stpcpy(msg + hl, req->cwd ? req->cwd : "") + 1;
	w += sprintf(w, "%d%c%zu%c%d", cp->cs.fp_fd >= 0, 0, bpf_len, 0,
		     (int)cp->cs.contain) + 1;
	for (size_t i = 0; i < argc; i++)
		w = stpcpy(w, req->argv[i]) + 1;
	for (size_t i = 0; i < envc; i++)
		w = stpcpy(w, cp->envp[i]) + 1;
	*len = (size_t)(w - msg);
	return msg;
}

/* Send the request with the child's fds.  GONE when the server is. */
static int request_send(int sock, const struct sv_spawn *req,
			const struct child_plan *cp, char *err, size_t errlen)
{
	const struct child_setup *cs = &cp->cs;
	int fds[FORK_SERVER_FDS_MAX] = { cs->in_fd, cs->out_fd, cs->err_fd,
					 cs->report_fd };
	size_t bpf_len = cs->filter_len * sizeof(*cs->filter), len;
	char *msg;
	int nfds = 4, rc;

	if (cs->fp_fd >= 0)
		fds[nfds++] = cs->fp_fd;
	if (cs->filter)
		fds[nfds++] = cs->seccomp_sock;
	msg = request_text(req, cp, bpf_len, &len);
	if (!msg) {
		snprintf(err, errlen, "cannot send '%s' to its fork server: "
			 "argv and environment exceed %d bytes", req->argv[0],
			 FORK_SERVER_MSG_MAX);
		return FC_USAGE;
	}
	if (cs->filter)
		memcpy(msg + len, cs->filter, bpf_len);
	rc = fds_send(sock, msg, len + bpf_len, fds, nfds);
	free(msg);
	return rc == 0 ? SENT : GONE;
}

/* Read "pid N" / "error E".  GONE for EOF, a timeout or garbage. */
static int reply_read(supervisor *sv, struct sv_forksrv *srv,
		      const struct sv_spawn *req, pid_t *pid, char *err,
		      size_t errlen)
{
	char buf[64], name[300], *end;
	ssize_t n = recv_timed(sv, srv->proc->fp_fd, buf, sizeof(buf));
	long v;

	if (n <= 0)
		return GONE;
	if (strncmp(buf, "pid ", 4) == 0) {
		v = strtol(buf + 4, &end, 10);
		if (!*end && v > 0) {
			*pid = (pid_t)v;
			return SENT;
		}
	} else if (strncmp(buf, "error ", 6) == 0) {
		v = strtol(buf + 6, &end, 10);
		if (!*end && v > 0) {
			snprintf(err, errlen, "%s cannot start '%s': %s",
				 who(req, name, sizeof(name)), req->argv[0],
				 strerror((int)v));
			return FC_IO;
		}
	}
	return GONE;
}

/* Invariant 5: the server goes where we are; a failure leaves it where it
 * was (a speed-up only). */
static void follow_cpus(struct sv_forksrv *srv)
{
	cpu_set_t here;

	if (sched_getaffinity(0, sizeof(here), &here) != 0 ||
	    (srv->cpus_given && CPU_EQUAL(&here, &srv->cpus)))
		return;
	if (sched_setaffinity(sv_proc_pid(srv->proc), sizeof(here),
			      &here) == 0) {
		srv->cpus = here;
		srv->cpus_given = true;
	}
}

/* The launcher (struct sv_launcher) of a spawn through a fork server. */
static int launch_via_server(void *ctx, const struct sv_spawn *req,
			     const struct child_plan *cp, pid_t *pid,
			     char *err, size_t errlen)
{
	supervisor *sv = ctx;
	char name[300];
	size_t keylen;
	char *key = make_key(req, &keylen);
	int rc = GONE;

	if (!key) {
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	for (int round = 0; round < 2 && rc == GONE; round++) {
		struct sv_forksrv *srv = sv->servers;

		while (srv && (srv->keylen != keylen ||
			       memcmp(srv->key, key, keylen) != 0))
			srv = srv->next;
		if (!srv) {
			rc = server_start(sv, req, key, keylen, &srv, err, errlen);
			if (rc)
				break;
		}
		follow_cpus(srv);
		rc = request_send(srv->proc->fp_fd, req, cp, err, errlen);
		if (rc == SENT)
			rc = reply_read(sv, srv, req, pid, err, errlen);
		if (rc == GONE) /* invariant 3: the next round starts another */
			server_stop(sv, srv);
	}
	free(key);
	if (rc == GONE)
		snprintf(err, errlen, "%s died or did not answer a spawn "
			 "request, twice", who(req, name, sizeof(name)));
	return rc == GONE ? FC_IO : rc;
}

int sv__forksrv_spawn(supervisor *sv, const struct sv_spawn *req,
		      sv_proc **out, char *err, size_t errlen)
{
	const struct sv_launcher via = { .launch = launch_via_server,
					 .ctx = sv };

	return sv__spawn(sv, req, &via, false, out, err, errlen);
}
