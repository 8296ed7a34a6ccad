/*
 * tcp_fault_proxy.h -- the harness's fault proxy (harness/inject/tcp_proxy.h) in
 * raw TCP mode, with the modes the etcd tests use: lose the question or the
 * answer of a request/response exchange.
 *
 * It listens on an ephemeral loopback port and relays every client
 * connection to one upstream HOST:PORT.  Modes (settable at any time with
 * tcp_fault_proxy_set_mode; every chunk a client sends is a request):
 *
 *   PROXY_FORWARD          relay both ways
 *   PROXY_DROP_REPLY       relay the request; when the answer comes, reset
 *                          the connection instead of relaying it
 *                          (the server acted, the client cannot know)
 *   PROXY_DROP_REPLY_ONCE  the same for the next request only
 *   PROXY_DROP_REQUEST     swallow the request and reset the connection
 *                          (the server never saw it; the client cannot
 *                          know either)
 */
#ifndef FENCECERT_TESTS_TCP_FAULT_PROXY_H
#define FENCECERT_TESTS_TCP_FAULT_PROXY_H

#include "harness/inject/tcp_proxy.h"

enum proxy_mode {
	PROXY_FORWARD,
	PROXY_DROP_REPLY,
	PROXY_DROP_REPLY_ONCE,
	PROXY_DROP_REQUEST,
};

struct tcp_fault_proxy {
	int port;            /* where clients connect (127.0.0.1) */
	/* private */
	tcp_proxy *px;
	long cut_before;     /* exchanges lost under earlier modes */
};

/* Start relaying to upstream "HOST:PORT" in PROXY_FORWARD mode.
 * Returns 0, or -1 (nothing left running). */
int tcp_fault_proxy_start(struct tcp_fault_proxy *p, const char *upstream);

void tcp_fault_proxy_set_mode(struct tcp_fault_proxy *p, enum proxy_mode mode);

long tcp_fault_proxy_cut(struct tcp_fault_proxy *p);      /* exchanges lost */
long tcp_fault_proxy_accepted(struct tcp_fault_proxy *p); /* connections */

/* Stop the thread and close every socket. */
void tcp_fault_proxy_stop(struct tcp_fault_proxy *p);

#endif
