/*
 * test_dl.c -- libpq and libcurl opened on first use (journal/dl*.c).
 *
 * A missing or wrong library must be a JOURNAL_UNAVAILABLE error naming
 * it, from the shims and from the adapters that use them, and a later
 * call with the library present must work (failures are not cached).  The
 * forwarders must pass arguments through unchanged, the variadic
 * curl_easy_setopt/getinfo by their option's type.  No server is needed:
 * everything here happens before a connection.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <libpq-fe.h>

#include "common/dl_curl.h"
#include "common/dl_pq.h"
#include "common/etcd_client.h"
#include "journal/journal.h"

static void test_missing_libpq(void **state)
{
	char err[512];
	journal *j = NULL;

	(void)state;
	setenv("FENCECERT_LIBPQ", "/nonexistent/libpq.so.5", 1);
	assert_int_equal(dl_pq_load(err, sizeof(err)), FC_JOURNAL_UNAVAILABLE);
	assert_non_null(strstr(err, "cannot load libpq (/nonexistent/libpq.so.5)"));
	assert_int_equal(journal_open("postgresql://127.0.0.1:1/x", &j, err,
				      sizeof(err)), FC_JOURNAL_UNAVAILABLE);
	assert_null(j);
	assert_non_null(strstr(err, "libpq"));
	/* the forwarders fail soft instead of calling through NULL */
	assert_null(PQconninfoParse("dbname=x", NULL));
	unsetenv("FENCECERT_LIBPQ");
}

static void test_wrong_library(void **state)
{
	char err[512];

	(void)state;
	/* a real library that is not libpq: named, and what it lacks */
	setenv("FENCECERT_LIBPQ", "libcurl.so.4", 1);
	assert_int_equal(dl_pq_load(err, sizeof(err)), FC_JOURNAL_UNAVAILABLE);
	assert_non_null(strstr(err, "libpq lacks PQ"));
	unsetenv("FENCECERT_LIBPQ");
}

static void test_libpq_forwarding(void **state)
{
	char err[512], *msg = NULL;
	PQconninfoOption *opts;
	int found = 0;

	(void)state;
	assert_int_equal(dl_pq_load(err, sizeof(err)), 0);
	opts = PQconninfoParse("dbname=fc user=alice port=5433", &msg);
	assert_non_null(opts);
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if ((strcmp(o->keyword, "user") == 0 &&
		     strcmp(o->val, "alice") == 0) ||
		    (strcmp(o->keyword, "port") == 0 &&
		     strcmp(o->val, "5433") == 0))
			found++;
	assert_int_equal(found, 2);
	PQconninfoFree(opts);
	assert_null(PQconninfoParse("no-equals-sign", &msg));
	assert_non_null(msg);
	PQfreemem(msg);
}

static void test_missing_libcurl(void **state)
{
	etcd_client *c = NULL;
	char err[512];

	(void)state;
	setenv("FENCECERT_LIBCURL", "/nonexistent/libcurl.so.4", 1);
	assert_int_equal(dl_curl_load(err, sizeof(err)), FC_JOURNAL_UNAVAILABLE);
	assert_non_null(strstr(err, "cannot load libcurl"));
	assert_int_equal(etcd_client_new("127.0.0.1:1", &c, err, sizeof(err)),
			 FC_JOURNAL_UNAVAILABLE);
	assert_null(c);
	assert_non_null(strstr(err, "libcurl"));
	assert_null(curl_easy_init());
	unsetenv("FENCECERT_LIBCURL");
}

static size_t sink(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

static void test_libcurl_forwarding(void **state)
{
	char err[512], *url = NULL, *e;
	long timeout = -1;
	CURL *h;

	(void)state;
	assert_int_equal(dl_curl_load(err, sizeof(err)), 0);
	h = curl_easy_init();
	assert_non_null(h);
	/* one option of each argument type: string, long, function, off_t */
	assert_int_equal(curl_easy_setopt(h, CURLOPT_URL,
					  "http://127.0.0.1:1/v3/kv/range"),
			 CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1500L),
			 CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink),
			 CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
					  (curl_off_t)1 << 40), CURLE_OK);
	/* a long passed where libcurl reads a long: an out-of-range value
	 * must come back as an error, not be read as garbage */
	assert_int_equal(curl_easy_setopt(h, CURLOPT_PORT, 70000L),
			 CURLE_BAD_FUNCTION_ARGUMENT);
	assert_int_equal(curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &url),
			 CURLE_OK);
	assert_string_equal(url, "http://127.0.0.1:1/v3/kv/range");
	assert_int_equal(curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &timeout),
			 CURLE_OK);
	assert_int_equal(timeout, 0);
	curl_easy_cleanup(h);
	e = curl_easy_escape(NULL, "a/b c", 0);
	assert_string_equal(e, "a%2Fb%20c");
	curl_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_libpq),
		cmocka_unit_test(test_wrong_library),
		cmocka_unit_test(test_libpq_forwarding),
		cmocka_unit_test(test_missing_libcurl),
		cmocka_unit_test(test_libcurl_forwarding),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
