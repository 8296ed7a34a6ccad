/*
 * observe.c -- target observers (see observe.h).
 *
 * Invariants:
 *  1. Read-only: observe.sql, the default rows and the fences are read
 *     through one target_reader per schedule (fences/target.h): a SQLite
 *     target is opened once, query_only, without SQLITE_OPEN_CREATE and
 *     only after a stat() shows the file, and every look reads what the
 *     file holds then.  A hot rollback journal left by a route killed
 *     mid-transaction is rolled back on the first read -- the recovery
 *     any next connection performs, which changes no committed row.
 *     Commands are trusted to only read (they are the suite author's
 *     observers).
 *  2. Bounded: command output is capped at OBSERVE_OUTPUT_MAX bytes and
 *     OBSERVE_TIMEOUT_MS; a command that exceeds either is an error, not a
 *     partial observation.
 *  3. A failed observation carries no rows: the checker must never compare
 *     against half an answer.
 *  4. observe.out and observe.err lie in the schedule dir, which the route
 *     writes: they are read as hostile (common/fsutil.h,
 *     fs_open_untrusted()): a FIFO, a device or a symbolic link there is
 *     an error (observe.err: no tail), never a blocked or followed open.
 *     The SQLite target's own checks are fc_sqlite_open_reader()'s.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "fences/target.h"
#include "fences/target_pg.h"
#include "harness/run/observe.h"

struct observer {
	char *target;       /* expanded URL, as the route is given it */
	char *reads;        /* expanded URL the harness reads: no proxy */
	target_reader *reader; /* kept for the schedule: one connection */
	bool one_shot;         /* drop the connection after each look */
	char *sql;          /* observe.sql or NULL */
	char **argv;        /* expanded observe.command or NULL */
	char *table;
	char *out_path, *err_path;
	supervisor *sv;
	char errmsg[512];
};

/* Where an observation's rows go: observation n of a row store. */
struct rows {
	obs_store *s;
	int n;
	int rc;
};

static int fail(observer *o, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(observer *o, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(o->errmsg, sizeof(o->errmsg), fmt, ap);
	va_end(ap);
	return code;
}

/* The last len - 1 bytes of what the observer wrote on stderr, on one
 * line, or "(nothing on stderr)".  The file is in the schedule dir, where
 * the route writes: opened as hostile (invariant 4). */
static void err_tail(const char *path, char *out, size_t len)
{
	int fd = fs_open_untrusted(path, 0);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	size_t n = 0;
	long size;

	if (fd >= 0 && !f)
		close(fd);
	if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0) {
		if (size > (long)len - 1)
			fseek(f, size - (long)len + 1, SEEK_SET);
		else
			rewind(f);
		n = fread(out, 1, len - 1, f);
	}
	if (f)
		fclose(f);
	while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
		n--;
	out[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (out[i] == '\n' || out[i] == '\r' || out[i] == '\t')
			out[i] = ' ';
	if (!n)
		snprintf(out, len, "(nothing on stderr)");
}

static char *path_join(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

void observer_free(observer *o)
{
	if (!o)
		return;
	target_reader_free(o->reader);
	free(o->target);
	free(o->reads);
	free(o->sql);
	for (size_t i = 0; o->argv && o->argv[i]; i++)
		free(o->argv[i]);
	free(o->argv);
	free(o->table);
	free(o->out_path);
	free(o->err_path);
	free(o);
}

int observer_new(const struct route_spec *rs, const struct workload_spec *wl,
		 const struct template_vars *route_vars,
		 const struct template_vars *harness_vars, supervisor *sv,
		 observer **out, char *err, size_t errlen)
{
	const char *dir = route_vars->dir;
	observer *o = calloc(1, sizeof(*o));
	int rc;

	*out = NULL;
	if (!o) {
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	o->sv = sv;
	rc = scenario_expand(rs->target, route_vars, &o->target, err, errlen);
	if (!rc)
		rc = scenario_expand(rs->target, harness_vars, &o->reads, err,
				     errlen);
	if (!rc)
		rc = target_reader_new(o->reads, &o->reader, err, errlen);
	if (rc)
		goto fail;
	o->table = strdup(wl->table[0] ? wl->table : "events");
	o->out_path = path_join(dir, "observe.out");
	o->err_path = path_join(dir, "observe.err");
	if (!o->table || !o->out_path || !o->err_path)
		goto nomem;
	if (rs->observe_sql) {
		if (strncmp(o->reads, "sqlite:", 7) != 0) {
			snprintf(err, errlen, "observe.sql needs a sqlite: target, "
				 "not '%s'", rs->target);
			rc = FC_USAGE;
			goto fail;
		}
		o->sql = strdup(rs->observe_sql);
		if (!o->sql)
			goto nomem;
	} else if (rs->observe_command) {
		size_t n = 0;
		while (rs->observe_command[n])
			n++;
		o->argv = calloc(n + 1, sizeof(*o->argv));
		if (!o->argv)
			goto nomem;
		for (size_t i = 0; i < n; i++) {
			rc = scenario_expand(rs->observe_command[i],
					     harness_vars, &o->argv[i], err,
					     errlen);
			if (rc)
				goto fail;
		}
		if (!sv) {
			snprintf(err, errlen, "observe.command needs a supervisor");
			rc = FC_USAGE;
			goto fail;
		}
	}
	*out = o;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	rc = FC_NOMEM;
fail:
	observer_free(o);
	return rc;
}

void observer_one_shot(observer *o)
{
	o->one_shot = true;
}

void observer_drop(observer *o)
{
	if (o && o->reader)
		target_reader_drop(o->reader);
}

const char *observer_target(const observer *o)
{
	return o->target;
}

const char *observer_errmsg(const observer *o)
{
	return o->errmsg;
}

/* --- collecting rows ------------------------------------------------------ */

/* Rows of equal keys are summed by the store. */
static void rows_add(struct rows *r, const char *key, long long count)
{
	if (r->rc)
		return;
	r->rc = obs_store_add(r->s, r->n, key ? key : "<null>", count);
}

/* --- observe.sql and the default: the target reader (fences/target.h) ---- */

static int on_row(void *ctx, const char *row_key, const char *op,
		  long long count)
{
	struct rows *r = ctx;

	(void)op;
	rows_add(r, row_key, count);
	return r->rc;
}

static int observe_sql(observer *o, struct rows *r)
{
	char err[400];
	int rc = target_reader_sql(o->reader, o->sql, on_row, r, err,
				   sizeof(err));

	if (rc)
		return fail(o, rc, "observe.sql: %s", err);
	return 0;
}

static int observe_default(observer *o, struct rows *r)
{
	char err[400];
	int rc = target_reader_rows(o->reader, o->table, on_row, r, err,
				    sizeof(err));

	if (rc)
		return fail(o, rc, "cannot observe '%s': %s", o->reads, err);
	return 0;
}

/* --- observe.command ---------------------------------------------------- */

static int parse_line(observer *o, struct rows *r, char *line, size_t lineno)
{
	char *sp, *end;
	long long count;

	while (*line == ' ' || *line == '\t')
		line++;
	if (!*line)
		return 0;
	sp = strrchr(line, ' ');
	if (!sp || sp == line)
		return fail(o, FC_CORRUPT, "observe.command output line %zu is not "
			    "'row_key count'", lineno);
	errno = 0;
	count = strtoll(sp + 1, &end, 10);
	if (errno || *end || end == sp + 1 || count < 0)
		return fail(o, FC_CORRUPT, "observe.command output line %zu has "
			    "a bad count", lineno);
	while (sp > line && (sp[-1] == ' ' || sp[-1] == '\t'))
		sp--;
	*sp = '\0';
	rows_add(r, line, count);
	return r->rc;
}

static int read_output(observer *o, struct rows *r)
{
	char *text, *line, *next;
	size_t len, lineno = 0;
	int rc = 0;

	/* invariant 4: a regular file of at most OBSERVE_OUTPUT_MAX bytes */
	if (fs_read_untrusted(o->out_path, OBSERVE_OUTPUT_MAX, &text, &len)) {
		if (errno == EFBIG)
			return fail(o, FC_CORRUPT, "observe.command wrote more "
				    "than %ld bytes", OBSERVE_OUTPUT_MAX);
		return fail(o, FC_IO, "cannot read '%s': %s", o->out_path,
			    errno == EINVAL ? "not a regular file" :
			    errno == ELOOP ? "a symbolic link" : strerror(errno));
	}
	for (line = text; !rc && line < text + len; line = next) {
		char *nl = memchr(line, '\n', (size_t)(text + len - line));

		next = nl ? nl + 1 : text + len;
		if (nl)
			*nl = '\0';
		lineno++;
		rc = parse_line(o, r, line, lineno);
	}
	free(text);
	return rc;
}

static int observe_command(observer *o, struct rows *r)
{
	struct sv_spawn req = {
		.argv = o->argv,
		.stdout_path = o->out_path,
		.stderr_path = o->err_path,
		.timeout_ms = OBSERVE_TIMEOUT_MS,
	};
	struct sv_status st;
	char err[300];
	int rc;

	rc = supervisor_run(o->sv, &req, &st, err, sizeof(err));
	if (rc)
		return fail(o, rc, "observe.command: %s", err);
	if (st.timed_out)
		return fail(o, FC_FENCE_UNAVAILABLE, "observe.command '%s' timed "
			    "out after %d ms", o->argv[0], OBSERVE_TIMEOUT_MS);
	if (st.end != SV_EXITED || st.code != 0) {
		char tail[256];
		/* its stderr in the message: the file goes with the work dir */
		err_tail(o->err_path, tail, sizeof(tail));
		return fail(o, FC_FENCE_UNAVAILABLE, "observe.command '%s' failed "
			    "(%s %d): %s", o->argv[0],
			    st.end == SV_EXITED ? "exit" : "signal",
			    st.end == SV_EXITED ? st.code : st.signal, tail);
	}
	return read_output(o, r);
}

/* --- fences ----------------------------------------------------------------- */

struct fences {
	struct rec_fence *v;
	size_t n;
};

static int on_fence(void *ctx, const struct target_fence_record *rec)
{
	struct fences *fs = ctx;
	struct rec_fence *f = RECORD_PUSH(fs->v, fs->n);

	if (!f)
		return FC_NOMEM;
	snprintf(f->operation_id, sizeof(f->operation_id), "%s",
		 rec->operation_id ? rec->operation_id : "");
	f->applied_epoch = rec->applied_epoch;
	f->prepared_epoch = rec->prepared_epoch;
	f->rows = rec->rows;
	return 0;
}

static bool fences_observable(const char *url)
{
	return strncmp(url, "sqlite:", 7) == 0 || strncmp(url, "file:", 5) == 0 ||
	       target_pg_is_url(url);
}

int observer_take(observer *o, obs_store *rows, int n,
		  struct rec_observation *out)
{
	struct rows r = { rows, n, 0 };
	struct fences fs = { NULL, 0 };
	char err[400];
	int rc;

	o->errmsg[0] = '\0';
	r.rc = obs_store_begin(rows);
	if (!r.rc)
		r.rc = obs_store_fill_begin(rows, n);
	if (r.rc)
		rc = fail(o, r.rc, "%s", obs_store_errmsg(rows));
	else if (o->sql)
		rc = observe_sql(o, &r);
	else if (o->argv)
		rc = observe_command(o, &r);
	else
		rc = observe_default(o, &r);
	if (!rc && !r.rc)
		r.rc = obs_store_fill_end(rows);
	if (!rc && r.rc)
		rc = fail(o, r.rc, "cannot keep the rows: %s",
			  obs_store_errmsg(rows));

	if (!rc && fences_observable(o->reads)) {
		rc = target_reader_fences(o->reader, on_fence, &fs, err,
					  sizeof(err));
		if (rc)
			fail(o, rc, "cannot list fences of '%s': %s", o->reads,
			     err);
	}
	if (!rc && (rc = obs_store_commit(rows)))
		fail(o, rc, "cannot keep the rows: %s", obs_store_errmsg(rows));
	if (o->one_shot)
		target_reader_drop(o->reader);
	if (rc) {
		obs_store_rollback(rows);
		free(fs.v);
		out->status = rc;
		return rc;
	}
	out->fences_observed = fences_observable(o->reads);
	out->fences = fs.v;
	out->nfences = fs.n;
	out->status = 0;
	return 0;
}
