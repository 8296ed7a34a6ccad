/*
 * fence_conformance.c -- the fence conformance suite (see the header).
 *
 * Each test gets a fresh temp directory and target and one open fence.
 * Claims about the target are checked with the observer, so a fence that
 * reports success but wrote nothing (or wrote twice) fails here.  The kill
 * test forks real processes that apply a large batch and SIGKILLs them at
 * seeded random moments spread over the whole apply, prepares the retry's
 * epoch, then requires "all rows and the fence, or neither" and a usable
 * target afterwards.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fences/fence.h"
#include "fences/target.h"
#include "journal/identity.h"
#include "tests/fence_conformance.h"

#define KILL_ROUNDS 15
#define KILL_ROWS 30000
#define BIG_ROWS 100000
#define DEFAULT_SEED 20260718u

struct conformance_batch {
	struct fence_batch b;
	struct fence_row *rows;
	char *arena;
	char op[80], intent[80];
};

struct ctx {
	const struct fence_conformance *c;
	char dir[CONFORMANCE_DIR_MAX];
	char url[CONFORMANCE_PATH_MAX + 16];
	fence *f;
};

/* ---- helpers shared with the backend tests ---- */

void conformance_id(const char *label, char out[80])
{
	char d[IDENTITY_DIGEST_LEN + 1];

	identity_buffer_digest(label, strlen(label), d);
	snprintf(out, 80, "%s", d);
}

struct conformance_batch *conformance_batch_new(const char *op,
						const char *intent,
						const char *prefix, size_t n)
{
	struct conformance_batch *cb = calloc(1, sizeof(*cb));
	size_t per = strlen(prefix) + 96, off = 0;

	assert_non_null(cb);
	cb->rows = calloc(n ? n : 1, sizeof(*cb->rows));
	cb->arena = malloc(n * per + 1);
	assert_non_null(cb->rows);
	assert_non_null(cb->arena);
	snprintf(cb->op, sizeof(cb->op), "%s", op);
	snprintf(cb->intent, sizeof(cb->intent), "%s", intent);
	for (size_t i = 0; i < n; i++) {
		cb->rows[i].row_key = cb->arena + off;
		off += (size_t)sprintf(cb->arena + off, "%s-%zu", prefix, i) + 1;
		cb->rows[i].payload = cb->arena + off;
		/* Commas, quotes and a newline: a CSV writer must quote. */
		off += (size_t)sprintf(cb->arena + off, "v%zu, \"q\"\nend", i)
		       + 1;
	}
	cb->b.operation_id = cb->op;
	cb->b.intent_digest = cb->intent;
	cb->b.table = NULL;
	cb->b.strategy = FENCE_APPEND;
	cb->b.rows = cb->rows;
	cb->b.nrows = n;
	return cb;
}

const struct fence_batch *conformance_batch(struct conformance_batch *cb)
{
	return &cb->b;
}

void conformance_batch_release(struct conformance_batch *cb)
{
	if (!cb)
		return;
	free(cb->rows);
	free(cb->arena);
	free(cb);
}

struct count {
	const char *op;
	long long rows, dup_keys;
	char *last_key;
	long long last_count;
};

static int count_rows(void *ctx, const char *key, const char *op, long long n)
{
	struct count *c = ctx;

	(void)key;
	if (!c->op || (op && strcmp(op, c->op) == 0))
		c->rows += n;
	return 0;
}

long long conformance_rows(const char *url, const char *table, const char *op)
{
	struct count c = { .op = op };
	char err[512];

	if (target_observe_rows(url, table, count_rows, &c, err, sizeof(err))) {
		print_error("observer: %s\n", err);
		return -1;
	}
	return c.rows;
}

static void close_key(struct count *c)
{
	if (c->last_key && c->last_count > 1)
		c->dup_keys++;
	free(c->last_key);
	c->last_key = NULL;
}

static int count_dups(void *ctx, const char *key, const char *op, long long n)
{
	struct count *c = ctx;

	(void)op;
	if (c->last_key && key && strcmp(c->last_key, key) == 0) {
		c->last_count += n;
		return 0;
	}
	close_key(c);
	c->last_key = key ? strdup(key) : NULL;
	c->last_count = n;
	return 0;
}

long long conformance_duplicate_keys(const char *url, const char *table)
{
	struct count c = { 0 };
	char err[512];
	int rc;

	rc = target_observe_rows(url, table, count_dups, &c, err, sizeof(err));
	close_key(&c);
	if (rc) {
		print_error("observer: %s\n", err);
		return -1;
	}
	return c.dup_keys;
}

void conformance_tempdir(char dir[CONFORMANCE_DIR_MAX])
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, CONFORMANCE_DIR_MAX, "%s/fencecert-test-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	/* Restore permissions a test took away so the walk can go on. */
	if (flag == FTW_DP || flag == FTW_D)
		chmod(path, 0700);
	remove(path);
	return 0;
}

void conformance_rmtree(const char *dir)
{
	chmod(dir, 0700);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- fixtures ---- */

/* A test's batch size, capped at what the backend takes in one commit. */
static size_t rows_for(const struct ctx *x, size_t wanted)
{
	return x->c->max_rows && x->c->max_rows < wanted ? x->c->max_rows
							 : wanted;
}

static int setup(void **state)
{
	struct ctx *x = calloc(1, sizeof(*x));
	char err[512];

	assert_non_null(x);
	x->c = *state;
	conformance_tempdir(x->dir);
	x->c->fresh_url(x->dir, x->url, sizeof(x->url));
	if (fence_open(x->url, &x->f, err, sizeof(err)) != 0) {
		print_error("fence_open '%s': %s\n", x->url, err);
		return -1;
	}
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *x = *state;

	fence_close(x->f);
	conformance_rmtree(x->dir);
	free(x);
	return 0;
}

static void expect_probe(fence *f, const char *op, enum fence_probe_answer a,
			 long long epoch, const char *intent, long long rows)
{
	struct fence_probe p;
	int rc = fence_probe(f, op, &p);

	if (rc)
		print_error("probe: %s\n", fence_errmsg(f));
	assert_int_equal(rc, 0);
	assert_int_equal(p.answer, a);
	if (a == FENCE_APPLIED) {
		assert_int_equal(p.epoch, epoch);
		assert_string_equal(p.intent_digest, intent);
		assert_int_equal(p.rows, rows);
	}
}

static void apply_ok(fence *f, long long epoch, const struct fence_batch *b)
{
	enum fence_outcome out = FENCE_OUTCOME_UNKNOWN;
	int rc = fence_apply(f, epoch, b, &out);

	if (rc)
		print_error("apply: %s\n", fence_errmsg(f));
	assert_int_equal(rc, 0);
	assert_int_equal(out, FENCE_PROVED_PRESENT);
}

static void prepare_ok(fence *f, const char *op, long long epoch)
{
	int rc = fence_prepare(f, op, epoch);

	if (rc)
		print_error("prepare: %s\n", fence_errmsg(f));
	assert_int_equal(rc, 0);
}

/* ---- the tests ---- */

static void test_apply_then_probe(void **state)
{
	struct ctx *x = *state;
	char op[80], intent[80];
	struct conformance_batch *cb;

	conformance_id("op apply", op);
	conformance_id("intent a", intent);
	cb = conformance_batch_new(op, intent, "k", 3);
	expect_probe(x->f, op, FENCE_ABSENT, 0, NULL, 0);
	prepare_ok(x->f, op, 1);
	expect_probe(x->f, op, FENCE_ABSENT, 0, NULL, 0);
	apply_ok(x->f, 1, conformance_batch(cb));
	expect_probe(x->f, op, FENCE_APPLIED, 1, intent, 3);
	assert_int_equal(conformance_rows(x->url, NULL, op), 3);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 3);
	conformance_batch_release(cb);
}

static void test_second_apply_already_applied(void **state)
{
	struct ctx *x = *state;
	char op[80], intent[80];
	struct conformance_batch *cb;
	enum fence_outcome out = FENCE_OUTCOME_UNKNOWN;

	conformance_id("op twice", op);
	conformance_id("intent a", intent);
	cb = conformance_batch_new(op, intent, "k", 5);
	prepare_ok(x->f, op, 1);
	apply_ok(x->f, 1, conformance_batch(cb));
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out),
			 FC_ALREADY_APPLIED);
	assert_int_equal(out, FENCE_PROVED_PRESENT);
	/* A retry with a newer lease still learns "present", not "stale". */
	prepare_ok(x->f, op, 2);
	out = FENCE_OUTCOME_UNKNOWN;
	assert_int_equal(fence_apply(x->f, 2, conformance_batch(cb), &out),
			 FC_ALREADY_APPLIED);
	assert_int_equal(out, FENCE_PROVED_PRESENT);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 5);
	assert_int_equal(conformance_duplicate_keys(x->url, NULL), 0);
	expect_probe(x->f, op, FENCE_APPLIED, 1, intent, 5);
	conformance_batch_release(cb);
}

static void test_other_intent_conflicts(void **state)
{
	struct ctx *x = *state;
	char op[80], intent[80], other[80];
	struct conformance_batch *a, *b;
	enum fence_outcome out = FENCE_OUTCOME_UNKNOWN;

	conformance_id("op conflict", op);
	conformance_id("intent a", intent);
	conformance_id("intent b", other);
	a = conformance_batch_new(op, intent, "a", 4);
	b = conformance_batch_new(op, other, "b", 7);
	prepare_ok(x->f, op, 1);
	apply_ok(x->f, 1, conformance_batch(a));
	prepare_ok(x->f, op, 2);
	assert_int_equal(fence_apply(x->f, 2, conformance_batch(b), &out),
			 FC_INTENT_CONFLICT);
	assert_int_equal(out, FENCE_PROVED_PRESENT);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 4);
	expect_probe(x->f, op, FENCE_APPLIED, 1, intent, 4);
	conformance_batch_release(a);
	conformance_batch_release(b);
}

static void test_stale_apply_refused(void **state)
{
	struct ctx *x = *state;
	char op[80], intent[80], err[512];
	struct conformance_batch *cb;
	enum fence_outcome out = FENCE_OUTCOME_UNKNOWN;
	fence *newer;

	conformance_id("op stale", op);
	conformance_id("intent a", intent);
	cb = conformance_batch_new(op, intent, "k", 6);
	/* The zombie prepared 1; the retry, on its own connection, 2. */
	prepare_ok(x->f, op, 1);
	assert_int_equal(fence_open(x->url, &newer, err, sizeof(err)), 0);
	prepare_ok(newer, op, 2);
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out),
			 FC_STALE_EPOCH);
	assert_int_equal(out, FENCE_PROVED_ABSENT);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 0);
	expect_probe(newer, op, FENCE_ABSENT, 0, NULL, 0);
	/* The holder of the newest epoch still can. */
	apply_ok(newer, 2, conformance_batch(cb));
	expect_probe(x->f, op, FENCE_APPLIED, 2, intent, 6);
	fence_close(newer);
	conformance_batch_release(cb);
}

static void test_stale_prepare_refused(void **state)
{
	struct ctx *x = *state;
	char op[80];

	conformance_id("op prepare", op);
	prepare_ok(x->f, op, 2);
	assert_int_equal(fence_prepare(x->f, op, 1), FC_STALE_EPOCH);
	prepare_ok(x->f, op, 2); /* idempotent */
	prepare_ok(x->f, op, 5);
	assert_int_equal(fence_prepare(x->f, op, 4), FC_STALE_EPOCH);
	expect_probe(x->f, op, FENCE_ABSENT, 0, NULL, 0);
}

static void test_apply_without_prepare_records_epoch(void **state)
{
	struct ctx *x = *state;
	char op[80], intent[80];
	struct conformance_batch *cb;

	conformance_id("op unprepared", op);
	conformance_id("intent a", intent);
	cb = conformance_batch_new(op, intent, "k", 2);
	apply_ok(x->f, 3, conformance_batch(cb));
	/* The apply's epoch is now the fencing token. */
	assert_int_equal(fence_prepare(x->f, op, 2), FC_STALE_EPOCH);
	expect_probe(x->f, op, FENCE_APPLIED, 3, intent, 2);
	conformance_batch_release(cb);
}

static int dir_entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void test_probe_unknown_op_is_absent(void **state)
{
	struct ctx *x = *state;
	char op[80], other[80], intent[80];
	struct conformance_batch *cb;
	struct stat st;

	conformance_id("op never", op);
	conformance_id("op other", other);
	conformance_id("intent a", intent);
	/* On a target nobody wrote yet, and without creating it. */
	expect_probe(x->f, op, FENCE_ABSENT, 0, NULL, 0);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 0);
	/* The temp dir is still empty: probing wrote nothing. */
	assert_int_equal(dir_entries(x->dir), 0);
	cb = conformance_batch_new(other, intent, "k", 1);
	apply_ok(x->f, 1, conformance_batch(cb));
	expect_probe(x->f, op, FENCE_ABSENT, 0, NULL, 0);
	assert_int_equal(stat(x->dir, &st), 0);
	conformance_batch_release(cb);
}

static void test_empty_batch(void **state)
{
	struct ctx *x = *state;
	char op[80], intent[80];
	struct conformance_batch *cb;
	enum fence_outcome out;

	conformance_id("op empty", op);
	conformance_id("intent a", intent);
	cb = conformance_batch_new(op, intent, "k", 0);
	prepare_ok(x->f, op, 1);
	apply_ok(x->f, 1, conformance_batch(cb));
	expect_probe(x->f, op, FENCE_APPLIED, 1, intent, 0);
	assert_int_equal(fence_apply(x->f, 1, conformance_batch(cb), &out),
			 FC_ALREADY_APPLIED);
	conformance_batch_release(cb);
}

static void test_invalid_requests(void **state)
{
	struct ctx *x = *state;
	char op[80], intent[80];
	struct conformance_batch *cb;
	struct fence_batch b;
	enum fence_outcome out = FENCE_OUTCOME_UNKNOWN;

	conformance_id("op invalid", op);
	conformance_id("intent a", intent);
	cb = conformance_batch_new(op, intent, "k", 2);
	b = *conformance_batch(cb);
	assert_int_equal(fence_prepare(x->f, "has space", 1), FC_USAGE);
	assert_int_equal(fence_prepare(x->f, op, 0), FC_USAGE);
	b.table = "events; DROP TABLE x";
	assert_int_equal(fence_apply(x->f, 1, &b, &out), FC_USAGE);
	assert_int_equal(out, FENCE_PROVED_ABSENT);
	b.table = "fencecert_fence";
	assert_int_equal(fence_apply(x->f, 1, &b, &out), FC_USAGE);
	b.table = NULL;
	b.intent_digest = "";
	assert_int_equal(fence_apply(x->f, 1, &b, &out), FC_USAGE);
	assert_true(strlen(fence_errmsg(x->f)) > 0);
	expect_probe(x->f, op, FENCE_ABSENT, 0, NULL, 0);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 0);
	conformance_batch_release(cb);
}

/* fence.h invariant 6: the in-doubt calls work where the feature is
 * claimed and are refused, changing nothing, where it is not; and a
 * hands-off probe of an operation nobody touched is still decisive. */
static void test_in_doubt_feature(void **state)
{
	struct ctx *x = *state;
	int has = (fence_features(x->f) & FENCE_HAS_IN_DOUBT) != 0;
	int want = has ? 0 : FC_USAGE;
	char op[80];
	int n = -1;

	conformance_id("op in doubt", op);
	assert_int_equal(fence_in_doubt(x->f, op, &n), want);
	assert_int_equal(n, 0);
	if (!has)
		assert_true(strlen(fence_errmsg(x->f)) > 0);
	n = -1;
	assert_int_equal(fence_resolve_in_doubt(x->f, op, 1, &n), want);
	assert_int_equal(n, 0);
	assert_int_equal(fence_in_doubt(x->f, "has space", &n), FC_USAGE);
	fence_hands_off(x->f);
	expect_probe(x->f, op, FENCE_ABSENT, 0, NULL, 0);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 0);
}

static void check_unreachable(const char *url)
{
	char op[80], intent[80], err[512];
	struct conformance_batch *cb;
	enum fence_outcome out = FENCE_OUTCOME_UNKNOWN;
	struct fence_probe p;
	fence *f;

	conformance_id("op unreachable", op);
	conformance_id("intent a", intent);
	cb = conformance_batch_new(op, intent, "k", 3);
	assert_int_equal(fence_open(url, &f, err, sizeof(err)), 0);
	assert_int_equal(fence_prepare(f, op, 1), FC_FENCE_UNAVAILABLE);
	assert_int_equal(fence_apply(f, 1, conformance_batch(cb), &out),
			 FC_FENCE_UNAVAILABLE);
	assert_int_equal(out, FENCE_PROVED_ABSENT);
	/* Never ABSENT: an unreachable target proves nothing. */
	assert_int_not_equal(fence_probe(f, op, &p), 0);
	assert_int_equal(p.answer, FENCE_UNKNOWN);
	assert_true(strlen(fence_errmsg(f)) > 0);
	fence_close(f);
	conformance_batch_release(cb);
}

static void test_unreachable_target(void **state)
{
	struct ctx *x = *state;
	char url[CONFORMANCE_PATH_MAX + 16];

	x->c->unreachable_url(x->dir, url, sizeof(url));
	check_unreachable(url);
	if (geteuid() != 0) {
		/* Permissions stop only the unprivileged. */
		assert_int_equal(chmod(x->dir, 0), 0);
		check_unreachable(x->url);
		assert_int_equal(chmod(x->dir, 0700), 0);
	}
}

static void test_replace(void **state)
{
	struct ctx *x = *state;
	char op1[80], op2[80], intent[80];
	struct conformance_batch *a, *b;
	struct fence_row rows[2] = { { "k-1", "new1" }, { "k-9", "new9" } };
	struct fence_batch rb;
	enum fence_outcome out = FENCE_OUTCOME_UNKNOWN;
	int rc;

	conformance_id("op base", op1);
	conformance_id("op replace", op2);
	conformance_id("intent a", intent);
	a = conformance_batch_new(op1, intent, "k", 3); /* k-0 k-1 k-2 */
	b = conformance_batch_new(op2, intent, "unused", 0);
	apply_ok(x->f, 1, conformance_batch(a));
	rb = *conformance_batch(b);
	rb.strategy = FENCE_REPLACE;
	rb.rows = rows;
	rb.nrows = 2;
	rc = fence_apply(x->f, 1, &rb, &out);
	if (!x->c->supports_replace) {
		assert_int_equal(rc, FC_USAGE);
		assert_int_equal(out, FENCE_PROVED_ABSENT);
		assert_int_equal(conformance_rows(x->url, NULL, NULL), 3);
		expect_probe(x->f, op2, FENCE_ABSENT, 0, NULL, 0);
		goto out;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(out, FENCE_PROVED_PRESENT);
	/* k-1 moved to op2, k-9 is new, k-0 and k-2 stay with op1. */
	assert_int_equal(conformance_rows(x->url, NULL, op1), 2);
	assert_int_equal(conformance_rows(x->url, NULL, op2), 2);
	assert_int_equal(conformance_duplicate_keys(x->url, NULL), 0);
	expect_probe(x->f, op2, FENCE_APPLIED, 1, intent, 2);
	/* Replaying the replace is refused and deletes nothing. */
	assert_int_equal(fence_apply(x->f, 1, &rb, &out), FC_ALREADY_APPLIED);
	assert_int_equal(conformance_rows(x->url, NULL, NULL), 4);
out:
	conformance_batch_release(a);
	conformance_batch_release(b);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_big_batch(void **state)
{
	struct ctx *x = *state;
	size_t n = rows_for(x, BIG_ROWS);
	char op[80], intent[80];
	struct conformance_batch *cb;
	double t;

	conformance_id("op big", op);
	conformance_id("intent a", intent);
	cb = conformance_batch_new(op, intent, "row", n);
	prepare_ok(x->f, op, 1);
	t = now_s();
	apply_ok(x->f, 1, conformance_batch(cb));
	t = now_s() - t;
	print_message("[ info     ] %s: %zu rows applied in %.3f s\n",
		      x->c->name, n, t);
	expect_probe(x->f, op, FENCE_APPLIED, 1, intent, (long long)n);
	assert_int_equal(conformance_rows(x->url, NULL, op), (long long)n);
	assert_int_equal(conformance_duplicate_keys(x->url, NULL), 0);
	conformance_batch_release(cb);
}

/* Two processes race to apply the same operation: one wins, once.  The
 * other finds it applied -- or, with a fence that has in-doubt
 * transactions, may have had its own rolled back between PREPARE and
 * COMMIT PREPARED by the winner's apply, which first ends any prepared
 * one of the operation (fence_pg.c, invariant 5): then its outcome is
 * unknown, and the rows are still there once. */
static void test_concurrent_apply(void **state)
{
	struct ctx *x = *state;
	char op[80], intent[80];
	struct conformance_batch *cb;
	int won = 0, already = 0, unknown = 0;
	int in_doubt = (fence_features(x->f) & FENCE_HAS_IN_DOUBT) != 0;
	pid_t pid[2];

	conformance_id("op race", op);
	conformance_id("intent a", intent);
	cb = conformance_batch_new(op, intent, "k", 2000);
	prepare_ok(x->f, op, 1);
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			enum fence_outcome out;
			char err[512];
			fence *f;
			int rc;

			if (fence_open(x->url, &f, err, sizeof(err)))
				_exit(10);
			rc = fence_apply(f, 1, conformance_batch(cb), &out);
			_exit(rc == 0 ? 0 : rc == FC_ALREADY_APPLIED ? 1 :
			      rc == FC_ERR_COMMIT_UNKNOWN ? 2 : 20);
		}
	}
	for (int i = 0; i < 2; i++) {
		int st;

		assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
		assert_true(WIFEXITED(st));
		won += WEXITSTATUS(st) == 0;
		already += WEXITSTATUS(st) == 1;
		unknown += WEXITSTATUS(st) == 2;
	}
	assert_int_equal(won, 1);
	assert_int_equal(already + (in_doubt ? unknown : 0), 1);
	assert_int_equal(conformance_rows(x->url, NULL, op), 2000);
	expect_probe(x->f, op, FENCE_APPLIED, 1, intent, 2000);
	conformance_batch_release(cb);
}

/*
 * Fork a process that opens the fence, prepares and applies b.  When
 * timing_fd >= 0 it writes there the CLOCK_MONOTONIC times at which the
 * apply started and returned, so the caller can aim its kills.
 */
static pid_t spawn_apply(const char *url, const struct fence_batch *b,
			 long long epoch, int timing_fd)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		enum fence_outcome out;
		char err[512];
		double t[2];
		fence *f;
		int rc;

		if (fence_open(url, &f, err, sizeof(err)) ||
		    fence_prepare(f, b->operation_id, epoch))
			_exit(10);
		t[0] = now_s();
		rc = fence_apply(f, epoch, b, &out);
		t[1] = now_s();
		if (timing_fd >= 0 && write(timing_fd, t, sizeof(t)) !=
		    (ssize_t)sizeof(t))
			_exit(11);
		_exit(rc == 0 ? 0 : 20);
	}
	return pid;
}

static unsigned test_seed(void)
{
	const char *s = getenv("FENCECERT_TEST_SEED");

	return s && *s ? (unsigned)strtoul(s, NULL, 10) : DEFAULT_SEED;
}

/*
 * After a kill, with the retry's epoch already prepared: all rows and the
 * fence, or neither; never UNKNOWN.  The prepare comes first because what
 * the dead process sent may still be landing: a PostgreSQL backend
 * finishes a COMMIT it received, an etcd txn in the pipeline is applied
 * after its sender died.  Only the newer epoch makes sure it no longer
 * can; counting rows before that compares two reads across a write.
 */
static int check_after_kill(fence *f, const char *url,
			    struct conformance_batch *cb)
{
	const struct fence_batch *b = conformance_batch(cb);
	struct fence_probe p;
	long long rows = conformance_rows(url, NULL, b->operation_id);
	int rc = fence_probe(f, b->operation_id, &p);

	if (rc)
		print_error("probe after kill: %s\n", fence_errmsg(f));
	assert_int_equal(rc, 0);
	assert_int_not_equal(p.answer, FENCE_UNKNOWN);
	if (p.answer == FENCE_APPLIED) {
		assert_int_equal(p.rows, (long long)b->nrows);
		assert_int_equal(rows, (long long)b->nrows);
		return 1;
	}
	assert_int_equal(rows, 0);
	return 0;
}

/* One kill round on a target of its own (so observing it stays cheap). */
static int kill_round(struct ctx *x, int round, double at, const char *intent)
{
	char sub[CONFORMANCE_PATH_MAX], url[CONFORMANCE_PATH_MAX + 16];
	char op[80], label[32], err[512];
	struct conformance_batch *cb;
	enum fence_outcome out;
	fence *f;
	int st, was;
	pid_t pid;

	snprintf(sub, sizeof(sub), "%s/kill-%d", x->dir, round);
	assert_int_equal(mkdir(sub, 0700), 0);
	x->c->fresh_url(sub, url, sizeof(url));
	assert_int_equal(fence_open(url, &f, err, sizeof(err)), 0);
	snprintf(label, sizeof(label), "op kill %d", round);
	conformance_id(label, op);
	cb = conformance_batch_new(op, intent, label + 3,
				   rows_for(x, KILL_ROWS));
	pid = spawn_apply(url, conformance_batch(cb), 1, -1);
	usleep((useconds_t)(at * 1e6));
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	prepare_ok(f, op, 2);
	was = check_after_kill(f, url, cb);
	/* The target stays usable: the retry finishes the job, once. */
	assert_int_equal(fence_apply(f, 2, conformance_batch(cb), &out),
			 was ? FC_ALREADY_APPLIED : 0);
	assert_int_equal(out, FENCE_PROVED_PRESENT);
	assert_int_equal(conformance_rows(url, NULL, op),
			 (long long)conformance_batch(cb)->nrows);
	assert_int_equal(conformance_duplicate_keys(url, NULL), 0);
	fence_close(f);
	conformance_batch_release(cb);
	return was;
}

static void test_kill_during_apply_is_atomic(void **state)
{
	struct ctx *x = *state;
	unsigned seed = test_seed(), rnd = seed;
	char intent[80], op[80];
	int applied = 0, absent = 0, st;
	double from, span, lo, hi;
	pid_t pid;

	conformance_id("intent a", intent);
	/* Calibrate: when, after fork(), the apply runs on this machine. */
	conformance_id("op calibrate", op);
	{
		struct conformance_batch *cb =
			conformance_batch_new(op, intent, "cal",
					      rows_for(x, KILL_ROWS));
		double t[2], t0 = now_s();
		int fds[2];

		assert_int_equal(pipe(fds), 0);
		pid = spawn_apply(x->url, conformance_batch(cb), 1, fds[1]);
		close(fds[1]);
		assert_int_equal(read(fds[0], t, sizeof(t)), sizeof(t));
		close(fds[0]);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		from = t[0] - t0;
		span = t[1] - t[0];
		conformance_batch_release(cb);
	}
	print_message("[ info     ] %s: kill seed %u, apply runs %.3f s after "
		      "fork for %.3f s\n", x->c->name, seed, from, span);
	/* First spread the kills from before the apply to well after it;
	 * then close in on the commit: between the latest kill that found
	 * nothing and the earliest that found everything is where a fence
	 * that is not atomic with its rows shows. */
	lo = from * 0.5;
	hi = from + span * 1.5;
	for (int round = 0; round < KILL_ROUNDS; round++) {
		double u = rand_r(&rnd) / ((double)RAND_MAX + 1), at;
		int was;

		if (round < KILL_ROUNDS / 3 || lo >= hi)
			at = from * 0.5 + (from * 0.5 + span * 1.5) * u;
		else
			at = lo + (hi - lo) * u;
		was = kill_round(x, round, at, intent);
		if (was && at < hi)
			hi = at;
		if (!was && at > lo)
			lo = at;
		applied += was;
		absent += !was;
	}
	print_message("[ info     ] %s: after %d kills: %d applied, %d absent\n",
		      x->c->name, KILL_ROUNDS, applied, absent);
}

int fence_conformance_run(const struct fence_conformance *c)
{
	void *b = (void *)c;
	char name[64];
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, b)
		T(test_apply_then_probe),
		T(test_second_apply_already_applied),
		T(test_other_intent_conflicts),
		T(test_stale_apply_refused),
		T(test_stale_prepare_refused),
		T(test_apply_without_prepare_records_epoch),
		T(test_probe_unknown_op_is_absent),
		T(test_empty_batch),
		T(test_invalid_requests),
		T(test_in_doubt_feature),
		T(test_unreachable_target),
		T(test_replace),
		T(test_big_batch),
		T(test_concurrent_apply),
		T(test_kill_during_apply_is_atomic),
#undef T
	};

	snprintf(name, sizeof(name), "fence conformance: %s", c->name);
	return cmocka_run_group_tests_name(name, tests, NULL, NULL);
}
