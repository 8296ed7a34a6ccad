/*
 * test_fds.c -- descriptors over unix sockets and closing the rest
 * (common/fds.c): what arrives is what was sent, close-on-exec; what does
 * not fit is closed and said so; the one-descriptor form times out and
 * refuses anything else; fds_close_from_except() keeps exactly its two.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fds.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Two fds name the same open file when they share the inode. */
static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void test_send_recv(void **state)
{
	int sv[2], pp[2], got[FDS_MAX], n;
	char buf[64];
	bool whole;
	ssize_t r;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(pipe(pp), 0);
	/* a record with two descriptors */
	assert_int_equal(fds_send(sv[0], "hello", 5, pp, 2), 0);
	r = fds_recv(sv[1], buf, sizeof(buf), got, 4, &n, &whole);
	assert_int_equal(r, 5);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(n, 2);
	assert_true(whole);
	assert_true(same_file(got[0], pp[0]) && same_file(got[1], pp[1]));
	assert_int_equal(fcntl(got[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	assert_int_equal(fcntl(got[1], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	close(got[0]);
	close(got[1]);
	/* none */
	assert_int_equal(fds_send(sv[0], "x", 1, NULL, 0), 0);
	assert_int_equal(fds_recv(sv[1], buf, sizeof(buf), got, 4, &n, &whole),
			 1);
	assert_int_equal(n, 0);
	assert_true(whole);
	/* more descriptors than room: the rest is closed, the record marked */
	{
		int many[3] = { pp[0], pp[1], pp[0] };

		assert_int_equal(fds_send(sv[0], "y", 1, many, 3), 0);
		assert_int_equal(fds_recv(sv[1], buf, sizeof(buf), got, 2, &n,
					  &whole), 1);
		assert_int_equal(n, 2);
		assert_false(whole);
		close(got[0]);
		close(got[1]);
	}
	/* a longer record than the buffer */
	assert_int_equal(fds_send(sv[0], "truncated", 9, NULL, 0), 0);
	assert_int_equal(fds_recv(sv[1], buf, 4, got, 2, &n, &whole), 4);
	assert_false(whole);
	/* out of range */
	errno = 0;
	assert_int_equal(fds_send(sv[0], "z", 1, got, FDS_MAX + 1), FC_IO);
	assert_int_equal(errno, EINVAL);
	/* the peer is gone: 0 on receive, FC_IO (no SIGPIPE) on send */
	close(sv[0]);
	assert_int_equal(fds_recv(sv[1], buf, sizeof(buf), got, 2, &n, &whole),
			 0);
	assert_int_equal(n, 0);
	errno = 0;
	assert_int_equal(fds_send(sv[1], "z", 1, NULL, 0), FC_IO);
	assert_int_equal(errno, EPIPE);
	close(sv[1]);
	close(pp[0]);
	close(pp[1]);
}

static void test_one(void **state)
{
	int sv[2], pp[2], fd = -1;
	double t0;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(pipe(pp), 0);
	assert_int_equal(fds_send_one(sv[0], pp[1]), 0);
	assert_int_equal(fds_recv_one(sv[1], 5000, &fd), 0);
	assert_true(same_file(fd, pp[1]));
	close(fd);
	fd = -1;
	/* nothing comes: a timeout */
	t0 = now();
	assert_int_equal(fds_recv_one(sv[1], 100, &fd), FC_IO);
	assert_true(now() - t0 >= 0.09);
	assert_int_equal(fd, -1);
	/* a byte without a descriptor is not the listener */
	assert_int_equal(write(sv[0], "S", 1), 1);
	assert_int_equal(fds_recv_one(sv[1], 5000, &fd), FC_IO);
	assert_int_equal(fd, -1);
	/* the sender died before sending */
	close(sv[0]);
	assert_int_equal(fds_recv_one(sv[1], 5000, &fd), FC_IO);
	assert_int_equal(fd, -1);
	close(sv[1]);
	close(pp[0]);
	close(pp[1]);
}

/* In a child: open fds 10..19, keep 12 and 17, close the rest from 10. */
static void test_close_from_except(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int bad = 0;

		for (int fd = 10; fd < 20; fd++)
			if (dup2(0, fd) != fd)
				_exit(2);
		fds_close_from_except(10, 17, 12);
		for (int fd = 10; fd < 20; fd++)
			bad |= is_open(fd) != (fd == 12 || fd == 17);
		bad |= !is_open(0);
		fds_close_from_except(10, -1, -1);
		bad |= is_open(12) || is_open(17);
		for (int fd = 10; fd < 20; fd++)
			if (dup2(0, fd) != fd)
				_exit(2);
		fds_close_from(15);
		for (int fd = 10; fd < 20; fd++)
			bad |= is_open(fd) != (fd < 15);
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_recv),
		cmocka_unit_test(test_one),
		cmocka_unit_test(test_close_from_except),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
