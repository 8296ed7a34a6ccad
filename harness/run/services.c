/*
 * services.c -- start, change and tear down the servers a suite declares
 * (services.h).
 *
 * Invariants:
 *  1. Every script runs in the keeper, in its process group, so every
 *     server a script launches is in that group too (etcd stays in its
 *     caller's group) and, once the script exits, a child of the keeper
 *     (a subreaper), never of a worker.
 *  2. The keeper is the one place that tears down: services_free() only
 *     closes its socket and waits for it; a harness killed by any signal
 *     (and its workers, which die with it) closes the socket as well.
 *  3. A failing call leaves no half-started service behind: services_start()
 *     tears down what it started before it returns an error.
 *  4. Member actions run under the exclusive schedule lock and are undone
 *     by services_leave() before the lock is released.
 *
 *   services_start --fork--> keeper: setpgid, subreaper; serve requests
 *        |                      |   ("run ci/etcd-up DIR --members 3")
 *        | requests, replies    | EOF (services_free, or the harness died)
 *        v                      v
 *   schedules: enter, member, ci/etcd-down, ci/pg-down, SIGKILL the group,
 *   clean, leave                remove the services dir
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <openssl/rand.h>

#include "common/dl_pq.h"
#include "common/etcd_client.h"
#include "common/fsutil.h"
#include "harness/run/services.h"
#include "common/fds.h"
#include "common/put.h"
#include "harness/proc/child_env.h"
#include "harness/proc/pool.h"

#define SCRIPT_OUTPUT_MAX 4096
#define ETCD_MEMBERS_MAX_SVC 3

struct service {
	const struct service_spec *spec;
	char dir[PATH_MAX];      /* its scripts' DIR; "" when not started */
	char *address;           /* for {service:NAME} */
};

struct services {
	pid_t owner;             /* the process that started them */
	pid_t keeper;            /* 0: none */
	int keeper_fd;           /* write end; EOF tells the keeper to act */
	char dir[PATH_MAX];      /* ours; removed by the keeper */
	char ci[PATH_MAX];       /* where the scripts are */
	int lock_fd;             /* per process: see lock_pid */
	pid_t lock_pid;
	bool exclusive;          /* the lock held is exclusive */
	struct service *v;
	size_t n;
};

static int __attribute__((format(printf, 3, 4)))
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return FC_IO;
}

/* --- finding and running the scripts ---------------------------------- */

static bool has_scripts(const char *dir)
{
	char p[PATH_MAX];

	put(p, sizeof(p), "%s/etcd-up", dir);
	return access(p, X_OK) == 0;
}

/* $FENCECERT_CI_DIR, else ci/ beside or above this executable (a build
 * dir), else ../share/fencecert/ci (make install), else ./ci. */
static int find_ci(char *out, size_t len, char *err, size_t errlen)
{
	const char *env = getenv("FENCECERT_CI_DIR");
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		if (!has_scripts(env))
			return fail(err, errlen, "FENCECERT_CI_DIR '%s' holds no etcd-up script",
				    env);
		put(out, len, "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		if ((slash = strrchr(exe, '/')))
			*slash = '\0';
		put(out, len, "%s/ci", exe);
		if (has_scripts(out))
			return 0;
		put(out, len, "%s/../ci", exe);
		if (has_scripts(out))
			return 0;
		put(out, len, "%s/../share/fencecert/ci", exe); /* make install */
		if (has_scripts(out))
			return 0;
	}
	put(out, len, "ci");
	if (has_scripts(out))
		return 0;
	return fail(err, errlen, "cannot find the service scripts (ci/etcd-up) beside "
		    "the fencecert executable or in ./ci; set FENCECERT_CI_DIR");
}

/* What a requester asks the keeper to run: CI/script a1 a2 a3 ("" = no
 * argument), stderr appended to log. */
struct request {
	unsigned long long id;
	char script[32];
	char args[3][PATH_MAX];
	char log[PATH_MAX + 32];
};

struct reply {
	unsigned long long id;
	int status;              /* exit status, -1: could not run or died */
	char out[SCRIPT_OUTPUT_MAX]; /* stdout, trailing newlines removed */
};

/* What a script gets from the harness's environment besides the
 * allow-list (harness/proc/child_env.h): the knobs the bundled scripts
 * read (docs/harness.md, "Environment").  Never the signing key. */
static const char *const script_knobs[] = {
	"ETCD_WAIT", "ETCD_HEARTBEAT_MS", "ETCD_ELECTION_MS", "ETCD_MAX_TXN_OPS",
	"PG_BIN", "PG_DOWN_WAIT", "FENCECERT_PG_PORT_FIRST",
	"FENCECERT_PG_PORT_COUNT", NULL,
};

/* In the keeper: run one request and wait for the script. */
static int run_script(const services *sv, const struct request *rq,
		      char *out, size_t outlen)
{
	char path[PATH_MAX + 64];
	char **env = child_env_build(NULL, script_knobs, NULL);
	int p[2], status;
	size_t got = 0;
	pid_t pid;

	put(path, sizeof(path), "%s/%s", sv->ci, rq->script);
	out[0] = '\0';
	if (!env)
		return -1;
	if (pipe2(p, O_CLOEXEC) < 0) {
		free(env);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		free(env);
		return -1;
	}
	if (pid == 0) {
		const char *argv[5] = { path, NULL, NULL, NULL, NULL };
		int fd = open(rq->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			      0644);
		size_t k = 1;

		for (int i = 0; i < 3; i++)
			if (rq->args[i][0])
				argv[k++] = rq->args[i];
		for (int sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		dup2(p[1], 1);
		if (fd >= 0)
			dup2(fd, 2);
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, 0);
		fds_close_from(3);
		execve(path, (char *const *)argv, env);
		_exit(127);
	}
	free(env);
	close(p[1]);
	for (;;) {
		char buf[512];
		ssize_t r = read(p[0], buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r && got + 1 < outlen; i++)
			out[got++] = buf[i];
	}
	close(p[0]);
	while (got > 0 && (out[got - 1] == '\n' || out[got - 1] == '\r'))
		got--;
	out[got] = '\0';
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void fill_request(struct request *rq, const char *log,
			 const char *script, const char *a1, const char *a2,
			 const char *a3)
{
	const char *a[3] = { a1, a2, a3 };

	memset(rq, 0, sizeof(*rq));
	put(rq->script, sizeof(rq->script), "%s", script);
	put(rq->log, sizeof(rq->log), "%s", log);
	for (int i = 0; i < 3; i++)
		put(rq->args[i], sizeof(rq->args[i]), "%s", a[i] ? a[i] : "");
}

/*
 * Ask the keeper to run a script (any process holding sv: the coordinator
 * or a worker; one at a time, under the exclusive lock or before the
 * workers exist).  Replies carry the request's id, so a reply meant for a
 * requester that died is skipped, never taken for ours.
 */
static int call(services *sv, const char *log, char *out, size_t outlen,
		const char *script, const char *a1, const char *a2,
		const char *a3)
{
	static unsigned counter;
	struct request *rq = malloc(sizeof(*rq));
	struct reply *rp = malloc(sizeof(*rp));
	int rc = -1;

	if (!rq || !rp || sv->keeper_fd < 0)
		goto done;
	fill_request(rq, log, script, a1, a2, a3);
	rq->id = ((unsigned long long)getpid() << 32) | ++counter;
	while (send(sv->keeper_fd, rq, sizeof(*rq), MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			goto done;
	for (;;) {
		ssize_t n = recv(sv->keeper_fd, rp, sizeof(*rp), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(*rp))
			goto done; /* the keeper is gone */
		if (rp->id == rq->id)
			break;
	}
	rc = rp->status;
	if (out && outlen)
		put(out, outlen, "%s", rp->out);
done:
	free(rq);
	free(rp);
	return rc;
}

/* --- the keeper --------------------------------------------------------- */

static void reap_orphans(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static void tear_down(const services *sv)
{
	struct request rq;
	char out[64];

	for (size_t i = 0; i < sv->n; i++) {
		const struct service *s = &sv->v[i];
		char log[PATH_MAX + 32];

		if (!s->dir[0])
			continue;
		put(log, sizeof(log), "%s.scripts.log", s->dir);
		fill_request(&rq, log, s->spec->kind == SERVICE_ETCD ?
			     "etcd-down" : "pg-down", s->dir, NULL, NULL);
		if (run_script(sv, &rq, out, sizeof(out))) {
			/* the group kill below takes what is left */
		}
		reap_orphans();
	}
}

/*
 * Runs in the keeper, the parent of every server: a subreaper, so a
 * server whose script exited becomes our child, not init's or a worker's
 * (a worker's supervisor is a subreaper too, and would keep it a zombie).
 * Serve requests until EOF, then tear down and take the group with us.
 */
static void __attribute__((noreturn)) keeper_main(services *sv, int fd)
{
	struct request *rq = malloc(sizeof(*rq));
	struct reply *rp = malloc(sizeof(*rp));

	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGTSTP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	prctl(PR_SET_NAME, "fencecert-svc", 0, 0, 0);
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	dup2(fd, 3);
	fds_close_from(4);
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
	}
	while (rq && rp) {
		ssize_t n = recv(3, rq, sizeof(*rq), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(*rq))
			break; /* EOF: every requester is gone (invariant 2) */
		rq->script[sizeof(rq->script) - 1] = '\0';
		rq->log[sizeof(rq->log) - 1] = '\0';
		for (int i = 0; i < 3; i++)
			rq->args[i][sizeof(rq->args[i]) - 1] = '\0';
		rp->id = rq->id;
		rp->status = run_script(sv, rq, rp->out, sizeof(rp->out));
		reap_orphans();
		if (send(3, rp, sizeof(*rp), MSG_NOSIGNAL) < 0) {
			/* the requester died; the next one skips nothing */
		}
	}
	tear_down(sv);
	if (fs_remove_tree(sv->dir)) {
		/* a tmpfs leftover; nothing else to do from here */
	}
	kill(0, SIGKILL); /* a script caught half-way, a stray server, us */
	_exit(0);
}

/* Fork the keeper; it learns the service dirs from our memory, so every
 * sv->v[i].dir is set before (and only the started ones are non-empty). */
static int start_keeper(services *sv, char *err, size_t errlen)
{
	int p[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) < 0)
		return fail(err, errlen, "cannot create a socket pair: %s",
			    strerror(errno));
	sv->keeper = fork();
	if (sv->keeper < 0) {
		sv->keeper = 0;
		close(p[0]);
		close(p[1]);
		return fail(err, errlen, "cannot fork: %s", strerror(errno));
	}
	if (sv->keeper == 0) {
		close(p[1]);
		setpgid(0, 0);
		keeper_main(sv, p[0]);
	}
	setpgid(sv->keeper, sv->keeper); /* whoever runs first wins; same result */
	close(p[0]);
	sv->keeper_fd = p[1];
	return 0;
}

/* --- starting ------------------------------------------------------------ */

static int start_etcd(services *sv, struct service *s, char *err,
		      size_t errlen)
{
	char out[SCRIPT_OUTPUT_MAX], log[PATH_MAX + 16], members[8];
	const char *src;
	char *dst;
	int rc;

	put(log, sizeof(log), "%s.scripts.log", s->dir);
	put(members, sizeof(members), "%d", s->spec->members);
	rc = call(sv, log, out, sizeof(out), "etcd-up", s->dir, "--members",
		  members);
	if (rc)
		return fail(err, errlen, "service '%s': ci/etcd-up failed (exit %d); see '%s' and '%s/*.log'",
			    s->spec->name, rc, log, s->dir);
	/* "http://a:1,http://b:2" -> "a:1,b:2" */
	s->address = malloc(strlen(out) + 1);
	if (!s->address)
		return FC_NOMEM;
	for (src = out, dst = s->address; *src;) {
		if (strncmp(src, "http://", 7) == 0)
			src += 7;
		else
			*dst++ = *src++;
	}
	*dst = '\0';
	if (!s->address[0])
		return fail(err, errlen, "service '%s': ci/etcd-up printed no address",
			    s->spec->name);
	return 0;
}

static int start_pg(services *sv, struct service *s, char *err, size_t errlen)
{
	const char *env = s->spec->env[0] ? getenv(s->spec->env) : NULL;
	char out[SCRIPT_OUTPUT_MAX], log[PATH_MAX + 16];
	int rc;

	if (env && *env) { /* an existing server: start nothing */
		s->dir[0] = '\0';
		s->address = strdup(env);
		return s->address ? 0 : FC_NOMEM;
	}
	put(log, sizeof(log), "%s.scripts.log", s->dir);
	rc = call(sv, log, out, sizeof(out), "pg-up", s->dir, NULL, NULL);
	if (rc || strncmp(out, "postgres", 8) != 0)
		return fail(err, errlen, "service '%s': ci/pg-up failed (exit %d); see '%s'",
			    s->spec->name, rc, log);
	s->address = strdup(out);
	return s->address ? 0 : FC_NOMEM;
}

int services_start(const struct suite *s, const char *dir, services **out,
		   char *err, size_t errlen)
{
	services *sv = calloc(1, sizeof(*sv));
	int rc = 0;

	*out = NULL;
	if (!sv || !(sv->v = calloc(s->nservices + 1, sizeof(*sv->v)))) {
		free(sv);
		put(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	sv->owner = getpid();
	sv->keeper_fd = -1;
	sv->lock_fd = -1;
	sv->n = s->nservices;
	if (sv->n == 0) {
		*out = sv;
		return 0;
	}
	put(sv->dir, sizeof(sv->dir), "%s", dir);
	rc = find_ci(sv->ci, sizeof(sv->ci), err, errlen);
	if (!rc && (mkdir(sv->dir, 0711) < 0 || chmod(sv->dir, 0711) < 0))
		rc = fail(err, errlen, "cannot create '%s': %s", sv->dir,
			  strerror(errno));
	if (rc) {
		free(sv->v);
		free(sv);
		return rc;
	}
	for (size_t i = 0; i < sv->n; i++) {
		const struct service_spec *spec = &s->services[i];
		bool external = spec->kind == SERVICE_POSTGRESQL && spec->env[0] &&
				getenv(spec->env) && *getenv(spec->env);

		sv->v[i].spec = spec;
		if (!external)
			put(sv->v[i].dir, sizeof(sv->v[i].dir), "%s/%s",
				 sv->dir, spec->name);
	}
	rc = start_keeper(sv, err, errlen);
	for (size_t i = 0; i < sv->n && !rc; i++) {
		struct service *x = &sv->v[i];

		rc = x->spec->kind == SERVICE_ETCD ? start_etcd(sv, x, err, errlen)
			: start_pg(sv, x, err, errlen);
		if (rc == FC_NOMEM)
			put(err, errlen, "out of memory");
	}
	if (rc) {
		services_free(sv); /* invariant 3 */
		return rc;
	}
	*out = sv;
	return 0;
}

void services_free(services *sv)
{
	if (!sv)
		return;
	if (sv->lock_fd >= 0 && sv->lock_pid == getpid())
		close(sv->lock_fd);
	if (sv->keeper && sv->owner == getpid()) {
		int status;

		close(sv->keeper_fd); /* invariant 2: the keeper does the rest */
		while (waitpid(sv->keeper, &status, 0) < 0 && errno == EINTR)
			;
	}
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i].address);
	free(sv->v);
	free(sv);
}

const char *services_address(const void *ctx, const char *name)
{
	const services *sv = ctx;

	for (size_t i = 0; sv && i < sv->n; i++)
		if (strcmp(sv->v[i].spec->name, name) == 0)
			return sv->v[i].address;
	return NULL;
}

/* --- members ---------------------------------------------------------------- */

static struct service *etcd_service(services *sv, const char *name)
{
	struct service *only = NULL;
	size_t netcd = 0;

	for (size_t i = 0; sv && i < sv->n; i++) {
		struct service *s = &sv->v[i];
		if (s->spec->kind != SERVICE_ETCD)
			continue;
		if (name && *name && strcmp(s->spec->name, name) == 0)
			return s;
		if (netcd++ == 0)
			only = s;
	}
	return (!name || !*name) && netcd == 1 ? only : NULL;
}

int services_member(services *sv, const char *service, const char *member,
		    bool up, char *err, size_t errlen)
{
	struct service *s = etcd_service(sv, service);
	char log[PATH_MAX + 16];
	int rc;

	if (!s || !s->dir[0]) {
		put(err, errlen, "no running etcd service '%s'",
			 service && *service ? service : "(the only one)");
		return FC_USAGE;
	}
	put(log, sizeof(log), "%s.scripts.log", s->dir);
	rc = call(sv, log, NULL, 0, "etcd-member", s->dir, up ? "start" : "stop",
		  member);
	if (rc == 64) {
		put(err, errlen, "service '%s' has no member '%s'",
			 s->spec->name, member);
		return FC_USAGE;
	}
	if (rc)
		return fail(err, errlen, "ci/etcd-member %s %s failed (exit %d); see '%s' and '%s/%s.log'",
			    up ? "start" : "stop", member, rc, log, s->dir, member);
	return 0;
}

/* --- schedules -------------------------------------------------------------- */

int services_enter(services *sv, bool exclusive, char *err, size_t errlen)
{
	char path[PATH_MAX + 32];

	if (!sv || !sv->keeper)
		return 0;
	if (sv->lock_fd < 0 || sv->lock_pid != getpid()) {
		/* flock belongs to the open file: each worker opens its own */
		put(path, sizeof(path), "%s/schedules.lock", sv->dir);
		sv->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (sv->lock_fd < 0)
			return fail(err, errlen, "cannot open '%s': %s", path,
				    strerror(errno));
		sv->lock_pid = getpid();
	}
	if (flock(sv->lock_fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0) {
		sv->exclusive = exclusive;
		return 0;
	}
	/* a worker waiting for another's schedule holds no turn meanwhile:
	 * that one may need a turn to finish (pool.h) */
	pool_turn_give();
	while (flock(sv->lock_fd, exclusive ? LOCK_EX : LOCK_SH) < 0)
		if (errno != EINTR) {
			pool_turn_take();
			return fail(err, errlen, "cannot lock the services: %s",
				    strerror(errno));
		}
	pool_turn_take();
	sv->exclusive = exclusive;
	return 0;
}

int services_leave(services *sv, char *err, size_t errlen)
{
	int rc = 0;

	if (!sv || !sv->keeper || sv->lock_fd < 0 || sv->lock_pid != getpid())
		return 0;
	/* invariant 4: every member serves again before others come in */
	for (size_t i = 0; sv->exclusive && i < sv->n; i++) {
		struct service *s = &sv->v[i];
		for (int m = 1; s->spec->kind == SERVICE_ETCD &&
			     m <= s->spec->members; m++) {
			char name[8], e[512];

			put(name, sizeof(name), "m%d", m);
			if (services_member(sv, s->spec->name, name, true, e,
					    sizeof(e)) && !rc) {
				put(err, errlen, "%s", e);
				rc = FC_IO;
			}
		}
	}
	sv->exclusive = false;
	flock(sv->lock_fd, LOCK_UN);
	return rc;
}

void services_schedule_id(const char *tag, char *out, size_t outlen)
{
	unsigned char r[6] = { 0 };
	char hex[13];
	size_t k;

	if (RAND_bytes(r, sizeof(r)) != 1) {
		unsigned long long t = (unsigned long long)getpid() * 2654435761u;
		memcpy(r, &t, sizeof(r));
	}
	for (size_t i = 0; i < sizeof(r); i++)
		put(hex + 2 * i, 3, "%02x", r[i]);
	put(out, outlen, "fc_%s_", hex);
	k = strlen(out);
	for (const char *p = tag; *p && k + 1 < outlen && k < 63; p++) {
		char ch = *p;
		if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		else if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
			ch = '_';
		out[k++] = ch;
	}
	out[k] = '\0';
}

static int clean_etcd(const struct service *s, const char *id, char *err,
		      size_t errlen)
{
	struct etcd_txn t = { 0 };
	struct etcd_txn_result res = { 0 };
	etcd_client *c = NULL;
	char end[256];
	int rc;

	rc = etcd_prefix_end(id, end, sizeof(end));
	if (!rc)
		rc = etcd_client_new(s->address, &c, err, errlen);
	if (!rc)
		rc = etcd_txn_init(&t);
	if (!rc)
		rc = etcd_txn_delete(&t, ETCD_SUCCESS, id, end);
	if (!rc && (rc = etcd_client_txn(c, &t, &res)))
		put(err, errlen, "service '%s': cannot delete '%s*': %s",
			 s->spec->name, id, etcd_client_errmsg(c));
	etcd_txn_result_release(&res);
	etcd_txn_release(&t);
	etcd_client_free(c);
	return rc;
}

static void quiet_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message; /* "drop cascades to ...": expected, not news */
}

static int clean_pg(const struct service *s, const char *id, char *err,
		    size_t errlen)
{
	char *url = strdup(s->address), *q, *sql = NULL;
	PGconn *conn;
	PGresult *res;
	int rc = 0;

	if (!url)
		return FC_NOMEM;
	if ((q = strchr(url, '?')))
		*q = '\0'; /* fencecert's own parameters are not libpq's */
	if (dl_pq_load(err, errlen)) {
		free(url);
		return FC_IO;
	}
	conn = PQconnectdb(url);
	free(url);
	PQsetNoticeProcessor(conn, quiet_notice, NULL);
	if (PQstatus(conn) != CONNECTION_OK) {
		rc = fail(err, errlen, "service '%s': cannot connect: %s",
			  s->spec->name, PQerrorMessage(conn));
		PQfinish(conn);
		return rc;
	}
	/* id is [a-z0-9_] only (services_clean checked), so it can be quoted
	 * as a literal; each name found is quoted as an identifier */
	if (asprintf(&sql, "SELECT nspname FROM pg_namespace WHERE "
		     "left(nspname, %zu) = '%s'", strlen(id), id) < 0) {
		PQfinish(conn);
		return FC_NOMEM;
	}
	res = PQexec(conn, sql);
	free(sql);
	for (int i = 0; PQresultStatus(res) == PGRES_TUPLES_OK &&
		     i < PQntuples(res) && !rc; i++) {
		const char *name = PQgetvalue(res, i, 0);
		char ident[200];
		size_t k = 0;
		PGresult *d;

		ident[k++] = '"';
		for (const char *p = name; *p && k + 4 < sizeof(ident); p++) {
			if (*p == '"')
				ident[k++] = '"';
			ident[k++] = *p;
		}
		ident[k++] = '"';
		ident[k] = '\0';
		if (asprintf(&sql, "DROP SCHEMA %s CASCADE", ident) < 0) {
			rc = FC_NOMEM;
			break;
		}
		d = PQexec(conn, sql);
		if (PQresultStatus(d) != PGRES_COMMAND_OK)
			rc = fail(err, errlen, "service '%s': cannot drop schema '%s': %s",
				  s->spec->name, name, PQerrorMessage(conn));
		PQclear(d);
		free(sql);
	}
	if (!rc && PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = fail(err, errlen, "service '%s': cannot list schemas: %s",
			  s->spec->name, PQerrorMessage(conn));
	PQclear(res);
	PQfinish(conn);
	return rc;
}

int services_clean(services *sv, const char *schedule_id, char *err,
		   size_t errlen)
{
	int rc = 0;

	if (strncmp(schedule_id, "fc_", 3) != 0 || strlen(schedule_id) < 16 ||
	    strlen(schedule_id) > 63 ||
	    strspn(schedule_id, "abcdefghijklmnopqrstuvwxyz0123456789_") !=
		    strlen(schedule_id)) {
		/* never a short or foreign prefix: it could hold other data */
		put(err, errlen, "refusing to clean namespace '%s'", schedule_id);
		return FC_USAGE;
	}
	for (size_t i = 0; sv && i < sv->n && !rc; i++) {
		const struct service *s = &sv->v[i];
		if (!s->address)
			continue;
		rc = s->spec->kind == SERVICE_ETCD ?
			clean_etcd(s, schedule_id, err, errlen) :
			clean_pg(s, schedule_id, err, errlen);
	}
	return rc;
}
