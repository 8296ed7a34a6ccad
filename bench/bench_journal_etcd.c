/*
 * bench_journal_etcd.c -- journal CAS rate on etcd against the rate of the
 * bare etcd operation underneath it, measured in the same run.
 *
 *   journal:  journal_cas() around the cycle PREPARING -> PREPARED ->
 *             FAILED_PRE_COMMIT -> PREPARING on one operation (each CAS is
 *             one txn putting the entry and its history key);
 *   raw:      the same HTTP client (etcd_client.c) running a single
 *             compare-and-put txn on one key -- mod_revision == last, put a
 *             value as long as the journal's entry -- remembering the new
 *             revision.
 *
 * Rounds alternate (journal first in even rounds, raw first in odd ones)
 * so drift on a shared machine hits both sides; each side's rate is the
 * median over rounds.  Target: journal >= 80% of raw.
 *
 * etcd: FENCECERT_ETCD_URL, else a one-member server started with
 * ci/etcd-up in a temp dir (and stopped after).  Knobs: BENCH_ROUNDS
 * (default 15), BENCH_OPS (CAS per side per round, default 60).
 *
 * Exit status: 0 when the run completed (the verdict is in the output), 1
 * when it could not run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/etcd_client.h"
#include "bench/common.h"
#include "journal/journal.h"

#define TARGET 0.80

static char members[512];
static struct bench_service svc = { .kind = "etcd", .sub = "one" };

/* Members from FENCECERT_ETCD_URL, or from a server started for us. */
static int find_etcd(char *prefix, size_t len)
{
	const char *url = getenv("FENCECERT_ETCD_URL");
	char line[512];
	size_t used = 0;

	snprintf(prefix, len, "fencecert-bench/run-%d", (int)getpid());
	if (url && strncmp(url, "etcd://", 7) == 0) {
		const char *hosts = url + 7, *slash = strchr(hosts, '/');
		size_t n = slash ? (size_t)(slash - hosts) : strlen(hosts);

		if (n == 0 || n >= sizeof(members))
			return -1;
		memcpy(members, hosts, n);
		members[n] = '\0';
		return 0;
	}
	if (bench_service_up(&svc, line, sizeof(line)))
		return -1;
	/* "http://a:1,http://b:2" -> "a:1,b:2" */
	for (const char *s = line; *s; s++) {
		if (strncmp(s, "http://", 7) == 0)
			s += 7;
		if (used + 1 < sizeof(members))
			members[used++] = *s;
	}
	members[used] = '\0';
	return 0;
}

/* ---- the two sides ------------------------------------------------------ */

static int journal_side(journal *j, struct journal_entry *e, int ops,
			double *rate)
{
	double t0 = bench_now_s();

	for (int i = 0; i < ops; i++) {
		const struct journal_cas req = {
			.operation_id = e->operation_id,
			.expected_version = e->version,
			.expected_states = STATE_BIT(e->state),
			.next = bench_next_state(e->state),
			.evidence = "{\"bench\":true}",
		};
		int rc = journal_cas(j, &req, e);

		if (rc) {
			fprintf(stderr, "bench_journal_etcd: cas: %s (%s)\n",
				error_name(rc), journal_errmsg(j));
			return rc;
		}
	}
	*rate = ops / (bench_now_s() - t0);
	return 0;
}

struct raw {
	etcd_client *c;
	char key[256];
	char *value;
	size_t len;
	long long rev;
};

static int raw_side(struct raw *r, int ops, double *rate)
{
	double t0 = bench_now_s();

	for (int i = 0; i < ops; i++) {
		struct etcd_txn_result res;
		struct etcd_txn t;
		int rc;

		if ((rc = etcd_txn_init(&t)) ||
		    (rc = etcd_txn_compare(&t, r->key, ETCD_MOD, r->rev)) ||
		    (rc = etcd_txn_put(&t, ETCD_SUCCESS, r->key, r->value,
				       r->len)) ||
		    (rc = etcd_client_txn(r->c, &t, &res))) {
			etcd_txn_release(&t);
			fprintf(stderr, "bench_journal_etcd: raw txn: %s "
				"(%s)\n", error_name(rc),
				etcd_client_errmsg(r->c));
			return rc;
		}
		etcd_txn_release(&t);
		if (!res.succeeded) {
			etcd_txn_result_release(&res);
			fprintf(stderr, "bench_journal_etcd: raw txn lost its "
				"compare\n");
			return FC_CAS_CONFLICT;
		}
		r->rev = res.revision;
		etcd_txn_result_release(&res);
	}
	*rate = ops / (bench_now_s() - t0);
	return 0;
}

/* ---- main --------------------------------------------------------------- */

static int setup(const char *prefix, journal **j, struct journal_entry *e,
		 struct raw *r)
{
	char url[1024], err[512];
	int created, rc;

	snprintf(url, sizeof(url), "etcd://%s/%s", members, prefix);
	if ((rc = journal_open(url, j, err, sizeof(err)))) {
		fprintf(stderr, "bench_journal_etcd: %s\n", err);
		return rc;
	}
	if ((rc = journal_create_or_get(*j, "sha256:bench", "sha256:intent",
					"{\"dag\":\"bench\"}", e, &created))) {
		fprintf(stderr, "bench_journal_etcd: create: %s\n",
			journal_errmsg(*j));
		return rc;
	}
	if ((rc = etcd_client_new(members, &r->c, err, sizeof(err)))) {
		fprintf(stderr, "bench_journal_etcd: %s\n", err);
		return rc;
	}
	snprintf(r->key, sizeof(r->key), "%s/raw", prefix);
	/* As long as a stored entry: the sides differ in protocol, not in
	 * bytes per put. */
	r->len = 480;
	r->value = malloc(r->len + 1);
	if (!r->value)
		return FC_NOMEM;
	memset(r->value, 'v', r->len);
	r->value[r->len] = '\0';
	r->rev = 0; /* "absent" is mod_revision 0 */
	return 0;
}

static void cleanup(const char *prefix, journal *j, struct raw *r)
{
	char start[256], end[256];
	struct etcd_txn_result res;
	struct etcd_txn t;

	journal_close(j);
	snprintf(start, sizeof(start), "%s/", prefix);
	if (r->c && !etcd_prefix_end(start, end, sizeof(end)) &&
	    !etcd_txn_init(&t)) {
		if (!etcd_txn_delete(&t, ETCD_SUCCESS, start, end) &&
		    !etcd_client_txn(r->c, &t, &res))
			etcd_txn_result_release(&res);
		etcd_txn_release(&t);
	}
	etcd_client_free(r->c);
	free(r->value);
}

int main(void)
{
	int rounds = bench_env_int("BENCH_ROUNDS", 15);
	int ops = bench_env_int("BENCH_OPS", 60);
	double *jr = calloc((size_t)rounds, sizeof(double));
	double *rr = calloc((size_t)rounds, sizeof(double));
	struct raw r = { 0 };
	struct journal_entry e;
	char prefix[128];
	journal *j = NULL;
	double jm, rm;
	int rc = 0;

	if (!jr || !rr || find_etcd(prefix, sizeof(prefix))) {
		fprintf(stderr, "bench_journal_etcd: no etcd (set "
			"FENCECERT_ETCD_URL or install etcd)\n");
		return 1;
	}
	rc = setup(prefix, &j, &e, &r);
	/* Warm-up: connections, the journal's schema check and cache. */
	if (!rc)
		rc = journal_side(j, &e, 10, &jm) || raw_side(&r, 10, &rm);
	for (int i = 0; i < rounds && !rc; i++) {
		if (i % 2 == 0)
			rc = journal_side(j, &e, ops, &jr[i]) ||
			     raw_side(&r, ops, &rr[i]);
		else
			rc = raw_side(&r, ops, &rr[i]) ||
			     journal_side(j, &e, ops, &jr[i]);
	}
	cleanup(prefix, j, &r);
	bench_service_down(&svc);
	if (rc) {
		free(jr);
		free(rr);
		return 1;
	}
	jm = bench_median(jr, rounds);
	rm = bench_median(rr, rounds);
	printf("%-34s %10s %10s %8s  %s\n", "benchmark", "ops/s", "baseline",
	       "ratio", "target");
	printf("%-34s %10.0f %10.0f %7.1f%%  >= %.0f%% %s\n",
	       "journal cas on etcd vs raw txn", jm, rm, 100 * jm / rm,
	       100 * TARGET, jm / rm >= TARGET ? "met" : "MISSED");
	printf("  (%d rounds x %d cas per side, medians; members %s)\n",
	       rounds, ops, members);
	free(jr);
	free(rr);
	return 0;
}
