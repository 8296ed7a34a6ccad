/*
 * test_journal_syscalls_etcd.c -- self-certification of the etcd journal
 * adapter under syscall faults on its connections (SPEC section 8,
 * docs/syscall-faults.md); the driver, the exploration and the checks are
 * tests/journal_syscalls.c's.
 *
 * libcurl sends each gateway request with one sendto and reads the answer
 * with recvfrom on a kept-alive socket (strace of `fencecert journal
 * create`); the scope is the sockets whose peer is a member named by
 * $FENCECERT_ETCD_URL ("tcp:*:PORT" for each member's port), so curl's
 * internal wake-up socketpair is not counted.
 *
 *   sendto, every occurrence:   kill_before, kill_after (the txn reached
 *                               etcd, the client died before the answer),
 *                               errno:ECONNRESET (the connection is gone:
 *                               a write txn's outcome is unknown);
 *   recvfrom, every occurrence: kill_before (the answer is there and is
 *                               never read), errno:ECONNRESET.
 *
 * Each run is a fresh key prefix (PREFIX/jsys-PID-N), deleted at the end.
 * Skips when $FENCECERT_ETCD_URL is unset (.ci/run sets it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/etcd_server.h"
#include "tests/journal_syscalls.h"

static char members[512]; /* HOST:PORT[,HOST:PORT...] */
static char prefix[256];

/* etcd://MEMBERS/PREFIX into members and prefix; 0 or -1. */
static int parse_url(const char *url)
{
	const char *hosts = url + 7, *slash;

	if (strncmp(url, "etcd://", 7) != 0 || !(slash = strchr(hosts, '/')) ||
	    !slash[1] || (size_t)(slash - hosts) >= sizeof(members))
		return -1;
	memcpy(members, hosts, (size_t)(slash - hosts));
	members[slash - hosts] = '\0';
	snprintf(prefix, sizeof(prefix), "%s/jsys-%d", slash + 1, (int)getpid());
	return 0;
}

static void fresh(struct jsys_run *r)
{
	snprintf(r->url, sizeof(r->url), "etcd://%s/%s/%lu", members, prefix,
		 r->n);
}

/* "tcp:*:PORT" for every member. */
static void scope(const struct jsys_run *r, struct inject_seccomp_plan *p)
{
	char glob[64];

	(void)r;
	for (const char *m = members; *m;) {
		size_t len = strcspn(m, ",");
		const char *colon = memchr(m, ':', len);

		assert_non_null(colon);
		snprintf(glob, sizeof(glob), "tcp:*:%.*s",
			 (int)(len - (size_t)(colon + 1 - m)), colon + 1);
		assert_int_equal(inject_seccomp_plan_watch(p, glob), 0);
		m += len + (m[len] == ',');
	}
}

static void test_every_send_and_receive(void **state)
{
	static const struct jsys_backend etcd = {
		.name = "etcd", .fresh = fresh, .scope = scope,
	};
	const char *env = jsys_server_or_skip("FENCECERT_ETCD_URL");

	(void)state;
	if (parse_url(env))
		fail_msg("FENCECERT_ETCD_URL '%s' is not "
			 "etcd://HOST:PORT[,...]/PREFIX", env);
	jsys_explore_sockets(&etcd);
}

/* Delete the runs' journals. */
static void release(void)
{
	if (members[0])
		etcd_test_delete_prefix(members, prefix);
}

int main(int argc, char **argv)
{
	return jsys_main(argc, argv, "test_every_send_and_receive",
			 test_every_send_and_receive, release);
}
