/*
 * test_collect.c -- collect_evidence(): every return.json that survived in
 * a schedule's XCom dirs is read whole, whatever its size; a missing one
 * is no evidence, an unparsable one is evidence that is not valid.
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

#include "harness/run/collect.h"
#include "common/fsutil.h"

static char root[64];

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/fc-collect-XXXXXX");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_evidence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evidence_too_big, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
