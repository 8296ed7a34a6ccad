/*
 * test_journal_kill.c -- SIGKILL a journal writer at random moments.
 *
 * A child walks operations kill-0, kill-1, ... through the state table to
 * COMPLETE (retry cycles included, under a lease) and, after every journal
 * call that returned 0, writes an acknowledgement (op, version, state) to a
 * pipe: what it was told is durable.  The parent kills it KILLS times at
 * seeded random moments -- the first three timed from the fork, so they can
 * land in open and schema creation, the rest from the moment the child has
 * the journal open -- and after each kill reopens the journal and checks:
 *
 *  1. every acknowledged (op, version, state) is in the history;
 *  2. every history is a legal path: versions 1..n contiguous, the first row
 *     NONE -> PREPARING, each row from the previous row's state, each edge
 *     legal (state_transition_legal), and the entry at version n in the
 *     state of row n.
 *
 * A last child resumes without being killed and finishes every started
 * operation: recovery needs nothing but the journal.
 *
 * $FENCECERT_KILL_SEED picks the schedule (the seed is printed); the URL is
 * $FENCECERT_KILL_URL, else a sqlite file in a temp dir.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "common/fsutil.h"
#include "journal/journal.h"
#include "tests/journal_conformance.h"

#define KILLS 20
#define MAX_DELAY_MS 100
#define MAX_OPS 100000
#define ROAM_STEPS 12

struct ack {
	int op;
	int state;
	long long version;
};

struct acks {
	struct ack *a;
	size_t n, cap;
	int max_op; /* highest op index acknowledged, -1 for none */
};

static char tmpdir[] = "/tmp/fc-journal-kill-XXXXXX";
static char url[512];
static char op_base[64]; /* "kill-PID-MS": unique in a shared journal */

static void op_name(int i, char out[JOURNAL_ID_MAX])
{
	snprintf(out, JOURNAL_ID_MAX, "%s-%d", op_base, i);
}

static int ours(const char *op)
{
	size_t n = strlen(op_base);

	return strncmp(op, op_base, n) == 0 && op[n] == '-';
}

/* ---- the child ---------------------------------------------------------- */

static void ack(int fd, int op, const struct journal_entry *e)
{
	const struct ack a = { op, (int)e->state, e->version };

	if (write(fd, &a, sizeof(a)) != (ssize_t)sizeof(a))
		_exit(3);
}

/* The record that says "journal open": op -1, not an acknowledgement. */
static void write_ready(int fd)
{
	const struct ack a = { -1, 0, 0 };

	if (write(fd, &a, sizeof(a)) != (ssize_t)sizeof(a))
		_exit(3);
}

/* Walk op i from wherever the journal has it to COMPLETE. */
static void walk(journal *j, int fd, int i)
{
	char op[JOURNAL_ID_MAX];
	struct journal_entry e;
	unsigned seed = (unsigned)i * 2654435761u;
	int created;

	op_name(i, op);
	if (journal_create_or_get(j, op, "intent", NULL, &e, &created))
		_exit(4);
	ack(fd, i, &e);
	/* Same owner in every child: a restarted walker re-acquires its own
	 * lease (epoch + 1) instead of waiting for it to expire. */
	if (journal_acquire_lease(j, op, "walker", 60000, &e))
		_exit(5);
	while (!state_is_terminal(e.state)) {
		const struct journal_cas req = {
			.operation_id = op,
			.expected_version = e.version,
			.expected_states = STATE_BIT(e.state),
			.next = journal_conformance_next(e.state,
							 e.version < ROAM_STEPS,
							 &seed),
			.epoch = e.lease_epoch,
			.evidence = "{\"by\": \"walker\"}",
		};

		if (journal_cas(j, &req, &e)) {
			fprintf(stderr, "child: %s\n", journal_errmsg(j));
			_exit(6);
		}
		ack(fd, i, &e);
	}
}

static void child(int fd, int first, int last)
{
	char err[512];
	journal *j;

	if (journal_open(url, &j, err, sizeof(err))) {
		fprintf(stderr, "child: %s\n", err);
		_exit(2);
	}
	write_ready(fd);
	for (int i = first; i <= last; i++)
		walk(j, fd, i);
	journal_close(j);
	_exit(0);
}

/* ---- the parent --------------------------------------------------------- */

static void acks_add(struct acks *s, const struct ack *a)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->a = realloc(s->a, s->cap * sizeof(*s->a));
		assert_non_null(s->a);
	}
	s->a[s->n++] = *a;
	if (a->op > s->max_op)
		s->max_op = a->op;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Read one record; 0 at EOF. */
static int read_ack(int fd, struct ack *a)
{
	ssize_t n = read(fd, a, sizeof(*a));

	assert_true(n == 0 || n == (ssize_t)sizeof(*a));
	return n != 0;
}

/*
 * Run one child over ops first..last; kill it delay_ms after it started
 * (from_ready: after it opened the journal -- a slow start, e.g. under a
 * sanitizer, would otherwise eat every delay), or never when delay_ms < 0.
 * Collects its acknowledgements; returns its wait status.
 */
static int run_child(int first, int last, long delay_ms, int from_ready,
		     struct acks *s)
{
	int eof = 0;
	struct ack a;
	int fds[2], status;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		child(fds[1], first, last);
	}
	close(fds[1]);
	if (from_ready && !(eof = !read_ack(fds[0], &a)))
		assert_int_equal(a.op, -1);
	if (delay_ms >= 0) {
		sleep_ms(delay_ms);
		kill(pid, SIGKILL);
	}
	/* Everything written before the kill is in the pipe; read to EOF. */
	while (!eof && read_ack(fds[0], &a))
		if (a.op >= 0)
			acks_add(s, &a);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* The checks of the header comment; returns the number of our entries. */
static size_t verify(const struct acks *s, int expect_complete)
{
	struct journal_entry *entries;
	size_t count, mine = 0;
	char err[512];
	journal *j;

	assert_int_equal(journal_open(url, &j, err, sizeof(err)), 0);
	assert_int_equal(journal_list(j, NULL, &entries, &count), 0);
	for (size_t k = 0; k < count; k++) {
		const struct journal_entry *e = &entries[k];
		struct journal_transition *h;
		size_t n;

		if (!ours(e->operation_id))
			continue;
		mine++;
		assert_int_equal(journal_history(j, e->operation_id, &h, &n), 0);
		assert_int_equal(n, (size_t)e->version);
		assert_int_equal(h[0].from, FC_STATE_NONE);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(h[i].version, (long long)i + 1);
			if (!state_transition_legal(h[i].from, h[i].to))
				fail_msg("'%s' v%lld: illegal %s -> %s",
					 e->operation_id, h[i].version,
					 state_name(h[i].from),
					 state_name(h[i].to));
			if (i)
				assert_int_equal(h[i].from, h[i - 1].to);
		}
		assert_int_equal(h[n - 1].to, e->state);
		if (expect_complete)
			assert_int_equal(e->state, FC_COMPLETE);
		/* Nothing acknowledged for this operation is missing. */
		for (size_t i = 0; i < s->n; i++) {
			char op[JOURNAL_ID_MAX];

			op_name(s->a[i].op, op);
			if (strcmp(op, e->operation_id) != 0)
				continue;
			if (s->a[i].version > (long long)n ||
			    (int)h[s->a[i].version - 1].to != s->a[i].state)
				fail_msg("'%s': acknowledged v%lld %s is not "
					 "in the history (%zu rows)", op,
					 s->a[i].version,
					 state_name((enum fc_state)s->a[i].state),
					 n);
		}
		free(h);
	}
	free(entries);
	/* And no acknowledged operation vanished altogether. */
	for (size_t i = 0; i < s->n; i++) {
		char op[JOURNAL_ID_MAX];
		struct journal_entry e;

		op_name(s->a[i].op, op);
		if (journal_get(j, op, &e))
			fail_msg("acknowledged '%s' is missing", op);
	}
	journal_close(j);
	return mine;
}

static void test_kill_at_random_moments(void **state)
{
	const char *env = getenv("FENCECERT_KILL_SEED");
	unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : 20240917u;
	struct acks s = { .max_op = -1 };
	int killed = 0, status;
	size_t entries;

	(void)state;
	print_message("kill schedule seed %u (FENCECERT_KILL_SEED)\n", seed);
	for (int k = 0; k < KILLS; k++) {
		long delay = 1 + (long)(rand_r(&seed) % MAX_DELAY_MS);
		/* Resume at the last acknowledged op: it may be unfinished. */
		int first = s.max_op < 0 ? 0 : s.max_op;

		/* The first kills may land in open and schema creation. */
		status = run_child(first, MAX_OPS, delay, k >= 3, &s);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			killed++;
		else
			fail_msg("child ended before its kill (status %d)",
				 status);
		verify(&s, 0);
	}
	assert_int_equal(killed, KILLS);
	assert_true(s.n > 0);

	/* Recovery: one more child, not killed, finishes what was started. */
	status = run_child(s.max_op < 0 ? 0 : s.max_op, s.max_op + 1, -1, 0,
			   &s);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	entries = verify(&s, 1);
	assert_int_equal(entries, (size_t)s.max_op + 1);
	print_message("%d kills, %zu acknowledgements, %zu operations\n",
		      killed, s.n, entries);
	free(s.a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill_at_random_moments),
	};
	const char *env = getenv("FENCECERT_KILL_URL");
	int own_dir = !env || !*env, failed;

	if (own_dir) {
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			return 1;
		}
		snprintf(url, sizeof(url), "sqlite:%s/kill.db", tmpdir);
	} else {
		snprintf(url, sizeof(url), "%s", env);
	}
	snprintf(op_base, sizeof(op_base), "kill-%ld-%lld", (long)getpid(),
		 clock_wall_ms());
	failed = cmocka_run_group_tests_name("journal kill", tests, NULL, NULL);
	if (own_dir)
		if (fs_remove_tree(tmpdir))
			fprintf(stderr, "cannot remove '%s'\n", tmpdir);
	return failed ? 1 : 0;
}
