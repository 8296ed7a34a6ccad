/*
 * journal_conformance.h -- the one conformance suite of the journal port.
 *
 * Written only against journal/journal.h, so every adapter (SQLite,
 * PostgreSQL, etcd) runs it unchanged: the adapter's test binary supplies a
 * factory of journal URLs and calls journal_conformance_run().
 *
 * The factory returns a malloc'd URL naming an EMPTY journal, a new one on
 * every call (the suite counts entries); the suite frees it.  It may return
 * NULL to abort the test that asked.  Everything the suite creates stays in
 * the journals; the caller cleans up its own namespace afterwards.
 */
#ifndef FENCECERT_TESTS_JOURNAL_CONFORMANCE_H
#define FENCECERT_TESTS_JOURNAL_CONFORMANCE_H

#include "journal/states.h"

typedef char *(*journal_url_factory)(void);

/* Run the suite as a cmocka group named "journal conformance (NAME)";
 * returns the number of failed tests. */
int journal_conformance_run(const char *adapter_name,
			    journal_url_factory make_url);

/*
 * One step of a walk over the state table, for tests that drive entries
 * without listing transitions: while `roam` is set, a pseudo-random
 * successor of s (from *seed) from which PREPARING can be reached again;
 * otherwise the successor nearest to COMPLETE.  FC_STATE_NONE from a state
 * with no successor (COMPLETE).
 */
enum fc_state journal_conformance_next(enum fc_state s, int roam,
				       unsigned *seed);

#endif
