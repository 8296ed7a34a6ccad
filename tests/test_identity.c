/*
 * test_identity.c -- operation_id / intent_digest: the published test vectors
 * (docs/identity.md), order independence, and every refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "journal/identity.h"

#define F(n, v) { .name = (n), .value = (v) }

static const struct identity_field ident_fields[] = {
	F("release", "r1"), F("deployment", "d1"), F("dag", "orders"),
	F("run", "2026-11-01"), F("workload", "load_orders"), F("partition", "p0"),
	F("interval", "2026-11-01/2026-11-02"), F("target", "events"),
};

struct vector {
	const char *label;
	struct identity_field fields[4];
	size_t n;
	const char *expect;
};

/* Computed independently (Python hashlib over the documented encoding). */
static const struct vector vectors[] = {
	{ "two fields", { F("release", "r1"), F("dag", "orders") }, 2,
	  "sha256:0cb38fc2fda3a6f19f6dfd2b12c0df1955eb0d44632ddbbcd50e7762e06ba9e5" },
	{ "boundary a|bc", { F("a", "bc") }, 1,
	  "sha256:b534ce16ac9c8b36823f39a395ce8e0e3c7ad9605b82b5444f18cadacd217a5d" },
	{ "boundary ab|c", { F("ab", "c") }, 1,
	  "sha256:f2939f903016e5bb29b1e4a61cdbd376220ca03a24180b39995f2d50f2e0a647" },
	{ "utf-8 value", { F("name", "\xc3\xbcn\xc3\xaf""c\xc3\xb8""d\xc3\xa9 \xe2\x9c\x93") }, 1,
	  "sha256:2277f4a407531888844ba056cbd9e8e4047edc8df65b57440f175e50310d32f7" },
	{ "empty value", { F("x", "") }, 1,
	  "sha256:e7875417fa6f61b506f578d88ff4645753b3b71a1f67fff001f2316bc09118f6" },
};

static void digest_ok(const struct identity_field *f, size_t n, char *out)
{
	char err[256] = "";
	int rc = identity_digest(f, n, out, err, sizeof(err));

	if (rc)
		fail_msg("identity_digest failed: %s", err);
}

static void test_vectors(void **state)
{
	char out[IDENTITY_DIGEST_LEN + 1];

	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		digest_ok(vectors[i].fields, vectors[i].n, out);
		if (strcmp(out, vectors[i].expect) != 0)
			fail_msg("vector '%s': got %s want %s", vectors[i].label,
				 out, vectors[i].expect);
		assert_true(identity_digest_valid(out));
	}
}

static void test_workload_identity_vector(void **state)
{
	char out[IDENTITY_DIGEST_LEN + 1];

	(void)state;
	digest_ok(ident_fields, 8, out);
	assert_string_equal(out,
		"sha256:10a4bb5065a04f9958023ed4d24e4ce2300752fa7d92cee155facac36047e2e8");
}

static void test_intent_vector_with_source_hash(void **state)
{
	static const char csv[] = "row_key,payload\nk1,v1\n";
	char src[IDENTITY_DIGEST_LEN + 1], out[IDENTITY_DIGEST_LEN + 1];
	char path[] = "/tmp/fencecert-identity-XXXXXX";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, csv, sizeof(csv) - 1), (ssize_t)(sizeof(csv) - 1));
	close(fd);
	assert_int_equal(identity_file_digest(path, src), 0);
	unlink(path);
	assert_string_equal(src,
		"sha256:b03c9179a0f6836028542a782d1e24063c652539c6f43c868b00c4ed96bba171");

	struct identity_field intent[] = {
		F("pack", "pk1"), F("strategy", "append"),
		F("target_contract", "events.v1"), F("schema", "s1"), F("source", src),
	};
	digest_ok(intent, 5, out);
	assert_string_equal(out,
		"sha256:ac8e62184a51f356f3ecaf860502e893aa29e5aa5f908cf2463a7582b1247c58");
}

static void test_order_does_not_matter(void **state)
{
	struct identity_field shuffled[8];
	char a[IDENTITY_DIGEST_LEN + 1], b[IDENTITY_DIGEST_LEN + 1];
	unsigned seed = 7;

	(void)state;
	digest_ok(ident_fields, 8, a);
	for (int round = 0; round < 50; round++) {
		memcpy(shuffled, ident_fields, sizeof(shuffled));
		for (int i = 7; i > 0; i--) {
			int j = (int)(rand_r(&seed) % (unsigned)(i + 1));
			struct identity_field t = shuffled[i];

			shuffled[i] = shuffled[j];
			shuffled[j] = t;
		}
		digest_ok(shuffled, 8, b);
		assert_string_equal(a, b);
	}
	/* The caller's array is left in its order. */
	assert_string_equal(ident_fields[0].name, "release");
}

static void test_every_field_matters(void **state)
{
	struct identity_field changed[8];
	char base[IDENTITY_DIGEST_LEN + 1], out[IDENTITY_DIGEST_LEN + 1];

	(void)state;
	digest_ok(ident_fields, 8, base);
	for (int i = 0; i < 8; i++) {
		memcpy(changed, ident_fields, sizeof(changed));
		changed[i].value = "other";
		digest_ok(changed, 8, out);
		assert_string_not_equal(base, out);
	}
}

static void expect_refusal(const struct identity_field *f, size_t n,
			   const char *substring)
{
	char out[IDENTITY_DIGEST_LEN + 1], err[256] = "";

	assert_int_equal(identity_digest(f, n, out, err, sizeof(err)), FC_USAGE);
	if (!strstr(err, substring))
		fail_msg("message '%s' lacks '%s'", err, substring);
}

static void test_refusals(void **state)
{
	static const struct identity_field empty_name[] = { F("", "x") };
	static const struct identity_field dup[] = { F("dag", "a"), F("release", "r"), F("dag", "b") };
	static const struct identity_field try_no[] = { F("dag", "a"), F("try_number", "2") };
	static const struct identity_field host[] = { F("host", "w1") };
	static const struct identity_field pid[] = { F("pid", "1") };
	static const struct identity_field bad_utf8[] = { F("dag", "\xc3\x28") };
	static const struct identity_field overlong[] = { F("dag", "\xc0\xaf") };
	static const struct identity_field surrogate[] = { F("dag", "\xed\xa0\x80") };
	static const struct identity_field truncated[] = { F("dag", "ab\xe2\x9c") };

	(void)state;
	expect_refusal(empty_name, 1, "empty name");
	expect_refusal(dup, 3, "'dag' is given twice");
	expect_refusal(try_no, 2, "'try_number'");
	expect_refusal(host, 1, "'host'");
	expect_refusal(pid, 1, "'pid'");
	expect_refusal(bad_utf8, 1, "UTF-8");
	expect_refusal(overlong, 1, "UTF-8");
	expect_refusal(surrogate, 1, "UTF-8");
	expect_refusal(truncated, 1, "UTF-8");
	expect_refusal(NULL, 0, "fields");
}

static void test_digest_valid(void **state)
{
	(void)state;
	assert_true(identity_digest_valid(vectors[0].expect));
	assert_false(identity_digest_valid("sha256:abc"));
	assert_false(identity_digest_valid(
		"sha256:0CB38FC2FDA3A6F19F6DFD2B12C0DF1955EB0D44632DDBBCD50E7762E06BA9E5"));
	assert_false(identity_digest_valid(
		"md5:0cb38fc2fda3a6f19f6dfd2b12c0df1955eb0d44632ddbbcd50e7762e06ba9e5"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_workload_identity_vector),
		cmocka_unit_test(test_intent_vector_with_source_hash),
		cmocka_unit_test(test_order_does_not_matter),
		cmocka_unit_test(test_every_field_matters),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_digest_valid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
