/*
 * workload.c -- workload JSON (jansson) and the CSV source partition.
 *
 * Invariants:
 *  1. The intent digest covers the exact bytes the rows are parsed from: the
 *     source is read into memory once, digested, and parsed from that buffer.
 *  2. Neither the try number nor anything else that varies between attempts
 *     can enter a digest: only the "identity" and "intent" objects and the
 *     source content do (identity_digest refuses the usual suspects too).
 *  3. The CSV is parsed in place: every field is unquoted into the bytes it
 *     came from (an unquoted value is never longer than its quoted form) and
 *     NUL-terminated where its delimiter was, so 100k rows cost one buffer
 *     plus the row array.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/fsutil.h"
#include "routes/workload.h"

#define TABLE_NAME_MAX 63

struct workload {
	char *path;
	char *source_path;
	char *table;
	char strategy_name[16];
	enum fence_strategy strategy;
	char operation_id[IDENTITY_DIGEST_LEN + 1];
	char intent_digest[IDENTITY_DIGEST_LEN + 1];
	char source_digest[IDENTITY_DIGEST_LEN + 1];
	char *src;          /* source bytes, NUL-terminated; parsed in place */
	size_t src_len;
	bool parsed;
	int parse_rc;       /* remembered failure of the one parse */
	char parse_err[256];
	struct fence_row *rows;
	size_t nrows;
};

static const char *const identity_required[] = {
	"release", "deployment", "dag", "run", "workload", "partition",
	"interval", "target", NULL,
};

static const char *const intent_required[] = {
	"pack", "strategy", "target_contract", "schema", NULL,
};

void workload_free(workload *w)
{
	if (!w)
		return;
	free(w->path);
	free(w->source_path);
	free(w->table);
	free(w->src);
	free(w->rows);
	free(w);
}

/* Collect the string fields of one object; every value must be a string
 * and every name in `required` present. */
static int collect_fields(const char *path, const char *what, json_t *obj,
			  const char *const *required,
			  struct identity_field *fields, size_t max, size_t *n,
			  char *err, size_t errlen)
{
	const char *key;
	json_t *val;

	if (!json_is_object(obj)) {
		snprintf(err, errlen, "workload '%s': \"%s\" must be an object",
			 path, what);
		return FC_USAGE;
	}
	for (const char *const *r = required; *r; r++) {
		if (!json_object_get(obj, *r)) {
			snprintf(err, errlen,
				 "workload '%s': \"%s\" lacks the field \"%s\"",
				 path, what, *r);
			return FC_USAGE;
		}
	}
	*n = 0;
	json_object_foreach(obj, key, val) {
		if (!json_is_string(val)) {
			snprintf(err, errlen,
				 "workload '%s': %s field \"%s\" must be a string",
				 path, what, key);
			return FC_USAGE;
		}
		if (*n == max) {
			snprintf(err, errlen,
				 "workload '%s': \"%s\" has more than %zu fields",
				 path, what, max);
			return FC_USAGE;
		}
		fields[*n].name = key;
		fields[*n].value = json_string_value(val);
		(*n)++;
	}
	return 0;
}

static int table_name_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > TABLE_NAME_MAX || (*s >= '0' && *s <= '9'))
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
			return 0;
	return 1;
}

static char *resolve_source(const char *workload_path, const char *source)
{
	char *copy, *dir, *out;

	if (source[0] == '/')
		return strdup(source);
	copy = strdup(workload_path);
	if (!copy)
		return NULL;
	dir = dirname(copy);
	if (asprintf(&out, "%s/%s", dir, source) < 0)
		out = NULL;
	free(copy);
	return out;
}

static int read_source(workload *w, char *err, size_t errlen)
{
	int fd = open(w->source_path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t len;
	char *buf;
	int rc;

	if (fd < 0) {
		snprintf(err, errlen, "cannot open source '%s': %s",
			 w->source_path, strerror(errno));
		return errno == EIO ? FC_IO : FC_USAGE;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "source '%s' is not a regular file",
			 w->source_path);
		close(fd);
		return FC_USAGE;
	}
	/* room for the whole file at once; it may grow while we read it */
	rc = st.st_size > WORKLOAD_SOURCE_MAX ? FC_USAGE :
	     fs_read_all(fd, (size_t)st.st_size + 1,
			 (size_t)WORKLOAD_SOURCE_MAX + 1, &buf, &len);
	if (rc == FC_USAGE)
		snprintf(err, errlen, "source '%s' is larger than %ld bytes",
			 w->source_path, WORKLOAD_SOURCE_MAX);
	else if (rc == FC_IO)
		snprintf(err, errlen, "cannot read source '%s': %s",
			 w->source_path, strerror(errno));
	close(fd);
	if (rc)
		return rc;
	w->src = buf;
	w->src_len = len;
	identity_buffer_digest(buf, len, w->source_digest);
	return 0;
}

/* The digest of one section's fields into out; a refusal names the
 * workload and the section. */
static int digest_fields(const workload *w, const char *what,
			 const struct identity_field *fields, size_t n,
			 char out[IDENTITY_DIGEST_LEN + 1], char *err,
			 size_t errlen)
{
	char why[256];

	if (!identity_digest(fields, n, out, why, sizeof(why)))
		return 0;
	snprintf(err, errlen, "workload '%s': %s: %s", w->path, what, why);
	return FC_USAGE;
}

static int derive_operation_id(workload *w, json_t *root, char *err,
			       size_t errlen)
{
	struct identity_field fields[IDENTITY_MAX_FIELDS];
	size_t n;
	int rc;

	rc = collect_fields(w->path, "identity", json_object_get(root, "identity"),
			    identity_required, fields, IDENTITY_MAX_FIELDS, &n,
			    err, errlen);
	if (rc)
		return rc;
	return digest_fields(w, "identity", fields, n, w->operation_id, err,
			     errlen);
}

/* The intent fields plus "source"; with w->source_digest still empty this
 * only validates them (so a bad intent is reported before the source read). */
static int derive_intent_digest(workload *w, json_t *root, char *err,
				size_t errlen)
{
	struct identity_field fields[IDENTITY_MAX_FIELDS];
	size_t n;
	int rc;

	rc = collect_fields(w->path, "intent", json_object_get(root, "intent"),
			    intent_required, fields, IDENTITY_MAX_FIELDS - 1, &n,
			    err, errlen);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(fields[i].name, "source") == 0) {
			snprintf(err, errlen,
				 "workload '%s': intent field \"source\" is reserved for the source content hash",
				 w->path);
			return FC_USAGE;
		}
	}
	if (!w->source_digest[0])
		return 0;
	fields[n].name = "source";
	fields[n].value = w->source_digest;
	return digest_fields(w, "intent", fields, n + 1, w->intent_digest, err,
			     errlen);
}

static int parse_top(workload *w, json_t *root, char *err, size_t errlen)
{
	json_t *source = json_object_get(root, "source");
	json_t *table = json_object_get(root, "table");
	json_t *intent = json_object_get(root, "intent");
	const char *strategy;

	if (!json_is_object(root)) {
		snprintf(err, errlen, "workload '%s' is not a JSON object", w->path);
		return FC_USAGE;
	}
	if (!json_object_get(root, "identity") || !intent || !source || !table) {
		snprintf(err, errlen,
			 "workload '%s' needs the keys \"identity\", \"intent\", \"source\" and \"table\"",
			 w->path);
		return FC_USAGE;
	}
	if (!json_is_string(source) || !*json_string_value(source)) {
		snprintf(err, errlen, "workload '%s': \"source\" must be a file name",
			 w->path);
		return FC_USAGE;
	}
	if (!json_is_string(table) || !table_name_valid(json_string_value(table))) {
		snprintf(err, errlen,
			 "workload '%s': \"table\" must be a name of letters, digits and '_'",
			 w->path);
		return FC_USAGE;
	}
	strategy = json_string_value(json_object_get(intent, "strategy"));
	if (strategy && strcmp(strategy, "append") == 0) {
		w->strategy = FENCE_APPEND;
	} else if (strategy && strcmp(strategy, "replace") == 0) {
		w->strategy = FENCE_REPLACE;
	} else if (strategy) {
		snprintf(err, errlen,
			 "workload '%s': unknown strategy '%s' (append, replace)",
			 w->path, strategy);
		return FC_USAGE;
	}
	if (strategy)
		snprintf(w->strategy_name, sizeof(w->strategy_name), "%s", strategy);
	w->table = strdup(json_string_value(table));
	w->source_path = resolve_source(w->path, json_string_value(source));
	if (!w->table || !w->source_path)
		return FC_NOMEM;
	return 0;
}

int workload_load(const char *path, workload **out, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root;
	workload *w;
	int rc;

	*out = NULL;
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (jerr.line <= 0)
			snprintf(err, errlen, "cannot read workload '%s': %s",
				 path, jerr.text);
		else
			snprintf(err, errlen, "workload '%s': line %d: %s", path,
				 jerr.line, jerr.text);
		return FC_USAGE;
	}
	w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		free(w);
		json_decref(root);
		return FC_NOMEM;
	}
	/* Everything in the JSON is checked before the source is read: a
	 * malformed workload must not cost a read of a large partition. */
	rc = parse_top(w, root, err, errlen);
	if (!rc)
		rc = derive_operation_id(w, root, err, errlen);
	if (!rc)
		rc = derive_intent_digest(w, root, err, errlen);
	if (!rc)
		rc = read_source(w, err, errlen);
	if (!rc)
		rc = derive_intent_digest(w, root, err, errlen);
	json_decref(root);
	if (rc) {
		workload_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

const char *workload_operation_id(const workload *w) { return w->operation_id; }
const char *workload_intent_digest(const workload *w) { return w->intent_digest; }
const char *workload_source_digest(const workload *w) { return w->source_digest; }
const char *workload_source_path(const workload *w) { return w->source_path; }
const char *workload_table(const workload *w) { return w->table; }
enum fence_strategy workload_strategy(const workload *w) { return w->strategy; }
const char *workload_strategy_name(const workload *w) { return w->strategy_name; }

/* ---- CSV (RFC 4180), in place ---- */

struct csv {
	const char *path;
	char *buf;
	size_t len, pos;
	long line;       /* physical line of buf[pos] */
};

static int csv_fail(const struct csv *c, long line, char *err, size_t errlen,
		    const char *what)
{
	snprintf(err, errlen, "source '%s': line %ld: %s", c->path, line, what);
	return FC_USAGE;
}

static bool at_record_end(const struct csv *c)
{
	return c->pos >= c->len || c->buf[c->pos] == '\n' ||
	       (c->buf[c->pos] == '\r' &&
		(c->pos + 1 == c->len || c->buf[c->pos + 1] == '\n'));
}

/* One field starting at c->pos, unquoted into place; *field points at it
 * once the caller NUL-terminates at the returned end. */
static int csv_field(struct csv *c, char **field, char **end, char *err,
		     size_t errlen)
{
	char *o = c->buf + c->pos;
	long start_line = c->line;

	*field = o;
	if (c->pos < c->len && c->buf[c->pos] == '"') {
		c->pos++;
		for (;;) {
			char ch;

			if (c->pos >= c->len)
				return csv_fail(c, start_line, err, errlen,
						"quoted field is not closed");
			ch = c->buf[c->pos++];
			if (ch == '"') {
				if (c->pos < c->len && c->buf[c->pos] == '"') {
					*o++ = '"';
					c->pos++;
					continue;
				}
				break;
			}
			if (ch == '\n')
				c->line++;
			*o++ = ch;
		}
		if (!at_record_end(c) && c->buf[c->pos] != ',')
			return csv_fail(c, c->line, err, errlen,
					"text after a closing quote");
	} else {
		while (!at_record_end(c) && c->buf[c->pos] != ',') {
			if (c->buf[c->pos] == '"')
				return csv_fail(c, c->line, err, errlen,
						"quote inside an unquoted field");
			c->pos++;
		}
		o = c->buf + c->pos;
	}
	*end = o;
	return 0;
}

/* Parse one record into at most `max` fields; *nf counts all of them. */
static int csv_record(struct csv *c, char **fields, size_t max, size_t *nf,
		      char *err, size_t errlen)
{
	*nf = 0;
	for (;;) {
		char *field, *end, term;
		int rc = csv_field(c, &field, &end, err, errlen);

		if (rc)
			return rc;
		term = c->pos < c->len ? c->buf[c->pos] : '\0';
		*end = '\0'; /* may overwrite the delimiter: `term` kept it */
		if (*nf < max)
			fields[*nf] = field;
		(*nf)++;
		if (term == ',') {
			c->pos++;
			continue;
		}
		/* `term` is '\n', '\r' (of "\r\n", or at the end) or the end */
		if (term == '\r')
			c->pos++;
		if (term == '\n' || (term == '\r' && c->pos < c->len)) {
			c->pos++;
			c->line++;
		}
		return 0;
	}
}

static int parse_rows(workload *w, char *err, size_t errlen)
{
	struct csv c = { w->source_path, w->src, w->src_len, 0, 1 };
	size_t cap = 0;
	char *f[2];
	size_t nf;
	const char *nul;
	int rc;

	nul = memchr(c.buf, '\0', c.len);
	if (nul) {
		long line = 1;

		for (const char *p = c.buf; p < nul; p++)
			line += *p == '\n';
		return csv_fail(&c, line, err, errlen, "NUL byte in the file");
	}
	if (c.len >= 3 && memcmp(c.buf, "\xef\xbb\xbf", 3) == 0)
		c.pos = 3; /* a UTF-8 byte order mark is not part of the header */
	if (c.pos >= c.len)
		return csv_fail(&c, 1, err, errlen,
				"empty file; expected the header 'row_key,payload'");
	rc = csv_record(&c, f, 2, &nf, err, errlen);
	if (rc)
		return rc;
	if (nf != 2 || strcmp(f[0], "row_key") != 0 || strcmp(f[1], "payload") != 0)
		return csv_fail(&c, 1, err, errlen,
				"bad header; expected 'row_key,payload'");
	while (c.pos < c.len) {
		long line = c.line;

		if (at_record_end(&c)) { /* blank line */
			csv_record(&c, f, 2, &nf, err, errlen);
			continue;
		}
		rc = csv_record(&c, f, 2, &nf, err, errlen);
		if (rc)
			return rc;
		if (nf != 2) {
			char what[96];

			snprintf(what, sizeof(what),
				 "expected 2 fields (row_key,payload), found %zu", nf);
			return csv_fail(&c, line, err, errlen, what);
		}
		if (!*f[0])
			return csv_fail(&c, line, err, errlen, "empty row_key");
		if (w->nrows == cap) {
			size_t ncap = cap ? cap * 2 : 1024;
			struct fence_row *grown = realloc(w->rows, ncap * sizeof(*grown));

			if (!grown)
				return FC_NOMEM;
			w->rows = grown;
			cap = ncap;
		}
		w->rows[w->nrows].row_key = f[0];
		w->rows[w->nrows].payload = f[1];
		w->nrows++;
	}
	return 0;
}

int workload_rows(workload *w, const struct fence_row **rows, size_t *n,
		  char *err, size_t errlen)
{
	if (!w->parsed) {
		w->parsed = true;
		w->parse_rc = parse_rows(w, w->parse_err, sizeof(w->parse_err));
		if (w->parse_rc) {
			free(w->rows);
			w->rows = NULL;
			w->nrows = 0;
		}
	}
	if (w->parse_rc) {
		snprintf(err, errlen, "%s", w->parse_err);
		return w->parse_rc;
	}
	*rows = w->rows;
	*n = w->nrows;
	return 0;
}
