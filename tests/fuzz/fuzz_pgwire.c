/*
 * fuzz_pgwire.c -- libFuzzer target for the PostgreSQL wire scanner of the
 * fault proxy (harness/inject/tcp_proxy_pg.c, through its internal entry
 * points in tcp_proxy_impl.h): what a route sends its database and what
 * the server answers, both relayed by the proxy.  Built and run by
 * tests/integration/fuzz_smoke.sh.
 *
 * The input is a conversation: each record is one header byte (bit 0:
 * client 0 / server 1; bits 1-7: length - 1) and that many bytes.  Client
 * bytes go through the relay's loop (tcp_proxy.c, client_pg()): scan what
 * is pending, relay what is decided, act on a trigger, keep the rest.
 * Checks, trapping when one breaks:
 *   - a scan decides at most what it was given, and a trigger lies inside
 *     what it decided;
 *   - what the relay keeps pending stays below one message header plus
 *     PGW_HEAD_MAX (the relay's memory is bounded whatever the route sends);
 *   - the description of a trigger is a NUL-terminated string;
 *   - a server scan counts at most one ReadyForQuery per 6 bytes.
 * The whole input is also classified as query text, in and out of a
 * transaction block.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/inject/tcp_proxy_impl.h"

#define PEND_MAX (5 + PGW_HEAD_MAX)

static unsigned char pend[PEND_MAX + 128];

static void client(struct pgw *w, size_t *pend_len, const uint8_t *b,
		   size_t n)
{
	size_t off = 0;

	memcpy(pend + *pend_len, b, n);
	*pend_len += n;
	for (;;) {
		struct pgw_scan s;

		tcp_proxy__pg_scan(w, pend + off, *pend_len - off, &s);
		if (s.decided > *pend_len - off)
			__builtin_trap();
		if (memchr(s.what, '\0', sizeof(s.what)) == NULL)
			__builtin_trap();
		if (!s.trigger) {
			off += s.decided;
			break;
		}
		if (s.trigger_at >= s.decided)
			__builtin_trap();
		off += s.decided;
	}
	memmove(pend, pend + off, *pend_len - off);
	*pend_len -= off;
	if (*pend_len >= PEND_MAX)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pgw w;
	size_t pos = 0, pend_len = 0;
	char what[96];

	tcp_proxy__pg_init(&w);
	while (pos < size) {
		unsigned h = data[pos++];
		size_t n = (h >> 1) + 1;

		if (n > size - pos)
			n = size - pos;
		if (h & 1) {
			int ready = tcp_proxy__pg_server(&w, data + pos, n);

			if (ready < 0 || (size_t)ready > n / 6 + 1)
				__builtin_trap();
		} else {
			client(&w, &pend_len, data + pos, n);
		}
		pos += n;
	}
	for (int block = 0; block < 2; block++) {
		memset(what, 'x', sizeof(what));
		if (tcp_proxy__pg_classify((const char *)data, size, block, what,
					   sizeof(what)) != PGW_NONE &&
		    memchr(what, '\0', sizeof(what)) == NULL)
			__builtin_trap();
	}
	return 0;
}
