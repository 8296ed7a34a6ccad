/*
 * workgen.c -- write deterministic workload and partition files.
 *
 * Invariants:
 *   1. Same input, same bytes: the only randomness is splitmix64 seeded from
 *      (seed, operation, source version); no time, pid or locale enters a
 *      file, and JSON is written by jansson with a fixed key order.
 *   2. The ids reported are computed exactly as a route computes them from
 *      the files (identity_digest over the workload's fields, the CSV's
 *      file digest as "source"), after the file is complete.
 *   3. Files appear whole: workgen_generate() writes them in place before
 *      any process of the schedule starts; change_source writes the new
 *      partition to a temporary name and renames it, so a route never
 *      reads half a partition, and a failed change_source leaves the
 *      previous partition in place.
 *   4. Every payload carries its source version, so a changed source always
 *      has different bytes and a different intent_digest.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/fsutil.h"
#include "harness/run/workgen.h"

/* The fixed parts of every operation's identity and intent. */
#define WG_RELEASE "r1"
#define WG_DEPLOYMENT "d1"
#define WG_DAG "orders"
#define WG_RUN "2026-11-01"
#define WG_WORKLOAD "load_orders"
#define WG_INTERVAL "2026-11-01/2026-11-02"
#define WG_PACK "pk1"
#define WG_SCHEMA "s1"

struct op_store {
	char *workload_path;
	char *source_path;
};

struct workgen {
	struct workload_spec spec;
	size_t nops;
	struct workgen_op *ops;
	struct op_store *store;
};

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* One independent stream per (seed, operation, source version). */
static uint64_t stream_seed(uint64_t seed, int index, int version)
{
	uint64_t st = seed;
	uint64_t a = splitmix64(&st);

	st = a ^ ((uint64_t)(unsigned)index << 20) ^ (uint64_t)(unsigned)version;
	return splitmix64(&st);
}

/* Append one CSV field to dst, quoted when it holds a comma, quote or
 * newline; returns the bytes appended, at most 2 * strlen(s) + 2. */
static size_t put_field(char *dst, const char *s)
{
	char *p = dst;
	size_t n;

	if (!strpbrk(s, ",\"\r\n")) {
		n = strlen(s);
		memcpy(dst, s, n);
		return n;
	}
	*p++ = '"';
	for (; *s; s++) {
		if (*s == '"')
			*p++ = '"';
		*p++ = *s;
	}
	*p++ = '"';
	return (size_t)(p - dst);
}

/*
 * Formatting by hand what snprintf would write, byte for byte: two
 * snprintf calls a row were most of the cost of a partition once the
 * stdio stream was gone.  Each appends at p and returns the new end.
 */
static char *put_str(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

/* "%" PRIu64, hence "%u" and "%zu" */
static char *put_dec(char *p, uint64_t v)
{
	char digits[20];
	size_t n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = digits[--n];
	return p;
}

/* "%d" */
static char *put_int(char *p, int v)
{
	if (v < 0)
		*p++ = '-';
	return put_dec(p, v < 0 ? -(uint64_t)v : (uint64_t)v);
}

/* "%016" PRIx64 */
static char *put_hex16(char *p, uint64_t v)
{
	for (int i = 15; i >= 0; i--)
		*p++ = "0123456789abcdef"[(v >> (4 * i)) & 0xf];
	return p;
}

/* Five payload shapes in rotation (the file's first shape drawn from the
 * seed), so any five consecutive rows hold plain, comma, quote and
 * comma-and-quote payloads.  Each names its source version (invariant 4).
 * buf holds PAYLOAD_MAX bytes; the longest shape takes 32 with its NUL. */
#define PAYLOAD_MAX 96
static void make_payload(char buf[PAYLOAD_MAX], unsigned shape, int version,
			 uint64_t r)
{
	static const char *const words[] = {
		"alpha", "bravo", "charlie", "delta", "echo", "foxtrot",
	};
	unsigned n = (unsigned)(r >> 40);
	char *p = buf;

	if (shape % 5 == 3)
		*p++ = '"';
	*p++ = 'g';
	p = put_int(p, version);
	switch (shape % 5) {
	case 0:         /* g<version>-<r as 16 hex digits> */
		*p++ = '-';
		p = put_hex16(p, r);
		break;
	case 1:         /* g<version>,<n> units */
		*p++ = ',';
		p = put_str(put_dec(p, n), " units");
		break;
	case 2:         /* g<version> said "<n>" */
		p = put_str(p, " said \"");
		p = put_str(put_dec(p, n), "\"");
		break;
	case 3:         /* "g<version>, <n>" */
		p = put_str(p, ", ");
		p = put_str(put_dec(p, n), "\"");
		break;
	default:        /* g<version> <word> <n> */
		*p++ = ' ';
		p = put_str(p, words[n % 6]);
		*p++ = ' ';
		p = put_dec(p, n);
		break;
	}
	*p = '\0';
}

#define CSV_HEADER "row_key,payload\n"
/* A partition leaves in blocks of CSV_BLOCK bytes, each line formatted
 * straight into the block: stdio's locked fputc per byte was most of a
 * schedule's setup.  The longest line is both fields quoted with every
 * byte doubled, plus the comma and the newline. */
#define CSV_BLOCK 65536
#define CSV_LINE_MAX (2 * (WORKGEN_KEY_MAX + PAYLOAD_MAX) + 2)

/* Send a block to the file and to the digest of every byte on its way
 * there, so the file is never read back. */
static int csv_flush(int fd, struct identity_hash *hash, const char *buf,
		     size_t len)
{
	identity_hash_update(hash, buf, len);
	return fs_write_all(fd, buf, len);
}

/* Write op's partition at source version `version` to path (created or
 * truncated), a block at a time: a partition is never whole in memory;
 * its file digest (identity_file_digest()'s) into source.  On failure
 * errno says why; the caller removes the file. */
static int write_csv(const struct workload_spec *spec,
		     const struct workgen_op *op, int version, const char *path,
		     char source[IDENTITY_DIGEST_LEN + 1])
{
	uint64_t st = stream_seed(spec->seed, op->index, version);
	unsigned first_shape = (unsigned)(splitmix64(&st) % 5);
	char payload[PAYLOAD_MAX], key[WORKGEN_KEY_MAX];
	struct identity_hash *hash = identity_hash_new();
	char *buf = malloc(CSV_BLOCK);
	size_t len = sizeof(CSV_HEADER) - 1;
	int fd = -1, rc = 0, saved;

	if (hash && buf)
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		saved = hash && buf ? errno : ENOMEM;
		if (hash)
			identity_hash_final(hash, source);
		free(buf);
		errno = saved;
		return FC_IO;
	}
	memcpy(buf, CSV_HEADER, len);
	for (size_t j = 0; j < op->nrows; j++) {
		if (CSV_BLOCK - len < CSV_LINE_MAX) {
			rc = csv_flush(fd, hash, buf, len);
			if (rc < 0)
				break;
			len = 0;
		}
		make_payload(payload, first_shape + (unsigned)j, version,
			     splitmix64(&st));
		workgen_row_key(op, j, key);
		len += put_field(buf + len, key);
		buf[len++] = ',';
		len += put_field(buf + len, payload);
		buf[len++] = '\n';
	}
	if (rc == 0)
		rc = csv_flush(fd, hash, buf, len);
	saved = errno;
	if (close(fd) != 0 && rc == 0)
		rc = FC_IO;
	else if (rc < 0)
		errno = saved;
	identity_hash_final(hash, source);
	free(buf);
	return rc;
}

static json_t *workload_json(const struct workload_spec *spec, int index)
{
	char partition[16], source[32], contract[80];

	snprintf(partition, sizeof(partition), "p%d", index);
	snprintf(source, sizeof(source), "partition-%d.csv", index);
	snprintf(contract, sizeof(contract), "%s.v1", spec->table);
	return json_pack("{s:{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s},"
			 "s:{s:s,s:s,s:s,s:s},s:s,s:s}",
			 "identity",
			 "release", WG_RELEASE, "deployment", WG_DEPLOYMENT,
			 "dag", WG_DAG, "run", WG_RUN, "workload", WG_WORKLOAD,
			 "partition", partition, "interval", WG_INTERVAL,
			 "target", spec->table,
			 "intent",
			 "pack", WG_PACK, "strategy", spec->strategy,
			 "target_contract", contract, "schema", WG_SCHEMA,
			 "source", source, "table", spec->table);
}

/* Digest every string member of obj, plus one extra field when given. */
static int digest_object(json_t *obj, const char *extra_name,
			 const char *extra_value, char out[IDENTITY_DIGEST_LEN + 1],
			 char *err, size_t errlen)
{
	struct identity_field fields[IDENTITY_MAX_FIELDS];
	size_t n = 0;
	const char *key;
	json_t *value;

	json_object_foreach(obj, key, value) {
		if (n + 1 >= IDENTITY_MAX_FIELDS)
			break;
		fields[n].name = key;
		fields[n++].value = json_string_value(value);
	}
	if (extra_name) {
		fields[n].name = extra_name;
		fields[n++].value = extra_value;
	}
	return identity_digest(fields, n, out, err, errlen);
}

/* Create (or truncate) path and write len bytes of buf into it: one
 * open, one write, one close, no stdio buffer and its fstat. */
static int write_bytes(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	int rc;

	if (fd < 0)
		return FC_IO;
	rc = fs_write_all(fd, buf, len);
	if (close(fd) != 0 && !rc)
		rc = FC_IO;
	return rc;
}

/* Write path's content in place: the workload as generated, in a
 * directory no process reads yet (invariant 3).  On failure errno says
 * why and no file of ours is left. */
static int publish(const char *path, const char *buf, size_t len)
{
	int rc = write_bytes(path, buf, len), saved;

	if (rc < 0) {
		saved = errno;
		unlink(path);
		errno = saved;
	}
	return rc;
}

/* Compute the intent_digest of op's source, whose file digest (the one a
 * route takes of the file) is source, into out. */
static int intent_of(const struct workload_spec *spec, const struct workgen_op *op,
		     const char *source, char out[IDENTITY_DIGEST_LEN + 1],
		     char *err, size_t errlen)
{
	json_t *doc;
	int rc;

	doc = workload_json(spec, op->index);
	if (!doc) {
		snprintf(err, errlen, "out of memory building a workload");
		return FC_NOMEM;
	}
	rc = digest_object(json_object_get(doc, "intent"), "source", source, out,
			   err, errlen);
	json_decref(doc);
	return rc;
}

/* "o%d-r%zu", at most 1 + 11 + 2 + 20 bytes and the NUL */
void workgen_row_key(const struct workgen_op *op, size_t j,
		     char buf[WORKGEN_KEY_MAX])
{
	char *p = buf;

	*p++ = 'o';
	p = put_int(p, op->index);
	*p++ = '-';
	*p++ = 'r';
	p = put_dec(p, (uint64_t)j + 1);
	*p = '\0';
}

static int generate_op(struct workgen *w, size_t i, const char *dir,
		       char *err, size_t errlen)
{
	struct workgen_op *op = &w->ops[i];
	struct op_store *st = &w->store[i];
	char *text = NULL, source[IDENTITY_DIGEST_LEN + 1];
	size_t len;
	json_t *doc = NULL;
	int rc;

	op->index = (int)i + 1;
	op->nrows = (size_t)w->spec.rows_per_operation;
	if (asprintf(&st->workload_path, "%s/workload-%d.json", dir, op->index) < 0 ||
	    asprintf(&st->source_path, "%s/partition-%d.csv", dir, op->index) < 0) {
		st->workload_path = st->source_path = NULL;
		snprintf(err, errlen, "out of memory building a workload");
		return FC_NOMEM;
	}
	op->workload_path = st->workload_path;
	op->source_path = st->source_path;
	if (!(doc = workload_json(&w->spec, op->index)) ||
	    !(text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER))) {
		snprintf(err, errlen, "out of memory building a workload");
		rc = FC_NOMEM;
		goto out;
	}
	if (write_csv(&w->spec, op, 0, st->source_path, source) < 0) {
		snprintf(err, errlen, "cannot write partition '%s': %s",
			 st->source_path, strerror(errno));
		unlink(st->source_path);
		rc = FC_IO;
		goto out;
	}
	/* the file ends with a newline, written over the NUL's byte */
	len = strlen(text);
	text[len] = '\n';
	rc = publish(st->workload_path, text, len + 1);
	text[len] = '\0';
	if (rc < 0)
		snprintf(err, errlen, "cannot write workload '%s': %s",
			 st->workload_path, strerror(errno));
	else
		rc = digest_object(json_object_get(doc, "identity"), NULL, NULL,
				   op->operation_id, err, errlen);
	if (rc == 0)
		rc = intent_of(&w->spec, op, source, op->intent_digest, err,
			       errlen);
out:
	json_decref(doc);
	free(text);
	return rc;
}

static int check_spec(const struct workload_spec *spec, int operations,
		      char *err, size_t errlen)
{
	if (operations < 1 || operations > 1000 || spec->rows_per_operation < 1) {
		snprintf(err, errlen, "workload needs 1 to 1000 operations of at least one row");
		return FC_USAGE;
	}
	if ((long long)operations * spec->rows_per_operation > WORKGEN_MAX_ROWS) {
		snprintf(err, errlen,
			 "workload of %d operations x %d rows is more than %d rows",
			 operations, spec->rows_per_operation, WORKGEN_MAX_ROWS);
		return FC_USAGE;
	}
	if (!memchr(spec->strategy, '\0', sizeof(spec->strategy)) ||
	    !memchr(spec->table, '\0', sizeof(spec->table)) || !spec->table[0] ||
	    !spec->strategy[0]) {
		snprintf(err, errlen, "workload needs a strategy and a table");
		return FC_USAGE;
	}
	return 0;
}

int workgen_generate(const struct workload_spec *spec, int operations,
		     const char *dir, struct workgen **out, char *err,
		     size_t errlen)
{
	struct workgen *w;
	int rc;

	*out = NULL;
	if (operations <= 0)
		operations = spec->operations;
	rc = check_spec(spec, operations, err, errlen);
	if (rc < 0)
		return rc;
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create workload directory '%s': %s",
			 dir, strerror(errno));
		return FC_IO;
	}
	w = calloc(1, sizeof(*w));
	if (!w || !(w->ops = calloc((size_t)operations, sizeof(*w->ops))) ||
	    !(w->store = calloc((size_t)operations, sizeof(*w->store)))) {
		workgen_free(w);
		snprintf(err, errlen, "out of memory building a workload");
		return FC_NOMEM;
	}
	w->spec = *spec;
	w->nops = (size_t)operations;
	for (size_t i = 0; i < w->nops; i++) {
		rc = generate_op(w, i, dir, err, errlen);
		if (rc < 0) {
			/* A failing call leaves no files of its own behind. */
			for (size_t k = 0; k <= i; k++) {
				if (w->store[k].workload_path)
					unlink(w->store[k].workload_path);
				if (w->store[k].source_path)
					unlink(w->store[k].source_path);
			}
			workgen_free(w);
			return rc;
		}
	}
	*out = w;
	return 0;
}

size_t workgen_count(const struct workgen *w)
{
	return w ? w->nops : 0;
}

const struct workgen_op *workgen_op(const struct workgen *w, int index)
{
	if (!w || index < 1 || (size_t)index > w->nops)
		return NULL;
	return &w->ops[index - 1];
}

int workgen_change_source(struct workgen *w, int index,
			  char intent[IDENTITY_DIGEST_LEN + 1], char *err,
			  size_t errlen)
{
	struct workgen_op *op;
	char digest[IDENTITY_DIGEST_LEN + 1], source[IDENTITY_DIGEST_LEN + 1];
	char tmp[4096];
	int version, rc;

	if (!w || index < 1 || (size_t)index > w->nops) {
		snprintf(err, errlen, "no operation %d in this workload", index);
		return FC_USAGE;
	}
	op = &w->ops[index - 1];
	version = op->source_version + 1;
	if (snprintf(tmp, sizeof(tmp), "%s.new", op->source_path) >=
	    (int)sizeof(tmp)) {
		snprintf(err, errlen, "partition path too long");
		return FC_USAGE;
	}
	/* Written and digested under a temporary name, then renamed over the
	 * old file: a route of this schedule may be reading it (invariant 3). */
	rc = write_csv(&w->spec, op, version, tmp, source);
	if (rc < 0)
		snprintf(err, errlen, "cannot write partition '%s': %s", tmp,
			 strerror(errno));
	if (rc == 0)
		rc = intent_of(&w->spec, op, source, digest, err, errlen);
	if (rc == 0 && rename(tmp, op->source_path) != 0) {
		snprintf(err, errlen, "cannot replace partition '%s': %s",
			 op->source_path, strerror(errno));
		rc = FC_IO;
	}
	if (rc < 0) {
		unlink(tmp);
		return rc;
	}
	op->source_version = version;
	memcpy(op->intent_digest, digest, sizeof(digest));
	memcpy(intent, digest, sizeof(digest));
	return 0;
}

void workgen_free(struct workgen *w)
{
	if (!w)
		return;
	for (size_t i = 0; w->store && i < w->nops; i++) {
		free(w->store[i].workload_path);
		free(w->store[i].source_path);
	}
	free(w->store);
	free(w->ops);
	free(w);
}
