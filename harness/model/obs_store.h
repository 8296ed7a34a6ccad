/*
 * obs_store.h -- the rows of a schedule: what the workload asks for and
 * what the target held after each attempt, on disk, not in the heap.
 *
 * A record (record.h) keeps everything about a schedule in memory except
 * its rows: a partition may hold a million of them and the target is
 * looked at after every attempt, so the rows live in a scratch SQLite
 * database, a private temporary file out of the route's reach (or in
 * memory, for a test), with a small page cache; only an observation being
 * filled waits in the heap, up to a bound.  The checker and the report
 * ask it questions (how many of an operation's rows are present, which
 * changed, which are missing) and get answers whose size does not depend
 * on the rows.  An observation's rows are named by their content, so an
 * observation of rows the store holds already repeats them, and the
 * counts asked of a content are kept with it until its rows change.
 *
 * Owns: the scratch database and every statement over it; nothing else
 * of the model.  Who includes it: record.h, harness/run (which fills it),
 * harness/check and harness/certify (which query it), tests/.
 *
 * Observations are numbered by their index in rec_schedule.obs (kept
 * ones, obs_store_keep, from 2^30 up); an operation by its 1-based index; keys no operation asks for belong to
 * operation 0.  Key order is strcmp order; "workload order" is the order
 * the keys were given to obs_store_expect().
 *
 * Errors: 0 or a negative FC_ code; obs_store_errmsg() says why.  A query
 * that fails leaves its outputs zeroed.
 */
#ifndef FENCECERT_OBS_STORE_H
#define FENCECERT_OBS_STORE_H

#include <stddef.h>

#include "common/error.h"

typedef struct obs_store obs_store;

/* Create the store: path "" is a private file of SQLite's temporary
 * directory, unlinked as it is made and gone on close -- never in the
 * schedule's dir, which the route may write, so nothing a route does
 * touches what the harness observed; another path is created there
 * (replacing a file left there); NULL keeps it in memory (tests). */
int obs_store_open(const char *path, obs_store **out, char *err,
		   size_t errlen) FC_MUST_CHECK;
/* The same, holding a copy of everything `from` holds (its expected rows,
 * observations, the names of their contents and the counts already
 * answered), copied page by page: how a worker makes the store it lends
 * to the schedules of a workload (obs_store_borrow) from the first one's.
 * FC_USAGE when `from` has observations that repeat others. */
int obs_store_open_copy(const obs_store *from, const char *path,
			obs_store **out, char *err, size_t errlen) FC_MUST_CHECK;
/* A loan of s (*out) for one schedule: a store over s's own database
 * that holds s's expected rows and kept observations (any other
 * observation of s, numbered below 2^30, is deleted) and takes the
 * schedule's observations, with none of the cost of a copy (no new
 * database, no statement prepared again).  Freeing the loan deletes its
 * observations and gives s back; a failure there leaves s refusing
 * loans.  One loan at a time; while it is out, s is only read, or given
 * kept observations by obs_store_keep(s, loan, n) outside the loan's
 * transactions; s freed while lent goes when the loan is freed.  Neither
 * takes expected rows meanwhile (obs_store_expect: FC_USAGE).
 * FC_USAGE when s is a loan, lent, refusing loans, or holds repeats, a
 * fill or a transaction. */
int obs_store_borrow(obs_store *s, obs_store **out, char *err,
		     size_t errlen) FC_MUST_CHECK;
void obs_store_free(obs_store *s); /* NULL is a no-op; a loan: given back */
const char *obs_store_errmsg(const obs_store *s);

/* Batch the writes between them in one transaction; a rollback undoes
 * them (an observation that failed half way leaves no rows). */
int obs_store_begin(obs_store *s) FC_MUST_CHECK;
int obs_store_commit(obs_store *s) FC_MUST_CHECK;
void obs_store_rollback(obs_store *s);

/* Operation op asks for row key (a key already asked for is ignored). */
int obs_store_expect(obs_store *s, int op, const char *key) FC_MUST_CHECK;

/* Observation n saw count more copies of key (equal keys are summed). */
int obs_store_add(obs_store *s, int n, const char *key,
		  long long count) FC_MUST_CHECK;

/* Fill observation n (its rows, if any, are dropped first) with the rows
 * obs_store_add() gives it until obs_store_fill_end(), which names them by
 * content (SHA-256 of the rows in key order): when another observation of
 * the store, or one kept in it (obs_store_keep), holds exactly those rows,
 * n repeats it (as obs_store_same) and none is inserted.  The rows wait in
 * memory up to a bound (200000 rows, 16 MiB of keys); past it they go to
 * the table as they come and the observation is not named.  Inside
 * obs_store_begin/commit; a rollback ends the fill too, and undoes the
 * repeat.  FC_USAGE when a fill is already open or n < 0.  While n fills,
 * a question about it sees none of its rows, and obs_store_drop, _clear
 * and _same on it are refused (FC_USAGE). */
int obs_store_fill_begin(obs_store *s, int n) FC_MUST_CHECK;
int obs_store_fill_end(obs_store *s) FC_MUST_CHECK;

/* Keep a copy of observation n of `from` (when it was named by a fill) in
 * `to`, numbered where no record's observation is, with its operations'
 * counts (obs_store_op_rows) already answered: every later loan of `to`
 * (or store copied from it) has it to repeat.  A worker keeps its
 * schedules' observations in the store it lends them (`from` a loan of
 * `to`).  The first distinct ones are kept, at most 4 and at most twice
 * the expected rows (plus 256) in all, since every schedule's questions
 * range over them; past that, and for an unnamed or already kept
 * observation, nothing is done (0). */
int obs_store_keep(obs_store *to, obs_store *from, int n) FC_MUST_CHECK;
/* Forget key in observation n, or every row of it (tests edit records). */
int obs_store_drop(obs_store *s, int n, const char *key) FC_MUST_CHECK;
int obs_store_clear(obs_store *s, int n) FC_MUST_CHECK;

/* Observation n holds exactly the rows of observation base, without a
 * copy (base's own rows when base repeats another); rows n held are
 * dropped.  A later write to either one gives n its own copy first, so
 * the two stay independent.  FC_USAGE when n == base or either is < 0. */
int obs_store_same(obs_store *s, int n, int base) FC_MUST_CHECK;

/* The count of key in observation n (0 when absent or on error). */
long long obs_store_count(obs_store *s, int n, const char *key);

/* Distinct keys observation n holds, whoever owns them. */
long long obs_store_rows_total(obs_store *s, int n);

/* op's rows in observation n (n < 0: nothing observed, all missing).  The
 * answer is kept until n's rows or the expected rows change, and the
 * visitors below skip their query when a kept answer says they would
 * visit nothing (as obs_store_changed/_deltas do for two observations of
 * the same rows). */
struct obs_rowsum {
	long long expected;
	long long present;    /* count >= 1 */
	long long once;       /* count == 1 */
	long long duplicated; /* count >= 2 */
	long long missing;    /* count == 0 */
};
int obs_store_op_rows(obs_store *s, int n, int op,
		      struct obs_rowsum *out) FC_MUST_CHECK;

/* Row visitors: return nonzero to stop (that value is returned). */
typedef int (*obs_row_fn)(void *ctx, const char *key, long long before,
			  long long after);
typedef int (*obs_op_fn)(void *ctx, int op);

/* Each operation (0: none) owning a row observation n holds twice or
 * more, once, in no particular order. */
int obs_store_owners_duplicated(obs_store *s, int n, obs_op_fn fn,
				void *ctx) FC_MUST_CHECK;
/* Rows of observation n owned by op (0: by none) with count >= 2, in key
 * order: fn(key, count, count). */
int obs_store_duplicated(obs_store *s, int n, int op, obs_row_fn fn,
			 void *ctx) FC_MUST_CHECK;
/* op's rows absent from observation n (or there with count 0), in
 * workload order: fn(key, 0, 0). */
int obs_store_missing(obs_store *s, int n, int op, obs_row_fn fn,
		      void *ctx) FC_MUST_CHECK;
/* op's rows whose count differs between observations base and n, in
 * workload order: fn(key, count in base, count in n). */
int obs_store_changed(obs_store *s, int base, int n, int op, obs_row_fn fn,
		      void *ctx) FC_MUST_CHECK;
/* Every row whose count differs between observations prev (< 0: none)
 * and now, in key order: fn(key, before, after). */
int obs_store_deltas(obs_store *s, int prev, int now, obs_row_fn fn,
		     void *ctx) FC_MUST_CHECK;

#endif
