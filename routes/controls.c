/*
 * controls.c -- route variants that are wrong on purpose.
 *
 * They exist to be rejected: each one closes some of the retry window and
 * leaves a precise hole the harness must find (docs/controls.md).  They
 * reach into the target directly (SQLite API, plain files), because having
 * no fence is the point.  What each one gets wrong:
 *
 *   naive             appends every try; two tries = every row twice.
 *   xcom-guard        skips the write only when the previous try's
 *                     return.json says COMPLETE; a try killed after the
 *                     commit but before its evidence leaves none, so the
 *                     retry writes again.
 *   checkpoint-guard  check a local checkpoint, arm it, write, mark done.
 *                     Armed on entry stops (fail-closed) -- safe for one
 *                     worker; but check-then-arm is not atomic, so a zombie
 *                     paused between the check and the arm writes again
 *                     after the retry finished.
 *   journal-no-fence  the full journal protocol on a target write that
 *                     records no fence: its "probe" can only remember what
 *                     this process applied, so a retry in COMMITTING finds
 *                     nothing, concludes absent, and applies again.
 *   split-fence       the journal protocol with a real fence row, but the
 *                     rows commit in one transaction and the fence row in
 *                     a second; a kill between the two leaves rows without
 *                     a fence, the retry's probe says absent and re-applies.
 *                     (SQLite targets only.)
 *   pg-fence-row-only the certified route on a postgresql:// target whose
 *                     probe reads only the fence row and ignores the
 *                     transaction status (probe=fence-row-only): while an
 *                     earlier apply's COMMIT is still in flight it answers
 *                     ABSENT, so the attempt records FAILED_PRE_COMMIT
 *                     (or re-applies) although the transaction commits
 *                     later.  hold_commit in front of the server shows it.
 *   no-fsync          the certified route on a file:DIR target with every
 *                     fsync of the fence's files and directories and of
 *                     the evidence left out (fence_skip_sync(),
 *                     EVIDENCE_NO_FSYNC).  A killed process loses nothing
 *                     (the page cache outlives it), so kills alone certify
 *                     it; only a power loss -- the files as of their last
 *                     fsync -- can take an applied data file away after
 *                     the journal recorded TARGET_COMMITTED or COMPLETE.
 *
 * Each keeps the certified route's exit codes, failpoint names and
 * return.json, so only the hole differs.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "common/fsutil.h"
#include "fences/datafile.h"
#include "routes/controls.h"
#include "routes/evidence.h"
#include "routes/failpoint.h"
#include "routes/workload.h"

#define CONTROL_BUSY_TIMEOUT_MS 3000

/* ---- raw target access: rows in, no fence ---------------------------- */

enum raw_kind { RAW_SQLITE, RAW_FILE };

struct raw {
	enum raw_kind kind;
	const char *path;  /* database file or directory, inside the URL */
	sqlite3 *db;       /* SQLite: opened on first use */
	char err[512];
};

static int raw_init(struct raw *r, const char *url, bool sqlite_only)
{
	memset(r, 0, sizeof(*r));
	if (strncmp(url, "sqlite:", 7) == 0 && url[7]) {
		r->kind = RAW_SQLITE;
		r->path = url + 7;
	} else if (strncmp(url, "file:", 5) == 0 && url[5] && !sqlite_only) {
		r->kind = RAW_FILE;
		r->path = url + 5;
	} else {
		snprintf(r->err, sizeof(r->err), "target '%.*s...' is not supported "
			 "by this variant (%s)", 8, url,
			 sqlite_only ? "sqlite:PATH" : "sqlite:PATH or file:DIR");
		return FC_USAGE;
	}
	return 0;
}

static void raw_release(struct raw *r)
{
	sqlite3_close_v2(r->db);
	r->db = NULL;
}

static int raw_sql_fail(struct raw *r, const char *what)
{
	snprintf(r->err, sizeof(r->err), "cannot %s in '%s': %s", what, r->path,
		 r->db ? sqlite3_errmsg(r->db) : "no connection");
	if (r->db && !sqlite3_get_autocommit(r->db))
		sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
	return FC_FENCE_UNAVAILABLE;
}

/* Same durability settings as the SQLite fence, so benchmarks compare the
 * protocol, not the pragmas. */
static int raw_connect(struct raw *r)
{
	if (r->db)
		return 0;
	if (sqlite3_open_v2(r->path, &r->db, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		int rc = raw_sql_fail(r, "open the target");

		raw_release(r);
		return rc;
	}
	sqlite3_busy_timeout(r->db, CONTROL_BUSY_TIMEOUT_MS);
	if (sqlite3_exec(r->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL",
			 NULL, NULL, NULL) != SQLITE_OK)
		return raw_sql_fail(r, "configure the target");
	return 0;
}

static int sqlite_append(struct raw *r, const struct fence_batch *b)
{
	char sql[256];
	sqlite3_stmt *st;
	int rc;

	if ((rc = raw_connect(r)))
		return rc;
	snprintf(sql, sizeof(sql), "BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS "
		 "\"%s\"(row_key TEXT, payload TEXT, operation_id TEXT)", b->table);
	if (sqlite3_exec(r->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return raw_sql_fail(r, "start the write");
	snprintf(sql, sizeof(sql), "INSERT INTO \"%s\"(row_key, payload, "
		 "operation_id) VALUES(?, ?, ?)", b->table);
	if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
		return raw_sql_fail(r, "prepare the insert");
	sqlite3_bind_text(st, 3, b->operation_id, -1, SQLITE_STATIC);
	for (size_t i = 0; i < b->nrows; i++) {
		sqlite3_bind_text(st, 1, b->rows[i].row_key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, b->rows[i].payload, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			sqlite3_finalize(st);
			return raw_sql_fail(r, "insert the rows");
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return raw_sql_fail(r, "commit the rows");
	return 0;
}

/* A new data file DIR/<table>/<name>.csv, complete or absent. */
static int file_append(struct raw *r, const struct fence_batch *b,
		       long long epoch, const char *name)
{
	char dir[4096], tmp[4200], final[4200];
	struct datafile_header h = { .present = 1, .epoch = epoch,
				     .rows = (long long)b->nrows };
	FILE *fp;
	int fd, rc;

	snprintf(h.operation_id, sizeof(h.operation_id), "%s", b->operation_id);
	snprintf(h.intent_digest, sizeof(h.intent_digest), "%s", b->intent_digest);
	snprintf(dir, sizeof(dir), "%s/%s", r->path, b->table);
	snprintf(tmp, sizeof(tmp), "%s/.tmp-control-XXXXXX", dir);
	snprintf(final, sizeof(final), "%s/%s.csv", dir, name);
	if ((mkdir(r->path, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(dir, 0755) < 0 && errno != EEXIST) ||
	    (fd = mkstemp(tmp)) < 0) {
		snprintf(r->err, sizeof(r->err), "cannot write in '%.400s': %s", dir,
			 strerror(errno));
		return FC_FENCE_UNAVAILABLE;
	}
	fp = fdopen(fd, "w");
	rc = fp ? datafile_write(fp, &h, b->rows, b->nrows) : FC_IO;
	if (!rc && (fflush(fp) != 0 || fsync(fd) != 0))
		rc = FC_IO;
	if (fp ? fclose(fp) != 0 : close(fd) != 0)
		rc = FC_IO;
	if (!rc && rename(tmp, final) != 0)
		rc = FC_IO;
	if (rc) {
		snprintf(r->err, sizeof(r->err), "cannot write '%.400s': %s", final,
			 strerror(errno));
		unlink(tmp);
		return FC_FENCE_UNAVAILABLE;
	}
	if (fs_fsync_dir(dir) < 0) {
		/* best effort: the file is in place either way */
	}
	return 0;
}

/* Append the batch; `name` makes file-target data files unique. */
static int raw_append(struct raw *r, const struct fence_batch *b,
		      long long epoch, const char *name)
{
	if (r->kind == RAW_SQLITE)
		return sqlite_append(r, b);
	return file_append(r, b, epoch, name);
}

/* ---- what the standalone variants share ------------------------------ */

struct standalone {
	const char *variant;
	const struct route_config *c;
	workload *w;
	struct fence_batch batch;
	struct raw target;
	char why[640];
};

static int finish(struct standalone *s, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int finish(struct standalone *s, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fencecert route (%s): try %lld: exit %d: %s\n",
		s->variant, s->c->try_number, status, s->why);
	raw_release(&s->target);
	workload_free(s->w);
	return status;
}

static int standalone_load(struct standalone *s)
{
	const struct fence_row *rows;
	char err[512];
	size_t n;
	int rc;

	rc = workload_load(s->c->workload_path, &s->w, err, sizeof(err));
	if (!rc)
		rc = workload_rows(s->w, &rows, &n, err, sizeof(err));
	if (!rc && raw_init(&s->target, s->c->target_url, false)) {
		snprintf(err, sizeof(err), "%s", s->target.err);
		rc = FC_USAGE;
	}
	if (rc)
		return finish(s, rc == FC_USAGE ? ROUTE_EXIT_USAGE : ROUTE_EXIT_RETRY,
			      "%s", err);
	s->batch = (struct fence_batch){
		.operation_id = workload_operation_id(s->w),
		.intent_digest = workload_intent_digest(s->w),
		.table = workload_table(s->w),
		.strategy = FENCE_APPEND,
		.rows = rows,
		.nrows = n,
	};
	return 0;
}

/* The write, between the certified route's failpoint names for it. */
static int standalone_write(struct standalone *s)
{
	char name[128];

	if (failpoint_hit(FP_BEFORE_TARGET_COMMIT))
		return finish(s, ROUTE_EXIT_RETRY, "write failed (failpoint %s)",
			      FP_BEFORE_TARGET_COMMIT);
	snprintf(name, sizeof(name), "%s-%.16s-try%lld-%ld", s->variant,
		 s->batch.operation_id + 7, s->c->try_number, (long)getpid());
	if (raw_append(&s->target, &s->batch, 0, name))
		return finish(s, ROUTE_EXIT_RETRY, "%s", s->target.err);
	if (failpoint_hit(FP_AFTER_TARGET_COMMIT))
		return finish(s, ROUTE_EXIT_RETRY, "write reply lost (failpoint "
			      "%s)", FP_AFTER_TARGET_COMMIT);
	return 0;
}

static int standalone_evidence(struct standalone *s, bool mutated)
{
	struct route_result r = {
		.operation_id = s->batch.operation_id,
		.intent_digest = s->batch.intent_digest,
		.rows = (long long)s->batch.nrows,
		.try_number = s->c->try_number,
		.epoch = 0,
		.mutated = mutated,
	};
	char err[512];

	if (failpoint_hit(FP_BEFORE_EVIDENCE))
		return finish(s, ROUTE_EXIT_RETRY, "evidence failed (failpoint "
			      "%s)", FP_BEFORE_EVIDENCE);
	if (evidence_write_return(s->c->xcom_dir, &r, EVIDENCE_FSYNC, err,
				  sizeof(err)))
		return finish(s, ROUTE_EXIT_RETRY, "%s", err);
	if (failpoint_hit(FP_AFTER_EVIDENCE))
		return finish(s, ROUTE_EXIT_RETRY, "evidence reply lost "
			      "(failpoint %s)", FP_AFTER_EVIDENCE);
	return finish(s, ROUTE_EXIT_COMPLETE, "%s %zu rows",
		      mutated ? "wrote" : "skipped the write of",
		      s->batch.nrows);
}

/* ---- naive ------------------------------------------------------------ */

static int run_naive(const struct route_config *c)
{
	struct standalone s = { .variant = "naive", .c = c };
	int rc;

	if ((rc = standalone_load(&s)) || (rc = standalone_write(&s)))
		return rc;
	return standalone_evidence(&s, true);
}

/* ---- xcom-guard -------------------------------------------------------- */

/* The rejected proposal: "the previous try said it committed" is taken as
 * the truth, and "it said nothing" as "it did nothing". */
static bool previous_try_committed(const struct standalone *s)
{
	const char *prev = getenv(PROTO_ENV_PREV_XCOM_DIR);
	char path[4096];
	json_t *doc;
	bool done;

	if (s->c->try_number < 2 || !prev || !*prev)
		return false;
	snprintf(path, sizeof(path), "%s/%s", prev, EVIDENCE_RETURN_FILE);
	doc = json_load_file(path, 0, NULL);
	done = doc &&
	       json_is_string(json_object_get(doc, "state")) &&
	       strcmp(json_string_value(json_object_get(doc, "state")), "COMPLETE") == 0 &&
	       json_is_string(json_object_get(doc, "operation_id")) &&
	       strcmp(json_string_value(json_object_get(doc, "operation_id")),
		      s->batch.operation_id) == 0;
	json_decref(doc);
	return done;
}

static int run_xcom_guard(const struct route_config *c)
{
	struct standalone s = { .variant = "xcom-guard", .c = c };
	int rc;

	if ((rc = standalone_load(&s)))
		return rc;
	if (previous_try_committed(&s))
		return standalone_evidence(&s, false);
	if ((rc = standalone_write(&s)))
		return rc;
	return standalone_evidence(&s, true);
}

/* ---- checkpoint-guard -------------------------------------------------- */

/* "<target path>.checkpoint-<op>" beside the target, outside the run dir
 * so losing the pod does not lose it. */
static int guard_place(const struct standalone *s, char *dir, size_t dlen,
		       char *name, size_t nlen)
{
	char copy[4096];

	snprintf(copy, sizeof(copy), "%s", s->target.path);
	while (strlen(copy) > 1 && copy[strlen(copy) - 1] == '/')
		copy[strlen(copy) - 1] = '\0';
	snprintf(name, nlen, "%s.checkpoint-%.16s", basename(copy),
		 s->batch.operation_id + 7);
	snprintf(dir, dlen, "%s", dirname(copy));
	return 0;
}

static const char *guard_read(const char *dir, const char *name, char *buf,
			      size_t len)
{
	char path[4096 + 256 + 2];
	json_t *doc;
	const char *state;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	doc = json_load_file(path, 0, NULL);
	state = json_string_value(json_object_get(doc, "state"));
	snprintf(buf, len, "%s", state ? state : (doc ? "malformed" : ""));
	json_decref(doc);
	return buf;
}

static int guard_write(struct standalone *s, const char *dir, const char *name,
		       const char *state)
{
	json_t *doc = json_pack("{s:s, s:s}", "operation_id",
				s->batch.operation_id, "state", state);
	char err[512];
	int rc = doc ? evidence__write_json(dir, name, doc, EVIDENCE_FSYNC, err,
					    sizeof(err))
		     : FC_NOMEM;

	json_decref(doc);
	if (rc)
		return finish(s, ROUTE_EXIT_RETRY, "cannot write checkpoint: %s",
			      doc ? err : "out of memory");
	return 0;
}

static int run_checkpoint_guard(const struct route_config *c)
{
	struct standalone s = { .variant = "checkpoint-guard", .c = c };
	char dir[4096], name[256], state[32];
	int rc;

	if ((rc = standalone_load(&s)))
		return rc;
	guard_place(&s, dir, sizeof(dir), name, sizeof(name));
	guard_read(dir, name, state, sizeof(state));
	if (strcmp(state, "done") == 0)
		return standalone_evidence(&s, false);
	if (*state)
		return finish(&s, ROUTE_EXIT_STOP, "checkpoint '%s/%s' is %s: an "
			      "earlier try may have written; stopping", dir, name,
			      state);
	/* The window the guard cannot close: checked, not yet armed. */
	if (failpoint_hit(FP_AFTER_INTENT))
		return finish(&s, ROUTE_EXIT_RETRY, "failed before arming "
			      "(failpoint after_intent)");
	if ((rc = guard_write(&s, dir, name, "armed")) ||
	    (rc = standalone_write(&s)) ||
	    (rc = guard_write(&s, dir, name, "done")))
		return rc;
	return standalone_evidence(&s, true);
}

/* ---- the journaled variants: runtime with a target that lacks a fence -- */

struct unfenced {
	struct raw raw;
	bool split;             /* split-fence: rows, then a fence row */
	bool applied;           /* journal-no-fence: what this process did */
	long long epoch, rows;
	char intent[JOURNAL_ID_MAX];
};

static int unfenced_open(const char *url, void **t, bool split, char *err,
			 size_t errlen)
{
	struct unfenced *u = calloc(1, sizeof(*u));
	int rc;

	*t = NULL;
	if (!u) {
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	rc = raw_init(&u->raw, url, split);
	if (rc) {
		snprintf(err, errlen, "%s", u->raw.err);
		free(u);
		return rc;
	}
	u->split = split;
	*t = u;
	return 0;
}

static int nofence_open(const char *url, void **t, char *err, size_t errlen)
{
	return unfenced_open(url, t, false, err, errlen);
}

static int split_open(const char *url, void **t, char *err, size_t errlen)
{
	return unfenced_open(url, t, true, err, errlen);
}

static void unfenced_close(void *t)
{
	struct unfenced *u = t;

	raw_release(&u->raw);
	free(u);
}

static const char *unfenced_name(void *t)
{
	return ((struct unfenced *)t)->split ? "split-sqlite" : "none";
}

static const char *unfenced_errmsg(void *t)
{
	return ((struct unfenced *)t)->raw.err;
}

/* Neither variant has an epoch check: prepare records nothing. */
static int unfenced_prepare(void *t, const char *op, long long epoch)
{
	return 0;
}

/* split-fence's second transaction: the fence row, in the real fence's
 * table, so its probe and the observer read it like any fence. */
static int split_fence_row(struct unfenced *u, long long epoch,
			   const struct fence_batch *b)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_exec(u->raw.db, "BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS "
			 "fencecert_fence(operation_id TEXT PRIMARY KEY, epoch "
			 "INTEGER NOT NULL, intent_digest TEXT NOT NULL, rows "
			 "INTEGER NOT NULL, applied_at INTEGER NOT NULL)",
			 NULL, NULL, NULL) != SQLITE_OK)
		return raw_sql_fail(&u->raw, "start the fence transaction");
	if (sqlite3_prepare_v2(u->raw.db, "INSERT INTO fencecert_fence VALUES"
			       "(?, ?, ?, ?, strftime('%s','now') * 1000)", -1,
			       &st, NULL) != SQLITE_OK)
		return raw_sql_fail(&u->raw, "prepare the fence row");
	sqlite3_bind_text(st, 1, b->operation_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, epoch);
	sqlite3_bind_text(st, 3, b->intent_digest, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)b->nrows);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return raw_sql_fail(&u->raw, "write the fence row");
	if (sqlite3_exec(u->raw.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return raw_sql_fail(&u->raw, "commit the fence row");
	return 0;
}

static int unfenced_apply(void *t, long long epoch, const struct fence_batch *b,
			  enum fence_outcome *outcome)
{
	struct unfenced *u = t;
	char name[128];
	int rc;

	*outcome = FENCE_PROVED_ABSENT;
	snprintf(name, sizeof(name), "nofence-%.16s-e%lld-%ld",
		 b->operation_id + 7, epoch, (long)getpid());
	rc = raw_append(&u->raw, b, epoch, name);
	if (rc)
		return rc;
	*outcome = FENCE_PROVED_PRESENT;
	u->applied = true;
	u->epoch = epoch;
	u->rows = (long long)b->nrows;
	snprintf(u->intent, sizeof(u->intent), "%s", b->intent_digest);
	if (!u->split)
		return 0;
	/* The rows are committed; the fence row is not yet. */
	if (failpoint_hit(FP_AFTER_TARGET_COMMIT)) {
		*outcome = FENCE_OUTCOME_UNKNOWN;
		snprintf(u->raw.err, sizeof(u->raw.err), "fence transaction "
			 "failed (failpoint after_target_commit)");
		return FC_FENCE_UNAVAILABLE;
	}
	rc = split_fence_row(u, epoch, b);
	if (rc)
		*outcome = FENCE_OUTCOME_UNKNOWN;
	return rc;
}

static int split_probe(struct unfenced *u, const char *op,
		       struct fence_probe *out)
{
	sqlite3_stmt *st;
	int rc;

	out->answer = FENCE_ABSENT;
	if (access(u->raw.path, F_OK) != 0)
		return 0;
	if ((rc = raw_connect(&u->raw)))
		return rc;
	if (sqlite3_prepare_v2(u->raw.db, "SELECT epoch, intent_digest, rows "
			       "FROM fencecert_fence WHERE operation_id = ?", -1,
			       &st, NULL) != SQLITE_OK) {
		/* no fence table yet: nothing was ever fenced */
		if (strstr(sqlite3_errmsg(u->raw.db), "no such table"))
			return 0;
		out->answer = FENCE_UNKNOWN;
		return raw_sql_fail(&u->raw, "read the fence");
	}
	sqlite3_bind_text(st, 1, op, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		out->answer = FENCE_APPLIED;
		out->epoch = sqlite3_column_int64(st, 0);
		snprintf(out->intent_digest, sizeof(out->intent_digest), "%s",
			 (const char *)sqlite3_column_text(st, 1));
		out->rows = sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		out->answer = FENCE_UNKNOWN;
		return raw_sql_fail(&u->raw, "read the fence");
	}
	return 0;
}

/* journal-no-fence: the target holds nothing to ask, so the only memory of
 * an apply is this process's -- gone on the next try. */
static int unfenced_probe(void *t, const char *op, struct fence_probe *out)
{
	struct unfenced *u = t;

	memset(out, 0, sizeof(*out));
	if (u->split)
		return split_probe(u, op, out);
	out->answer = u->applied ? FENCE_APPLIED : FENCE_ABSENT;
	if (u->applied) {
		out->epoch = u->epoch;
		out->rows = u->rows;
		snprintf(out->intent_digest, sizeof(out->intent_digest), "%s",
			 u->intent);
	}
	return 0;
}

static const struct runtime_target nofence_target = {
	.variant = "journal-no-fence",
	.open = nofence_open,
	.close = unfenced_close,
	.name = unfenced_name,
	.errmsg = unfenced_errmsg,
	.prepare = unfenced_prepare,
	.apply = unfenced_apply,
	.probe = unfenced_probe,
};

static int run_journal_no_fence(const struct route_config *c)
{
	return runtime_run_with(c, &nofence_target);
}

/* split-fence runs on the same unfenced target; only its label and its
 * open (which sets u->split) differ. */
static int run_split_fence(const struct route_config *c)
{
	struct runtime_target t = nofence_target;

	t.variant = "split-fence";
	t.open = split_open;
	return runtime_run_with(c, &t);
}

/* ---- pg-fence-row-only ------------------------------------------------ */

static int run_pg_fence_row_only(const struct route_config *c)
{
	struct runtime_target t = runtime_fence_port;
	struct route_config copy = *c;
	const char *url = c->target_url;
	char *with;
	int status;

	if (!url || (strncmp(url, "postgresql:", 11) != 0 &&
		     strncmp(url, "postgres:", 9) != 0)) {
		fprintf(stderr, "fencecert: USAGE: variant pg-fence-row-only needs "
			"a postgresql:// target\n");
		return ROUTE_EXIT_USAGE;
	}
	if (asprintf(&with, "%s%sprobe=fence-row-only", url,
		     strchr(url, '?') ? "&" : "?") < 0) {
		fprintf(stderr, "fencecert: out of memory\n");
		return ROUTE_EXIT_RETRY;
	}
	t.variant = "pg-fence-row-only";
	copy.target_url = with;
	status = runtime_run_with(&copy, &t);
	free(with);
	return status;
}

/* ---- no-fsync ---------------------------------------------------------- */

/* The fence port, told to leave out its syncs. */
static int nofsync_open(const char *url, void **t, char *err, size_t errlen)
{
	int rc = runtime_fence_port.open(url, t, err, errlen);

	if (rc)
		return rc;
	rc = fence_skip_sync(*t);
	if (rc) {
		snprintf(err, errlen, "%s", fence_errmsg(*t));
		runtime_fence_port.close(*t);
		*t = NULL;
	}
	return rc;
}

static int run_no_fsync(const struct route_config *c)
{
	struct runtime_target t = runtime_fence_port;
	struct route_config copy = *c;

	if (!c->target_url || strncmp(c->target_url, "file:", 5) != 0) {
		fprintf(stderr, "fencecert: USAGE: variant no-fsync needs a "
			"file:DIR target\n");
		return ROUTE_EXIT_USAGE;
	}
	t.variant = "no-fsync";
	t.open = nofsync_open;
	copy.evidence_no_fsync = true;
	return runtime_run_with(&copy, &t);
}

/* ---- dispatch ---------------------------------------------------------- */

static const struct variant {
	const char *name;
	bool journal;
	int (*run)(const struct route_config *c);
} variants[] = {
	{ "naive", false, run_naive },
	{ "xcom-guard", false, run_xcom_guard },
	{ "checkpoint-guard", false, run_checkpoint_guard },
	{ "journal-no-fence", true, run_journal_no_fence },
	{ "split-fence", true, run_split_fence },
	{ "pg-fence-row-only", true, run_pg_fence_row_only },
	{ "no-fsync", true, run_no_fsync },
	{ NULL, false, NULL },
};

static const struct variant *find(const char *name)
{
	for (const struct variant *v = variants; v->name; v++)
		if (strcmp(v->name, name) == 0)
			return v;
	return NULL;
}

bool controls_known(const char *variant)
{
	return find(variant) != NULL;
}

bool controls_need_journal(const char *variant)
{
	const struct variant *v = find(variant);

	return v && v->journal;
}

int controls_run(const char *variant, const struct route_config *c)
{
	const struct variant *v = find(variant);

	if (!v) {
		fprintf(stderr, "fencecert: USAGE: unknown variant '%s'\n", variant);
		return ROUTE_EXIT_USAGE;
	}
	return v->run(c);
}
