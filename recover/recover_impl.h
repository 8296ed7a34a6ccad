/*
 * recover_impl.h -- what the files of the recovery tool share: the context
 * of one invocation (the request, the journal and fence it opened, the
 * facts it gathered) and the helpers that gather and print them.  Only
 * recover/ includes this file: recover_facts.c (defines the helpers),
 * recover_show.c (inspect, plan, list) and recover_apply.c (apply).  The
 * public side is recover_tool.h; the decision is recover.c's (recover.h).
 *
 * Every helper that fails prints the error (cli_fail()) and returns the
 * exit status; output goes to stdout.
 */
#ifndef FENCECERT_RECOVER_IMPL_H
#define FENCECERT_RECOVER_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "fences/fence.h"
#include "journal/journal.h"
#include "recover/recover.h"
#include "recover/recover_tool.h"

#define RECOVER_URL_SHOWN_MAX 512

/* Everything one invocation knows; recover__run() releases what it
 * opened. */
struct recover_ctx {
	const struct recover_request *r;
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

/* Run one subcommand on a fresh context for r, release what it opened and
 * return its exit status. */
int recover__run(const struct recover_request *r,
		 int (*run)(struct recover_ctx *c));

/* Open the journal (a missing sqlite: file is NOT_FOUND, never created).
 * Returns 0 or the exit status, the error printed. */
int recover__open_journal(struct recover_ctx *c);
/* Open the journal, read the entry, probe the fence, settle c->facts.
 * An unreachable target is answer UNKNOWN, not a failure. */
int recover__gather(struct recover_ctx *c);
/* Probe again (c->f open) and settle the facts anew. */
void recover__probe(struct recover_ctx *c);
void recover__settle_facts(struct recover_ctx *c);

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

#endif
