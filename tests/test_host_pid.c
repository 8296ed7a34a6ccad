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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/host_pid.h"

static void test_outside(void **state)
{
	(void)state;
	assert_int_equal(host_pid(), (long)getpid());
}

/* In a helper process (so this one's pid namespace for children never
 * changes, which LeakSanitizer's exit check needs): unshare a PID
 * namespace and fork its first process, pid 1 there, which reports
 * host_pid(); the helper compares it with what fork() returned and exits
 * 0 (right), 1 (wrong) or 77 (no PID namespace here). */
static int inside(void)
{
	int p[2], st;
	long seen = 0;
	pid_t pid;

	if (pipe(p) != 0)
		return 1;
	if (unshare(CLONE_NEWPID) != 0)
		return 77;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		long mine = host_pid();
		ssize_t n = write(p[1], &mine, sizeof(mine));
		syscall(SYS_exit_group, n == sizeof(mine) && getpid() == 1 ? 0 : 1);
	}
	if (read(p[0], &seen, sizeof(seen)) != sizeof(seen) ||
	    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		return 1;
	return seen == (long)pid ? 0 : 1;
}

static void test_inside(void **state)
{
	int st;
	pid_t helper;

	(void)state;
	helper = fork();
	assert_true(helper >= 0);
	if (helper == 0) /* the raw call: a sanitizer's _exit() would run
			  * its leak check, which cannot clone here */
		syscall(SYS_exit_group, inside());
	assert_int_equal(waitpid(helper, &st, 0), helper);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77) {
		print_message("skipped: no PID namespace here\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outside),
		cmocka_unit_test(test_inside),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
