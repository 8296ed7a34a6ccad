/*
 * tcp_fault_proxy.h -- a TCP proxy for tests that loses what a test tells
 * it to lose: the question or the answer of a request/response exchange.
 *
 * It listens on an ephemeral loopback port and relays each client
 * connection, one at a time, to one upstream HOST:PORT (IPv4).  A new
 * client connection ends the current one, as a client that reconnected
 * would.  Modes (settable at any time, read once per packet):
 *
 *   PROXY_FORWARD          relay both ways
 *   PROXY_DROP_REPLY       relay the request; when the answer comes, reset
 *                          the client's connection instead of relaying it
 *                          (the server acted, the client cannot know)
 *   PROXY_DROP_REPLY_ONCE  the same for one answer, then PROXY_FORWARD
 *   PROXY_DROP_REQUEST     swallow the request and reset the connection
 *                          (the server never saw it; the client cannot
 *                          know either)
 *
 * `accepted` counts client connections, `cut` the exchanges lost.  The
 * struct is the caller's; mode, accepted and cut are the interface, the
 * rest belongs to tcp_fault_proxy.c.
 */
#ifndef FENCECERT_TESTS_TCP_FAULT_PROXY_H
#define FENCECERT_TESTS_TCP_FAULT_PROXY_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>

enum proxy_mode {
	PROXY_FORWARD,
	PROXY_DROP_REPLY,
	PROXY_DROP_REPLY_ONCE,
	PROXY_DROP_REQUEST,
};

struct tcp_fault_proxy {
	atomic_int mode;     /* an enum proxy_mode */
	atomic_int accepted;
	atomic_int cut;
	int port;            /* where clients connect (127.0.0.1) */
	/* private */
	int lfd;
	atomic_int stop;
	struct sockaddr_in upstream;
	pthread_t thread;
};

/* Start relaying to upstream "A.B.C.D:PORT" in PROXY_FORWARD mode.
 * Returns 0, or -1 with errno set (nothing left running). */
int tcp_fault_proxy_start(struct tcp_fault_proxy *p, const char *upstream);

/* Stop the thread and close every socket. */
void tcp_fault_proxy_stop(struct tcp_fault_proxy *p);

#endif
