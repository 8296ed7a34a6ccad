/*
 * test_fence_etcd.c -- the etcd fence: the fence conformance suite (its
 * big batches capped at one txn, max_rows), then what only an etcd target
 * can show: its URL and key layout, the limits of one txn (its own and the
 * server's), REPLACE's range deletes, a stale cache that must not decide,
 * lost requests and replies (tcp_fault_proxy.c) that must give UNKNOWN
 * until a probe decides, member loss on a real three-member cluster, and
 * an observer that counts rows written twice by hand.
 *
 * etcd: FENCECERT_ETCD_URL (etcd://HOST:PORT[,...]/PREFIX) names a running
 * server, which must allow txns of ETCD_LAYOUT_OPS_MAX operations
 * (--max-txn-ops); without it, ci/etcd-up starts a one-member server so
 * configured in a temp dir.  The member-loss test starts its own
 * three-member cluster with etcd's default limits.  Every test case works
 * under a fresh prefix; every key this run wrote is deleted at the end.
 */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fences/etcd_layout.h"
#include "fences/fence.h"
#include "fences/target.h"
#include "common/etcd_client.h"
#include "tests/etcd_server.h"
#include "tests/fence_conformance.h"
#include "tests/tcp_fault_proxy.h"

#define SERVER_TXN_OPS "2048" /* = ETCD_LAYOUT_OPS_MAX, for our server */

static int counter;

/* ---- servers ------------------------------------------------------------ */

/* ---- raw access, past the fence ------------------------------------------ */

static etcd_client *raw_client(const char *hosts)
{
	char err[256];
	etcd_client *c;

	if (etcd_client_new(hosts, &c, err, sizeof(err)))
		fail_msg("etcd client for '%s': %s", hosts, err);
	return c;
}

static void raw_put(const char *hosts, const char *key, const char *value)
{
	etcd_client *c = raw_client(hosts);
	struct etcd_txn_result res;
	struct etcd_txn t;

	assert_int_equal(etcd_txn_init(&t), 0);
	assert_int_equal(etcd_txn_put(&t, ETCD_SUCCESS, key, value,
				      strlen(value)), 0);
	assert_int_equal(etcd_client_txn(c, &t, &res), 0);
	etcd_txn_result_release(&res);
	etcd_txn_release(&t);
	etcd_client_free(c);
}

/* Keys under prefix + "/". */
static size_t raw_count(const char *hosts, const char *prefix)
{
	etcd_client *c = raw_client(hosts);
	char start[512], end[512];
	struct etcd_range r;
	size_t n;

	snprintf(start, sizeof(start), "%s/", prefix);
	assert_int_equal(etcd_prefix_end(start, end, sizeof(end)), 0);
	assert_int_equal(etcd_client_range(c, start, end, 0, 0, &r), 0);
	n = r.n;
	etcd_range_release(&r);
	etcd_client_free(c);
	return n;
}

/* ---- fences --------------------------------------------------------------- */

/* A fresh prefix on hosts: its name into prefix, its URL into url. */
static void fresh_target(const char *hosts, char *prefix, size_t plen,
			 char *url, size_t ulen)
{
	if (snprintf(prefix, plen, "%s/f%d", etcd_server_base(), counter++) >= (int)plen ||
	    snprintf(url, ulen, "etcd://%s/%s", hosts, prefix) >= (int)ulen)
		fail_msg("target url for '%s' too long", hosts);
}

static fence *open_url(const char *url)
{
	char err[512];
	fence *f = NULL;
	int rc = fence_open(url, &f, err, sizeof(err));

	if (rc)
		fail_msg("cannot open '%s': %s (%s)", url, err, error_name(rc));
	return f;
}

static void must(fence *f, int rc, const char *what)
{
	if (rc)
		fail_msg("%s: %s (%s)", what, error_name(rc), fence_errmsg(f));
}

static void apply_ok(fence *f, long long epoch, const struct fence_batch *b)
{
	enum fence_outcome out = FENCE_OUTCOME_UNKNOWN;

	must(f, fence_apply(f, epoch, b, &out), "apply");
	assert_int_equal(out, FENCE_PROVED_PRESENT);
}

static enum fence_probe_answer probe(fence *f, const char *op,
				     struct fence_probe *p)
{
	must(f, fence_probe(f, op, p), "probe");
	return p->answer;
}

/* ---- conformance hooks ------------------------------------------------------ */

static void conf_url(const char *dir, char *url, size_t len)
{
	/* The temp dir's unique path makes the prefix fresh; nothing is
	 * created in the dir. */
	if (snprintf(url, len, "etcd://%s/%s%s", etcd_server_members(), etcd_server_base(), dir) >=
	    (int)len)
		fail_msg("target url for '%s' too long", dir);
}

static void conf_unreachable(const char *dir, char *url, size_t len)
{
	(void)dir;
	/* Port 1 on loopback: connection refused, every time. */
	snprintf(url, len, "etcd://127.0.0.1:1/%s/unreachable", etcd_server_base());
}

static const struct fence_conformance backend = {
	.name = "etcd",
	.fresh_url = conf_url,
	.unreachable_url = conf_unreachable,
	.supports_replace = 1,
	/* rows + the fence and epoch puts = one txn's ETCD_LAYOUT_OPS_MAX */
	.max_rows = ETCD_LAYOUT_OPS_MAX - 2,
};

/* ---- tests -------------------------------------------------------------- */

static void test_url_forms(void **state)
{
	static const char *const bad[] = {
		"etcd://", "etcd:127.0.0.1:2379/p", "etcd://127.0.0.1:2379",
		"etcd://127.0.0.1:2379/", "etcd://localhost/p",
		"etcd://u:secret@127.0.0.1:2379/p", "etcd://127.0.0.1:2379,/p",
		"etcd://127.0.0.1:99999/p", "etcd://127.0.0.1:2379/a//b",
		"etcd://127.0.0.1:2379//p", "etcd://127.0.0.1:2379/p/",
		"etcd://127.0.0.1:2379/p q", "etcd://127.0.0.1:2379/p?x=1",
		"etcd://127.0.0.1:2379/p?first=1", "etcd://127.0.0.1:2379/p?",
	};
	char err[512];
	fence *f;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (fence_open(bad[i], &f, err, sizeof(err)) != FC_USAGE)
			fail_msg("'%s' was not refused as FC_USAGE", bad[i]);
		assert_null(f);
		assert_null(strstr(err, "secret"));
	}
	/* Opening talks to nobody. */
	f = open_url("etcd://127.0.0.1:1,127.0.0.1:2/p/q?first=1");
	assert_string_equal(fence_name(f), "etcd");
	assert_int_equal(fence_capability(f), FENCE_CAP_AUTOMATIC);
	fence_close(f);
	fence_close(open_url("etcd://127.0.0.1:1/p?first=pid"));
}

static void test_key_layout(void **state)
{
	char prefix[256], url[512], key[1024], op[80], intent[80], *v;
	const struct fence_row rows[] = {
		{ "a/b c", NULL }, { "plain", "x,\"y\"\n" },
	};
	struct fence_batch b = { 0 };
	fence *f;

	(void)state;
	fresh_target(etcd_server_members(), prefix, sizeof(prefix), url, sizeof(url));
	conformance_id("op layout", op);
	conformance_id("intent layout", intent);
	f = open_url(url);
	must(f, fence_prepare(f, op, 3), "prepare");
	b = (struct fence_batch){ .operation_id = op, .intent_digest = intent,
				  .table = "orders", .rows = rows,
				  .nrows = 2 };
	apply_ok(f, 3, &b);

	/* ':' and '/' and ' ' are encoded: one key segment per part. */
	snprintf(key, sizeof(key), "%s/orders/rows/a%%2Fb%%20c/sha256%%3A%s/"
		 "3-0", prefix, op + 7);
	v = etcd_test_raw_get(etcd_server_members(), key);
	assert_non_null(v);
	assert_string_equal(v, "{\"payload\":null}");
	free(v);
	snprintf(key, sizeof(key), "%s/orders/rows/plain/sha256%%3A%s/3-1",
		 prefix, op + 7);
	v = etcd_test_raw_get(etcd_server_members(), key);
	assert_string_equal(v, "{\"payload\":\"x,\\\"y\\\"\\n\"}");
	free(v);
	snprintf(key, sizeof(key), "%s/" ETCD_LAYOUT_FENCE_DIR "/sha256%%3A%s",
		 prefix, op + 7);
	v = etcd_test_raw_get(etcd_server_members(), key);
	assert_non_null(v);
	assert_non_null(strstr(v, "\"epoch\":3"));
	assert_non_null(strstr(v, "\"rows\":2"));
	assert_non_null(strstr(v, "\"table\":\"orders\""));
	assert_non_null(strstr(v, intent));
	assert_non_null(strstr(v, "\"write_id\":\""));
	assert_non_null(strstr(v, "\"applied_at\":"));
	free(v);
	snprintf(key, sizeof(key), "%s/" ETCD_LAYOUT_EPOCH_DIR "/sha256%%3A%s",
		 prefix, op + 7);
	v = etcd_test_raw_get(etcd_server_members(), key);
	assert_non_null(strstr(v, "\"epoch\":3"));
	free(v);
	/* Two rows, the fence and the epoch key: nothing else. */
	assert_int_equal(raw_count(etcd_server_members(), prefix), 4);
	/* The observer decodes the row key back. */
	assert_int_equal(conformance_rows(url, "orders", op), 2);
	fence_close(f);
}

static struct conformance_batch *batch(const char *label, const char *op,
				       size_t n)
{
	char intent[80];

	conformance_id("intent a", intent);
	return conformance_batch_new(op, intent, label, n);
}

/* The fence's own limits: refused before any I/O, nothing written. */
static void test_batch_limits(void **state)
{
	char prefix[256], url[512], op[80];
	struct conformance_batch *cb;
	struct fence_batch b;
	struct fence_row big = { "k", NULL };
	enum fence_outcome out;
	struct fence_probe p;
	char *payload;
	fence *f;

	(void)state;
	fresh_target(etcd_server_members(), prefix, sizeof(prefix), url, sizeof(url));
	f = open_url(url);
	/* The largest batch applies (the suite's big-batch test, with
	 * max_rows); one row more is refused whole, never split. */
	conformance_id("op over limit", op);
	cb = batch("over", op, ETCD_LAYOUT_OPS_MAX - 1);
	out = FENCE_OUTCOME_UNKNOWN;
	assert_int_equal(fence_apply(f, 1, conformance_batch(cb), &out),
			 FC_USAGE);
	assert_int_equal(out, FENCE_PROVED_ABSENT);
	assert_non_null(strstr(fence_errmsg(f), "too large"));
	assert_int_equal(probe(f, op, &p), FENCE_ABSENT);
	assert_int_equal(conformance_rows(url, NULL, op), 0);
	/* Before any I/O: a target nobody serves says the same. */
	fence_close(f);
	f = open_url("etcd://127.0.0.1:1/nowhere");
	assert_int_equal(fence_apply(f, 1, conformance_batch(cb), &out),
			 FC_USAGE);
	fence_close(f);
	f = open_url(url);

	/* REPLACE needs its range deletes too. */
	b = *conformance_batch(cb);
	b.strategy = FENCE_REPLACE;
	b.nrows = ETCD_LAYOUT_OPS_MAX / 2;
	assert_int_equal(fence_apply(f, 1, &b, &out), FC_USAGE);
	assert_int_equal(out, FENCE_PROVED_ABSENT);

	/* Bytes: one row over ETCD_LAYOUT_BYTES_MAX. */
	payload = malloc(ETCD_LAYOUT_BYTES_MAX + 1);
	assert_non_null(payload);
	memset(payload, 'p', ETCD_LAYOUT_BYTES_MAX);
	payload[ETCD_LAYOUT_BYTES_MAX] = '\0';
	big.payload = payload;
	b.strategy = FENCE_APPEND;
	b.rows = &big;
	b.nrows = 1;
	assert_int_equal(fence_apply(f, 1, &b, &out), FC_USAGE);
	assert_int_equal(out, FENCE_PROVED_ABSENT);
	assert_int_equal(probe(f, op, &p), FENCE_ABSENT);
	free(payload);
	conformance_batch_release(cb);
	fence_close(f);
}

/* REPLACE with a row_key twice in the batch and rows of several ops. */
static void test_replace_gaps(void **state)
{
	char prefix[256], url[512], op1[80], op2[80], op3[80], intent[80];
	const struct fence_row first[] = {
		{ "k", "1" }, { "k", "2" }, { "j", "3" }, { "k/x", "4" },
	};
	const struct fence_row again[] = { { "k", "5" }, { "j", "6" } };
	const struct fence_row repl[] = {
		{ "k", "7" }, { "k", "8" }, { "k", "9" },
	};
	struct fence_batch b;
	fence *f;

	(void)state;
	fresh_target(etcd_server_members(), prefix, sizeof(prefix), url, sizeof(url));
	f = open_url(url);
	conformance_id("op g1", op1);
	conformance_id("op g2", op2);
	conformance_id("op g3", op3);
	conformance_id("intent a", intent);
	b = (struct fence_batch){ .operation_id = op1, .intent_digest = intent,
				  .rows = first, .nrows = 4 };
	apply_ok(f, 1, &b);
	b = (struct fence_batch){ .operation_id = op2, .intent_digest = intent,
				  .rows = again, .nrows = 2 };
	apply_ok(f, 1, &b);
	assert_int_equal(conformance_duplicate_keys(url, NULL), 2);
	/* Every k row of op1 and op2 goes; j and "k/x" (a prefix
	 * neighbour) stay; the three new k rows stay, all three. */
	b = (struct fence_batch){ .operation_id = op3, .intent_digest = intent,
				  .strategy = FENCE_REPLACE, .rows = repl,
				  .nrows = 3 };
	apply_ok(f, 1, &b);
	assert_int_equal(conformance_rows(url, NULL, op1), 2);
	assert_int_equal(conformance_rows(url, NULL, op2), 1);
	assert_int_equal(conformance_rows(url, NULL, op3), 3);
	assert_int_equal(conformance_rows(url, NULL, NULL), 6);
	fence_close(f);
}

/* A handle's cache of the epoch key goes stale; it must still apply when
 * allowed and refuse only on what etcd holds. */
static void test_stale_cache_never_decides(void **state)
{
	char prefix[256], url[512], op[80];
	struct conformance_batch *cb;
	enum fence_outcome out;
	struct fence_probe p;
	fence *a, *b;

	(void)state;
	fresh_target(etcd_server_members(), prefix, sizeof(prefix), url, sizeof(url));
	conformance_id("op cache", op);
	cb = batch("c", op, 3);
	a = open_url(url);
	b = open_url(url);
	must(a, fence_prepare(a, op, 1), "prepare 1 by a");
	must(b, fence_prepare(b, op, 2), "prepare 2 by b");
	/* a's cache says epoch 1 at the old revision; epoch 2 may apply. */
	apply_ok(a, 2, conformance_batch(cb));
	must(b, fence_prepare(b, op, 3), "prepare 3 by b");
	assert_int_equal(fence_apply(a, 2, conformance_batch(cb), &out),
			 FC_ALREADY_APPLIED);
	assert_int_equal(out, FENCE_PROVED_PRESENT);
	assert_int_equal(probe(b, op, &p), FENCE_APPLIED);
	assert_int_equal(p.epoch, 2);
	/* Refusals come from what etcd holds (3), not from a's view. */
	assert_int_equal(fence_prepare(a, op, 2), FC_STALE_EPOCH);
	must(a, fence_prepare(a, op, 3), "prepare 3 again by a");
	assert_int_equal(conformance_rows(url, NULL, op), 3);
	conformance_batch_release(cb);
	fence_close(a);
	fence_close(b);
}

/* The first member of the server under test, for the proxy. */
static void first_member(char *out, size_t len)
{
	snprintf(out, len, "%.*s", (int)strcspn(etcd_server_members(), ","), etcd_server_members());
}

/*
 * A fence whose only member is the proxy, with op prepared at epoch 1
 * through it while it forwards (so the apply is a single txn request);
 * then the proxy switches to mode.
 */
static fence *via(struct tcp_fault_proxy *px, const char *prefix,
		  const char *op, enum proxy_mode mode)
{
	char url[512];
	fence *f;

	tcp_fault_proxy_set_mode(px, PROXY_FORWARD);
	snprintf(url, sizeof(url), "etcd://127.0.0.1:%d/%s", px->port, prefix);
	f = open_url(url);
	must(f, fence_prepare(f, op, 1), "prepare through the proxy");
	tcp_fault_proxy_set_mode(px, mode);
	return f;
}

static void test_lost_request_or_reply(void **state)
{
	static const struct {
		int mode;
		int rc;         /* what apply says */
		int landed;     /* what the probe then finds */
	} cases[] = {
		{ PROXY_DROP_REPLY, FC_ERR_COMMIT_UNKNOWN, 1 },
		{ PROXY_DROP_REQUEST, FC_ERR_COMMIT_UNKNOWN, 0 },
		/* libcurl re-sends once on a fresh connection; the copy
		 * fails its compare and the failure branch shows our own
		 * write id: success, applied once. */
		{ PROXY_DROP_REPLY_ONCE, 0, 1 },
	};
	char up[256], prefix[256], url[512], op[80];
	struct tcp_fault_proxy px;
	struct conformance_batch *cb;
	enum fence_outcome out;
	struct fence_probe p;
	fence *f, *direct;
	int cut;

	(void)state;
	first_member(up, sizeof(up));
	assert_int_equal(tcp_fault_proxy_start(&px, up), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("proxy mode %d\n", cases[i].mode);
		fresh_target(up, prefix, sizeof(prefix), url, sizeof(url));
		conformance_id("op lost", op);
		cb = batch("lost", op, 50);
		direct = open_url(url);
		f = via(&px, prefix, op, cases[i].mode);
		cut = tcp_fault_proxy_cut(&px);
		out = FENCE_PROVED_ABSENT;
		assert_int_equal(fence_apply(f, 1, conformance_batch(cb), &out),
				 cases[i].rc);
		assert_true(tcp_fault_proxy_cut(&px) > cut);
		assert_int_equal(out, cases[i].rc ? FENCE_OUTCOME_UNKNOWN
						  : FENCE_PROVED_PRESENT);
		if (cases[i].rc)
			assert_non_null(strstr(fence_errmsg(f), "unknown"));
		/* The retry: a newer epoch, then the probe decides. */
		must(direct, fence_prepare(direct, op, 2), "prepare 2");
		assert_int_equal(probe(direct, op, &p),
				 cases[i].landed ? FENCE_APPLIED
						 : FENCE_ABSENT);
		assert_int_equal(fence_apply(direct, 2, conformance_batch(cb),
					     &out),
				 cases[i].landed ? FC_ALREADY_APPLIED : 0);
		assert_int_equal(out, FENCE_PROVED_PRESENT);
		assert_int_equal(conformance_rows(url, NULL, op), 50);
		assert_int_equal(conformance_duplicate_keys(url, NULL), 0);
		fence_close(f);
		fence_close(direct);
		conformance_batch_release(cb);
	}
	tcp_fault_proxy_stop(&px);
}

struct seen {
	const char *op, *op2;
	long long got[3]; /* op, op2, anything else */
};

static int see_fence(void *ctx, const struct target_fence_record *r)
{
	struct seen *x = ctx;

	if (strcmp(r->operation_id, x->op) == 0) {
		assert_int_equal(r->applied_epoch, 1);
		assert_int_equal(r->prepared_epoch, 1);
		assert_int_equal(r->rows, 5);
		assert_non_null(r->intent_digest);
		x->got[0]++;
	} else if (strcmp(r->operation_id, x->op2) == 0) {
		assert_int_equal(r->applied_epoch, 0);
		assert_int_equal(r->prepared_epoch, 4);
		assert_null(r->intent_digest);
		x->got[1]++;
	} else {
		x->got[2]++;
	}
	return 0;
}

/* Rows written by hand, past the fence: the observer counts them. */
static void test_observer_counts_hand_written_rows(void **state)
{
	char prefix[256], url[512], key[1024], op[80], op2[80], err[512];
	struct conformance_batch *cb;
	struct seen s = { op, op2, { 0 } };
	fence *f;

	(void)state;
	fresh_target(etcd_server_members(), prefix, sizeof(prefix), url, sizeof(url));
	conformance_id("op hand", op);
	conformance_id("op prepared only", op2);
	cb = batch("k", op, 5);
	f = open_url(url);
	must(f, fence_prepare(f, op, 1), "prepare");
	apply_ok(f, 1, conformance_batch(cb));
	must(f, fence_prepare(f, op2, 4), "prepare op2");
	assert_int_equal(conformance_duplicate_keys(url, NULL), 0);

	/* The row k-1 again, as a second apply at epoch 7 would write it. */
	snprintf(key, sizeof(key), "%s/events/rows/k-1/sha256%%3A%s/7-1",
		 prefix, op + 7);
	raw_put(etcd_server_members(), key, "{\"payload\":\"again\"}");
	/* And a row that no fence wrote, in no shape of ours. */
	snprintf(key, sizeof(key), "%s/events/rows/k-3", prefix);
	raw_put(etcd_server_members(), key, "by hand");
	assert_int_equal(conformance_duplicate_keys(url, NULL), 2);
	assert_int_equal(conformance_rows(url, NULL, op), 6);
	assert_int_equal(conformance_rows(url, NULL, NULL), 7);

	/* Fences as stored, with the prepared epoch. */
	assert_int_equal(target_list_fences(url, see_fence, &s, err,
					    sizeof(err)), 0);
	assert_int_equal(s.got[0], 1);
	assert_int_equal(s.got[1], 1);
	assert_int_equal(s.got[2], 0);

	/* A fence value we did not write is corrupt, never guessed at. */
	snprintf(key, sizeof(key), "%s/" ETCD_LAYOUT_FENCE_DIR "/garbage",
		 prefix);
	raw_put(etcd_server_members(), key, "{\"epoch\":\"x\"}");
	memset(&s.got, 0, sizeof(s.got));
	assert_int_equal(target_list_fences(url, see_fence, &s, err,
					    sizeof(err)), FC_CORRUPT);
	assert_non_null(strstr(err, "garbage"));
	conformance_batch_release(cb);
	fence_close(f);
}

/*
 * Three etcd_server_members() with etcd's default limits.  The server's own txn limit
 * (--max-txn-ops 128) refuses a larger batch as FC_USAGE, nothing applied.
 * One member down: the fence works.  Two down: UNAVAILABLE or UNKNOWN,
 * never ABSENT.  One back: the probe decides.
 */
static void test_member_loss(void **state)
{
	char dir[256], hosts[512], prefix[256], url[512], op[80], cmd[512];
	struct conformance_batch *small, *big, *late;
	enum fence_outcome out;
	struct fence_probe p;
	long long t0;
	int rc;
	fence *f;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/three", etcd_server_dir());
	setenv("ETCD_MAX_TXN_OPS", "128", 1); /* etcd's default, explicitly */
	if (etcd_test_up(dir, 3, hosts, sizeof(hosts)))
		fail_msg("ci/etcd-up '%s' --etcd_server_members() 3 failed", dir);
	fresh_target(hosts, prefix, sizeof(prefix), url, sizeof(url));
	f = open_url(url);

	conformance_id("op default limit", op);
	big = batch("big", op, 200);
	assert_int_equal(fence_apply(f, 1, conformance_batch(big), &out),
			 FC_USAGE);
	assert_int_equal(out, FENCE_PROVED_ABSENT);
	assert_non_null(strstr(fence_errmsg(f), "too many operations"));
	assert_int_equal(probe(f, op, &p), FENCE_ABSENT);
	assert_int_equal(conformance_rows(url, NULL, op), 0);
	/* The suites' 100 rows fit a default server. */
	conformance_id("op small", op);
	small = batch("small", op, 100);
	apply_ok(f, 1, conformance_batch(small));

	assert_int_equal(etcd_test_member(dir, "stop", "m1"), 0);
	conformance_id("op one down", op);
	conformance_batch_release(big);
	big = batch("down1", op, 100);
	must(f, fence_prepare(f, op, 1), "prepare, m1 down");
	apply_ok(f, 1, conformance_batch(big));

	/* Let m3 notice it lost its quorum (CheckQuorum) first: a leader
	 * that does not know yet would take the txn into its log. */
	assert_int_equal(etcd_test_member(dir, "stop", "m2"), 0);
	usleep(1500 * 1000);
	conformance_id("op two down", op);
	late = batch("down2", op, 100);
	t0 = etcd_test_mono_ms();
	assert_int_equal(fence_prepare(f, op, 1), FC_FENCE_UNAVAILABLE);
	out = FENCE_PROVED_PRESENT;
	rc = fence_apply(f, 1, conformance_batch(late), &out);
	print_message("apply without quorum: %s (%s)\n", error_name(rc),
		      fence_errmsg(f));
	assert_true(rc == FC_FENCE_UNAVAILABLE || rc == FC_ERR_COMMIT_UNKNOWN);
	assert_int_equal(out, rc == FC_FENCE_UNAVAILABLE ?
			 FENCE_PROVED_ABSENT : FENCE_OUTCOME_UNKNOWN);
	/* No proof either way: UNKNOWN, never ABSENT. */
	assert_int_not_equal(fence_probe(f, op, &p), 0);
	assert_int_equal(p.answer, FENCE_UNKNOWN);
	assert_true(etcd_test_mono_ms() - t0 < 3 * (2 * ETCD_CALL_BUDGET_MS + 1000));

	assert_int_equal(etcd_test_member(dir, "start", "m1"), 0);
	must(f, fence_prepare(f, op, 2), "prepare, m1 back");
	probe(f, op, &p);
	if (rc == FC_FENCE_UNAVAILABLE)
		assert_int_equal(p.answer, FENCE_ABSENT);
	assert_int_equal(fence_apply(f, 2, conformance_batch(late), &out),
			 p.answer == FENCE_APPLIED ? FC_ALREADY_APPLIED : 0);
	assert_int_equal(conformance_rows(url, NULL, op), 100);
	assert_int_equal(conformance_duplicate_keys(url, NULL), 0);
	conformance_batch_release(small);
	conformance_batch_release(big);
	conformance_batch_release(late);
	fence_close(f);
	snprintf(cmd, sizeof(cmd), "ci/etcd-down '%s'", dir);
	assert_int_equal(etcd_test_run(cmd, NULL, 0), 0);
}

/* ---- main --------------------------------------------------------------- */

/* 1 when the server at hosts takes a txn of ETCD_LAYOUT_OPS_MAX operations
 * (its --max-txn-ops); read-only ranges count as well as puts. */
static int server_takes_big_txns(const char *hosts)
{
	struct etcd_txn_result res;
	struct etcd_txn t;
	char err[256];
	etcd_client *c;
	int rc = -1;

	if (etcd_client_new(hosts, &c, err, sizeof(err)))
		return 0;
	if (!etcd_txn_init(&t)) {
		rc = 0;
		for (int i = 0; !rc && i < ETCD_LAYOUT_OPS_MAX; i++)
			rc = etcd_txn_range(&t, ETCD_SUCCESS, "fencecert-probe",
					    NULL);
		if (!rc && !(rc = etcd_client_txn(c, &t, &res)))
			etcd_txn_result_release(&res);
		etcd_txn_release(&t);
	}
	etcd_client_free(c);
	return rc == 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_forms),
		cmocka_unit_test(test_key_layout),
		cmocka_unit_test(test_batch_limits),
		cmocka_unit_test(test_replace_gaps),
		cmocka_unit_test(test_stale_cache_never_decides),
		cmocka_unit_test(test_lost_request_or_reply),
		cmocka_unit_test(test_observer_counts_hand_written_rows),
		cmocka_unit_test(test_member_loss),
	};
	int failed;

	/* etcd reads ETCD_<FLAG> from its environment (for a server of our
	 * own; an external one must already take txns this big). */
	setenv("ETCD_MAX_TXN_OPS", SERVER_TXN_OPS, 1);
	if (etcd_server_setup("fence-", server_takes_big_txns)) {
		etcd_server_release();
		return 1;
	}
	print_message("etcd etcd_server_members() %s, prefix %s\n", etcd_server_members(), etcd_server_base());
	failed = fence_conformance_run(&backend);
	failed += cmocka_run_group_tests_name("fence etcd", tests, NULL, NULL);
	etcd_server_release();
	return failed ? 1 : 0;
}
