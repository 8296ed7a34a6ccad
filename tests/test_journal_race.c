/*
 * test_journal_race.c -- eight processes racing one journal.
 *
 * WORKERS forked processes, each with its own journal handle, wait on their
 * own pipe; the parent releases a round by writing one ticket to every pipe
 * back to back, so all of them call the port at the same moment:
 *
 *  - cas:    everyone CASes the same operation at the same expected
 *            version; exactly one wins, the rest get CAS_CONFLICT; the
 *            history ends with no gap and no double.
 *  - create: everyone creates the same new operation with the same intent
 *            (exactly one created=1, all see version 1) or each with its own
 *            intent (one creates, the rest get INTENT_CONFLICT).
 *  - lease:  everyone takes the lease of one operation; one wins epoch 1,
 *            the rest get LEASE_HELD.
 *
 * The URL is $FENCECERT_RACE_URL when set (so the PostgreSQL and etcd
 * adapters run this file unchanged), else a sqlite file in a temp dir.
 * Operation ids carry the pid and the time, so a shared server journal can
 * be reused.  $FENCECERT_RACE_ROUNDS overrides the number of CAS rounds.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "common/fsutil.h"
#include "journal/journal.h"

#define WORKERS 8
#define ROUND_TIMEOUT_MS 30000

enum race_kind { RACE_CAS, RACE_CREATE_SAME, RACE_CREATE_OWN, RACE_LEASE };

struct ticket {
	int kind;
	int round;
	long long expected_version;
	int from, next;
	char op[JOURNAL_ID_MAX];
};

struct report {
	int worker;
	int round;
	int rc;
	int created;
	long long version;
	long long epoch;
};

struct crew {
	pid_t pid[WORKERS];
	int go[WORKERS];  /* parent's write end of each worker's ticket pipe */
	int results;      /* parent's read end of the shared report pipe */
};

static char tmpdir[] = "/tmp/fc-journal-race-XXXXXX";
static char url[512];
static char op_base[64];

/* ---- workers ------------------------------------------------------------ */

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return got == 0 && n == 0 ? 0 : -1;
		got += (size_t)n;
	}
	return 1;
}

static void serve(int id, int go, int results)
{
	struct journal_entry e;
	struct ticket t;
	char err[512], name[32];
	journal *j;
	int rc;

	if (journal_open(url, &j, err, sizeof(err))) {
		fprintf(stderr, "worker %d: %s\n", id, err);
		_exit(2);
	}
	snprintf(name, sizeof(name), "worker-%d", id);
	while ((rc = read_full(go, &t, sizeof(t))) == 1) {
		struct report r = { .worker = id, .round = t.round };
		/* Odd rounds race on the version alone: the loser must hear
		 * CAS_CONFLICT (re-read), not the ILLEGAL_TRANSITION its
		 * request would be against the new state. */
		struct journal_cas req = {
			.operation_id = t.op,
			.expected_version = t.expected_version,
			.expected_states = t.round % 2 ? 0 : STATE_BIT(t.from),
			.next = (enum fc_state)t.next,
		};

		memset(&e, 0, sizeof(e));
		switch (t.kind) {
		case RACE_CAS:
			r.rc = journal_cas(j, &req, &e);
			break;
		case RACE_CREATE_SAME:
		case RACE_CREATE_OWN:
			r.rc = journal_create_or_get(j, t.op, t.kind ==
						     RACE_CREATE_SAME ? "shared" :
						     name, NULL, &e, &r.created);
			break;
		case RACE_LEASE:
			r.rc = journal_acquire_lease(j, t.op, name, 60000, &e);
			break;
		}
		if (r.rc && r.rc != FC_CAS_CONFLICT && r.rc != FC_INTENT_CONFLICT &&
		    r.rc != FC_LEASE_HELD)
			fprintf(stderr, "worker %d: %s: %s\n", id,
				error_name(r.rc), journal_errmsg(j));
		r.version = e.version;
		r.epoch = e.lease_epoch;
		if (write(results, &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(3);
	}
	journal_close(j);
	_exit(rc == 0 ? 0 : 4);
}

static void crew_start(struct crew *c)
{
	int res[2];

	assert_int_equal(pipe(res), 0);
	for (int i = 0; i < WORKERS; i++) {
		int go[2];

		assert_int_equal(pipe(go), 0);
		c->pid[i] = fork();
		assert_true(c->pid[i] >= 0);
		if (c->pid[i] == 0) {
			close(go[1]);
			close(res[0]);
			/* Earlier workers' ticket pipes must not stay open
			 * here, or they would never see end-of-file. */
			for (int k = 0; k < i; k++)
				close(c->go[k]);
			serve(i, go[0], res[1]);
		}
		close(go[0]);
		c->go[i] = go[1];
	}
	close(res[1]);
	c->results = res[0];
}

/* Close the ticket pipes (workers exit on EOF); returns how many workers
 * did not exit 0. */
static int crew_stop(struct crew *c)
{
	int bad = 0, status;

	for (int i = 0; i < WORKERS; i++)
		close(c->go[i]);
	for (int i = 0; i < WORKERS; i++) {
		if (waitpid(c->pid[i], &status, 0) != c->pid[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad++;
	}
	close(c->results);
	return bad;
}

/* Release one round and collect every worker's report.  Returns 0, or -1
 * when a worker went silent (the caller stops the crew, then fails). */
static int crew_round(struct crew *c, const struct ticket *t,
		      struct report r[WORKERS])
{
	struct pollfd p = { .fd = c->results, .events = POLLIN };

	for (int i = 0; i < WORKERS; i++)
		if (write(c->go[i], t, sizeof(*t)) != (ssize_t)sizeof(*t))
			return -1;
	for (int i = 0; i < WORKERS; i++) {
		if (poll(&p, 1, ROUND_TIMEOUT_MS) != 1 ||
		    read_full(c->results, &r[i], sizeof(r[i])) != 1)
			return -1;
	}
	return 0;
}

/* ---- tests -------------------------------------------------------------- */

static journal *open_parent(void)
{
	char err[512];
	journal *j = NULL;

	if (journal_open(url, &j, err, sizeof(err)))
		fail_msg("cannot open '%s': %s", url, err);
	return j;
}

static void test_race_cas(void **state)
{
	const char *env = getenv("FENCECERT_RACE_ROUNDS");
	int rounds = env ? atoi(env) : 200, wins_ok = 0, bad_loser = 0;
	enum fc_state cur = FC_PREPARING;
	struct journal_transition *h;
	struct journal_entry e;
	struct report r[WORKERS];
	struct ticket t = { .kind = RACE_CAS };
	struct crew c;
	int created, round, silent = 0;
	size_t n;
	journal *j;

	(void)state;
	assert_true(rounds > 0);
	assert_true(state_transition_legal(FC_PREPARING, FC_FAILED_PRE_COMMIT));
	assert_true(state_transition_legal(FC_FAILED_PRE_COMMIT, FC_PREPARING));
	snprintf(t.op, sizeof(t.op), "%s-cas", op_base);
	j = open_parent();
	assert_int_equal(journal_create_or_get(j, t.op, "shared", NULL, &e,
					       &created), 0);

	crew_start(&c);
	for (round = 0; round < rounds; round++) {
		int winners = 0, winner_version = 0;

		t.round = round;
		t.expected_version = round + 1;
		t.from = cur;
		t.next = cur == FC_PREPARING ? FC_FAILED_PRE_COMMIT : FC_PREPARING;
		if (crew_round(&c, &t, r)) {
			silent = 1;
			break;
		}
		for (int i = 0; i < WORKERS; i++) {
			if (r[i].rc == 0) {
				winners++;
				winner_version = r[i].version == round + 2;
			} else if (r[i].rc != FC_CAS_CONFLICT) {
				bad_loser++;
			}
		}
		wins_ok += winners == 1 && winner_version;
		cur = (enum fc_state)t.next;
	}
	assert_int_equal(crew_stop(&c), 0);
	assert_false(silent);
	assert_int_equal(bad_loser, 0);
	assert_int_equal(wins_ok, rounds);

	/* No gap, no double: versions 1..rounds+1, each row from the last. */
	assert_int_equal(journal_history(j, t.op, &h, &n), 0);
	assert_int_equal(n, (size_t)rounds + 1);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(h[i].version, (long long)i + 1);
		assert_true(state_transition_legal(h[i].from, h[i].to));
		if (i)
			assert_int_equal(h[i].from, h[i - 1].to);
	}
	free(h);
	assert_int_equal(journal_get(j, t.op, &e), 0);
	assert_int_equal(e.version, rounds + 1);
	journal_close(j);
}

static void race_creates(int kind, int rounds)
{
	struct journal_transition *h;
	struct report r[WORKERS];
	struct ticket t = { .kind = kind };
	struct crew c;
	int good = 0, silent = 0;
	size_t n;
	journal *j = open_parent();

	crew_start(&c);
	for (int round = 0; round < rounds; round++) {
		int created = 0, conflicts = 0, others = 0;

		t.round = round;
		snprintf(t.op, sizeof(t.op), "%s-create%d-%d", op_base, kind,
			 round);
		if (crew_round(&c, &t, r)) {
			silent = 1;
			break;
		}
		for (int i = 0; i < WORKERS; i++) {
			if (r[i].rc == 0 && r[i].created)
				created++;
			else if (r[i].rc == FC_INTENT_CONFLICT)
				conflicts++;
			else if (r[i].rc || r[i].version != 1)
				others++;
		}
		if (kind == RACE_CREATE_SAME)
			good += created == 1 && conflicts == 0 && others == 0;
		else
			good += created == 1 && conflicts == WORKERS - 1;
	}
	assert_int_equal(crew_stop(&c), 0);
	assert_false(silent);
	assert_int_equal(good, rounds);

	/* Each operation was created once: one history row. */
	for (int round = 0; round < rounds; round++) {
		snprintf(t.op, sizeof(t.op), "%s-create%d-%d", op_base, kind,
			 round);
		assert_int_equal(journal_history(j, t.op, &h, &n), 0);
		assert_int_equal(n, 1);
		free(h);
	}
	journal_close(j);
}

static void test_race_create_same_intent(void **state)
{
	(void)state;
	race_creates(RACE_CREATE_SAME, 20);
}

static void test_race_create_own_intent(void **state)
{
	(void)state;
	race_creates(RACE_CREATE_OWN, 20);
}

static void test_race_lease(void **state)
{
	struct journal_entry e;
	struct report r[WORKERS];
	struct ticket t = { .kind = RACE_LEASE };
	struct crew c;
	int good = 0, silent = 0, created;
	const int rounds = 20;
	journal *j = open_parent();

	(void)state;
	for (int round = 0; round < rounds; round++) {
		snprintf(t.op, sizeof(t.op), "%s-lease-%d", op_base, round);
		assert_int_equal(journal_create_or_get(j, t.op, "shared", NULL,
						       &e, &created), 0);
	}
	crew_start(&c);
	for (int round = 0; round < rounds; round++) {
		int won = 0, held = 0;

		t.round = round;
		snprintf(t.op, sizeof(t.op), "%s-lease-%d", op_base, round);
		if (crew_round(&c, &t, r)) {
			silent = 1;
			break;
		}
		for (int i = 0; i < WORKERS; i++) {
			won += r[i].rc == 0 && r[i].epoch == 1;
			held += r[i].rc == FC_LEASE_HELD;
		}
		good += won == 1 && held == WORKERS - 1;
	}
	assert_int_equal(crew_stop(&c), 0);
	assert_false(silent);
	assert_int_equal(good, rounds);
	assert_int_equal(journal_get(j, t.op, &e), 0);
	assert_int_equal(e.lease_epoch, 1);
	assert_int_equal(e.version, 1);
	journal_close(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_race_cas),
		cmocka_unit_test(test_race_create_same_intent),
		cmocka_unit_test(test_race_create_own_intent),
		cmocka_unit_test(test_race_lease),
	};
	const char *env = getenv("FENCECERT_RACE_URL");
	int own_dir = !env || !*env, failed;

	if (own_dir) {
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			return 1;
		}
		snprintf(url, sizeof(url), "sqlite:%s/race.db", tmpdir);
	} else {
		snprintf(url, sizeof(url), "%s", env);
	}
	snprintf(op_base, sizeof(op_base), "race-%ld-%lld", (long)getpid(),
		 clock_wall_ms());
	failed = cmocka_run_group_tests_name("journal race", tests, NULL, NULL);
	if (own_dir)
		if (fs_remove_tree(tmpdir))
			fprintf(stderr, "cannot remove '%s'\n", tmpdir);
	return failed ? 1 : 0;
}
