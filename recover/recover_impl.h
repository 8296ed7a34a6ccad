/*
 * recover_impl.h -- what the files of `fencecert recover` share: the parsed
 * options, the facts one invocation gathered, and the helpers that gather
 * and print them.  Only recover_cli.c (options, inspect, plan, list),
 * recover_facts.c (journal, fence, facts, shared output) and
 * recover_apply.c (apply) include this file; the decision itself is
 * recover.c's (recover.h).
 */
#ifndef FENCECERT_RECOVER_IMPL_H
#define FENCECERT_RECOVER_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "fences/fence.h"
#include "journal/journal.h"
#include "recover/recover.h"

#define RECOVER_URL_SHOWN_MAX 512

enum recover_opt {
	O_JOURNAL = 1u << 0,
	O_TARGET = 1u << 1,
	O_OP = 1u << 2,
	O_JSON = 1u << 3,
	O_ACTION = 1u << 4,
	O_EXPECT = 1u << 5,
	O_ACTOR = 1u << 6,
	O_REASON = 1u << 7,
	O_FORCE = 1u << 8,
	O_STATE = 1u << 9,
	O_STALE = 1u << 10,
};

struct recover_args {
	unsigned seen; /* enum recover_opt bits given on the command line */
	const char *journal_url, *target_url, *op, *actor, *reason;
	enum recover_action action;
	long long expect, stale_ms;
	state_set states;
};

/* Everything one invocation knows; recover__release() frees what it
 * opened. */
struct recover_ctx {
	const struct recover_args *a;
	bool writes;         /* apply: the journal is opened read-write; the
				other subcommands open it read-only */
	char journal_shown[RECOVER_URL_SHOWN_MAX]; /* redacted */
	char target_shown[RECOVER_URL_SHOWN_MAX];  /* redacted */
	journal *j;
	fence *f;            /* NULL when the target could not be opened */
	struct journal_entry e;
	struct fence_probe p;
	char probe_err[512]; /* why the answer is UNKNOWN; "" otherwise */
	struct recover_facts facts;
	long long now;
};

/* ---- recover_facts.c ---- */

/* Open the journal (a missing sqlite: file is NOT_FOUND, never created).
 * Returns 0 or the exit status, the error printed. */
int recover__open_journal(struct recover_ctx *c);
/* Open the journal, read the entry, probe the fence, settle c->facts.
 * An unreachable target is answer UNKNOWN, not a failure. */
int recover__gather(struct recover_ctx *c);
/* Probe again (c->f open) and settle the facts anew. */
void recover__probe(struct recover_ctx *c);
void recover__settle_facts(struct recover_ctx *c);
void recover__release(struct recover_ctx *c);

bool recover__lease_live(const struct journal_entry *e, long long now);

void recover__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *recover__fmt_time(long long ms, char *buf, size_t len);
const char *recover__fmt_span(long long ms, char *buf, size_t len);
json_t *recover__str_or_null(const char *s);

/* Print v (stolen) on stdout; 0 or the exit status of a failure. */
int recover__print_json(json_t *v);
int recover__flush_text(void);

json_t *recover__lease_json(const struct journal_entry *e, long long now);
json_t *recover__fence_json(const struct recover_ctx *c);
void recover__print_entry_head(const struct recover_ctx *c);
void recover__print_lease_line(const struct recover_ctx *c);
void recover__print_fence_line(const struct recover_ctx *c);

/* ---- recover_apply.c ---- */

int recover__run_apply(struct recover_ctx *c);

#endif
