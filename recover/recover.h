/*
 * recover.h -- what an operator may do with a stopped operation, decided
 * from facts alone.
 *
 * Owner: recover.c.  The recovery tool (recover_tool.h; recover_facts.c
 * gathers the facts -- the journal entry, the fence's probe, the lease, a
 * pending prepared transaction) asks this module which actions are safe;
 * recover/ and the tests include it, and so may anyone who needs the
 * action and verdict names.  No I/O happens here, so every combination of
 * state and fence answer is pinned by a table-driven test
 * (tests/test_recover.c), and the audit record an action leaves in the
 * journal has one shape.
 *
 * The rules, in the order recover_plan_compute() applies them:
 *
 *  1. COMPLETE is terminal: nothing to do.
 *  2. An action on a prepared (two-phase) transaction is not applicable
 *     unless the target holds one (only the pg-2pc fence can).
 *  3. Only COMMITTING and COMMIT_UNKNOWN wait for an operator; every other
 *     state is resumed by the next attempt of the route on its own.
 *  4. The target state must be an edge of the table in states.c.
 *  5. A pending prepared transaction decides the outcome: it is committed
 *     or rolled back first, never marked around.
 *  6. A fence record with another intent is an INTENT_CONFLICT that no
 *     recovery action resolves.
 *  7. An action is SAFE when the fence proves what it claims (APPLIED for
 *     mark-committed, ABSENT for mark-failed-pre-commit), FORCE_ONLY when
 *     the fence can prove nothing (UNKNOWN), and REFUSED when the fence
 *     proves the opposite -- --force never overrides a proof.
 *  8. An action that must fence out older epochs first (absence is final
 *     only once no older epoch can land) needs the lease: while another
 *     owner's lease runs it must WAIT, forced or not.
 *
 * Ownership: plans live in caller-allocated structs; recover_audit_json()
 * returns a malloc'd string the caller frees.
 */
#ifndef FENCECERT_RECOVER_H
#define FENCECERT_RECOVER_H

#include <stdbool.h>

#include "fences/fence.h"
#include "common/error.h"
#include "journal/states.h"

enum recover_action {
	RECOVER_MARK_COMMITTED,         /* -> TARGET_COMMITTED */
	RECOVER_MARK_FAILED_PRE_COMMIT, /* -> FAILED_PRE_COMMIT */
	RECOVER_COMMIT_PREPARED,        /* -> TARGET_COMMITTED */
	RECOVER_ROLLBACK_PREPARED,      /* -> FAILED_PRE_COMMIT */
	RECOVER_ACTION_COUNT
};

enum recover_verdict {
	RECOVER_SAFE,           /* proven by the fence: allowed */
	RECOVER_FORCE_ONLY,     /* nothing proven: only with --force, audited */
	RECOVER_WAIT,           /* safe or forceable once the lease expires */
	RECOVER_REFUSED,        /* contradicts a proof or the state table */
	RECOVER_NOT_APPLICABLE, /* the target holds nothing it acts on */
};

/* What recover_facts.c found out, and all a plan depends on. */
struct recover_facts {
	enum fc_state state;
	enum fence_probe_answer answer;
	bool intent_matches; /* APPLIED: the fence holds the entry's intent */
	bool prepared_txn;   /* a prepared transaction of op is pending */
	bool lease_live;     /* someone's lease on the entry has not expired */
};

#define RECOVER_WHY_MAX 256

struct recover_option {
	enum recover_verdict verdict;
	enum fc_state next;  /* the state the action moves the entry to */
	bool fences_first;   /* apply takes a new lease, prepares the fence at
			      * that epoch and probes again before moving */
	char why[RECOVER_WHY_MAX];
};

struct recover_plan {
	struct recover_option options[RECOVER_ACTION_COUNT];
	const char *summary; /* what the situation means, for a person */
};

void recover_plan_compute(const struct recover_facts *f,
			  struct recover_plan *out);

/* "mark-committed", ...; NULL when out of range. */
const char *recover_action_name(enum recover_action a);
/* 0, or FC_USAGE for an unknown name. */
int recover_action_parse(const char *name, enum recover_action *out);
/* "safe", "force-only", "wait", "refused", "not-applicable". */
const char *recover_verdict_name(enum recover_verdict v);
/* "APPLIED", "ABSENT", "UNKNOWN". */
const char *recover_answer_name(enum fence_probe_answer a);

/* The facts of one executed action, as recorded in the journal. */
struct recover_audit {
	const char *actor;
	const char *reason;
	enum recover_action action;
	bool forced;
	long long at;                  /* ms since the Unix epoch */
	enum fc_state before_state;
	long long before_version;
	enum fc_state after_state;     /* version is before_version + 1 */
	enum fence_probe_answer answer; /* the probe the decision rests on */
	long long applied_epoch;       /* APPLIED: the epoch that applied */
	long long rows;                /* APPLIED: rows the fence record holds */
	long long fenced_epoch;        /* the epoch recovery prepared; 0: none */
	const char *fence_name;        /* "sqlite", "fs", ...; NULL: unknown */
};

#define RECOVER_ACTOR_MAX 128
#define RECOVER_REASON_MAX 1024

/*
 * Whether s says nothing: NULL, empty, or only white space (ASCII and
 * Unicode spaces, line and paragraph separators) and invisible
 * zero-width characters.  An actor or reason like that names nobody and
 * explains nothing, so the audit record refuses it.
 */
bool recover_text_blank(const char *s);

/*
 * The evidence JSON of the audited transition (compact, malloc'd in *out):
 *   {"recovery":{"actor","reason","action","forced","at",
 *                "before":{"state","version"},"after":{"state","version"},
 *                "fence":{"name","answer","epoch","fenced_epoch"}}}
 * plus, when the fence proved the mutation APPLIED, the top-level
 * "epoch", "rows" and "fence" a later attempt reads the committed result
 * from (runtime__recorded_result()).  FC_USAGE for a blank
 * (recover_text_blank()) or too long actor or reason, FC_NOMEM when out
 * of memory; *out is NULL then.
 */
int recover_audit_json(const struct recover_audit *a, char **out)
	FC_MUST_CHECK;

#endif
