/*
 * states.h -- the eight journal states and the legal transitions between
 * them (SPEC section 3).  states.c holds the only copy of the table; the
 * journal adapters, the CLI, the route runtime and the checker all ask it.
 *
 *                 (none)
 *                   | create_or_get
 *                   v
 *   +-------> PREPARING ----------------------+
 *   |            | fence prepared              |
 *   |            v                             v
 *   |         PREPARED ------------------> FAILED_PRE_COMMIT --+
 *   |            | before first mutation       ^   ^           |
 *   |            v                             |   |           |
 *   |        COMMITTING --- proved absent -----+   |           |
 *   |         |      \                             |           |
 *   |  applied|       \ neither provable           |           |
 *   |         v        v                           |           |
 *   |  TARGET_COMMITTED <-- proof/operator -- COMMIT_UNKNOWN --+ (absent)
 *   |     |        \                                          |
 *   |     |         v                                         |
 *   |     |   COMMITTED_INCOMPLETE                            |
 *   |     v        /                                          |
 *   |   COMPLETE <-                                           |
 *   +---------------------- new attempt ----------------------+
 *
 * Included by journal/ (the adapters apply it), recover/, the checker
 * (harness/check), the report writer and renderers, and the `journal`
 * command.  This table is the only copy of the transitions.
 */
#ifndef FENCECERT_STATES_H
#define FENCECERT_STATES_H

#include <stdbool.h>

#include "common/error.h"

enum fc_state {
	FC_STATE_NONE = 0, /* no journal entry yet */
	FC_PREPARING,
	FC_PREPARED,
	FC_COMMITTING,
	FC_COMMIT_UNKNOWN,
	FC_TARGET_COMMITTED,
	FC_COMMITTED_INCOMPLETE,
	FC_COMPLETE,
	FC_FAILED_PRE_COMMIT,
	FC_STATE_COUNT
};

/* A set of states, as a bit mask: STATE_BIT(FC_PREPARED) | ... */
typedef unsigned state_set;
#define STATE_BIT(s) (1u << (unsigned)(s))
#define STATE_SET_ALL ((1u << FC_STATE_COUNT) - 2u) /* every real state */

/* "PREPARING" ...; "NONE" for FC_STATE_NONE; NULL if out of range. */
const char *state_name(enum fc_state s);

/* Parse a state name (exact, upper case).  0, or FC_USAGE if not. */
int state_parse(const char *name, enum fc_state *out);

/* Parse "A,B,C" into a set.  0, or FC_USAGE on an unknown name. */
int state_set_parse(const char *list, state_set *out);

/* True when from -> to is an edge of the SPEC section 3 table.
 * FC_STATE_NONE -> FC_PREPARING is the create edge. */
bool state_transition_legal(enum fc_state from, enum fc_state to);

/* The set of states from which `to` may be reached. */
state_set state_predecessors(enum fc_state to);

/* True for COMPLETE, the only terminal state. */
bool state_is_terminal(enum fc_state s);

#endif
