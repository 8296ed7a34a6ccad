/*
 * journal_json.h -- journal entries and transitions as JSON (jansson).
 *
 * The one JSON shape of the journal, shared by `fencecert journal`, the
 * harness and the reports (docs/journal.md lists the keys).  meta and
 * evidence appear as JSON objects, states by name, times in ms since the
 * Unix epoch; "no lease" is lease_owner and lease_expires_at null.
 *
 * Ownership: each function returns a new reference (json_decref() it), or
 * NULL when out of memory.
 *
 * Included by the `journal` and `recover` commands, recover/ and the
 * report writer (harness/certify).
 */
#ifndef FENCECERT_JOURNAL_JSON_H
#define FENCECERT_JOURNAL_JSON_H

#include <jansson.h>

#include "journal/journal.h"

json_t *journal_entry_to_json(const struct journal_entry *e);
json_t *journal_transition_to_json(const struct journal_transition *t);

#endif
