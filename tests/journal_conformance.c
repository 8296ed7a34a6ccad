/*
 * journal_conformance.c -- the journal port's contract, as tests.
 *
 * Each test gets a fresh, empty journal from the adapter's URL factory and
 * talks to it only through journal.h.  Transitions are never listed here:
 * the legal and illegal edges are enumerated from state_transition_legal(),
 * and entries are driven into a state along a path found by breadth-first
 * search over the same table, so the suite follows the table if it changes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/clock.h"
#include "journal/journal.h"
#include "tests/journal_conformance.h"

static journal_url_factory factory;

struct fixture {
	char *url;
	journal *j;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[512];

	if (!f || !(f->url = factory())) {
		free(f);
		return -1;
	}
	if (journal_open(f->url, &f->j, err, sizeof(err))) {
		print_error("cannot open '%s': %s\n", f->url, err);
		free(f->url);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	journal_close(f->j);
	free(f->url);
	free(f);
	return 0;
}

/* ---- helpers ------------------------------------------------------------ */

static void assert_json_eq(const char *got, const char *want)
{
	json_t *a = json_loads(got, 0, NULL), *b = json_loads(want, 0, NULL);

	if (!a || !b || !json_equal(a, b))
		fail_msg("JSON differs: got '%s', want '%s'", got, want);
	json_decref(a);
	json_decref(b);
}

static void assert_entry_eq(const struct journal_entry *a,
			    const struct journal_entry *b)
{
	assert_string_equal(a->operation_id, b->operation_id);
	assert_string_equal(a->intent_digest, b->intent_digest);
	assert_int_equal(a->state, b->state);
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->lease_epoch, b->lease_epoch);
	assert_string_equal(a->lease_owner, b->lease_owner);
	assert_int_equal(a->lease_expires_at, b->lease_expires_at);
	assert_int_equal(a->created_at, b->created_at);
	assert_int_equal(a->updated_at, b->updated_at);
	assert_json_eq(a->meta, b->meta);
	assert_json_eq(a->evidence, b->evidence);
}

static size_t history_len(journal *j, const char *op)
{
	struct journal_transition *t;
	size_t n;

	assert_int_equal(journal_history(j, op, &t, &n), 0);
	free(t);
	return n;
}

/* The entry is exactly `before` and its history has one row per version:
 * what "a failing call changes nothing" means from the outside. */
static void assert_unchanged(journal *j, const struct journal_entry *before)
{
	struct journal_entry now;

	assert_int_equal(journal_get(j, before->operation_id, &now), 0);
	assert_entry_eq(&now, before);
	assert_int_equal(history_len(j, before->operation_id),
			 (size_t)before->version);
}

static void create(journal *j, const char *op, struct journal_entry *out)
{
	int created = 0;

	assert_int_equal(journal_create_or_get(j, op, "intent-1", NULL, out,
					       &created), 0);
	assert_int_equal(created, 1);
	assert_int_equal(out->state, FC_PREPARING);
	assert_int_equal(out->version, 1);
}

static int cas(journal *j, const struct journal_entry *cur, enum fc_state next,
	       long long epoch, const char *evidence, struct journal_entry *out)
{
	const struct journal_cas req = {
		.operation_id = cur->operation_id,
		.expected_version = cur->version,
		.expected_states = STATE_BIT(cur->state),
		.next = next,
		.epoch = epoch,
		.evidence = evidence,
	};

	return journal_cas(j, &req, out);
}

/* Move e one step to next, checking the version rises by exactly one. */
static void step(journal *j, struct journal_entry *e, enum fc_state next)
{
	struct journal_entry out;
	int rc = cas(j, e, next, 0, NULL, &out);

	if (rc)
		fail_msg("%s -> %s on '%s': %s (%s)", state_name(e->state),
			 state_name(next), e->operation_id, error_name(rc),
			 journal_errmsg(j));
	assert_int_equal(out.state, next);
	assert_int_equal(out.version, e->version + 1);
	*e = out;
}

/* Shortest path from `from` to `target` over the table; returns its length
 * (states after `from`) or -1 when target is unreachable. */
static int path_between(enum fc_state from, enum fc_state target,
			enum fc_state path[FC_STATE_COUNT])
{
	enum fc_state prev[FC_STATE_COUNT], queue[FC_STATE_COUNT];
	int seen[FC_STATE_COUNT] = { 0 }, head = 0, tail = 0, n = 0;

	queue[tail++] = from;
	seen[from] = 1;
	while (head < tail) {
		enum fc_state s = queue[head++];

		for (int t = FC_PREPARING; t < FC_STATE_COUNT; t++) {
			if (seen[t] || !state_transition_legal(s, (enum fc_state)t))
				continue;
			seen[t] = 1;
			prev[t] = s;
			queue[tail++] = (enum fc_state)t;
		}
	}
	if (!seen[target])
		return -1;
	for (enum fc_state s = target; s != from; s = prev[s])
		n++;
	for (enum fc_state s = target, i = n; s != from; s = prev[s])
		path[--i] = s;
	return n;
}

/* Create op and drive it into target along the shortest legal path. */
static void drive(journal *j, const char *op, enum fc_state target,
		  struct journal_entry *e)
{
	enum fc_state path[FC_STATE_COUNT];
	int n = path_between(FC_PREPARING, target, path);

	if (n < 0)
		fail_msg("state %s is unreachable from PREPARING",
			 state_name(target));
	create(j, op, e);
	for (int i = 0; i < n; i++)
		step(j, e, path[i]);
	assert_int_equal(e->state, target);
}

static void sleep_ms(int ms)
{
	usleep((useconds_t)ms * 1000);
}

/* ---- tests -------------------------------------------------------------- */

static void test_create_and_get(void **state)
{
	struct fixture *f = *state;
	struct journal_entry e, got;
	struct journal_transition *t;
	int created = 0;
	size_t n;

	assert_int_equal(journal_create_or_get(f->j, "op-a", "sha256:intent",
					       "{\"dag\": \"d\", \"n\": 1}", &e,
					       &created), 0);
	assert_int_equal(created, 1);
	assert_string_equal(e.operation_id, "op-a");
	assert_string_equal(e.intent_digest, "sha256:intent");
	assert_int_equal(e.state, FC_PREPARING);
	assert_int_equal(e.version, 1);
	assert_int_equal(e.lease_epoch, 0);
	assert_string_equal(e.lease_owner, "");
	assert_true(e.created_at > 0 && e.updated_at == e.created_at);
	assert_json_eq(e.meta, "{\"dag\":\"d\",\"n\":1}");
	assert_json_eq(e.evidence, "{}");

	assert_int_equal(journal_get(f->j, "op-a", &got), 0);
	assert_entry_eq(&got, &e);

	/* The create is the first history row: (none) -> PREPARING at 1. */
	assert_int_equal(journal_history(f->j, "op-a", &t, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(t[0].from, FC_STATE_NONE);
	assert_int_equal(t[0].to, FC_PREPARING);
	assert_int_equal(t[0].version, 1);
	assert_string_equal(t[0].operation_id, "op-a");
	free(t);
}

static void test_create_idempotent_and_intent_conflict(void **state)
{
	struct fixture *f = *state;
	struct journal_entry e, again, moved;
	int created = 1;

	create(f->j, "op-b", &e);
	step(f->j, &e, FC_PREPARED);
	moved = e;

	/* Same intent: the existing entry, as it is now, not re-created. */
	assert_int_equal(journal_create_or_get(f->j, "op-b", "intent-1",
					       "{\"other\": true}", &again,
					       &created), 0);
	assert_int_equal(created, 0);
	assert_entry_eq(&again, &moved);

	/* Another intent: a hard conflict that overwrites nothing. */
	memset(&again, 0x5a, sizeof(again));
	assert_int_equal(journal_create_or_get(f->j, "op-b", "intent-2", NULL,
					       &again, &created),
			 FC_INTENT_CONFLICT);
	assert_non_null(strstr(journal_errmsg(f->j), "op-b"));
	assert_unchanged(f->j, &moved);
}

static void test_legal_transitions(void **state)
{
	struct fixture *f = *state;
	int edges = 0;

	for (int from = FC_PREPARING; from < FC_STATE_COUNT; from++) {
		for (int to = FC_STATE_NONE; to < FC_STATE_COUNT; to++) {
			struct journal_entry e, out;
			struct journal_transition *t;
			char op[64], ev[96];
			size_t n;

			if (!state_transition_legal((enum fc_state)from,
						    (enum fc_state)to))
				continue;
			snprintf(op, sizeof(op), "legal-%d-%d", from, to);
			snprintf(ev, sizeof(ev), "{\"edge\": \"%s->%s\"}",
				 state_name((enum fc_state)from),
				 state_name((enum fc_state)to));
			drive(f->j, op, (enum fc_state)from, &e);
			assert_int_equal(cas(f->j, &e, (enum fc_state)to, 0,
					     ev, &out), 0);
			assert_int_equal(out.state, to);
			assert_int_equal(out.version, e.version + 1);
			assert_json_eq(out.evidence, ev);
			assert_true(out.updated_at >= e.updated_at);

			assert_int_equal(journal_history(f->j, op, &t, &n), 0);
			assert_int_equal(n, (size_t)out.version);
			assert_int_equal(t[n - 1].from, from);
			assert_int_equal(t[n - 1].to, to);
			assert_int_equal(t[n - 1].version, out.version);
			assert_json_eq(t[n - 1].evidence, ev);
			free(t);
			edges++;
		}
	}
	assert_true(edges > 0);
}

static void test_illegal_transitions(void **state)
{
	struct fixture *f = *state;
	struct journal_entry e, out;
	int refused = 0, legal = 0;

	/* From (none): only create makes PREPARING; a CAS creates nothing. */
	for (int to = FC_STATE_NONE; to < FC_STATE_COUNT; to++) {
		const struct journal_cas req = {
			.operation_id = "never-created",
			.expected_version = 1,
			.next = (enum fc_state)to,
		};

		assert_int_equal(state_transition_legal(FC_STATE_NONE,
							(enum fc_state)to),
				 to == FC_PREPARING);
		assert_int_equal(journal_cas(f->j, &req, &out), FC_NOT_FOUND);
		assert_int_equal(journal_get(f->j, "never-created", &out),
				 FC_NOT_FOUND);
	}

	/* One entry per state, reused for every refused move: a refusal must
	 * leave it exactly as it was, so the next attempt starts equal. */
	for (int from = FC_PREPARING; from < FC_STATE_COUNT; from++) {
		char op[64];

		snprintf(op, sizeof(op), "illegal-%d", from);
		drive(f->j, op, (enum fc_state)from, &e);
		for (int to = FC_STATE_NONE; to < FC_STATE_COUNT; to++) {
			struct journal_cas req = {
				.operation_id = op,
				.expected_version = e.version,
				.next = (enum fc_state)to,
				.evidence = "{\"x\": 1}",
			};

			if (state_transition_legal((enum fc_state)from,
						   (enum fc_state)to)) {
				legal++; /* test_legal_transitions takes it */
				continue;
			}
			assert_int_equal(journal_cas(f->j, &req, &out),
					 FC_ILLEGAL_TRANSITION);
			req.expected_states = STATE_BIT(from);
			assert_int_equal(journal_cas(f->j, &req, &out),
					 FC_ILLEGAL_TRANSITION);
			assert_unchanged(f->j, &e);
			refused++;
		}
	}
	/* Every pair from a real state was visited: 8 x 9. */
	assert_true(refused > 0);
	assert_int_equal(refused + legal, (FC_STATE_COUNT - 1) * FC_STATE_COUNT);
}

static void test_cas_conflicts(void **state)
{
	struct fixture *f = *state;
	struct journal_entry e, out;
	struct journal_cas req = { .operation_id = "op-c", .next = FC_PREPARED };

	create(f->j, "op-c", &e);
	step(f->j, &e, FC_FAILED_PRE_COMMIT);
	step(f->j, &e, FC_PREPARING); /* version 3, PREPARING */

	/* A version behind and a version ahead are both conflicts. */
	req.expected_version = e.version - 1;
	assert_int_equal(journal_cas(f->j, &req, &out), FC_CAS_CONFLICT);
	req.expected_version = e.version + 1;
	assert_int_equal(journal_cas(f->j, &req, &out), FC_CAS_CONFLICT);
	assert_non_null(strstr(journal_errmsg(f->j), "op-c"));

	/* Right version, legal move, but not from a state the caller named. */
	req.expected_version = e.version;
	req.expected_states = STATE_BIT(FC_FAILED_PRE_COMMIT);
	assert_int_equal(journal_cas(f->j, &req, &out), FC_CAS_CONFLICT);

	/* A stale version wins over an illegal target: the caller must
	 * re-read before anything else is worth saying. */
	req.expected_version = 1;
	req.expected_states = 0;
	req.next = FC_COMPLETE;
	assert_int_equal(journal_cas(f->j, &req, &out), FC_CAS_CONFLICT);
	assert_unchanged(f->j, &e);

	/* And with everything right it applies. */
	req.expected_version = e.version;
	req.expected_states = STATE_BIT(FC_PREPARING) | STATE_BIT(FC_PREPARED);
	req.next = FC_PREPARED;
	assert_int_equal(journal_cas(f->j, &req, &out), 0);
	assert_int_equal(out.version, e.version + 1);
}

static void test_leases(void **state)
{
	struct fixture *f = *state;
	struct journal_entry e, l, out;
	struct journal_transition *t;
	long long before = clock_wall_ms();
	size_t n;

	create(f->j, "op-l", &e);
	assert_int_equal(journal_acquire_lease(f->j, "op-l", "alice", 60000, &l), 0);
	assert_int_equal(l.lease_epoch, 1);
	assert_string_equal(l.lease_owner, "alice");
	assert_true(l.lease_expires_at >= before + 60000);

	/* The holder may re-acquire; the epoch still rises. */
	assert_int_equal(journal_acquire_lease(f->j, "op-l", "alice", 60000, &l), 0);
	assert_int_equal(l.lease_epoch, 2);

	/* Another owner is refused while the lease runs. */
	assert_int_equal(journal_acquire_lease(f->j, "op-l", "bob", 60000, &out),
			 FC_LEASE_HELD);
	assert_non_null(strstr(journal_errmsg(f->j), "alice"));
	assert_unchanged(f->j, &l);

	/* Leases move neither state nor version nor history. */
	assert_int_equal(l.version, 1);
	assert_int_equal(l.state, FC_PREPARING);

	/* A stale epoch cannot move the entry; the current one can. */
	assert_int_equal(cas(f->j, &l, FC_PREPARED, 1, NULL, &out), FC_LEASE_LOST);
	assert_unchanged(f->j, &l);
	assert_int_equal(cas(f->j, &l, FC_PREPARED, 2, NULL, &e), 0);

	/* Expiry: bob takes over, alice's epoch is dead from then on. */
	assert_int_equal(journal_acquire_lease(f->j, "op-l", "alice", 1, &l), 0);
	assert_int_equal(l.lease_epoch, 3);
	sleep_ms(20);
	assert_int_equal(journal_acquire_lease(f->j, "op-l", "bob", 60000, &l), 0);
	assert_int_equal(l.lease_epoch, 4);
	assert_string_equal(l.lease_owner, "bob");
	assert_int_equal(cas(f->j, &l, FC_COMMITTING, 3, NULL, &out),
			 FC_LEASE_LOST);
	assert_unchanged(f->j, &l);

	/* Epoch 0 (an operator) skips the check; the holder moves on. */
	assert_int_equal(cas(f->j, &l, FC_COMMITTING, 0, NULL, &e), 0);
	assert_int_equal(cas(f->j, &e, FC_COMMIT_UNKNOWN, 4, NULL, &e), 0);

	/* History records who moved: epochs 2, 0, 4 after the create. */
	assert_int_equal(journal_history(f->j, "op-l", &t, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(t[0].epoch, 0);
	assert_int_equal(t[1].epoch, 2);
	assert_int_equal(t[2].epoch, 0);
	assert_int_equal(t[3].epoch, 4);
	free(t);

	assert_int_equal(journal_acquire_lease(f->j, "nope", "bob", 10, &out),
			 FC_NOT_FOUND);
}

/* The successors of s, in table order. */
static int successors(enum fc_state s, enum fc_state next[FC_STATE_COUNT])
{
	int k = 0;

	for (int t = FC_PREPARING; t < FC_STATE_COUNT; t++)
		if (state_transition_legal(s, (enum fc_state)t))
			next[k++] = (enum fc_state)t;
	return k;
}

enum fc_state journal_conformance_next(enum fc_state s, int roam,
				       unsigned *seed)
{
	enum fc_state all[FC_STATE_COUNT], next[FC_STATE_COUNT];
	enum fc_state path[FC_STATE_COUNT], best = FC_STATE_NONE;
	int k = successors(s, all), m = 0, best_len = FC_STATE_COUNT + 1;

	/* Roaming keeps to successors from which PREPARING is reachable
	 * again, so the walk goes round the retry cycle instead of ending. */
	for (int i = 0; roam && i < k; i++)
		if (all[i] == FC_PREPARING ||
		    path_between(all[i], FC_PREPARING, path) >= 0)
			next[m++] = all[i];
	if (m > 0) {
		*seed = *seed * 1103515245u + 12345u;
		return next[(*seed >> 16) % (unsigned)m];
	}
	for (int i = 0; i < k; i++) {
		int len = all[i] == FC_COMPLETE ? 0 :
			  path_between(all[i], FC_COMPLETE, path);

		if (len >= 0 && len < best_len) {
			best = all[i];
			best_len = len;
		}
	}
	return best;
}

static void test_history_completeness(void **state)
{
	struct fixture *f = *state;
	struct journal_entry e, out;
	struct journal_transition *t;
	unsigned seed = 12345;
	char ev[64];
	size_t n;
	int steps = 0;

	/* A pseudo-random walk over the table that keeps to the retry cycle
	 * for 20 steps, then takes the shortest way to COMPLETE; all under
	 * one lease. */
	create(f->j, "op-h", &e);
	assert_int_equal(journal_acquire_lease(f->j, "op-h", "walker", 60000,
					       &e), 0);
	while (!state_is_terminal(e.state)) {
		enum fc_state to = journal_conformance_next(e.state, steps < 20,
							    &seed);

		assert_int_not_equal(to, FC_STATE_NONE);
		snprintf(ev, sizeof(ev), "{\"step\": %d}", steps);
		assert_int_equal(cas(f->j, &e, to, e.lease_epoch, ev, &out), 0);
		assert_int_equal(out.version, e.version + 1);
		e = out;
		steps++;
	}
	/* Longer than any acyclic path: the walk went round a cycle. */
	assert_true(e.version > FC_STATE_COUNT);

	assert_int_equal(journal_history(f->j, "op-h", &t, &n), 0);
	assert_int_equal(n, (size_t)e.version);
	assert_int_equal(t[0].from, FC_STATE_NONE);
	assert_int_equal(t[0].to, FC_PREPARING);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(t[i].version, (long long)i + 1);
		assert_true(state_transition_legal(t[i].from, t[i].to));
		if (i == 0)
			continue;
		assert_int_equal(t[i].from, t[i - 1].to);
		assert_int_equal(t[i].epoch, 1);
		assert_true(t[i].at >= t[i - 1].at);
		snprintf(ev, sizeof(ev), "{\"step\": %zu}", i - 1);
		assert_json_eq(t[i].evidence, ev);
	}
	assert_int_equal(t[n - 1].to, FC_COMPLETE);
	free(t);
}

static int listed(const struct journal_entry *e, size_t n, const char *op)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(e[i].operation_id, op) == 0)
			return 1;
	return 0;
}

static void test_get_and_list_filters(void **state)
{
	struct fixture *f = *state;
	struct journal_entry e, p2, got, *l;
	struct journal_filter filter = { 0, 0 };
	size_t n;

	create(f->j, "p1", &e);
	drive(f->j, "p2", FC_PREPARED, &p2);
	drive(f->j, "p3", FC_COMPLETE, &e);
	drive(f->j, "p4", FC_COMPLETE, &e);

	assert_int_equal(journal_get(f->j, "p2", &got), 0);
	assert_entry_eq(&got, &p2);

	assert_int_equal(journal_list(f->j, NULL, &l, &n), 0);
	assert_int_equal(n, 4);
	assert_true(listed(l, n, "p1") && listed(l, n, "p2") &&
		    listed(l, n, "p3") && listed(l, n, "p4"));
	for (size_t i = 0; i < n; i++)
		if (strcmp(l[i].operation_id, "p2") == 0)
			assert_entry_eq(&l[i], &p2);
	free(l);

	filter.states = STATE_BIT(FC_COMPLETE);
	assert_int_equal(journal_list(f->j, &filter, &l, &n), 0);
	assert_int_equal(n, 2);
	assert_true(listed(l, n, "p3") && listed(l, n, "p4"));
	free(l);

	filter.states = STATE_BIT(FC_PREPARING) | STATE_BIT(FC_PREPARED);
	assert_int_equal(journal_list(f->j, &filter, &l, &n), 0);
	assert_int_equal(n, 2);
	assert_true(listed(l, n, "p1") && listed(l, n, "p2"));
	free(l);

	filter.states = STATE_BIT(FC_COMMIT_UNKNOWN);
	assert_int_equal(journal_list(f->j, &filter, &l, &n), 0);
	assert_int_equal(n, 0);
	free(l);

	/* updated_before is exclusive and combines with states. */
	filter.states = 0;
	filter.updated_before = p2.updated_at;
	assert_int_equal(journal_list(f->j, &filter, &l, &n), 0);
	for (size_t i = 0; i < n; i++)
		assert_true(l[i].updated_at < p2.updated_at);
	assert_false(listed(l, n, "p2"));
	free(l);
	filter.updated_before = clock_wall_ms() + 60000;
	filter.states = STATE_BIT(FC_COMPLETE);
	assert_int_equal(journal_list(f->j, &filter, &l, &n), 0);
	assert_int_equal(n, 2);
	free(l);

	filter.states = 1u << 30;
	assert_int_equal(journal_list(f->j, &filter, &l, &n), FC_USAGE);
}

static void test_purge(void **state)
{
	struct fixture *f = *state;
	struct journal_entry old_done, old_preparing, old_failed, fresh_done;
	struct journal_entry gone;
	struct journal_transition *t;
	char (*ids)[JOURNAL_ID_MAX];
	long long cutoff;
	size_t n;

	drive(f->j, "old-done", FC_COMPLETE, &old_done);
	create(f->j, "old-preparing", &old_preparing);
	drive(f->j, "old-failed", FC_FAILED_PRE_COMMIT, &old_failed);
	sleep_ms(10);
	cutoff = clock_wall_ms();
	sleep_ms(10);
	drive(f->j, "fresh-done", FC_COMPLETE, &fresh_done);

	/* Nothing is older than time 0. */
	assert_int_equal(journal_purge(f->j, 0, &ids, &n), 0);
	assert_int_equal(n, 0);
	free(ids);

	assert_int_equal(journal_purge(f->j, cutoff, &ids, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ids[0], "old-done");
	free(ids);

	assert_int_equal(journal_get(f->j, "old-done", &gone), FC_NOT_FOUND);
	assert_int_equal(journal_history(f->j, "old-done", &t, &n), FC_NOT_FOUND);
	assert_unchanged(f->j, &old_preparing);
	assert_unchanged(f->j, &old_failed);
	assert_unchanged(f->j, &fresh_done);

	/* A second purge over the same window finds nothing more. */
	assert_int_equal(journal_purge(f->j, cutoff, &ids, &n), 0);
	assert_int_equal(n, 0);
	free(ids);

	/* A late retry of the purged operation is refused, not re-created. */
	int created = -1;
	assert_int_equal(journal_create_or_get(f->j, "old-done",
					       old_done.intent_digest, NULL,
					       &gone, &created), FC_PURGED);
	assert_int_equal(created, -1);
	assert_int_equal(journal_get(f->j, "old-done", &gone), FC_NOT_FOUND);
}

static void test_not_found(void **state)
{
	struct fixture *f = *state;
	struct journal_transition *t;
	struct journal_entry e;
	const struct journal_cas req = {
		.operation_id = "ghost", .expected_version = 1,
		.next = FC_PREPARED,
	};
	size_t n;

	assert_int_equal(journal_get(f->j, "ghost", &e), FC_NOT_FOUND);
	assert_non_null(strstr(journal_errmsg(f->j), "ghost"));
	assert_int_equal(journal_cas(f->j, &req, &e), FC_NOT_FOUND);
	assert_int_equal(journal_history(f->j, "ghost", &t, &n), FC_NOT_FOUND);
	assert_int_equal(journal_acquire_lease(f->j, "ghost", "w", 10, &e),
			 FC_NOT_FOUND);
	assert_int_equal(journal_get(f->j, "ghost", &e), FC_NOT_FOUND);
}

static void test_bad_arguments(void **state)
{
	static const char *const bad_json[] = {
		"not json", "[1, 2]", "\"text\"", "{\"a\": 1, \"a\": 2}", "{",
	};
	static const char *const bad_ids[] = {
		"", "has space", "tab\there", "new\nline", "caf\xc3\xa9",
	};
	struct fixture *f = *state;
	struct journal_entry e, out;
	struct journal_cas req;
	static char big[JOURNAL_JSON_MAX + 1];
	char long_id[JOURNAL_ID_MAX + 1];
	int created;

	for (size_t i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++) {
		assert_int_equal(journal_create_or_get(f->j, "op-j", "i",
						       bad_json[i], &e, &created),
				 FC_USAGE);
		assert_int_equal(journal_get(f->j, "op-j", &e), FC_NOT_FOUND);
	}
	for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
		assert_int_equal(journal_create_or_get(f->j, bad_ids[i], "i",
						       NULL, &e, &created),
				 FC_USAGE);
		assert_int_equal(journal_create_or_get(f->j, "op-j", bad_ids[i],
						       NULL, &e, &created),
				 FC_USAGE);
	}

	/* Ids up to JOURNAL_ID_MAX - 1 bytes fit; one more does not. */
	memset(long_id, 'x', sizeof(long_id));
	long_id[JOURNAL_ID_MAX] = '\0';
	assert_int_equal(journal_create_or_get(f->j, long_id, "i", NULL, &e,
					       &created), FC_USAGE);
	long_id[JOURNAL_ID_MAX - 1] = '\0';
	assert_int_equal(journal_create_or_get(f->j, long_id, "i", NULL, &e,
					       &created), FC_OK);
	assert_string_equal(e.operation_id, long_id);

	/* meta: JOURNAL_JSON_MAX - 1 bytes fit, one more does not. */
	memset(big, 'v', JOURNAL_JSON_MAX);
	memcpy(big, "{\"k\":\"", 6);
	strcpy(big + JOURNAL_JSON_MAX - 3, "\"}");
	assert_int_equal(strlen(big), JOURNAL_JSON_MAX - 1);
	assert_int_equal(journal_create_or_get(f->j, "op-big", "i", big, &e,
					       &created), FC_OK);
	assert_json_eq(e.meta, big);
	assert_int_equal(journal_get(f->j, "op-big", &out), 0);
	assert_json_eq(out.meta, big);
	strcpy(big + JOURNAL_JSON_MAX - 3, "v\"}");
	assert_int_equal(journal_create_or_get(f->j, "op-big2", "i", big, &e,
					       &created), FC_USAGE);

	/* A refused CAS argument changes nothing. */
	create(f->j, "op-k", &e);
	memset(&req, 0, sizeof(req));
	req.operation_id = "op-k";
	req.expected_version = 1;
	req.next = FC_PREPARED;
	for (size_t i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++) {
		req.evidence = bad_json[i];
		assert_int_equal(journal_cas(f->j, &req, &out), FC_USAGE);
	}
	req.evidence = big;
	assert_int_equal(journal_cas(f->j, &req, &out), FC_USAGE);
	req.evidence = NULL;
	req.expected_version = 0;
	assert_int_equal(journal_cas(f->j, &req, &out), FC_USAGE);
	req.expected_version = 1;
	req.next = FC_STATE_COUNT;
	assert_int_equal(journal_cas(f->j, &req, &out), FC_USAGE);
	req.next = FC_PREPARED;
	req.expected_states = STATE_BIT(FC_STATE_NONE);
	assert_int_equal(journal_cas(f->j, &req, &out), FC_USAGE);
	req.expected_states = 0;
	req.epoch = -1;
	assert_int_equal(journal_cas(f->j, &req, &out), FC_USAGE);
	assert_int_equal(journal_acquire_lease(f->j, "op-k", "w", 0, &out),
			 FC_USAGE);
	assert_int_equal(journal_acquire_lease(f->j, "op-k", "", 10, &out),
			 FC_USAGE);
	assert_int_equal(journal_acquire_lease(f->j, "op-k", "a b", 10, &out),
			 FC_USAGE);
	assert_unchanged(f->j, &e);
}

static void test_durable_across_reopen(void **state)
{
	struct fixture *f = *state;
	struct journal_entry a, b, c, got;
	struct journal_transition *t;
	char err[512];
	size_t n;

	drive(f->j, "d-a", FC_COMPLETE, &a);
	drive(f->j, "d-b", FC_COMMIT_UNKNOWN, &b);
	create(f->j, "d-c", &c);
	assert_int_equal(journal_acquire_lease(f->j, "d-c", "w", 60000, &c), 0);
	assert_int_equal(cas(f->j, &c, FC_PREPARED, c.lease_epoch,
			     "{\"fence\": \"prepared\"}", &c), 0);

	journal_close(f->j);
	f->j = NULL;
	assert_int_equal(journal_open(f->url, &f->j, err, sizeof(err)), 0);

	assert_int_equal(journal_get(f->j, "d-a", &got), 0);
	assert_entry_eq(&got, &a);
	assert_int_equal(journal_get(f->j, "d-b", &got), 0);
	assert_entry_eq(&got, &b);
	assert_int_equal(journal_get(f->j, "d-c", &got), 0);
	assert_entry_eq(&got, &c);
	assert_int_equal(journal_history(f->j, "d-c", &t, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(t[1].to, FC_PREPARED);
	assert_int_equal(t[1].epoch, 1);
	assert_json_eq(t[1].evidence, "{\"fence\": \"prepared\"}");
	free(t);
}

static void test_init_and_migrate_idempotent(void **state)
{
	struct fixture *f = *state;
	struct journal_entry e;
	int from = -1, to = -1;

	assert_int_equal(journal_init(f->j), 0);
	assert_int_equal(journal_init(f->j), 0);
	create(f->j, "m-a", &e);
	assert_int_equal(journal_migrate(f->j, &from, &to), 0);
	assert_int_equal(from, JOURNAL_SCHEMA_VERSION);
	assert_int_equal(to, JOURNAL_SCHEMA_VERSION);
	assert_int_equal(journal_init(f->j), 0);
	assert_unchanged(f->j, &e);
}

int journal_conformance_run(const char *adapter_name,
			    journal_url_factory make_url)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_and_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_idempotent_and_intent_conflict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legal_transitions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_illegal_transitions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cas_conflicts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leases, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_completeness, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_and_list_filters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_purge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_found, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_durable_across_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_and_migrate_idempotent, setup, teardown),
	};
	char name[128];

	factory = make_url;
	snprintf(name, sizeof(name), "journal conformance (%s)", adapter_name);
	return cmocka_run_group_tests_name(name, tests, NULL, NULL);
}
