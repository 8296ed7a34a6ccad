/*
 * test_failpoint.c -- the route side of the failpoint channel, over a real
 * socketpair: continue, fail, a broken channel (fail closed), no channel
 * (no-op), a malformed variable, EINTR while blocked, a wait set (PASS
 * lines that read no answer).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "routes/failpoint.h"

static int peer = -1;

/* Point FENCECERT_FAILPOINT_FD at one end of a fresh socketpair; the test
 * plays the supervisor on `peer`. */
static void open_channel(void)
{
	int sv[2];
	char num[16], err[256];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	snprintf(num, sizeof(num), "%d", sv[0]);
	setenv(PROTO_ENV_FAILPOINT_FD, num, 1);
	assert_int_equal(failpoint_init(err, sizeof(err)), 0);
	assert_true(failpoint_enabled());
	peer = sv[1];
}

static int teardown(void **state)
{
	(void)state;
	failpoint_reset();
	unsetenv(PROTO_ENV_FAILPOINT_FD);
	unsetenv(PROTO_ENV_FAILPOINT_WAIT);
	if (peer >= 0)
		close(peer);
	peer = -1;
	return 0;
}

/* Read exactly what the route wrote for one hit. */
static void expect_line(const char *want)
{
	char buf[256];
	size_t len = strlen(want);
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(peer, buf + got, len - got);

		assert_true(n > 0);
		got += (size_t)n;
	}
	buf[got] = '\0';
	assert_string_equal(buf, want);
}

static void test_no_env_is_noop(void **state)
{
	char err[256];

	(void)state;
	unsetenv(PROTO_ENV_FAILPOINT_FD);
	assert_int_equal(failpoint_init(err, sizeof(err)), 0);
	assert_false(failpoint_enabled());
	assert_int_equal(failpoint_hit("before_intent"), 0);
	assert_int_equal(failpoint_hit("after_intent"), 0);
	assert_int_equal(failpoint_hit_count(), 0);

	setenv(PROTO_ENV_FAILPOINT_FD, "", 1); /* empty is the same as unset */
	assert_int_equal(failpoint_init(err, sizeof(err)), 0);
	assert_false(failpoint_enabled());
	assert_int_equal(failpoint_hit("x"), 0);
}

static void test_recording_without_channel(void **state)
{
	char err[256];

	(void)state;
	unsetenv(PROTO_ENV_FAILPOINT_FD);
	assert_int_equal(failpoint_init(err, sizeof(err)), 0);
	failpoint_record(true);
	assert_int_equal(failpoint_hit("before_lease"), 0);
	assert_int_equal(failpoint_hit("after_lease"), 0);
	assert_int_equal(failpoint_hit_count(), 2);
	assert_string_equal(failpoint_hit_name(0), "before_lease");
	assert_string_equal(failpoint_hit_name(1), "after_lease");
	assert_null(failpoint_hit_name(2));
}

static void test_continue_and_fail(void **state)
{
	(void)state;
	open_channel();
	failpoint_record(true);
	/* The answer is queued before the hit; the route must still write its
	 * line first and then consume exactly one byte per hit. */
	assert_int_equal(write(peer, "cfc", 3), 3);
	assert_int_equal(failpoint_hit("before_intent"), 0);
	expect_line("HIT before_intent\n");
	assert_int_equal(failpoint_hit("after_intent"), FC_IO);
	expect_line("HIT after_intent\n");
	/* 'f' fails one step; the channel stays usable */
	assert_int_equal(failpoint_hit("before_lease"), 0);
	expect_line("HIT before_lease\n");
	assert_int_equal(failpoint_hit_count(), 3);
	assert_string_equal(failpoint_hit_name(1), "after_intent");
}

/* Only names in FENCECERT_FAILPOINT_WAIT wait; the others write PASS and
 * consume no answer (a read would eat the queued 'f').  Whole names only:
 * "intent" and "lease_x" are not "after_intent" and "lease". */
static void test_wait_set_passes_the_others(void **state)
{
	(void)state;
	setenv(PROTO_ENV_FAILPOINT_WAIT, "after_intent,lease", 1);
	open_channel();
	failpoint_record(true);
	assert_int_equal(write(peer, "fc", 2), 2);
	assert_int_equal(failpoint_hit("before_intent"), 0);
	assert_int_equal(failpoint_hit("intent"), 0);
	assert_int_equal(failpoint_hit("after_intent"), FC_IO);
	assert_int_equal(failpoint_hit("lease_x"), 0);
	assert_int_equal(failpoint_hit("lease"), 0);
	expect_line("PASS before_intent\nPASS intent\nHIT after_intent\n"
		    "PASS lease_x\nHIT lease\n");
	/* recorded the same whether passed or waited */
	assert_int_equal(failpoint_hit_count(), 5);
	assert_string_equal(failpoint_hit_name(3), "lease_x");
}

/* A route (a channel, recording off) keeps no copy of the names. */
static void test_channel_alone_records_nothing(void **state)
{
	(void)state;
	open_channel();
	assert_int_equal(write(peer, "c", 1), 1);
	assert_int_equal(failpoint_hit("before_intent"), 0);
	expect_line("HIT before_intent\n");
	assert_int_equal(failpoint_hit_count(), 0);
	assert_null(failpoint_hit_name(0));
}

/* An empty set: nothing waits, not even with no answer ever coming. */
static void test_empty_wait_set_never_reads(void **state)
{
	(void)state;
	setenv(PROTO_ENV_FAILPOINT_WAIT, "", 1);
	open_channel();
	assert_int_equal(failpoint_hit("a"), 0);
	assert_int_equal(failpoint_hit("b"), 0);
	expect_line("PASS a\nPASS b\n");
	/* init again without the variable: every failpoint waits again */
	unsetenv(PROTO_ENV_FAILPOINT_WAIT);
	close(peer);
	open_channel();
	assert_int_equal(write(peer, "f", 1), 1);
	assert_int_equal(failpoint_hit("a"), FC_IO);
	expect_line("HIT a\n");
}

static void test_whitespace_between_answers(void **state)
{
	(void)state;
	open_channel();
	assert_int_equal(write(peer, "c\nf\n", 4), 4);
	assert_int_equal(failpoint_hit("a"), 0);
	assert_int_equal(failpoint_hit("b"), FC_IO);
	expect_line("HIT a\nHIT b\n");
}

static void test_peer_closed_fails_closed(void **state)
{
	(void)state;
	open_channel();
	close(peer); /* supervisor vanished: also proves no SIGPIPE death */
	peer = -1;
	assert_int_equal(failpoint_hit("before_committing"), FC_IO);
	assert_int_equal(failpoint_hit("after_committing"), FC_IO);
	assert_true(failpoint_enabled());
}

static void test_eof_after_line_fails_closed(void **state)
{
	(void)state;
	open_channel();
	/* the supervisor reads the question and shuts its side down */
	assert_int_equal(shutdown(peer, SHUT_WR), 0);
	assert_int_equal(failpoint_hit("before_probe"), FC_IO);
	expect_line("HIT before_probe\n");
	/* broken stays broken, even if answers would be available now */
	assert_int_equal(failpoint_hit("after_probe"), FC_IO);
}

static void test_garbage_answer_breaks_channel(void **state)
{
	(void)state;
	open_channel();
	assert_int_equal(write(peer, "xc", 2), 2);
	assert_int_equal(failpoint_hit("before_evidence"), FC_IO);
	/* 'c' is queued, but a channel that spoke nonsense is not trusted */
	assert_int_equal(failpoint_hit("after_evidence"), FC_IO);
}

static void test_bad_variable(void **state)
{
	char err[256];

	(void)state;
	setenv(PROTO_ENV_FAILPOINT_FD, "seven", 1);
	assert_int_equal(failpoint_init(err, sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "seven"));
	assert_false(failpoint_enabled());

	/* a number, but nothing open there */
	setenv(PROTO_ENV_FAILPOINT_FD, "987", 1);
	assert_int_equal(failpoint_init(err, sizeof(err)), FC_USAGE);
	assert_non_null(strstr(err, "987"));
	assert_false(failpoint_enabled());
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A real second process answers after a delay while a signal without
 * SA_RESTART interrupts the blocked read: the hit must wait it out. */
static void test_blocks_across_eintr(void **state)
{
	struct sigaction sa;
	struct timespec t0, t1;
	pid_t pid;
	int status;

	(void)state;
	open_channel();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART: read() sees EINTR */
	sigaction(SIGALRM, &sa, NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char buf[64];
		ssize_t n = read(peer, buf, sizeof(buf) - 1);

		if (n <= 0)
			_exit(2);
		buf[n] = '\0';
		if (strcmp(buf, "HIT after_complete\n") != 0)
			_exit(3);
		usleep(300 * 1000);
		_exit(write(peer, "c", 1) == 1 ? 0 : 4);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ualarm(100 * 1000, 0);
	assert_int_equal(failpoint_hit("after_complete"), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 +
		    (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 250);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	signal(SIGALRM, SIG_DFL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_no_env_is_noop, teardown),
		cmocka_unit_test_teardown(test_recording_without_channel, teardown),
		cmocka_unit_test_teardown(test_continue_and_fail, teardown),
		cmocka_unit_test_teardown(test_whitespace_between_answers, teardown),
		cmocka_unit_test_teardown(test_wait_set_passes_the_others, teardown),
		cmocka_unit_test_teardown(test_channel_alone_records_nothing, teardown),
		cmocka_unit_test_teardown(test_empty_wait_set_never_reads, teardown),
		cmocka_unit_test_teardown(test_peer_closed_fails_closed, teardown),
		cmocka_unit_test_teardown(test_eof_after_line_fails_closed, teardown),
		cmocka_unit_test_teardown(test_garbage_answer_breaks_channel, teardown),
		cmocka_unit_test_teardown(test_bad_variable, teardown),
		cmocka_unit_test_teardown(test_blocks_across_eintr, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
