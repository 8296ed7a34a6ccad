/*
 * collect.c -- watch the journal while a schedule runs and read it, and the
 * surviving evidence, into the record at the end (collect.h).  Only
 * reads: the journal through journal_list/get/history, the XCom files
 * with jansson.
 *
 * Invariants:
 *  1. An entry is attributed to an operation only because an attempt of
 *     that operation ended (or, for what no listing saw, lived) when the
 *     entry appeared, or because the schedule has no other operation:
 *     never because its id matches a computed one.
 *  2. The watch's memory of the journal (`seen`) changes only on a listing
 *     that succeeded, so a failed listing loses nothing: its changes show
 *     at the next one.
 *  3. Listings after attempts exist to tell operations apart: in a
 *     schedule of one operation every entry is that operation's, so only
 *     the end lists (unless collect_watch_eager() asks for more), and its
 *     entries are reported as seen at the end, not after an attempt.
 *  4. Mid-schedule listings open the journal read-only (nothing written,
 *     no schema created) and a SQLite file is closed again before the
 *     route's next attempt runs, as the target observer does.  Only the
 *     end, with every process gone, opens it as the port does.  Every
 *     connection of the watch closes as is (journal_close_as_is(), and
 *     readers keep the WAL: common/sqlite_reader.h): the route meets its
 *     journal, -wal and all, as its own writers left it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "journal/journal.h"
#include "harness/run/collect.h"
#include "common/fsutil.h"

#define RETURN_MAX (1024 * 1024) /* bytes of a return.json we read */

/* An entry as the last successful listing showed it. */
struct seen {
	char id[JOURNAL_ID_MAX];
	long long version;
};

struct collect_watch {
	char *url;           /* NULL: the route keeps no journal */
	char *path;          /* sqlite: the file, opened per listing */
	journal *j;          /* a server journal, kept open once opened */
	struct seen *seen;   /* sorted by id */
	size_t nseen;
	int pending_op;      /* op of the first attempt since the last good
				listing, when one failed; 0 */
	bool stopped;        /* too many entries: no more listings */
	bool eager;          /* list after every attempt even in a
				schedule of one operation */
};

static int seen_cmp(const void *a, const void *b)
{
	return strcmp(((const struct seen *)a)->id, ((const struct seen *)b)->id);
}

int collect_watch_new(const char *url, collect_watch **out)
{
	collect_watch *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return FC_NOMEM;
	if (url && !(w->url = strdup(url))) {
		free(w);
		return FC_NOMEM;
	}
	if (url && strncmp(url, "sqlite:", 7) == 0 &&
	    !(w->path = strndup(url + 7, strcspn(url + 7, "?")))) {
		collect_watch_free(w);
		return FC_NOMEM;
	}
	*out = w;
	return 0;
}

void collect_watch_eager(collect_watch *w)
{
	w->eager = true;
}

void collect_watch_free(collect_watch *w)
{
	if (!w)
		return;
	journal_close_as_is(w->j); /* the route's files, as it left them */
	free(w->url);
	free(w->path);
	free(w->seen);
	free(w);
}

/* A SQLite journal the route never created: nothing to list, and opening
 * it would create it. */
static bool no_file(const collect_watch *w)
{
	struct stat sb;

	return w->path && stat(w->path, &sb) != 0 && errno == ENOENT;
}

/* List the journal into *out: through the watch's connection when it
 * has one, else through a read-only one, kept for a server journal and
 * closed again for a SQLite file.  0, or an error with err set. */
static int list(collect_watch *w, struct journal_entry **out, size_t *n,
		char *err, size_t errlen)
{
	static const struct journal_filter all = { 0, 0 };
	journal *j = w->j;
	int rc;

	*out = NULL;
	*n = 0;
	if (!j && (rc = journal_open_readonly(w->url, &j, err, errlen)))
		return rc;
	rc = journal_list(j, &all, out, n);
	if (rc)
		snprintf(err, errlen, "%s", journal_errmsg(j));
	if (!w->j && w->path)
		journal_close_as_is(j);
	else
		w->j = j;
	return rc;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct journal_entry *)a)->operation_id,
		      ((const struct journal_entry *)b)->operation_id);
}

/* The attempt alive when the journal says an entry was created (the
 * latest one started by then when none was), or -1. */
static int attempt_at(const struct rec_schedule *r, long long t)
{
	int best = -1;

	for (size_t i = 0; i < r->nattempts; i++) {
		const struct rec_attempt *a = &r->attempts[i];
		if (a->start_wall_ms > t)
			continue;
		if (a->end_wall_ms >= t || a->end_wall_ms == 0)
			return (int)i;
		if (best < 0 || a->start_wall_ms >= r->attempts[best].start_wall_ms)
			best = (int)i;
	}
	return best;
}

static struct rec_operation *op_of(struct rec_schedule *r, int idx)
{
	int op = idx >= 0 && (size_t)idx < r->nattempts ?
		 r->attempts[idx].operation : 0;

	return op >= 1 && (size_t)op <= r->nops ? &r->ops[op - 1] : NULL;
}

/* Attribute entry e, seen after attempt idx (-1: at the end), to
 * operation `here`, or (by_time) to the one whose attempt lived when the
 * journal says e was created. */
static int attribute_one(struct rec_schedule *r, struct rec_operation *here,
			 int idx, bool by_time, const struct journal_entry *e)
{
	struct rec_operation *op = by_time ?
		op_of(r, attempt_at(r, e->created_at)) : here;

	if (!op)
		return 0;
	return record_attribute(op, e->operation_id, idx, e->created_at) ?
	       0 : FC_NOMEM;
}

/* order[0..n): the indexes of e[0..n) (sorted by id) by creation time,
 * ties by id: entries new to one listing are attributed, and so
 * reported, in the order the journal says they were created. */
static int created_cmp(const void *a, const void *b, void *arg)
{
	const struct journal_entry *e = arg;
	const struct journal_entry *x = &e[*(const size_t *)a];
	const struct journal_entry *y = &e[*(const size_t *)b];

	if (x->created_at != y->created_at)
		return x->created_at < y->created_at ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static void creation_order(const struct journal_entry *e, size_t n,
			   size_t *order)
{
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	if (n > 1)
		qsort_r(order, n, sizeof(*order), created_cmp, (void *)e);
}

/*
 * Attribute what changed between w->seen and the sorted listing e[0..n)
 * to the operation of attempt idx: new entries first (an operation is
 * named by an entry that appeared in its attempts before one it merely
 * moved), then moved ones.  When the changes may span operations (idx -1:
 * the end; or a listing failed meanwhile across an operation's boundary)
 * new entries go by their creation time and moves stay unattributed.
 * Then e becomes w->seen.
 */
static int attribute(collect_watch *w, struct rec_schedule *r, int idx,
		     const struct journal_entry *e, size_t n)
{
	struct rec_operation *here = r->nops == 1 ? &r->ops[0] : op_of(r, idx);
	bool by_time = !here || (w->pending_op && w->pending_op != here->index);
	struct seen *next = calloc(n ? n : 1, sizeof(*next));
	size_t *order = n ? calloc(n, sizeof(*order)) : NULL;
	int rc = 0;

	if (!next || (n && !order)) {
		free(next);
		free(order);
		return FC_NOMEM;
	}
	creation_order(e, n, order);
	for (int moved = 0; moved < 2 && !rc; moved++) {
		for (size_t k = 0; k < n && !rc; k++) {
			size_t i = order[k];
			struct seen *old;

			snprintf(next[i].id, sizeof(next[i].id), "%s",
				 e[i].operation_id);
			next[i].version = e[i].version;
			old = w->nseen ? bsearch(&next[i], w->seen, w->nseen,
						 sizeof(*old), seen_cmp) : NULL;
			if (moved ? old && old->version != e[i].version &&
				    !by_time : !old)
				rc = attribute_one(r, here, idx,
						   by_time && !moved, &e[i]);
		}
	}
	free(order);
	if (rc) {
		free(next);
		return rc;
	}
	free(w->seen);
	w->seen = next;
	w->nseen = n;
	w->pending_op = 0;
	return 0;
}

/* Too many entries for one schedule: the schedule cannot be judged. */
static void too_many(collect_watch *w, struct rec_schedule *r, size_t n)
{
	w->stopped = true;
	if (!r->status) {
		r->status = FC_JOURNAL_UNAVAILABLE;
		snprintf(r->error, sizeof(r->error), "the journal holds %zu "
			 "entries, more than one schedule's work (%d): is its "
			 "URL the same for every schedule?", n,
			 COLLECT_ENTRIES_MAX);
	}
}

int collect_watch_attempt(collect_watch *w, struct rec_schedule *r, int idx)
{
	struct journal_entry *e;
	char err[400];
	size_t n;
	int rc;

	if (!w->url || w->stopped || (r->nops == 1 && !w->eager) ||
	    no_file(w))
		return 0;
	if (list(w, &e, &n, err, sizeof(err))) {
		/* e.g. no schema yet, or the server is down: the next
		 * listing that succeeds sees these changes */
		if (!w->pending_op && op_of(r, idx))
			w->pending_op = op_of(r, idx)->index;
		return 0;
	}
	if (n > COLLECT_ENTRIES_MAX) {
		free(e);
		too_many(w, r, n);
		return 0;
	}
	if (n)
		qsort(e, n, sizeof(*e), entry_cmp);
	rc = attribute(w, r, idx, e, n);
	free(e);
	return rc;
}

static void all_ops(struct rec_schedule *r, int status)
{
	for (size_t i = 0; i < r->nops; i++)
		r->ops[i].journal_status = status;
}

/* The journal could not be read at the end: "cannot <doing> the journal". */
static void unreadable(struct rec_schedule *r, int rc, const char *doing,
		       const char *err)
{
	all_ops(r, rc);
	if (!r->status) {
		r->status = rc;
		snprintf(r->error, sizeof(r->error), "cannot %s the journal: %s",
			 doing, err);
	}
}

/* Entry e holds more transitions than the bounds let the harness read
 * (collect.h): none of its history is kept (a cut one would look like a
 * broken one), and the schedule is unverified. */
static void history_too_long(struct rec_schedule *r, struct rec_operation *op,
			     struct rec_entry *e, size_t total, size_t budget)
{
	free(e->history);
	e->history = NULL;
	e->nhistory = 0;
	e->history_total = total;
	e->status = FC_NOSPACE;
	if (!r->status) {
		r->status = FC_NOSPACE;
		snprintf(r->error, sizeof(r->error), "the journal entry '%s' of "
			 "op %d holds %zu transitions, more than the %zu the "
			 "harness reads (COLLECT_HISTORY_MAX %d per entry, "
			 "COLLECT_TRANSITIONS_MAX %d per schedule): its history "
			 "was not checked", e->operation_id, op->index, total,
			 budget, COLLECT_HISTORY_MAX, COLLECT_TRANSITIONS_MAX);
	}
}

/* The entry of e, then its history unless the entry's version (which
 * counts its transitions) says it is over what is left of the schedule's
 * budget *left; a history that still turns out longer is dropped too.
 * Only a history kept uses up budget. */
static int read_entry(struct rec_schedule *r, struct rec_operation *op,
		      struct rec_entry *e, journal *j, size_t *left)
{
	size_t budget = *left < COLLECT_HISTORY_MAX ? *left : COLLECT_HISTORY_MAX;
	int rc = journal_get(j, e->operation_id, &e->entry);

	if (rc)
		return rc;
	if (e->entry.version < 0 || (unsigned long long)e->entry.version > budget) {
		history_too_long(r, op, e, e->entry.version < 0 ? 0 :
				 (size_t)e->entry.version, budget);
		return 0;
	}
	rc = journal_history(j, e->operation_id, &e->history, &e->nhistory);
	if (rc)
		return rc;
	if (e->nhistory > budget) {
		history_too_long(r, op, e, e->nhistory, budget);
		return 0;
	}
	*left -= e->nhistory;
	return 0;
}

/* Read the entry and history of every attributed entry, within the
 * bounds of collect.h. */
static void read_entries(struct rec_schedule *r, journal *j)
{
	size_t left = COLLECT_TRANSITIONS_MAX;

	for (size_t i = 0; i < r->nops; i++) {
		struct rec_operation *op = &r->ops[i];

		for (size_t k = 0; k < op->nentries; k++) {
			struct rec_entry *e = &op->entries[k];
			int rc = read_entry(r, op, e, j, &left);

			if (e->status) /* past a bound: already said */
				continue;
			e->status = rc;
			if (!rc || op->journal_status)
				continue;
			op->journal_status = rc;
			if (!r->status) {
				r->status = rc;
				snprintf(r->error, sizeof(r->error), "cannot read "
					 "the journal entry '%s' of op %d: %s",
					 e->operation_id, op->index,
					 journal_errmsg(j));
			}
		}
	}
}

int collect_journal(struct rec_schedule *r, collect_watch *w)
{
	struct journal_entry *e;
	char err[400];
	journal *j;
	size_t n;
	int rc;

	all_ops(r, 0);
	if (!w->url || w->stopped || no_file(w))
		return 0;
	journal_close_as_is(w->j); /* the end reads through a fresh one */
	w->j = NULL;
	if (journal_open(w->url, &j, err, sizeof(err))) {
		unreadable(r, FC_JOURNAL_UNAVAILABLE, "read", err);
		return 0;
	}
	w->j = j;
	rc = list(w, &e, &n, err, sizeof(err));
	if (rc) {
		unreadable(r, rc, "list", err);
		return 0;
	}
	if (n > COLLECT_ENTRIES_MAX) {
		free(e);
		too_many(w, r, n);
		all_ops(r, FC_JOURNAL_UNAVAILABLE);
		return 0;
	}
	if (n)
		qsort(e, n, sizeof(*e), entry_cmp);
	rc = attribute(w, r, -1, e, n);
	free(e);
	if (!rc)
		read_entries(r, j);
	return rc;
}

static void copy_str(char *dst, size_t len, json_t *v)
{
	const char *s = json_string_value(v);

	snprintf(dst, len, "%s", s ? s : "");
}

/* Parse the return.json text[0..len) (NULL: it could not be read). */
static void parse_return(struct rec_evidence *ev, const char *text,
			 size_t len)
{
	json_error_t jerr;
	json_t *o = text ? json_loadb(text, len, 0, &jerr) : NULL;
	json_t *rows;

	ev->valid = json_is_object(o);
	ev->rows_written = -1;
	if (ev->valid) {
		copy_str(ev->operation_id, sizeof(ev->operation_id),
			 json_object_get(o, "operation_id"));
		copy_str(ev->intent_digest, sizeof(ev->intent_digest),
			 json_object_get(o, "intent_digest"));
		copy_str(ev->state, sizeof(ev->state), json_object_get(o, "state"));
		rows = json_object_get(o, "rows_written");
		if (json_is_integer(rows))
			ev->rows_written = json_integer_value(rows);
		ev->epoch = json_integer_value(json_object_get(o, "epoch"));
	}
	json_decref(o);
}

int collect_evidence(struct rec_schedule *r, const char *dir, int tries)
{
	for (size_t i = 0; i < r->nops; i++) {
		struct rec_operation *op = &r->ops[i];

		for (int k = 1; k <= tries; k++) {
			struct rec_evidence *ev;
			char path[4096], *text;
			size_t len = 0;
			int rc;

			snprintf(path, sizeof(path), "%s/op%d/xcom/try-%d/return.json",
				 dir, op->index, k);
			/* the route writes there: a FIFO, a symlink, a device
			 * or a huge file is evidence that is not valid, never a
			 * hang (fsutil.h); the open is the existence check */
			rc = fs_read_untrusted(path, RETURN_MAX, &text, &len);
			if (rc == FC_NOMEM)
				return FC_NOMEM;
			if (rc && errno == ENOENT)
				continue;
			ev = RECORD_PUSH(op->evidence, op->nevidence);
			if (!ev) {
				free(text);
				return FC_NOMEM;
			}
			ev->try_number = k;
			snprintf(ev->path, sizeof(ev->path), "op%d/xcom/try-%d/"
				 "return.json", op->index, k);
			parse_return(ev, rc ? NULL : text, len);
			free(text);
		}
	}
	return 0;
}
