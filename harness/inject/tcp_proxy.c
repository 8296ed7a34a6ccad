/*
 * tcp_proxy.c -- the fault proxy's relay (see tcp_proxy.h).
 *
 * One thread per proxy runs one poll() over the wake pipe, the listening
 * socket and both sockets of every connection.  The rule and the counters
 * are shared with the caller under `mu`; the connections are the thread's
 * alone.  The caller's calls only change shared state and write a byte to
 * the wake pipe; the thread does the socket work.
 *
 * Invariants:
 *   1. Nothing leaks: a connection's two sockets are closed together
 *      (conn_drop), every connection is dropped when the thread ends, and
 *      tcp_proxy_free() joins the thread before it closes the rest.
 *   2. A trigger's bytes reach the server at most once and in order:
 *      bytes before it are relayed first, a held trigger and everything
 *      after it on that connection wait in `held` (the client is not read
 *      meanwhile), and a swallowed one is never sent.
 *   3. A cut is a reset of both sides, never a half-close, so the client
 *      cannot mistake it for an answer.
 *   4. The thread never waits on a peer: poll() has no timeout but the wake
 *      pipe; writes are to loopback sockets whose peers read (a PostgreSQL
 *      server and a client waiting for its answer).
 *
 *   connection:  relaying --trigger, HOLD--> holding --release--> relaying
 *                    |                          | client gone: kept until
 *                    |                          | the server closes
 *                    +--trigger, CUT_REPLY--> cutting --answer (Z)--> reset
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "harness/inject/tcp_proxy.h"
#include "harness/inject/tcp_proxy_impl.h"

#define MAX_CONNS 64
#define HELD_MAX (4u << 20) /* what a held connection may buffer */
#define CHUNK 65536

struct conn {
	int cfd, ufd;         /* client, upstream; -1 once closed */
	struct pgw pg;
	unsigned char *pend;  /* client bytes not yet classified (PG) */
	size_t pend_len;
	unsigned char *held;  /* bytes held back since a HOLD fired */
	size_t held_len, held_cap;
	bool holding;
	bool cutting;         /* CUT_REPLY fired: swallow the answer, reset */
	bool client_gone;
};

struct tcp_proxy {
	pthread_mutex_t mu;
	pthread_t thread;
	int lfd, wake[2];
	struct sockaddr_in up;
	enum tcp_proxy_protocol proto;
	int port;
	/* shared, under mu */
	struct tcp_proxy_rule rule;
	struct tcp_proxy_stats st;
	unsigned release_gen;
	unsigned gen, applied_gen; /* changes asked for / done by the thread */
	pthread_cond_t applied;
	bool stop, exited;
	/* the thread's */
	struct conn *conns[MAX_CONNS];
	size_t nconns;
	unsigned released_gen;
};

/* ---- sockets ----------------------------------------------------------- */

static void hard_close(int fd)
{
	struct linger lg = { 1, 0 };

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

static void wake(tcp_proxy *p)
{
	char b = 1;

	if (write(p->wake[1], &b, 1) < 0) {
		/* the pipe is full: the thread is awake already */
	}
}

/* ---- connections ------------------------------------------------------- */

static void conn_free(struct conn *c)
{
	free(c->pend);
	free(c->held);
	free(c);
}

/* Close both sides; `reset` sends RSTs (a cut) instead of FINs. */
static void conn_drop(tcp_proxy *p, size_t i, bool reset)
{
	struct conn *c = p->conns[i];

	if (reset) {
		hard_close(c->cfd);
		hard_close(c->ufd);
	} else {
		if (c->cfd >= 0)
			close(c->cfd);
		if (c->ufd >= 0)
			close(c->ufd);
	}
	conn_free(c);
	p->conns[i] = p->conns[--p->nconns];
}

static int held_add(struct conn *c, const unsigned char *b, size_t n)
{
	if (c->held_len + n > c->held_cap) {
		size_t cap = c->held_cap ? c->held_cap : 4096;
		unsigned char *nb;

		while (cap < c->held_len + n)
			cap *= 2;
		if (cap > HELD_MAX || !(nb = realloc(c->held, cap)))
			return -1;
		c->held = nb;
		c->held_cap = cap;
	}
	memcpy(c->held + c->held_len, b, n);
	c->held_len += n;
	return 0;
}

/* Pass client bytes on: to the server, or into `held` while holding. */
static int pass(struct conn *c, const unsigned char *b, size_t n)
{
	if (n == 0)
		return 0;
	if (c->holding)
		return held_add(c, b, n);
	return fs_send_all(c->ufd, b, n) < 0 ? -1 : 0;
}

static void accept_one(tcp_proxy *p)
{
	struct conn *c;
	int cfd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC), ufd, one = 1;
	bool refuse;

	if (cfd < 0)
		return;
	pthread_mutex_lock(&p->mu);
	p->st.accepted++;
	refuse = p->rule.action == TCP_PROXY_REFUSE || p->nconns == MAX_CONNS;
	if (p->rule.action == TCP_PROXY_REFUSE) {
		p->st.fired++;
		snprintf(p->st.last, sizeof(p->st.last), "refused a connection");
	}
	pthread_mutex_unlock(&p->mu);
	if (refuse) {
		hard_close(cfd);
		return;
	}
	ufd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	c = calloc(1, sizeof(*c));
	if (ufd < 0 || !c ||
	    connect(ufd, (struct sockaddr *)&p->up, sizeof(p->up)) < 0) {
		free(c);
		hard_close(ufd);
		hard_close(cfd); /* the server is down: so is the proxy */
		return;
	}
	setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->cfd = cfd;
	c->ufd = ufd;
	tcp_proxy__pg_init(&c->pg);
	p->conns[p->nconns++] = c;
}

/* ---- triggers ------------------------------------------------------------- */

/*
 * A trigger's bytes msg[0..n): count it and do what the rule says.
 * Returns -1 when the connection must go (reset), 0 otherwise.
 */
static int on_trigger(tcp_proxy *p, struct conn *c, const unsigned char *msg,
		      size_t n, const char *what)
{
	enum tcp_proxy_action act = TCP_PROXY_FORWARD;

	pthread_mutex_lock(&p->mu);
	p->st.triggers++;
	if (p->rule.action != TCP_PROXY_REFUSE &&
	    (p->rule.hit == 0 || p->rule.hit == p->st.triggers))
		act = p->rule.action;
	if (act == TCP_PROXY_CUT_REQUEST || act == TCP_PROXY_HOLD) {
		p->st.fired++;
		snprintf(p->st.last, sizeof(p->st.last), "%s %s",
			 act == TCP_PROXY_HOLD ? "held" : "swallowed", what);
	}
	if (act == TCP_PROXY_CUT_REPLY)
		snprintf(p->st.last, sizeof(p->st.last), "relayed %s", what);
	pthread_mutex_unlock(&p->mu);
	switch (act) {
	case TCP_PROXY_CUT_REQUEST:
		return -1;
	case TCP_PROXY_HOLD:
		c->holding = true;
		return pass(c, msg, n);
	case TCP_PROXY_CUT_REPLY:
		c->cutting = true;
		return pass(c, msg, n);
	default:
		return pass(c, msg, n);
	}
}

/* Client bytes of a PostgreSQL session: relay what is decided, act on
 * triggers, keep the undecided rest in `pend`. */
static int client_pg(tcp_proxy *p, struct conn *c, const unsigned char *b,
		     size_t n)
{
	unsigned char *all = realloc(c->pend, c->pend_len + n);
	size_t off = 0;

	if (!all)
		return -1;
	c->pend = all;
	memcpy(all + c->pend_len, b, n);
	c->pend_len += n;
	for (;;) {
		struct pgw_scan s;

		tcp_proxy__pg_scan(&c->pg, all + off, c->pend_len - off, &s);
		if (!s.trigger) {
			if (pass(c, all + off, s.decided) < 0)
				return -1;
			off += s.decided;
			break;
		}
		if (pass(c, all + off, s.trigger_at) < 0 ||
		    on_trigger(p, c, all + off + s.trigger_at,
			       s.decided - s.trigger_at, s.what) < 0)
			return -1;
		off += s.decided;
	}
	memmove(all, all + off, c->pend_len - off);
	c->pend_len -= off;
	return 0;
}

static void delay(tcp_proxy *p)
{
	struct timespec ts;
	int ms;

	pthread_mutex_lock(&p->mu);
	ms = p->rule.delay_ms;
	if (ms > 0)
		p->st.delayed++;
	pthread_mutex_unlock(&p->mu);
	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The client sent something (or went).  Returns -1 to reset, 1 to close. */
static int from_client(tcp_proxy *p, struct conn *c)
{
	unsigned char buf[CHUNK];
	ssize_t n = read(c->cfd, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		if (!c->holding)
			return 1;
		close(c->cfd); /* the held trigger still goes on later */
		c->cfd = -1;
		c->client_gone = true;
		return 0;
	}
	delay(p);
	if (p->proto == TCP_PROXY_RAW)
		return on_trigger(p, c, buf, (size_t)n, "request");
	return client_pg(p, c, buf, (size_t)n);
}

/* The server answered.  Returns -1 to reset, 1 to close. */
static int from_server(tcp_proxy *p, struct conn *c)
{
	unsigned char buf[CHUNK];
	ssize_t n = read(c->ufd, buf, sizeof(buf));
	int ready;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return 1;
	ready = p->proto == TCP_PROXY_POSTGRESQL ?
		tcp_proxy__pg_server(&c->pg, buf, (size_t)n) : 1;
	if (c->cutting) {
		if (!ready)
			return 0; /* swallowed; wait for the end of the answer */
		pthread_mutex_lock(&p->mu);
		p->st.fired++;
		strncat(p->st.last, ", cut its answer",
			sizeof(p->st.last) - strlen(p->st.last) - 1);
		pthread_mutex_unlock(&p->mu);
		return -1;
	}
	if (c->client_gone)
		return 0;
	return fs_send_all(c->cfd, buf, (size_t)n) < 0 ? 1 : 0;
}

/* ---- the thread -------------------------------------------------------------- */

/* Send what held connections kept, once per tcp_proxy_release(). */
static void release_held(tcp_proxy *p)
{
	for (size_t i = 0; i < p->nconns;) {
		struct conn *c = p->conns[i];

		if (c->holding) {
			c->holding = false;
			if (fs_send_all(c->ufd, c->held, c->held_len) < 0) {
				conn_drop(p, i, true);
				continue;
			}
			c->held_len = 0;
			if (c->client_gone) /* let the server finish and close */
				shutdown(c->ufd, SHUT_WR);
		}
		i++;
	}
}

static void refuse_all(tcp_proxy *p)
{
	for (size_t i = 0; i < p->nconns;) {
		if (p->conns[i]->holding) {
			i++;
			continue;
		}
		pthread_mutex_lock(&p->mu);
		p->st.fired++;
		snprintf(p->st.last, sizeof(p->st.last), "reset a connection");
		pthread_mutex_unlock(&p->mu);
		conn_drop(p, i, true);
	}
}

static long count_holding(const tcp_proxy *p)
{
	long n = 0;

	for (size_t i = 0; i < p->nconns; i++)
		n += p->conns[i]->holding;
	return n;
}

static void *run(void *arg)
{
	tcp_proxy *p = arg;
	struct pollfd fds[2 + 2 * MAX_CONNS];

	for (;;) {
		size_t nfd = 2, n;
		struct conn *order[MAX_CONNS];
		bool stop, refuse, release;

		unsigned gen;

		pthread_mutex_lock(&p->mu);
		gen = p->gen;
		stop = p->stop;
		refuse = p->rule.action == TCP_PROXY_REFUSE;
		release = p->release_gen != p->released_gen;
		p->released_gen = p->release_gen;
		pthread_mutex_unlock(&p->mu);
		if (stop)
			break;
		if (release)
			release_held(p);
		if (refuse)
			refuse_all(p);
		pthread_mutex_lock(&p->mu);
		p->st.held = count_holding(p);
		p->applied_gen = gen;
		pthread_cond_broadcast(&p->applied);
		pthread_mutex_unlock(&p->mu);

		fds[0] = (struct pollfd){ p->wake[0], POLLIN, 0 };
		fds[1] = (struct pollfd){ p->lfd, POLLIN, 0 };
		n = p->nconns;
		for (size_t i = 0; i < n; i++) {
			struct conn *c = p->conns[i];

			order[i] = c;
			/* a holding connection's client is not read (2) */
			fds[nfd++] = (struct pollfd){ c->holding || c->cfd < 0 ? -1 : c->cfd,
						      POLLIN, 0 };
			fds[nfd++] = (struct pollfd){ c->ufd, POLLIN, 0 };
		}
		if (poll(fds, nfd, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[0].revents) {
			char drain[64];

			while (read(p->wake[0], drain, sizeof(drain)) > 0)
				;
		}
		for (size_t i = 0; i < n; i++) {
			struct conn *c = order[i];
			short cr = fds[2 + 2 * i].revents, ur = fds[3 + 2 * i].revents;
			int rc = 0;
			size_t at;

			if (cr & (POLLIN | POLLHUP | POLLERR))
				rc = from_client(p, c);
			if (!rc && (ur & (POLLIN | POLLHUP | POLLERR)))
				rc = from_server(p, c);
			if (!rc)
				continue;
			for (at = 0; at < p->nconns && p->conns[at] != c; at++)
				;
			conn_drop(p, at, rc < 0);
		}
		if (fds[1].revents & POLLIN)
			accept_one(p);
	}
	while (p->nconns)
		conn_drop(p, p->nconns - 1, false);
	pthread_mutex_lock(&p->mu);
	p->exited = true;
	pthread_cond_broadcast(&p->applied);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---- the API -------------------------------------------------------------------- */

enum tcp_proxy_protocol tcp_proxy_protocol_of(const char *upstream)
{
	if (strncmp(upstream, "postgresql://", 13) == 0 ||
	    strncmp(upstream, "postgres://", 11) == 0)
		return TCP_PROXY_POSTGRESQL;
	return TCP_PROXY_RAW;
}

/* Where HOST[:PORT] is in upstream: [*start, *end). */
static void host_span(const char *up, const char **start, const char **end)
{
	const char *s = strstr(up, "://"), *e, *at;

	s = s ? s + 3 : up;
	e = s + strcspn(s, "/?#");
	at = memrchr(s, '@', (size_t)(e - s)); /* the last '@' ends user info */
	*start = at ? at + 1 : s;
	*end = e;
}

static int parse_upstream(const char *up, struct sockaddr_in *out, char *err,
			  size_t errlen)
{
	const char *s, *e, *colon;
	char host[256], port[16];
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	int rc;

	host_span(up, &s, &e);
	colon = memchr(s, ':', (size_t)(e - s));
	if (s == e || (size_t)(e - s) >= sizeof(host) || *s == '[' ||
	    (colon && ((size_t)(e - colon - 1) >= sizeof(port) || colon + 1 == e))) {
		snprintf(err, errlen, "cannot find HOST:PORT in upstream '%.80s'", up);
		return FC_USAGE;
	}
	snprintf(host, sizeof(host), "%.*s", (int)((colon ? colon : e) - s), s);
	if (colon)
		snprintf(port, sizeof(port), "%.*s", (int)(e - colon - 1), colon + 1);
	else if (tcp_proxy_protocol_of(up) == TCP_PROXY_POSTGRESQL)
		strcpy(port, "5432");
	else {
		snprintf(err, errlen, "upstream '%.80s' has no port", up);
		return FC_USAGE;
	}
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc || !res) {
		snprintf(err, errlen, "cannot resolve upstream '%s:%s': %s", host,
			 port, gai_strerror(rc));
		return FC_USAGE;
	}
	memcpy(out, res->ai_addr, sizeof(*out));
	freeaddrinfo(res);
	return 0;
}

char *tcp_proxy_rewrite_url(const char *upstream, int port)
{
	const char *s, *e;
	char *out;

	host_span(upstream, &s, &e);
	if (asprintf(&out, "%.*s127.0.0.1:%d%s", (int)(s - upstream), upstream,
		     port, e) < 0)
		return NULL;
	return out;
}

int tcp_proxy_start(const char *upstream, enum tcp_proxy_protocol proto,
		    tcp_proxy **out, char *err, size_t errlen)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	tcp_proxy *p;
	int rc;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory starting a proxy");
		return FC_NOMEM;
	}
	p->lfd = p->wake[0] = p->wake[1] = -1;
	p->proto = proto;
	if ((rc = parse_upstream(upstream, &p->up, err, errlen)))
		goto fail;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rc = FC_IO;
	if (pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    (p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(p->lfd, 64) < 0 ||
	    getsockname(p->lfd, (struct sockaddr *)&a, &alen) < 0) {
		snprintf(err, errlen, "cannot listen for a proxy: %s", strerror(errno));
		goto fail;
	}
	p->port = ntohs(a.sin_port);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->applied, NULL);
	if ((errno = pthread_create(&p->thread, NULL, run, p))) {
		snprintf(err, errlen, "cannot start a proxy thread: %s",
			 strerror(errno));
		pthread_cond_destroy(&p->applied);
		pthread_mutex_destroy(&p->mu);
		goto fail;
	}
	*out = p;
	return 0;
fail:
	if (p->lfd >= 0)
		close(p->lfd);
	if (p->wake[0] >= 0) {
		close(p->wake[0]);
		close(p->wake[1]);
	}
	free(p);
	return rc;
}

int tcp_proxy_port(const tcp_proxy *p)
{
	return p->port;
}

/* Called with mu held: wake the thread and wait until it has acted on the
 * change just made (a reset or a release has happened when this returns). */
static void apply_locked(tcp_proxy *p)
{
	unsigned want = ++p->gen;

	wake(p);
	while ((int)(p->applied_gen - want) < 0 && !p->exited)
		pthread_cond_wait(&p->applied, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void tcp_proxy_arm(tcp_proxy *p, const struct tcp_proxy_rule *rule)
{
	pthread_mutex_lock(&p->mu);
	p->rule = *rule;
	if (p->rule.delay_ms < 0)
		p->rule.delay_ms = 0;
	if (p->rule.delay_ms > TCP_PROXY_DELAY_MAX_MS)
		p->rule.delay_ms = TCP_PROXY_DELAY_MAX_MS;
	p->st.triggers = p->st.fired = p->st.delayed = 0;
	p->st.last[0] = '\0';
	apply_locked(p);
}

void tcp_proxy_disarm(tcp_proxy *p)
{
	pthread_mutex_lock(&p->mu);
	p->rule = (struct tcp_proxy_rule){ TCP_PROXY_FORWARD, 0, 0 };
	apply_locked(p);
}

void tcp_proxy_release(tcp_proxy *p)
{
	pthread_mutex_lock(&p->mu);
	p->release_gen++;
	apply_locked(p);
}

void tcp_proxy_stats(tcp_proxy *p, struct tcp_proxy_stats *out)
{
	pthread_mutex_lock(&p->mu);
	*out = p->st;
	pthread_mutex_unlock(&p->mu);
}

void tcp_proxy_free(tcp_proxy *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_mutex_unlock(&p->mu);
	wake(p);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->applied);
	pthread_mutex_destroy(&p->mu);
	close(p->lfd);
	close(p->wake[0]);
	close(p->wake[1]);
	free(p);
}
