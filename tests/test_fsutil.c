/*
 * test_fsutil.c -- mkdir -p and rm -rf of schedule directories
 * (common/fsutil.c): trees of every shape go, nothing outside them does;
 * whole writes and sends, directory syncs; what a route could have
 * planted is refused without blocking or being followed
 * (fs_open_untrusted(), fs_read_untrusted(), fs_create_untrusted()).
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
#include <signal.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"

static char root[64];

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/fc-fsutil-XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx %s; rm -rf %s", root, root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void path(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s/%s", root, rel);
}

static void touch(const char *rel)
{
	char p[512];
	int fd;

	path(p, sizeof(p), rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

static void mkdirs(const char *rel)
{
	char p[512];

	path(p, sizeof(p), rel);
	assert_int_equal(fs_mkdirs(p), 0);
}

static int exists(const char *rel)
{
	char p[512];
	struct stat st;

	path(p, sizeof(p), rel);
	return lstat(p, &st) == 0;
}

static int remove_tree(const char *rel)
{
	char p[512];

	path(p, sizeof(p), rel);
	return fs_remove_tree(p);
}

/* A schedule dir: files, nested dirs, empty dirs, SQLite
 * side files, and symbolic links out of it that must not be followed. */
static void test_remove_schedule_tree(void **state)
{
	char p[512], q[512];

	(void)state;
	mkdirs("s/op1/xcom/try-1");
	mkdirs("s/op1/run");
	mkdirs("s/empty");
	mkdirs("outside/keep");
	touch("outside/keep/file");
	touch("s/journal.db");
	touch("s/journal.db-wal");
	touch("s/op1/xcom/try-1/return.json");
	touch("s/op1/run/checkpoint.json");
	path(p, sizeof(p), "outside/keep");
	path(q, sizeof(q), "s/op1/link-to-dir");
	assert_int_equal(symlink(p, q), 0);
	path(p, sizeof(p), "outside/keep/file");
	path(q, sizeof(q), "s/link-to-file");
	assert_int_equal(symlink(p, q), 0);
	path(q, sizeof(q), "s/dangling");
	assert_int_equal(symlink("/nonexistent/x", q), 0);
	assert_int_equal(remove_tree("s"), 0);
	assert_false(exists("s"));
	assert_true(exists("outside/keep/file"));
	/* gone already: fine */
	assert_int_equal(remove_tree("s"), 0);
	/* a plain file, and a link given as the tree itself */
	touch("plain");
	assert_int_equal(remove_tree("plain"), 0);
	assert_false(exists("plain"));
	path(p, sizeof(p), "outside/keep");
	path(q, sizeof(q), "toplink");
	assert_int_equal(symlink(p, q), 0);
	assert_int_equal(remove_tree("toplink"), 0);
	assert_false(exists("toplink"));
	assert_true(exists("outside/keep/file"));
}

/* Deeper than the descriptor-per-level walk goes: the rest is removed
 * all the same. */
static void test_remove_deep_tree(void **state)
{
	char rel[512] = "deep";
	size_t len = strlen(rel);

	(void)state;
	for (int i = 0; i < 60; i++) {
		len += (size_t)snprintf(rel + len, sizeof(rel) - len, "/d");
		mkdirs(rel);
		if (i % 7 == 0) {
			char f[520];
			snprintf(f, sizeof(f), "%s/f", rel);
			touch(f);
		}
	}
	assert_int_equal(remove_tree("deep"), 0);
	assert_false(exists("deep"));
}

/* More entries than one getdents64() batch holds, in the directory and
 * in subdirectories, while each batch's entries are being unlinked: all go
 * (a walk that lost its place after the first batch would leave some). */
static void test_remove_wide_tree(void **state)
{
	char rel[256];

	(void)state;
	mkdirs("wide/sub");
	for (int i = 0; i < 400; i++) {
		/* ~90-byte names: a 4 KiB batch holds ~40 of them */
		snprintf(rel, sizeof(rel), "wide/entry-%03d-%s", i,
			 "0123456789012345678901234567890123456789012345678901234567890123456789");
		if (i % 50 == 0)
			mkdirs(rel);
		else
			touch(rel);
		snprintf(rel, sizeof(rel), "wide/sub/f-%03d-%s", i,
			 "0123456789012345678901234567890123456789012345678901234567890123456789");
		touch(rel);
	}
	assert_int_equal(remove_tree("wide"), 0);
	assert_false(exists("wide"));
}

/* What cannot be removed is reported, never silently left. */
static void test_remove_reports_failure(void **state)
{
	char p[512];

	(void)state;
	if (geteuid() == 0)
		skip(); /* root removes from a read-only directory anyway */
	mkdirs("ro/sub");
	touch("ro/sub/f");
	path(p, sizeof(p), "ro/sub");
	assert_int_equal(chmod(p, 0555), 0);
	assert_int_equal(remove_tree("ro"), FC_IO);
	assert_true(exists("ro/sub/f"));
	assert_int_equal(chmod(p, 0755), 0);
	assert_int_equal(remove_tree("ro"), 0);
	assert_false(exists("ro"));
}

static void test_empty_dir(void **state)
{
	char p[512];

	(void)state;
	mkdirs("e/a/b");
	touch("e/a/b/f");
	touch("e/g");
	path(p, sizeof(p), "e");
	assert_int_equal(fs_empty_dir(p), 0);
	assert_true(exists("e"));
	assert_false(exists("e/a"));
	assert_false(exists("e/g"));
	path(p, sizeof(p), "new/x");
	assert_int_equal(fs_empty_dir(p), 0);
	assert_true(exists("new/x"));
	/* missing, parent there (a fresh try's XCom dir) */
	path(p, sizeof(p), "new/y");
	assert_int_equal(fs_empty_dir(p), 0);
	assert_true(exists("new/y"));
	/* a plain file where the directory should be is replaced by one */
	touch("new/z");
	path(p, sizeof(p), "new/z");
	assert_int_equal(fs_empty_dir(p), 0);
	{
		struct stat st;
		assert_int_equal(lstat(p, &st), 0);
		assert_true(S_ISDIR(st.st_mode));
	}
	/* under a plain file nothing can be made */
	path(p, sizeof(p), "new/z/../../e/g/h");
	touch("e/g");
	assert_int_equal(fs_empty_dir(p), FC_IO);
}

static void test_mkdirs(void **state)
{
	char p[512];

	(void)state;
	path(p, sizeof(p), "m/a/b/c/d/");
	assert_int_equal(fs_mkdirs(p), 0);
	assert_true(exists("m/a/b/c/d"));
	assert_int_equal(fs_mkdirs(p), 0); /* there already */
	path(p, sizeof(p), "m/a/b/c/e");
	assert_int_equal(fs_mkdirs(p), 0);
	assert_true(exists("m/a/b/c/e"));
	/* under a plain file nothing can be made */
	touch("m/file");
	path(p, sizeof(p), "m/file/x/y");
	assert_int_equal(fs_mkdirs(p), FC_IO);
	assert_false(exists("m/file/x"));
	assert_int_equal(fs_mkdirs(""), FC_IO);
}

/* Read exactly len bytes from fd (the test's side of a pipe or socket). */
static void read_exactly(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = read(fd, buf + got, len - got);

		assert_true(r > 0);
		got += (size_t)r;
	}
}

/* Larger than a socket's or a pipe's buffer: the loops must go round. */
#define BIG (1024 * 1024)

static void test_write_and_send_all(void **state)
{
	char *out = malloc(BIG), *in = malloc(BIG);
	int sv[2], pp[2];
	pid_t pid;

	(void)state;
	assert_non_null(out);
	assert_non_null(in);
	for (size_t i = 0; i < BIG; i++)
		out[i] = (char)(i * 13 + 1);
	/* a socket: send() in several rounds, read back whole */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fs_send_all(sv[0], out, BIG) == 0 ? 0 : 1);
	read_exactly(sv[1], in, BIG);
	assert_memory_equal(in, out, BIG);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	/* the peer is gone: FC_IO and EPIPE, not a SIGPIPE */
	close(sv[1]);
	errno = 0;
	assert_int_equal(fs_send_all(sv[0], out, 16), FC_IO);
	assert_int_equal(errno, EPIPE);
	close(sv[0]);
	/* a pipe is not a socket: written to instead */
	assert_int_equal(pipe(pp), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fs_send_all(pp[1], out, BIG) == 0 &&
		      fs_write_all(pp[1], out, BIG) == 0 ? 0 : 1);
	close(pp[1]);
	read_exactly(pp[0], in, BIG);
	assert_memory_equal(in, out, BIG);
	read_exactly(pp[0], in, BIG);
	assert_memory_equal(in, out, BIG);
	close(pp[0]);
	{
		int status;

		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* a closed fd */
	errno = 0;
	assert_int_equal(fs_write_all(pp[0], out, 1), FC_IO);
	assert_int_equal(errno, EBADF);
	free(out);
	free(in);
}

static void test_fsync_dir(void **state)
{
	char p[512];

	(void)state;
	assert_int_equal(fs_fsync_dir(root), 0);
	path(p, sizeof(p), "missing");
	errno = 0;
	assert_int_equal(fs_fsync_dir(p), FC_IO);
	assert_int_equal(errno, ENOENT);
	touch("plain");
	path(p, sizeof(p), "plain");
	errno = 0;
	assert_int_equal(fs_fsync_dir(p), FC_IO);
	assert_int_equal(errno, ENOTDIR);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* fs_open_untrusted(rel) fails with errno `want`, at once (a FIFO with no
 * writer would hold a plain open for ever: the test's alarm ends it). */
static void refused(const char *rel, size_t max, int want)
{
	char p[512], *buf = (char *)"x";
	size_t len = 7;
	long long t0 = now_ms();

	path(p, sizeof(p), rel);
	alarm(10);
	errno = 0;
	assert_int_equal(fs_open_untrusted(p, max), -1);
	assert_int_equal(errno, want);
	errno = 0;
	assert_int_equal(fs_read_untrusted(p, max, &buf, &len), FC_IO);
	assert_int_equal(errno, want);
	assert_null(buf);
	alarm(0);
	assert_true(now_ms() - t0 < 2000);
}

static void write_file(const char *rel, const char *text)
{
	char p[512];
	int fd;

	path(p, sizeof(p), rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* A regular file is read, whole, up to its bound; a FIFO (with and
 * without a writer), a symlink as the last component or as a directory
 * on the way, a device, a directory and a file over the bound are
 * refused, none of them blocking. */
static void test_open_untrusted(void **state)
{
	char p[512], q[512], *buf;
	size_t len;
	int fd;

	(void)state;
	mkdirs("s/d");
	write_file("s/d/return.json", "{\"ok\": true}");
	path(p, sizeof(p), "s/d/return.json");
	assert_int_equal(fs_read_untrusted(p, 12, &buf, &len), 0);
	assert_int_equal(len, 12);
	assert_string_equal(buf, "{\"ok\": true}");
	free(buf);
	fd = fs_open_untrusted(p, 0);
	assert_true(fd >= 0);
	/* blocking again, close-on-exec */
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	refused("s/d/return.json", 11, EFBIG);
	refused("s/d/missing", 0, ENOENT);
	/* a FIFO nobody writes */
	path(p, sizeof(p), "s/d/fifo");
	assert_int_equal(mkfifo(p, 0644), 0);
	refused("s/d/fifo", 0, EINVAL);
	/* ... and one a writer holds open, with bytes waiting */
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{}", 2), 2);
	refused("s/d/fifo", 0, EINVAL);
	close(fd);
	/* a symlink to a regular file, last component */
	path(p, sizeof(p), "s/d/return.json");
	path(q, sizeof(q), "s/d/link");
	assert_int_equal(symlink(p, q), 0);
	refused("s/d/link", 0, ELOOP);
	/* a symlinked directory on the way */
	path(p, sizeof(p), "s/d");
	path(q, sizeof(q), "s/dirlink");
	assert_int_equal(symlink(p, q), 0);
	refused("s/dirlink/return.json", 0, ELOOP);
	/* a directory */
	refused("s/d", 0, EINVAL);
	/* a device: /dev/zero never ends, /dev/null is not a file either */
	{
		char *b2 = (char *)"x";
		size_t l2;

		errno = 0;
		assert_int_equal(fs_open_untrusted("/dev/zero", 0), -1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(fs_read_untrusted("/dev/zero", 0, &b2, &l2),
				 FC_IO);
		assert_int_equal(errno, EINVAL);
		assert_null(b2);
		errno = 0;
		assert_int_equal(fs_open_untrusted("/dev/null", 1024), -1);
		assert_int_equal(errno, EINVAL);
	}
	/* a symlink to a device in a route's dir */
	path(q, sizeof(q), "s/d/zero");
	assert_int_equal(symlink("/dev/zero", q), 0);
	refused("s/d/zero", 0, ELOOP);
}

/* What a route left where the harness writes is replaced, never written
 * through: a FIFO (a plain open would block), a symlink to a file outside
 * (a plain open would write it), a dangling symlink (a plain O_CREAT
 * would make its target), a file someone holds open (it keeps its
 * bytes). */
static void test_create_untrusted(void **state)
{
	char p[512], q[512], *buf;
	size_t len;
	struct stat st;
	int fd, held;

	(void)state;
	mkdirs("s");
	mkdirs("outside");
	write_file("outside/keep", "keep");
	path(p, sizeof(p), "s/fifo");
	assert_int_equal(mkfifo(p, 0644), 0);
	alarm(10);
	fd = fs_create_untrusted(p, 0644);
	alarm(0);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "new", 3), 3);
	close(fd);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(fs_read_untrusted(p, 0, &buf, &len), 0);
	assert_string_equal(buf, "new");
	free(buf);
	/* a symlink out of the directory */
	path(p, sizeof(p), "outside/keep");
	path(q, sizeof(q), "s/link");
	assert_int_equal(symlink(p, q), 0);
	fd = fs_create_untrusted(q, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "new", 3), 3);
	close(fd);
	assert_int_equal(lstat(q, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(fs_read_untrusted(p, 0, &buf, &len), 0);
	assert_string_equal(buf, "keep");
	free(buf);
	/* a dangling one */
	path(p, sizeof(p), "outside/made");
	path(q, sizeof(q), "s/dangling");
	assert_int_equal(symlink(p, q), 0);
	fd = fs_create_untrusted(q, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(lstat(p, &st), -1);
	assert_int_equal(errno, ENOENT);
	/* a file another process holds open keeps what it had */
	write_file("s/held", "old");
	path(p, sizeof(p), "s/held");
	held = open(p, O_RDONLY);
	assert_true(held >= 0);
	fd = fs_create_untrusted(p, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "new!", 4), 4);
	close(fd);
	{
		char old[8] = { 0 };

		assert_int_equal(read(held, old, sizeof(old) - 1), 3);
		assert_string_equal(old, "old");
	}
	close(held);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 4);
	/* a symlinked directory on the way is not followed either */
	path(p, sizeof(p), "outside");
	path(q, sizeof(q), "s/outlink");
	assert_int_equal(symlink(p, q), 0);
	path(q, sizeof(q), "s/outlink/keep");
	errno = 0;
	assert_int_equal(fs_create_untrusted(q, 0644), -1);
	assert_int_equal(errno, ELOOP);
	path(p, sizeof(p), "outside/keep");
	assert_int_equal(fs_read_untrusted(p, 0, &buf, &len), 0);
	assert_string_equal(buf, "keep");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_remove_schedule_tree,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_deep_tree, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_remove_wide_tree, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_remove_reports_failure,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_dir, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mkdirs, setup, teardown),
		cmocka_unit_test(test_write_and_send_all),
		cmocka_unit_test_setup_teardown(test_fsync_dir, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_open_untrusted, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_create_untrusted, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
