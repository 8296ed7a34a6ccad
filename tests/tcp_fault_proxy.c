/*
 * tcp_fault_proxy.c -- see tcp_fault_proxy.h: the test modes as rules of
 * the harness's proxy (harness/inject/tcp_proxy.c), so there is one relay.
 */
#include <stdio.h>
#include <string.h>

#include "tests/tcp_fault_proxy.h"

int tcp_fault_proxy_start(struct tcp_fault_proxy *p, const char *upstream)
{
	char err[256];

	memset(p, 0, sizeof(*p));
	if (tcp_proxy_start(upstream, TCP_PROXY_RAW, &p->px, err, sizeof(err))) {
		fprintf(stderr, "tcp_fault_proxy: %s\n", err);
		return -1;
	}
	p->port = tcp_proxy_port(p->px);
	return 0;
}

void tcp_fault_proxy_set_mode(struct tcp_fault_proxy *p, enum proxy_mode mode)
{
	static const struct tcp_proxy_rule rules[] = {
		[PROXY_FORWARD] = { TCP_PROXY_FORWARD, 0, 0 },
		[PROXY_DROP_REPLY] = { TCP_PROXY_CUT_REPLY, 0, 0 },
		[PROXY_DROP_REPLY_ONCE] = { TCP_PROXY_CUT_REPLY, 1, 0 },
		[PROXY_DROP_REQUEST] = { TCP_PROXY_CUT_REQUEST, 0, 0 },
	};

	p->cut_before = tcp_fault_proxy_cut(p); /* arming zeroes the count */
	tcp_proxy_arm(p->px, &rules[mode]);
}

long tcp_fault_proxy_cut(struct tcp_fault_proxy *p)
{
	struct tcp_proxy_stats st;

	tcp_proxy_stats(p->px, &st);
	return p->cut_before + st.fired;
}

long tcp_fault_proxy_accepted(struct tcp_fault_proxy *p)
{
	struct tcp_proxy_stats st;

	tcp_proxy_stats(p->px, &st);
	return st.accepted;
}

void tcp_fault_proxy_stop(struct tcp_fault_proxy *p)
{
	tcp_proxy_free(p->px);
	p->px = NULL;
}
