/*
 * fuzz_report.c -- libFuzzer target for report.json as `fencecert gate` and
 * `fencecert merge` read it: a report is a file a CI job hands on, and a
 * route may have written into it (issue 16), so its reader must hold up to
 * anything.  The input is loaded as the CLI loads it (rview.h: jansson,
 * duplicate keys refused, then rview_check()) and given to gate_check()
 * and merge_reports() (reports/gate.h, reports/merge.h).  Built and run by
 * tests/integration/fuzz_smoke.sh.
 *
 * Checks, trapping when one breaks:
 *   - the gate answers with "passed" true exactly when it gives no reason,
 *     and, without a key, exactly when its verdict rule (written again
 *     here) says so;
 *   - with a key, the input without its signature is refused, the input
 *     signed with that key verifies and gets the same answer as without a
 *     key, and one member added after signing makes the signature fail;
 *   - a merge that succeeds gives a report that passes rview_check(), and
 *     with a key one whose signature verifies.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "reports/gate.h"
#include "reports/merge.h"
#include "reports/rview.h"
#include "reports/sign.h"

static const struct sign_key key = {
	.bytes = (const unsigned char *)"fuzz-key", .len = 8,
};

/* The gate's answer; traps on a malformed one.  1 passed, 0 not;
 * signature gets the answer's "signature". */
static int gate(const json_t *doc, const struct sign_key *k,
		char signature[16])
{
	const char *sig;
	struct gate_require req = {
		.level = VERDICT_CERTIFIED_AUTOMATIC, .key = k,
	};
	json_t *v = NULL;
	int passed;

	if (gate_check(doc, &req, &v) != 0 || !json_is_object(v))
		__builtin_trap();
	if (!json_is_boolean(json_object_get(v, "passed")))
		__builtin_trap();
	passed = json_is_true(json_object_get(v, "passed"));
	if (passed != (json_array_size(json_object_get(v, "reasons")) == 0))
		__builtin_trap();
	sig = json_string_value(json_object_get(v, "signature"));
	if (!sig || strlen(sig) >= 16)
		__builtin_trap();
	strcpy(signature, sig);
	json_decref(v);
	return passed;
}

/* The gate's verdict rule, written again: with no route named, a control
 * (expected "rejected") must be rejected and every other route
 * certified-automatic, and there must be routes. */
static int should_pass(const json_t *doc)
{
	json_t *routes = json_object_get(doc, "routes"), *r;
	size_t i;

	if (!json_array_size(routes))
		return 0;
	json_array_foreach(routes, i, r) {
		const char *v = json_string_value(json_object_get(r, "verdict"));
		const char *e = json_string_value(json_object_get(r, "expected"));
		bool control = e && strcmp(e, "rejected") == 0;

		if (!v || strcmp(v, control ? "rejected" : "certified-automatic"))
			return 0;
	}
	return 1;
}

static void check_gate(const json_t *doc)
{
	json_t *copy = json_deep_copy(doc);
	char sig[16];
	int plain;

	if (!copy)
		return;
	json_object_del(copy, "signature");
	plain = gate(copy, NULL, sig);
	if (plain != should_pass(copy) || strcmp(sig, "not-checked") != 0)
		__builtin_trap();
	if (gate(copy, &key, sig) || strcmp(sig, "refused") != 0)
		__builtin_trap(); /* unsigned with a key: never passes */
	if (sign_report(copy, &key) != 0)
		goto out;
	if (gate(copy, &key, sig) != plain || strcmp(sig, "verified") != 0)
		__builtin_trap();
	json_object_set_new(copy, "fuzz-tamper", json_true());
	if (gate(copy, &key, sig) || strcmp(sig, "refused") != 0)
		__builtin_trap();
out:
	json_decref(copy);
}

static void check_merge(json_t *doc)
{
	json_t *in[2] = { doc, doc }, *out = NULL, *signed_doc;
	const char *paths[2] = { "a.json", "b.json" };
	char err[512];

	if (merge_reports(in, paths, 1, NULL, &out, err, sizeof(err)) == 0) {
		if (!out || rview_check(out, err, sizeof(err)) != 0)
			__builtin_trap();
		json_decref(out);
		out = NULL;
	} else if (out) {
		__builtin_trap();
	}
	if (merge_reports(in, paths, 2, NULL, &out, err, sizeof(err)) == 0) {
		if (!out || rview_check(out, err, sizeof(err)) != 0)
			__builtin_trap();
		json_decref(out);
		out = NULL;
	}
	signed_doc = json_deep_copy(doc);
	if (!signed_doc || sign_report(signed_doc, &key) != 0) {
		json_decref(signed_doc);
		return;
	}
	in[0] = signed_doc;
	if (merge_reports(in, paths, 1, &key, &out, err, sizeof(err)) == 0) {
		if (!out || rview_check(out, err, sizeof(err)) != 0 ||
		    sign_verify(out, &key, err, sizeof(err)) != 0)
			__builtin_trap();
		json_decref(out);
	}
	json_decref(signed_doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	json_t *doc = json_loadb((const char *)data, size,
				 JSON_REJECT_DUPLICATES, NULL);

	if (doc && rview_check(doc, err, sizeof(err)) == 0) {
		check_gate(doc);
		check_merge(doc);
	}
	json_decref(doc);
	return 0;
}
