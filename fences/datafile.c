/*
 * datafile.c -- writing and reading the CSV data files of file: targets
 * (format in datafile.h).
 *
 * The reader is strict on purpose: it is what the fs probe and the checker
 * use to decide whether a file holds exactly the rows its header claims, so
 * anything it cannot read unambiguously (an unterminated quote, a quote in
 * the middle of a bare field, a third field) is FC_CORRUPT rather than a
 * guess.  Every record buffer is bounded by DATAFILE_RECORD_MAX.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fences/datafile.h"

#define HEADER_PREFIX "# fencecert "

/* The header's %79s widths below assume this size. */
_Static_assert(JOURNAL_ID_MAX == 80, "update the header scanf widths");

struct csv {
	FILE *fp;
	char *buf;
	size_t len, cap;
	long line; /* 1-based line where the current record starts */
	const char *problem;
};

static int needs_quotes(const char *s)
{
	return *s == '\0' || *s == '#' || strpbrk(s, ",\"\r\n") != NULL;
}

static int write_field(FILE *fp, const char *s)
{
	if (!s)
		return 0;
	if (!needs_quotes(s))
		return fputs(s, fp) < 0 ? -1 : 0;
	if (putc('"', fp) == EOF)
		return -1;
	for (; *s; s++) {
		if (*s == '"' && putc('"', fp) == EOF)
			return -1;
		if (putc(*s, fp) == EOF)
			return -1;
	}
	return putc('"', fp) == EOF ? -1 : 0;
}

int datafile_write(FILE *fp, const struct datafile_header *h,
		   const struct fence_row *rows, size_t nrows)
{
	if (fprintf(fp, HEADER_PREFIX "op=%s epoch=%lld intent=%s rows=%lld\n"
		    DATAFILE_COLUMNS "\n", h->operation_id, h->epoch,
		    h->intent_digest, h->rows) < 0)
		return FC_IO;
	for (size_t i = 0; i < nrows; i++) {
		if (write_field(fp, rows[i].row_key) || putc(',', fp) == EOF ||
		    write_field(fp, rows[i].payload) || putc('\n', fp) == EOF)
			return FC_IO;
	}
	return 0;
}

static int push(struct csv *c, int ch)
{
	if (c->len == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		char *p;

		if (cap > DATAFILE_RECORD_MAX) {
			c->problem = "record too long";
			return FC_CORRUPT;
		}
		p = realloc(c->buf, cap);
		if (!p)
			return FC_NOMEM;
		c->buf = p;
		c->cap = cap;
	}
	c->buf[c->len++] = (char)ch;
	return 0;
}

static int corrupt(struct csv *c, const char *problem)
{
	c->problem = problem;
	return FC_CORRUPT;
}

/* A field in double quotes; on return *ch is the character after the
 * closing quote. */
static int read_quoted(struct csv *c, int *ch)
{
	int rc;

	for (;;) {
		*ch = getc(c->fp);
		if (*ch == EOF)
			return corrupt(c, "unterminated quoted field");
		if (*ch == '"') {
			*ch = getc(c->fp);
			if (*ch != '"')
				return 0;
		}
		if ((rc = push(c, *ch)))
			return rc;
	}
}

/* A bare field starting with *ch; on return *ch is ',', '\n' or EOF. */
static int read_bare(struct csv *c, int *ch)
{
	int rc;

	while (*ch != ',' && *ch != '\n' && *ch != EOF) {
		if (*ch == '"')
			return corrupt(c, "quote inside an unquoted field");
		if (*ch == '\r') {
			int next = getc(c->fp);

			if (next == '\n') {
				*ch = next;
				break;
			}
			ungetc(next, c->fp);
		}
		if ((rc = push(c, *ch)))
			return rc;
		*ch = getc(c->fp);
	}
	return 0;
}

/*
 * Read one record of exactly two fields.  Returns 1 with *key and *payload
 * pointing into c->buf (NULL for an empty bare field), 0 at end of file, or
 * a negative code.
 */
static int read_record(struct csv *c, const char **key, const char **payload)
{
	size_t start[2];
	int null[2], n = 0, ch, rc;

	c->len = 0;
	ch = getc(c->fp);
	if (ch == EOF)
		return ferror(c->fp) ? FC_IO : 0;
	for (;;) {
		int quoted = ch == '"';

		if (n == 2)
			return corrupt(c, "more than two fields");
		start[n] = c->len;
		rc = quoted ? read_quoted(c, &ch) : read_bare(c, &ch);
		if (rc)
			return rc;
		null[n] = !quoted && c->len == start[n];
		if ((rc = push(c, '\0')))
			return rc;
		n++;
		if (quoted && ch == '\r' && (ch = getc(c->fp)) != '\n')
			return corrupt(c, "stray carriage return");
		if (ch == ',') {
			ch = getc(c->fp);
			continue;
		}
		if (ch == '\n' || ch == EOF)
			break;
		return corrupt(c, "text after a closing quote");
	}
	if (ferror(c->fp))
		return FC_IO;
	if (n != 2)
		return corrupt(c, "expected two fields (row_key,payload)");
	*key = null[0] ? NULL : c->buf + start[0];
	*payload = null[1] ? NULL : c->buf + start[1];
	return 1;
}

static int parse_header(const char *line, struct datafile_header *h)
{
	int end = -1;

	if (sscanf(line, HEADER_PREFIX "op=%79s epoch=%lld intent=%79s "
		   "rows=%lld%n", h->operation_id, &h->epoch, h->intent_digest,
		   &h->rows, &end) != 4 || end < 0)
		return 0;
	return (line[end] == '\n' || line[end] == '\0') && h->epoch >= 0 &&
	       h->rows >= 0;
}

static int is_columns_line(const char *line)
{
	size_t n = strlen(DATAFILE_COLUMNS);

	return strncmp(line, DATAFILE_COLUMNS, n) == 0 &&
	       (line[n] == '\0' || strcmp(line + n, "\n") == 0 ||
		strcmp(line + n, "\r\n") == 0);
}

/* The optional header comment and the column line. */
static int read_preamble(struct csv *c, struct datafile_header *h)
{
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;

	memset(h, 0, sizeof(*h));
	c->line = 1;
	if (getline(&line, &cap, c->fp) < 0) {
		rc = ferror(c->fp) ? FC_IO : corrupt(c, "empty file");
		goto out;
	}
	if (strncmp(line, HEADER_PREFIX, strlen(HEADER_PREFIX)) == 0) {
		if (!parse_header(line, h)) {
			rc = corrupt(c, "malformed fencecert header");
			goto out;
		}
		h->present = 1;
		c->line++;
		if (getline(&line, &cap, c->fp) < 0) {
			rc = ferror(c->fp) ? FC_IO
					   : corrupt(c, "no column line");
			goto out;
		}
	}
	if (!is_columns_line(line))
		rc = corrupt(c, "expected the column line '" DATAFILE_COLUMNS
			     "'");
	c->line++;
out:
	free(line);
	return rc;
}

int datafile_read(const char *path, struct datafile_header *h,
		  datafile_row_fn row, void *ctx, char *err, size_t errlen)
{
	struct csv c = { 0 };
	const char *key = NULL, *payload = NULL;
	int rc;

	c.fp = fopen(path, "re");
	if (!c.fp) {
		snprintf(err, errlen, "cannot open data file '%s': %s", path,
			 strerror(errno));
		return errno == ENOENT ? FC_NOT_FOUND : FC_IO;
	}
	rc = read_preamble(&c, h);
	while (!rc && row) {
		rc = read_record(&c, &key, &payload);
		if (rc <= 0)
			break;
		for (const char *p = c.buf; p < c.buf + c.len; p++)
			c.line += *p == '\n';
		c.line++;
		rc = row(ctx, key, payload);
	}
	if (rc == FC_CORRUPT)
		snprintf(err, errlen, "malformed data file '%s' at line %ld: %s",
			 path, c.line, c.problem ? c.problem : "unreadable");
	else if (rc == FC_IO)
		snprintf(err, errlen, "cannot read data file '%s': %s", path,
			 strerror(errno));
	else if (rc == FC_NOMEM)
		snprintf(err, errlen, "out of memory reading '%s'", path);
	free(c.buf);
	fclose(c.fp);
	return rc;
}
