/*
 * test_host_pid.c -- host_pid() is the pid the host sees, also inside a
 * PID namespace of its own (where getpid() is 1 in every process that
 * first enters one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/host_pid.h"

static void test_outside(void **state)
{
	(void)state;
	assert_int_equal(host_pid(), (long)getpid());
}

/* A child in a new PID namespace: getpid() 1, host_pid() what the parent
 * got from fork; reported through the exit status (0: right). */
static void test_inside(void **state)
{
	int p[2], st;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(p), 0);
	if (unshare(CLONE_NEWPID) != 0) {
		print_message("skipped: no PID namespace here\n");
		skip();
	}
	pid = fork(); /* the first child of the namespace: its pid 1 */
	assert_true(pid >= 0);
	if (pid == 0) {
		long seen = host_pid();
		ssize_t n = write(p[1], &seen, sizeof(seen));
		_exit(n == sizeof(seen) && getpid() == 1 ? 0 : 1);
	}
	{
		long seen = 0;
		assert_int_equal(read(p[0], &seen, sizeof(seen)), sizeof(seen));
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		assert_int_equal(seen, (long)pid);
	}
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outside),
		cmocka_unit_test(test_inside),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
