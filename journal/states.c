/*
 * states.c -- the transition table of SPEC section 3, as data.
 *
 * legal[from] is the set of states `from` may move to.  Nothing else in the
 * project may encode an edge; ask state_transition_legal().
 */
#include <string.h>

#include "journal/states.h"

#define B(s) STATE_BIT(FC_##s)

static const char *const names[FC_STATE_COUNT] = {
	[FC_STATE_NONE] = "NONE",
	[FC_PREPARING] = "PREPARING",
	[FC_PREPARED] = "PREPARED",
	[FC_COMMITTING] = "COMMITTING",
	[FC_COMMIT_UNKNOWN] = "COMMIT_UNKNOWN",
	[FC_TARGET_COMMITTED] = "TARGET_COMMITTED",
	[FC_COMMITTED_INCOMPLETE] = "COMMITTED_INCOMPLETE",
	[FC_COMPLETE] = "COMPLETE",
	[FC_FAILED_PRE_COMMIT] = "FAILED_PRE_COMMIT",
};

static const state_set legal[FC_STATE_COUNT] = {
	[FC_STATE_NONE] = B(PREPARING),
	[FC_PREPARING] = B(PREPARED) | B(FAILED_PRE_COMMIT),
	[FC_PREPARED] = B(COMMITTING) | B(FAILED_PRE_COMMIT),
	[FC_COMMITTING] = B(TARGET_COMMITTED) | B(FAILED_PRE_COMMIT) | B(COMMIT_UNKNOWN),
	[FC_COMMIT_UNKNOWN] = B(TARGET_COMMITTED) | B(FAILED_PRE_COMMIT),
	[FC_TARGET_COMMITTED] = B(COMMITTED_INCOMPLETE) | B(COMPLETE),
	[FC_COMMITTED_INCOMPLETE] = B(COMPLETE),
	[FC_COMPLETE] = 0,
	[FC_FAILED_PRE_COMMIT] = B(PREPARING),
};

const char *state_name(enum fc_state s)
{
	if ((unsigned)s >= FC_STATE_COUNT)
		return NULL;
	return names[s];
}

int state_parse(const char *name, enum fc_state *out)
{
	for (int s = FC_PREPARING; s < FC_STATE_COUNT; s++) {
		if (strcmp(names[s], name) == 0) {
			*out = (enum fc_state)s;
			return 0;
		}
	}
	return FC_USAGE;
}

int state_set_parse(const char *list, state_set *out)
{
	state_set set = 0;
	const char *p = list;

	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char name[32];
		enum fc_state s;

		if (len == 0 || len >= sizeof(name))
			return FC_USAGE;
		memcpy(name, p, len);
		name[len] = '\0';
		if (state_parse(name, &s))
			return FC_USAGE;
		set |= STATE_BIT(s);
		p += len + (comma ? 1 : 0);
		if (comma && !*p)
			return FC_USAGE;
	}
	if (!set)
		return FC_USAGE;
	*out = set;
	return 0;
}

bool state_transition_legal(enum fc_state from, enum fc_state to)
{
	if ((unsigned)from >= FC_STATE_COUNT || (unsigned)to >= FC_STATE_COUNT)
		return false;
	return (legal[from] & STATE_BIT(to)) != 0;
}

state_set state_predecessors(enum fc_state to)
{
	state_set set = 0;

	for (int s = FC_STATE_NONE; s < FC_STATE_COUNT; s++)
		if (state_transition_legal((enum fc_state)s, to))
			set |= STATE_BIT(s);
	return set;
}

bool state_is_terminal(enum fc_state s)
{
	return s == FC_COMPLETE;
}
