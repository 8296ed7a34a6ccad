/*
 * etcd_server.c -- see etcd_server.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/etcd_server.h"
#include "common/fsutil.h"
#include "common/etcd_client.h"

static char members[512];
static char base[160];
static char tmpdir[64];
static int started; /* we ran ci/etcd-up into tmpdir/one */

const char *etcd_server_members(void)
{
	return members;
}

const char *etcd_server_base(void)
{
	return base;
}

const char *etcd_server_dir(void)
{
	return tmpdir;
}

int etcd_test_run(const char *cmd, char *out, size_t outlen)
{
	char line[1024] = "";
	FILE *p = popen(cmd, "r");

	if (!p)
		return -1;
	if (!fgets(line, sizeof(line), p))
		line[0] = '\0';
	while (fgetc(p) != EOF)
		;
	line[strcspn(line, "\n")] = '\0';
	if (out)
		snprintf(out, outlen, "%s", line);
	return pclose(p);
}

int etcd_test_up(const char *dir, int n, char *out, size_t outlen)
{
	char cmd[512], urls[512];
	size_t used = 0;

	snprintf(cmd, sizeof(cmd), "ci/etcd-up '%s' --members %d", dir, n);
	if (etcd_test_run(cmd, urls, sizeof(urls)) != 0 || !urls[0])
		return -1;
	/* "http://a:1,http://b:2" -> "a:1,b:2" */
	for (const char *u = urls; *u && used + 1 < outlen;) {
		if (strncmp(u, "http://", 7) == 0)
			u += 7;
		out[used++] = *u++;
	}
	out[used] = '\0';
	return 0;
}

int etcd_test_member(const char *dir, const char *action, const char *name)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "ci/etcd-member '%s' %s %s", dir, action,
		 name);
	return etcd_test_run(cmd, NULL, 0);
}

void etcd_test_delete_prefix(const char *hosts, const char *prefix)
{
	char err[256], start[256], end[256];
	struct etcd_txn_result res;
	etcd_client *c;
	struct etcd_txn t;

	snprintf(start, sizeof(start), "%s/", prefix);
	if (etcd_client_new(hosts, &c, err, sizeof(err)))
		return;
	if (!etcd_prefix_end(start, end, sizeof(end)) && !etcd_txn_init(&t)) {
		if (!etcd_txn_delete(&t, ETCD_SUCCESS, start, end) &&
		    !etcd_client_txn(c, &t, &res))
			etcd_txn_result_release(&res);
		etcd_txn_release(&t);
	}
	etcd_client_free(c);
}

char *etcd_test_raw_get(const char *hosts, const char *key)
{
	struct etcd_range r;
	etcd_client *c;
	char err[256], *v = NULL;

	if (etcd_client_new(hosts, &c, err, sizeof(err)))
		fail_msg("etcd client for '%s': %s", hosts, err);
	assert_int_equal(etcd_client_range(c, key, NULL, 0, 0, &r), 0);
	if (r.n)
		v = strdup(r.kvs[0].value);
	etcd_range_release(&r);
	etcd_client_free(c);
	return v;
}

long long etcd_test_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void etcd_test_rm_tree(const char *dir)
{
	if (dir && dir[0] && fs_remove_tree(dir))
		fprintf(stderr, "cannot remove '%s'\n", dir);
}

/* The members FENCECERT_ETCD_URL names: 0, -1 when it is malformed, 1
 * when it is unset or not usable. */
static int external_server(const char *tag, int (*usable)(const char *))
{
	const char *url = getenv("FENCECERT_ETCD_URL");
	const char *hosts, *slash;

	if (!url || !*url)
		return 1;
	hosts = url + strlen("etcd://");
	if (strncmp(url, "etcd://", 7) != 0 || !(slash = strchr(hosts, '/')) ||
	    !slash[1] || (size_t)(slash - hosts) >= sizeof(members)) {
		fprintf(stderr, "FENCECERT_ETCD_URL '%s' is not "
			"etcd://HOST:PORT[,...]/PREFIX\n", url);
		return -1;
	}
	memcpy(members, hosts, (size_t)(slash - hosts));
	members[slash - hosts] = '\0';
	if (usable && !usable(members)) {
		fprintf(stderr, "FENCECERT_ETCD_URL '%s' cannot serve this "
			"test; starting a server of our own\n", url);
		members[0] = '\0';
		return 1;
	}
	snprintf(base, sizeof(base), "%.*s/%srun-%d",
		 (int)strcspn(slash + 1, "?"), slash + 1, tag, (int)getpid());
	return 0;
}

int etcd_server_setup(const char *tag, int (*usable)(const char *hosts))
{
	char dir[256];
	int rc;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/fc-%setcd-test-XXXXXX", tag);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		tmpdir[0] = '\0';
		return -1;
	}
	if ((rc = external_server(tag, usable)) <= 0)
		return rc;
	snprintf(dir, sizeof(dir), "%s/one", tmpdir);
	if (etcd_test_up(dir, 1, members, sizeof(members))) {
		fprintf(stderr, "ci/etcd-up '%s' failed; is etcd installed "
			"(ci/install-deps)?\n", dir);
		return -1;
	}
	started = 1;
	snprintf(base, sizeof(base), "fencecert-test/%srun-%d", tag,
		 (int)getpid());
	return 0;
}

void etcd_server_release(void)
{
	char cmd[512];

	if (members[0] && base[0])
		etcd_test_delete_prefix(members, base);
	if (started) {
		snprintf(cmd, sizeof(cmd), "ci/etcd-down '%s/one'", tmpdir);
		etcd_test_run(cmd, NULL, 0);
		started = 0;
	}
	if (tmpdir[0]) {
		snprintf(cmd, sizeof(cmd),
			 "ci/etcd-down '%s/three' 2>/dev/null", tmpdir);
		etcd_test_run(cmd, NULL, 0);
	}
	etcd_test_rm_tree(tmpdir);
}
