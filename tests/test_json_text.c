/*
 * test_json_text.c -- common/json_text.c writes what jansson writes: the
 * same bytes as json_dump_callback() for every kind of value, escape and
 * separator, through its buffer and past it, and refuses what jansson
 * refuses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_text.h"

struct collected {
	char *buf;
	size_t len;
	int calls;
	int fail_at; /* the callback fails on this call (1-based); 0: never */
};

static int collect(const char *p, size_t n, void *ctx)
{
	struct collected *c = ctx;

	if (++c->calls == c->fail_at)
		return -1;
	c->buf = realloc(c->buf, c->len + n + 1);
	assert_non_null(c->buf);
	memcpy(c->buf + c->len, p, n);
	c->len += n;
	c->buf[c->len] = '\0';
	return 0;
}

/* v written both ways, compact and not, by both entry points: equal. */
static void same_as_jansson(const json_t *v)
{
	for (int compact = 0; compact <= 1; compact++) {
		size_t flags = JSON_PRESERVE_ORDER | (compact ? JSON_COMPACT : 0);
		char *want = json_dumps(v, flags), *got;
		struct collected c = { 0 };
		size_t len;

		assert_non_null(want);
		assert_int_equal(json_text_dump(v, compact, collect, &c), 0);
		assert_non_null(c.buf);
		assert_string_equal(c.buf, want);
		got = json_text_dumps(v, compact, 2, &len);
		assert_non_null(got);
		assert_int_equal(len, strlen(want));
		assert_string_equal(got, want);
		got[len] = '\n'; /* the room asked for */
		got[len + 1] = '\0';
		free(got);
		free(c.buf);
		free(want);
	}
}

static void test_scalars_and_nesting(void **state)
{
	json_t *v;

	(void)state;
	v = json_pack("{s:n, s:b, s:b, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, "
		      "s:f, s:[], s:{}, s:[i, [i, {s:[]}], {}], s:s}",
		      "null", "yes", 1, "no", 0, "zero", (json_int_t)0,
		      "neg", (json_int_t)-42, "min", (json_int_t)LLONG_MIN,
		      "max", (json_int_t)LLONG_MAX, "real", 0.1, "whole", 3.0,
		      "big", 1e300, "tiny", -2.5e-12, "negzero", -0.0,
		      "empty_a", "empty_o", "deep", 1, 2, "x", "s", "plain ~ text");
	assert_non_null(v);
	same_as_jansson(v);
	json_decref(v);
	v = json_pack("[s, i, [], {}]", "top-level array", 7);
	same_as_jansson(v);
	json_decref(v);
}

/* Every character jansson escapes, in values and in keys, and text past
 * ASCII (two, three and four bytes: a surrogate pair when escaped). */
static void test_strings(void **state)
{
	static const char *const texts[] = {
		"", "quote \" backslash \\ slash /", "\b\f\n\r\t",
		"\x01\x1f control", "\x7f del", "caf\xc3\xa9",
		"\xe2\x82\xac euro", "\xf0\x9f\x98\x80 emoji",
		"tab\tin the middle", "~ }{ ][ :, ",
	};
	json_t *o = json_object(), *a = json_array();

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++) {
		assert_int_equal(json_array_append_new(a, json_string(texts[i])), 0);
		assert_int_equal(json_object_set_new(o, texts[i], json_integer(
				(json_int_t)i)), 0);
	}
	assert_int_equal(json_object_set_new(o, "all", a), 0);
	/* a NUL inside a string and a key (jansson allows both with a
	 * length) */
	assert_int_equal(json_object_set_new(o, "nul", json_stringn("a\0b", 3)), 0);
	assert_int_equal(json_object_setn_new(o, "k\0ey", 4, json_null()), 0);
	same_as_jansson(o);
	json_decref(o);
}

/* Bigger than the buffer: handed over in more than one piece, a string
 * longer than a piece included; the callback's failure is the dump's. */
static void test_big_and_failing(void **state)
{
	json_t *a = json_array();
	char *long_text = malloc(200 * 1024 + 1);
	struct collected c = { 0 };

	(void)state;
	memset(long_text, 'x', 200 * 1024);
	long_text[200 * 1024] = '\0';
	for (int i = 0; i < 20000; i++)
		assert_int_equal(json_array_append_new(a, json_pack("{s:i, s:s}",
				"i", i, "name", "schedule k:after_commit@1")), 0);
	assert_int_equal(json_array_append_new(a, json_string(long_text)), 0);
	same_as_jansson(a);
	assert_int_equal(json_text_dump(a, false, collect, &c), 0);
	assert_true(c.calls > 1);
	free(c.buf);
	c = (struct collected){ .fail_at = 2 };
	assert_int_equal(json_text_dump(a, false, collect, &c), -1);
	free(c.buf);
	free(long_text);
	json_decref(a);
}

/* What jansson refuses: a string value that is not UTF-8, a scalar at
 * the top; and a key that is not UTF-8, nesting deeper than the bound. */
static void test_refused(void **state)
{
	json_t *bad = json_pack("{s:o}", "v", json_stringn_nocheck("\xff", 1));
	json_t *badkey = json_object(), *deep = json_array(), *at = deep;
	json_t *scalar = json_string("scalar");
	struct collected c = { 0 };
	size_t len;

	(void)state;
	assert_null(json_dumps(bad, JSON_PRESERVE_ORDER));
	assert_int_equal(json_text_dump(bad, false, collect, &c), -1);
	assert_null(json_text_dumps(bad, true, 0, &len));
	/* (jansson writes a broken text for such a key: it does not check
	 * what writing a key returns) */
	assert_int_equal(json_object_setn_new_nocheck(badkey, "\xc3", 1,
						      json_true()), 0);
	assert_null(json_text_dumps(badkey, false, 0, &len));
	assert_null(json_text_dumps(scalar, false, 0, &len));
	json_decref(scalar);
	for (int i = 0; i < JSON_TEXT_MAX_DEPTH + 5; i++) {
		json_t *next = json_array();
		assert_int_equal(json_array_append_new(at, next), 0);
		at = next;
	}
	assert_null(json_text_dumps(deep, false, 0, &len));
	free(c.buf);
	json_decref(bad);
	json_decref(badkey);
	json_decref(deep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars_and_nesting),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_big_and_failing),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
