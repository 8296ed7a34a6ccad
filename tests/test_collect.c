/*
 * test_collect.c -- collect_evidence(): every return.json that survived in
 * a schedule's XCom dirs is read whole, whatever its size; a missing one
 * is no evidence, an unparsable one is evidence that is not valid.
 *
 * And the journal watch (collect_watch_*, collect_journal()) on a real
 * SQLite journal: entries the "route" (this test, through the journal
 * port) writes under ids of its own are attributed to the operation whose
 * attempt ended when they appeared or moved, found by time when a
 * listing could not run, and read back whole at the end; a journal never
 * created stays uncreated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fsutil.h"
#include "harness/run/collect.h"
#include "journal/journal.h"

static char root[64];

static int setup(void **state)
{
	(void)state;
	/* tmpfs when there is one: the journal syncs every write */
	snprintf(root, sizeof(root), "%s/fc-collect-XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(fs_remove_tree(root), 0);
	return 0;
}

static void put_return(int op, int k, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/op%d/xcom/try-%d", root, op, k);
	assert_int_equal(fs_mkdirs(p), 0);
	snprintf(p, sizeof(p), "%s/op%d/xcom/try-%d/return.json", root, op, k);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_evidence(void **state)
{
	struct rec_schedule *r = record_new();
	struct rec_operation *op;
	char *big, pad[40000];

	(void)state;
	assert_non_null(r);
	op = RECORD_PUSH(r->ops, r->nops);
	assert_non_null(op);
	op->index = 1;
	/* try 1: none; try 2: larger than any one read; try 3: not JSON;
	 * try 4: a small one, past where a short read could stop us */
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	assert_true(asprintf(&big, "{\"pad\": \"%s\", \"operation_id\": \"op-a\", "
			     "\"intent_digest\": \"sha256:i\", \"state\": "
			     "\"COMPLETE\", \"rows_written\": 20, \"epoch\": 3}",
			     pad) > 0);
	put_return(1, 2, big);
	put_return(1, 3, "{\"operation_id\": ");
	put_return(1, 4, "{\"operation_id\": \"op-b\", \"epoch\": 4}");
	assert_int_equal(collect_evidence(r, root, 4), 0);
	assert_int_equal(op->nevidence, 3);
	assert_int_equal(op->evidence[0].try_number, 2);
	assert_true(op->evidence[0].valid);
	assert_string_equal(op->evidence[0].operation_id, "op-a");
	assert_string_equal(op->evidence[0].intent_digest, "sha256:i");
	assert_string_equal(op->evidence[0].state, "COMPLETE");
	assert_int_equal(op->evidence[0].rows_written, 20);
	assert_int_equal(op->evidence[0].epoch, 3);
	assert_string_equal(op->evidence[0].path, "op1/xcom/try-2/return.json");
	assert_int_equal(op->evidence[1].try_number, 3);
	assert_false(op->evidence[1].valid);
	assert_int_equal(op->evidence[2].try_number, 4);
	assert_true(op->evidence[2].valid);
	assert_string_equal(op->evidence[2].operation_id, "op-b");
	assert_int_equal(op->evidence[2].rows_written, -1);
	free(big);
	record_free(r);
}

/* More than a route could mean (over 1 MiB) is read as not valid, not
 * without bound. */
static void test_evidence_too_big(void **state)
{
	struct rec_schedule *r = record_new();
	struct rec_operation *op;
	size_t n = 3 * 1024 * 1024;
	char *big = malloc(n);

	(void)state;
	assert_non_null(r);
	assert_non_null(big);
	op = RECORD_PUSH(r->ops, r->nops);
	assert_non_null(op);
	op->index = 1;
	memset(big, ' ', n - 3);
	memcpy(big + n - 3, "{}", 3);
	put_return(1, 1, big);
	assert_int_equal(collect_evidence(r, root, 1), 0);
	assert_int_equal(op->nevidence, 1);
	assert_false(op->evidence[0].valid);
	free(big);
	record_free(r);
}

/* What a route leaves as its return.json is read as hostile
 * (fs_read_untrusted()): a FIFO no one writes (a plain open() waits for a
 * writer for ever), a symlink to a good file and a directory are
 * evidence that is not valid, at once. */
static void test_evidence_hostile(void **state)
{
	struct rec_schedule *r = record_new();
	struct rec_operation *op;
	char p[256], good[256];
	long long t0;

	(void)state;
	assert_non_null(r);
	op = RECORD_PUSH(r->ops, r->nops);
	assert_non_null(op);
	op->index = 1;
	put_return(1, 4, "{\"operation_id\": \"op-b\", \"epoch\": 4}");
	snprintf(good, sizeof(good), "%s/op1/xcom/try-4/return.json", root);
	for (int k = 1; k <= 3; k++) {
		snprintf(p, sizeof(p), "%s/op1/xcom/try-%d", root, k);
		assert_int_equal(fs_mkdirs(p), 0);
		snprintf(p, sizeof(p), "%s/op1/xcom/try-%d/return.json", root, k);
		if (k == 1)
			assert_int_equal(mkfifo(p, 0600), 0);
		else if (k == 2)
			assert_int_equal(symlink(good, p), 0);
		else
			assert_int_equal(mkdir(p, 0755), 0);
	}
	t0 = clock_mono_ms();
	assert_int_equal(collect_evidence(r, root, 4), 0);
	assert_true(clock_mono_ms() - t0 < 2000);
	assert_int_equal(op->nevidence, 4);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(op->evidence[k].try_number, k + 1);
		assert_false(op->evidence[k].valid);
	}
	assert_true(op->evidence[3].valid);
	assert_string_equal(op->evidence[3].operation_id, "op-b");
	record_free(r);
}

/* --- the journal watch ------------------------------------------------------ */

static char url[128];

static struct rec_schedule *schedule_of(int nops)
{
	struct rec_schedule *r = record_new();

	assert_non_null(r);
	for (int i = 1; i <= nops; i++) {
		struct rec_operation *op = RECORD_PUSH(r->ops, r->nops);
		assert_non_null(op);
		op->index = i;
		snprintf(op->canonical_id, sizeof(op->canonical_id),
			 "sha256:canonical-%d", i);
	}
	snprintf(url, sizeof(url), "sqlite:%s/journal.db", root);
	return r;
}

/* An attempt of op that lived over [start, end] (Unix ms); its index. */
static int attempt(struct rec_schedule *r, int op, int k, long long start,
		   long long end)
{
	struct rec_attempt *a = RECORD_PUSH(r->attempts, r->nattempts);

	assert_non_null(a);
	a->operation = op;
	a->try_number = k;
	a->start_wall_ms = start;
	a->end_wall_ms = end;
	a->obs_after = -1;
	return (int)r->nattempts - 1;
}

/* What the route does: create an entry under its own id. */
static void route_creates(const char *id)
{
	char err[256];
	struct journal_entry e;
	journal *j;
	int created;

	assert_int_equal(journal_open(url, &j, err, sizeof(err)), 0);
	assert_int_equal(journal_create_or_get(j, id, "intent-1", NULL, &e,
					       &created), 0);
	assert_int_equal(created, 1);
	journal_close(j);
}

static void route_moves(const char *id, enum fc_state to)
{
	char err[256];
	struct journal_entry e;
	journal *j;

	assert_int_equal(journal_open(url, &j, err, sizeof(err)), 0);
	assert_int_equal(journal_get(j, id, &e), 0);
	assert_int_equal(journal_cas(j, &(struct journal_cas){
			.operation_id = id, .expected_version = e.version,
			.next = to }, &e), 0);
	journal_close(j);
}

static bool journal_file_exists(void)
{
	return access(url + strlen("sqlite:"), F_OK) == 0;
}

/* Entries are the operation's whose attempt ended when they appeared or
 * moved; the first names the operation; the end reads them back. */
static void test_watch_attributes(void **state)
{
	struct rec_schedule *r = schedule_of(2);
	collect_watch *w;
	long long t = clock_wall_ms();
	int a;

	(void)state;
	assert_int_equal(collect_watch_new(url, &w), 0);
	/* op 1 try 1 wrote nothing: no journal, and none is created */
	a = attempt(r, 1, 1, t, t + 1);
	assert_int_equal(collect_watch_attempt(w, r, a), 0);
	assert_false(journal_file_exists());
	assert_int_equal(r->ops[0].nentries, 0);
	/* op 1 try 2 names it its own way */
	route_creates("myloader:a1");
	a = attempt(r, 1, 2, t + 2, t + 3);
	assert_int_equal(collect_watch_attempt(w, r, a), 0);
	assert_int_equal(r->ops[0].nentries, 1);
	assert_string_equal(r->ops[0].operation_id, "myloader:a1");
	assert_int_equal(r->ops[0].entries[0].seen_after, a);
	/* op 2 creates its own and moves op 1's: named by the one it made */
	route_creates("myloader:b2");
	route_moves("myloader:a1", FC_PREPARED);
	a = attempt(r, 2, 1, t + 4, t + 5);
	assert_int_equal(collect_watch_attempt(w, r, a), 0);
	assert_int_equal(r->ops[1].nentries, 2);
	assert_string_equal(r->ops[1].operation_id, "myloader:b2");
	assert_non_null(record_entry(&r->ops[1], "myloader:a1"));
	assert_int_equal(r->ops[0].nentries, 1);
	/* nothing changed: nothing new */
	a = attempt(r, 2, 2, t + 6, t + 7);
	assert_int_equal(collect_watch_attempt(w, r, a), 0);
	assert_int_equal(r->ops[1].nentries, 2);
	/* the end reads every attributed entry whole */
	assert_int_equal(collect_journal(r, w), 0);
	assert_int_equal(r->status, 0);
	assert_int_equal(r->ops[0].journal_status, 0);
	assert_int_equal(r->ops[0].entries[0].entry.state, FC_PREPARED);
	assert_int_equal(r->ops[0].entries[0].nhistory, 2);
	assert_int_equal(record_entry(&r->ops[1], "myloader:b2")->entry.state,
			 FC_PREPARING);
	/* the canonical id was never a key */
	assert_null(record_entry(&r->ops[0], "sha256:canonical-1"));
	collect_watch_free(w);
	record_free(r);
}

/* A listing that fails (the file exists, the route has not made its
 * journal yet) leaves its changes to later: across an operation's
 * boundary, and at the end, by the time the journal says they were made. */
static void test_watch_by_time(void **state)
{
	struct rec_schedule *r = schedule_of(2);
	char path[128];
	collect_watch *w;
	long long t0, t1;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/journal.db", root);
	assert_non_null(f = fopen(path, "w"));
	fclose(f);
	assert_int_equal(collect_watch_new(url, &w), 0);
	t0 = clock_wall_ms();
	assert_int_equal(collect_watch_attempt(w, r, attempt(r, 1, 1, t0, t0)),
			 0);
	assert_int_equal(r->ops[0].nentries, 0); /* no schema: not listed */
	route_creates("own:1");
	t1 = clock_wall_ms();
	r->attempts[0].end_wall_ms = t1; /* it lived while own:1 was made */
	/* op 2's attempt ends: own:1 is op 1's, by its creation time */
	assert_int_equal(collect_watch_attempt(w, r, attempt(r, 2, 1, t1 + 1,
							     t1 + 2)), 0);
	assert_int_equal(r->ops[0].nentries, 1);
	assert_string_equal(r->ops[0].operation_id, "own:1");
	assert_int_equal(r->ops[1].nentries, 0);
	/* made during op 2's second try, seen by no listing: the end finds it
	 * (once the clock has left op 2's first try, which ended at t1 + 2) */
	while ((t0 = clock_wall_ms()) <= t1 + 2)
		usleep(500);
	route_creates("own:2");
	attempt(r, 2, 2, t0, clock_wall_ms());
	assert_int_equal(collect_journal(r, w), 0);
	assert_int_equal(r->ops[1].nentries, 1);
	assert_string_equal(r->ops[1].operation_id, "own:2");
	assert_int_equal(r->ops[1].entries[0].seen_after, -1);
	assert_int_equal(r->ops[1].entries[0].status, 0);
	collect_watch_free(w);
	record_free(r);
}

/* `journal: none`, or a journal never created: no entry, no error. */
static void test_watch_nothing(void **state)
{
	struct rec_schedule *r = schedule_of(1);
	collect_watch *w;

	(void)state;
	assert_int_equal(collect_watch_new(NULL, &w), 0);
	assert_int_equal(collect_watch_attempt(w, r, attempt(r, 1, 1, 1, 2)), 0);
	assert_int_equal(collect_journal(r, w), 0);
	assert_int_equal(r->status, 0);
	assert_int_equal(r->ops[0].nentries, 0);
	collect_watch_free(w);
	assert_int_equal(collect_watch_new(url, &w), 0);
	assert_int_equal(collect_journal(r, w), 0);
	assert_false(journal_file_exists());
	assert_int_equal(r->status, 0);
	assert_int_equal(r->ops[0].journal_status, 0);
	collect_watch_free(w);
	record_free(r);
}

/* More entries than one schedule makes: unverified, not listed on. */
static void test_watch_too_many(void **state)
{
	struct rec_schedule *r = schedule_of(2);
	struct journal_entry e;
	collect_watch *w;
	char err[256], id[32];
	journal *j;
	int created;

	(void)state;
	assert_int_equal(journal_open(url, &j, err, sizeof(err)), 0);
	for (int i = 0; i <= COLLECT_ENTRIES_MAX; i++) {
		snprintf(id, sizeof(id), "e%d", i);
		assert_int_equal(journal_create_or_get(j, id, "i", NULL, &e,
						       &created), 0);
	}
	journal_close(j);
	/* after an attempt (two operations: the watch lists) */
	assert_int_equal(collect_watch_new(url, &w), 0);
	assert_int_equal(collect_watch_attempt(w, r, attempt(r, 1, 1, 1, 2)), 0);
	assert_int_equal(r->status, FC_JOURNAL_UNAVAILABLE);
	assert_non_null(strstr(r->error, "more than one schedule's work"));
	assert_int_equal(r->ops[0].nentries, 0);
	collect_watch_free(w);
	record_free(r);
	/* at the end (one operation: only the end lists) */
	r = schedule_of(1);
	assert_int_equal(collect_watch_new(url, &w), 0);
	assert_int_equal(collect_watch_attempt(w, r, attempt(r, 1, 1, 1, 2)), 0);
	assert_int_equal(r->status, 0);
	assert_int_equal(collect_journal(r, w), 0);
	assert_int_equal(r->status, FC_JOURNAL_UNAVAILABLE);
	assert_non_null(strstr(r->error, "more than one schedule's work"));
	assert_int_equal(r->ops[0].nentries, 0);
	collect_watch_free(w);
	record_free(r);
}

/* A history longer than COLLECT_HISTORY_MAX is not read (the entry's
 * version says how long it is): the entry is there without it, counted,
 * and the schedule is unverified; a short entry beside it is read whole. */
static void test_history_bounded(void **state)
{
	struct rec_schedule *r = schedule_of(1);
	struct journal_entry e;
	collect_watch *w;
	char err[256];
	journal *j;
	int created;
	const struct rec_entry *big, *small;

	(void)state;
	assert_int_equal(journal_open(url, &j, err, sizeof(err)), 0);
	assert_int_equal(journal_create_or_get(j, "big", "i", NULL, &e,
					       &created), 0);
	while (e.version <= COLLECT_HISTORY_MAX)
		assert_int_equal(journal_cas(j, &(struct journal_cas){
				.operation_id = "big",
				.expected_version = e.version,
				.next = e.state == FC_PREPARING ?
					FC_FAILED_PRE_COMMIT : FC_PREPARING },
				&e), 0);
	assert_int_equal(journal_create_or_get(j, "small", "i", NULL, &e,
					       &created), 0);
	journal_close(j);
	assert_int_equal(collect_watch_new(url, &w), 0);
	(void)attempt(r, 1, 1, 1, clock_wall_ms() + 1000);
	assert_int_equal(collect_journal(r, w), 0);
	assert_int_equal(r->ops[0].nentries, 2);
	big = record_entry(&r->ops[0], "big");
	small = record_entry(&r->ops[0], "small");
	assert_non_null(big);
	assert_non_null(small);
	assert_int_equal(big->status, FC_NOSPACE);
	assert_int_equal(big->nhistory, 0);
	assert_int_equal(big->history_total, COLLECT_HISTORY_MAX + 1);
	assert_int_equal(small->status, 0);
	assert_int_equal(small->nhistory, 1);
	assert_int_equal(r->status, FC_NOSPACE);
	assert_non_null(strstr(r->error, "holds 1001 transitions"));
	assert_non_null(strstr(r->error, "COLLECT_HISTORY_MAX"));
	collect_watch_free(w);
	record_free(r);
}

/* One operation: every entry is its own, whenever made, so nothing is
 * listed before the end (seen at the end, in the order made, even with
 * a creation time before every attempt, as a restored state's entries
 * have) -- unless the watch is eager. */
static void test_watch_one_operation(void **state)
{
	struct rec_schedule *r = schedule_of(1);
	collect_watch *w;
	long long t;
	int a;

	(void)state;
	route_creates("zz:first");
	usleep(2000); /* a later creation time (ms) */
	route_creates("aa:second");
	t = clock_wall_ms() + 10; /* every attempt after both were made */
	assert_int_equal(collect_watch_new(url, &w), 0);
	a = attempt(r, 1, 1, t, t + 1);
	assert_int_equal(collect_watch_attempt(w, r, a), 0);
	assert_int_equal(r->ops[0].nentries, 0); /* not listed */
	a = attempt(r, 1, 2, t + 2, t + 3);
	assert_int_equal(collect_journal(r, w), 0);
	assert_int_equal(r->status, 0);
	assert_int_equal(r->ops[0].nentries, 2);
	assert_string_equal(r->ops[0].operation_id, "zz:first");
	assert_string_equal(r->ops[0].entries[1].operation_id, "aa:second");
	assert_int_equal(r->ops[0].entries[0].seen_after, -1);
	assert_int_equal(r->ops[0].entries[0].status, 0);
	collect_watch_free(w);
	record_free(r);

	/* eager: listed after the attempt, as an operator fault needs */
	r = schedule_of(1);
	assert_int_equal(collect_watch_new(url, &w), 0);
	collect_watch_eager(w);
	a = attempt(r, 1, 1, t, t + 1);
	assert_int_equal(collect_watch_attempt(w, r, a), 0);
	assert_int_equal(r->ops[0].nentries, 2);
	assert_int_equal(r->ops[0].entries[0].seen_after, a);
	assert_string_equal(r->ops[0].operation_id, "zz:first");
	collect_watch_free(w);
	record_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_evidence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evidence_hostile, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_evidence_too_big, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_watch_attributes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_watch_by_time, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_watch_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_watch_too_many, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_history_bounded, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_watch_one_operation, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
