/*
 * test_fence_fs.c -- the file: fence: the conformance suite, then what only
 * a directory target can show: temp files never count as data, an
 * existing data file decides the outcome, a lock held by a stopped process
 * makes us give up in bounded time, the CSV survives hostile payloads, and
 * fence_skip_sync() changes no answer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fences/datafile.h"
#include "fences/fence.h"
#include "tests/fence_conformance.h"

static void fs_url(const char *dir, char *url, size_t len)
{
	/* A directory that does not exist yet: apply creates it. */
	snprintf(url, len, "file:%s/lake", dir);
}

static void fs_unreachable(const char *dir, char *url, size_t len)
{
	char file[CONFORMANCE_PATH_MAX];
	FILE *fp;

	snprintf(file, sizeof(file), "%s/plain-file", dir);
	fp = fopen(file, "w");
	assert_non_null(fp);
	fclose(fp);
	snprintf(url, len, "file:%s/lake", file);
}

static const struct fence_conformance backend = {
	.name = "fs",
	.fresh_url = fs_url,
	.unreachable_url = fs_unreachable,
	.supports_replace = 0,
};

struct fctx {
	char dir[CONFORMANCE_DIR_MAX];
	char lake[CONFORMANCE_DIR_MAX + 16];
	char url[CONFORMANCE_PATH_MAX + 16];
	fence *f;
	char op[80], intent[80];
	pid_t child; /* killed by teardown if a failed test left it */
};

static int setup(void **state)
{
	struct fctx *x = calloc(1, sizeof(*x));
	char err[512];

	assert_non_null(x);
	conformance_tempdir(x->dir);
	snprintf(x->lake, sizeof(x->lake), "%s/lake", x->dir);
	snprintf(x->url, sizeof(x->url), "file:%s", x->lake);
	assert_int_equal(fence_open(x->url, &x->f, err, sizeof(err)), 0);
	conformance_id("fs op", x->op);
	conformance_id("fs intent", x->intent);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fctx *x = *state;

	if (x->child > 0) {
		kill(x->child, SIGKILL);
		waitpid(x->child, NULL, 0);
	}
	fence_close(x->f);
	conformance_rmtree(x->dir);
	free(x);
	return 0;
}

static void data_path(const struct fctx *x, const char *table, char *out,
		      size_t len)
{
	/* Layout from fence_fs.c: <table>/<hex of the sha256 id>.csv */
	snprintf(out, len, "%s/%s/%s.csv", x->lake, table, x->op + 7);
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

static void copy_file(const char *from, const char *to)
{
	char buf[4096];
	FILE *in = fopen(from, "r"), *out = fopen(to, "w");
	size_t n;

	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
}

/* ---- tests ---- */

static void test_layout(void **state)
{
	struct fctx *x = *state;
	struct conformance_batch *cb;
	enum fence_outcome out;
	struct datafile_header h;
	char path[CONFORMANCE_PATH_MAX], err[512];
	struct stat st;

	cb = conformance_batch_new(x->op, x->intent, "k", 3);
	assert_int_equal(fence_prepare(x->f, x->op, 4), 0);
	assert_int_equal(fence_apply(x->f, 4, conformance_batch(cb), &out), 0);
	data_path(x, "events", path, sizeof(path));
	assert_int_equal(datafile_read(path, &h, NULL, NULL, err, sizeof(err)),
			 0);
	assert_true(h.present);
	assert_string_equal(h.operation_id, x->op);
	assert_string_equal(h.intent_digest, x->intent);
	assert_int_equal(h.epoch, 4);
	assert_int_equal(h.rows, 3);
	snprintf(path, sizeof(path), "%s/.fencecert/%s.epoch", x->lake,
		 x->op + 7);
	assert_int_equal(stat(path, &st), 0);
	conformance_batch_release(cb);
}

static int check_row(void *ctx, const char *key, const char *payload)
{
	const struct fence_row **next = ctx;

	assert_string_equal(key, (*next)->row_key);
	if ((*next)->payload)
		assert_string_equal(payload, (*next)->payload);
	else
		assert_null(payload);
	(*next)++;
	return 0;
}

static void test_csv_round_trip(void **state)
{
	struct fctx *x = *state;
	static const struct fence_row rows[] = {
		{ "plain", "text" },
		{ "comma,key", "a,b,c" },
		{ "quote\"key", "say \"hi\"" },
		{ "#not-a-comment", "# neither" },
		{ "newline", "line1\nline2\r\nline3" },
		{ "empty", "" },
		{ "null", NULL },
		{ "", "empty key" },
		{ "row_key", "payload" }, /* looks like the column line */
		{ "utf8-\xc3\xa9", "\xe2\x82\xac" },
	};
	const size_t n = sizeof(rows) / sizeof(rows[0]);
	const struct fence_row *next = rows;
	struct fence_batch b = {
		.operation_id = x->op, .intent_digest = x->intent,
		.strategy = FENCE_APPEND, .rows = rows, .nrows = n,
	};
	struct datafile_header h;
	struct fence_probe p;
	enum fence_outcome out;
	char path[CONFORMANCE_PATH_MAX], err[512];

	assert_int_equal(fence_apply(x->f, 1, &b, &out), 0);
	data_path(x, "events", path, sizeof(path));
	assert_int_equal(datafile_read(path, &h, check_row, &next, err,
				       sizeof(err)), 0);
	assert_ptr_equal(next, rows + n);
	assert_int_equal(fence_probe(x->f, x->op, &p), 0);
	assert_int_equal(p.rows, (long long)n);
	assert_int_equal(conformance_rows(x->url, NULL, x->op), (long long)n);
}

static void test_temp_files_are_not_data(void **state)
{
	struct fctx *x = *state;
	struct conformance_batch *cb;
	enum fence_outcome out;
	struct fence_probe p;
	char path[CONFORMANCE_PATH_MAX], tdir[CONFORMANCE_DIR_MAX + 32];

	/* What a writer killed before link() leaves behind. */
	snprintf(tdir, sizeof(tdir), "%s/events", x->lake);
	assert_int_equal(mkdir(x->lake, 0755), 0);
	assert_int_equal(mkdir(tdir, 0755), 0);
	snprintf(path, sizeof(path), "%s/.tmp-abc123", tdir);
	write_file(path, "# fencecert op=x epoch=1 intent=y rows=1\n"
			 "row_key,payload\nghost,row\n");
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 0);
	assert_int_equal(fence_probe(x->f, x->op, &p), 0);
	assert_int_equal(p.answer, FENCE_ABSENT);
	cb = conformance_batch_new(x->op, x->intent, "k", 2);
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out), 0);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 2);
	/* Apply removes its own temp name once linked. */
	{
		DIR *d = opendir(tdir);
		struct dirent *de;
		int temps = 0;

		assert_non_null(d);
		while ((de = readdir(d)))
			temps += strncmp(de->d_name, ".tmp-", 5) == 0;
		closedir(d);
		assert_int_equal(temps, 1); /* only the planted one */
	}
	conformance_batch_release(cb);
}

/* A data file already at the operation's name decides, whoever put it
 * there: same intent is ALREADY_APPLIED, another is INTENT_CONFLICT. */
static void test_existing_file_decides(void **state)
{
	struct fctx *x = *state;
	struct conformance_batch *a, *b;
	enum fence_outcome out = FENCE_OUTCOME_UNKNOWN;
	char other[80], src[CONFORMANCE_PATH_MAX], dst[CONFORMANCE_PATH_MAX];
	char url2[CONFORMANCE_PATH_MAX + 16];
	char err[512];
	fence *f2;

	conformance_id("fs other intent", other);
	a = conformance_batch_new(x->op, x->intent, "a", 3);
	b = conformance_batch_new(x->op, other, "b", 3);
	/* Apply in a second lake, copy the file into this one by hand. */
	snprintf(url2, sizeof(url2), "file:%s/lake2", x->dir);
	assert_int_equal(fence_open(url2, &f2, err, sizeof(err)), 0);
	assert_int_equal(fence_apply(f2, 1, conformance_batch(a), &out), 0);
	fence_close(f2);
	snprintf(src, sizeof(src), "%s/lake2/events/%s.csv", x->dir, x->op + 7);
	snprintf(dst, sizeof(dst), "%s/events", x->lake);
	assert_int_equal(mkdir(x->lake, 0755), 0);
	assert_int_equal(mkdir(dst, 0755), 0);
	data_path(x, "events", dst, sizeof(dst));
	copy_file(src, dst);
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(a), &out),
			 FC_ALREADY_APPLIED);
	assert_int_equal(out, FENCE_PROVED_PRESENT);
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(b), &out),
			 FC_INTENT_CONFLICT);
	assert_int_equal(out, FENCE_PROVED_PRESENT);
	/* The same operation into another table is the same operation. */
	{
		struct fence_batch other_table = *conformance_batch(a);

		other_table.table = "audit";
		assert_int_equal(fence_apply(x->f, 1, &other_table, &out),
				 FC_ALREADY_APPLIED);
		assert_int_equal(conformance_rows(x->url, "audit", NULL), 0);
	}
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 3);
	conformance_batch_release(a);
	conformance_batch_release(b);
}

static void test_corrupt_file_is_unknown(void **state)
{
	struct fctx *x = *state;
	struct conformance_batch *cb;
	enum fence_outcome out = FENCE_PROVED_ABSENT;
	struct fence_probe p;
	char path[CONFORMANCE_PATH_MAX], text[512];

	cb = conformance_batch_new(x->op, x->intent, "k", 3);
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out), 0);
	/* Rows missing compared with the header: not provably applied. */
	data_path(x, "events", path, sizeof(path));
	snprintf(text, sizeof(text), "# fencecert op=%s epoch=1 intent=%s "
		 "rows=3\nrow_key,payload\nk-0,a\nk-1,b\n", x->op, x->intent);
	write_file(path, text);
	assert_int_not_equal(fence_probe(x->f, x->op, &p), 0);
	assert_int_equal(p.answer, FENCE_UNKNOWN);
	/* A header that is not ours: apply cannot classify it either. */
	write_file(path, "garbage\n");
	assert_int_not_equal(fence_probe(x->f, x->op, &p), 0);
	assert_int_not_equal(fence_apply(x->f, 1, conformance_batch(cb), &out),
			     0);
	assert_int_equal(out, FENCE_OUTCOME_UNKNOWN);
	conformance_batch_release(cb);
}

static double elapsed(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	       (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* A process holding the operation's lock (then stopped, as a zombie
 * worker would be) makes prepare and apply give up, not hang. */
static void test_held_lock_is_bounded(void **state)
{
	struct fctx *x = *state;
	struct conformance_batch *cb;
	enum fence_outcome out = FENCE_OUTCOME_UNKNOWN;
	struct timespec t0;
	char lock[CONFORMANCE_PATH_MAX];
	int ready[2], st;
	pid_t pid;
	double t;

	cb = conformance_batch_new(x->op, x->intent, "k", 3);
	assert_int_equal(fence_prepare(x->f, x->op, 1), 0);
	snprintf(lock, sizeof(lock), "%s/.fencecert/%s.lock", x->lake,
		 x->op + 7);
	assert_int_equal(pipe(ready), 0);
	pid = x->child = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(lock, O_RDWR);

		if (fd < 0 || flock(fd, LOCK_EX) != 0)
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		raise(SIGSTOP);
		pause();
		_exit(0);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], lock, 1), 1);
	close(ready[0]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(fence_prepare(x->f, x->op, 2), FC_FENCE_UNAVAILABLE);
	t = elapsed(&t0);
	assert_true(t >= 1.5 && t < 5.0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out),
			 FC_FENCE_UNAVAILABLE);
	assert_int_equal(out, FENCE_PROVED_ABSENT);
	assert_true(elapsed(&t0) < 5.0);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 0);
	/* The holder dies: its lock goes with it. */
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	x->child = 0;
	assert_int_equal(fence_prepare(x->f, x->op, 2), 0);
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out),
			 FC_STALE_EPOCH);
	assert_int_equal(fence_apply(x->f, 2, conformance_batch(cb), &out), 0);
	conformance_batch_release(cb);
}

static void test_plain_ids_are_escaped(void **state)
{
	struct fctx *x = *state;
	static const struct fence_row row = { "k", "v" };
	const char *ops[] = { "op/../../escape", ".hidden", "a_2f", "a/" };
	enum fence_outcome out;
	struct fence_probe p;

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct fence_batch b = {
			.operation_id = ops[i], .intent_digest = x->intent,
			.strategy = FENCE_APPEND, .rows = &row, .nrows = 1,
		};

		assert_int_equal(fence_apply(x->f, 1, &b, &out), 0);
	}
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		assert_int_equal(fence_probe(x->f, ops[i], &p), 0);
		assert_int_equal(p.answer, FENCE_APPLIED);
		assert_int_equal(conformance_rows(x->url, NULL, ops[i]), 1);
	}
	/* Nothing escaped the lake. */
	{
		char path[CONFORMANCE_PATH_MAX];
		struct stat st;

		snprintf(path, sizeof(path), "%s/escape.csv", x->dir);
		assert_int_not_equal(stat(path, &st), 0);
	}
}

/* fence_skip_sync() takes the syncs away and nothing else: the same
 * answers (that no fsync is issued is shown under strace by
 * tests/integration/route_fsync.sh).  A fence that cannot leave its
 * syncs out refuses. */
static void test_skip_sync(void **state)
{
	struct fctx *x = *state;
	struct conformance_batch *cb;
	enum fence_outcome out;
	struct fence_probe p;
	char url[CONFORMANCE_PATH_MAX + 16], err[512];
	fence *sq;

	assert_true(fence_features(x->f) & FENCE_CAN_SKIP_SYNC);
	assert_int_equal(fence_skip_sync(x->f), 0);
	cb = conformance_batch_new(x->op, x->intent, "k", 3);
	assert_int_equal(fence_prepare(x->f, x->op, 2), 0);
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out),
			 FC_STALE_EPOCH);
	assert_int_equal(out, FENCE_PROVED_ABSENT);
	assert_int_equal(fence_apply(x->f, 2, conformance_batch(cb), &out), 0);
	assert_int_equal(out, FENCE_PROVED_PRESENT);
	assert_int_equal(fence_apply(x->f, 2, conformance_batch(cb), &out),
			 FC_ALREADY_APPLIED);
	assert_int_equal(fence_probe(x->f, x->op, &p), 0);
	assert_int_equal(p.answer, FENCE_APPLIED);
	assert_int_equal(p.epoch, 2);
	assert_int_equal(p.rows, 3);
	assert_int_equal(conformance_rows(x->url, NULL, x->op), 3);
	conformance_batch_release(cb);

	snprintf(url, sizeof(url), "sqlite:%s/target.db", x->dir);
	assert_int_equal(fence_open(url, &sq, err, sizeof(err)), 0);
	assert_false(fence_features(sq) & FENCE_CAN_SKIP_SYNC);
	assert_int_equal(fence_skip_sync(sq), FC_USAGE);
	assert_non_null(strstr(fence_errmsg(sq), "sqlite"));
	fence_close(sq);
}

static void test_url_forms(void **state)
{
	char err[512];
	fence *f;

	(void)state;
	assert_int_equal(fence_open("file:", &f, err, sizeof(err)), FC_USAGE);
	assert_int_equal(fence_open("file:/tmp/lake/", &f, err, sizeof(err)),
			 0);
	assert_string_equal(fence_name(f), "fs");
	assert_int_equal(fence_capability(f), FENCE_CAP_AUTOMATIC);
	fence_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_csv_round_trip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_temp_files_are_not_data,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_existing_file_decides,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_file_is_unknown,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_lock_is_bounded,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_plain_ids_are_escaped,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_skip_sync, setup, teardown),
		cmocka_unit_test(test_url_forms),
	};

	return fence_conformance_run(&backend) +
	       cmocka_run_group_tests_name("fence fs", tests, NULL, NULL);
}
