/*
 * collect.h -- what a schedule leaves behind, read into its record: the
 * journal entries the route wrote, found by watching the journal while the
 * schedule runs, and at the end their entries and histories (through the
 * journal port, never its tables) and every return.json that survived in
 * the XCom dirs.
 *
 * Operations as the route names them.  The harness never recomputes an
 * operation id to find a journal entry (a route may name its operations
 * its own way).  It lists the journal after every attempt ended and
 * attributes each entry that appeared, or whose version moved, since the
 * previous listing to the operation of that attempt: attempts of one
 * schedule run operation by operation, and a resumed zombie's end is its
 * own operation's.  A listing that fails leaves the changes to the next
 * one; whatever no listing saw is attributed at the end by the time the
 * journal says it was created.  Nothing is listed while the journal does
 * not exist (a SQLite file never created) or for a route with `journal:
 * none`; the listing reads one schedule's namespace (a file in {dir}, a
 * {schedule_id} schema or prefix), bounded by COLLECT_ENTRIES_MAX.
 *
 * Failures are recorded, not returned: an unreadable journal at the end
 * sets the operations' journal_status and the record's status (the
 * checker then calls the schedule unverified).
 *
 * Owns: struct collect_watch (opaque).  Included by harness/run only (the
 * orchestrator) and tests/.
 */
#ifndef FENCECERT_COLLECT_H
#define FENCECERT_COLLECT_H

#include "common/error.h"
#include "harness/model/record.h"

/* More entries than this in one schedule's journal is not one schedule's
 * work: the schedule is unverified and the watch stops listing. */
#define COLLECT_ENTRIES_MAX 1000

/* Journal transitions read at the end: at most COLLECT_HISTORY_MAX of one
 * entry and COLLECT_TRANSITIONS_MAX of the schedule's entries together
 * (a route decides how many it writes; each is a few KiB).  An entry past
 * them is read without its history (rec_entry.history_total counts it,
 * status FC_NOSPACE) and the schedule is unverified: a history cut short
 * could be judged neither legal nor broken.  The entry's version, which
 * counts its transitions, is asked first, so such a history is not read
 * at all. */
#define COLLECT_HISTORY_MAX 1000
#define COLLECT_TRANSITIONS_MAX 20000

typedef struct collect_watch collect_watch;

/*
 * A watch on the journal at url (the harness's own way there: no fault
 * proxy in between), or on none when url is NULL.  0 or FC_NOMEM.  A
 * server journal is connected on first use and kept for the schedule; a
 * SQLite file is opened for each listing only, so the route's last close
 * finds no reader of ours.
 */
int collect_watch_new(const char *url, collect_watch **out) FC_MUST_CHECK;
void collect_watch_free(collect_watch *w); /* NULL is a no-op */

/* List after every attempt even when the schedule has one operation:
 * for a caller that needs that operation's entry before the end (an
 * operator fault reads it). */
void collect_watch_eager(collect_watch *w);

/* Attempt idx of r has ended: list the journal and attribute what
 * changed to that attempt's operation (record_attribute()).  In a
 * schedule of one operation nothing is listed (collect.c, invariant 3)
 * unless the watch is eager.  0, or FC_NOMEM. */
int collect_watch_attempt(collect_watch *w, struct rec_schedule *r, int idx)
	FC_MUST_CHECK;

/* At the end, every process gone: list once more (what no listing saw is
 * attributed by its creation time, or to the one operation there is) and
 * read each attributed entry and its history into the record.  FC_NOMEM when out of memory; any other
 * failure is recorded. */
int collect_journal(struct rec_schedule *r, collect_watch *w) FC_MUST_CHECK;

/* Fill ops[].evidence from DIR/op<i>/xcom/try-<k>/return.json, k <= tries
 * (no file there is no evidence; one that is not a regular file -- a
 * FIFO, a symlink, a device -- or is over 1 MiB, or is not a JSON object,
 * is evidence that is not valid: it is read as the route's, with
 * fs_read_untrusted(), never blocking).
 * Returns 0 or FC_NOMEM. */
int collect_evidence(struct rec_schedule *r, const char *dir, int tries)
	FC_MUST_CHECK;

#endif
