/*
 * obs_store.c -- a schedule's rows in a scratch SQLite database (see
 * obs_store.h).
 *
 * Invariants:
 *  1. Bounded memory: the page cache is capped (cache_size), sorts and
 *     temporary tables spill to files (temp_store=FILE), and every query
 *     walks an index in the order it answers in, so none sorts rows.
 *  2. Scratch: nothing here must survive a crash (journal_mode=OFF,
 *     synchronous=OFF); the file goes with the work dir.
 *  3. One copy of each question: every SQL statement over the rows is in
 *     the table below; callers see counts and visitors.
 *  4. An observation declared the same as another (obs_store_same) has no
 *     rows of its own: every question about it is asked of the one it
 *     repeats.  Before either of the two is written to, the repeat gets
 *     its own copy of the rows, so a write never shows through twice.
 *  5. Content addressed: an observation filled through obs_store_fill_*
 *     is named by the SHA-256 of its rows in key order (table digest);
 *     one whose rows another observation already holds repeats it
 *     (invariant 4) instead of inserting them again.  The rows wait in
 *     memory only up to FILL_MAX_ROWS / FILL_MAX_BYTES; a bigger
 *     observation goes to the table as it comes and gets no name.
 *  6. Answers kept are answers over rows that did not change: table
 *     rowsum keeps obs_store_op_rows() per (observation, op), and both it
 *     and digest lose an observation's entries whenever its rows are
 *     written (forget()) and all of them when the expected rows change.
 *     Both are tables, so a page copy (obs_store_open_copy) carries them.
 *  7. A loan (obs_store_borrow) is the lender's connection and statements
 *     under a handle of its own (repeats, fill, messages): it starts and
 *     ends with no observation numbered below KEPT_BASE in the database
 *     (purge()), so what one schedule observed never shows in the next;
 *     a loan whose purge failed leaves its lender refusing loans.  A kept
 *     copy of a loan's observation takes over its name (digest holds a
 *     content once): the loan's observation goes unnamed, which only
 *     obs_store_keep() would read, and a later fill of those rows
 *     repeats the kept one.
 */
#include <limits.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/model/obs_store.h"
#include "journal/identity.h"

/* Invariant 5's bound on an observation held in memory while it fills. */
#define FILL_MAX_ROWS 200000
#define FILL_MAX_BYTES (16u << 20)
/* obs_store_keep(): where kept observations are numbered from, so that no
 * record's observation (numbered from 0 by attempt) meets one; how many;
 * and how many rows in all, beyond twice the expected ones, since every
 * schedule's questions range over them. */
#define KEPT_BASE (1 << 30)
#define KEPT_MAX 4
#define KEPT_SLACK_ROWS 256

enum stmt {
	S_EXPECT,
	S_ADD,
	S_DROP,
	S_CLEAR,
	S_COUNT,
	S_TOTAL,
	S_OP_ROWS,
	S_OWNERS_DUP,
	S_DUP,
	S_MISSING,
	S_CHANGED,
	S_ROWS_PREV,
	S_ROWS_NOW,
	S_COPY,
	S_DIGEST_FIND,
	S_DIGEST_PUT,
	S_DIGEST_DROP,
	S_DIGEST_OF,
	S_MEMO_GET,
	S_MEMO_PUT,
	S_MEMO_DROP,
	S_MEMO_CLEAR,
	S_KEPT_NEXT,
	S_KEPT_ROWS,
	S_EXPECTED_ROWS,
	S_OPS,
	S_PURGE_OBS,
	S_PURGE_DIGEST,
	S_PURGE_MEMO,
	S_COUNT_ALL
};

static const char *const stmt_sql[S_COUNT_ALL] = {
	[S_EXPECT] = "INSERT OR IGNORE INTO expected(op, row_key) "
		     "VALUES (?1, ?2)",
	[S_ADD] = "INSERT INTO obs(n, row_key, count) VALUES (?1, ?2, ?3) "
		  "ON CONFLICT(n, row_key) DO UPDATE SET "
		  "count = count + excluded.count",
	[S_DROP] = "DELETE FROM obs WHERE n = ?1 AND row_key = ?2",
	[S_CLEAR] = "DELETE FROM obs WHERE n = ?1",
	[S_COUNT] = "SELECT count FROM obs WHERE n = ?1 AND row_key = ?2",
	[S_TOTAL] = "SELECT COUNT(*) FROM obs WHERE n = ?1",
	[S_OP_ROWS] = "SELECT COUNT(*), COALESCE(SUM(c > 0), 0), "
		      "COALESCE(SUM(c = 1), 0), COALESCE(SUM(c > 1), 0), "
		      "COALESCE(SUM(c = 0), 0) FROM (SELECT "
		      "COALESCE(o.count, 0) AS c FROM expected e LEFT JOIN obs o "
		      "ON o.n = ?1 AND o.row_key = e.row_key WHERE e.op = ?2)",
	[S_OWNERS_DUP] = "SELECT DISTINCT COALESCE(e.op, 0) FROM obs o "
			 "LEFT JOIN expected e ON e.row_key = o.row_key "
			 "WHERE o.n = ?1 AND o.count > 1",
	[S_DUP] = "SELECT o.row_key, o.count FROM obs o LEFT JOIN expected e "
		  "ON e.row_key = o.row_key WHERE o.n = ?1 AND o.count > 1 "
		  "AND COALESCE(e.op, 0) = ?2 ORDER BY o.row_key",
	[S_MISSING] = "SELECT e.row_key FROM expected e WHERE e.op = ?2 AND "
		      "NOT EXISTS (SELECT 1 FROM obs o WHERE o.n = ?1 AND "
		      "o.row_key = e.row_key AND o.count > 0) ORDER BY e.seq",
	[S_CHANGED] = "SELECT e.row_key, COALESCE(b.count, 0), "
		      "COALESCE(c.count, 0) FROM expected e "
		      "LEFT JOIN obs b ON b.n = ?1 AND b.row_key = e.row_key "
		      "LEFT JOIN obs c ON c.n = ?2 AND c.row_key = e.row_key "
		      "WHERE e.op = ?3 AND "
		      "COALESCE(b.count, 0) <> COALESCE(c.count, 0) "
		      "ORDER BY e.seq",
	[S_ROWS_PREV] = "SELECT row_key, count FROM obs WHERE n = ?1 "
			"ORDER BY row_key",
	[S_ROWS_NOW] = "SELECT row_key, count FROM obs WHERE n = ?1 "
		       "ORDER BY row_key",
	[S_COPY] = "INSERT INTO obs(n, row_key, count) SELECT ?1, row_key, "
		   "count FROM obs WHERE n = ?2",
	[S_DIGEST_FIND] = "SELECT n FROM digest WHERE d = ?2",
	[S_DIGEST_PUT] = "INSERT OR REPLACE INTO digest(d, n) VALUES (?2, ?1)",
	[S_DIGEST_DROP] = "DELETE FROM digest WHERE n = ?1",
	[S_DIGEST_OF] = "SELECT d FROM digest WHERE n = ?1",
	[S_MEMO_GET] = "SELECT expected, present, once, duplicated, missing "
		       "FROM rowsum WHERE n = ?1 AND op = ?2",
	[S_MEMO_PUT] = "INSERT OR REPLACE INTO rowsum(n, op, expected, present, "
		       "once, duplicated, missing) VALUES (?1, ?2, ?3, ?4, ?5, "
		       "?6, ?7)",
	[S_MEMO_DROP] = "DELETE FROM rowsum WHERE n = ?1",
	[S_MEMO_CLEAR] = "DELETE FROM rowsum",
	/* by their names: a kept observation may hold no row */
	[S_KEPT_NEXT] = "SELECT COALESCE(MAX(n) + 1, ?1) FROM digest "
			"WHERE n >= ?1",
	[S_KEPT_ROWS] = "SELECT COUNT(*) FROM obs WHERE n >= ?1",
	[S_EXPECTED_ROWS] = "SELECT COUNT(*) FROM expected",
	[S_OPS] = "SELECT DISTINCT op FROM expected ORDER BY op",
	/* a loan's observations: every one numbered below ?1 (KEPT_BASE) */
	[S_PURGE_OBS] = "DELETE FROM obs WHERE n < ?1",
	[S_PURGE_DIGEST] = "DELETE FROM digest WHERE n < ?1",
	[S_PURGE_MEMO] = "DELETE FROM rowsum WHERE n < ?1",
};

static const char settings[] =
	"PRAGMA journal_mode = OFF;"
	"PRAGMA synchronous = OFF;"
	"PRAGMA cache_size = -500;"
	"PRAGMA temp_store = FILE;";

static const char schema[] =
	"CREATE TABLE expected(seq INTEGER PRIMARY KEY, op INTEGER NOT NULL, "
	"row_key TEXT NOT NULL UNIQUE);"
	"CREATE INDEX expected_op ON expected(op);"
	"CREATE TABLE obs(n INTEGER NOT NULL, row_key TEXT NOT NULL, "
	"count INTEGER NOT NULL, PRIMARY KEY (n, row_key)) WITHOUT ROWID;"
	"CREATE TABLE digest(d BLOB PRIMARY KEY, n INTEGER NOT NULL UNIQUE);"
	"CREATE TABLE rowsum(n INTEGER NOT NULL, op INTEGER NOT NULL, "
	"expected INTEGER NOT NULL, present INTEGER NOT NULL, "
	"once INTEGER NOT NULL, duplicated INTEGER NOT NULL, "
	"missing INTEGER NOT NULL, PRIMARY KEY (n, op)) WITHOUT ROWID;";

/* One row of an observation filling (invariant 5). */
struct fill_row {
	char *key;
	long long count;
};

struct obs_store {
	sqlite3 *db;            /* a loan's: its lender's */
	sqlite3_stmt **st;      /* own_st, or the lender's (invariant 7) */
	sqlite3_stmt *own_st[S_COUNT_ALL];
	obs_store *lender;      /* a loan's; NULL */
	bool lent;              /* a loan of this store is out */
	bool spoiled;           /* a loan's purge failed: no more loans */
	bool freed;             /* freed while lent: the loan's return
				   frees it */
	int *same;     /* same[n]: 1 + the observation n repeats, 0: its own
			  rows (invariant 4) */
	size_t nsame;
	int filled_same;       /* an observation fill_end made a repeat in
				  this transaction, or -1 (rollback) */
	struct {
		bool on, spilled;
		int n;
		struct fill_row *v;
		size_t len, cap, bytes;
	} fill;                /* obs_store_fill_begin() .. _end() */
	bool expect_changed;   /* rowsum is stale (invariant 6) */
	char errmsg[256];
};

/* The observation whose rows n's questions read (invariant 4). */
static int at(const obs_store *s, int n)
{
	return n >= 0 && (size_t)n < s->nsame && s->same[n] ? s->same[n] - 1 : n;
}

static int fail(obs_store *s, const char *what)
{
	int code = sqlite3_errcode(s->db);

	snprintf(s->errmsg, sizeof(s->errmsg), "%s: %s", what,
		 sqlite3_errmsg(s->db));
	return code == SQLITE_NOMEM ? FC_NOMEM : FC_IO;
}

/* Copy every page of from's database into s's (sqlite3_backup). */
static int copy_pages(obs_store *s, const obs_store *from)
{
	sqlite3_backup *b = sqlite3_backup_init(s->db, "main", from->db,
						"main");
	int rc;

	if (!b)
		return SQLITE_ERROR;
	rc = sqlite3_backup_step(b, -1);
	sqlite3_backup_finish(b);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* obs_store_open(), its tables created, or copied from `from`. */
static int open_store(const char *path, const obs_store *from,
		      obs_store **out, char *err, size_t errlen)
{
	obs_store *s = calloc(1, sizeof(*s));
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;

	*out = NULL;
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	s->st = s->own_st;
	if (path && *path)
		unlink(path); /* scratch: a file left by an earlier run */
	if (sqlite3_open_v2(path ? path : ":memory:", &s->db, flags, NULL) !=
	    SQLITE_OK ||
	    sqlite3_exec(s->db, settings, NULL, NULL, NULL) != SQLITE_OK ||
	    (from ? copy_pages(s, from) :
	     sqlite3_exec(s->db, schema, NULL, NULL, NULL)) != SQLITE_OK) {
		snprintf(err, errlen, "cannot create observation store '%s': %s",
			 !path ? ":memory:" : *path ? path : "(temporary)",
			 s->db ? sqlite3_errmsg(s->db) : "out of memory");
		obs_store_free(s);
		return FC_IO;
	}
	/* counts kept before the expected rows changed go at first use */
	s->expect_changed = from && from->expect_changed;
	s->filled_same = -1;
	*out = s;
	return 0;
}

int obs_store_open(const char *path, obs_store **out, char *err,
		   size_t errlen)
{
	return open_store(path, NULL, out, err, errlen);
}

int obs_store_open_copy(const obs_store *from, const char *path,
			obs_store **out, char *err, size_t errlen)
{
	if (from && from->nsame) {
		snprintf(err, errlen, "cannot copy an observation store whose "
			 "observations repeat others");
		*out = NULL;
		return FC_USAGE;
	}
	return open_store(path, from, out, err, errlen);
}

/* Free the rows held; the fill stays as it is otherwise. */
static void drop_rows(obs_store *s)
{
	for (size_t i = 0; i < s->fill.len; i++)
		free(s->fill.v[i].key);
	free(s->fill.v);
	s->fill.v = NULL;
	s->fill.len = s->fill.cap = s->fill.bytes = 0;
}

static void fill_reset(obs_store *s)
{
	drop_rows(s);
	memset(&s->fill, 0, sizeof(s->fill));
}

/* Is observation n filling (its rows in memory, not in the table)? */
static bool is_filling(const obs_store *s, int n)
{
	return s->fill.on && s->fill.n == n;
}

static int purge(obs_store *s);

void obs_store_free(obs_store *s)
{
	if (!s)
		return;
	if (s->lent) {
		s->freed = true; /* its loan still reads and writes through it */
		return;
	}
	if (s->lender) {
		if (!sqlite3_get_autocommit(s->db))
			obs_store_rollback(s);
		s->lender->lent = false;
		if (s->lender->freed)
			obs_store_free(s->lender);
		else if (purge(s))
			s->lender->spoiled = true;
		else /* the kept observations' answers stay good */
			s->lender->expect_changed = s->expect_changed;
	} else {
		for (int i = 0; i < S_COUNT_ALL; i++)
			sqlite3_finalize(s->own_st[i]);
		sqlite3_close(s->db);
	}
	fill_reset(s);
	free(s->same);
	free(s);
}

const char *obs_store_errmsg(const obs_store *s)
{
	return s ? s->errmsg : "no observation store";
}

/* Statement i, reset, with its first nints parameters bound to a, b, c
 * in order; NULL when it cannot be prepared. */
static sqlite3_stmt *prep(obs_store *s, enum stmt i, int nints, int a, int b,
			  int c)
{
	const int v[3] = { a, b, c };

	sqlite3_stmt *st = s->st[i];

	if (!st && sqlite3_prepare_v3(s->db, stmt_sql[i], -1,
				      SQLITE_PREPARE_PERSISTENT, &s->st[i],
				      NULL) != SQLITE_OK) {
		fail(s, "cannot prepare a query");
		return NULL;
	}
	st = s->st[i];
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	for (int k = 0; k < nints && k < 3; k++)
		sqlite3_bind_int(st, k + 1, v[k]);
	return st;
}

static int exec(obs_store *s, const char *sql)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return fail(s, sql);
	return 0;
}

int obs_store_begin(obs_store *s)
{
	s->filled_same = -1;
	return exec(s, "BEGIN");
}

int obs_store_commit(obs_store *s)
{
	s->filled_same = -1;
	return exec(s, "COMMIT");
}

/* What is in memory goes back with the tables: the fill, a repeat the fill
 * made, and every kept count (cleared at next use, as after an expect). */
void obs_store_rollback(obs_store *s)
{
	if (!s)
		return;
	fill_reset(s);
	if (s->filled_same >= 0 && (size_t)s->filled_same < s->nsame)
		s->same[s->filled_same] = 0;
	s->filled_same = -1;
	s->expect_changed = true;
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Run a statement that returns no rows. */
static int run(obs_store *s, sqlite3_stmt *st)
{
	int rc;

	if (!st)
		return FC_IO;
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : fail(s, "cannot write a row");
}

/* Invariant 7: no observation numbered below KEPT_BASE left. */
static int purge(obs_store *s)
{
	int rc = run(s, prep(s, S_PURGE_OBS, 1, KEPT_BASE, 0, 0));

	if (!rc)
		rc = run(s, prep(s, S_PURGE_DIGEST, 1, KEPT_BASE, 0, 0));
	return rc ? rc : run(s, prep(s, S_PURGE_MEMO, 1, KEPT_BASE, 0, 0));
}

int obs_store_borrow(obs_store *s, obs_store **out, char *err, size_t errlen)
{
	obs_store *l;
	int rc;

	*out = NULL;
	if (s->lender || s->lent || s->spoiled || s->nsame || s->fill.on ||
	    !sqlite3_get_autocommit(s->db)) {
		snprintf(err, errlen, "cannot lend an observation store that is "
			 "%s", s->lender ? "a loan" : s->lent ? "lent" :
			 s->spoiled ? "spoiled" : "in use");
		return FC_USAGE;
	}
	if (!(l = calloc(1, sizeof(*l)))) {
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	l->db = s->db;
	l->st = s->st;
	l->lender = s;
	l->expect_changed = s->expect_changed;
	l->filled_same = -1;
	if ((rc = purge(l))) {
		snprintf(err, errlen, "cannot lend the observation store: %s",
			 l->errmsg);
		s->spoiled = true;
		free(l);
		return rc;
	}
	s->lent = true;
	*out = l;
	return 0;
}

static sqlite3_stmt *bind_key(sqlite3_stmt *st, int i, const char *key)
{
	if (st && sqlite3_bind_text(st, i, key, -1, SQLITE_STATIC) != SQLITE_OK)
		return NULL;
	return st;
}

int obs_store_expect(obs_store *s, int op, const char *key)
{
	if (s->lender || s->lent) { /* a loan's would outlive it; a lent
				       store's answers are the loan's */
		snprintf(s->errmsg, sizeof(s->errmsg), "a %s observation store "
			 "takes no expected rows", s->lent ? "lent" : "loaned");
		return FC_USAGE;
	}
	s->expect_changed = true;
	return run(s, bind_key(prep(s, S_EXPECT, 1, op, 0, 0), 2, key));
}

/* Rows of n change: what was kept about them goes (invariant 6). */
static int forget(obs_store *s, int n)
{
	int rc = run(s, prep(s, S_DIGEST_DROP, 1, n, 0, 0));

	return rc ? rc : run(s, prep(s, S_MEMO_DROP, 1, n, 0, 0));
}

/* Before observation n is written to: it and every repeat of it get rows
 * of their own (invariant 4). */
static int detach(obs_store *s, int n)
{
	int rc = 0;

	for (size_t k = 0; k < s->nsame && !rc; k++) {
		if (!s->same[k] || ((int)k != n && s->same[k] - 1 != n))
			continue;
		rc = run(s, prep(s, S_COPY, 2, (int)k, s->same[k] - 1, 0));
		if (!rc)
			rc = forget(s, (int)k);
		if (!rc)
			s->same[k] = 0;
	}
	return rc;
}

static int add_row(obs_store *s, int n, const char *key, long long count)
{
	sqlite3_stmt *st = prep(s, S_ADD, 1, n, 0, 0);

	if (st)
		sqlite3_bind_int64(st, 3, count);
	return run(s, bind_key(st, 2, key));
}

/* The observation filling outgrew invariant 5's bound: its rows go to
 * the table from here on. */
static int spill(obs_store *s)
{
	int rc = 0;

	for (size_t i = 0; i < s->fill.len && !rc; i++)
		rc = add_row(s, s->fill.n, s->fill.v[i].key, s->fill.v[i].count);
	drop_rows(s);
	s->fill.spilled = true;
	return rc;
}

static int hold(obs_store *s, const char *key, long long count)
{
	size_t klen = strlen(key);

	if (s->fill.len == FILL_MAX_ROWS ||
	    s->fill.bytes + klen + 1 > FILL_MAX_BYTES) {
		int rc = spill(s);
		return rc ? rc : add_row(s, s->fill.n, key, count);
	}
	if (s->fill.len == s->fill.cap) {
		size_t cap = s->fill.cap ? s->fill.cap * 2 : 256;
		struct fill_row *v = realloc(s->fill.v, cap * sizeof(*v));
		if (!v)
			goto nomem;
		s->fill.v = v;
		s->fill.cap = cap;
	}
	if (!(s->fill.v[s->fill.len].key = strdup(key)))
		goto nomem;
	s->fill.v[s->fill.len++].count = count;
	s->fill.bytes += klen + 1;
	return 0;
nomem:
	snprintf(s->errmsg, sizeof(s->errmsg), "out of memory");
	return FC_NOMEM;
}

int obs_store_add(obs_store *s, int n, const char *key, long long count)
{
	int rc;

	if (is_filling(s, n))
		return s->fill.spilled ? add_row(s, n, key, count) :
		       hold(s, key, count);
	if ((rc = detach(s, n)) || (rc = forget(s, n)))
		return rc;
	return add_row(s, n, key, count);
}

/* Writes other than obs_store_add() to the observation filling are
 * refused: its rows are in memory, not in the table they act on. */
static int filling(obs_store *s, int n)
{
	if (!is_filling(s, n))
		return 0;
	snprintf(s->errmsg, sizeof(s->errmsg), "observation %d is filling", n);
	return FC_USAGE;
}

int obs_store_drop(obs_store *s, int n, const char *key)
{
	int rc = filling(s, n);

	if (!rc)
		rc = detach(s, n);
	if (!rc)
		rc = forget(s, n);
	return rc ? rc : run(s, bind_key(prep(s, S_DROP, 1, n, 0, 0), 2, key));
}

int obs_store_clear(obs_store *s, int n)
{
	int rc = filling(s, n);

	if (!rc)
		rc = detach(s, n);
	if (!rc)
		rc = forget(s, n);
	return rc ? rc : run(s, prep(s, S_CLEAR, 1, n, 0, 0));
}

int obs_store_same(obs_store *s, int n, int base)
{
	int rc;

	if (n < 0 || base < 0 || n == base || base == INT_MAX ||
	    is_filling(s, n) || is_filling(s, base)) {
		snprintf(s->errmsg, sizeof(s->errmsg), "observation %d cannot "
			 "repeat observation %d", n, base);
		return FC_USAGE;
	}
	if ((rc = obs_store_clear(s, n)))
		return rc;
	if ((size_t)n >= s->nsame) {
		size_t cap = (size_t)n + 8;
		int *v = realloc(s->same, cap * sizeof(*v));
		if (!v) {
			snprintf(s->errmsg, sizeof(s->errmsg), "out of memory");
			return FC_NOMEM;
		}
		memset(v + s->nsame, 0, (cap - s->nsame) * sizeof(*v));
		s->same = v;
		s->nsame = cap;
	}
	s->same[n] = at(s, base) + 1;
	return 0;
}

/* --- content-addressed observations (invariant 5) ------------------------ */

int obs_store_fill_begin(obs_store *s, int n)
{
	int rc;

	if (s->fill.on || n < 0) {
		snprintf(s->errmsg, sizeof(s->errmsg), "observation %d cannot "
			 "start filling", n);
		return FC_USAGE;
	}
	if ((rc = obs_store_clear(s, n))) /* a repeat no more, no rows */
		return rc;
	s->fill.on = true;
	s->fill.n = n;
	return 0;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct fill_row *)a)->key,
		      ((const struct fill_row *)b)->key);
}

/* Sort the rows held, sum equal keys, and name the result: SHA-256 over
 * each row's key, a NUL, its count in decimal and a newline.  No name
 * ("") when a sum would overflow: those rows stay apart, for the table's
 * upsert to sum as it would have. */
static void canonical(obs_store *s, char d[IDENTITY_DIGEST_LEN + 1])
{
	struct identity_hash *h = identity_hash_new();
	bool whole = true;
	size_t w = 0;

	if (s->fill.len > 1)
		qsort(s->fill.v, s->fill.len, sizeof(*s->fill.v), by_key);
	for (size_t i = 0; i < s->fill.len; i++) {
		long long sum;
		if (w && strcmp(s->fill.v[w - 1].key, s->fill.v[i].key) == 0) {
			if (!__builtin_add_overflow(s->fill.v[w - 1].count,
						    s->fill.v[i].count, &sum)) {
				s->fill.v[w - 1].count = sum;
				free(s->fill.v[i].key);
				continue;
			}
			whole = false; /* the table sums them its own way */
		}
		s->fill.v[w++] = s->fill.v[i];
	}
	s->fill.len = w;
	for (size_t i = 0; h && i < w; i++) {
		char num[32];
		int len = snprintf(num, sizeof(num), "%lld\n",
				   s->fill.v[i].count);
		identity_hash_update(h, s->fill.v[i].key,
				     strlen(s->fill.v[i].key) + 1);
		identity_hash_update(h, num, (size_t)len);
	}
	if (h)
		identity_hash_final(h, d);
	if (!h || !whole)
		d[0] = '\0';
}

/* The observation named d (its own rows), or -1. */
static int named(obs_store *s, const char *d)
{
	sqlite3_stmt *st = bind_key(prep(s, S_DIGEST_FIND, 0, 0, 0, 0), 2, d);
	int n = -1;

	if (st && sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	if (st)
		sqlite3_reset(st);
	return n;
}

int obs_store_fill_end(obs_store *s)
{
	char d[IDENTITY_DIGEST_LEN + 1];
	int rc = 0, n = s->fill.n, m;

	if (!s->fill.on)
		return 0;
	if (s->fill.spilled) {
		fill_reset(s);
		return 0;
	}
	canonical(s, d);
	m = d[0] ? named(s, d) : -1;
	if (m >= 0 && m != n) {
		fill_reset(s);
		s->filled_same = n;
		return obs_store_same(s, n, m);
	}
	for (size_t i = 0; i < s->fill.len && !rc; i++)
		rc = add_row(s, n, s->fill.v[i].key, s->fill.v[i].count);
	fill_reset(s);
	if (!rc && d[0])
		rc = run(s, bind_key(prep(s, S_DIGEST_PUT, 1, n, 0, 0), 2, d));
	return rc;
}

/* --- kept answers (invariant 6) ------------------------------------------ */

/* Step st once; its row's five columns, in struct obs_rowsum's order,
 * into out when it has one.  SQLite's code of the step; st is reset. */
static int step_rowsum(sqlite3_stmt *st, struct obs_rowsum *out)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW) {
		out->expected = sqlite3_column_int64(st, 0);
		out->present = sqlite3_column_int64(st, 1);
		out->once = sqlite3_column_int64(st, 2);
		out->duplicated = sqlite3_column_int64(st, 3);
		out->missing = sqlite3_column_int64(st, 4);
	}
	sqlite3_reset(st);
	return rc;
}

/* rowsum of (n, op) when kept: 1, 0 when not, or an error. */
static int memo_get(obs_store *s, int n, int op, struct obs_rowsum *out)
{
	sqlite3_stmt *st;
	int rc;

	if (s->expect_changed) {
		if ((rc = run(s, prep(s, S_MEMO_CLEAR, 0, 0, 0, 0))))
			return rc;
		s->expect_changed = false;
	}
	if (!(st = prep(s, S_MEMO_GET, 2, n, op, 0)))
		return FC_IO;
	if ((rc = step_rowsum(st, out)) == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : fail(s, "cannot read a kept count");
}

static int memo_put(obs_store *s, int n, int op, const struct obs_rowsum *r)
{
	sqlite3_stmt *st = prep(s, S_MEMO_PUT, 2, n, op, 0);

	if (!st)
		return FC_IO;
	sqlite3_bind_int64(st, 3, r->expected);
	sqlite3_bind_int64(st, 4, r->present);
	sqlite3_bind_int64(st, 5, r->once);
	sqlite3_bind_int64(st, 6, r->duplicated);
	sqlite3_bind_int64(st, 7, r->missing);
	return run(s, st);
}

/* The first column of a one-row query, 0 when it has none. */
static long long scalar(sqlite3_stmt *st)
{
	long long v = 0;

	if (!st)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return v;
}

long long obs_store_count(obs_store *s, int n, const char *key)
{
	return s ? scalar(bind_key(prep(s, S_COUNT, 1, at(s, n), 0, 0), 2,
				   key)) : 0;
}

long long obs_store_rows_total(obs_store *s, int n)
{
	return s ? scalar(prep(s, S_TOTAL, 1, at(s, n), 0, 0)) : 0;
}

int obs_store_op_rows(obs_store *s, int n, int op, struct obs_rowsum *out)
{
	sqlite3_stmt *st;
	int rc;

	*out = (struct obs_rowsum){ 0 };
	if (!s)
		return 0;
	n = at(s, n);
	if ((rc = memo_get(s, n, op, out)))
		return rc < 0 ? rc : 0;
	if (!(st = prep(s, S_OP_ROWS, 2, n, op, 0)))
		return FC_IO;
	if (step_rowsum(st, out) != SQLITE_ROW) {
		*out = (struct obs_rowsum){ 0 };
		return fail(s, "cannot count rows");
	}
	/* an observation filling has not its rows yet */
	if (!is_filling(s, n) && (rc = memo_put(s, n, op, out))) {
		*out = (struct obs_rowsum){ 0 };
		return rc;
	}
	return 0;
}

/* Step st to its end, calling fn(key, col 1, col 2) on each row (absent
 * columns read 0). */
static int visit(obs_store *s, sqlite3_stmt *st, int ncols, obs_row_fn fn,
		 void *ctx)
{
	int rc, stop = 0;

	if (!st)
		return FC_IO;
	while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		long long b = ncols > 1 ? sqlite3_column_int64(st, 1) : 0;
		long long a = ncols > 2 ? sqlite3_column_int64(st, 2) : b;
		if (ncols == 1)
			a = 0;
		stop = fn(ctx, (const char *)sqlite3_column_text(st, 0), b, a);
	}
	if (!stop && rc != SQLITE_DONE)
		stop = fail(s, "cannot read rows");
	sqlite3_reset(st);
	return stop;
}

/* The kept answer of "which operations own a row n holds twice": op
 * OWNERS_ANY's entry (no operation's number), whose `duplicated` counts
 * such owners (its other fields are unused). */
#define OWNERS_ANY INT_MIN

static int count_owner(void *ctx, int op)
{
	(void)op;
	(*(long long *)ctx)++;
	return 0;
}

int obs_store_owners_duplicated(obs_store *s, int n, obs_op_fn fn, void *ctx)
{
	struct obs_rowsum k = { 0 };
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (!s)
		return 0;
	n = at(s, n);
	if ((rc = memo_get(s, n, OWNERS_ANY, &k)) < 0)
		return rc;
	if (rc && k.duplicated == 0)
		return 0;
	if (!(st = prep(s, S_OWNERS_DUP, 1, n, 0, 0)))
		return FC_IO;
	while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		k.duplicated++;
		stop = fn(ctx, sqlite3_column_int(st, 0));
	}
	if (!stop && rc != SQLITE_DONE)
		stop = fail(s, "cannot read rows");
	sqlite3_reset(st);
	/* the whole answer seen, of rows not filling: keep its size */
	if (!stop && !is_filling(s, n))
		stop = memo_put(s, n, OWNERS_ANY,
				&(struct obs_rowsum){ .duplicated = k.duplicated });
	return stop;
}

int obs_store_duplicated(obs_store *s, int n, int op, obs_row_fn fn,
			 void *ctx)
{
	struct obs_rowsum k;
	int rc = 0;

	if (!s)
		return 0;
	/* a kept count of none: nothing to visit (op 0's rows are no
	 * operation's, so no count covers them) */
	if (op > 0 && (rc = memo_get(s, at(s, n), op, &k)) < 0)
		return rc;
	if (rc && k.duplicated == 0)
		return 0;
	return visit(s, prep(s, S_DUP, 2, at(s, n), op, 0), 2, fn, ctx);
}

int obs_store_missing(obs_store *s, int n, int op, obs_row_fn fn, void *ctx)
{
	struct obs_rowsum k;
	int rc;

	if (!s)
		return 0;
	/* all of op's rows present: none to visit */
	if ((rc = memo_get(s, at(s, n), op, &k)) < 0)
		return rc;
	if (rc && k.present == k.expected)
		return 0;
	return visit(s, prep(s, S_MISSING, 2, at(s, n), op, 0), 1, fn, ctx);
}

int obs_store_changed(obs_store *s, int base, int n, int op, obs_row_fn fn,
		      void *ctx)
{
	if (!s || at(s, base) == at(s, n)) /* the same rows: none differ */
		return 0;
	return visit(s, prep(s, S_CHANGED, 3, at(s, base), at(s, n), op), 3,
		     fn, ctx);
}

/* Step a row cursor: 1 with *key and *count set, 0 at its end, or an
 * error. */
static int next_row(obs_store *s, sqlite3_stmt *st, const char **key,
		    long long *count)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return fail(s, "cannot read rows");
	*key = (const char *)sqlite3_column_text(st, 0);
	*count = sqlite3_column_int64(st, 1);
	return 1;
}

/* Merge the two key-ordered row lists, as a sorted-list diff. */
static int merge(obs_store *s, sqlite3_stmt *p, sqlite3_stmt *q,
		 obs_row_fn fn, void *ctx)
{
	const char *pk = NULL, *qk = NULL;
	long long pc = 0, qc = 0;
	int hp = next_row(s, p, &pk, &pc), hq = next_row(s, q, &qk, &qc);
	int stop = 0;

	while (!stop && hp >= 0 && hq >= 0 && (hp || hq)) {
		int c = !hp ? 1 : !hq ? -1 : strcmp(pk, qk);
		if (c < 0) {
			if (pc != 0)
				stop = fn(ctx, pk, pc, 0);
			hp = next_row(s, p, &pk, &pc);
		} else if (c > 0) {
			if (qc != 0)
				stop = fn(ctx, qk, 0, qc);
			hq = next_row(s, q, &qk, &qc);
		} else {
			if (pc != qc)
				stop = fn(ctx, qk, pc, qc);
			hp = next_row(s, p, &pk, &pc);
			hq = next_row(s, q, &qk, &qc);
		}
	}
	if (!stop)
		stop = hp < 0 ? hp : hq < 0 ? hq : 0;
	return stop;
}

int obs_store_deltas(obs_store *s, int prev, int now, obs_row_fn fn,
		     void *ctx)
{
	sqlite3_stmt *p, *q;
	int rc;

	if (!s || (prev >= 0 && at(s, prev) == at(s, now)))
		return 0; /* the same rows: no delta */
	p = prep(s, S_ROWS_PREV, 1, prev < 0 ? -1 : at(s, prev), 0, 0);
	q = prep(s, S_ROWS_NOW, 1, at(s, now), 0, 0);
	if (!p || !q)
		return FC_IO;
	rc = merge(s, p, q, fn, ctx);
	sqlite3_reset(p);
	sqlite3_reset(q);
	return rc;
}

/* --- kept observations ----------------------------------------------------- */

/* The name (digest) of observation n's own rows into d, "" when none. */
static int name_of(obs_store *s, int n, char d[IDENTITY_DIGEST_LEN + 1])
{
	sqlite3_stmt *st = prep(s, S_DIGEST_OF, 1, n, 0, 0);
	int rc;

	d[0] = '\0';
	if (!st)
		return FC_IO;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		snprintf(d, IDENTITY_DIGEST_LEN + 1, "%s",
			 (const char *)sqlite3_column_text(st, 0));
	sqlite3_reset(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	       fail(s, "cannot read a digest");
}

/* Copy from's rows of observation n into to's observation k, with their
 * name, and count them there for every operation (kept answers). */
static int copy_kept(obs_store *to, obs_store *from, int n, int k,
		     const char *d)
{
	sqlite3_stmt *rows = prep(from, S_ROWS_NOW, 1, n, 0, 0), *ops;
	const char *key;
	long long count;
	int rc = 0, more;

	if (!rows || (rc = forget(to, k)))
		return rc ? rc : FC_IO;
	while (!rc && (more = next_row(from, rows, &key, &count)) != 0)
		rc = more < 0 ? more : add_row(to, k, key, count);
	sqlite3_reset(rows);
	if (!rc)
		rc = run(to, bind_key(prep(to, S_DIGEST_PUT, 1, k, 0, 0), 2, d));
	if (rc || !(ops = prep(to, S_OPS, 0, 0, 0, 0)))
		return rc ? rc : FC_IO;
	while (!rc && (more = sqlite3_step(ops)) == SQLITE_ROW) {
		struct obs_rowsum r;
		int op = sqlite3_column_int(ops, 0);
		rc = obs_store_op_rows(to, k, op, &r);
	}
	if (!rc && more != SQLITE_DONE)
		rc = fail(to, "cannot list operations");
	sqlite3_reset(ops);
	if (!rc) {
		long long owners = 0;
		rc = obs_store_owners_duplicated(to, k, count_owner, &owners);
	}
	return rc;
}

int obs_store_keep(obs_store *to, obs_store *from, int n)
{
	char d[IDENTITY_DIGEST_LEN + 1];
	long long k;
	int rc;

	if (!to || !from || n < 0)
		return 0;
	n = at(from, n);
	/* (from may be a loan of to: its own observations are in the table,
	 * numbered below KEPT_BASE, and do not count) */
	if ((rc = name_of(from, n, d)) || !d[0] || named(to, d) >= KEPT_BASE)
		return rc; /* unnamed, or already kept */
	k = scalar(prep(to, S_KEPT_NEXT, 1, KEPT_BASE, 0, 0));
	if (k < KEPT_BASE || k >= KEPT_BASE + KEPT_MAX ||
	    scalar(prep(to, S_KEPT_ROWS, 1, KEPT_BASE, 0, 0)) +
	    obs_store_rows_total(from, n) >
	    2 * scalar(prep(to, S_EXPECTED_ROWS, 0, 0, 0, 0)) + KEPT_SLACK_ROWS)
		return 0; /* full */
	if ((rc = obs_store_begin(to)))
		return rc;
	if ((rc = copy_kept(to, from, n, (int)k, d)) ||
	    (rc = obs_store_commit(to)))
		obs_store_rollback(to);
	return rc;
}
