/*
 * collect.h -- what a schedule leaves behind, read into its record at the
 * end: the journal entry and history of every operation (through the
 * journal port, never its tables) and every return.json that survived in
 * the XCom dirs.
 *
 * Failures are recorded, not returned: an unreadable journal sets the
 * operation's journal_status (the checker then calls the schedule
 * unverified); a journal file that was never created means "no entry".
 *
 * Included by harness/run only (the orchestrator).
 */
#ifndef FENCECERT_COLLECT_H
#define FENCECERT_COLLECT_H

#include "common/error.h"
#include "harness/model/record.h"

/* Fill ops[].entry/history/journal_status from the journal at url. */
void collect_journal(struct rec_schedule *r, const char *url);

/* Fill ops[].evidence from DIR/op<i>/xcom/try-<k>/return.json, k <= tries
 * (a file that cannot be opened is no evidence; one that is not a JSON
 * object, or is over 1 MiB, is evidence that is not valid).
 * Returns 0 or FC_NOMEM. */
int collect_evidence(struct rec_schedule *r, const char *dir, int tries)
	FC_MUST_CHECK;

#endif
