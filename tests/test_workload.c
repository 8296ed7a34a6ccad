/*
 * test_workload.c -- workload JSON and CSV source: id test vectors (computed
 * independently with Python's hashlib), field order, CSV quoting, bad
 * headers and records with line numbers, missing keys, source changes.
 * Files live in a mkdtemp directory; the working directory is elsewhere so
 * "source relative to the workload file" is exercised.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "routes/workload.h"

/* Vectors for the pinned example below (see docs/routes.md). */
#define VEC_OPERATION_ID \
	"sha256:10a4bb5065a04f9958023ed4d24e4ce2300752fa7d92cee155facac36047e2e8"
#define VEC_SOURCE \
	"sha256:312fa427e0be583073cd240566d5746be130d5afc7970fbac802964381d7b805"
#define VEC_INTENT \
	"sha256:a9595312c4a37f75e971c06e1885d1f7149e0e6bde9acec318fbf33f326eb732"

static const char pinned_json[] =
	"{\"identity\": {\"release\": \"r1\", \"deployment\": \"d1\", \"dag\": \"orders\",\n"
	"  \"run\": \"2026-11-01\", \"workload\": \"load_orders\", \"partition\": \"p0\",\n"
	"  \"interval\": \"2026-11-01/2026-11-02\", \"target\": \"events\"},\n"
	" \"intent\": {\"pack\": \"pk1\", \"strategy\": \"append\",\n"
	"  \"target_contract\": \"events.v1\", \"schema\": \"s1\"},\n"
	" \"source\": \"partition-p0.csv\", \"table\": \"events\"}\n";
static const char pinned_csv[] = "row_key,payload\nk1,hello\nk2,\"a,b\"\n";

static char dir[64];
static char wpath[128];

static void put(const char *name, const char *text, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void put_str(const char *name, const char *text)
{
	put(name, text, strlen(text));
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/fc-workload-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(wpath, sizeof(wpath), "%s/workload.json", dir);
	return chdir("/");
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Load and expect failure; returns the message for further checks. */
static const char *load_fails(int want)
{
	static char err[512];
	workload *w = NULL;

	err[0] = '\0';
	assert_int_equal(workload_load(wpath, &w, err, sizeof(err)), want);
	assert_null(w);
	assert_true(err[0] != '\0');
	return err;
}

static const char *rows_fail(void)
{
	static char err[512];
	char lerr[256];
	const struct fence_row *rows;
	size_t n;
	workload *w;

	assert_int_equal(workload_load(wpath, &w, lerr, sizeof(lerr)), 0);
	assert_int_equal(workload_rows(w, &rows, &n, err, sizeof(err)), FC_USAGE);
	/* a failed parse keeps failing the same way */
	assert_int_equal(workload_rows(w, &rows, &n, lerr, sizeof(lerr)), FC_USAGE);
	assert_string_equal(err, lerr);
	workload_free(w);
	return err;
}

static void test_pinned_vectors(void **state)
{
	char err[256], fd[IDENTITY_DIGEST_LEN + 1];
	const struct fence_row *rows;
	workload *w;
	size_t n;

	(void)state;
	put_str("workload.json", pinned_json);
	put_str("partition-p0.csv", pinned_csv);
	assert_int_equal(workload_load(wpath, &w, err, sizeof(err)), 0);
	assert_string_equal(workload_operation_id(w), VEC_OPERATION_ID);
	assert_string_equal(workload_source_digest(w), VEC_SOURCE);
	assert_string_equal(workload_intent_digest(w), VEC_INTENT);
	/* the in-memory digest is the file digest the other routes compute */
	assert_int_equal(identity_file_digest(workload_source_path(w), fd), 0);
	assert_string_equal(fd, VEC_SOURCE);
	assert_string_equal(workload_table(w), "events");
	assert_int_equal(workload_strategy(w), FENCE_APPEND);
	assert_string_equal(workload_strategy_name(w), "append");
	assert_int_equal(workload_rows(w, &rows, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].row_key, "k1");
	assert_string_equal(rows[0].payload, "hello");
	assert_string_equal(rows[1].row_key, "k2");
	assert_string_equal(rows[1].payload, "a,b");
	workload_free(w);
}

static void test_field_order_and_extra_keys(void **state)
{
	char err[256];
	workload *w;

	(void)state;
	put_str("partition-p0.csv", pinned_csv);
	put_str("workload.json",
		"{\"table\": \"events\", \"x_python_extension\": [1, 2],\n"
		" \"source\": \"partition-p0.csv\",\n"
		" \"intent\": {\"schema\": \"s1\", \"target_contract\": \"events.v1\",\n"
		"  \"strategy\": \"append\", \"pack\": \"pk1\"},\n"
		" \"identity\": {\"target\": \"events\", \"interval\": \"2026-11-01/2026-11-02\",\n"
		"  \"partition\": \"p0\", \"workload\": \"load_orders\", \"run\": \"2026-11-01\",\n"
		"  \"dag\": \"orders\", \"deployment\": \"d1\", \"release\": \"r1\"}}\n");
	assert_int_equal(workload_load(wpath, &w, err, sizeof(err)), 0);
	assert_string_equal(workload_operation_id(w), VEC_OPERATION_ID);
	assert_string_equal(workload_intent_digest(w), VEC_INTENT);
	workload_free(w);
}

static void test_source_change_changes_intent_only(void **state)
{
	char err[256], op[IDENTITY_DIGEST_LEN + 1], intent[IDENTITY_DIGEST_LEN + 1];
	workload *w;

	(void)state;
	put_str("workload.json", pinned_json);
	put_str("partition-p0.csv", pinned_csv);
	assert_int_equal(workload_load(wpath, &w, err, sizeof(err)), 0);
	strcpy(op, workload_operation_id(w));
	strcpy(intent, workload_intent_digest(w));
	workload_free(w);

	put_str("partition-p0.csv", "row_key,payload\nk1,hello\nk2,\"a,c\"\n");
	assert_int_equal(workload_load(wpath, &w, err, sizeof(err)), 0);
	assert_string_equal(workload_operation_id(w), op);
	assert_string_not_equal(workload_intent_digest(w), intent);
	assert_string_not_equal(workload_source_digest(w), VEC_SOURCE);
	workload_free(w);
}

static void test_csv_quoting(void **state)
{
	static const char csv[] =
		"\xef\xbb\xbfrow_key,payload\r\n"
		"a,plain\r\n"
		"\"b,1\",\"comma, inside\"\r\n"
		"c,\"say \"\"hi\"\"\"\n"
		"\n"
		"d,\"two\nlines\"\n"
		"e,\n"
		"f,\"\"\n"
		"g,last without newline";
	char err[256];
	const struct fence_row *rows;
	workload *w;
	size_t n;

	(void)state;
	put_str("workload.json", pinned_json);
	put_str("partition-p0.csv", csv);
	assert_int_equal(workload_load(wpath, &w, err, sizeof(err)), 0);
	assert_int_equal(workload_rows(w, &rows, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 7);
	assert_string_equal(rows[0].row_key, "a");
	assert_string_equal(rows[0].payload, "plain");
	assert_string_equal(rows[1].row_key, "b,1");
	assert_string_equal(rows[1].payload, "comma, inside");
	assert_string_equal(rows[2].payload, "say \"hi\"");
	assert_string_equal(rows[3].row_key, "d");
	assert_string_equal(rows[3].payload, "two\nlines");
	assert_string_equal(rows[4].payload, "");
	assert_string_equal(rows[5].payload, "");
	assert_string_equal(rows[6].row_key, "g");
	assert_string_equal(rows[6].payload, "last without newline");
	workload_free(w);
}

static void test_bad_header(void **state)
{
	const char *err;

	(void)state;
	put_str("workload.json", pinned_json);
	put_str("partition-p0.csv", "key,payload\nk1,v\n");
	err = rows_fail();
	assert_non_null(strstr(err, "partition-p0.csv"));
	assert_non_null(strstr(err, "line 1"));
	assert_non_null(strstr(err, "header"));

	put_str("partition-p0.csv", "row_key,payload,extra\nk1,v,x\n");
	err = rows_fail();
	assert_non_null(strstr(err, "line 1"));

	put_str("partition-p0.csv", "");
	err = rows_fail();
	assert_non_null(strstr(err, "header"));
}

static void test_bad_records_name_the_line(void **state)
{
	const char *err;

	(void)state;
	put_str("workload.json", pinned_json);
	/* the quoted newline counts: the short record "k3" is on line 5 */
	put_str("partition-p0.csv", "row_key,payload\nk1,\"x\ny\"\nk2,v\nk3\n");
	err = rows_fail();
	assert_non_null(strstr(err, "line 5"));
	assert_non_null(strstr(err, "found 1"));

	put_str("partition-p0.csv", "row_key,payload\nk1,\"never closed\n");
	err = rows_fail();
	assert_non_null(strstr(err, "line 2"));
	assert_non_null(strstr(err, "not closed"));

	put_str("partition-p0.csv", "row_key,payload\nk1,ab\"c\n");
	err = rows_fail();
	assert_non_null(strstr(err, "quote"));

	put_str("partition-p0.csv", "row_key,payload\nk1,\"ab\"c\n");
	err = rows_fail();
	assert_non_null(strstr(err, "closing quote"));

	put_str("partition-p0.csv", "row_key,payload\n,empty key\n");
	err = rows_fail();
	assert_non_null(strstr(err, "row_key"));

	put("partition-p0.csv", "row_key,payload\nk\0,v\n", 20);
	err = rows_fail();
	assert_non_null(strstr(err, "NUL"));
}

static void test_missing_and_bad_keys(void **state)
{
	const char *err;

	(void)state;
	put_str("partition-p0.csv", pinned_csv);

	put_str("workload.json",
		"{\"identity\": {}, \"intent\": {}, \"source\": \"partition-p0.csv\"}");
	err = load_fails(FC_USAGE);
	assert_non_null(strstr(err, "table"));

	put_str("workload.json",
		"{\"identity\": {\"release\": \"r1\", \"deployment\": \"d1\",\n"
		" \"run\": \"x\", \"workload\": \"w\", \"partition\": \"p\",\n"
		" \"interval\": \"i\", \"target\": \"t\"},\n"
		" \"intent\": {\"pack\": \"p\", \"strategy\": \"append\",\n"
		" \"target_contract\": \"c\", \"schema\": \"s\"},\n"
		" \"source\": \"partition-p0.csv\", \"table\": \"events\"}");
	err = load_fails(FC_USAGE);
	assert_non_null(strstr(err, "\"dag\""));

	put_str("workload.json",
		"{\"identity\": {\"release\": \"r1\", \"deployment\": \"d1\", \"dag\": \"d\",\n"
		" \"run\": \"x\", \"workload\": \"w\", \"partition\": 7,\n"
		" \"interval\": \"i\", \"target\": \"t\"},\n"
		" \"intent\": {\"pack\": \"p\", \"strategy\": \"append\",\n"
		" \"target_contract\": \"c\", \"schema\": \"s\"},\n"
		" \"source\": \"partition-p0.csv\", \"table\": \"events\"}");
	err = load_fails(FC_USAGE);
	assert_non_null(strstr(err, "partition"));

	put_str("workload.json",
		"{\"identity\": {\"release\": \"r1\", \"deployment\": \"d1\", \"dag\": \"d\",\n"
		" \"run\": \"x\", \"workload\": \"w\", \"partition\": \"p\",\n"
		" \"interval\": \"i\", \"target\": \"t\"},\n"
		" \"intent\": {\"pack\": \"p\", \"strategy\": \"upsert\",\n"
		" \"target_contract\": \"c\", \"schema\": \"s\"},\n"
		" \"source\": \"partition-p0.csv\", \"table\": \"events\"}");
	err = load_fails(FC_USAGE);
	assert_non_null(strstr(err, "upsert"));

	/* the try number must never enter an identity */
	put_str("workload.json",
		"{\"identity\": {\"release\": \"r1\", \"deployment\": \"d1\", \"dag\": \"d\",\n"
		" \"run\": \"x\", \"workload\": \"w\", \"partition\": \"p\",\n"
		" \"interval\": \"i\", \"target\": \"t\", \"try_number\": \"2\"},\n"
		" \"intent\": {\"pack\": \"p\", \"strategy\": \"append\",\n"
		" \"target_contract\": \"c\", \"schema\": \"s\"},\n"
		" \"source\": \"partition-p0.csv\", \"table\": \"events\"}");
	err = load_fails(FC_USAGE);
	assert_non_null(strstr(err, "try_number"));

	put_str("workload.json",
		"{\"identity\": {\"release\": \"r1\", \"deployment\": \"d1\", \"dag\": \"d\",\n"
		" \"run\": \"x\", \"workload\": \"w\", \"partition\": \"p\",\n"
		" \"interval\": \"i\", \"target\": \"t\"},\n"
		" \"intent\": {\"pack\": \"p\", \"strategy\": \"append\",\n"
		" \"target_contract\": \"c\", \"schema\": \"s\"},\n"
		" \"source\": \"partition-p0.csv\", \"table\": \"ev; drop\"}");
	err = load_fails(FC_USAGE);
	assert_non_null(strstr(err, "table"));

	put_str("workload.json", "{\"identity\": ");
	err = load_fails(FC_USAGE);
	assert_non_null(strstr(err, "workload.json"));

	put_str("workload.json", pinned_json);
	{
		char path[256];

		snprintf(path, sizeof(path), "%s/partition-p0.csv", dir);
		assert_int_equal(unlink(path), 0);
	}
	err = load_fails(FC_USAGE);
	assert_non_null(strstr(err, "partition-p0.csv"));
}

static void test_hundred_thousand_rows(void **state)
{
	char path[256], err[256];
	const struct fence_row *rows;
	workload *w;
	size_t n;
	FILE *f;

	(void)state;
	put_str("workload.json", pinned_json);
	snprintf(path, sizeof(path), "%s/partition-p0.csv", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("row_key,payload\n", f);
	for (int i = 0; i < 100000; i++)
		fprintf(f, "p0-%06d,\"payload %d, quoted\"\n", i, i);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(workload_load(wpath, &w, err, sizeof(err)), 0);
	assert_int_equal(workload_rows(w, &rows, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 100000);
	assert_string_equal(rows[99999].row_key, "p0-099999");
	assert_string_equal(rows[99999].payload, "payload 99999, quoted");
	workload_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pinned_vectors),
		cmocka_unit_test(test_field_order_and_extra_keys),
		cmocka_unit_test(test_source_change_changes_intent_only),
		cmocka_unit_test(test_csv_quoting),
		cmocka_unit_test(test_bad_header),
		cmocka_unit_test(test_bad_records_name_the_line),
		cmocka_unit_test(test_missing_and_bad_keys),
		cmocka_unit_test(test_hundred_thousand_rows),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
