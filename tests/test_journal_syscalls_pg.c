/*
 * test_journal_syscalls_pg.c -- self-certification of the PostgreSQL
 * journal adapter under syscall faults on its connection (SPEC section 8,
 * docs/syscall-faults.md); the driver, the exploration and the checks are
 * tests/journal_syscalls.c's.
 *
 * libpq talks to the server with sendto (requests) and recvfrom (replies)
 * on one non-blocking socket (strace of `fencecert journal create`); the
 * scope is that socket, named by its peer: "tcp:*:PORT" of
 * $FENCECERT_PG_URL (and "unix:*.s.PGSQL.PORT" for a unix-socket URL).
 *
 *   sendto, every occurrence:   kill_before (the request never leaves),
 *                               kill_after (the server has it, the client
 *                               dies before the reply: outcome unknown),
 *                               errno:ECONNRESET (the client sees the
 *                               connection fail and must reconnect);
 *   recvfrom, every occurrence: kill_before (the reply is there and is
 *                               never read: the ack-unknown case),
 *                               errno:ECONNRESET (a reply lost in transit).
 *
 * Each run is a fresh schema (schema=fc_jsys_PID_N), dropped at the end.
 * Skips when $FENCECERT_PG_URL is unset (.ci/run sets it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/journal_syscalls.h"
#include "tests/pg_server.h"

static char port[16] = "5432";
static int used_server;

/* The server's port from postgresql://[USER@]HOST[:PORT]/...; libpq's
 * default when there is none. */
static void url_port(const char *url)
{
	const char *h = strstr(url, "://"), *end, *at, *colon;
	size_t n;

	if (!h)
		return;
	h += 3;
	end = h + strcspn(h, "/?");
	at = memchr(h, '@', (size_t)(end - h));
	if (at)
		h = at + 1;
	colon = memchr(h, ':', (size_t)(end - h));
	if (!colon || (n = (size_t)(end - colon - 1)) == 0 || n >= sizeof(port))
		return;
	memcpy(port, colon + 1, n);
	port[n] = '\0';
}

static void fresh(struct jsys_run *r)
{
	pg_server_target("jsys", NULL, r->url, sizeof(r->url), NULL);
}

static void scope(const struct jsys_run *r, struct inject_seccomp_plan *p)
{
	char glob[64];

	(void)r;
	snprintf(glob, sizeof(glob), "tcp:*:%s", port);
	assert_int_equal(inject_seccomp_plan_watch(p, glob), 0);
	snprintf(glob, sizeof(glob), "unix:*.s.PGSQL.%s", port);
	assert_int_equal(inject_seccomp_plan_watch(p, glob), 0);
}

static void test_every_send_and_receive(void **state)
{
	static const struct jsys_backend pg = {
		.name = "postgresql", .fresh = fresh, .scope = scope,
	};
	const char *env = jsys_server_or_skip("FENCECERT_PG_URL");

	(void)state;
	if (!pg_server_url())
		fail_msg("no PostgreSQL server at FENCECERT_PG_URL");
	used_server = 1;
	url_port(env);
	jsys_explore_sockets(&pg);
}

/* Drop the runs' schemas. */
static void release(void)
{
	if (used_server && pg_server_release())
		fprintf(stderr, "cannot drop the test schemas\n");
}

int main(int argc, char **argv)
{
	return jsys_main(argc, argv, "test_every_send_and_receive",
			 test_every_send_and_receive, release);
}
