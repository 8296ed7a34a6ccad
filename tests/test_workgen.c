/*
 * test_workgen.c -- deterministic workload generation (harness/run/workgen.c).
 *
 * The files are read back the way a route reads them (jansson for the
 * workload, the CSV's bytes for the source digest) and the ids recomputed
 * independently with journal/identity.h, so a drift between what workgen
 * reports and what a route derives fails here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "harness/run/workgen.h"
#include "journal/identity.h"

static const struct workload_spec spec3 = {
	.operations = 3, .rows_per_operation = 25, .seed = 1,
	.strategy = "append", .table = "events",
};

static char *make_tmpdir(void)
{
	char *d = strdup("/tmp/fc-workgen-XXXXXX");

	assert_non_null(d);
	assert_non_null(mkdtemp(d));
	return d;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	return remove(path);
}

static void rm_tree(char *dir)
{
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long size;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
	buf[size] = '\0';
	fclose(f);
	*len = (size_t)size;
	return buf;
}

static bool same_bytes(const char *a, const char *b)
{
	size_t la, lb;
	char *x = slurp(a, &la), *y = slurp(b, &lb);
	bool same = la == lb && memcmp(x, y, la) == 0;

	free(x);
	free(y);
	return same;
}

static struct workgen *generate(const struct workload_spec *spec, int ops,
				const char *dir)
{
	struct workgen *w = NULL;
	char err[512];

	if (workgen_generate(spec, ops, dir, &w, err, sizeof(err)) != 0)
		fail_msg("workgen_generate: %s", err);
	assert_non_null(w);
	return w;
}

static void test_same_seed_same_bytes(void **state)
{
	char *a = make_tmpdir(), *b = make_tmpdir(), *c = make_tmpdir();
	struct workload_spec other = spec3;
	struct workgen *wa = generate(&spec3, 0, a), *wb = generate(&spec3, 0, b);
	struct workgen *wc;
	int csv_differs = 0;

	other.seed = 2;
	wc = generate(&other, 0, c);
	assert_int_equal(workgen_count(wa), 3);
	for (int i = 1; i <= 3; i++) {
		const struct workgen_op *oa = workgen_op(wa, i), *ob = workgen_op(wb, i);
		const struct workgen_op *oc = workgen_op(wc, i);

		assert_true(same_bytes(oa->workload_path, ob->workload_path));
		assert_true(same_bytes(oa->source_path, ob->source_path));
		assert_string_equal(oa->operation_id, ob->operation_id);
		assert_string_equal(oa->intent_digest, ob->intent_digest);
		/* Another seed: same operation, other rows' payloads. */
		assert_true(same_bytes(oa->workload_path, oc->workload_path));
		assert_string_equal(oa->operation_id, oc->operation_id);
		csv_differs += !same_bytes(oa->source_path, oc->source_path);
		assert_string_not_equal(oa->intent_digest, oc->intent_digest);
	}
	assert_int_equal(csv_differs, 3);
	assert_null(workgen_op(wa, 0));
	assert_null(workgen_op(wa, 4));
	workgen_free(wa);
	workgen_free(wb);
	workgen_free(wc);
	rm_tree(a);
	rm_tree(b);
	rm_tree(c);
}

/* Digest every member of obj (all strings), plus an optional extra field,
 * the way a route does. */
static void digest_fields(json_t *obj, const char *extra, const char *extra_value,
			  char out[IDENTITY_DIGEST_LEN + 1])
{
	struct identity_field f[16];
	size_t n = 0;
	const char *key;
	json_t *v;
	char err[256];

	json_object_foreach(obj, key, v) {
		assert_true(json_is_string(v));
		f[n].name = key;
		f[n++].value = json_string_value(v);
	}
	if (extra) {
		f[n].name = extra;
		f[n++].value = extra_value;
	}
	assert_int_equal(identity_digest(f, n, out, err, sizeof(err)), 0);
}

static void test_ids_match_identity(void **state)
{
	char *dir = make_tmpdir();
	struct workgen *w = generate(&spec3, 0, dir);

	for (int i = 1; i <= 3; i++) {
		const struct workgen_op *op = workgen_op(w, i);
		char id[IDENTITY_DIGEST_LEN + 1], intent[IDENTITY_DIGEST_LEN + 1];
		char src_digest[IDENTITY_DIGEST_LEN + 1], want[64], *src;
		json_error_t jerr;
		json_t *doc = json_load_file(op->workload_path, 0, &jerr);

		assert_non_null(doc);
		assert_int_equal(op->index, i);
		/* The pinned format. */
		assert_int_equal(json_object_size(doc), 4);
		assert_int_equal(json_object_size(json_object_get(doc, "identity")), 8);
		assert_int_equal(json_object_size(json_object_get(doc, "intent")), 4);
		assert_string_equal(json_string_value(json_object_get(
			json_object_get(doc, "identity"), "release")), "r1");
		snprintf(want, sizeof(want), "p%d", i);
		assert_string_equal(json_string_value(json_object_get(
			json_object_get(doc, "identity"), "partition")), want);
		assert_string_equal(json_string_value(json_object_get(
			json_object_get(doc, "intent"), "target_contract")), "events.v1");
		snprintf(want, sizeof(want), "partition-%d.csv", i);
		assert_string_equal(json_string_value(json_object_get(doc, "source")), want);
		assert_string_equal(json_string_value(json_object_get(doc, "table")), "events");
		if (asprintf(&src, "%s/%s", dir, want) < 0)
			abort();
		assert_string_equal(src, op->source_path);

		digest_fields(json_object_get(doc, "identity"), NULL, NULL, id);
		assert_string_equal(id, op->operation_id);
		assert_int_equal(identity_file_digest(src, src_digest), 0);
		digest_fields(json_object_get(doc, "intent"), "source", src_digest, intent);
		assert_string_equal(intent, op->intent_digest);
		free(src);
		json_decref(doc);
	}
	/* A regression vector, computed outside C from SPEC section 2's
	 * encoding: the identity of operation 1 never depends on the seed or
	 * rows, so reports stay comparable across versions. */
	assert_string_equal(workgen_op(w, 1)->operation_id,
			    "sha256:f87c4e79e30e6210213b7993d19963efa0fbdd670cb860d3028e30e837e4ec4c");
	workgen_free(w);
	rm_tree(dir);
}

/* One CSV field per RFC 4180: quoted fields double their quotes; plain
 * fields hold no comma or quote.  Returns how the field was written. */
enum shape { PLAIN, QUOTED_COMMA, QUOTED_QUOTE, QUOTED_BOTH };

static enum shape check_payload(const char *field)
{
	size_t len = strlen(field);
	bool comma = false, quote = false;

	if (field[0] != '"') {
		assert_null(strpbrk(field, ",\""));
		return PLAIN;
	}
	assert_true(len >= 2 && field[len - 1] == '"');
	for (size_t i = 1; i < len - 1; i++) {
		if (field[i] == ',')
			comma = true;
		if (field[i] == '"') {
			assert_true(field[i + 1] == '"' && i + 1 < len - 1);
			quote = true;
			i++;
		}
	}
	assert_true(comma || quote);
	return comma && quote ? QUOTED_BOTH : comma ? QUOTED_COMMA : QUOTED_QUOTE;
}

static void test_csv_rows(void **state)
{
	char *dir = make_tmpdir();
	struct workgen *w = generate(&spec3, 0, dir);
	int shapes[4] = { 0 };
	size_t total = 0;

	for (int i = 1; i <= 3; i++) {
		const struct workgen_op *op = workgen_op(w, i);
		size_t len, row = 0;
		char *csv = slurp(op->source_path, &len), *save = NULL;
		char *line;

		assert_int_equal(csv[len - 1], '\n');
		line = strtok_r(csv, "\n", &save);

		assert_string_equal(line, "row_key,payload");
		assert_int_equal(op->nrows, 25);
		while ((line = strtok_r(NULL, "\n", &save))) {
			char key[32], got[WORKGEN_KEY_MAX];

			assert_true(row < op->nrows);
			snprintf(key, sizeof(key), "o%d-r%zu", i, row + 1);
			workgen_row_key(op, row, got);
			assert_string_equal(got, key);
			assert_int_equal(strncmp(line, key, strlen(key)), 0);
			assert_int_equal(line[strlen(key)], ',');
			shapes[check_payload(line + strlen(key) + 1)]++;
			row++;
		}
		assert_int_equal(row, op->nrows);
		total += row;
		free(csv);
	}
	assert_int_equal(total, 75);
	for (int s = 0; s < 4; s++)
		assert_true(shapes[s] > 0); /* every CSV quoting case is exercised */
	workgen_free(w);
	rm_tree(dir);
}

/* The names in dir, sorted and joined by spaces: what a route would see
 * there (no temporary file may be left behind). */
static void listing(const char *dir, char *out, size_t len)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);

	assert_true(n >= 0);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			strncat(out, names[i]->d_name, len - strlen(out) - 1);
			strncat(out, " ", len - strlen(out) - 1);
		}
		free(names[i]);
	}
	free(names);
}

static const char spec3_files[] = "partition-1.csv partition-2.csv "
	"partition-3.csv workload-1.json workload-2.json workload-3.json ";

static void test_change_source(void **state)
{
	char *dir = make_tmpdir(), *dir2 = make_tmpdir();
	struct workgen *w = generate(&spec3, 0, dir), *w2 = generate(&spec3, 0, dir2);
	const struct workgen_op *op = workgen_op(w, 2);
	char id[IDENTITY_DIGEST_LEN + 1], intent1[IDENTITY_DIGEST_LEN + 1];
	char got[IDENTITY_DIGEST_LEN + 1], got2[IDENTITY_DIGEST_LEN + 1];
	char other[IDENTITY_DIGEST_LEN + 1], err[256], *before, *after;
	size_t lb, la;

	char names[512];

	listing(dir, names, sizeof(names));
	assert_string_equal(names, spec3_files);
	strcpy(id, op->operation_id);
	strcpy(intent1, op->intent_digest);
	strcpy(other, workgen_op(w, 1)->intent_digest);
	before = slurp(op->source_path, &lb);
	/* a workload file is whole JSON ending in a newline */
	{
		size_t wl;
		char *text = slurp(op->workload_path, &wl);
		json_t *doc = json_loadb(text, wl, 0, NULL);

		assert_true(wl > 2 && text[wl - 1] == '\n' && text[wl - 2] == '}');
		assert_non_null(doc);
		json_decref(doc);
		free(text);
	}

	assert_int_equal(workgen_change_source(w, 2, got, err, sizeof(err)), 0);
	after = slurp(op->source_path, &la);
	assert_string_equal(op->operation_id, id);      /* same operation */
	assert_string_not_equal(got, intent1);          /* other intent */
	assert_string_equal(op->intent_digest, got);
	assert_int_equal(op->source_version, 1);
	assert_false(lb == la && memcmp(before, after, la) == 0);
	/* Same row keys, in the same order: the header and every key. */
	for (size_t j = 0; j < op->nrows; j++) {
		char key[WORKGEN_KEY_MAX];

		workgen_row_key(op, j, key);
		assert_non_null(strstr(after, key));
	}
	assert_string_equal(workgen_op(w, 1)->intent_digest, other);
	listing(dir, names, sizeof(names));
	assert_string_equal(names, spec3_files); /* replaced, nothing left over */
	{
		/* The new digest is what a route derives from the new file. */
		char src[IDENTITY_DIGEST_LEN + 1], want[IDENTITY_DIGEST_LEN + 1];
		json_t *doc = json_load_file(op->workload_path, 0, NULL);

		assert_int_equal(identity_file_digest(op->source_path, src), 0);
		digest_fields(json_object_get(doc, "intent"), "source", src, want);
		assert_string_equal(want, got);
		json_decref(doc);
	}
	/* Changing again gives a third intent; and it is deterministic. */
	assert_int_equal(workgen_change_source(w, 2, got2, err, sizeof(err)), 0);
	assert_string_not_equal(got2, got);
	assert_string_not_equal(got2, intent1);
	assert_int_equal(workgen_change_source(w2, 2, got, err, sizeof(err)), 0);
	assert_int_equal(workgen_change_source(w2, 2, got, err, sizeof(err)), 0);
	assert_string_equal(got, got2);
	assert_true(same_bytes(op->source_path, workgen_op(w2, 2)->source_path));

	assert_int_equal(workgen_change_source(w, 4, got, err, sizeof(err)), FC_USAGE);
	assert_int_equal(workgen_change_source(w, 0, got, err, sizeof(err)), FC_USAGE);
	free(before);
	free(after);
	workgen_free(w);
	workgen_free(w2);
	rm_tree(dir);
	rm_tree(dir2);
}

static void test_override_and_options(void **state)
{
	char *dir = make_tmpdir();
	struct workload_spec s = {
		.operations = 5, .rows_per_operation = 1, .seed = UINT64_MAX,
		.strategy = "replace", .table = "orders",
	};
	struct workgen *w = generate(&s, 2, dir);
	json_t *doc;

	assert_int_equal(workgen_count(w), 2);
	assert_int_equal(access(workgen_op(w, 2)->workload_path, R_OK), 0);
	doc = json_load_file(workgen_op(w, 2)->workload_path, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(
		json_object_get(doc, "intent"), "strategy")), "replace");
	assert_string_equal(json_string_value(json_object_get(
		json_object_get(doc, "identity"), "target")), "orders");
	assert_string_equal(json_string_value(json_object_get(
		json_object_get(doc, "intent"), "target_contract")), "orders.v1");
	json_decref(doc);
	workgen_free(w);
	rm_tree(dir);
}

static void test_errors_leave_nothing(void **state)
{
	char *dir = make_tmpdir(), err[256], path[600];
	struct workload_spec big = spec3;
	struct workgen *w = (struct workgen *)&w;

	big.operations = 1000;
	big.rows_per_operation = 1001;
	assert_int_equal(workgen_generate(&big, 0, dir, &w, err, sizeof(err)), FC_USAGE);
	assert_null(w);
	assert_non_null(strstr(err, "more than 1000000 rows"));
	snprintf(path, sizeof(path), "%s/workload-1.json", dir);
	assert_int_equal(access(path, F_OK), -1);

	snprintf(path, sizeof(path), "%s/no/such/dir", dir);
	assert_int_equal(workgen_generate(&spec3, 0, path, &w, err, sizeof(err)), FC_IO);
	assert_null(w);
	assert_non_null(strstr(err, "cannot create workload directory"));
	workgen_free(NULL);
	rm_tree(dir);
}

/* The digest a route takes of path. */
static void file_digest(const char *path, char out[IDENTITY_DIGEST_LEN + 1])
{
	assert_int_equal(identity_file_digest(path, out), 0);
}

/*
 * Same input, same bytes, across versions of the writer: these digests
 * were taken of the files the stdio writer made (fputc through a hashing
 * fopencookie stream) before the block writer replaced it.  The 5000-row
 * partition spans several blocks and every payload shape; the others
 * cover another seed, strategy and table, and changed sources.
 */
static void test_bytes_unchanged(void **state)
{
	static const struct {
		int op;
		const char *csv, *intent;
	} v3[] = {
		{ 1, "sha256:c7d2449edb37c000a7ca1b34476159def558661b794e94126877c687bc633d5e",
		  "sha256:ae55a4c8cf7a9347cf2eea262aa7aa0911b5c4bf6ebe5af9d49af7d80b030630" },
		{ 2, "sha256:bcc156f822fb99eb0e544bc8526b5b1d5500f6ddfb6208768bdddca17bdda38e",
		  "sha256:6a4f75ab663593c4df78341265f31a9a1b21e288a231356c382968de4a7c291c" },
		{ 3, "sha256:41710e7e1ae872c9375e007f580fc998a6c332033aef367a777d76c575ac7e4d",
		  "sha256:665d04785845519a796ba6b44579232b1c1d3914cf2a07adb79f5352793020a3" },
	};
	struct workload_spec big = spec3, max = {
		.operations = 5, .rows_per_operation = 7, .seed = UINT64_MAX,
		.strategy = "replace", .table = "orders",
	};
	char *dir = make_tmpdir(), d[IDENTITY_DIGEST_LEN + 1];
	char intent[IDENTITY_DIGEST_LEN + 1], err[256];
	struct workgen *w = generate(&spec3, 0, dir);

	for (size_t i = 0; i < sizeof(v3) / sizeof(v3[0]); i++) {
		file_digest(workgen_op(w, v3[i].op)->source_path, d);
		assert_string_equal(d, v3[i].csv);
		assert_string_equal(workgen_op(w, v3[i].op)->intent_digest, v3[i].intent);
	}
	assert_int_equal(workgen_change_source(w, 2, intent, err, sizeof(err)), 0);
	file_digest(workgen_op(w, 2)->source_path, d);
	assert_string_equal(d, "sha256:26af46f974e20ce4f74e3ac36b707c3dbd4ddc49fdb66fe7bbdb4a1606f64500");
	workgen_free(w);

	big.operations = 1;
	big.rows_per_operation = 5000;
	w = generate(&big, 0, dir);
	file_digest(workgen_op(w, 1)->source_path, d);
	assert_string_equal(d, "sha256:22513aacffefa47288168f0a71e65a06f633edd60ce729f88420c7f2ef480351");
	workgen_free(w);

	w = generate(&max, 2, dir);
	file_digest(workgen_op(w, 1)->source_path, d);
	assert_string_equal(d, "sha256:710c1f8692a77ca82232c50f6f6ad66bae1f43d8fc5cc43f812e15c9cad58328");
	assert_string_equal(workgen_op(w, 1)->intent_digest,
			    "sha256:98992e72683172ddc42c6438ec3d20e39c1c0f683b6a2d236897d79d71156721");
	file_digest(workgen_op(w, 1)->workload_path, d);
	assert_string_equal(d, "sha256:87ae3f7a3db34564ee9387186034bd207c7c5edd30882a11aee3fe93e6b89cf6");
	file_digest(workgen_op(w, 2)->source_path, d);
	assert_string_equal(d, "sha256:6faa484a2f0bc99b652d8f6d1d9601efe478a73f01ea59677559d65f39ac4426");
	file_digest(workgen_op(w, 2)->workload_path, d);
	assert_string_equal(d, "sha256:28d67cc3b4f8c9ccddf265df60c04309bee0f7a7f9a367f2823e313db35435d1");
	assert_int_equal(workgen_change_source(w, 1, intent, err, sizeof(err)), 0);
	assert_int_equal(workgen_change_source(w, 1, intent, err, sizeof(err)), 0);
	file_digest(workgen_op(w, 1)->source_path, d);
	assert_string_equal(d, "sha256:d735204969b2709c22d521b45c7d823f26051ea0a088df7bb556b2afc7aa01db");
	assert_string_equal(intent,
			    "sha256:216218f8319006fcfebc2a06d02c7768c1371809692997d500fb9ec0b90fddd4");
	workgen_free(w);
	rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_seed_same_bytes),
		cmocka_unit_test(test_ids_match_identity),
		cmocka_unit_test(test_csv_rows),
		cmocka_unit_test(test_change_source),
		cmocka_unit_test(test_override_and_options),
		cmocka_unit_test(test_errors_leave_nothing),
		cmocka_unit_test(test_bytes_unchanged),
	};

	return cmocka_run_group_tests_name("workgen", tests, NULL, NULL);
}
